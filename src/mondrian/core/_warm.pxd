# Memory-level parallelism for the one-row readers: the paths of one point in many trees,
# requested from memory together before the trees are read one by one.
#
# A one-row prediction walks each tree from the root to a leaf, and every step waits for the
# node it reads (the nodes of a path are scattered in memory): on a large forest most of its
# time is those waits, one after the other. ``warm_paths`` descends all the trees in
# lockstep, one step of each in turn, reading only the cuts and asking the cache for each
# tree's next node and for the statistics rows of its children (what the walk reads at each
# node): the waits of the trees overlap, and the readers that follow find their paths in the
# cache. It writes nothing and computes nothing that the readers use, so their results are
# unchanged, bit for bit; only their speed depends on it.
from libc.stdint cimport int32_t

from mondrian.core._tree cimport TREE_LEAF, MondrianTree, Node
from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.core._walk cimport read_lifetime

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define MONDRIAN_WARM(p) __builtin_prefetch(p)
    #else
    #define MONDRIAN_WARM(p) ((void)0)
    #endif
    """
    void MONDRIAN_WARM(const void* p) noexcept nogil


cdef enum:
    # Trees descended together (more would evict the first paths before they are read).
    WARM_TREES = 16


cdef struct WarmPath:
    const Node* nodes
    const int32_t* slot         # box slots (a lean tree's rows are at its nodes' box slots)
    const float64_t* value      # statistics rows
    const float64_t* bounds     # stored boxes (2 D floats at each box slot)
    intp_t box_bytes            # 2 D floats
    intp_t boxed                # deepest node of the path so far with a stored box (-1: none)
    intp_t stride               # value_stride
    bint lean                   # rows at box slots, else at node ids
    float64_t lifetime          # the pruned tree's lifetime
    const float64_t* points     # the stored points (n_features floats each)
    const float64_t* rows       # their statistics rows (stride floats each)
    const intp_t* sample_next   # leaf lists of stored points
    intp_t point_bytes          # n_features floats
    intp_t sample               # at the leaf: the next of its points to request (-1: done)
    intp_t node                 # where the descent is (-1: at the leaf)
    intp_t parent               # the node of the previous step (-1 at the root)


cdef inline void warm_tree(WarmPath* w, MondrianTree tree, float64_t lifetime) noexcept:
    """Set ``w`` for a descent of ``tree`` read at ``lifetime``."""
    w.nodes = tree.nodes
    w.slot = tree.box_slot
    w.value = tree.value
    w.bounds = tree.bounds
    w.box_bytes = 2 * tree.n_features * sizeof(float64_t)
    w.boxed = -1
    w.points = tree.points_ptr
    w.rows = tree.rows_ptr
    w.sample_next = tree.sample_next
    w.point_bytes = tree.n_features * sizeof(float64_t)
    w.sample = -1
    w.stride = tree.value_stride
    w.lean = tree.lean_values
    w.lifetime = lifetime
    w.node = 0 if tree.node_count > 0 else -1
    w.parent = -1


cdef inline void _warm_bytes(const void* start, intp_t n_bytes) noexcept nogil:
    cdef intp_t offset
    for offset in range(0, n_bytes, 64):
        MONDRIAN_WARM(<const char*> start + offset)


cdef inline void _warm_row(const WarmPath* w, intp_t node) noexcept nogil:
    cdef intp_t r = w.slot[node] if w.lean else node
    if r >= 0:
        _warm_bytes(w.value + r * w.stride, w.stride * <intp_t> sizeof(float64_t))


cdef inline void warm_paths(WarmPath* w, intp_t n_trees, const float64_t* x) noexcept nogil:
    """Descend every tree of ``w`` to the leaf of ``x`` in lockstep, prefetching each next
    node, the box slots of its children and (one step later, once those have arrived) their
    statistics rows. Hints only: nothing is written but ``w``'s positions."""
    cdef intp_t active = n_trees, t, j, lc, rc
    cdef const Node* nd
    cdef WarmPath* p
    while active > 0:
        for t in range(n_trees):
            p = &w[t]
            j = p.node
            if j < 0:
                if p.sample >= 0:  # the leaf's points, one per round (a chain of loads)
                    _warm_bytes(p.points + p.sample * (p.point_bytes // 8), p.point_bytes)
                    if p.rows != NULL:
                        _warm_bytes(p.rows + p.sample * p.stride, p.stride * 8)
                    p.sample = p.sample_next[p.sample]
                    if p.sample >= 0:
                        MONDRIAN_WARM(&p.sample_next[p.sample])
                    else:
                        active -= 1
                continue
            if p.parent >= 0:  # the rows of the previous node's children (this one's sibling)
                nd = &p.nodes[p.parent]
                _warm_row(p, nd.left_child)
                _warm_row(p, nd.right_child)
            nd = &p.nodes[j]
            if p.slot[j] >= 0:
                p.boxed = j
            if nd.left_child == TREE_LEAF or nd.split_time >= p.lifetime:
                # The leaf-first walk reads the boxes from the leaf up: the deepest stored
                # one (the others below it are rebuilt from their points).
                if p.boxed >= 0:
                    _warm_bytes(p.bounds + p.slot[p.boxed] * (p.box_bytes // 8), p.box_bytes)
                p.node = -1
                if p.slot[j] < 0 and p.points != NULL and nd.left_child == TREE_LEAF:
                    p.sample = nd.first_sample
                if p.sample >= 0:
                    MONDRIAN_WARM(&p.sample_next[p.sample])
                else:
                    active -= 1
                continue
            lc = nd.left_child
            rc = nd.right_child
            if p.lean:
                MONDRIAN_WARM(&p.slot[lc])
                MONDRIAN_WARM(&p.slot[rc])
            j = lc if x[nd.feature] <= nd.threshold else rc
            MONDRIAN_WARM(&p.nodes[j])
            p.parent = p.node
            p.node = j


cdef inline int warm_trees(list trees, const float64_t* x, object lifetime) except -1:
    """:func:`warm_paths` of ``x`` in ``trees`` (at most ``WARM_TREES``) read at ``lifetime``
    (None: their own; raises what :func:`read_lifetime` raises)."""
    cdef WarmPath paths[WARM_TREES]
    cdef MondrianTree tree
    cdef intp_t t = 0
    for tree in trees:
        warm_tree(&paths[t], tree, read_lifetime(tree, lifetime))
        t += 1
    warm_paths(paths, t, x)
    return 0
