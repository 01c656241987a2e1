# The classifier's part of the grouped walks (forest/_hnsp.pyx, _predict_groups) over core's
# grouped walk (core/_group_walk.pxd: the rows' paths and etas, a group at a time): the
# requests for what the rows' walks read of the node tables, and the walk along a path found
# (hnsp_path_walk), its branch-off terms added at once; the classifier's p of the one-row
# walks (hnsp_step_p).
from libc.stdint cimport int32_t

from mondrian.core._box_loops cimport MONDRIAN_TREE_PREFETCH, mf_prefetch_span
from mondrian.core._group_walk cimport GroupRows, group_etas
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.core._walk cimport WALK_DEPTH_MAX, WalkStep, is_leaf_at


cdef extern from "mondrian/forest/_hnsp_kernels.h":
    void mf_row_terms(intp_t K, bint strict, intp_t n, const float64_t* weight,
                      const float64_t* d_bar, const float64_t* n_tab, const float64_t* n_cust,
                      const float64_t* const* counts, const float64_t* const* g_parent,
                      float64_t survival, const float64_t* g_leaf,
                      float64_t* out) noexcept nogil
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


cdef inline void hnsp_group_etas(MondrianTree tree, const float64_t* X, intp_t x_step,
                                 const float64_t* boxes, const int32_t* slots,
                                 const float64_t* counts, const float64_t* n_cust,
                                 const float64_t* n_tab, const float64_t* g,
                                 GroupRows* group) noexcept nogil:
    """The etas of ``group``'s rows (``group_etas``), then a request for what their walks
    read of the tables: the leaf's posterior, each branch-off node's counts, customers and
    tables, and its parent's posterior (hints: the next stage reads them)."""
    cdef intp_t K = tree.n_columns, r, j, t
    cdef const intp_t* p
    group_etas(tree, X, x_step, boxes, slots, group)
    for r in range(group.rows):
        p = group.path + r * WALK_DEPTH_MAX
        if group.top[r] < 0:
            continue
        mf_prefetch_span(g + p[group.length[r] - 1] * K, K * sizeof(float64_t))
        for t in range(max(group.top[r], 1), group.length[r]):
            if group.etas[r * WALK_DEPTH_MAX + t] > 0.0:
                j = p[t]
                mf_prefetch_span(counts + j * K, K * sizeof(float64_t))
                mf_prefetch_span(g + p[t - 1] * K, K * sizeof(float64_t))
                MONDRIAN_TREE_PREFETCH(n_cust + j)
                MONDRIAN_TREE_PREFETCH(n_tab + j)


cdef inline void hnsp_path_walk(MondrianTree tree, float64_t gamma, bint strict,
                                float64_t lifetime, const float64_t* counts,
                                const float64_t* n_cust, const float64_t* n_tab,
                                const float64_t* g, const intp_t* path, const float64_t* etas,
                                intp_t top, float64_t* out) noexcept nogil:
    """The walk of ``_tabled_walk`` (forest/_hnsp.pyx) from depth ``top >= 0`` along the
    nodes of ``path`` (found by the descent: no cut read again), with the arithmetic of
    ``walk_start_path``, ``walk_next`` and ``_branch_off`` (the same quantities in the same
    order, the classifier's p and d_bar of ``mf_hnsp_p`` / ``mf_hnsp_d_bar``, so the same
    bits): every node above ``top`` has eta 0, so the walk starts there with reach 1.
    The nodes with eta > 0 and delta > 0 (the others have p = 0: survival = reach exactly)
    are listed first, their p and d_bar found at once in vector lanes (``mf_hnsp_terms``),
    then the reach is carried down them, the branch-off nodes queued and their terms, then
    the leaf's, added at once (``mf_row_terms``: the sums of before, in their order)."""
    cdef intp_t K = tree.n_columns, j, d = top, parent = tree.node_count, n = 0, m = 0, q
    # (j: the leaf once the path is listed)
    cdef float64_t tau_parent = 0.0, tau, delta, eta, survival, reach = 1.0
    cdef bint leaf
    cdef float64_t weight[WALK_DEPTH_MAX]
    cdef float64_t d_bar[WALK_DEPTH_MAX]
    cdef float64_t p[WALK_DEPTH_MAX]
    cdef float64_t tabs[WALK_DEPTH_MAX]
    cdef float64_t custs[WALK_DEPTH_MAX]
    cdef float64_t rates[WALK_DEPTH_MAX]
    cdef float64_t deltas[WALK_DEPTH_MAX]
    cdef intp_t nodes[WALK_DEPTH_MAX]
    cdef intp_t ups[WALK_DEPTH_MAX]
    cdef const float64_t* rows[WALK_DEPTH_MAX]
    cdef const float64_t* parents[WALK_DEPTH_MAX]
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
            nodes[m] = j
            ups[m] = parent
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
                tabs[n] = n_tab[nodes[q]]
                custs[n] = n_cust[nodes[q]]
                rows[n] = counts + nodes[q] * K
                parents[n] = g + ups[q] * K
                n += 1
            if survival <= 0.0:
                mf_row_terms(K, strict, n, weight, d_bar, tabs, custs, rows, parents, 0.0,
                             NULL, out)
                return
        reach = survival
    mf_row_terms(K, strict, n, weight, d_bar, tabs, custs, rows, parents, reach, g + j * K,
                 out)
