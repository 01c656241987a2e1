# The classifier's grouped walks (forest/_hnsp.pyx, _predict_groups): ``group_etas`` of
# core/_batch_walk.pxd in stages over groups of rows, the rows' box distances measured side
# by side (forest/_hnsp_group.h), for rows of few features whose every box is at hand; and
# the walk along a path found (hnsp_path_walk), its branch-off terms added at once.
from libc.math cimport INFINITY, expm1
from libc.stdint cimport int32_t

from mondrian.core._box_loops cimport MONDRIAN_TREE_PREFETCH, mf_prefetch_span
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.core._walk cimport WALK_DEPTH_MAX, is_leaf_at


cdef extern from "mondrian/forest/_hnsp_kernels.h":
    void mf_row_terms(intp_t K, bint strict, intp_t n, const float64_t* weight,
                      const float64_t* d_bar, const float64_t* n_tab, const float64_t* n_cust,
                      const float64_t* const* counts, const float64_t* const* g_parent,
                      float64_t survival, const float64_t* g_leaf,
                      float64_t* out) noexcept nogil


cdef extern from "mondrian/forest/_hnsp_group.h":
    void mf_group_distances(intp_t n, intp_t D, const float64_t* const* boxes,
                            const float64_t* const* xs, float64_t* out) noexcept nogil


cdef enum:
    # Rows walked side by side (more descents' node loads in flight, more distance chains),
    # and the boxes of a path requested when its row reaches its leaf (a row measures about
    # 3 from the leaf up on letter and pendigits).
    HNSP_GROUP_ROWS = 16
    HNSP_BOXES_AHEAD = 3


cdef struct GroupRows:
    # One group's rows (``rows`` of them from row ``start``): their paths (``length``
    # nodes; 0 when deeper than WALK_DEPTH_MAX), then their etas from ``top`` (-1: walk it
    # the plain way), as ``group_etas`` gives them.
    intp_t start
    intp_t rows
    intp_t length[HNSP_GROUP_ROWS]
    intp_t top[HNSP_GROUP_ROWS]
    intp_t path[HNSP_GROUP_ROWS * WALK_DEPTH_MAX]
    float64_t etas[HNSP_GROUP_ROWS * WALK_DEPTH_MAX]


cdef inline const float64_t* _box_of(const float64_t* boxes, const int32_t* slots, intp_t D,
                                     intp_t node) noexcept nogil:
    """Node ``node``'s box among ``boxes`` (at row ``slots[node]``, or ``node``)."""
    return boxes + 2 * D * (slots[node] if slots != NULL else node)


cdef inline void hnsp_group_descend(MondrianTree tree, const float64_t* X, intp_t x_step,
                                    intp_t start, intp_t rows, float64_t lifetime,
                                    const float64_t* boxes, const int32_t* slots,
                                    GroupRows* group) noexcept nogil:
    """The paths of ``rows`` rows of ``X`` from row ``start`` (the descents of
    ``group_etas``, a step of every row at a time) into ``group``; the boxes of the last
    ``HNSP_BOXES_AHEAD`` nodes of each path are requested as its row reaches its leaf (hints:
    the next stage measures them)."""
    cdef intp_t D = tree.n_features, r, a, i, j, n_live = rows, kept
    cdef intp_t node[HNSP_GROUP_ROWS]
    cdef intp_t live[HNSP_GROUP_ROWS]
    cdef intp_t* length = group.length
    cdef intp_t* path
    X = X + start * x_step
    group.start = start
    group.rows = rows
    for r in range(rows):
        length[r] = 0
        node[r] = 0
        live[r] = r
    # A step of every row still descending, those that reach their leaf (or the depth
    # walk_etas records) leaving the list: the paths of group_etas.
    while n_live > 0:
        kept = 0
        for a in range(n_live):
            r = live[a]
            if length[r] == WALK_DEPTH_MAX:
                length[r] = 0
                continue
            j = node[r]
            path = group.path + r * WALK_DEPTH_MAX
            path[length[r]] = j
            length[r] += 1
            if is_leaf_at(tree, j, lifetime):
                for i in range(max(length[r] - <intp_t>HNSP_BOXES_AHEAD, 0), length[r]):
                    mf_prefetch_span(_box_of(boxes, slots, D, path[i]), 2 * D * sizeof(float64_t))
                continue
            # (child_toward as an index, not a branch: see group_etas)
            node[r] = (&tree.nodes[j].left_child)[
                <int>(not (X[r * x_step + tree.nodes[j].feature] <= tree.nodes[j].threshold))]
            live[kept] = r
            kept += 1
        n_live = kept


cdef inline void hnsp_group_etas(MondrianTree tree, const float64_t* X, intp_t x_step,
                                 float64_t lifetime, const float64_t* boxes,
                                 const int32_t* slots, const float64_t* counts,
                                 const float64_t* n_cust, const float64_t* n_tab,
                                 const float64_t* g, GroupRows* group) noexcept nogil:
    """The etas of ``group``'s rows from their leaves up, a node of every row at a time, the
    rows' distances by ``mf_group_distances`` (each row's sum in its own order: the bits of
    ``box_distance``), each row stopping at its first eta of 0 or at the root, as
    ``group_etas``; then a request for what their walks read of the tables: the leaf's
    posterior, each branch-off node's counts, customers and tables, and its parent's
    posterior (hints: the next stage reads them)."""
    cdef intp_t D = tree.n_features, K = tree.n_columns, r, a, i, j, t, n_live = 0, kept
    cdef intp_t depth[HNSP_GROUP_ROWS]
    cdef intp_t live[HNSP_GROUP_ROWS]
    cdef const float64_t* at[HNSP_GROUP_ROWS]
    cdef const float64_t* xs[HNSP_GROUP_ROWS]
    cdef float64_t dist[HNSP_GROUP_ROWS]
    cdef const intp_t* p
    X = X + group.start * x_step
    for r in range(group.rows):
        group.top[r] = -1
        depth[r] = group.length[r] - 1  # (the depth of the row's next eta)
        if group.length[r] > 0:
            live[n_live] = r
            n_live += 1
    while n_live > 0:
        for a in range(n_live):
            r = live[a]
            at[a] = _box_of(boxes, slots, D, group.path[r * WALK_DEPTH_MAX + depth[r]])
            xs[a] = X + r * x_step
        mf_group_distances(n_live, D, at, xs, dist)
        kept = 0
        for a in range(n_live):
            r = live[a]
            i = depth[r]
            group.etas[r * WALK_DEPTH_MAX + i] = dist[a]
            if dist[a] == 0.0 or i == 0:
                group.top[r] = i
                continue
            if i >= HNSP_BOXES_AHEAD:
                mf_prefetch_span(_box_of(boxes, slots, D, group.path[
                    r * WALK_DEPTH_MAX + i - HNSP_BOXES_AHEAD]), 2 * D * sizeof(float64_t))
            depth[r] = i - 1
            live[kept] = r
            kept += 1
        n_live = kept
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
