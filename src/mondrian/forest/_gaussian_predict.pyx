"""The predictive kernel of the Gaussian tree model (section 6): one tree, many rows and priors.

A test point's predictive integrates over where it branches off the tree: its walk down the tree
gives the probability of branching off above every node of its path, and a node's record (its
outside message and the variance clock at its time, per prior) gives the Gaussian it would then
predict. The records depend only on the tree and the priors, so a call fills them once per node
it reaches (``Outer``), whatever the number of rows. The entry points that validate their inputs
(``predict_moments_trees``, ``predict_moments_grid``) live in :mod:`mondrian.forest._gaussian`.
"""

import numpy as np

from libc.stdint cimport int32_t
from libc.stdlib cimport calloc, free

from mondrian.core._batch_walk cimport (
    BATCH_LEAF_ORDER_MAX_FEATURES,
    BATCH_ROWS,
    BatchEtas,
    batch_etas,
    batch_free,
    batch_next,
    batch_row,
)
from mondrian.core._box_loops cimport MONDRIAN_TREE_PREFETCH
from mondrian.core._group_walk cimport (
    GroupRows,
    group_box,
    group_etas,
    group_next,
    group_stage,
    group_stages_begin,
    group_walk_portable,
)
from mondrian.core._tree cimport MondrianTree, box_distance
from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.core._walk cimport (
    WALK_DEPTH_MAX,
    WalkStep,
    is_leaf_at,
    node_time,
    reserve,
    walk_etas,
    walk_next,
    walk_start,
    walk_start_path,
)
from mondrian.forest._gaussian_model cimport Hyper, _clock_denominator, _leaf_message, _product

from mondrian.core._batch_walk import add_portable_switch


cdef extern from "mondrian/forest/_vmath.h":
    int mf_vmath_portable
    void mf_vm_clocks(intp_t n, float64_t rate, const float64_t* a, const float64_t* tau,
                      const float64_t* eta, float64_t* d) noexcept nogil
    void mf_vm_terms(intp_t n, float64_t sigma2, float64_t psi_end, float64_t noise,
                     const float64_t* inputs, float64_t* m, float64_t* v) noexcept nogil
    void mf_vm_apply(int which, intp_t n, const float64_t* x, float64_t* out) noexcept nogil


def _set_portable(bint portable):
    """Force (True) or release (False) the plain loops of the quadrature's exp and log1p
    (set with the box kernels' switch, ``mondrian.core._batch_walk.set_portable_kernels``)."""
    global mf_vmath_portable
    mf_vmath_portable = 1 if portable else 0
    group_walk_portable(portable)


add_portable_switch(_set_portable)


def _vmath(str name, x):
    """``exp`` or ``log1p`` (``name``) of the floats ``x`` by the quadrature's own functions
    (``_vmath.h``), as the current kernels' setting says: for the tests."""
    cdef const float64_t[::1] xs = np.ascontiguousarray(x, dtype=np.float64).ravel()
    out = np.empty(xs.shape[0])
    cdef float64_t[::1] o = out
    if xs.shape[0]:
        mf_vm_apply(0 if name == "exp" else 1, xs.shape[0], &xs[0], &o[0])
    return out


cdef enum:
    # A node's record per prior. Hierarchical model: its outside message (the belief about its
    # mean from everything but its own subtree's data, at the node's parent's time: mean,
    # variance), psi at its time and at its parent's (the same at its own time: add the
    # difference, ``_q_var``). The
    # independent model: the posterior of its deepest labelled ancestor-or-self (mean, variance).
    OUT_MEAN = 0
    OUT_VAR = 1
    OUT_PSI = 2
    OUT_PSI_PARENT = 3
    OUTER_FIELDS = 4


cdef inline bint _batched(MondrianTree tree, intp_t n_rows) noexcept nogil:
    """Whether a call predicting ``n_rows`` rows finds their etas node by node
    (``batch_etas``: each box built and read once per batch, shared by its rows), rather than
    each row growing the boxes it needs from the stored points (``walk_etas``): from two rows
    on (the same bits either way)."""
    return n_rows > 1


cdef int _outer_reserve(Outer* o, intp_t node_count, intp_t P, intp_t n_quadrature,
                        intp_t n_rows) except -1 nogil:
    """Size ``o`` for a tree of ``node_count`` nodes and a call of ``n_rows`` rows (``o``
    zeroed before its first use; ``outer_free`` when done)."""
    cdef size_t n = <size_t> node_count
    o.memo = n_rows > 1
    if not o.memo:
        n = 2
    elif n > o.known_size:  # the flags start at 0 (they are cleared per tree after that)
        free(o.known)
        o.known_size = 0
        o.known = <unsigned char*> calloc(n, 1)
        if o.known == NULL:
            with gil:
                raise MemoryError()
        o.known_size = n
    reserve(<void**> &o.filled, &o.filled_size, n * sizeof(intp_t))
    reserve(<void**> &o.rec, &o.rec_size, OUTER_FIELDS * n * P * sizeof(float64_t))
    reserve(<void**> &o.psi_end, &o.psi_end_size, P * sizeof(float64_t))
    reserve(<void**> &o.u, &o.u_size, n_quadrature * sizeof(float64_t))
    reserve(<void**> &o.pend_rec, &o.pend_rec_size, PENDING_NODES * sizeof(float64_t*))
    reserve(<void**> &o.pend_w, &o.pend_w_size, PENDING_NODES * sizeof(float64_t))
    reserve(<void**> &o.pend_j, &o.pend_j_size, PENDING_NODES * sizeof(intp_t))
    reserve(<void**> &o.pend_pts, &o.pend_pts_size,
            PENDING_ARRAYS * PENDING_NODES * n_quadrature * sizeof(float64_t))
    o.n_pend = 0
    return 0


cdef void outer_free(Outer* o) noexcept nogil:
    free(o.known)
    free(o.filled)
    free(o.rec)
    free(o.psi_end)
    free(o.u)
    free(o.pend_rec)
    free(o.pend_w)
    free(o.pend_j)
    free(o.pend_pts)
    free(o.groups)
    batch_free(&o.batch)


cdef void _outer_begin(Outer* o, const Hyper* hs, intp_t P,
                       intp_t n_quadrature) noexcept nogil:
    """Start a tree (every flag is 0)."""
    cdef float64_t d_end = _clock_denominator(hs[0].rate, hs[0].lifetime)
    cdef intp_t k
    o.n_filled = 0
    for k in range(P):
        o.psi_end[k] = hs[k].sigma2 / d_end
    for k in range(n_quadrature):
        o.u[k] = (k + 0.5) / n_quadrature


cdef inline float64_t* _record(Outer* o, intp_t P, intp_t j, intp_t depth) noexcept nogil:
    """The record of node ``j`` at ``depth`` on the row's path."""
    return o.rec + OUTER_FIELDS * P * (j if o.memo else depth & 1)


cdef inline bint _known(const Outer* o, intp_t j) noexcept nogil:
    """Whether node ``j``'s record is filled (never without ``memo``: the row fills its path)."""
    return o.memo and o.known[j]


cdef void _outer_end(Outer* o) noexcept nogil:
    """Clear the flags of the tree done (O(nodes filled), not O(node_count))."""
    cdef intp_t i
    for i in range(o.n_filled):
        o.known[o.filled[i]] = 0
    o.n_filled = 0


cdef int predict_rows(MondrianTree tree, const Hyper* hs, intp_t P, const float64_t* X,
                      intp_t n, intp_t x_step, float64_t** msg_means, float64_t** msg_vars,
                      intp_t n_quadrature, float64_t* box, bint plain, Outer* o,
                      float64_t* sums, float64_t* moments, intp_t row_step, intp_t stride,
                      bint squared_mean, const float64_t* boxes=NULL,
                      const int32_t* slots=NULL, const Reading* shorter=NULL) except -1 nogil:
    """One tree's predictive at the ``n`` rows of ``X`` (row ``i`` at ``X + i x_step``) under
    the ``P`` priors ``hs``: row ``i`` adds to ``moments + i row_step`` as
    :func:`_predict_row_grid` says (``stride``, ``squared_mean``), the etas of the rows found
    node by node first when that pays (``_batched``), or, when ``boxes`` holds every node's
    box (node ``j``'s at row ``slots[j]``, or ``j`` if ``slots`` is NULL), by groups of rows
    walked side by side (``_predict_groups``); ``o`` holds the call's scratch. Unless
    ``shorter`` is NULL, the rows are also read as it says, the same bits as a call of their
    own: walked in groups, a row's shorter reading takes the first's path and etas
    (``_shorter_etas``)."""
    cdef intp_t i, k, s, start = 0, stop
    _outer_reserve(o, tree.node_count, P, n_quadrature, n)
    _outer_begin(o, hs, P, n_quadrature)
    o.hint_means = NULL
    if boxes != NULL and not plain and n > 0:
        if shorter != NULL:
            _outer_reserve(shorter.o, tree.node_count, 1, n_quadrature, n)
            _outer_begin(shorter.o, shorter.hs, 1, n_quadrature)
            if P == 1 and shorter.o.memo:
                o.hint_means = shorter.msg_means[0]
                o.hint_vars = shorter.msg_vars[0]
                o.hint_rec = shorter.o.rec
                o.hint_lifetime = shorter.hs[0].lifetime
        _predict_groups(tree, hs, P, X, n, x_step, msg_means, msg_vars, n_quadrature, box, o,
                        sums, moments, row_step, stride, squared_mean, boxes, slots, shorter)
        _outer_end(o)
        if shorter != NULL:
            _outer_end(shorter.o)
        return 0
    if plain or not _batched(tree, n):
        for i in range(n):
            _predict_row_grid(tree, hs, P, X + i * x_step, msg_means, msg_vars, n_quadrature,
                              NULL, 0, box, plain, o, sums, moments + i * row_step, stride,
                              squared_mean, NULL, NULL, -1)
    while start < n and not plain and _batched(tree, n):
        stop = min(n, start + <intp_t>BATCH_ROWS)
        batch_etas(&o.batch, tree, X + start * x_step, stop - start, x_step, hs[0].lifetime)
        for k in range(stop - start):
            # In the order the rows reached their leaves (unless wide): rows of one path one
            # after another, its nodes and records in cache (a row's bits do not depend on it).
            i = start + batch_next(&o.batch, k, tree.n_features < BATCH_LEAF_ORDER_MAX_FEATURES,
                                   &s)
            _predict_row_grid(tree, hs, P, X + i * x_step, msg_means, msg_vars, n_quadrature,
                              &o.batch, s, box, plain, o, sums,
                              moments + i * row_step, stride, squared_mean, NULL, NULL, -1)
        start = stop
    _outer_end(o)
    if shorter != NULL:  # (not grouped: a pass of its own)
        predict_rows(tree, shorter.hs, 1, X, n, x_step, shorter.msg_means, shorter.msg_vars,
                     n_quadrature, box, plain, shorter.o, sums, shorter.moments, row_step, 2,
                     False, boxes, slots)
    return 0


cdef int _predict_groups(MondrianTree tree, const Hyper* hs, intp_t P, const float64_t* X,
                         intp_t n, intp_t x_step, float64_t** msg_means, float64_t** msg_vars,
                         intp_t n_quadrature, float64_t* box, Outer* o, float64_t* sums,
                         float64_t* moments, intp_t row_step, intp_t stride,
                         bint squared_mean, const float64_t* boxes, const int32_t* slots,
                         const Reading* shorter) except -1 nogil:
    """``predict_rows`` of ``n`` rows over every node's box, in groups of ``GROUP_ROWS`` rows
    (core/_group_walk.pxd), three stages a group apart (three groups of scratch in ``o``): a
    group's descents, the previous group's etas (and a request for its rows' messages), the
    walks of the group before it; so what a stage reads was requested a stage or two earlier."""
    cdef intp_t k, step = 0
    cdef GroupRows* groups = group_stages_begin(&o.groups, &o.groups_size)
    cdef GroupRows* walked
    cdef GroupRows* measured
    while group_stage(groups, step, n, &walked, &measured):
        _walk_group(tree, hs, P, X, x_step, msg_means, msg_vars, n_quadrature, box, o, sums,
                    moments, row_step, stride, squared_mean, boxes, slots, shorter, walked)
        if measured.rows > 0:
            group_etas(tree, X, x_step, boxes, slots, measured)
            for k in range(measured.rows):
                _request_messages(msg_means, msg_vars, P, measured.path + k * WALK_DEPTH_MAX,
                                  measured.top[k], measured.length[k])
        group_next(tree, X, x_step, step, n, hs[0].lifetime, boxes, slots, walked)
        step += 1
    return 0


cdef void _walk_group(MondrianTree tree, const Hyper* hs, intp_t P, const float64_t* X,
                      intp_t x_step, float64_t** msg_means, float64_t** msg_vars,
                      intp_t n_quadrature, float64_t* box, Outer* o, float64_t* sums,
                      float64_t* moments, intp_t row_step, intp_t stride, bint squared_mean,
                      const float64_t* boxes, const int32_t* slots, const Reading* shorter,
                      const GroupRows* group) noexcept nogil:
    """The walks of ``group``'s rows (their paths and etas found), then their shorter
    readings (unless ``shorter`` is NULL)."""
    cdef intp_t i, k, r, s
    cdef float64_t short_etas[WALK_DEPTH_MAX]
    for k in range(group.rows):
        r = group.start + k
        _predict_row_grid(tree, hs, P, X + r * x_step, msg_means, msg_vars, n_quadrature,
                          NULL, 0, box, False, o, sums, moments + r * row_step, stride,
                          squared_mean, group.path + k * WALK_DEPTH_MAX,
                          group.etas + k * WALK_DEPTH_MAX, group.top[k])
    for k in range(group.rows if shorter != NULL else 0):
        r = group.start + k
        i = k * WALK_DEPTH_MAX
        s = _shorter_etas(tree, shorter.hs[0].lifetime, X + r * x_step, boxes, slots,
                          group.path + i, group.etas + i, group.length[k], group.top[k],
                          short_etas)
        _predict_row_grid(tree, shorter.hs, 1, X + r * x_step, shorter.msg_means,
                          shorter.msg_vars, n_quadrature, NULL, 0, box, False, shorter.o,
                          sums, shorter.moments + r * row_step, 2, False, group.path + i,
                          short_etas, s)


cdef inline void _request_messages(float64_t** msg_means, float64_t** msg_vars, intp_t P,
                                   const intp_t* path, intp_t top,
                                   intp_t length) noexcept nogil:
    """Ask for the messages of a row's path from ``top`` to its leaf (``length`` nodes), which
    its branch-off terms and its leaf read (a hint, no effect on values)."""
    cdef intp_t i, k
    for i in range(max(top, 0), length):
        for k in range(P):
            MONDRIAN_TREE_PREFETCH(msg_means[k] + path[i])
            MONDRIAN_TREE_PREFETCH(msg_vars[k] + path[i])


cdef inline intp_t _shorter_etas(MondrianTree tree, float64_t lifetime, const float64_t* x,
                                 const float64_t* boxes, const int32_t* slots,
                                 const intp_t* path, const float64_t* etas, intp_t length,
                                 intp_t top, float64_t* short_etas) noexcept nogil:
    """What ``group_etas`` (core/_group_walk.pxd) would give a row at ``lifetime`` (no longer
    than the one it walked at: the row's ``path`` of ``length`` nodes, its ``etas`` from
    ``top``), from that: the path is the same down to the first node that is a leaf at
    ``lifetime``, and its etas from there up to the first 0 are the same distances, those at
    ``top`` or deeper already found (the same bits), any above ``top`` measured now (its
    boxes among ``boxes`` as ``group_box`` finds them). Writes them to ``short_etas`` (indexed by
    depth) and returns the new top (-1: walk it the plain way, as the first walk did)."""
    cdef intp_t leaf = 0, i, D = tree.n_features
    if length == 0:
        return -1
    while not is_leaf_at(tree, path[leaf], lifetime):
        leaf += 1
    i = leaf
    while True:
        if i >= top:
            short_etas[i] = etas[i]
        else:
            short_etas[i] = box_distance(group_box(boxes, slots, D, path[i]), D, x)
        if short_etas[i] == 0.0 or i == 0:
            return i
        i -= 1


cdef inline float64_t _q_var(const float64_t* r) noexcept nogil:
    """Variance of a node's outside message at the node's own time (a record's)."""
    return r[OUT_VAR] + r[OUT_PSI] - r[OUT_PSI_PARENT]


cdef void _outer_fill(MondrianTree tree, const Hyper* hs, intp_t P, float64_t** msg_means,
                      float64_t** msg_vars, Outer* o, intp_t j, intp_t depth,
                      intp_t parent) noexcept nogil:
    """Fill the record of node ``j`` at ``depth`` from its ``parent``'s (filled; -1 at the
    root: the virtual node above it): the same arithmetic whichever row needs it first, so a
    row's bits do not depend on the other rows of the call."""
    cdef float64_t lifetime = hs[0].lifetime, rate = hs[0].rate
    cdef float64_t* r = _record(o, P, j, depth)
    cdef const float64_t* up = _record(o, P, parent if parent >= 0 else j, depth - 1)
    cdef float64_t d_node, d_above, d_sibling, m, v
    cdef intp_t k, sibling
    cdef const Hyper* h
    if hs[0].hierarchical:
        d_node = _clock_denominator(rate, node_time(tree, j, lifetime))
        if parent < 0:
            d_above = _clock_denominator(rate, 0.0)
            for k in range(P):
                r[OUT_MEAN] = hs[k].mean0
                r[OUT_VAR] = 0.0
                r[OUT_PSI_PARENT] = hs[k].sigma2 / d_above
                r += OUTER_FIELDS
        else:
            # The parent's outside message at its own time times its other child's message
            # carried up to the parent's time.
            sibling = tree.nodes[parent].left_child
            if sibling == j:
                sibling = tree.nodes[parent].right_child
            if o.hint_means != NULL and tree.nodes[parent].split_time < o.hint_lifetime:
                # (j is a node of the shorter reading's tree: what it will read when it
                # fills j's record, asked for now; a hint, no effect on values)
                MONDRIAN_TREE_PREFETCH(o.hint_means + sibling)
                MONDRIAN_TREE_PREFETCH(o.hint_vars + sibling)
                MONDRIAN_TREE_PREFETCH(o.hint_rec + OUTER_FIELDS * j)
            d_sibling = _clock_denominator(rate, node_time(tree, sibling, lifetime))
            for k in range(P):
                _product(up[OUT_MEAN], _q_var(up), msg_means[k][sibling],
                         msg_vars[k][sibling] + hs[k].sigma2 / d_sibling - up[OUT_PSI],
                         &r[OUT_MEAN], &r[OUT_VAR])
                r[OUT_PSI_PARENT] = up[OUT_PSI]
                r += OUTER_FIELDS
                up += OUTER_FIELDS
        r = _record(o, P, j, depth)
        for k in range(P):
            r[OUT_PSI] = hs[k].sigma2 / d_node
            r += OUTER_FIELDS
    else:
        for k in range(P):
            h = &hs[k]
            if tree.value[3 * j] > 0.0:
                _leaf_message(tree, j, h, &m, &v)
                _product(h.mean0, h.prior_var, m, v, &r[OUT_MEAN], &r[OUT_VAR])
            elif parent < 0:
                r[OUT_MEAN] = h.mean0
                r[OUT_VAR] = h.prior_var
            else:
                r[OUT_MEAN] = up[OUT_MEAN]
                r[OUT_VAR] = up[OUT_VAR]
            r += OUTER_FIELDS
            up += OUTER_FIELDS
    if o.memo:
        o.known[j] = 1
        o.filled[o.n_filled] = j
        o.n_filled += 1


cdef enum:
    # Branch-off nodes of a row whose terms are found together (_branch_push).
    PENDING_NODES = 32
    # Arrays of PENDING_NODES n_quadrature floats: the arguments of the clocks (a, tau, eta),
    # the clocks' denominators and the 6 node values of mf_vm_terms, then the terms (m, v).
    PENDING_ARRAYS = 12


cdef inline void _branch_push(const Hyper* hs, intp_t P, const float64_t* r,
                              float64_t** msg_means, float64_t** msg_vars, intp_t j,
                              Outer* o, intp_t n_quadrature, float64_t w,
                              float64_t tau_parent, float64_t p, float64_t eta,
                              float64_t* mean_sum, float64_t* second_sum) noexcept nogil:
    """Queue the hierarchical model's predictive of a row branching off above node ``j``
    (record ``r``) at the quadrature's branching times (weight ``w`` each): the arguments of
    its clocks, added to ``mean_sum``, ``second_sum`` by ``_branch_flush`` (at once when the
    queue is full or the records are kept by depth, which the next nodes overwrite)."""
    cdef intp_t q, n_pts = PENDING_NODES * n_quadrature
    cdef float64_t* a = o.pend_pts + o.n_pend * n_quadrature
    for q in range(P):
        # (the node's messages, read when the queue is flushed: a hint, no effect on values)
        MONDRIAN_TREE_PREFETCH(msg_means[q] + j)
        MONDRIAN_TREE_PREFETCH(msg_vars[q] + j)
    for q in range(n_quadrature):
        a[q] = -o.u[q] * p
        a[n_pts + q] = tau_parent
        a[2 * n_pts + q] = eta
    o.pend_rec[o.n_pend] = r
    o.pend_w[o.n_pend] = w
    o.pend_j[o.n_pend] = j
    o.n_pend += 1
    if o.n_pend == PENDING_NODES or not o.memo:
        _branch_flush(hs, P, msg_means, msg_vars, o, n_quadrature, mean_sum, second_sum)


cdef void _branch_flush(const Hyper* hs, intp_t P, float64_t** msg_means, float64_t** msg_vars,
                        Outer* o, intp_t n_quadrature, float64_t* mean_sum,
                        float64_t* second_sum) noexcept nogil:
    """Add the queued nodes' terms (``_branch_push``): every clock at once (``mf_vm_clocks``:
    exp and log1p in vector lanes), then for each prior every point's Gaussian product
    (``mf_vm_terms``, in vector lanes), then the sums node after node, point after point (the
    order of the points along the row's path)."""
    cdef intp_t n_pts = PENDING_NODES * n_quadrature, n = o.n_pend * n_quadrature
    cdef intp_t i, j, q, k
    cdef float64_t* d = o.pend_pts + 3 * n_pts
    cdef float64_t* m = o.pend_pts + 10 * n_pts
    cdef float64_t* v = o.pend_pts + 11 * n_pts
    cdef float64_t* at
    cdef const float64_t* r
    cdef float64_t w, mean, second
    if o.n_pend == 0:
        return
    mf_vm_clocks(n, hs[0].rate, o.pend_pts, o.pend_pts + n_pts, o.pend_pts + 2 * n_pts, d)
    for k in range(P):
        # (each node's values once per point: the points in vector lanes)
        at = d + n
        for i in range(o.n_pend):
            r = o.pend_rec[i] + OUTER_FIELDS * k
            j = o.pend_j[i]
            for q in range(n_quadrature):
                at[q] = r[OUT_MEAN]
                at[n + q] = r[OUT_VAR]
                at[2 * n + q] = r[OUT_PSI_PARENT]
                at[3 * n + q] = r[OUT_PSI]
                at[4 * n + q] = msg_means[k][j]
                at[5 * n + q] = msg_vars[k][j]
            at += n_quadrature
        mf_vm_terms(n, hs[k].sigma2, o.psi_end[k], hs[k].noise, d, m, v)
        # (in registers: the sums in memory would chain a store and a load per point)
        mean = mean_sum[k]
        second = second_sum[k]
        for i in range(o.n_pend):
            w = o.pend_w[i]
            for q in range(i * n_quadrature, (i + 1) * n_quadrature):
                mean += w * m[q]
                second += w * (v[q] + m[q] * m[q])
        mean_sum[k] = mean
        second_sum[k] = second
    o.n_pend = 0


cdef void _predict_row_grid(MondrianTree tree, const Hyper* hs, intp_t P, const float64_t* x,
                            float64_t** msg_means, float64_t** msg_vars, intp_t n_quadrature,
                            const BatchEtas* batch, intp_t row, float64_t* box, bint plain,
                            Outer* o,
                            float64_t* sums, float64_t* moments, intp_t stride,
                            bint squared_mean, const intp_t* given_path,
                            const float64_t* given_etas, intp_t given_top) noexcept nogil:
    """The tree's predictive at ``x`` under the ``P`` priors ``hs``, which share their rate,
    prior mean, model and lifetime: one walk and one set of clock exponentials for all of
    them, then for each prior its own operations, in the same order whatever ``P`` (so one call
    per prior gives the same bits). Prior ``k`` adds its predictive mean and second moment (and
    squared mean when ``squared_mean``) to ``moments[k stride :]``. ``o``: the node records of
    this tree and call (``_outer_begin``); ``sums``: 2 P floats of scratch. Eta comes from the
    leaf upward: row ``row`` of ``batch`` (``batch_etas``) unless NULL, else ``walk_etas``
    (``box``: 2 D floats), unless ``plain`` (every node's, on the way down), or if
    ``given_path`` is not NULL the whole path (root first), etas and top that ``group_etas``
    found (top -1: the plain way).

    The walk starts where the leaf-first pass stopped (``top``): above it eta is 0, so x
    cannot branch off there and those nodes only pass their records down, read from ``o``."""
    cdef intp_t j, k, i, top = 0, parent, above = 0
    cdef intp_t path_rows[WALK_DEPTH_MAX]
    cdef float64_t eta_rows[WALK_DEPTH_MAX]
    cdef intp_t* path = path_rows
    cdef float64_t* etas = eta_rows
    cdef float64_t weight, m, v
    cdef float64_t* mean_sum = sums
    cdef float64_t* second_sum = sums + P
    cdef const float64_t* r
    cdef const Hyper* h
    cdef bint hierarchical = hs[0].hierarchical
    cdef float64_t lifetime = hs[0].lifetime
    cdef WalkStep step
    for k in range(P):
        mean_sum[k] = 0.0
        second_sum[k] = 0.0
    if plain:
        top = -1
    elif given_path != NULL:  # (the whole path: above stays 0, nothing to chase)
        path = <intp_t*> given_path
        etas = <float64_t*> given_etas
        top = given_top
    elif batch != NULL:
        # (the path from top - 1 down; above, its nodes are found up to a known record)
        top = batch_row(batch, tree, row, x, lifetime, box, path, etas, False)
        above = top - 1
    elif walk_etas(tree, x, lifetime, NULL, box, path, etas, &top) == 0:
        top = -1
    if top >= 0:
        # The records of the path down to top: the deepest known one, then down from it.
        i = top
        while i >= 0 and not _known(o, path[i]):
            i -= 1
            if 0 <= i < above:
                path[i] = tree.nodes[path[i + 1]].parent
                above = i
        for i in range(i + 1, top + 1):
            _outer_fill(tree, hs, P, msg_means, msg_vars, o, path[i], i,
                        path[i - 1] if i > 0 else -1)
        walk_start_path(&step, tree, x, lifetime, path, etas, top, top)
    else:
        walk_start(&step, tree, x, lifetime)
        if not _known(o, 0):
            _outer_fill(tree, hs, P, msg_means, msg_vars, o, 0, 0, -1)
    while True:
        j = step.node
        r = _record(o, P, j, step.depth)
        if step.p > 0.0:
            weight = step.reach * step.p
            if weight > 0.0:
                if hierarchical:
                    _branch_push(hs, P, r, msg_means, msg_vars, j, o, n_quadrature,
                                 weight / n_quadrature, step.tau_parent, step.p, step.eta,
                                 mean_sum, second_sum)
                else:
                    for k in range(P):
                        h = &hs[k]
                        mean_sum[k] += weight * h.mean0
                        second_sum[k] += weight * (h.prior_var + h.noise + h.mean0 * h.mean0)
            if step.survival <= 0.0:
                break
        if step.is_leaf:
            _branch_flush(hs, P, msg_means, msg_vars, o, n_quadrature, mean_sum, second_sum)
            for k in range(P):
                h = &hs[k]
                if hierarchical:
                    _product(r[OUT_MEAN], _q_var(r), msg_means[k][j], msg_vars[k][j], &m, &v)
                    v += h.noise
                else:
                    m = r[OUT_MEAN]
                    v = r[OUT_VAR] + h.noise
                mean_sum[k] += step.survival * m
                second_sum[k] += step.survival * (v + m * m)
                r += OUTER_FIELDS
            break
        parent = j
        walk_next(&step, tree, x, lifetime)
        if not _known(o, step.node):
            _outer_fill(tree, hs, P, msg_means, msg_vars, o, step.node, step.depth, parent)
    _branch_flush(hs, P, msg_means, msg_vars, o, n_quadrature, mean_sum, second_sum)
    for k in range(P):
        moments[k * stride] += mean_sum[k]
        moments[k * stride + 1] += second_sum[k]
        if squared_mean:
            moments[k * stride + 2] += mean_sum[k] * mean_sum[k]
