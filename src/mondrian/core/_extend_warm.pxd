# Memory-level parallelism for the online extension: the paths of a mini-batch's points in one
# tree, requested from memory together before the extension reads them one after the other.
#
# The extension takes the batch down the tree depth first: at each node it waits for the
# node's record and box slot, then its stored box and statistics row, and at the bottom for
# the leaf lists and the stored points it rebuilds small boxes and paused leaves' rows from.
# Each address is known only once the previous load arrived, and in a large forest none of
# it stays in the cache from one call to the next, so a call is mostly those waits, one at a
# time. ``warm_batch`` walks the paths of the batch's points in lockstep, one step of each
# point in turn: the descent to the point's leaf in the tree as it is (each next node's record
# and slot, then the node's stored box and row once its slot arrived), then the leaf's list
# (its links, the points and their rows) when the leaf keeps no box. The waits of the points
# overlap and the extension then finds its data in the cache. It writes nothing and computes
# nothing the extension uses: every result is unchanged, bit for bit; only speed depends on it.
from mondrian.core._box_loops cimport MONDRIAN_TREE_PREFETCH, mf_prefetch_span
from mondrian.core._tree cimport TREE_LEAF, MondrianTree, Node
from mondrian.core._typedefs cimport float64_t, intp_t

cdef enum:
    # Points of a batch walked together (the first ones of a larger batch: their paths
    # cover the top of the tree; a walker is 24 bytes on the stack).
    WARM_BATCH_POINTS = 256
    # Points of a leaf list walked (a longer list is read in prefetched chunks anyway).
    WARM_LIST_STEPS = 32


cdef struct BatchWalker:
    intp_t at       # the node of the descent, or the stored point of the leaf list
    intp_t point    # the batch point (store index)
    intp_t steps    # -1 in the descent, else the leaf-list points visited


cdef inline void _warm_record(MondrianTree tree, intp_t node) noexcept nogil:
    """Hints for the record of ``node`` (48 bytes: it may span two lines) and its slot."""
    MONDRIAN_TREE_PREFETCH(&tree.nodes[node])
    MONDRIAN_TREE_PREFETCH(<const char*> &tree.nodes[node + 1] - 1)
    MONDRIAN_TREE_PREFETCH(&tree.box_slot[node])


cdef inline intp_t _warm_node(MondrianTree tree, BatchWalker* w, const float64_t* X,
                              const float64_t* rows) noexcept nogil:
    """One descent step of ``w`` at its node (record and slot hinted a step before): hints
    for the node's box and row, then the next node's record, or the leaf's list; returns the
    next place (-1: done)."""
    cdef intp_t D = tree.n_features, S = tree.value_stride, j = w.at
    cdef intp_t slot = tree.box_slot[j]
    cdef const Node* nd = &tree.nodes[j]
    cdef const float64_t* x
    if slot >= 0:
        mf_prefetch_span(tree.bounds + 2 * D * slot, 2 * D * <intp_t> sizeof(float64_t))
    if tree.lean_values:
        if slot >= 0:
            mf_prefetch_span(tree.value + S * slot, S * <intp_t> sizeof(float64_t))
    else:
        mf_prefetch_span(tree.value + S * j, S * <intp_t> sizeof(float64_t))
    if nd.left_child == TREE_LEAF:
        # A leaf with a stored box is never rebuilt; else its list and points are read.
        if slot >= 0 or nd.first_sample == TREE_LEAF:
            return -1
        w.steps = 0
        MONDRIAN_TREE_PREFETCH(&tree.sample_next[nd.first_sample])
        return nd.first_sample
    x = X + w.point * D
    j = nd.left_child if x[nd.feature] <= nd.threshold else nd.right_child
    _warm_record(tree, j)
    return j


cdef inline intp_t _warm_list(MondrianTree tree, BatchWalker* w, const float64_t* X,
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


cdef inline void warm_batch(MondrianTree tree, const intp_t* idx, intp_t n, const float64_t* X,
                            const float64_t* rows) noexcept nogil:
    """Walk the paths of the points ``idx[:n]`` (the first ``WARM_BATCH_POINTS``) in the
    tree ``tree`` (not empty) in lockstep (see the top of this file). Hints only."""
    cdef BatchWalker walkers[WARM_BATCH_POINTS]
    cdef intp_t m = min(n, <intp_t> WARM_BATCH_POINTS), active, live, k, at
    for k in range(m):
        walkers[k].at = 0
        walkers[k].point = idx[k]
        walkers[k].steps = -1
    _warm_record(tree, 0)
    active = m
    while active > 0:
        live = 0
        for k in range(active):
            if walkers[k].steps < 0:
                at = _warm_node(tree, &walkers[k], X, rows)
            else:
                at = _warm_list(tree, &walkers[k], X, rows)
            if at >= 0:
                walkers[live].at = at
                walkers[live].point = walkers[k].point
                walkers[live].steps = walkers[k].steps
                live += 1
        active = live
