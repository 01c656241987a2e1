# Memory-level parallelism for the online extension: the paths of a mini-batch's points in one
# tree, requested from memory together before the extension reads them one after the other.
#
# The extension takes the batch down the tree depth first: at each node it waits for the
# node's record and box slot, then its stored box and statistics row, and at the bottom for
# the leaf lists and the stored points it rebuilds small boxes and paused leaves' rows from.
# Each address is known only once the previous load arrived, and in a large forest none of
# it stays in the cache from one call to the next, so a call is mostly those waits, one at a
# time. ``warm_batch`` walks the batch's paths a level at a time, each node once however many
# of the batch's points pass it (the upper nodes are on every path: hinting them once per
# point cost more than their misses): at each node of a level its stored box and row are
# hinted (its slot arrived a level before), its points split by its cut, and the records
# and slots of the children they reach hinted for the next level; at a leaf keeping no box,
# its list (links, points, rows) is walked, the lists of the leaves reached one step each in
# turn. The waits of a level overlap and the extension then finds its data in the cache. It
# writes nothing (the split is of a copy of the batch) and computes nothing the extension
# uses: every result is unchanged, bit for bit; only speed depends on it.
from mondrian.core._box_loops cimport MONDRIAN_TREE_PREFETCH, mf_prefetch_span
from mondrian.core._tree cimport TREE_LEAF, MondrianTree, Node, _partition
from mondrian.core._typedefs cimport float64_t, intp_t

cdef enum:
    # Points of a batch walked (the first ones of a larger batch: their paths cover the top
    # of the tree); the walk keeps about 80 bytes a point on the stack.
    WARM_BATCH_POINTS = 256
    # Points of a leaf list walked (a longer list is read in prefetched chunks anyway).
    WARM_LIST_STEPS = 32


cdef struct WarmGroup:
    intp_t node     # a node of the batch's paths at the current level (record, slot hinted)
    intp_t start    # its points: [start, end) of the walk's copy of the batch
    intp_t end


cdef struct ListWalker:
    intp_t at       # the stored point of the leaf list reached
    intp_t steps    # the points of the list visited


cdef inline void _warm_record(MondrianTree tree, intp_t node) noexcept nogil:
    """Hints for the record of ``node`` (48 bytes: it may span two lines) and its slot."""
    MONDRIAN_TREE_PREFETCH(&tree.nodes[node])
    MONDRIAN_TREE_PREFETCH(<const char*> &tree.nodes[node + 1] - 1)
    MONDRIAN_TREE_PREFETCH(&tree.box_slot[node])


cdef inline void _warm_data(MondrianTree tree, intp_t j) noexcept nogil:
    """Hints for the stored box and statistics row of node ``j`` (its slot arrived)."""
    cdef intp_t D = tree.n_features, S = tree.value_stride, slot = tree.box_slot[j]
    if slot >= 0:
        mf_prefetch_span(tree.bounds + 2 * D * slot, 2 * D * <intp_t> sizeof(float64_t))
    if tree.lean_values:
        if slot >= 0:
            mf_prefetch_span(tree.value + S * slot, S * <intp_t> sizeof(float64_t))
    else:
        mf_prefetch_span(tree.value + S * j, S * <intp_t> sizeof(float64_t))


cdef inline intp_t _warm_list(MondrianTree tree, ListWalker* w, const float64_t* X,
                              const float64_t* rows) noexcept nogil:
    """One step of ``w`` along a leaf list, at the stored point ``w.at`` (its link hinted a
    step before): hints for the point and its row, then the next link; the next point or -1."""
    cdef intp_t D = tree.n_features, S = tree.value_stride, i = w.at
    mf_prefetch_span(X + D * i, D * <intp_t> sizeof(float64_t))
    if rows != NULL and tree.lean_values:
        mf_prefetch_span(rows + S * i, S * <intp_t> sizeof(float64_t))
    i = tree.sample_next[i]
    w.steps += 1
    if i == TREE_LEAF or w.steps >= WARM_LIST_STEPS:
        return -1
    MONDRIAN_TREE_PREFETCH(&tree.sample_next[i])
    return i


cdef inline intp_t _warm_split(MondrianTree tree, const WarmGroup* group, intp_t* points,
                               const float64_t* X, WarmGroup* out) noexcept nogil:
    """Split the points of ``group`` (an internal node) by its cut, the left ones first, and
    write the children they reach to ``out``, their records hinted; returns their number."""
    cdef const Node* nd = &tree.nodes[group.node]
    cdef intp_t a = _partition(points, group.start, group.end, X, tree.n_features,
                               nd.feature, nd.threshold), n = 0
    if a > group.start:
        out[n].node = nd.left_child
        out[n].start = group.start
        out[n].end = a
        _warm_record(tree, nd.left_child)
        n += 1
    if a < group.end:
        out[n].node = nd.right_child
        out[n].start = a
        out[n].end = group.end
        _warm_record(tree, nd.right_child)
        n += 1
    return n


cdef inline void _warm_path(MondrianTree tree, intp_t point, const float64_t* X,
                            const float64_t* rows) noexcept nogil:
    """``warm_batch`` of one point (a row's update): its path, then its leaf's list."""
    cdef const float64_t* x = X + point * tree.n_features
    cdef ListWalker walker
    cdef intp_t j = 0
    _warm_record(tree, 0)
    while True:
        _warm_data(tree, j)
        if tree.nodes[j].left_child == TREE_LEAF:
            break
        if x[tree.nodes[j].feature] <= tree.nodes[j].threshold:
            j = tree.nodes[j].left_child
        else:
            j = tree.nodes[j].right_child
        _warm_record(tree, j)
    if tree.box_slot[j] >= 0 or tree.nodes[j].first_sample == TREE_LEAF:
        return
    walker.at = tree.nodes[j].first_sample
    walker.steps = 0
    MONDRIAN_TREE_PREFETCH(&tree.sample_next[walker.at])
    while walker.at >= 0:
        walker.at = _warm_list(tree, &walker, X, rows)


cdef inline void warm_batch(MondrianTree tree, const intp_t* idx, intp_t n, const float64_t* X,
                            const float64_t* rows) noexcept nogil:
    """Walk the paths of the points ``idx[:n]`` (the first ``WARM_BATCH_POINTS``) in the
    tree ``tree`` (not empty) a level at a time, each node once (see the top of this file;
    ``idx`` is not changed; one point walks its path alone). Hints only."""
    cdef intp_t points[WARM_BATCH_POINTS]
    cdef WarmGroup groups[2][WARM_BATCH_POINTS]  # (a level's nodes hold distinct points)
    cdef ListWalker lists[WARM_BATCH_POINTS]  # (a leaf per point at most)
    cdef intp_t m = min(n, <intp_t> WARM_BATCH_POINTS), level = 0, n_level = 1, n_next
    cdef intp_t n_lists = 0, live, k, g, j, at
    if m == 1:
        _warm_path(tree, idx[0], X, rows)
        return
    for k in range(m):
        points[k] = idx[k]
    groups[0][0].node = 0
    groups[0][0].start = 0
    groups[0][0].end = m
    _warm_record(tree, 0)
    while n_level > 0 or n_lists > 0:
        n_next = 0
        for g in range(n_level):
            j = groups[level][g].node
            _warm_data(tree, j)
            if tree.nodes[j].left_child != TREE_LEAF:
                n_next += _warm_split(tree, &groups[level][g], points, X,
                                      &groups[1 - level][n_next])
            elif tree.box_slot[j] < 0 and tree.nodes[j].first_sample != TREE_LEAF:
                # (a leaf with a stored box is never rebuilt: its list is not read)
                lists[n_lists].at = tree.nodes[j].first_sample
                lists[n_lists].steps = 0
                MONDRIAN_TREE_PREFETCH(&tree.sample_next[lists[n_lists].at])
                n_lists += 1
        live = 0
        for k in range(n_lists):
            at = _warm_list(tree, &lists[k], X, rows)
            if at >= 0:
                lists[live].at = at
                lists[live].steps = lists[k].steps
                live += 1
        n_lists = live
        level = 1 - level
        n_level = n_next
