"""What a forget computes once for all its trees (:mod:`mondrian.core._forget`, docs/algorithms.md
§13): the checks of the call and its shared buffers (:func:`prepare_call`), and the pause
checks that two points settle (:func:`fails_pause_surely`), with each stored point's leading
read columns found once per call instead of read from its row in every tree (:func:`tree_leads`).
"""

from libc.stdint cimport int32_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcmp, memset

from mondrian.core._forget_bulk cimport WARM_SHARE, bulk_min_points
from mondrian.core._forget_bulk cimport gather_columns, nonzero_columns
from mondrian.core._tree cimport TREE_LEAF
from mondrian.core._typedefs cimport float64_t, intp_t

__all__ = ["set_leads"]

# Whether a large call finds its rows' leads (set_leads: tests compare with and without).
cdef bint use_leads = True


def set_leads(bint on):
    """Find the rows' leads for the pause checks of large calls (:func:`tree_leads`) or not
    (the checks read the rows then: the same decisions); returns the previous setting."""
    global use_leads
    cdef bint old = use_leads
    use_leads = on
    return old


cdef void release_call(BulkCall* bulk, unsigned char* mark) noexcept:
    """Free what :func:`prepare_call` allocated."""
    free(bulk.nz_start)
    free(bulk.nz_columns)
    free(bulk.nz_values)
    free(bulk.gone)
    free(bulk.call_of)
    free(bulk.xt)
    free(bulk.leads)
    free(bulk.lead_columns)
    free(mark)


cdef int _find_leads(const float64_t* rows, intp_t n_rows, intp_t S, const intp_t* columns,
                     intp_t n_columns, Lead* leads) noexcept nogil:
    """Each row's first two non-zero read columns (``columns[k]``, in the read order) and its
    entries there, ``k = -1`` where there is none."""
    cdef intp_t i, k
    cdef const float64_t* row
    cdef Lead* lead
    for i in range(n_rows):
        row = rows + i * S
        lead = &leads[i]
        lead.k1 = lead.k2 = -1
        lead.v1 = lead.v2 = 0.0
        for k in range(n_columns):
            if row[columns[k]] != 0.0:
                if lead.k1 < 0:
                    lead.k1 = <int32_t>k
                    lead.v1 = row[columns[k]]
                else:
                    lead.k2 = <int32_t>k
                    lead.v2 = row[columns[k]]
                    break
    return 0


cdef int _prepare_leads(MondrianTree tree, const float64_t* rows, intp_t n_rows, intp_t S,
                        BulkCall* bulk) noexcept:
    """The rows' leads for the read columns of ``tree`` (every tree of an ensemble has the
    same; :func:`tree_leads` checks), or none if memory is short (the checks read the rows
    then): an optional speed-up."""
    cdef intp_t k
    bulk.lead_n_columns = tree.n_columns
    bulk.leads = <Lead*>malloc((n_rows + 1) * sizeof(Lead))
    bulk.lead_columns = <intp_t*>malloc((tree.n_columns + 1) * sizeof(intp_t))
    if bulk.leads == NULL or bulk.lead_columns == NULL:
        free(bulk.leads)
        free(bulk.lead_columns)
        bulk.leads = NULL
        bulk.lead_columns = NULL
        return 0
    for k in range(tree.n_columns):
        bulk.lead_columns[k] = tree.columns[k]
    with nogil:
        _find_leads(rows, n_rows, S, bulk.lead_columns, tree.n_columns, bulk.leads)
    return 0


cdef BulkCall* prepare_call(list trees, const float64_t[:, ::1] X,
                            const float64_t[:, ::1] rows, const intp_t[::1] indices,
                            const float64_t[:, ::1] deltas, const unsigned char[::1] drop,
                            BulkCall* bulk, unsigned char** mark) except? NULL:
    """Check a forget of ``indices`` (``n > 0`` points) against ``trees`` and allocate what its
    trees share: ``mark`` (zero bytes, one per node of the largest tree), and for a call of
    ``bulk_min_points`` points or more ``bulk`` (the deltas' non-zero entries, the points by
    feature, flags by store index, the sign of the rows and their leads for a large call),
    returned (else NULL, and ``bulk`` holds no buffer). Raises before anything is allocated
    or after freeing it; :func:`release_call` frees both."""
    cdef MondrianTree tree
    cdef intp_t n = indices.shape[0], k, most_nodes = 0
    cdef const float64_t* rows_ptr = &rows[0, 0] if rows.shape[1] > 0 else NULL
    # Flags by store index (a pass over the store) only for a large share of it; else the
    # unlinking looks the points up by binary search.
    cdef bint flags = n * WARM_SHARE >= X.shape[0]
    bulk.nz_start = bulk.nz_columns = NULL
    bulk.nz_values = NULL
    bulk.gone = NULL
    bulk.call_of = NULL
    bulk.xt = NULL
    bulk.nonneg_rows = False
    bulk.leads = NULL
    bulk.lead_columns = NULL
    bulk.lead_n_columns = 0
    for tree in trees:
        if X.shape[1] != tree.n_features or deltas.shape[1] != tree.value_stride \
                or rows.shape[1] != tree.value_stride or rows.shape[0] != X.shape[0]:
            raise ValueError("store, rows and deltas do not match the trees")
        most_nodes = max(most_nodes, tree.node_count)
    # One mark buffer for every tree: each call leaves it zero (no pass over a tree's nodes).
    mark[0] = <unsigned char*>calloc(most_nodes + 1, 1)
    if n < bulk_min_points:
        if mark[0] == NULL:
            raise MemoryError("out of memory while forgetting points")
        return NULL
    # (Shared by every tree: the deltas' non-zero entries, flags.)
    bulk.nz_start = <intp_t*>malloc((n + 1) * sizeof(intp_t))
    bulk.nz_columns = <intp_t*>malloc((n * deltas.shape[1] + 1) * sizeof(intp_t))
    bulk.nz_values = <float64_t*>malloc((n * deltas.shape[1] + 1) * sizeof(float64_t))
    if flags:
        bulk.gone = <unsigned char*>calloc(X.shape[0] + 1, 1)
        if n < 0x7FFFFFFF:  # (positions in the call as int32: a quarter of the reads)
            bulk.call_of = <int32_t*>malloc((X.shape[0] + 1) * sizeof(int32_t))
    bulk.xt = <float64_t*>malloc((n * X.shape[1] + 1) * sizeof(float64_t))
    if mark[0] == NULL or bulk.nz_start == NULL or bulk.nz_columns == NULL \
            or bulk.nz_values == NULL \
            or bulk.xt == NULL or (flags and bulk.gone == NULL) \
            or (flags and n < 0x7FFFFFFF and bulk.call_of == NULL):
        release_call(bulk, mark[0])
        mark[0] = NULL
        raise MemoryError("out of memory while forgetting points")
    if bulk.call_of != NULL:
        memset(bulk.call_of, 0xFF, (X.shape[0] + 1) * sizeof(int32_t))  # (all -1)
    nonzero_columns(&deltas[0, 0] if rows_ptr != NULL else NULL, n, deltas.shape[1],
                    bulk.nz_start, bulk.nz_columns, bulk.nz_values)
    for k in range(n):
        if not 0 <= indices[k] < X.shape[0]:
            release_call(bulk, mark[0])
            mark[0] = NULL
            raise ValueError(f"store index {indices[k]} is not held by the tree")
        if drop[k] and bulk.gone != NULL:
            bulk.gone[indices[k]] = 1
            if bulk.call_of != NULL:
                bulk.call_of[indices[k]] = <int32_t>k
    gather_columns(&X[0, 0], X.shape[1], &indices[0], n, bulk.xt)
    if flags and rows_ptr != NULL:  # (a large call: one pass over the rows is cheap)
        bulk.nonneg_rows = True
        for k in range(rows.shape[0] * rows.shape[1]):
            if not rows_ptr[k] >= 0.0:
                bulk.nonneg_rows = False
                break
        # (What the pause checks read of the rows, once for every tree.)
        if bulk.nonneg_rows and use_leads and len(trees) > 1:
            _prepare_leads(trees[0], rows_ptr, rows.shape[0], rows.shape[1], bulk)
    return bulk


cdef const Lead* tree_leads(MondrianTree t, const BulkCall* bulk) noexcept nogil:
    """The call's leads (:func:`prepare_call`) if they were found with the read columns of
    ``t``, else NULL."""
    if bulk == NULL or bulk.leads == NULL or bulk.lead_n_columns != t.n_columns:
        return NULL
    if t.n_columns > 0 and memcmp(bulk.lead_columns, t.columns,
                                  t.n_columns * sizeof(intp_t)) != 0:
        return NULL
    return bulk.leads


cdef intp_t _first_column(MondrianTree t, const float64_t* row, intp_t skip) noexcept nogil:
    """The first read column ``k`` (``t.columns[k]``, in the read order) where ``row`` is
    non-zero, other than the stored column ``skip``; -1 if none."""
    cdef intp_t k
    for k in range(t.n_columns):
        if t.columns[k] != skip and row[t.columns[k]] != 0.0:
            return k
    return -1


cdef bint fails_pause_surely(MondrianTree t, intp_t j, const float64_t* rows,
                             const Lead* leads) noexcept nogil:
    """Whether the points below the internal node ``j`` fail the pause rule, proved from two
    of them (the first of its leftmost and of its rightmost leaf) when every contribution row
    is non-negative; False when they do not prove it (the caller then sums every row).

    With non-negative terms a rounded sum is at least each of its terms and grows with each
    (``fl(x + y) >= x`` for ``x, y >= 0``): a column where one of the points is non-zero is
    non-zero in the node's row, so two points non-zero in two different read columns make
    it impure; and its weighted count (the rounded sum of the counted columns) is at least
    ``fl(a + b)`` for the two points' entries ``a``, ``b`` in two counted columns. The
    decision of ``should_pause`` on the summed row is then known: not paused. ``leads``
    (:func:`tree_leads`, or NULL): the points' leading columns and entries, the same as
    their rows give (a row is a cache miss; the leads of a call stay in the cache)."""
    cdef intp_t a = j, b = j, p, q, ka, kb, counted, S = t.value_stride
    cdef const float64_t* rp
    cdef const float64_t* rq
    cdef float64_t va, vb
    if S == 0 or not t.pause_pure or rows == NULL:
        return False
    while True:  # (both descents at once: their misses overlap)
        p = t.nodes[a].left_child
        q = t.nodes[b].left_child
        if p == TREE_LEAF and q == TREE_LEAF:
            break
        if p != TREE_LEAF:
            a = p
        if q != TREE_LEAF:
            b = t.nodes[b].right_child
    p = t.nodes[a].first_sample
    q = t.nodes[b].first_sample
    if a == b or p == TREE_LEAF or q == TREE_LEAF:
        return False
    if leads != NULL:
        # (Read columns are distinct: q's first one other than ka's is its second if its
        # first is ka's.)
        ka = leads[p].k1
        va = leads[p].v1
        kb = leads[q].k1 if leads[q].k1 != ka else leads[q].k2
        vb = leads[q].v1 if leads[q].k1 != ka else leads[q].v2
    else:
        rp = rows + p * S
        rq = rows + q * S
        ka = _first_column(t, rp, -1)
        kb = _first_column(t, rq, t.columns[ka]) if ka >= 0 else -1
        va = rp[t.columns[ka]] if ka >= 0 else 0.0
        vb = rq[t.columns[kb]] if kb >= 0 else 0.0
    if ka < 0 or kb < 0:
        return False
    if t.count_columns == 0:
        return t.nodes[j].n_node_samples >= t.min_samples_split
    counted = t.n_columns if t.count_columns < 0 else t.count_columns
    if ka >= counted or kb >= counted:
        return False
    return va + vb >= t.min_samples_split
