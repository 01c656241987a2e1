# The classifier's part of the grouped walks (forest/_hnsp.pyx, _predict_groups) over core's
# grouped walk (core/_group_walk.pxd: the rows' paths and etas, a group at a time): the
# requests for what the rows' walks read of the node tables, and the walk along a path found
# (hnsp_path_walk), its branch-off terms added at once.
from libc.math cimport INFINITY, expm1
from libc.stdint cimport int32_t

from mondrian.core._box_loops cimport MONDRIAN_TREE_PREFETCH, mf_prefetch_span
from mondrian.core._group_walk cimport GroupRows, group_etas
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.core._walk cimport WALK_DEPTH_MAX, is_leaf_at


cdef extern from "mondrian/forest/_hnsp_kernels.h":
    void mf_row_terms(intp_t K, bint strict, intp_t n, const float64_t* weight,
                      const float64_t* d_bar, const float64_t* n_tab, const float64_t* n_cust,
                      const float64_t* const* counts, const float64_t* const* g_parent,
                      float64_t survival, const float64_t* g_leaf,
                      float64_t* out) noexcept nogil


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
    order, so the same bits): every node above ``top`` has eta 0, so the walk starts there
    with reach 1.
    The branch-off nodes are queued and their terms, then the leaf's, added at once
    (``mf_row_terms``: the sums of before, in their order)."""
    cdef intp_t K = tree.n_columns, j, d = top, parent = tree.node_count, n = 0
    cdef float64_t tau_parent = 0.0, tau, delta, eta, p, survival, reach = 1.0
    cdef bint leaf
    cdef float64_t weight[WALK_DEPTH_MAX]
    cdef float64_t d_bar[WALK_DEPTH_MAX]
    cdef float64_t tabs[WALK_DEPTH_MAX]
    cdef float64_t custs[WALK_DEPTH_MAX]
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
        p = 0.0
        if eta > 0.0 and delta > 0.0:
            p = 1.0 if delta == INFINITY else -expm1(-eta * delta)
        survival = reach * (1.0 - p)
        if p > 0.0:
            # (_branch_off's d_bar and weight; a node of weight 0 adds nothing)
            if delta == INFINITY:
                d_bar[n] = eta / (eta + gamma)
            else:
                d_bar[n] = eta / (eta + gamma) * expm1(-(eta + gamma) * delta) / -p
            weight[n] = reach * p
            if weight[n] > 0.0:
                tabs[n] = n_tab[j]
                custs[n] = n_cust[j]
                rows[n] = counts + j * K
                parents[n] = g + parent * K
                n += 1
            if survival <= 0.0:
                mf_row_terms(K, strict, n, weight, d_bar, tabs, custs, rows, parents, 0.0,
                             NULL, out)
                return
        if leaf:
            mf_row_terms(K, strict, n, weight, d_bar, tabs, custs, rows, parents, survival,
                         g + j * K, out)
            return
        parent = j
        tau_parent = tau
        reach = survival
        d += 1
