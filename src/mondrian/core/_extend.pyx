"""Online extension of a Mondrian tree with a mini-batch of stored points (sections 2 and 3).

A builder in the sense of scikit-learn's trees: it writes a :class:`~mondrian.core._tree.
MondrianTree` through the storage primitives the tree declares, and logs every write to a
node that existed before through the tree's undo log. The points go down from the root on an
explicit stack; at each node either a new parent is inserted above it (a cut outside its box,
born before its own cut), or the node absorbs them and passes them to its children. Paused
leaves absorb points and regrow (``mondrian.core._grow``) once their pause rule stops holding.

The entry points (``MondrianTree.extend`` and ``extend_trees``, so ``fit`` too) run the builder
the tree names (``tree.builder``): ``extend_tree`` below for a ``MondrianTree``; a subclass
sets its own in ``__cinit__`` (the density's full-cell trees), so the core calls it without
importing it.
"""

from libc.math cimport INFINITY, log
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy

import numpy as np

from mondrian.core._box_loops cimport (
    MONDRIAN_TREE_PREFETCH,
    mf_add_rows,
    mf_extent,
    mf_include,
    mf_join,
    mf_prefetch_span,
    mf_rows_box,
    mf_rows_grow,
)
from mondrian.core._extend_warm cimport warm_batch
from mondrian.core._grow cimport grow_tree, should_pause, start_stack
from mondrian.core._rebuild cimport leaf_box, rebuild_row
from mondrian.core._undo cimport undo_fence, undo_log_node
from mondrian.core._random cimport rng_uniform, rng_uniform_open, rng_weighted
from mondrian.core._tree cimport (
    TREE_LEAF,
    MondrianTree,
    Node,
    StackRecord,
    _add_row,
    _partition,
    _realloc,
    node_paused,
    stored_row,
)


cdef enum:
    # Points of a small node included in its partial box at once (between two bounds).
    SMALL_CHUNK = 64
    # Batches from this many points log with streaming stores (UndoLog.stream): their logs
    # (about 1,000 entries a tree for 150 points in a large tree) outgrow the caches.
    STREAM_BATCH = 16


cdef struct PointCursor:
    # The stored points below ``node`` in subtree_points' order (left subtree first), one
    # at a time: the leaf being read and the next point of its list.
    intp_t node
    intp_t leaf
    intp_t sample


cdef struct NearLeaf:
    # The leaf that the stored point ``point`` reaches from the last node that looked for it
    # in this extension call: the same from every node below on its path (the extension
    # changes no node below the one it handles), so a batch's first point is sent down once.
    intp_t point
    intp_t leaf


cdef struct Clock:
    # The exponential clock E = -log(u) of a cut above a node: u is drawn at every node (the
    # random stream stays that of the law), the logarithm taken only when the batch sticks out
    # of the node's box (at most nodes high in the tree it does not).
    float64_t u
    float64_t e  # -1 until taken


cdef inline float64_t _exp(Clock* clock) noexcept nogil:
    if clock.e < 0.0:
        clock.e = -log(clock.u)
    return clock.e


cdef inline int _build(MondrianTree tree, intp_t* idx, intp_t n, const float64_t* X,
                       const float64_t* rows) except -1 nogil:
    """Run the tree's builder on ``idx[:n]`` (``n > 0``), its leaf-list room made first."""
    tree._ensure_indices(idx, n)
    return tree.builder(tree, idx, n, X, rows)


cdef int extend_checked(MondrianTree tree, const float64_t[:, ::1] X,
                        const float64_t[:, ::1] rows, const intp_t[::1] indices) except -1:
    """``MondrianTree.extend``: check the store and indices, attach the store, and extend
    ``tree`` (with its builder: ``tree.builder``) with a copy of ``indices`` (the builders
    partition it in place)."""
    tree._store_checks(X, rows, indices)
    cdef intp_t n = indices.shape[0]
    if n == 0:
        return 0
    cdef intp_t[::1] work = np.array(indices, dtype=np.intp, copy=True)
    cdef const float64_t* rows_ptr = NULL
    if tree.value_stride > 0:
        rows_ptr = &rows[0, 0]
    tree._attach(X.base, &X[0, 0], X.shape[0])
    tree._attach_rows(rows.base, rows_ptr, rows.shape[0], rows.shape[1])
    with nogil:
        _build(tree, &work[0], n, &X[0, 0], rows_ptr)
    return 0


cdef int extend_tree_list(list trees, const float64_t[:, ::1] X, const float64_t[:, ::1] rows,
                          const intp_t[::1] indices) except -1:
    """``extend_trees``: every tree of ``trees`` extended with the points ``indices``."""
    cdef MondrianTree tree
    cdef intp_t n = indices.shape[0], k
    cdef intp_t one[1]  # one point (the online path): no array to allocate
    cdef intp_t[::1] work_array
    cdef intp_t* work = one
    cdef const float64_t* rows_ptr = NULL
    if n == 0 or not trees:
        return 0
    if n > 1:
        work_array = np.empty(n, dtype=np.intp)
        work = &work_array[0]
    (<MondrianTree>trees[0])._store_checks(X, rows, indices)
    for tree in trees:
        if tree.n_features != X.shape[1] or tree.value_stride != rows.shape[1]:
            raise ValueError("the trees do not match the store")
    if rows.shape[1] > 0:
        rows_ptr = &rows[0, 0]
    owner = X.base  # (each .base makes an object: once per call, not per tree)
    rows_owner = rows.base
    for tree in trees:
        tree._attach(owner, &X[0, 0], X.shape[0])
        tree._attach_rows(rows_owner, rows_ptr, rows.shape[0], rows.shape[1])
        for k in range(n):
            work[k] = indices[k]
        with nogil:
            _build(tree, work, n, &X[0, 0], rows_ptr)
    return 0


cdef int extend_tree(MondrianTree tree, intp_t* idx, intp_t n, const float64_t* X,
                     const float64_t* rows) except -1 nogil:
    """Extend ``tree`` with the points ``idx[:n]`` (mini-batch version of section 2): the
    builder of every ``MondrianTree`` (a ``Builder``, see ``_tree.pxd``).

    The result has the law of a tree sampled on all points at once (projectivity); paused
    leaves absorb points and regrow from their stored points when they un-pause (section 3).
    """
    if tree.node_count == 0:
        return grow_tree(tree, tree._new_node(), idx, 0, n, 0.0, X, rows)
    if not tree.undo.on or n < STREAM_BATCH:
        return _extend_batch(tree, idx, n, X, rows)
    tree.undo.stream = True
    try:
        return _extend_batch(tree, idx, n, X, rows)
    finally:
        undo_fence(&tree.undo)


cdef int _extend_batch(MondrianTree tree, intp_t* idx, intp_t n, const float64_t* X,
                       const float64_t* rows) except -1 nogil:
    """:func:`extend_tree` on a tree that is not empty."""
    cdef intp_t top = 1
    cdef StackRecord rec
    cdef NearLeaf near
    cdef Clock clock
    near.point = -1
    near.leaf = 0

    # The batch's paths asked for from memory together (hints only: see _extend_warm.pxd).
    warm_batch(tree, idx, n, X, rows)
    start_stack(&tree.extend_stack, &tree.extend_stack_capacity, 0, 0, n, 0.0)

    while top > 0:
        top -= 1
        rec = tree.extend_stack[top]
        tree.extend_work += 1
        # The node's box and row are read first by the log or the extent below, the next
        # record's once this node's subtree is done: their cache lines are asked for now.
        _prefetch_node(tree, rec.node)
        if top > 0:
            _prefetch_node(tree, tree.extend_stack[top - 1].node)
        # Its children's records and slots too: the batch goes on down to one of them next,
        # once this node is done (descend hints them again as it pushes them, too late for
        # the first one popped).
        _prefetch_children(tree, rec.node)
        # Every write below to a node that existed goes through the log: its struct and row
        # here, its stored box only before a write to it (most boxes take the batch as they
        # are: _log_box).
        if node_paused(&tree.nodes[rec.node]):
            _log_shape(tree, rec.node)
            _extend_paused(tree, &rec, idx, X, rows)
        else:
            # (the draw and the batch box need no node data: done while its lines arrive)
            clock.u = rng_uniform(&tree.rng)
            clock.e = -1.0
            _batch_box(tree, &rec, idx, X)
            _log_shape(tree, rec.node)
            top = _extend_node(tree, top, &rec, idx, X, rows, &near, &clock)
    return 0


cdef inline void _prefetch_children(MondrianTree tree, intp_t node) noexcept nogil:
    """Cache hints for the records and box slots of the children of ``node``, if any."""
    cdef intp_t child = tree.nodes[node].left_child
    if child == TREE_LEAF:
        return
    MONDRIAN_TREE_PREFETCH(&tree.nodes[child])
    MONDRIAN_TREE_PREFETCH(<const char*>&tree.nodes[child + 1] - 1)  # (may span two lines)
    MONDRIAN_TREE_PREFETCH(&tree.box_slot[child])
    child = tree.nodes[node].right_child
    MONDRIAN_TREE_PREFETCH(&tree.nodes[child])
    MONDRIAN_TREE_PREFETCH(<const char*>&tree.nodes[child + 1] - 1)
    MONDRIAN_TREE_PREFETCH(&tree.box_slot[child])


cdef inline void _prefetch_node(MondrianTree tree, intp_t node) noexcept nogil:
    """Cache hints for the stored box and statistics row of ``node`` (no effect on any
    value; its record and slot were hinted when it was pushed)."""
    cdef intp_t D = tree.n_features, S = tree.value_stride, slot = tree.box_slot[node]
    cdef const float64_t* row = stored_row(tree, node)
    if slot >= 0:
        mf_prefetch_span(tree.bounds + 2 * D * slot, 2 * D * sizeof(float64_t))
    if row != NULL:
        mf_prefetch_span(row, S * sizeof(float64_t))


cdef inline int _log_shape(MondrianTree tree, intp_t node) except -1 nogil:
    """``tree._log_node`` without the node's stored box."""
    if tree.undo.on and node < tree.undo.node_count:
        return undo_log_node(tree, node, False)
    return 0


cdef inline int _log_box(MondrianTree tree, intp_t node, const float64_t* bmin,
                         const float64_t* bmax) except -1 nogil:
    """Log node ``node`` with its stored box (see :func:`_log_shape`) unless that box holds
    the batch box ``[bmin, bmax]`` already (then joining it writes the same bits), or
    ``bmin`` is NULL (always)."""
    cdef intp_t D = tree.n_features, d, slot = tree.box_slot[node]
    cdef const float64_t* lo
    if not tree.undo.on or node >= tree.undo.node_count or slot < 0:
        return 0
    if bmin != NULL:
        lo = tree.bounds + 2 * D * slot
        for d in range(D):
            if bmin[d] < lo[d] or bmax[d] > lo[D + d]:
                break
        else:
            return 0
    return undo_log_node(tree, node, True)


cdef int _extend_paused(MondrianTree tree, const StackRecord* rec, intp_t* idx,
                        const float64_t* X, const float64_t* rows) except -1 nogil:
    """The paused leaf ``rec.node`` absorbs the points ``idx[rec.start:rec.end]`` (never a cut
    above a paused leaf), and regrows if the pause rule stops holding."""
    cdef intp_t D = tree.n_features, S = tree.value_stride
    cdef intp_t j = rec.node, k, i, d
    cdef float64_t* node_scratch = tree.scratch + 5 * D
    cdef float64_t* val = tree.value + S * j
    cdef float64_t* lo
    cdef float64_t* hi
    cdef float64_t linear_dim
    cdef bint had_box, keeps_box
    _log_box(tree, j, NULL, NULL)  # (its box grows, or the leaf regrows)
    for k in range(rec.start, rec.end):
        i = idx[k]
        if not tree.lean_values:
            _add_row(val, rows + i * S, S)
        tree._log_sample(i)
        tree.sample_next[i] = tree.nodes[j].first_sample
        tree.nodes[j].first_sample = i
    tree.nodes[j].n_node_samples += rec.end - rec.start
    # Its box with the new points: a stored one grows, else it is rebuilt from the leaf's
    # list (a slot is given if the leaf now holds enough points). A leaf keeping no box
    # needs it only to regrow: not while the rule pauses it.
    had_box = tree.box_slot[j] >= 0
    lo = tree._box_target(j, tree.nodes[j].n_node_samples, node_scratch)
    hi = lo + D
    keeps_box = had_box or lo != node_scratch
    if had_box:
        for k in range(rec.start, rec.end):
            mf_include(lo, hi, X + idx[k] * D, D)
    elif keeps_box:
        leaf_box(tree, j, X, lo)
        tree.extend_work += tree.nodes[j].n_node_samples
    if tree.lean_values:
        # Its statistics row likewise: a stored one grows, else it is summed from the
        # leaf's list (into its new slot, or the scratch row for the rule).
        val = tree._value_target(j, tree.row_scratch)
        if had_box:
            if S > 0:
                mf_add_rows(val, rows, S, idx + rec.start, rec.end - rec.start)
        else:
            rebuild_row(tree, j, rows, val)
    if not keeps_box:
        if should_pause(tree, j, val):
            return 0
        leaf_box(tree, j, X, lo)
        tree.extend_work += tree.nodes[j].n_node_samples
    linear_dim = 0.0
    for d in range(D):
        linear_dim += hi[d] - lo[d]
    if linear_dim > 0.0 and not should_pause(tree, j, val):
        _regrow_leaf(tree, j, rec.tau_parent, X, rows)
    return 0


cdef int _regrow_leaf(MondrianTree tree, intp_t j, float64_t tau_parent, const float64_t* X,
                      const float64_t* rows) except -1 nogil:
    """Grow the leaf ``j`` (no longer paused) afresh on every point of its list."""
    cdef intp_t count = tree.nodes[j].n_node_samples, k, i
    cdef intp_t* leaf_points = <intp_t*> realloc(NULL, count * sizeof(intp_t))
    if leaf_points == NULL:
        with gil:
            raise MemoryError()
    i = tree.nodes[j].first_sample
    for k in range(count):
        leaf_points[k] = i
        i = tree.sample_next[i]
    try:
        grow_tree(tree, j, leaf_points, 0, count, tau_parent, X, rows)
    finally:
        free(leaf_points)
    return 0


cdef void _batch_box(MondrianTree tree, const StackRecord* rec, const intp_t* idx,
                     const float64_t* X) noexcept nogil:
    """The box of the batch ``idx[rec.start:rec.end]`` into the scratch rows ``bmin`` and
    ``bmax`` (``tree.scratch`` and ``tree.scratch + D``; vectorised, the bits of a box grown
    point by point in that order)."""
    mf_rows_box(X, tree.n_features, idx + rec.start, rec.end - rec.start, tree.scratch)


cdef inline float64_t _extent(const float64_t* box, const float64_t* bmin,
                              const float64_t* bmax, float64_t* extent,
                              intp_t D) noexcept nogil:
    """The extent of the batch box ``[bmin, bmax]`` outside ``box`` per feature into
    ``extent``, and an upper bound of its sum by :func:`_sum` (0 exactly when that is 0).

    The bound sums in four lanes (vectorised) and widens the result by more than the
    rounding of either order can move a sum of ``D`` non-negative terms (``mf_extent``
    of ``_box_loops.h``, branch-free)."""
    return mf_extent(box, bmin, bmax, extent, D) * (1.0 + (4 * D + 8) * 1.1102230246251565e-16)


cdef inline float64_t _sum(const float64_t* extent, intp_t D) noexcept nogil:
    """The rate of a cut above the node: the extents summed in feature order."""
    cdef intp_t d
    cdef float64_t total = 0.0
    for d in range(D):
        total += extent[d]
    return total


cdef inline void _cursor_start(MondrianTree tree, PointCursor* c, intp_t node) noexcept nogil:
    cdef intp_t j = node
    while tree.nodes[j].left_child != TREE_LEAF:
        j = tree.nodes[j].left_child
    c.node = node
    c.leaf = j
    c.sample = tree.nodes[j].first_sample


cdef inline intp_t _cursor_next(MondrianTree tree, PointCursor* c) noexcept nogil:
    """The next stored point below ``c.node``, or -1 once every one was given."""
    cdef intp_t i, j, up
    while c.sample == TREE_LEAF:
        # Up to the first ancestor entered from its left child, then down its right subtree.
        j = c.leaf
        while True:
            if j == c.node:
                return -1
            up = tree.nodes[j].parent
            if tree.nodes[up].left_child == j:
                j = tree.nodes[up].right_child
                break
            j = up
        while tree.nodes[j].left_child != TREE_LEAF:
            j = tree.nodes[j].left_child
        c.leaf = j
        c.sample = tree.nodes[j].first_sample
    i = c.sample
    c.sample = tree.sample_next[i]
    return i


cdef inline intp_t _next_small_point(MondrianTree tree, PointCursor* cursor, bint* in_leaf,
                                     intp_t i, intp_t node) noexcept nogil:
    """The point after ``i`` in :func:`_small_node_time`'s order: the rest of the near leaf's
    list, then every point below ``node`` (the leaf's again: its min/max hold); -1 at the
    end."""
    if in_leaf[0]:
        i = tree.sample_next[i]
        if i != TREE_LEAF:
            return i
        in_leaf[0] = False
        _cursor_start(tree, cursor, node)
    return _cursor_next(tree, cursor)


cdef float64_t _small_node_time(MondrianTree tree, const StackRecord* rec, const intp_t* idx,
                                const float64_t* X, Clock* clock, NearLeaf* near,
                                float64_t* total) noexcept nogil:
    """The birth time ``rec.tau_parent + E / total`` of a cut above the node ``rec.node``,
    which keeps no box before or after the batch, or +inf when the node surely absorbs it.

    The node's box is grown from its stored points (into ``node_scratch``): first those of
    the leaf where the batch's first point lands (the nearest, on the path the batch takes
    next), then all of them. After each of the first 8 points, then 16, 32, ..., the extent
    of the batch outside that partial box bounds the true extent from above (a sub-box, and
    every rounded operation is monotone), so once the time it gives reaches the node's own
    cut the true time does too, and the other points are never read. Otherwise every point
    is read: the box is the node's (every feature written; minima and maxima do not depend
    on the order of reading, but for the sign of a zero bound, which changes no extent and
    no cut), ``extent`` and ``total`` the exact extent, bit for bit that of the box rebuilt
    at once."""
    cdef intp_t D = tree.n_features, d, i, m = 1, check = 1, j = rec.node, g
    cdef intp_t chunk[SMALL_CHUNK]
    cdef float64_t* bmin = tree.scratch
    cdef float64_t* bmax = tree.scratch + D
    cdef float64_t* extent = tree.scratch + 2 * D
    cdef float64_t* lo = tree.scratch + 5 * D
    cdef float64_t* hi = lo + D
    cdef float64_t split_time = tree.nodes[j].split_time, bound
    cdef const float64_t* x = X + idx[rec.start] * D
    cdef const float64_t* row
    cdef PointCursor cursor
    cdef bint in_leaf = True
    if near.point == idx[rec.start]:
        j = near.leaf  # (a leaf, or the new parent put in its place: then down from it)
    while tree.nodes[j].left_child != TREE_LEAF:  # the batch's first point to a leaf
        if x[tree.nodes[j].feature] <= tree.nodes[j].threshold:
            j = tree.nodes[j].left_child
        else:
            j = tree.nodes[j].right_child
    near.point = idx[rec.start]
    near.leaf = j
    i = tree.nodes[j].first_sample
    if i == TREE_LEAF:  # (only an emptied leaf: start from the whole subtree)
        in_leaf = False
        _cursor_start(tree, &cursor, rec.node)
        i = _cursor_next(tree, &cursor)
        if i < 0:  # no stored point: the empty box (points_box's)
            for d in range(D):
                lo[d] = INFINITY
                hi[d] = -INFINITY
            _extent(lo, bmin, bmax, extent, D)
            total[0] = _sum(extent, D)
            return rec.tau_parent + _exp(clock) / total[0]
    row = X + i * D
    memcpy(lo, row, D * sizeof(float64_t))
    memcpy(hi, row, D * sizeof(float64_t))
    while True:  # (m points in the box)
        if m == check:
            bound = _extent(lo, bmin, bmax, extent, D)
            if bound == 0.0 or not rec.tau_parent + _exp(clock) / bound < split_time:
                tree.extend_work += m
                return INFINITY
            # (a point read costs more than a bound: every one at first, then doubling, so
            # a node that reads all its points pays a bounded share for the bounds)
            check = check + 1 if check < 8 else 2 * check
        # The points up to the next bound, included together (points_box's tie rule: the
        # bits of one at a time; wide loops on wide rows).
        g = 0
        while g < SMALL_CHUNK and m + g < check:
            i = _next_small_point(tree, &cursor, &in_leaf, i, rec.node)
            if i < 0:
                break
            chunk[g] = i
            g += 1
        if g == 0:
            break
        mf_rows_grow(X, D, chunk, g, lo)
        m += g
    tree.extend_work += m
    _extent(lo, bmin, bmax, extent, D)
    total[0] = _sum(extent, D)
    return rec.tau_parent + _exp(clock) / total[0]


cdef intp_t _extend_node(MondrianTree tree, intp_t top, const StackRecord* rec, intp_t* idx,
                         const float64_t* X, const float64_t* rows, NearLeaf* near,
                         Clock* clock) except -1 nogil:
    """Extend the subtree of the unpaused node ``rec.node`` with the batch
    ``idx[rec.start:rec.end]`` (its box in the scratch by :func:`_batch_box`): insert a new
    parent above it or let it absorb the batch; returns the new size of the extension stack.

    The cut above the node is born at ``rec.tau_parent + E / total`` (``E`` exponential,
    ``total`` the batch's extent outside the node's box, no cut when it is 0). ``E`` (``clock``)
    is drawn by the caller at every node, ``total`` 0 or not (the same law: an unused draw is
    independent of the rest), so that a node keeping no box can decide from a part of its points
    (:func:`_small_node_time`) without knowing whether ``total`` is 0, and draws what the
    same node with a stored box draws (lean and full trees keep the same bits)."""
    cdef intp_t D = tree.n_features, j = rec.node
    cdef float64_t total = 0.0, t
    cdef float64_t* node_scratch = tree.scratch + 5 * D
    cdef const float64_t* box = node_scratch
    if tree.box_slot[j] < 0 and (tree.nodes[j].n_node_samples + rec.end - rec.start
                                 < tree.box_min_samples):
        t = _small_node_time(tree, rec, idx, X, clock, near, &total)
    else:
        if tree.box_slot[j] < 0:
            tree.extend_work += tree.nodes[j].n_node_samples  # rebuilt from them
        box = tree._node_box(j, X, node_scratch)
        t = _extent(box, tree.scratch, tree.scratch + D, tree.scratch + 2 * D, D)
        if t == 0.0 or not rec.tau_parent + _exp(clock) / t < tree.nodes[j].split_time:
            t = INFINITY  # (the bound decides: the true time is no earlier)
        else:
            total = _sum(tree.scratch + 2 * D, D)
            t = rec.tau_parent + _exp(clock) / total
    if t < tree.nodes[j].split_time:
        return _insert_parent(tree, top, rec, idx, X, rows, box, total, t)
    return _absorb(tree, top, rec, idx, X, rows)


cdef intp_t _insert_parent(MondrianTree tree, intp_t top, const StackRecord* rec, intp_t* idx,
                           const float64_t* X, const float64_t* rows, const float64_t* box,
                           float64_t total, float64_t t) except -1 nogil:
    """A cut outside the box ``box`` of node ``j = rec.node``, born at ``t`` before the
    node's own cut: insert a new parent. Node j keeps its id and becomes that parent; its
    old content moves to a copy, so no ancestor link changes. The far side of the cut grows
    a new subtree; the near side goes on down the copy. Returns the new stack size."""
    cdef intp_t D = tree.n_features, j = rec.node
    cdef float64_t* bmin = tree.scratch
    cdef float64_t* bmax = tree.scratch + D
    cdef float64_t* extent = tree.scratch + 2 * D
    cdef intp_t cut_dim, mid, near_start, near_end, far_start, far_end, copy, fresh
    cdef float64_t below, threshold
    cdef bint lower
    cut_dim = rng_weighted(&tree.rng, extent, D, total)
    below = box[cut_dim] - bmin[cut_dim] if bmin[cut_dim] < box[cut_dim] else 0.0
    lower = rng_uniform(&tree.rng) * extent[cut_dim] < below
    if lower:
        threshold = rng_uniform_open(&tree.rng, bmin[cut_dim], box[cut_dim])
        mid = _partition(idx, rec.start, rec.end, X, D, cut_dim, threshold)
        far_start, far_end, near_start, near_end = rec.start, mid, mid, rec.end
    else:
        threshold = rng_uniform_open(&tree.rng, box[D + cut_dim], bmax[cut_dim])
        mid = _partition(idx, rec.start, rec.end, X, D, cut_dim, threshold)
        near_start, near_end, far_start, far_end = rec.start, mid, mid, rec.end
    _log_box(tree, j, NULL, NULL)  # (with every box stored, j keeps its slot and writes it)
    copy = tree._new_node()  # (may move every buffer: box is not read again)
    fresh = tree._new_node()
    _move_to_copy(tree, rec, idx, rows, copy)
    tree.nodes[j].feature = cut_dim  # (never a paused leaf: those absorb points)
    tree.nodes[j].threshold = threshold
    tree.nodes[j].split_time = t
    tree.nodes[j].first_sample = TREE_LEAF
    if lower:
        tree.nodes[j].left_child = fresh
        tree.nodes[j].right_child = copy
    else:
        tree.nodes[j].left_child = copy
        tree.nodes[j].right_child = fresh
    tree.nodes[fresh].parent = j
    grow_tree(tree, fresh, idx, far_start, far_end, t, X, rows)
    if near_end > near_start:
        tree.extend_stack[top].node = copy
        tree.extend_stack[top].start = near_start
        tree.extend_stack[top].end = near_end
        tree.extend_stack[top].tau_parent = t
        top += 1
    return top


cdef int _move_to_copy(MondrianTree tree, const StackRecord* rec, const intp_t* idx,
                       const float64_t* rows, intp_t copy) except -1 nogil:
    """Move the content of node ``j = rec.node`` (struct, box, statistics, children's parent
    links) to the new node ``copy``, and give j the box and statistics of the copy joined
    with the batch ``idx[rec.start:rec.end]`` (its cut is written by the caller)."""
    cdef intp_t D = tree.n_features, S = tree.value_stride, j = rec.node, child
    cdef intp_t new_count = tree.nodes[j].n_node_samples + rec.end - rec.start
    cdef float64_t* node_scratch = tree.scratch + 5 * D
    cdef float64_t* lo
    cdef float64_t* val
    memcpy(&tree.nodes[copy], &tree.nodes[j], sizeof(Node))
    if S > 0 and (not tree.lean_values or tree.box_min_samples == 0):
        # (lean values with every box stored: rows by slot == node id)
        memcpy(tree.value + S * copy, tree.value + S * j, S * sizeof(float64_t))
    if tree.box_min_samples == 0:
        # Every node has its own slot: the copy gets the old box.
        memcpy(tree.bounds + 2 * D * tree.box_slot[copy],
               tree.bounds + 2 * D * tree.box_slot[j], 2 * D * sizeof(float64_t))
        lo = tree.bounds + 2 * D * tree.box_slot[j]
    else:
        # The copy takes the old box's slot (none for a small node: its box was rebuilt in
        # node_scratch); j gets a slot of its own if it holds enough.
        tree.box_slot[copy] = tree.box_slot[j]
        tree.box_slot[j] = -1
        lo = tree._box_target(j, new_count, node_scratch)
        if lo != node_scratch:
            memcpy(lo, node_scratch if tree.box_slot[copy] < 0
                   else tree.bounds + 2 * D * tree.box_slot[copy],
                   2 * D * sizeof(float64_t))
    tree.nodes[copy].parent = j
    child = tree.nodes[copy].left_child
    if child != TREE_LEAF:
        _log_shape(tree, child)  # (parent links only)
        _log_shape(tree, tree.nodes[copy].right_child)
        tree.nodes[child].parent = copy
        tree.nodes[tree.nodes[copy].right_child].parent = copy
    if tree.lean_values:
        # The copy took j's row with its slot; j's row, if j now stores one, is the copy's
        # (rebuilt from its points, once its children are relinked) plus the batch.
        val = tree._value_target(j, NULL)
        if val != NULL and tree.box_min_samples > 0 and S > 0:
            if tree.box_slot[copy] >= 0:
                memcpy(val, tree.value + S * tree.box_slot[copy], S * sizeof(float64_t))
            else:
                rebuild_row(tree, copy, rows, val)
    else:
        val = tree.value + S * j
    _join_batch(tree, rec, idx, rows, lo, val, new_count)
    return 0


cdef intp_t _absorb(MondrianTree tree, intp_t top, const StackRecord* rec, intp_t* idx,
                    const float64_t* X, const float64_t* rows) except -1 nogil:
    """No new parent: node ``j = rec.node`` absorbs the batch, which then goes down to its
    children (pushed on the stack) or, for a leaf whose lifetime expired, joins its list.
    Returns the new stack size."""
    cdef intp_t D = tree.n_features, S = tree.value_stride, j = rec.node, mid
    cdef intp_t new_count = tree.nodes[j].n_node_samples + rec.end - rec.start
    cdef float64_t* node_scratch = tree.scratch + 5 * D
    cdef float64_t* lo
    cdef float64_t* val
    # Its box grows where it is stored (or gets a slot, from the rebuilt one, if the node
    # now holds enough points); a small node's rebuilt box is just dropped.
    cdef bint had_box = tree.box_slot[j] >= 0
    if had_box:
        _log_box(tree, j, tree.scratch, tree.scratch + D)
    lo = tree._box_target(j, new_count, node_scratch)
    if not had_box and lo != node_scratch:
        memcpy(lo, node_scratch, 2 * D * sizeof(float64_t))
    # Its statistics row likewise (lean values: a new slot's row summed from the node's
    # points before the batch joins them; no row for a small node).
    val = tree._value_target(j, NULL)
    if tree.lean_values and val != NULL and not had_box and S > 0:
        rebuild_row(tree, j, rows, val)
    _join_batch(tree, rec, idx, rows, lo, val, new_count)
    if tree.nodes[j].left_child == TREE_LEAF:
        # A leaf whose lifetime expired: it keeps the points and stays a leaf.
        prepend_to_leaf(tree, j, idx, rec.start, rec.end)
        return top
    mid = _partition(idx, rec.start, rec.end, X, D, tree.nodes[j].feature,
                     tree.nodes[j].threshold)
    return descend(tree, top, j, rec.start, mid, rec.end)


cdef int prepend_to_leaf(MondrianTree tree, intp_t node, const intp_t* idx, intp_t start,
                         intp_t end) except -1 nogil:
    """Put the points ``idx[start:end]`` in front of the list of leaf ``node``, one by one
    (the last one first); its ``n_node_samples`` is left to the caller."""
    cdef intp_t k, i
    for k in range(start, end):
        i = idx[k]
        tree._log_sample(i)
        tree.sample_next[i] = tree.nodes[node].first_sample
        tree.nodes[node].first_sample = i
    return 0


cdef intp_t descend(MondrianTree tree, intp_t top, intp_t node, intp_t start, intp_t mid,
                    intp_t end) except -1 nogil:
    """Push the children of the internal ``node`` that receive points (``[start, mid)``
    go left, ``[mid, end)`` right) on the extension stack; returns its new size."""
    cdef Node* nd = &tree.nodes[node]
    MONDRIAN_TREE_PREFETCH(&tree.nodes[nd.left_child])
    MONDRIAN_TREE_PREFETCH(&tree.nodes[nd.right_child])
    MONDRIAN_TREE_PREFETCH(&tree.box_slot[nd.left_child])
    MONDRIAN_TREE_PREFETCH(&tree.box_slot[nd.right_child])
    if top + 2 > tree.extend_stack_capacity:
        _realloc(<void**>&tree.extend_stack, max(8, 2 * (top + 2)), sizeof(StackRecord))
        tree.extend_stack_capacity = max(8, 2 * (top + 2))
    if mid < end:
        tree.extend_stack[top].node = nd.right_child
        tree.extend_stack[top].start = mid
        tree.extend_stack[top].end = end
        tree.extend_stack[top].tau_parent = nd.split_time
        top += 1
    if mid > start:
        tree.extend_stack[top].node = nd.left_child
        tree.extend_stack[top].start = start
        tree.extend_stack[top].end = mid
        tree.extend_stack[top].tau_parent = nd.split_time
        top += 1
    return top


cdef inline void _join_batch(MondrianTree tree, const StackRecord* rec, const intp_t* idx,
                             const float64_t* rows, float64_t* lo, float64_t* val,
                             intp_t new_count) noexcept nogil:
    """The batch ``idx[rec.start:rec.end]`` joins node ``rec.node``: its box ``lo`` (lower
    row, upper at ``lo + D``) grows to the batch's box (``bmin``, ``bmax`` in the scratch),
    the batch's rows are added to its statistics row ``val`` (none if NULL), and it holds
    ``new_count`` points."""
    cdef intp_t D = tree.n_features, S = tree.value_stride
    if lo != tree.scratch + 5 * D:  # (a box in node_scratch is not kept: no need)
        mf_join(lo, lo + D, tree.scratch, tree.scratch + D, D)  # (bmin, bmax)
    if val != NULL and S > 0:
        mf_add_rows(val, rows, S, idx + rec.start, rec.end - rec.start)
    tree.nodes[rec.node].n_node_samples = new_count
