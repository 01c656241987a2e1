"""Mondrian tree core: packed node storage and its read-only views (the class MondrianTree).

Every model of the package reads the same trees. A tree stores its structure in an array of
``Node`` structs and two side buffers indexed by node id: the data bounding boxes and the
per-node statistics. The statistics are the sums of the *contribution rows* of the training
points below each node (one-hot labels for classification, ``(1, y, y**2)`` for regression,
nothing for the kernel), so the core never needs to know which model it serves.

Training points live once per forest, in arrays handed to every call (``X``: the stored inputs,
``rows``: their contribution rows); a tree refers to them by their index in those arrays.

Storage is split from building as in scikit-learn's trees: the builders (``_grow``, ``_extend``)
and the other writers (``_undo``, ``_columns``, ``_copy``, ``_tree_state``) and readers
(``_rebuild``) are functions of sibling modules that take the tree, typed, through
``_tree.pxd``; this module keeps the buffers, their allocation and the public methods.
"""

from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport SIZE_MAX, int32_t, uint64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy, memset

import math

import numpy as np

cimport numpy as cnp

from mondrian.core._random cimport rng_seed
from mondrian.core._box_loops cimport mf_rows_box
from mondrian.core._columns cimport (
    set_trees_column_order,
    trivial_columns,
    tree_set_value_columns,
)
from mondrian.core._copy cimport subtree_samples, tree_copy, tree_pruned, tree_shift_samples
from mondrian.core._extend cimport extend_checked, extend_tree, extend_tree_list
from mondrian.core._rebuild cimport (
    all_boxes,
    all_values,
    derived,
    every_box,
    every_value,
    leaf_assignment,
    memory_usage,
    node_depths,
)
from mondrian.core._undo cimport (
    undo_begin,
    undo_commit,
    undo_free,
    undo_log_node,
    undo_log_sample,
    undo_rollback,
)
from mondrian.core._tree_state cimport (
    tree_compact_state,
    tree_from_compact_state,
    tree_getstate,
    tree_setstate,
)
from mondrian.core._walk cimport leaf_at

cnp.import_array()


# Default of ``box_min_samples``: nodes holding at least this many points keep a stored box;
# the boxes of smaller nodes are rebuilt from their points when read (docs/design.md, Storage).
# Wider data raise it to BOX_MIN_SAMPLES_PER_FEATURE * n_features (at most BOX_POINTS_MAX): a
# stored box is 16 D bytes for K or more points, so with K >= 2 D the boxes of a tree take at
# most 16 bytes per point whatever D (usps, D = 256: 210 of a 280 MB model at K = 32).
BOX_MIN_SAMPLES = 32
BOX_MIN_SAMPLES_PER_FEATURE = 2.0


def default_box_min_samples(n_features):
    """The ``box_min_samples`` of a tree on ``n_features`` features made without one."""
    if BOX_MIN_SAMPLES == 0:
        return 0
    wide = math.ceil(BOX_MIN_SAMPLES_PER_FEATURE * n_features)
    return int(min(BOX_POINTS_MAX, max(BOX_MIN_SAMPLES, wide)))


cdef Node _dummy_node
# The raw node records, as stored (and pickled): `feature` is TREE_PAUSED on paused leaves.
NODE_DTYPE = np.asarray(<Node[:1]>(&_dummy_node)).dtype
assert NODE_DTYPE.itemsize == sizeof(Node)
# The records the read-only views give (nodes_array): the raw fields with `feature`
# TREE_UNDEFINED on every leaf, as in scikit-learn, and the paused flag as a bool `paused`.
NODE_VIEW_DTYPE = np.dtype([(name, NODE_DTYPE[name]) for name in NODE_DTYPE.names]
                           + [("paused", np.bool_)])


cdef int _realloc(void** ptr, size_t count, size_t itemsize) except -1 nogil:
    """Resize ``*ptr`` to ``count`` items of ``itemsize`` bytes, checking for overflow."""
    cdef void* new_ptr
    if count > SIZE_MAX // itemsize:
        with gil:
            raise MemoryError("requested buffer size overflows size_t")
    new_ptr = realloc(ptr[0], count * itemsize)
    if new_ptr == NULL and count > 0:
        with gil:
            raise MemoryError(f"could not allocate {count * itemsize} bytes")
    ptr[0] = new_ptr
    return 0


def _node_view(raw):
    """The ``NODE_VIEW_DTYPE`` records of the ``NODE_DTYPE`` records ``raw``."""
    out = np.empty(raw.shape[0], dtype=NODE_VIEW_DTYPE)
    for name in NODE_DTYPE.names:
        out[name] = raw[name]
    paused = out["paused"]
    np.equal(raw["feature"], TREE_PAUSED, out=paused)
    out["feature"][paused] = TREE_UNDEFINED
    return out


cdef class MondrianTree:
    """One Mondrian tree over points held in an external store.

    Parameters
    ----------
    n_features : int
        Number of input features.
    value_stride : int
        Width of the contribution rows summed into each node's statistics.
    lifetime : float
        Lifetime (budget) lambda of the Mondrian process, in ``[0, inf]``.
    min_samples_split : int
        Leaves holding fewer points are paused.
    pause_pure : bool
        Also pause leaves whose statistics row has at most one non-zero entry (pure leaves in
        classification).
    seed : int
        Seed of the tree's own random stream.

    Attributes
    ----------
    count_columns : int
        What the ``min_samples_split`` rule counts (0 after construction): 0 the stored points,
        ``k > 0`` the sum of the first ``k`` statistics columns, ``-1`` the sum of all of them.
        Models whose rows carry a sample weight set it so that a weighted point counts as its
        weight (a weight ``w`` pauses like ``w`` repeated points).

    Notes
    -----
    The root is node 0. A leaf has ``split_time == lifetime`` (``inf`` by default). The arrays
    returned by the accessors are copies: online training can reallocate the buffers.
    """

    def __cinit__(self, intp_t n_features, intp_t value_stride, float64_t lifetime,
                  intp_t min_samples_split=2, bint pause_pure=False, object seed=0,
                  object box_min_samples=None, bint lean_values=False):
        if box_min_samples is None:
            box_min_samples = default_box_min_samples(n_features)
        if not 0 <= box_min_samples <= BOX_POINTS_MAX:
            raise ValueError(f"box_min_samples must be in [0, {BOX_POINTS_MAX}], "
                             f"got {box_min_samples}")
        if not 0 < n_features < MAX_NODES:  # (a saved state's, before it sizes buffers)
            raise ValueError("n_features must be positive and below 2**31 - 1")
        if value_stride < 0:
            raise ValueError("value_stride must be non-negative")
        if not lifetime >= 0:
            raise ValueError("lifetime must be >= 0")
        self.n_features = n_features
        self.value_stride = value_stride
        self.lifetime = lifetime
        self.min_samples_split = min_samples_split
        self.pause_pure = pause_pure
        self.box_min_samples = box_min_samples
        self.lean_values = lean_values
        # (every other C field starts at 0 / NULL, the undo log closed: Cython zeroes the
        # object before __cinit__; the store references start as None)
        _realloc(<void**>&self.columns, max(value_stride, 1), sizeof(intp_t))
        self.columns_capacity = max(value_stride, 1)
        cdef intp_t k
        for k in range(value_stride):
            self.columns[k] = k  # identity: read column k is stored column k
        self.n_columns = value_stride
        # 3 D for growth and extension, 2 D for a box built by _grow, 2 D by _extend.
        self.scratch = <float64_t*> PyMem_Malloc(7 * n_features * sizeof(float64_t))
        if self.scratch == NULL:
            raise MemoryError()
        _realloc(<void**>&self.row_scratch, max(value_stride, 1), sizeof(float64_t))
        rng_seed(&self.rng, <uint64_t>(int(seed) & 0xFFFFFFFFFFFFFFFF))
        self.builder = extend_tree  # (a subclass's __cinit__, run after this one, may replace it)

    def __dealloc__(self):
        free(self.nodes)
        free(self.box_slot)
        free(self.bounds)
        free(self.value)
        free(self.sample_next)
        free(self.grow_stack)
        free(self.grow_boxes)
        free(self.extend_stack)
        undo_free(&self.undo)
        free(self.undo.old_value)
        free(self.columns)
        free(self.undo.old_columns)
        PyMem_Free(self.scratch)
        free(self.row_scratch)

    # ------------------------------------------------------------------ storage

    cdef int _resize(self, intp_t capacity) except -1 nogil:
        """Grow every per-node buffer to ``capacity`` nodes.

        The new tail is left unwritten: every node slot is filled by ``_new_node`` and its
        statistics by the code that creates it, before anything reads them (boxes live in
        their own buffer, grown by ``_new_box``). Not
        touching the tail keeps its pages out of the resident set (large blocks are mapped
        lazily, and ``realloc`` moves them with ``mremap``, without copying), which was a third
        of the fitting time in page faults.
        """
        if capacity <= self.capacity:
            return 0
        if capacity > MAX_NODES:
            with gil:
                raise MemoryError(
                    f"a MondrianTree holds at most {MAX_NODES} nodes (32-bit node ids); "
                    f"{capacity} requested"
                )
        _realloc(<void**>&self.nodes, capacity, sizeof(Node))
        _realloc(<void**>&self.box_slot, capacity, sizeof(int32_t))
        if self.value_stride > 0 and not self.lean_values:
            _realloc(<void**>&self.value, capacity * self.value_stride, sizeof(float64_t))
        self.capacity = capacity
        return 0

    cdef int _ensure_samples(self, intp_t n) except -1 nogil:
        """Make ``sample_next`` long enough for store indices below ``n``."""
        cdef intp_t new_capacity
        if n > self.sample_capacity:
            new_capacity = max(n, 2 * self.sample_capacity)
            _realloc(<void**>&self.sample_next, new_capacity, sizeof(intp_t))
            memset(self.sample_next + self.sample_capacity, 0xFF,
                   (new_capacity - self.sample_capacity) * sizeof(intp_t))
            self.sample_capacity = new_capacity
        if n > self.n_samples_seen:
            self.n_samples_seen = n
        return 0

    cdef int _ensure_indices(self, const intp_t* idx, intp_t n) except -1 nogil:
        """Make the sample lists long enough for the store indices ``idx[:n]``."""
        cdef intp_t k, largest = 0
        for k in range(n):
            if idx[k] > largest:
                largest = idx[k]
        return self._ensure_samples(largest + 1)

    cdef intp_t _new_node(self) except -1 nogil:
        """Append a blank leaf and return its id; may move every buffer."""
        cdef intp_t node
        if self.node_count >= self.capacity:
            if self.node_count >= MAX_NODES:
                with gil:
                    raise MemoryError(
                        f"a MondrianTree holds at most {MAX_NODES} nodes (32-bit node ids): "
                        "use a finite lifetime or fewer points per tree"
                    )
            self._resize(min(max(8, 2 * self.capacity), MAX_NODES))
        node = self.node_count
        self.node_count += 1
        self.nodes[node].parent = TREE_LEAF
        reset_leaf(self, node, 0)
        self.box_slot[node] = -1
        if self.box_min_samples == 0:
            self._new_box(node)  # every node has its box, in slot == node id
        return node

    cdef intp_t _new_box(self, intp_t node) except -1 nogil:
        """Give ``node`` a box slot (contents unwritten) and return it; may move ``bounds``."""
        cdef intp_t slot = self.box_count, capacity
        if slot >= 2147483647:
            with gil:
                raise MemoryError("more than 2**31 - 1 stored boxes")
        if slot >= self.box_capacity:
            capacity = max(8, 2 * self.box_capacity)
            _realloc(<void**>&self.bounds, capacity * 2 * self.n_features, sizeof(float64_t))
            if self.lean_values and self.value_stride > 0:
                _realloc(<void**>&self.value, capacity * self.value_stride, sizeof(float64_t))
            self.box_capacity = capacity
        self.box_count = slot + 1
        self.box_slot[node] = <int32_t>slot
        return slot

    cdef float64_t* _box_target(self, intp_t node, intp_t count,
                                float64_t* scratch) except NULL nogil:
        """Where to write the box of ``node``, holding ``count`` points: its stored box, a new
        slot when it now holds enough points to keep one, else ``scratch`` (2 D floats)."""
        if self.box_slot[node] < 0:
            if count < self.box_min_samples:
                return scratch
            self._new_box(node)
        return self.bounds + 2 * self.n_features * self.box_slot[node]

    cdef const float64_t* _node_box(self, intp_t node, const float64_t* X,
                                    float64_t* scratch) noexcept nogil:
        """The box of ``node``: its stored one, or rebuilt into ``scratch`` (2 D floats) from
        the points below it (fewer than ``box_min_samples``), rows of ``X``."""
        cdef intp_t points[BOX_POINTS_MAX]
        cdef intp_t n
        if self.box_slot[node] >= 0:
            return self.bounds + 2 * self.n_features * self.box_slot[node]
        n = subtree_points(self, node, points, BOX_POINTS_MAX)
        if n > 0:  # points_box's bits (same order, same tie rule), vectorized
            mf_rows_box(X, self.n_features, points, n, scratch)
        else:
            points_box(X, self.n_features, points, n, scratch)
        return scratch

    cdef int _attach(self, object owner, const float64_t* ptr, intp_t rows) except -1:
        if ptr != self.points_ptr or rows != self.points_rows:
            self.points_owner = owner
            self.points_ptr = ptr
            self.points_rows = rows
        return 0

    cdef int _attach_rows(self, object owner, const float64_t* ptr, intp_t n,
                          intp_t stride) except -1:
        if ptr != self.rows_ptr or n != self.rows_rows or stride != self.rows_stride:
            self.rows_owner = owner
            self.rows_ptr = ptr
            self.rows_rows = n
            self.rows_stride = stride
        return 0

    cdef float64_t* _value_target(self, intp_t node, float64_t* scratch) noexcept nogil:
        """Where to write the statistics row of ``node`` (its box slot decided first, by
        ``_box_target``): its stored row, or ``scratch`` (lean values, a node without a box)."""
        if not self.lean_values:
            return self.value + self.value_stride * node
        if self.box_slot[node] >= 0:
            return self.value + self.value_stride * self.box_slot[node]
        return scratch

    cdef int _all_values(self, float64_t* out, intp_t* queue) except -1 nogil:
        """Every node's statistics row into ``out`` (``node_count`` rows of
        ``value_stride``, stored column layout; ``queue``: scratch of ``node_count``): the
        stored rows copied, the others from the attached rows (leaves from their lists, then
        sums of the children). For readers of many rows (the counterpart of
        :meth:`_all_boxes`). Writes nothing to the tree."""
        return all_values(self, out, queue)

    cdef int _all_boxes(self, float64_t* out, intp_t* queue) except -1 nogil:
        """Every node's box into ``out`` (``node_count`` rows of ``2 D``; ``queue``: scratch
        of ``node_count``): the stored ones copied, the others from the attached points
        (leaves from their lists, then unions of the children). For readers of many rows, who
        then walk every row as on a tree storing every box. Writes nothing to the tree."""
        return all_boxes(self, out, queue)

    def attach_points(self, X, rows=None):
        """Give the tree (read) access to the store's inputs ``X``, from which it rebuilds
        the boxes it does not store, and to their contribution rows ``rows``, from which a
        tree with lean values rebuilds the statistics rows it does not store. Growth and
        extension attach the store they are given; a copy made without it (pickling,
        ``copy.deepcopy``) must be attached before it is read (a
        :class:`~mondrian.core.ensemble.TreeEnsemble` does it for its trees).

        Parameters
        ----------
        X : ndarray of shape (n_stored, n_features), C-contiguous float64
            Kept by reference (not copied); it must not change while attached.
        rows : ndarray of shape (n_stored, value_stride), C-contiguous float64, optional
            Kept by reference too; None keeps the rows attached before.
        """
        cdef const float64_t[:, ::1] view = X
        cdef const float64_t[:, ::1] rview
        if view.shape[1] != self.n_features:
            raise ValueError(f"X has {view.shape[1]} features, the tree expects "
                             f"{self.n_features}")
        if rows is not None:
            rview = rows
            if rview.shape[0] != view.shape[0]:
                raise ValueError("rows must have one row per stored point")
            self._attach_rows(rview.base, &rview[0, 0] if rview.shape[0] and rview.shape[1]
                              else NULL, rview.shape[0], rview.shape[1])
        self._attach(view.base, &view[0, 0] if view.shape[0] else NULL, view.shape[0])

    def detach_points(self):
        """Drop the references to the store (reads then raise until re-attached)."""
        self._attach(None, NULL, 0)
        self._attach_rows(None, NULL, 0, 0)

    # ------------------------------------------------------------------ undo log
    # (the log itself, UndoLog, and its functions: mondrian.core._undo)

    cdef int _log_node(self, intp_t node) except -1 nogil:
        """Save node ``node`` before it is written, if an undo log is open and the node
        existed when it began (later nodes are dropped by truncation)."""
        if self.undo.on and node < self.undo.node_count:
            return undo_log_node(self, node, True)
        return 0

    cdef int _log_sample(self, intp_t i) except -1 nogil:
        """Save ``sample_next[i]`` before it is written, if an undo log is open (entries at
        or past ``n_samples_seen`` at its beginning are reset without a log)."""
        if self.undo.on and i < self.undo.samples_seen:
            return undo_log_sample(self, i)
        return 0

    def begin_undo(self):
        """Open an undo log: until :meth:`commit_undo`, :meth:`rollback_undo` puts the tree
        back bit for bit as it is now, whatever online extensions (or a widening of the
        statistics) ran meanwhile, even one stopped part-way by an exception.

        The log holds the old contents of the nodes and leaf-list entries the extensions
        write (the path of each new point: O(depth) entries per point), so it costs a small
        fraction of the extension itself, unlike a copy of the tree.

        Returns
        -------
        bool
            False when a log is open already (it stays as it is: its opener ends it).
        """
        return undo_begin(self)

    def rollback_undo(self):
        """Undo every change since :meth:`begin_undo` and close the log (no-op without one)."""
        undo_rollback(self)

    def commit_undo(self):
        """Keep the changes since :meth:`begin_undo` and close the log."""
        undo_commit(self)

    @property
    def undo_open(self):
        """Whether an undo log is open (:meth:`begin_undo`)."""
        return bool(self.undo.on)

    # ------------------------------------------------------------------ Python API

    def fit(self, const float64_t[:, ::1] X, const float64_t[:, ::1] rows,
            const intp_t[::1] indices):
        """Sample the tree afresh on the stored points ``indices`` (section 1).

        Parameters
        ----------
        X : ndarray of shape (n_stored, n_features)
            The point store.
        rows : ndarray of shape (n_stored, value_stride)
            Contribution rows of the stored points.
        indices : ndarray of intp
            Store indices of the training points.
        """
        self.node_count = 0
        self.box_count = 0
        if self.sample_capacity > 0:
            memset(self.sample_next, 0xFF, self.sample_capacity * sizeof(intp_t))
        self.n_samples_seen = 0
        self.extend(X, rows, indices)
        return self

    def extend(self, const float64_t[:, ::1] X, const float64_t[:, ::1] rows,
               const intp_t[::1] indices):
        """Extend the tree online with the stored points ``indices`` (sections 2 and 3).

        Parameters
        ----------
        X : ndarray of shape (n_stored, n_features)
            The point store.
        rows : ndarray of shape (n_stored, value_stride)
            Contribution rows of the stored points.
        indices : ndarray of intp
            Store indices of the new points, in the order they are added.
        """
        extend_checked(self, X, rows, indices)
        return self

    def _check_store(self, const float64_t[:, ::1] X, const float64_t[:, ::1] rows,
                     const intp_t[::1] indices):
        self._store_checks(X, rows, indices)

    cdef int _store_checks(self, const float64_t[:, ::1] X, const float64_t[:, ::1] rows,
                           const intp_t[::1] indices) except -1:
        """:meth:`_check_store` on views already acquired (the builders' entry points: a
        Python call would turn each view back into an object and acquire it again, a few
        microseconds of every one-row update)."""
        cdef intp_t k
        if X.shape[1] != self.n_features:
            raise ValueError(f"store has {X.shape[1]} features, tree expects {self.n_features}")
        if rows.shape[1] != self.value_stride or rows.shape[0] != X.shape[0]:
            raise ValueError("rows must have shape (n_stored, value_stride)")
        for k in range(indices.shape[0]):
            if not 0 <= indices[k] < X.shape[0]:
                raise ValueError("indices out of the store's range")
        return 0

    def apply(self, const float64_t[:, ::1] X, lifetime=None):
        """Leaf reached by each row of ``X`` in the tree pruned at ``lifetime``.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            Points in the scaled feature space.
        lifetime : float, default=None
            Ignore cuts born at or after this time; ``None`` uses the tree's lifetime.

        Returns
        -------
        ndarray of intp, shape (n_samples,)
        """
        cdef float64_t lam = self.lifetime if lifetime is None else float(lifetime)
        cdef intp_t n = X.shape[0], i
        out = np.zeros(n, dtype=np.intp)
        cdef intp_t[::1] leaves = out
        if self.node_count == 0:
            raise ValueError("the tree is empty")
        with nogil:
            for i in range(n):
                leaves[i] = leaf_at(self, &X[i, 0], lam)
        return out

    def set_value_columns(self, intp_t new_stride, const intp_t[::1] column_map):
        """Move stored column ``c`` of the statistics to ``column_map[c]`` in rows of width
        ``new_stride`` (a full rewrite of the rows); ``column_map[c] < 0`` drops a column that
        no read column uses (a spare zero column).

        New columns start at zero; the read columns follow their stored columns, so what the
        models read does not change. Used when a classifier outgrows its spare columns (the
        width then doubles) and when merged forests agree on one layout.
        """
        tree_set_value_columns(self, new_stride, column_map)

    def set_column_order(self, order):
        """Set the read columns: read column ``k`` is stored column ``order[k]`` (O(len(order)),
        the rows are not touched).

        A classifier meeting a new class gives it a spare stored column and inserts it here
        at its place among the sorted classes.

        Parameters
        ----------
        order : array-like of int
            Distinct stored columns (below ``value_stride``).
        """
        set_column_order_trees([self], order)

    @property
    def column_order(self):
        """Stored column of each read column, shape ``(n_columns,)`` (a copy)."""
        out = np.empty(self.n_columns, dtype=np.intp)
        if self.n_columns:
            memcpy(cnp.PyArray_DATA(out), self.columns, self.n_columns * sizeof(intp_t))
        return out

    cdef int _set_columns(self, const intp_t* columns, intp_t n) except -1:
        """Make the read columns ``columns[:n]`` (the buffer grows, never shrinks)."""
        cdef intp_t capacity
        if n > self.columns_capacity or self.columns == NULL:
            # Doubling: classes arriving one at a time reallocate O(log n) times.
            capacity = max(n, 2 * self.columns_capacity, 1)
            _realloc(<void**>&self.columns, capacity, sizeof(intp_t))
            self.columns_capacity = capacity
        if n:
            memcpy(self.columns, columns, n * sizeof(intp_t))
        self.n_columns = n
        return 0

    def _trivial_columns(self):
        """Whether the read columns are the stored ones (identity over ``value_stride``)."""
        return trivial_columns(self)

    def pruned(self, float64_t lifetime):
        """A new tree: this one restricted to ``lifetime`` (<= its own).

        Cuts born at or after ``lifetime`` are dropped; the nodes they split become leaves with
        ``split_time = lifetime`` holding all the stored points below them. By the Markov
        property of the Mondrian process the result has the law of a tree sampled with that
        lifetime, and it keeps learning online like one (with this tree's random stream state).

        Parameters
        ----------
        lifetime : float

        Returns
        -------
        MondrianTree
        """
        return tree_pruned(self, lifetime)

    def shift_samples(self, intp_t offset):
        """Add ``offset`` to the store index of every point the tree holds.

        Used when this tree's store is appended after ``offset`` other points (merging the
        ensembles of two data shards); the tree itself is unchanged.
        """
        tree_shift_samples(self, offset)

    def _subtree_samples(self, intp_t node):
        """Stored points below ``node`` (leaf lists of its subtree)."""
        return subtree_samples(self, node)

    def leaf_samples(self, intp_t node):
        """Store indices of the points recorded in leaf ``node``."""
        if not 0 <= node < self.node_count or self.nodes[node].left_child != TREE_LEAF:
            raise ValueError(f"{node} is not a leaf")
        out = []
        cdef intp_t i = self.nodes[node].first_sample
        while i != TREE_LEAF:
            out.append(i)
            i = self.sample_next[i]
        return np.array(out, dtype=np.intp)

    def leaf_sample_assignment(self):
        """Leaf holding each stored point seen by the tree (-1 for points it never saw)."""
        return leaf_assignment(self)

    # ------------------------------------------------------------------ read-only views

    @property
    def nodes_array(self):
        """Copy of the nodes as a structured array of dtype ``NODE_VIEW_DTYPE``: the fields
        of the node structs, ``feature`` ``TREE_UNDEFINED`` (-2) on every leaf, and a bool
        ``paused`` (the struct keeps it in the leaf's ``feature``)."""
        return _node_view(self._raw_nodes())

    def _raw_nodes(self):
        """Copy of the node structs as they are stored, dtype ``NODE_DTYPE``."""
        out = np.empty(self.node_count, dtype=NODE_DTYPE)
        if self.node_count:
            memcpy(cnp.PyArray_DATA(out), self.nodes, self.node_count * sizeof(Node))
        return out

    @property
    def bounds_array(self):
        """The box of every node, shape ``(node_count, 2, n_features)``: the stored boxes,
        the others rebuilt from the attached points (needs :meth:`attach_points`)."""
        return every_box(self)

    @property
    def box_slots(self):
        """Copy of the box slot of every node (-1: no stored box), shape ``(node_count,)``."""
        out = np.empty(self.node_count, dtype=np.int32)
        if self.node_count:
            memcpy(cnp.PyArray_DATA(out), self.box_slot, self.node_count * sizeof(int32_t))
        return out

    @property
    def stored_boxes(self):
        """Copy of the stored boxes, shape ``(box_count, 2, n_features)`` (row ``s``: the
        box of the node whose slot is ``s``)."""
        out = np.empty((self.box_count, 2, self.n_features), dtype=np.float64)
        if self.box_count:
            memcpy(cnp.PyArray_DATA(out), self.bounds,
                   self.box_count * 2 * self.n_features * sizeof(float64_t))
        return out

    @property
    def value_array(self):
        """Copy of the per-node statistics as the models read them, shape ``(node_count,
        n_columns)``: column ``k`` is the stored column ``column_order[k]`` (for a classifier,
        the class ``classes_[k]``). With lean values the rows not stored are rebuilt from the
        attached points (:meth:`attach_points`)."""
        stored = self._full_value_array()
        if self._trivial_columns():
            return stored
        return np.ascontiguousarray(stored[:, self.column_order])

    def _full_value_array(self):
        """Every node's statistics row in the stored column layout, shape ``(node_count,
        value_stride)``: the stored rows, the others rebuilt (lean values)."""
        return every_value(self)

    def _stored_value_array(self):
        """Copy of the statistics buffer as stored, shape ``(node_count, value_stride)``, or
        ``(box_count, value_stride)`` with lean values (row ``s``: the node of box slot ``s``)."""
        cdef intp_t n = self.box_count if self.lean_values else self.node_count
        out = np.zeros((n, self.value_stride), dtype=np.float64)
        if n and self.value_stride:
            memcpy(cnp.PyArray_DATA(out), self.value, n * self.value_stride * sizeof(float64_t))
        return out

    def node_depths(self):
        """Depth of every node (root at depth 0)."""
        return node_depths(self)

    # ------------------------------------------------------------------ pickling

    def get_rng_state(self):
        """The four words of the tree's generator state."""
        return np.array([self.rng.s0, self.rng.s1, self.rng.s2, self.rng.s3], dtype=np.uint64)

    def _copy(self):
        """An independent copy (nodes, stored-point lists, random stream), by ``memcpy``.

        Equal to a pickle round trip, much faster: the online updates snapshot every tree with
        it so that a failed call can restore the model exactly.
        """
        return tree_copy(self)

    def memory_usage(self):
        """Bytes held by the tree, by buffer.

        Returns
        -------
        dict
            ``nodes``, ``box_slots``, ``value`` (per-node buffers, the ``node_count`` slots in
            use), ``bounds`` (the stored boxes, ``box_count`` of them), ``sample_next``
            (leaf lists, one slot per store index seen), ``reserved`` (allocated growth room
            of every buffer; not resident until written) and ``total`` (the used bytes;
            ``reserved`` is not included).

        Examples
        --------
        >>> import numpy as np
        >>> from mondrian.core._tree import MondrianTree
        >>> X = np.random.default_rng(0).random((50, 3))
        >>> tree = MondrianTree(3, 0, np.inf).fit(X, np.zeros((50, 0)), np.arange(50))
        >>> usage = tree.memory_usage()
        >>> usage["bounds"] == tree.box_count * 2 * 3 * 8  # the boxes of nodes with >= 32 points
        True
        >>> usage["box_slots"] == tree.node_count * 4
        True
        """
        return memory_usage(self)

    def derived_arrays(self, const float64_t[:, ::1] X, const float64_t[:, ::1] rows):
        """Recompute the data that the leaf lists and the store determine.

        The box of a node is the min/max of the stored points below it and its statistics are
        the sum of their contribution rows (summed leaf by leaf, children before parents); its
        ``n_node_samples`` is their number and ``parent`` inverts the child links.

        Returns
        -------
        bounds : ndarray of shape (node_count, 2, n_features)
            ``+inf``/``-inf`` for a leaf that holds no point.
        value : ndarray of shape (node_count, value_stride)
        counts, parent : ndarray of intp, shape (node_count,)
            ``-2`` in both for nodes that the root does not reach.
        """
        self._check_store(X, rows, np.zeros(0, dtype=np.intp))
        return derived(self, &X[0, 0] if X.shape[0] else NULL, X.shape[0], rows)

    def compact_state(self, const float64_t[:, ::1] X, const float64_t[:, ::1] rows):
        """The smallest state from which, with the store, :meth:`from_compact_state` rebuilds
        this tree bit for bit; ``None`` when the tree is not in the form it knows.

        Kept: the shape of the tree (which node ids are internal, their children, features,
        thresholds and split times), the heads of the leaf lists, the paused flags, the
        leaf lists and the random stream, with 32-bit indices when they fit. Left out:
        ``parent`` and ``n_node_samples``, and the boxes and statistics whenever
        :meth:`derived_arrays` reproduces them exactly (checked here, bit for bit, for the
        stored boxes; the full-cell boxes of the density trees are kept, and so are
        statistics whose floating-point sums depend on the order of the updates). On load
        only the boxes of nodes holding ``box_min_samples`` points or more are stored again.
        """
        return tree_compact_state(self, X, rows)

    @staticmethod
    def from_compact_state(state, const float64_t[:, ::1] X, const float64_t[:, ::1] rows):
        """The tree saved by :meth:`compact_state`, with the store it was saved with."""
        return tree_from_compact_state(state, X, rows)

    def __reduce__(self):
        return (
            type(self),
            (self.n_features, self.value_stride, self.lifetime, self.min_samples_split,
             self.pause_pure, 0, self.box_min_samples, self.lean_values),
            self.__getstate__(),
        )

    def __getstate__(self):
        """The whole state, at the current version (:mod:`mondrian.core._tree_state`)."""
        return tree_getstate(self)

    def __setstate__(self, state):
        """Whole state (no points attached: see :meth:`attach_points`). Version 1 (a box for
        every node, before lean boxes) loads; its small nodes' boxes are dropped. The state
        decides whether the statistics rows are lean (version 3, or 4 with ``lean_values``)
        or one per node. Versions before 4 hold the older node records (converted)."""
        tree_setstate(self, state)


def set_column_order_trees(list trees, order):
    """:meth:`MondrianTree.set_column_order` on every tree of ``trees``, the order checked once.

    A classifier meeting a new class inserts its column in every tree: checking the order once
    rather than per tree keeps that O(len(order)) copies per tree (a ``memcpy``), with no NumPy
    call per tree.
    """
    set_trees_column_order(trees, order)


def extend_trees(list trees, const float64_t[:, ::1] X, const float64_t[:, ::1] rows,
                 const intp_t[::1] indices):
    """Extend every tree of ``trees`` with the stored points ``indices``, in one call.

    This is the fast path of online learning one point at a time: it avoids a Python call per
    tree. Every tree sees the points in the same order.
    """
    extend_tree_list(trees, X, rows, indices)
