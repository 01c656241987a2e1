"""Classification posterior of a Mondrian tree: HNSP prior with IKN smoothing (section 4) and
the predictive that integrates over every extension of the tree to the test point (section 5).

The tree stores only the raw class histogram of every node (its ``value`` row). The IKN counts,
tables and posterior means are computed along the root-to-leaf path of each test point, so the
online update stays O(depth) per training point and prediction costs O(depth * (D + K)).

The rows may hold the classes in the order they arrived, with spare zero columns
(``MondrianTree.columns``): every reader takes class ``k`` of the sorted ``classes_`` from the
stored column ``tree.columns[k]`` and uses ``K = tree.n_columns`` (the classes, not the row
width), so the arithmetic, in the same order, gives the bits of sorted rows.
"""

from libc.math cimport INFINITY
from libc.stdlib cimport free
from libc.stdint cimport int32_t
from libc.string cimport memset

from mondrian.core._tree cimport TREE_LEAF, MondrianTree, Node, stored_row
from mondrian.core._batch_walk cimport (
    BATCH_ROWS,
    BatchEtas,
    BoxSource,
    batch_etas,
    batch_etas_boxes,
    batch_free,
    batch_next,
    batch_row,
)
from mondrian.core._box_loops cimport mf_prefetch_span
from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.core._warm cimport WARM_TREES, warm_trees
from mondrian.core._walk cimport (
    WALK_DEPTH_MAX,
    WalkStep,
    child_toward,
    is_leaf_at,
    read_lifetime,
    reserve,
    walk_etas,
    walk_next,
    walk_start,
    walk_start_path,
)
from mondrian.core._group_walk cimport (
    GroupRows,
    group_next,
    group_stage,
    group_stages_begin,
    group_walk_portable,
)
from mondrian.forest._hnsp_group cimport (
    MF_REC_CUST,
    MF_REC_G,
    MF_REC_TAB,
    hnsp_group_etas,
    hnsp_path_walk,
    hnsp_prefetch_rows,
    hnsp_step_p,
    mf_hnsp_d_bar,
    mf_record_floats,
)
from mondrian.forest._hnsp_cache cimport CallCodes, fill_codes, tree_entry
from mondrian.forest._hnsp_rows cimport _step_rows
from mondrian.forest._node_cache cimport NodeTables

import numpy as np

from mondrian.core._batch_walk import add_portable_switch

cdef extern from "mondrian/forest/_hnsp_kernels.h":
    int mf_hnsp_kernels_portable
    int mf_hnsp_kernel
    void mf_branch_off(intp_t K, float64_t weight, float64_t d_bar, float64_t n_tab,
                       float64_t n_cust, bint strict, const float64_t* counts,
                       const float64_t* g_parent, float64_t* out) noexcept nogil
    void mf_posterior(intp_t K, float64_t a, float64_t b, float64_t e, const float64_t* c,
                      const float64_t* p, float64_t* g) noexcept nogil
    float64_t mf_table(float64_t count) noexcept nogil

cdef extern from "mondrian/forest/_vmath.h":
    int mf_vmath_portable
    float64_t mf_vm_exp(float64_t x) noexcept nogil
    void mf_vm_expm1s(intp_t n, const float64_t* x, float64_t* out) noexcept nogil


def _set_portable(bint portable):
    """Force (True) or release the scalar reference loop of the branch-off terms (set with
    the box kernels' switch, ``mondrian.core._batch_walk.set_portable_kernels``)."""
    global mf_hnsp_kernels_portable, mf_vmath_portable
    mf_hnsp_kernels_portable = 1 if portable else 0
    mf_vmath_portable = 1 if portable else 0
    group_walk_portable(portable)


add_portable_switch(_set_portable)


def _expm1(const float64_t[::1] x):
    """``expm1`` of the floats ``x`` by the branch-off terms' own function (``_vmath.h``), as
    the current kernels' setting says: for the tests."""
    out = np.empty(x.shape[0])
    cdef float64_t[::1] o = out
    if x.shape[0]:
        mf_vm_expm1s(x.shape[0], &x[0], &o[0])
    return out


def _set_branch_kernel(int kernel):
    """Force the branch-off kernel (tests): 1 GCC's clones, 2 AVX2 lanes, 3 AVX-512 lanes (the
    CPU must have them), 0 the CPU's choice; returns the previous setting."""
    global mf_hnsp_kernel
    old, mf_hnsp_kernel = mf_hnsp_kernel, kernel
    return old


# Tabulate the node posteriors once per call when the call has at least one row per this many
# nodes (a row visits about depth nodes, summing lean rows from points; tabulating reads every
# node once). The two cost the same near 1 row per 40 nodes on letter (20 trees), 1 per 100 on
# usps (lean rows of 256 points).
cdef intp_t TABLE_ROWS_PER_NODE = 32

# Rows ahead of its walk that a batched tabulated call requests a row's records, once the
# whole tables were requested (_stream_tables): satimage 3% faster at 2 to 16 rows.
cdef intp_t PREFETCH_ROWS = 4

# Features from which a call of many rows finds their etas node by node (_batch_walk): with
# fewer, a box distance is a few operations and the partition of the rows costs more than the
# rows' own walks over every box rebuilt once (letter, pendigits: 16 features).
cdef intp_t BATCH_MIN_FEATURES = 32


cdef inline float64_t _table(float64_t count) noexcept nogil:
    """IKN tables of a class with ``count`` customers: ``min(count, 1)``.

    With integer counts this is the indicator ``count > 0``; with weighted (fractional) counts
    it keeps ``count - d * tables >= 0``, so every probability stays non-negative, and a
    class seen with weight ``w < 1`` opens ``w`` of a table.
    """
    return mf_table(count)  # count if count < 1.0 else 1.0, branch-free


cdef inline void _node_counts(MondrianTree tree, const float64_t* val_left,
                              const float64_t* val_right, bint leaf, float64_t* counts,
                              float64_t* n_cust, float64_t* n_tab) noexcept nogil:
    """IKN customers of a node: raw counts at a leaf (its row ``val_left``), the children's
    tables at an internal node (their rows ``val_left``, ``val_right``)."""
    cdef intp_t K = tree.n_columns, k, c
    cdef const intp_t* cols = tree.columns
    # Sums in locals: through the pointers (which may alias counts) every term would wait
    # for the previous store; the same terms in the same order.
    cdef float64_t cust = 0.0, tab = 0.0
    if leaf:
        for k in range(K):
            c = cols[k]
            counts[k] = val_left[c]
            cust += val_left[c]
            tab += _table(val_left[c])
    else:
        for k in range(K):
            c = cols[k]
            counts[k] = _table(val_left[c]) + _table(val_right[c])
            cust += counts[k]
            tab += _table(counts[k])
    n_cust[0] = cust
    n_tab[0] = tab


cdef inline void _posterior(intp_t K, float64_t gamma, float64_t delta, const float64_t* counts,
                            float64_t n_cust, float64_t n_tab, const float64_t* g_parent,
                            float64_t* g) noexcept nogil:
    """G_j = (c - d tab + d T G_parent) / n, with the node's discount d."""
    cdef float64_t discount = 0.0 if delta == INFINITY else mf_vm_exp(-gamma * delta)
    cdef float64_t a = 1.0 / n_cust
    cdef float64_t b = discount / n_cust
    cdef float64_t c = discount * n_tab / n_cust
    # g[k] = a * counts[k] - b * _table(counts[k]) + c * g_parent[k], vectorized
    mf_posterior(K, a, b, c, counts, g_parent, g)


cdef inline void _branch_off(float64_t eta, float64_t delta, float64_t p, float64_t reach,
                             intp_t K, float64_t gamma, bint strict, const float64_t* counts,
                             float64_t n_cust, float64_t n_tab, const float64_t* g_parent,
                             float64_t* out) noexcept nogil:
    """Add the mass of ``x`` branching off above the node (a step with these ``eta``,
    ``delta``, ``p`` and ``reach``): a new node whose discount is the one of a cut at the
    branching time, averaged over that time."""
    cdef float64_t d_bar, weight
    if delta == INFINITY:
        d_bar = eta / (eta + gamma)
    else:
        # (-p is mf_vm_expm1(-eta * delta), exactly: hnsp_step_p)
        d_bar = mf_hnsp_d_bar(eta, delta, gamma, p)
    weight = reach * p
    if weight > 0.0:
        # out[k] += weight * ((1 - d_bar) tab + d_bar n_tab g_parent[k]) / n_tab (strict),
        # else weight * (counts[k] - d_bar tab + d_bar n_tab g_parent[k]) / n_cust, with
        # tab = _table(counts[k]): the classes in vector lanes, the same bits.
        mf_branch_off(K, weight, d_bar, n_tab, n_cust, strict, counts, g_parent, out)


cdef inline void _prefetch_rows(MondrianTree tree, intp_t node) noexcept nogil:
    """Prefetch the statistics rows of the children of ``node`` (read at its step)."""
    cdef const Node* nd = &tree.nodes[node]
    cdef intp_t K = tree.value_stride
    cdef const float64_t* row
    if nd.left_child != TREE_LEAF:
        row = stored_row(tree, nd.left_child)
        if row != NULL:
            mf_prefetch_span(row, K * sizeof(float64_t))
        row = stored_row(tree, nd.right_child)
        if row != NULL:
            mf_prefetch_span(row, K * sizeof(float64_t))


cdef void _predict_row(MondrianTree tree, const float64_t* x, float64_t gamma,
                       bint strict, float64_t lifetime, bint plain, float64_t* g_parent,
                       float64_t* g, float64_t* counts, float64_t* rows, float64_t* box,
                       const BatchEtas* batch, intp_t r, float64_t* out) noexcept nogil:
    """Add the tree's predictive distribution at ``x`` to ``out`` (length K).

    ``g_parent``, ``g`` and ``counts`` are scratch buffers of length K, ``rows`` of three
    statistics rows (``3 * value_stride``), ``box`` of 2 D. Eta comes from the leaf upward
    (``walk_etas``) and each step hands the row of the child toward ``x`` to the next
    (:func:`_step_rows`) unless ``plain`` (every node's eta on the way down, every row
    without a stored one summed from its points: the reference of the tests).
    """
    cdef intp_t K = tree.n_columns, S = tree.value_stride, j, k, child = 0, top = 0, depth = 0
    cdef intp_t path[WALK_DEPTH_MAX]
    cdef float64_t etas[WALK_DEPTH_MAX]
    cdef float64_t* tmp
    cdef float64_t* slot[3]
    cdef float64_t n_cust, n_tab
    cdef const float64_t* first = NULL
    cdef const float64_t* second = NULL
    cdef const float64_t* own = NULL
    cdef bint exact = False
    cdef WalkStep step
    slot[0] = rows
    slot[1] = rows + S
    slot[2] = rows + 2 * S

    for k in range(K):
        g_parent[k] = 1.0 / K
    if not plain:
        if batch != NULL:  # row r of the batch's node-major pass
            top = batch_row(batch, tree, r, x, lifetime, box, path, etas, True)
            depth = 1 if top >= 0 else 0
        else:
            depth = walk_etas(tree, x, lifetime, NULL, box, path, etas, &top)
    if depth > 0:
        # The posteriors chain from the root: start there, with the etas found.
        walk_start_path(&step, tree, x, lifetime, path, etas, top, 0)
    else:
        walk_start(&step, tree, x, lifetime)
    while True:
        hnsp_step_p(&step)
        j = step.node
        # A one-row walk visits nodes scattered in memory: the next node's struct, and then
        # its children's statistics rows, are requested one step early so that their loads
        # overlap this node's arithmetic (hints only: no effect on any value).
        if not step.is_leaf:
            child = child_toward(tree, j, x)
            mf_prefetch_span(&tree.nodes[child], sizeof(Node))
        # The two scratch rows that do not hold this node's row (own, found at the previous
        # step, stays readable while its children's rows are written).
        if own == slot[0]:
            tmp = slot[0]
            slot[0] = slot[2]
            slot[2] = tmp
        elif own == slot[1]:
            tmp = slot[1]
            slot[1] = slot[2]
            slot[2] = tmp
        if plain:
            own = NULL
            exact = False
        own = _step_rows(tree, &step, x, child, own, &exact, slot[0], slot[1], &first,
                         &second)
        _node_counts(tree, first, second, step.is_leaf, counts, &n_cust, &n_tab)
        if step.p > 0.0:
            _branch_off(step.eta, step.delta, step.p, step.reach, K, gamma, strict, counts,
                        n_cust, n_tab, g_parent, out)
            if step.survival <= 0.0:
                return
        _posterior(K, gamma, step.delta, counts, n_cust, n_tab, g_parent, g)
        if step.is_leaf:
            for k in range(K):
                out[k] += step.survival * g[k]
            return
        tmp = g_parent
        g_parent = g
        g = tmp
        _prefetch_rows(tree, child)
        walk_next(&step, tree, x, lifetime)


cdef int _node_tables(MondrianTree tree, float64_t gamma, float64_t lifetime,
                      const float64_t* values, float64_t* tables, intp_t* queue) except -1 nogil:
    """Fill the test-point-independent quantities of every node of the tree pruned at
    ``lifetime``: node ``j``'s record of ``tables`` (``_hnsp_kernels.h``: its counts,
    customers, tables and posterior), with the arithmetic of
    :func:`_predict_row`, so reading them gives the same bits. Record ``node_count`` is the
    root's parent: the uniform base measure. ``values`` holds every node's statistics row
    (``MondrianTree._all_values``, or the tree's own buffer when it stores them all).

    A node needs only its parent's record: when every node is stored after its parent (a
    batch fit grows depth first), the nodes are visited in storage order, the reads and
    writes streaming through memory (``queue`` flags the nodes of the pruned tree);
    otherwise (an online update put a new parent above older nodes) breadth first."""
    cdef intp_t K = tree.n_columns, n = tree.node_count, head = 0, tail = 1, j, k, parent
    cdef float64_t* root_parent = tables + n * mf_record_floats(K)
    cdef bint ordered = True
    memset(root_parent, 0, mf_record_floats(K) * sizeof(float64_t))
    for k in range(K):
        root_parent[MF_REC_G(K) + k] = 1.0 / K
    for j in range(1, n):
        parent = tree.nodes[j].parent
        if parent < 0 or parent >= j:
            ordered = False
            break
    if ordered:
        queue[0] = 1
        for j in range(1, n):
            queue[j] = 0
        for j in range(n):
            if queue[j]:
                _node_table(tree, gamma, lifetime, values, j, tables, queue, True)
        return 0
    queue[0] = 0
    while head < tail:
        j = queue[head]
        head += 1
        tail = _node_table(tree, gamma, lifetime, values, j, tables, queue + tail,
                           False) + tail
    return 0


cdef inline intp_t _node_table(MondrianTree tree, float64_t gamma, float64_t lifetime,
                               const float64_t* values, intp_t j, float64_t* tables,
                               intp_t* children, bint flags) noexcept nogil:
    """The record of node ``j`` (its parent's done) for :func:`_node_tables`; its children,
    when it is not a leaf of the pruned tree, are flagged in ``children`` (``flags``) or
    written to it. Returns the number written (0 or 2)."""
    cdef intp_t K = tree.n_columns, S = tree.value_stride, n = tree.node_count, parent
    cdef intp_t R = mf_record_floats(K)
    cdef bint leaf = is_leaf_at(tree, j, lifetime)
    cdef float64_t tau, tau_parent
    cdef float64_t* rec = tables + j * R
    parent = tree.nodes[j].parent if j != 0 else n
    tau_parent = 0.0 if j == 0 else tree.nodes[parent].split_time
    tau = lifetime if leaf else tree.nodes[j].split_time
    if leaf:
        _node_counts(tree, values + j * S, NULL, leaf, rec, rec + MF_REC_CUST(K),
                     rec + MF_REC_TAB(K))
    else:
        _node_counts(tree, values + <intp_t>tree.nodes[j].left_child * S,
                     values + <intp_t>tree.nodes[j].right_child * S, leaf, rec,
                     rec + MF_REC_CUST(K), rec + MF_REC_TAB(K))
    _posterior(K, gamma, tau - tau_parent, rec, rec[MF_REC_CUST(K)], rec[MF_REC_TAB(K)],
               tables + parent * R + MF_REC_G(K), rec + MF_REC_G(K))
    if leaf:
        return 0
    if flags:
        children[tree.nodes[j].left_child] = 1
        children[tree.nodes[j].right_child] = 1
        return 0
    children[0] = tree.nodes[j].left_child
    children[1] = tree.nodes[j].right_child
    return 2


cdef void _predict_row_tabled(MondrianTree tree, const float64_t* x, float64_t gamma,
                              bint strict, float64_t lifetime, const float64_t* tables,
                              const BatchEtas* batch, intp_t r,
                              const float64_t* boxes, bint plain, float64_t* box,
                              float64_t* out) noexcept nogil:
    """:func:`_predict_row` reading the quantities of :func:`_node_tables`: the walk only
    computes what depends on ``x`` (the branch-off terms), from the first node of the path
    with eta > 0 (the tables hold the posteriors above it), with the etas that the batch's
    node-major pass found for ``x`` (its row ``r``), or if ``batch`` is NULL ``walk_etas``'s
    (``boxes``: every node's, or NULL; ``box``: 2 D floats), unless ``plain`` or its path is
    too deep for them (then every eta on the way down, from the root)."""
    cdef intp_t top = -1
    cdef intp_t path[WALK_DEPTH_MAX]
    cdef float64_t etas[WALK_DEPTH_MAX]
    if plain:
        pass
    elif batch != NULL:
        top = batch_row(batch, tree, r, x, lifetime, box, path, etas, False)
    elif walk_etas(tree, x, lifetime, boxes, box, path, etas, &top) == 0:
        top = -1
    _tabled_walk(tree, x, gamma, strict, lifetime, tables, path, etas, top, out)


cdef void _tabled_walk(MondrianTree tree, const float64_t* x, float64_t gamma, bint strict,
                       float64_t lifetime, const float64_t* tables, const intp_t* path,
                       const float64_t* etas, intp_t top, float64_t* out) noexcept nogil:
    """The walk of :func:`_predict_row_tabled` from depth ``top`` of ``path`` with its
    ``etas`` (``walk_etas``'s), or from the root computing every eta when ``top`` is -1."""
    cdef intp_t K = tree.n_columns, R = mf_record_floats(K), G = MF_REC_G(K), k
    cdef const float64_t* up = tables + tree.node_count * R  # (the root's parent's record)
    cdef const float64_t* rec
    cdef WalkStep step
    if top >= 0:
        hnsp_path_walk(tree, gamma, strict, lifetime, tables, path, etas, top, out)
        return
    walk_start(&step, tree, x, lifetime)
    while True:
        hnsp_step_p(&step)
        rec = tables + step.node * R
        if step.p > 0.0:
            _branch_off(step.eta, step.delta, step.p, step.reach, K, gamma, strict, rec,
                        rec[MF_REC_CUST(K)], rec[MF_REC_TAB(K)], up + G, out)
            if step.survival <= 0.0:
                return
        if step.is_leaf:
            for k in range(K):
                out[k] += step.survival * rec[G + k]
            return
        up = rec
        walk_next(&step, tree, x, lifetime)


cdef int _predict_groups(MondrianTree tree, const float64_t* X, intp_t x_step, intp_t n,
                         float64_t gamma, bint strict, float64_t lifetime,
                         const float64_t* tables, const float64_t* boxes, const int32_t* slots,
                         float64_t* out, intp_t out_step, GroupRows** scratch,
                         size_t* scratch_size) except -1 nogil:
    """:func:`_predict_row_tabled` of the ``n`` rows of ``X`` reading the node tables
    ``tables`` (:func:`_fill_tables`) and ``boxes`` (every node's: node ``j``'s at row
    ``slots[j]``, or ``j`` if ``slots`` is NULL), in groups of ``GROUP_ROWS`` rows side
    by side, in three stages a group apart (three groups of scratch, ``reserve``'d): a
    group's descents (``group_next``), the previous group's etas
    (``hnsp_group_etas``), the walks of the group before it (:func:`_tabled_walk`); so the
    boxes and tables a stage reads were requested a stage or two earlier."""
    cdef intp_t K = tree.n_columns
    cdef GroupRows* groups = group_stages_begin(scratch, scratch_size)
    cdef intp_t r, i, step = 0
    cdef GroupRows* walked
    cdef GroupRows* measured
    while group_stage(groups, step, n, &walked, &measured):
        for r in range(walked.rows):
            i = walked.start + r
            _tabled_walk(tree, X + i * x_step, gamma, strict, lifetime, tables,
                         walked.path + r * WALK_DEPTH_MAX, walked.etas + r * WALK_DEPTH_MAX,
                         walked.top[r], out + i * out_step)
        if measured.rows > 0:
            hnsp_group_etas(tree, X, x_step, boxes, slots, tables, measured)
            for r in range(measured.rows):  # (their sums' rows of out)
                mf_prefetch_span(out + (measured.start + r) * out_step, K * sizeof(float64_t))
        group_next(tree, X, x_step, step, n, lifetime, boxes, slots, walked)
        step += 1
    return 0


cdef inline void _stream_tables(const float64_t* tables, intp_t m, intp_t K,
                                intp_t rows) noexcept nogil:
    """Request the whole node tables of a tree of ``m`` nodes (``K`` classes), before the
    walks of a batch of ``rows`` rows: one pass in storage order streams them into cache
    (satimage: 350 KB a tree, in L2), where the walks would miss on each record as they first
    reach it (rows in their own order meet the nodes at random). A hint: 5% of a cached
    satimage call. Only for a batch of at least ``m / 2`` rows, which read most records (a
    row reads a few): a smaller one would pay for the whole tree (usps, 20 trees: 10 rows
    2.2 ms against 1.3 ms)."""
    if 2 * rows >= m:
        mf_prefetch_span(tables, (m + 1) * mf_record_floats(K) * sizeof(float64_t))


cdef int _fill_tables(MondrianTree tree, float64_t gamma, float64_t lam,
                      float64_t* kept_tables, float64_t* kept_boxes, bint fresh, bint every,
                      float64_t** buf, size_t* buf_size, float64_t** values,
                      size_t* values_size, float64_t** boxes, size_t* boxes_size,
                      intp_t** queue, size_t* queue_size, float64_t** tables,
                      float64_t** every_boxes) except -1 nogil:
    """Point ``tables`` at the node tables of a tabulated call (:func:`_node_tables`), and if
    ``every`` ``every_boxes`` at every node's box: the cached ones (``kept_tables``,
    ``kept_boxes``; filled now when ``fresh``), else filled in the call's scratch (``buf``,
    ``boxes``; ``values`` and ``queue`` are scratch of the filling)."""
    cdef intp_t m = tree.node_count, S = tree.value_stride
    cdef size_t table_bytes = (m + 1) * mf_record_floats(tree.n_columns) * sizeof(float64_t)
    cdef bint lean_rows = tree.box_min_samples > 0 and tree.lean_values
    reserve(<void**> queue, queue_size, m * sizeof(intp_t))
    if kept_tables != NULL:
        tables[0] = kept_tables
    else:
        reserve(<void**> buf, buf_size, table_bytes)
        tables[0] = buf[0]
    if kept_tables == NULL or fresh:
        if lean_rows:  # every statistics row (lean values)
            reserve(<void**> values, values_size, m * S * sizeof(float64_t))
            tree._all_values(values[0], queue[0])
        _node_tables(tree, gamma, lam, values[0] if lean_rows else tree.value, tables[0],
                     queue[0])
    if not every:
        return 0
    if kept_boxes != NULL:
        every_boxes[0] = kept_boxes
    else:
        reserve(<void**> boxes, boxes_size, 2 * m * tree.n_features * sizeof(float64_t))
        every_boxes[0] = boxes[0]
    if kept_boxes == NULL or fresh:
        tree._all_boxes(every_boxes[0], queue[0])
    return 0


def predict_proba_trees(list trees, const float64_t[:, ::1] X, float64_t[:, ::1] out,
                        float64_t discount_factor, bint strict, lifetime=None,
                        bint plain_walk=False, cache=None, intp_t forest_trees=0):
    """Add the predictive distribution of every tree in ``trees`` to ``out``.

    Parameters
    ----------
    trees : list of MondrianTree
        Trees whose statistics are class histograms (``n_columns == n_classes``).
    X : ndarray of shape (n_samples, n_features)
        Test points in the scaled feature space.
    out : ndarray of shape (n_samples, n_classes)
        Accumulator; the sum over trees is added to it.
    discount_factor : float
        The HNSP discount rate is ``gamma = discount_factor * n_features``.
    strict : bool
        Use strict IKN counts for the branched-off node instead of the node's own counts.
    lifetime : float, default=None
        Predict with the trees pruned at this lifetime (default: their own lifetime).
    plain_walk : bool, default=False
        Compute eta at every node of each path on the way down (the reference walk of the
        tests) instead of from the leaf upward; the same bits either way.
    cache : PredictCache, default=None
        Where a call of many rows keeps each tree's node tables (and boxes) for the next
        calls of the same model (``mondrian.forest._node_cache``); the same bits either way.
    forest_trees : int, default=0
        Trees of the whole model (``trees`` may be one thread's share; 0: ``len(trees)``),
        for the cache's box policy (``_hnsp_cache._kept_bounds``).
    """
    cdef MondrianTree tree
    cdef NodeTables kept
    cdef bint fresh
    cdef float64_t* tables = NULL
    cdef float64_t* every_boxes = NULL
    cdef intp_t n = X.shape[0], K = out.shape[1], i, k, m, S, s, t
    cdef float64_t gamma, lam
    # One scratch of each kind for every tree of the call (see ``reserve``).
    cdef float64_t* buf = NULL
    cdef float64_t* values = NULL
    cdef float64_t* boxes = NULL
    cdef intp_t* queue = NULL
    cdef float64_t* box = NULL
    cdef GroupRows* groups = NULL
    cdef size_t buf_size = 0, values_size = 0, queue_size = 0, box_size = 0, boxes_size = 0
    cdef size_t groups_size = 0
    cdef intp_t start, stop
    cdef BatchEtas batch
    cdef BoxSource source
    cdef CallCodes codes = CallCodes()  # (the rows' ranks, once per call)
    cdef bint tabled, batched, every, grouped, boxed
    for tree in trees:
        if tree.n_columns != K:
            raise ValueError("the trees' statistics do not match the number of classes")
        if tree.node_count == 0:
            raise ValueError("cannot predict with an empty tree")
    memset(&batch, 0, sizeof(batch))
    fresh = False
    try:
        for t, tree in enumerate(trees):
            if n == 1 and not plain_walk and t % WARM_TREES == 0:  # (see _warm.pxd)
                warm_trees(trees[t : t + WARM_TREES], &X[0, 0], lifetime)
            gamma = discount_factor * tree.n_features
            lam = read_lifetime(tree, lifetime)
            m = tree.node_count
            S = tree.value_stride
            # Many rows: the per-node posteriors once per call, in this call's own scratch
            # (reads never write the tree); few rows: along each path, O(depth) per row.
            tabled = n * TABLE_ROWS_PER_NODE >= m
            # The etas node by node (the rows of a batch share the boxes, built and read
            # once), from two rows on where a box is long enough for that to pay; else each
            # row finds its own, from every box rebuilt once per call (a tabulated call of a
            # lean tree), or from the stored boxes and points.
            batched = n > 1 and not plain_walk and tree.n_features >= BATCH_MIN_FEATURES
            # The tables (and boxes) of an earlier call of the same model, or new ones kept
            # for the next calls when the cache has room, else this call's scratch.
            kept = tree_entry(None if plain_walk else cache, tree, n, gamma, lam, batched,
                              forest_trees or len(trees), &tabled, &fresh)
            every = tabled and not batched and tree.box_min_samples > 0 and not plain_walk
            grouped = tabled and not batched and not plain_walk and (
                every or tree.box_min_samples == 0)
            boxed = batched and kept is not None and kept.boxes != NULL  # (every box kept)
            codes.point(kept if batched else None, &X[0, 0], n, X.shape[1], &source)
            with nogil:
                reserve(<void**> &box, &box_size, 2 * tree.n_features * sizeof(float64_t))
                if not tabled:
                    reserve(<void**> &buf, &buf_size, (3 * K + 3 * S) * sizeof(float64_t))
                    if not batched:
                        for i in range(n):
                            _predict_row(tree, &X[i, 0], gamma, strict, lam, plain_walk, buf,
                                         buf + K, buf + 2 * K, buf + 3 * K, box, NULL, 0,
                                         &out[i, 0])
                        continue
                else:
                    _fill_tables(tree, gamma, lam, NULL if kept is None else kept.tables,
                                 NULL if kept is None else kept.boxes, fresh, every or boxed, &buf,
                                 &buf_size, &values, &values_size, &boxes, &boxes_size,
                                 &queue, &queue_size, &tables, &every_boxes)
                    if fresh and source.codes != NULL:
                        fill_codes(tree, kept, &queue, &queue_size)
                        source.codes = kept.codes  # (NULL: a bound could not be encoded)
                    if boxed:
                        source.boxes = every_boxes
                # Every box at hand (rebuilt, or all stored): rows in groups, side by side.
                start = n if grouped else 0
                if grouped:
                    _predict_groups(tree, &X[0, 0], X.shape[1], n, gamma, strict, lam, tables,
                                    every_boxes if every else tree.bounds,
                                    NULL if every else tree.box_slot, &out[0, 0],
                                    out.shape[1], &groups, &groups_size)
                while start < n:
                    stop = min(n, start + <intp_t>BATCH_ROWS)
                    source.ranks = codes.rows(start)
                    if source.boxes != NULL or source.codes != NULL:
                        batch_etas_boxes(&batch, tree, &X[start, 0], stop - start, X.shape[1],
                                         lam, &source)
                    elif batched:
                        batch_etas(&batch, tree, &X[start, 0], stop - start, X.shape[1], lam)
                    if tabled and batched:
                        _stream_tables(tables, m, K, stop - start)
                    for k in range(stop - start):
                        # Row i and its slot s in the batch (the rows in their own order:
                        # leaf order was 5-9% slower here on pendigits and satimage).
                        i = start + k
                        s = k
                        if batched:
                            i = start + batch_next(&batch, k, False, &s)
                        if tabled and batched:
                            hnsp_prefetch_rows(&batch, k, stop - start, PREFETCH_ROWS, tables, K)
                        if tabled:
                            _predict_row_tabled(tree, &X[i, 0], gamma, strict, lam, tables,
                                                &batch if batched else NULL, s,
                                                every_boxes if every else NULL, plain_walk,
                                                box, &out[i, 0])
                        else:
                            _predict_row(tree, &X[i, 0], gamma, strict, lam, False, buf, buf + K,
                                         buf + 2 * K, buf + 3 * K, box, &batch, s, &out[i, 0])
                    start = stop
            if fresh:
                cache.store(tree, (gamma, lam), kept)
                fresh = False
    finally:
        if fresh:  # (built only part way: its bytes go back to the budget)
            cache.release(kept.nbytes)
        free(box)
        free(buf)
        free(values)
        free(boxes)
        free(queue)
        free(groups)
        batch_free(&batch)
