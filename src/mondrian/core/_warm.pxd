# Memory-level parallelism for the one-row readers: the paths of one point in many trees,
# requested from memory together before the trees are read one by one.
#
# A one-row prediction walks each tree from the root to a leaf, and every step waits for the
# memory it reads (the nodes of a path, their statistics rows, the stored points below the
# frontier of stored boxes: scattered in memory, each address known only once the previous
# load arrived): on a large forest most of its time is those waits, one after the other.
# ``warm_paths`` walks all the trees in lockstep, one step of each in turn, asking the cache
# for what the readers will read: the descent to the leaf (each next node, the statistics
# rows of its children), the deepest stored box of the path, then the subtree below the
# path's first node without a stored box (its nodes, leaf lists, points and their rows,
# which the walks rebuild boxes and rows from). The waits of the trees overlap, and the
# readers that follow find their data in the cache. It writes nothing and computes nothing
# that the readers use, so their results are unchanged, bit for bit; only their speed
# depends on it.
from libc.stdint cimport int32_t

from mondrian.core._box_loops cimport MONDRIAN_TREE_PREFETCH, mf_prefetch_span
from mondrian.core._tree cimport TREE_LEAF, MondrianTree, Node
from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.core._walk cimport read_lifetime

cdef enum:
    # Trees walked together (more would evict the first paths before they are read).
    WARM_TREES = 16
    # Steps of a frontier subtree's traversal (it holds fewer than box_min_samples points:
    # a bound that only a corrupt tree would reach).
    WARM_SUBTREE_STEPS = 1024
    # Phases of a tree's warm-up.
    WARM_DESCENT = 0
    WARM_DOWN = 1       # to the leftmost leaf below ``node``
    WARM_SAMPLES = 2    # along the leaf list of ``node``, at ``sample``
    WARM_UP = 3         # to the next leaf of the subtree (or done at ``frontier``)
    WARM_DONE = 4


cdef struct WarmPath:
    const Node* nodes
    const int32_t* slot         # box slots (a lean tree's rows are at its nodes' box slots)
    const float64_t* value      # statistics rows
    const float64_t* bounds     # stored boxes (2 D floats at each box slot)
    const float64_t* points     # the stored points (D floats each), or NULL
    const float64_t* rows       # their statistics rows (stride floats each), or NULL
    const intp_t* sample_next   # leaf lists of stored points
    intp_t box_bytes            # 2 D floats
    intp_t point_bytes          # D floats
    intp_t row_bytes            # stride floats
    bint lean                   # rows at box slots, else at node ids
    float64_t lifetime          # the pruned tree's lifetime
    intp_t phase
    intp_t node                 # where the walk is
    intp_t parent               # the node of the previous descent step (-1 at the root)
    intp_t boxed                # deepest node of the path so far with a stored box (-1: none)
    intp_t frontier             # the first node of the path without a stored box (-1: none)
    intp_t sample               # WARM_SAMPLES: the next point of the leaf list
    intp_t steps                # steps of the frontier subtree's traversal so far


cdef inline void warm_tree(WarmPath* w, MondrianTree tree, float64_t lifetime) noexcept:
    """Set ``w`` for a walk of ``tree`` (not empty) read at ``lifetime``."""
    w.nodes = tree.nodes
    w.slot = tree.box_slot
    w.value = tree.value
    w.bounds = tree.bounds
    w.points = tree.points_ptr
    w.rows = tree.rows_ptr if tree.lean_values else NULL
    w.sample_next = tree.sample_next
    w.box_bytes = 2 * tree.n_features * sizeof(float64_t)
    w.point_bytes = tree.n_features * sizeof(float64_t)
    w.row_bytes = tree.value_stride * sizeof(float64_t)
    w.lean = tree.lean_values
    w.lifetime = lifetime
    w.phase = WARM_DESCENT
    w.node = 0
    w.parent = -1
    w.boxed = -1
    w.frontier = -1
    w.sample = -1
    w.steps = 0


cdef inline void _warm_row(const WarmPath* w, intp_t node) noexcept nogil:
    cdef intp_t r = w.slot[node] if w.lean else node
    if r >= 0:
        mf_prefetch_span(<const char*> w.value + r * w.row_bytes, w.row_bytes)


cdef inline void _descent_step(WarmPath* p, const float64_t* x) noexcept nogil:
    """One step of the descent to the leaf of ``x`` (then the subtree phase, or done)."""
    cdef intp_t j = p.node, lc, rc
    cdef const Node* nd
    if p.parent >= 0:  # the rows of the previous node's children (this one's sibling)
        nd = &p.nodes[p.parent]
        _warm_row(p, nd.left_child)
        _warm_row(p, nd.right_child)
    nd = &p.nodes[j]
    if p.slot[j] >= 0:
        p.boxed = j
    elif p.frontier < 0:
        p.frontier = j
    if nd.left_child == TREE_LEAF or nd.split_time >= p.lifetime:
        # The leaf-first walk reads the boxes from the leaf up: the deepest stored one
        # (those below it are rebuilt from the points of the frontier's subtree).
        if p.boxed >= 0:
            mf_prefetch_span(<const char*> p.bounds + p.slot[p.boxed] * p.box_bytes, p.box_bytes)
        if p.frontier >= 0 and p.points != NULL:
            p.node = p.frontier
            p.phase = WARM_DOWN
        else:
            p.phase = WARM_DONE
        return
    lc = nd.left_child
    rc = nd.right_child
    if p.lean:
        MONDRIAN_TREE_PREFETCH(&p.slot[lc])
        MONDRIAN_TREE_PREFETCH(&p.slot[rc])
    j = lc if x[nd.feature] <= nd.threshold else rc
    MONDRIAN_TREE_PREFETCH(&p.nodes[j])
    p.parent = p.node
    p.node = j


cdef inline void _subtree_step(WarmPath* p) noexcept nogil:
    """One step of the traversal of the frontier's subtree, in the order of
    ``subtree_points`` (leftmost leaf first, through the parent links): one node or one
    point per step, so that each step waits for at most one load."""
    cdef intp_t j = p.node, up
    p.steps += 1
    if p.steps > WARM_SUBTREE_STEPS:
        p.phase = WARM_DONE
    elif p.phase == WARM_DOWN:
        if p.nodes[j].left_child != TREE_LEAF:
            p.node = p.nodes[j].left_child
            MONDRIAN_TREE_PREFETCH(&p.nodes[p.node])
        else:
            p.sample = p.nodes[j].first_sample
            p.phase = WARM_SAMPLES
    elif p.phase == WARM_SAMPLES:
        if p.sample >= 0:
            mf_prefetch_span(<const char*> p.points + p.sample * p.point_bytes, p.point_bytes)
            if p.rows != NULL:
                mf_prefetch_span(<const char*> p.rows + p.sample * p.row_bytes, p.row_bytes)
            p.sample = p.sample_next[p.sample]
            if p.sample >= 0:
                MONDRIAN_TREE_PREFETCH(&p.sample_next[p.sample])
        else:
            p.phase = WARM_UP
    elif j == p.frontier:  # WARM_UP at the top: every leaf was visited
        p.phase = WARM_DONE
    else:
        up = p.nodes[j].parent
        if p.nodes[up].left_child == j:
            p.node = p.nodes[up].right_child
            MONDRIAN_TREE_PREFETCH(&p.nodes[p.node])
            p.phase = WARM_DOWN
        else:
            p.node = up


cdef inline void warm_paths(WarmPath* w, intp_t n_trees, const float64_t* x) noexcept nogil:
    """Walk every tree of ``w`` in lockstep (see the top of this file): the descent to the
    leaf of ``x``, then the frontier's subtree. Hints only: nothing is written but ``w``."""
    cdef intp_t active = n_trees, t
    cdef WarmPath* p
    while active > 0:
        active = 0
        for t in range(n_trees):
            p = &w[t]
            if p.phase == WARM_DESCENT:
                _descent_step(p, x)
            elif p.phase != WARM_DONE:
                _subtree_step(p)
            active += p.phase != WARM_DONE


cdef inline int warm_trees(list trees, const float64_t* x, object lifetime) except -1:
    """:func:`warm_paths` of ``x`` in ``trees`` (at most ``WARM_TREES``, none empty) read at
    ``lifetime`` (None: their own; raises what :func:`read_lifetime` raises)."""
    cdef WarmPath paths[WARM_TREES]
    cdef MondrianTree tree
    cdef intp_t t = 0
    for tree in trees:
        warm_tree(&paths[t], tree, read_lifetime(tree, lifetime))
        t += 1
    warm_paths(paths, t, x)
    return 0
