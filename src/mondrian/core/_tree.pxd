# The Mondrian tree core: a packed node array with side buffers, shared by every model.
from mondrian.core._random cimport RandomState, rng_uniform_open, rng_weighted
from libc.math cimport INFINITY
from libc.stdint cimport int32_t

from mondrian.core._typedefs cimport BOX_BLOCK, BOX_POINTS_MAX, float64_t, intp_t

cdef enum:
    # Sentinels of the node array, as in scikit-learn's trees.
    TREE_LEAF = -1
    TREE_UNDEFINED = -2
    # `feature` of a paused leaf (regrows once its pause rule stops holding); the other
    # leaves have TREE_UNDEFINED. Internal to the core: the read-only views (nodes_array,
    # MondrianTreeStructure) report TREE_UNDEFINED for every leaf and a separate `paused`.
    TREE_PAUSED = -3
    # Node ids are 32-bit in the struct: a tree holds at most 2**31 - 1 nodes (ids below it).
    MAX_NODES = 2147483647

cdef struct Node:
    # Packed to 48 bytes without padding: the 8-byte fields first, then the 32-bit ones. Node
    # ids and features fit 32 bits (_new_node refuses the 2**31 - 1st node); store indices
    # and counts stay intp_t (a long stream passes 2**31 points). Multiply an int32 field
    # in intp_t (cast it) when it indexes a buffer: `value + <intp_t>nd.left_child * S`.
    # The paused flag of a leaf is its `feature` (TREE_PAUSED): every reader of `feature`
    # reads internal nodes only, and a cut (_split, extension) or _reset_leaf overwrites it.
    float64_t threshold     # split location, TREE_UNDEFINED for leaves
    float64_t split_time    # tau: birth time of the cut; the lifetime for leaves (may be +inf)
    intp_t n_node_samples   # number of training points below the node
    intp_t first_sample     # leaves: head of the list of stored points in the leaf, else -1
    int32_t parent          # id of the parent node, TREE_LEAF (-1) for the root
    int32_t left_child      # id of the left child (points with x[feature] <= threshold), or -1
    int32_t right_child     # id of the right child, or -1
    int32_t feature         # split dimension; leaves: TREE_UNDEFINED, or TREE_PAUSED if paused


cdef inline bint node_paused(const Node* nd) noexcept nogil:
    """Whether ``nd`` is a paused leaf."""
    return nd.feature == TREE_PAUSED


cdef struct StackRecord:
    intp_t node             # node to grow or extend
    intp_t start            # range [start, end) of the index buffer holding its points
    intp_t end
    float64_t tau_parent    # birth time of the node's parent cut (0 for the root)


cdef struct UndoLog:
    # The undo log of a MondrianTree (functions in mondrian.core._undo).
    bint on
    # The tree at begin_undo: nodes, boxes, store indices and random stream then.
    intp_t node_count, box_count, samples_seen
    RandomState rng
    # Node entries (count, capacity, capacity of values in floats): each node's id, struct,
    # box slot, stored box (2 D floats) and stored statistics row (value_stride floats).
    intp_t n, cap, vcap
    intp_t* ids
    Node* nodes
    int32_t* slots
    float64_t* bounds
    float64_t* values
    # Leaf-list entries (count, capacity): (store index, old next) pairs.
    intp_t sn, scap
    intp_t* samples
    # The statistics buffer before set_value_columns (widened), its stride and capacity.
    bint widened
    float64_t* old_value
    intp_t old_stride, old_capacity
    # The read columns before set_value_columns / set_column_order (reordered).
    bint reordered
    intp_t* old_columns
    intp_t old_n_columns, old_columns_capacity
    # Entries past the first UNDO_STREAM_ENTRIES are written around the cache (mondrian.core.
    # _undo: a mini-batch's log of every tree is far larger than the caches); set by the
    # online extension for a batch, which fences those writes (undo_fence) before it returns.
    bint stream


cdef class MondrianTree  # (declared below; the builders' type takes one)

# An online builder: adds the stored points idx[:n] (n > 0, _ensure_indices done; the builder
# may reorder idx[:n]) to the tree, growing it from its root when it is empty, and logs every
# write to a node that existed through the tree's undo log. X: the store's inputs, rows: their
# contribution rows (NULL when value_stride is 0).
ctypedef int (*Builder)(MondrianTree tree, intp_t* idx, intp_t n, const float64_t* X,
                        const float64_t* rows) except -1 nogil


cdef class MondrianTree:
    # Hyperparameters fixed at construction.
    cdef readonly intp_t n_features         # number of input features
    cdef readonly intp_t value_stride       # width of the per-node statistics row (stored)
    # The statistics columns the models read, in their order: read column k is stored column
    # columns[k], for k < n_columns <= value_stride (a classifier keeps its classes in arrival
    # order with spare zero columns, so that a new class rarely rewrites the rows; readers
    # see them in the sorted order of classes_). Identity over value_stride by default.
    cdef readonly intp_t n_columns
    cdef intp_t* columns
    cdef intp_t columns_capacity
    cdef readonly float64_t lifetime        # lambda, possibly +inf
    cdef readonly intp_t min_samples_split  # leaves with fewer points pause
    cdef readonly bint pause_pure           # pause leaves whose statistics have one non-zero entry
    # What min_samples_split counts: 0 the points, k > 0 the sum of value[:k], -1 of the whole row
    # (weighted counts, for sample_weight).
    cdef public intp_t count_columns

    # Storage: node i owns nodes[i], box_slot[i] and value[S*i : S*(i+1)]; its data box, when
    # stored, is bounds[2*D*s : 2*D*(s+1)] with s = box_slot[i] (lean boxes: only nodes holding
    # at least box_min_samples points keep one; the others are rebuilt from their points).
    cdef Node* nodes                        # (capacity,) packed node structs
    cdef int32_t* box_slot                  # (capacity,) slot of the node's box, -1: not stored
    cdef float64_t* bounds                  # (box_capacity, 2, n_features) lower then upper row
    # Statistics rows: (capacity, value_stride) by node id, or (box_capacity, value_stride)
    # by box slot (lean values).
    cdef float64_t* value
    cdef readonly intp_t node_count         # nodes in use; the root is node 0
    cdef readonly intp_t capacity           # allocated nodes
    cdef readonly intp_t box_count          # box slots in use
    cdef readonly intp_t box_capacity       # allocated box slots
    # Nodes with at least this many points keep a stored box (0: every node, slot == node id).
    cdef readonly intp_t box_min_samples
    # Lean statistics: value rows are stored by box slot (only nodes with a stored box keep
    # one); the others are the sums of their points' rows, rebuilt when read (node_row).
    cdef readonly bint lean_values
    # The store's inputs, to rebuild the boxes of small nodes (attach_points; readers only):
    # points_owner keeps the array alive, points_ptr / points_rows describe it.
    cdef object points_owner
    cdef const float64_t* points_ptr
    cdef readonly intp_t points_rows
    # The store's contribution rows, to rebuild the statistics rows of small nodes (lean values).
    cdef object rows_owner
    cdef const float64_t* rows_ptr
    cdef readonly intp_t rows_rows
    cdef readonly intp_t rows_stride

    # Leaf membership of stored points: sample_next[i] is the next stored point in i's leaf.
    cdef intp_t* sample_next
    cdef readonly intp_t sample_capacity    # length of sample_next
    cdef readonly intp_t n_samples_seen     # 1 + largest store index added to the tree
    # Work of the online extensions so far (tests): node records handled plus stored points
    # read to rebuild the boxes of nodes that keep none (not saved, not copied).
    cdef readonly intp_t extend_work

    cdef RandomState rng                    # this tree's random stream
    # The online builder, called by extend / extend_trees (and so fit): set by __cinit__,
    # mondrian.core._extend.extend_tree; a subclass's __cinit__ sets its own (the density's
    # full-cell trees: mondrian.density._full_cell_builder.extend_cells).
    cdef Builder builder

    # Scratch buffers, reused between calls: one explicit stack for batch growth, one for
    # online extension (extension can start a growth), and 3 * n_features floats.
    cdef StackRecord* grow_stack
    cdef intp_t grow_stack_capacity
    cdef float64_t* grow_boxes              # boxes of the growth stack's records (2 D each)
    cdef intp_t grow_boxes_capacity
    cdef StackRecord* extend_stack
    cdef intp_t extend_stack_capacity
    cdef float64_t* scratch
    cdef float64_t* row_scratch             # one statistics row (value_stride floats, >= 1)

    # Undo log of one online update (begin_undo / rollback_undo / commit_undo: mondrian.core.
    # _undo): the state at begin, and the old contents of every pre-existing node and
    # leaf-list entry before it is written.
    cdef UndoLog undo

    cdef int _resize(self, intp_t capacity) except -1 nogil
    cdef int _ensure_samples(self, intp_t n) except -1 nogil
    cdef int _ensure_indices(self, const intp_t* idx, intp_t n) except -1 nogil
    cdef intp_t _new_node(self) except -1 nogil
    cdef intp_t _new_box(self, intp_t node) except -1 nogil
    cdef float64_t* _box_target(self, intp_t node, intp_t count,
                                float64_t* scratch) except NULL nogil
    cdef const float64_t* _node_box(self, intp_t node, const float64_t* X,
                                    float64_t* scratch) noexcept nogil
    cdef int _attach(self, object owner, const float64_t* ptr, intp_t rows) except -1
    cdef int _store_checks(self, const float64_t[:, ::1] X, const float64_t[:, ::1] rows,
                           const intp_t[::1] indices) except -1
    cdef int _attach_rows(self, object owner, const float64_t* ptr, intp_t n,
                          intp_t stride) except -1
    cdef float64_t* _value_target(self, intp_t node, float64_t* scratch) noexcept nogil
    cdef int _all_values(self, float64_t* out, intp_t* queue) except -1 nogil
    cdef int _all_boxes(self, float64_t* out, intp_t* queue) except -1 nogil
    cdef int _log_node(self, intp_t node) except -1 nogil
    cdef int _log_sample(self, intp_t i) except -1 nogil
    cdef int _set_columns(self, const intp_t* columns, intp_t n) except -1


cdef extern from *:
    """
    #if defined(__SSE2__) || defined(_M_X64)
    #include <emmintrin.h>
    #endif
    /* max(lo - v, 0) + max(v - hi, 0), each max as (t > 0 ? t : 0): MAXSD returns its first
       operand when it is above the second, else the second, which is that expression for
       every input (NaN and -0.0 give +0.0). GCC compiled the scalar form to compares and
       jumps, mispredicted as test points fall on either side of a box at random. */
    static inline double mf_side_gap(double lo, double hi, double v) {
    #if defined(__SSE2__) || defined(_M_X64)
        const __m128d zero = _mm_setzero_pd();
        __m128d below = _mm_max_sd(_mm_set_sd(lo - v), zero);
        __m128d above = _mm_max_sd(_mm_set_sd(v - hi), zero);
        return _mm_cvtsd_f64(_mm_add_sd(below, above));
    #else
        double below = lo - v, above = v - hi;
        below = below > 0.0 ? below : 0.0;
        above = above > 0.0 ? above : 0.0;
        return below + above;
    #endif
    }
    """
    float64_t mf_side_gap(float64_t lo, float64_t hi, float64_t v) noexcept nogil


cdef inline float64_t side_gap(float64_t lo, float64_t hi, float64_t v) noexcept nogil:
    """Distance from ``v`` to ``[lo, hi]``, ``max(lo - v, 0) + max(v - hi, 0)``, without a
    branch (a test point falls on either side unpredictably: ``mf_side_gap``). At most one
    term is non-zero (both are +inf for the empty box), and adding +0.0 leaves a sum
    unchanged: the bits of ``lo - v if v < lo else v - hi if v > hi else 0``."""
    return mf_side_gap(lo, hi, v)


cdef inline float64_t box_distance(const float64_t* lo, intp_t D,
                                   const float64_t* x) noexcept nogil:
    """L1 distance from ``x`` to the box ``[lo, lo + D)`` x ``[lo + D, lo + 2 D)``: the rate
    at which the extension of the tree to ``x`` cuts ``x`` off above the node (eta in
    sections 2 and 5)."""
    cdef const float64_t* hi = lo + D
    cdef intp_t d
    cdef float64_t eta = 0.0
    for d in range(D):
        eta += side_gap(lo[d], hi[d], x[d])
    return eta


cdef inline intp_t subtree_points(MondrianTree tree, intp_t node, intp_t* out,
                                  intp_t cap) noexcept nogil:
    """Write the stored points below ``node`` (its subtree's leaf lists, left subtree first)
    to ``out``; return their number (at most ``cap``: the caller passes a node holding fewer).

    Walks the subtree through the parent links, so it needs no stack and writes nothing."""
    cdef intp_t n = 0, j = node, i, up
    while True:
        while tree.nodes[j].left_child != TREE_LEAF:
            j = tree.nodes[j].left_child
        i = tree.nodes[j].first_sample
        while i != TREE_LEAF and n < cap:
            out[n] = i
            n += 1
            i = tree.sample_next[i]
        # Up to the first ancestor entered from its left child, then into its right subtree.
        while j != node:
            up = tree.nodes[j].parent
            if tree.nodes[up].left_child == j:
                j = tree.nodes[up].right_child
                break
            j = up
        else:
            return n


cdef inline void points_box(const float64_t* X, intp_t D, const intp_t* points, intp_t n,
                            float64_t* lo) noexcept nogil:
    """The box of ``points`` (rows of ``X``) into ``lo`` (lower row) and ``lo + D`` (upper):
    the same min/max, so the same bits, as a box grown point by point (``+inf``/``-inf`` for
    no point)."""
    cdef float64_t* hi = lo + D
    cdef const float64_t* row
    cdef intp_t d, k
    cdef float64_t v
    if n == 0:
        for d in range(D):
            lo[d] = INFINITY
            hi[d] = -INFINITY
        return
    row = X + points[0] * D
    for d in range(D):
        lo[d] = row[d]
        hi[d] = row[d]
    for k in range(1, n):
        row = X + points[k] * D
        for d in range(D):
            v = row[d]
            lo[d] = v if v < lo[d] else lo[d]
            hi[d] = v if v > hi[d] else hi[d]


cdef inline float64_t points_distance(const float64_t* X, intp_t D, const intp_t* points,
                                      intp_t n, const float64_t* x) noexcept nogil:
    """``box_distance`` from ``x`` to the box of ``points`` (rows of ``X``), the box built in
    blocks of ``BOX_BLOCK`` features on the stack: same terms, same order, same bits."""
    cdef float64_t lo[BOX_BLOCK]
    cdef float64_t hi[BOX_BLOCK]
    cdef const float64_t* row
    cdef intp_t start = 0, width, d, k
    cdef float64_t v, eta = 0.0
    if n == 0:
        return INFINITY
    while start < D:
        width = min(<intp_t>BOX_BLOCK, D - start)
        row = X + points[0] * D + start
        for d in range(width):
            lo[d] = row[d]
            hi[d] = row[d]
        for k in range(1, n):
            row = X + points[k] * D + start
            for d in range(width):
                v = row[d]
                lo[d] = v if v < lo[d] else lo[d]
                hi[d] = v if v > hi[d] else hi[d]
        for d in range(width):
            eta += side_gap(lo[d], hi[d], x[start + d])
        start += width
    return eta


cdef inline int check_points(MondrianTree tree) except -1:
    """Raise unless ``tree`` can rebuild the boxes (and, lean values, the statistics rows) it
    does not store: its points (and their contribution rows) attached."""
    if tree.box_min_samples > 0 and tree.points_rows < tree.n_samples_seen:
        raise ValueError(
            "this MondrianTree stores only the boxes of nodes holding at least "
            f"{tree.box_min_samples} points and rebuilds the others from its stored points, "
            f"but it has access to {tree.points_rows} of its {tree.n_samples_seen} points: "
            "attach its store with tree.attach_points(X) (a TreeEnsemble does it itself)"
        )
    if tree.lean_values and tree.box_min_samples > 0 and tree.value_stride > 0 and (
            tree.rows_rows < tree.n_samples_seen or tree.rows_stride != tree.value_stride):
        raise ValueError(
            "this MondrianTree stores the statistics rows of the nodes holding at least "
            f"{tree.box_min_samples} points only and rebuilds the others from the "
            "contribution rows of its stored points, which are not attached (or have another "
            "width): attach them with tree.attach_points(X, rows) (a TreeEnsemble does it "
            "itself)"
        )
    return 0


cdef inline const float64_t* stored_row(MondrianTree tree, intp_t node) noexcept nogil:
    """The stored statistics row of ``node``, or NULL when it is rebuilt from its points
    (lean values: only nodes with a stored box keep a row, at their box slot)."""
    cdef intp_t r = tree.box_slot[node] if tree.lean_values else node
    if r < 0:
        return NULL
    return tree.value + r * tree.value_stride


cdef inline void points_row(const float64_t* rows, intp_t S, const intp_t* points, intp_t n,
                            float64_t* out) noexcept nogil:
    """The sum of the contribution rows (width ``S``) of ``points`` into ``out``: a node's
    statistics row rebuilt from the points below it (exact for integer counts, whatever the
    order; zeros for no point)."""
    cdef const float64_t* row
    cdef intp_t k, c
    for c in range(S):
        out[c] = 0.0
    for k in range(n):
        row = rows + points[k] * S
        for c in range(S):
            out[c] += row[c]


cdef inline const float64_t* node_row(MondrianTree tree, intp_t node,
                                      float64_t* scratch) noexcept nogil:
    """The statistics row of ``node``: its stored one, or rebuilt into ``scratch``
    (``value_stride`` floats) from the attached rows of the points below it."""
    cdef intp_t points[BOX_POINTS_MAX]
    cdef intp_t n
    cdef const float64_t* row = stored_row(tree, node)
    if row != NULL:
        return row
    n = subtree_points(tree, node, points, BOX_POINTS_MAX)
    points_row(tree.rows_ptr, tree.value_stride, points, n, scratch)
    return scratch


cdef inline intp_t _partition(intp_t* idx, intp_t start, intp_t end, const float64_t* X,
                              intp_t n_features, intp_t feature,
                              float64_t threshold) noexcept nogil:
    """Move the points with ``x[feature] <= threshold`` to the front; return the boundary."""
    cdef intp_t i = start
    cdef intp_t j = end - 1
    cdef intp_t tmp
    while i <= j:
        if X[idx[i] * n_features + feature] <= threshold:
            i += 1
        else:
            tmp = idx[i]
            idx[i] = idx[j]
            idx[j] = tmp
            j -= 1
    return i


cdef inline float64_t _side_lengths(const float64_t* lo, const float64_t* hi, float64_t* sides,
                                    intp_t n_features) noexcept nogil:
    """Write the box's side lengths into ``sides``; return their sum (its linear dimension)."""
    cdef intp_t d
    cdef float64_t linear_dim = 0.0
    for d in range(n_features):
        sides[d] = hi[d] - lo[d]
        linear_dim += sides[d]
    return linear_dim


cdef inline intp_t _draw_cut(RandomState* rng, const float64_t* lo, const float64_t* hi,
                             const float64_t* sides, intp_t n_features, float64_t linear_dim,
                             float64_t* threshold) noexcept nogil:
    """Draw a cut of the box: its dimension in proportion to ``sides``, then a uniform
    location inside that side (written to ``threshold``); return the dimension."""
    cdef intp_t d = rng_weighted(rng, sides, n_features, linear_dim)
    threshold[0] = rng_uniform_open(rng, lo[d], hi[d])
    return d


cdef int _realloc(void** ptr, size_t count, size_t itemsize) except -1 nogil


cdef inline void _include(float64_t* lo, float64_t* hi, const float64_t* x,
                          intp_t n_features) noexcept nogil:
    """Grow the box ``[lo, hi]`` to contain ``x`` (branch-free, so the loop vectorises)."""
    cdef intp_t d
    cdef float64_t v
    for d in range(n_features):
        v = x[d]
        lo[d] = v if v < lo[d] else lo[d]
        hi[d] = v if v > hi[d] else hi[d]


cdef inline void _add_row(float64_t* value, const float64_t* row, intp_t width) noexcept nogil:
    """Add a contribution row to a node's statistics."""
    cdef intp_t k
    for k in range(width):
        value[k] += row[k]


cdef inline void reset_leaf(MondrianTree tree, intp_t node, intp_t n_samples) noexcept nogil:
    """Make ``node`` a fresh leaf holding ``n_samples`` points (its list is set later)."""
    cdef Node* nd = &tree.nodes[node]
    nd.n_node_samples = n_samples
    nd.left_child = TREE_LEAF
    nd.right_child = TREE_LEAF
    nd.feature = TREE_UNDEFINED
    nd.threshold = TREE_UNDEFINED
    nd.split_time = tree.lifetime
    nd.first_sample = TREE_LEAF
