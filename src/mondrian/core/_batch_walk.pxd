# Node-major eta pass of prediction (_batch_walk.pyx): the leaf-first etas of ``walk_etas``
# (_walk.pxd) for a batch of rows at once, each box built and read once per batch.
from libc.stdint cimport uint16_t, uint32_t

from mondrian.core._box_loops cimport MONDRIAN_TREE_PREFETCH
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.core._walk cimport WALK_DEPTH_MAX, walk_etas


cdef enum:
    # Rows per batch (every row of most calls: a batch rebuilds the lean boxes it needs, so
    # each batch more rebuilds them again; 16384 rows hold 6 MB of etas and nodes), and etas
    # kept per row (a row needing more, from its leaf up, is left to walk_etas: the
    # node-major pass does not measure its path's nodes).
    BATCH_ROWS = 16384
    BATCH_ETAS = 32
    # Features from which a reader takes the rows in their own order rather than in leaf
    # order: a wide row read at scattered features costs a cache miss per path node, and in
    # row order the rows stream (usps, 256 features: 5% slower in leaf order).
    BATCH_LEAF_ORDER_MAX_FEATURES = 128
    # Features from which batch_etas marks each row's dims outside (usps, 256 features: a
    # row is outside its leaf's box on 73 dims on average, an ancestor's on 26, so the
    # ancestors' distances sum a tenth of the terms; satimage's 36 gained nothing).
    MASK_MIN_FEATURES = 128


cdef struct BatchEtas:
    # What one batch of rows found in one tree (``batch_etas``), and the scratch to find it.
    # Each row has a slot: the rows in the order they reached their leaves (``order[s]`` is
    # the row of slot s), so that a reader taking the slots in order meets the rows of one
    # path one after another (its nodes and tables in cache) and reads these arrays
    # sequentially. Slot s reached the leaf ``leaf[s]`` at depth ``leaf_depth[s]``; ``top[s]``
    # is the depth of the shallowest eta computed (every node above has eta == 0), -1 when
    # its path is deeper than WALK_DEPTH_MAX (walked the plain way), -2 when it needs more
    # than BATCH_ETAS (walk_etas); the eta at depth t is ``etas[s BATCH_ETAS + leaf_depth[s]
    # - t]``, at the node ``nodes[s BATCH_ETAS + leaf_depth[s] - t]`` (the path, without
    # chasing the parent links: scattered nodes, one dependent load after another).
    intp_t* top
    intp_t* leaf
    intp_t* leaf_depth
    float64_t* etas
    intp_t* nodes
    intp_t* order          # the row of each slot
    intp_t* slot           # the slot of each row
    intp_t n_order         # slots given so far
    intp_t* idx            # the batch's rows, partitioned down the tree
    float64_t* dist        # one distance per row of a node
    float64_t* boxes       # two boxes (2 D each) per depth: a lean node's children's
    size_t top_size, leaf_size, leaf_depth_size, etas_size, idx_size, dist_size, boxes_size
    size_t order_size, slot_size, nodes_size
    # When ``masked`` (batch_etas from MASK_MIN_FEATURES features): the dims each row lies
    # outside of at the last box it was measured against (row i's bits at ``outside + i
    # ceil(D / 32)``): an enclosing box's distance sums those gaps only (``_box_kernels.h``:
    # mf_rows_eta_masked).
    bint masked
    uint32_t* outside
    size_t outside_size


cdef int batch_etas(BatchEtas* b, MondrianTree tree, const float64_t* X, intp_t n,
                    intp_t x_step, float64_t lifetime) except -1 nogil
cdef struct BoxSource:
    # Every node's box, for batch_etas_boxes: ``boxes`` (node_count rows of 2 D floats), or
    # when it is NULL ``codes`` (node_count rows of 2 D codes of ``code_size`` bytes, 1 or
    # 2), the bound ``e`` of a box being ``values[starts[e] + code]`` (the prediction cache's
    # ``BoxCoder``: the same doubles, so the same distances; a feature's bounds share a
    # table, ``starts[D + d] == starts[d]``).
    const float64_t* boxes
    const void* codes
    intp_t code_size
    const float64_t* values
    const intp_t* starts
    # With codes, the ranks of the batch's rows among the values (row r's 2 D at ranks +
    # 2 r D: ``_node_cache.row_ranks``), or NULL: a row's distance then reads the values of
    # the bounds it lies outside of only (the others' gaps are 0), else every box is decoded.
    const uint16_t* ranks


cdef int batch_etas_boxes(BatchEtas* b, MondrianTree tree, const float64_t* X, intp_t n,
                          intp_t x_step, float64_t lifetime,
                          const BoxSource* source) except -1 nogil
cdef void batch_free(BatchEtas* b) noexcept nogil


cdef inline intp_t batch_row(const BatchEtas* b, MondrianTree tree, intp_t r,
                             const float64_t* x, float64_t lifetime, float64_t* box,
                             intp_t* path, float64_t* etas, bint whole_path) noexcept nogil:
    """What ``walk_etas`` gives slot ``r`` of the batch (its row's point ``x``): its etas at
    depths from the returned ``top`` to its leaf in ``etas`` and its path's nodes from depth
    ``top - 1`` (from the root if ``whole_path``) in ``path`` (both indexed by depth,
    ``WALK_DEPTH_MAX`` long); -1: walk it the plain way. A row the batch left aside runs
    ``walk_etas`` (``box``: 2 D floats of scratch)."""
    cdef intp_t t = b.top[r], d, j, leaf_depth = b.leaf_depth[r]
    cdef const float64_t* e = b.etas + r * BATCH_ETAS
    cdef const intp_t* nodes = b.nodes + r * BATCH_ETAS
    # The slots a few rows on (readers take them in order; their first etas and nodes,
    # from the leaf up, lead their rows of BATCH_ETAS): a hint, no effect on values.
    if r + 4 < b.n_order:
        MONDRIAN_TREE_PREFETCH(e + 4 * BATCH_ETAS)
        MONDRIAN_TREE_PREFETCH(nodes + 4 * BATCH_ETAS)
    if t == -2:
        return t if walk_etas(tree, x, lifetime, NULL, box, path, etas, &t) > 0 else -1
    if t < 0:
        return -1
    for d in range(t, leaf_depth + 1):
        path[d] = nodes[leaf_depth - d]
        etas[d] = e[leaf_depth - d]
        # The walk down from top reads these nodes one after another, each address found in
        # the one before: asked for now, their loads overlap (a hint, no effect on values).
        MONDRIAN_TREE_PREFETCH(&tree.nodes[path[d]])
    j = path[t]
    d = t
    while d > 0 and (whole_path or d == t):
        j = tree.nodes[j].parent
        d -= 1
        path[d] = j
    return t


cdef inline intp_t batch_next(const BatchEtas* b, intp_t k, bint leaf_order,
                              intp_t* slot) noexcept nogil:
    """The ``k``-th row a reader of the batch takes (returned) and its slot (``slot[0]``): the
    rows in leaf order (slot ``k``) when ``leaf_order``, else in their own order."""
    if leaf_order:
        slot[0] = k
        return b.order[k]
    slot[0] = b.slot[k]
    return k
