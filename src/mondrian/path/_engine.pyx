"""The lifetime-path engine: regularisation paths of Mondrian models over the lifetime (section 7).

A Mondrian model sampled to a terminal lifetime is, restricted to any smaller lifetime, exactly
a model of that lifetime. Walking its cuts in order of birth time (forward) or in reverse
(backward), and telling the model which cell splits into which two (or which two merge) and which
points they hold, visits the model at every lifetime at which it changes for the cost of about
one fit rather than one fit per lifetime.

Two roles meet here:

- a :class:`CutSource` says which cells split at every event and which points every cell holds:
  :class:`TreeCuts` for a list of Mondrian trees (one cut per event, points in subtree order);
  the Mondrian grid's :class:`~mondrian.grid._cuts.GridCuts` is another (one cut in one
  dimension splits many cells at once);
- a :class:`CutVisitor` holds what a model keeps and records its metrics: per-point visitors
  move points between a node and its children (:class:`PathReader`; the forests' leaf readers
  live in :mod:`mondrian.forest._path_readers`, the density's in
  :mod:`mondrian.density._path_reader`); visitors of one feature per cell
  (:class:`CellColumns`; the kernel ridge and SGD paths, in :mod:`mondrian.kernel`).

:func:`walk` drives any visitor over any source, forward or backward, in one loop without the GIL.
The engine knows no model: models cimport its declarations (``_engine.pxd``).
"""

from libc.math cimport INFINITY, NAN

from mondrian.core._tree cimport TREE_LEAF, MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t

import numpy as np


# ---------------------------------------------------------------------------- cut sources

def flat_offsets(arrays):
    """Offsets of the arrays laid end to end: the first flat index of each, then the total
    (how the visitors lay out per-node arrays of several trees)."""
    offsets = np.zeros(len(arrays) + 1, dtype=np.intp)
    offsets[1:] = np.cumsum([len(a) for a in arrays])
    return offsets


cdef class CutSource:
    """Base class of the cut sources of the path engine (not for direct use)."""

    cdef intp_t n_splits(self, intp_t e) noexcept nogil:
        return 0

    cdef void split_of(self, intp_t e, intp_t s, intp_t* group, intp_t* cell, intp_t* left,
                       intp_t* right) noexcept nogil:
        pass

    cdef intp_t cell_points(self, intp_t group, intp_t cell,
                            const intp_t** points) noexcept nogil:
        return 0

    cdef intp_t n_cells(self, intp_t group) noexcept nogil:
        return 0


cdef class TreeCuts(CutSource):
    """The cuts of a list of trees in birth order, and the points of every node.

    Parameters
    ----------
    times : ndarray of float, shape (n_events,)
        Birth time of every cut, increasing.
    events : ndarray of intp, shape (n_events, 4)
        Tree, split node, left child, right child of every cut.
    offsets : ndarray of intp, shape (n_trees + 1,)
        Flat index of the first node of every tree in ``starts`` and ``ends``.
    starts, ends : ndarray of intp
        Flat over the nodes of all trees: ``orders[m, starts[offsets[m] + j]:ends[...]]`` are
        the points below node ``j`` of tree ``m``.
    orders : ndarray of intp, shape (n_trees, n_points)
        Per tree, the points in subtree order (:func:`subtree_order`; a tree that does not hold
        every point fills only the head of its row).

    Notes
    -----
    The arrays are only read: one source can feed many walks.
    """

    def __init__(self, times, events, offsets, starts, ends, orders):
        self.times = np.asarray(times, dtype=np.float64)
        self.events = np.ascontiguousarray(events, dtype=np.intp).reshape(-1, 4)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.intp)
        self.starts = np.ascontiguousarray(starts, dtype=np.intp)
        self.ends = np.ascontiguousarray(ends, dtype=np.intp)
        self.orders = np.ascontiguousarray(orders, dtype=np.intp)
        self.terminal = INFINITY
        self.n_events = self.events.shape[0]
        self.n_groups = self.offsets.shape[0] - 1
        self.n_points = self.orders.shape[1]
        if self.orders.shape[0] != self.n_groups:
            raise ValueError("one order per tree is needed")
        if self.starts.shape[0] != self.offsets[self.n_groups] or (
                self.ends.shape[0] != self.starts.shape[0]):
            raise ValueError("one start and one end per node are needed")
        if self.times.shape[0] != self.n_events:
            raise ValueError("one time per event is needed")

    @classmethod
    def from_trees(cls, list trees, leaf_of_point=None, float64_t stop=INFINITY,
                   max_cells=None):
        """The source of ``trees`` read on ``leaf_of_point``, in one call.

        Parameters
        ----------
        trees : list of MondrianTree
            Trees of one lifetime.
        leaf_of_point : ndarray of intp, shape (n_trees, n_points), default=None
            Leaf of every point in every tree (see :func:`plan_path`); by default the points
            each tree stores (``MondrianTree.leaf_sample_assignment``).
        stop : float, default=inf
            Keep only the cuts born before ``stop``.
        max_cells : int, default=None
            Keep the first-born cuts while the model has at most this many cells (the
            ``n_trees`` roots plus one per cut).

        Returns
        -------
        TreeCuts
            Its ``terminal`` is the lifetime at which the kept model ends: the birth time of
            the first cut left out, else ``stop`` or the trees' lifetime, whichever is smaller.
        """
        cdef TreeCuts source
        if leaf_of_point is None:
            leaf_of_point = np.vstack([tree.leaf_sample_assignment() for tree in trees]
                                      if trees else np.empty((0, 0))).astype(np.intp)
        max_events = None if max_cells is None else int(max_cells) - len(trees)
        plan, terminal = _plan(trees, np.ascontiguousarray(leaf_of_point, dtype=np.intp),
                               stop, max_events)
        source = cls(*plan)
        lifetimes = [(<MondrianTree>tree).lifetime for tree in trees]
        source.terminal = min(terminal, stop, min(lifetimes, default=INFINITY))
        return source

    def as_tuple(self):
        """``(times, events, offsets, starts, ends, orders)`` (the layout of :func:`plan_path`)."""
        return (self.times, np.asarray(self.events), np.asarray(self.offsets),
                np.asarray(self.starts), np.asarray(self.ends), np.asarray(self.orders))

    def terminal_cells(self):
        """Per tree, the cells of the model holding every event, by increasing node id: the
        children of cut nodes that are not cut themselves, or the root when none is."""
        cdef intp_t m, e
        cut = [np.zeros(self.offsets[m + 1] - self.offsets[m], dtype=bool)
               for m in range(self.n_groups)]
        child = [np.zeros_like(c) for c in cut]
        for e in range(self.n_events):
            m = self.events[e, 0]
            cut[m][self.events[e, 1]] = True
            child[m][self.events[e, 2]] = True
            child[m][self.events[e, 3]] = True
        for m in range(self.n_groups):
            if child[m].size:
                child[m][0] = True
        return [np.flatnonzero(child[m] & ~cut[m]) for m in range(self.n_groups)]

    cdef intp_t n_splits(self, intp_t e) noexcept nogil:
        return 1

    cdef void split_of(self, intp_t e, intp_t s, intp_t* group, intp_t* cell, intp_t* left,
                       intp_t* right) noexcept nogil:
        group[0] = self.events[e, 0]
        cell[0] = self.events[e, 1]
        left[0] = self.events[e, 2]
        right[0] = self.events[e, 3]

    cdef intp_t cell_points(self, intp_t group, intp_t cell,
                            const intp_t** points) noexcept nogil:
        cdef intp_t j = self.offsets[group] + cell
        points[0] = &self.orders[group, 0] + self.starts[j]
        return self.ends[j] - self.starts[j]

    cdef intp_t n_cells(self, intp_t group) noexcept nogil:
        return self.offsets[group + 1] - self.offsets[group]


def subtree_order(MondrianTree tree, const intp_t[::1] leaf_of_point):
    """Order the points so that every node's points are contiguous.

    Parameters
    ----------
    tree : MondrianTree
    leaf_of_point : ndarray of intp
        Leaf of every point (from ``MondrianTree.leaf_sample_assignment``); -1 for points the
        tree does not hold.

    Returns
    -------
    order : ndarray of intp
        Point indices, grouped by leaf in depth-first order (left subtree first).
    start, end : ndarray of intp, shape (node_count,)
        ``order[start[j]:end[j]]`` are the points below node ``j``; a node's range is its left
        child's followed by its right child's.
    """
    cdef intp_t n_nodes = tree.node_count, n = leaf_of_point.shape[0]
    cdef intp_t i, j, k, top, pos = 0
    counts = np.zeros(n_nodes + 1, dtype=np.intp)
    cdef intp_t[::1] cnt = counts
    start = np.zeros(n_nodes, dtype=np.intp)
    end = np.zeros(n_nodes, dtype=np.intp)
    cdef intp_t[::1] st = start, en = end
    visit = np.empty(2 * n_nodes + 2, dtype=np.intp)
    cdef intp_t[::1] stack = visit
    order = np.empty(n, dtype=np.intp)
    cdef intp_t[::1] od = order
    with nogil:
        for i in range(n):
            if leaf_of_point[i] >= 0:
                cnt[leaf_of_point[i] + 1] += 1
        # Iterative depth-first walk over (node, state) pairs encoded as 2 * node + state:
        # state 0 opens a node, state 1 closes it once its subtree is placed.
        top = 0
        stack[top] = 0
        top += 1
        while top > 0 and n_nodes > 0:
            top -= 1
            k = stack[top]
            j = k // 2
            if k % 2 == 0:
                st[j] = pos
                if tree.nodes[j].left_child == TREE_LEAF:
                    pos += cnt[j + 1]
                    en[j] = pos
                else:
                    stack[top] = 2 * j + 1
                    stack[top + 1] = 2 * <intp_t>tree.nodes[j].right_child
                    stack[top + 2] = 2 * <intp_t>tree.nodes[j].left_child
                    top += 3
            else:
                en[j] = pos
        # Fill every leaf's range in point order (cnt is reused as the fill cursor).
        for j in range(n_nodes):
            cnt[j] = st[j]
        for i in range(n):
            j = leaf_of_point[i]
            if j >= 0:
                od[cnt[j]] = i
                cnt[j] += 1
    return order[:pos], start, end


def cut_events(list trees, float64_t stop=INFINITY, max_events=None):
    """Every cut of the forest, in order of birth time.

    Parameters
    ----------
    trees : list of MondrianTree
    stop : float, default=inf
        Keep only the cuts born before ``stop``.
    max_events : int, default=None
        Keep at most this many (the first born).

    Returns
    -------
    times : ndarray of float
    tree, node, left, right : ndarray of intp
        Tree index, split node and its children.
    """
    return _cut_events(trees, stop, max_events)[0]


def _cut_events(list trees, float64_t stop, max_events):
    """:func:`cut_events`, and the birth time of the first cut left out (inf if none)."""
    times, tree_ids, nodes, lefts, rights = [], [], [], [], []
    for m, tree in enumerate(trees):
        arr = tree.nodes_array
        internal = np.flatnonzero(arr["left_child"] != TREE_LEAF)
        times.append(arr["split_time"][internal])
        tree_ids.append(np.full(internal.size, m, dtype=np.intp))
        nodes.append(internal.astype(np.intp))
        lefts.append(arr["left_child"][internal].astype(np.intp))
        rights.append(arr["right_child"][internal].astype(np.intp))
    times = np.concatenate(times) if times else np.empty(0)
    order = np.argsort(times, kind="stable")
    keep = order.shape[0]
    if stop < INFINITY:
        keep = int(np.searchsorted(times[order], stop, side="left"))
    if max_events is not None:
        keep = max(0, min(keep, int(max_events)))
    next_time = float(times[order[keep]]) if keep < order.shape[0] else INFINITY
    order = order[:keep]
    columns = [np.concatenate(a)[order] if a else np.empty(0, np.intp)
               for a in (tree_ids, nodes, lefts, rights)]
    return (times[order], *columns), next_time


def plan_path(list trees, const intp_t[:, ::1] leaf_of_point, float64_t stop=INFINITY,
              max_events=None):
    """The cuts of ``trees`` in birth order and, per tree, the points of every node.

    Parameters
    ----------
    trees : list of MondrianTree
    leaf_of_point : ndarray of intp, shape (n_trees, n_points)
        Leaf of every evaluation point in every tree at the trees' lifetime; -1 for a point a
        tree does not hold (it never moves in that tree).
    stop : float, default=inf
        Keep only the cuts born before ``stop``.
    max_events : int, default=None
        Keep at most this many cuts (the first born).

    Returns
    -------
    tuple
        ``(times, events, offsets, starts, ends, orders)``, to pass to :func:`run_path`
        (several readers of the same points can share one plan) or to :class:`TreeCuts`.
    """
    return _plan(trees, leaf_of_point, stop, max_events)[0]


def _plan(list trees, const intp_t[:, ::1] leaf_of_point, float64_t stop, max_events):
    """:func:`plan_path`, and the birth time of the first cut left out (inf if none)."""
    cdef intp_t n_trees = len(trees), n_points = leaf_of_point.shape[1], m
    if leaf_of_point.shape[0] != n_trees:
        raise ValueError("leaf_of_point needs one row per tree")
    (times, ev_tree, ev_node, ev_left, ev_right), next_time = _cut_events(trees, stop,
                                                                          max_events)
    offsets = np.zeros(n_trees + 1, dtype=np.intp)
    for m in range(n_trees):
        offsets[m + 1] = offsets[m] + (<MondrianTree>trees[m]).node_count
    starts = np.empty(offsets[n_trees], dtype=np.intp)
    ends = np.empty(offsets[n_trees], dtype=np.intp)
    orders = np.empty((n_trees, n_points), dtype=np.intp)
    for m in range(n_trees):
        order, start, end = subtree_order(trees[m], np.ascontiguousarray(leaf_of_point[m]))
        orders[m, : order.shape[0]] = order
        starts[offsets[m]: offsets[m + 1]] = start
        ends[offsets[m]: offsets[m + 1]] = end
    events = np.ascontiguousarray(np.column_stack([ev_tree, ev_node, ev_left, ev_right]),
                                  dtype=np.intp)
    return (times, events, offsets, starts, ends, orders), next_time


# ---------------------------------------------------------------------------- visitors

cdef class CutVisitor:
    """Base class of the models read along a lifetime path (not for direct use).

    Subclasses override the cdef hooks ``begin``, ``split``, ``merge`` and ``record``
    (see ``_engine.pxd``); :func:`walk` calls them.
    """

    cdef int begin(self, bint forward) except -1:
        return 0

    cdef int split(self, intp_t group, intp_t cell, intp_t left, intp_t right,
                   const intp_t* left_points, intp_t n_left,
                   const intp_t* right_points, intp_t n_right) except -1 nogil:
        return 0

    cdef int merge(self, intp_t group, intp_t cell, intp_t left, intp_t right,
                   const intp_t* left_points, intp_t n_left,
                   const intp_t* right_points, intp_t n_right) except -1 nogil:
        return 0

    cdef int record(self, intp_t n_cuts, float64_t* row) except -1 nogil:
        return 0


cdef class PathReader(CutVisitor):
    """Base class of the per-point readers of a forest path (not for direct use): every point
    of a split (merged) cell moves from the cell to its child (back), one ``move`` each."""

    cdef void move(self, intp_t tree, intp_t point, intp_t src, intp_t dst,
                   bint descend) noexcept nogil:
        pass

    cdef int split(self, intp_t group, intp_t cell, intp_t left, intp_t right,
                   const intp_t* left_points, intp_t n_left,
                   const intp_t* right_points, intp_t n_right) except -1 nogil:
        _move_points(self, group, cell, left, left_points, n_left, True)
        _move_points(self, group, cell, right, right_points, n_right, True)
        return 0

    cdef int merge(self, intp_t group, intp_t cell, intp_t left, intp_t right,
                   const intp_t* left_points, intp_t n_left,
                   const intp_t* right_points, intp_t n_right) except -1 nogil:
        _move_points(self, group, cell, left, left_points, n_left, False)
        _move_points(self, group, cell, right, right_points, n_right, False)
        return 0


cdef inline void _move_points(PathReader reader, intp_t group, intp_t cell, intp_t child,
                              const intp_t* points, intp_t n, bint descend) noexcept nogil:
    """Move ``points`` from ``cell`` down to ``child`` (``descend``) or back up, one by one."""
    cdef intp_t k
    if descend:
        for k in range(n):
            reader.move(group, points[k], cell, child, True)
    else:
        for k in range(n):
            reader.move(group, points[k], child, cell, False)


cdef class CountingVisitor(CutVisitor):
    """Counts, per cell, the points a path has placed there (for tests and as an example).

    Metrics: the number of live cells, and the sum over live cells of the squared number of
    points (the number of (tree, pair of points sharing a cell) triples, diagonal included).

    Parameters
    ----------
    n_trees : int
    n_points : int
        Every point starts in every root.
    """

    cdef intp_t[:, ::1] cell_of       # (n_trees, n_points): cell of every point
    cdef intp_t n_live
    cdef float64_t pairs

    def __init__(self, intp_t n_trees, intp_t n_points):
        self.n_metrics = 2
        self.cell_of = np.zeros((n_trees, n_points), dtype=np.intp)

    cdef int begin(self, bint forward) except -1:
        self.n_live = self.source.n_groups
        self.pairs = self.source.n_groups * <float64_t>self.source.n_points ** 2
        return 0

    cdef int split(self, intp_t group, intp_t cell, intp_t left, intp_t right,
                   const intp_t* left_points, intp_t n_left,
                   const intp_t* right_points, intp_t n_right) except -1 nogil:
        _count_regroup(self, group, left, left_points, n_left, right, right_points, n_right, 1)
        return 0

    cdef int merge(self, intp_t group, intp_t cell, intp_t left, intp_t right,
                   const intp_t* left_points, intp_t n_left,
                   const intp_t* right_points, intp_t n_right) except -1 nogil:
        _count_regroup(self, group, cell, left_points, n_left, cell, right_points, n_right, -1)
        return 0

    cdef int record(self, intp_t n_cuts, float64_t* row) except -1 nogil:
        row[0] = self.n_live
        row[1] = self.pairs
        return 0

    def cells(self):
        """Current cell of every point in every tree, shape (n_trees, n_points)."""
        return np.asarray(self.cell_of).copy()


cdef inline void _count_regroup(CountingVisitor visitor, intp_t group,
                                intp_t left_cell, const intp_t* left_points, intp_t n_left,
                                intp_t right_cell, const intp_t* right_points, intp_t n_right,
                                int step) noexcept nogil:
    """Place the two sides' points in their cells; a split (``step=1``) adds a live cell and
    the change of the pair count, a merge (``step=-1``) takes them back."""
    cdef intp_t k, n = n_left + n_right
    for k in range(n_left):
        visitor.cell_of[group, left_points[k]] = left_cell
    for k in range(n_right):
        visitor.cell_of[group, right_points[k]] = right_cell
    visitor.n_live += step
    # Negating a float is exact, so a merge undoes its split to the bit.
    visitor.pairs += step * (<float64_t>n_left * n_left + <float64_t>n_right * n_right
                             - <float64_t>n * n)

cdef class CellColumns(CutVisitor):
    """Base class of the visitors with one feature column per live cell (not for direct use)."""

    cdef int init_columns(self, intp_t capacity) except -1:
        cdef CutSource source = self.source
        cdef intp_t g
        base = np.zeros(source.n_groups + 1, dtype=np.intp)
        for g in range(source.n_groups):
            base[g + 1] = base[g] + source.n_cells(g)
        self.cell_base = base
        self.cell_col = np.full(base[source.n_groups], -1, dtype=np.intp)
        self.cols = np.zeros((source.n_groups, source.n_points), dtype=np.intp)
        self.col_group = np.zeros(capacity, dtype=np.intp)
        self.col_cell = np.zeros(capacity, dtype=np.intp)
        return 0

    cdef void relabel(self, intp_t group, intp_t cell, intp_t col) noexcept nogil:
        cdef const intp_t* points
        cdef intp_t n = self.source.cell_points(group, cell, &points)
        self.relabel_points(group, cell, col, points, n)

    cdef void relabel_points(self, intp_t group, intp_t cell, intp_t col,
                             const intp_t* points, intp_t n) noexcept nogil:
        cdef intp_t k
        for k in range(n):
            self.cols[group, points[k]] = col
        self.col_group[col] = group
        self.col_cell[col] = cell
        self.cell_col[self.cell_base[group] + cell] = col


# ---------------------------------------------------------------------------- the walker

cdef int _visit(CutSource source, CutVisitor visitor, intp_t e, bint forward) except -1 nogil:
    """Apply event ``e``: its splits in order (forward), or its merges in reverse order."""
    cdef intp_t n = source.n_splits(e), s, i, group, cell, left, right, n_left, n_right
    cdef const intp_t* left_points
    cdef const intp_t* right_points
    for i in range(n):
        s = i if forward else n - 1 - i
        source.split_of(e, s, &group, &cell, &left, &right)
        n_left = source.cell_points(group, left, &left_points)
        n_right = source.cell_points(group, right, &right_points)
        if forward:
            visitor.split(group, cell, left, right, left_points, n_left, right_points, n_right)
        else:
            visitor.merge(group, cell, left, right, left_points, n_left, right_points, n_right)
    return 0


cdef int visit_event(CutSource source, CutVisitor visitor, intp_t e,
                     bint forward) except -1 nogil:
    """:func:`_visit`, for sources whose events are chosen one at a time (see the .pxd)."""
    return _visit(source, visitor, e, forward)


cdef inline int _visit_tree(TreeCuts source, CutVisitor visitor, intp_t e,
                            bint forward) except -1 nogil:
    """:func:`_visit` for a :class:`TreeCuts` source read in place (one split per event, no
    indirect calls to the source: many paths have tens of thousands of small events)."""
    cdef intp_t m = source.events[e, 0], cell = source.events[e, 1]
    cdef intp_t left = source.events[e, 2], right = source.events[e, 3]
    cdef intp_t base = source.offsets[m]
    cdef const intp_t* row = &source.orders[m, 0]
    cdef intp_t a = source.starts[base + left], b = source.starts[base + right]
    cdef intp_t n_left = source.ends[base + left] - a, n_right = source.ends[base + right] - b
    if forward:
        return visitor.split(m, cell, left, right, row + a, n_left, row + b, n_right)
    return visitor.merge(m, cell, left, right, row + a, n_left, row + b, n_right)


cdef int walk(CutSource source, CutVisitor visitor, bint forward,
              float64_t[:, ::1] metrics) except -1:
    cdef intp_t n_events = source.n_events, e
    cdef bint width = visitor.n_metrics > 0
    cdef bint at_terminal, trees = type(source) is TreeCuts
    cdef TreeCuts tree_cuts = source if trees else None
    if metrics.shape[0] != n_events + 1 or metrics.shape[1] != visitor.n_metrics:
        raise ValueError("metrics needs one row per number of events and one column per metric")
    metrics[:, :] = NAN
    visitor.source = source
    at_terminal = visitor.begin(forward) == 1
    with nogil:
        if forward:
            visitor.record(0, &metrics[0, 0] if width else NULL)
            for e in range(n_events):
                if trees:
                    _visit_tree(tree_cuts, visitor, e, True)
                else:
                    _visit(source, visitor, e, True)
                visitor.record(e + 1, &metrics[e + 1, 0] if width else NULL)
        else:
            if not at_terminal:
                for e in range(n_events):
                    if trees:
                        _visit_tree(tree_cuts, visitor, e, True)
                    else:
                        _visit(source, visitor, e, True)
            # The visitor holds the terminal model: undo the events from the last born.
            visitor.record(n_events, &metrics[n_events, 0] if width else NULL)
            for e in range(n_events - 1, -1, -1):
                if trees:
                    _visit_tree(tree_cuts, visitor, e, False)
                else:
                    _visit(source, visitor, e, False)
                visitor.record(e, &metrics[e, 0] if width else NULL)
    return 0


def walk_path(CutSource source, CutVisitor visitor, bint forward=True):
    """Walk the events of ``source`` with ``visitor``, forward or backward.

    Parameters
    ----------
    source : CutSource
    visitor : CutVisitor
        A fresh model state (each visitor is walked once).
    forward : bool, default=True
        From lifetime 0 up (True) or from the terminal model down.

    Returns
    -------
    metrics : ndarray of shape (n_events + 1, visitor.n_metrics)
        Row ``e`` describes the model holding the first ``e`` events (NaN where the visitor
        recorded nothing).
    """
    metrics = np.empty((source.n_events + 1, visitor.n_metrics))
    walk(source, visitor, forward, metrics)
    return metrics


def run_path(list trees, const intp_t[:, ::1] leaf_of_point, PathReader reader,
             bint forward=True, float64_t stop=INFINITY, tuple plan=None):
    """Walk the cuts of ``trees`` and record ``reader``'s metrics after each one.

    Parameters
    ----------
    trees : list of MondrianTree
    leaf_of_point : ndarray of intp, shape (n_trees, n_points)
        Leaf of every evaluation point in every tree (see :func:`plan_path`).
    reader : PathReader
        Model state with every point at the root of every tree.
    forward : bool, default=True
        Add cuts from the root down (True), or start from the terminal lifetime and remove
        them in decreasing birth time (False).
    stop : float, default=inf
        Forward only: stop before the first cut born at or after ``stop``, leaving ``reader``
        in the state of the forest pruned at ``stop``.
    plan : tuple, default=None
        From :func:`plan_path` on the same trees and points (with the same ``stop``).

    Returns
    -------
    times : ndarray of shape (n_events,)
        Birth times of the cuts processed.
    metrics : ndarray of shape (n_events + 1, reader.n_metrics)
        Row 0 is the forest of root cells (lifetime 0); row ``e + 1`` holds after the first
        ``e + 1`` cuts, for lifetimes in ``(times[e], times[e + 1]]``.
    """
    if stop < INFINITY and not forward:
        raise ValueError("stop applies to forward paths")
    if plan is None:
        plan = plan_path(trees, leaf_of_point, stop)
    source = TreeCuts(*plan)
    if source.n_points != leaf_of_point.shape[1] or source.n_groups != len(trees):
        raise ValueError("the plan does not match the trees and points")
    return source.times, walk_path(source, reader, forward)
