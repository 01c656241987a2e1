# The classifier's part of the grouped walks (forest/_hnsp.pyx, _predict_groups) over core's
# grouped walk (core/_group_walk.pxd: the rows' paths and etas, a group at a time): the
# requests for what the rows' walks read of the node tables, and the walk along a path found
# (hnsp_path_walk), its branch-off terms added at once; the classifier's p of the one-row
# walks (hnsp_step_p).
from libc.stdint cimport int32_t

from mondrian.core._batch_walk cimport BATCH_ETAS, BatchEtas
from mondrian.core._box_loops cimport MONDRIAN_TREE_PREFETCH, mf_prefetch_span
from mondrian.core._group_walk cimport GroupRows, group_etas
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.core._walk cimport WALK_DEPTH_MAX, WalkStep, is_leaf_at


cdef extern from "mondrian/forest/_hnsp_kernels.h":
    # The node tables' records (see the header): offsets in a record of K classes.
    intp_t MF_REC_CUST(intp_t K) noexcept nogil
    intp_t MF_REC_TAB(intp_t K) noexcept nogil
    intp_t MF_REC_G(intp_t K) noexcept nogil
    intp_t mf_record_floats(intp_t K) noexcept nogil
    void mf_row_terms(intp_t K, bint strict, intp_t n, const float64_t* weight,
                      const float64_t* d_bar, const float64_t* const* rec,
                      const float64_t* const* g_parent, float64_t survival,
                      const float64_t* g_leaf, float64_t* out) noexcept nogil
    float64_t mf_hnsp_p(float64_t eta, float64_t delta) noexcept nogil
    float64_t mf_hnsp_d_bar(float64_t eta, float64_t delta, float64_t gamma,
                            float64_t p) noexcept nogil
    void mf_hnsp_terms(intp_t n, float64_t gamma, const float64_t* eta,
                       const float64_t* delta, float64_t* p, float64_t* d_bar) noexcept nogil


cdef inline void hnsp_step_p(WalkStep* step) noexcept nogil:
    """``step.p`` and ``step.survival`` by the classifier's expm1 (``mf_hnsp_p``, that of
    :func:`hnsp_path_walk`'s lanes) instead of ``walk_next``'s glibc one, before the step is
    read (the next step's reach is this survival): the one-row walks' p (``_predict_row``,
    ``_tabled_walk`` from the root)."""
    if step.eta > 0.0 and step.delta > 0.0:
        step.p = mf_hnsp_p(step.eta, step.delta)
        step.survival = step.reach * (1.0 - step.p)


cdef inline void hnsp_prefetch_record(const float64_t* rec, const float64_t* up,
                                      intp_t K) noexcept nogil:
    """Request what a branch-off term reads of the record ``rec`` of a node with ``K``
    classes (its counts, customers and tables) and of its parent's record ``up`` (its
    posterior; unless NULL): a hint."""
    mf_prefetch_span(rec, (K + 2) * sizeof(float64_t))
    if up != NULL:
        mf_prefetch_span(up + MF_REC_G(K), K * sizeof(float64_t))


cdef inline void hnsp_group_etas(MondrianTree tree, const float64_t* X, intp_t x_step,
                                 const float64_t* boxes, const int32_t* slots,
                                 const float64_t* tables, GroupRows* group) noexcept nogil:
    """The etas of ``group``'s rows (``group_etas``), then a request for what their walks
    read of the node tables (hints: the next stage reads them): the leaf's posterior, and
    :func:`hnsp_prefetch_record` of each branch-off node."""
    cdef intp_t K = tree.n_columns, R = mf_record_floats(K), r, t
    cdef const intp_t* p
    group_etas(tree, X, x_step, boxes, slots, group)
    for r in range(group.rows):
        p = group.path + r * WALK_DEPTH_MAX
        if group.top[r] < 0:
            continue
        for t in range(group.top[r], group.length[r]):
            if group.etas[r * WALK_DEPTH_MAX + t] > 0.0:
                hnsp_prefetch_record(tables + p[t] * R,
                                     tables + p[t - 1] * R if t > 0 else NULL, K)
        mf_prefetch_span(tables + p[group.length[r] - 1] * R + MF_REC_G(K),
                         K * sizeof(float64_t))


cdef inline void hnsp_prefetch_slot(const BatchEtas* b, intp_t s, const float64_t* tables,
                                    intp_t K) noexcept nogil:
    """Request the records of ``tables`` (``K`` classes) that :func:`hnsp_path_walk` reads
    for slot ``s`` of the batch ``b`` (its nodes from its leaf up to ``top``: see
    :func:`hnsp_prefetch_record` of each node with eta > 0, and the leaf's posterior), a few
    rows before it walks (a hint). The parent of the node at ``top`` is not in the batch's
    arrays: its posterior is left to the walk."""
    cdef intp_t t = b.top[s], R = mf_record_floats(K), n, i
    cdef const intp_t* nodes = b.nodes + s * BATCH_ETAS
    cdef const float64_t* etas = b.etas + s * BATCH_ETAS
    if t < 0:
        return
    n = b.leaf_depth[s] - t  # (nodes[i] at depth leaf_depth - i, its parent nodes[i + 1])
    mf_prefetch_span(tables + nodes[0] * R + MF_REC_G(K), K * sizeof(float64_t))
    for i in range(n + 1):
        if etas[i] > 0.0:
            hnsp_prefetch_record(tables + nodes[i] * R,
                                 tables + nodes[i + 1] * R if i < n else NULL, K)


cdef inline void hnsp_prefetch_rows(const BatchEtas* b, intp_t k, intp_t n, intp_t ahead,
                                    const float64_t* tables, intp_t K) noexcept nogil:
    """Hints for a reader of the batch ``b`` (``n`` rows) taking its rows in their own order,
    at row ``k``: the records of row ``k + ahead`` (:func:`hnsp_prefetch_slot`), and the
    batch's entries of row ``k + 2 ahead``, which that request reads (their slots are
    scattered: the rows in leaf order)."""
    cdef intp_t s
    if k + 2 * ahead < n:
        s = b.slot[k + 2 * ahead]
        MONDRIAN_TREE_PREFETCH(b.top + s)
        MONDRIAN_TREE_PREFETCH(b.leaf_depth + s)
        MONDRIAN_TREE_PREFETCH(b.nodes + s * BATCH_ETAS)
        MONDRIAN_TREE_PREFETCH(b.etas + s * BATCH_ETAS)
    if k + ahead < n:
        hnsp_prefetch_slot(b, b.slot[k + ahead], tables, K)


cdef inline void hnsp_path_walk(MondrianTree tree, float64_t gamma, bint strict,
                                float64_t lifetime, const float64_t* tables,
                                const intp_t* path, const float64_t* etas, intp_t top,
                                float64_t* out) noexcept nogil:
    """The walk of ``_tabled_walk`` (forest/_hnsp.pyx) from depth ``top >= 0`` along the
    nodes of ``path`` (found by the descent: no cut read again), with the arithmetic of
    ``walk_start_path``, ``walk_next`` and ``_branch_off`` (the same quantities in the same
    order, the classifier's p and d_bar of ``mf_hnsp_p`` / ``mf_hnsp_d_bar``, so the same
    bits): every node above ``top`` has eta 0, so the walk starts there with reach 1.
    The nodes with eta > 0 and delta > 0 (the others have p = 0: survival = reach exactly)
    are listed first, their p and d_bar found at once in vector lanes (``mf_hnsp_terms``),
    then the reach is carried down them, the branch-off nodes queued and their terms, then
    the leaf's, added at once (``mf_row_terms``: the sums of before, in their order)."""
    cdef intp_t K = tree.n_columns, R = mf_record_floats(K), G = MF_REC_G(K), j, d = top
    cdef intp_t parent = tree.node_count, n = 0, m = 0, q
    # (j: the leaf once the path is listed)
    cdef float64_t tau_parent = 0.0, tau, delta, eta, survival, reach = 1.0
    cdef bint leaf
    cdef float64_t weight[WALK_DEPTH_MAX]
    cdef float64_t d_bar[WALK_DEPTH_MAX]
    cdef float64_t p[WALK_DEPTH_MAX]
    cdef float64_t rates[WALK_DEPTH_MAX]
    cdef float64_t deltas[WALK_DEPTH_MAX]
    cdef const float64_t* recs[WALK_DEPTH_MAX]
    cdef const float64_t* ups[WALK_DEPTH_MAX]
    if top > 0:
        parent = path[top - 1]
        tau_parent = tree.nodes[parent].split_time
    while True:
        j = path[d]
        leaf = is_leaf_at(tree, j, lifetime)
        tau = lifetime if leaf else tree.nodes[j].split_time
        delta = tau - tau_parent
        eta = etas[d]
        if eta > 0.0 and delta > 0.0:
            rates[m] = eta
            deltas[m] = delta
            recs[m] = tables + j * R
            ups[m] = tables + parent * R + G
            m += 1
        if leaf:
            break
        parent = j
        tau_parent = tau
        d += 1
    mf_hnsp_terms(m, gamma, rates, deltas, p, d_bar)
    for q in range(m):
        survival = reach * (1.0 - p[q])
        if p[q] > 0.0:
            # (_branch_off's weight; a node of weight 0 adds nothing; n <= q)
            weight[n] = reach * p[q]
            if weight[n] > 0.0:
                d_bar[n] = d_bar[q]
                recs[n] = recs[q]
                ups[n] = ups[q]
                n += 1
            if survival <= 0.0:
                mf_row_terms(K, strict, n, weight, d_bar, recs, ups, 0.0, NULL, out)
                return
        reach = survival
    mf_row_terms(K, strict, n, weight, d_bar, recs, ups, reach, tables + j * R + G, out)
