"""Regression posterior of a Mondrian tree (section 6).

Hierarchical Gaussian model (Lakshminarayanan, Roy & Teh, 2016): every node has a mean
``mu_j``, ``mu_j | mu_parent ~ N(mu_parent, psi(tau_j) - psi(tau_parent))`` with the variance
clock ``psi(t) = sigma2 * sigmoid(rate * t)``, a virtual node above the root fixed at ``mean0``,
and ``y ~ N(mu_leaf, noise)``. Exact Gaussian belief propagation gives the node posteriors;
the predictive integrates over where a test point branches off the tree.

The independent-leaf model (section 6a) gives every leaf ``mu ~ N(mean0, prior_var)``; a test
point that branches off lands in a fresh cell and gets the prior. A leaf whose stored points
carry no label (the validation points of a lifetime path) backs off to the posterior of its
deepest labelled ancestor.

A tree's statistics rows are ``(1, y, y**2)`` (targets already standardised by the estimator).
The count is a statistic of its own because a tree may also hold unlabelled points (the
validation points of a lifetime path); a node without labels sends no message (infinite
variance).
Upward messages are kept per node in arrays owned by the estimator, so prediction is
O(depth) per point once they are computed (O(nodes) per tree). A prediction call also keeps,
per tree, what a node contributes whatever the test point (its outside message, the variance
clock at its time), filled on first use: below the root, a row then computes only on the
nodes where it may branch off (eta > 0) and at its leaf.
"""

cimport cython
from libc.math cimport INFINITY, exp, log, log1p, M_PI
from libc.stdlib cimport calloc, free
from libc.string cimport memset

from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.core._walk cimport (
    WALK_DEPTH_MAX,
    WalkStep,
    is_leaf_at,
    node_time,
    read_lifetime,
    reserve,
    walk_etas,
    walk_next,
    walk_start_boxes,
    walk_start_path,
)

import numpy as np

cdef inline float64_t _clock_denominator(float64_t rate, float64_t t) noexcept nogil:
    """``1 + exp(-rate t)`` (1 at ``t = inf``): ``psi(t) = sigma2 / _clock_denominator(rate, t)``,
    so every prior of one rate shares it."""
    if t == INFINITY:
        return 1.0
    return 1.0 + exp(-rate * t)


cdef inline float64_t _psi(const Hyper* h, float64_t t) noexcept nogil:
    return h.sigma2 / _clock_denominator(h.rate, t)


cdef inline float64_t _log_normal(float64_t x, float64_t mean, float64_t var) noexcept nogil:
    return -0.5 * (log(2.0 * M_PI * var) + (x - mean) * (x - mean) / var)


cdef inline void _product(float64_t ma, float64_t va, float64_t mb, float64_t vb,
                          float64_t* m, float64_t* v) noexcept nogil:
    """Mean and variance of the normalised product of two Gaussian densities in one variable.

    An infinite variance is a flat factor (a message from a node without labels).
    """
    cdef float64_t total = va + vb
    if va == INFINITY or vb == INFINITY:
        m[0] = mb if va == INFINITY else ma
        v[0] = vb if va == INFINITY else va
        return
    v[0] = va * vb / total
    m[0] = (ma * vb + mb * va) / total


cdef void _leaf_message(MondrianTree tree, intp_t j, const Hyper* h,
                        float64_t* mean, float64_t* var) noexcept nogil:
    """Likelihood message of a leaf's data about its mean (flat without labels)."""
    cdef float64_t n = tree.value[3 * j]
    if n <= 0.0:
        mean[0] = 0.0
        var[0] = INFINITY
        return
    mean[0] = tree.value[3 * j + 1] / n
    var[0] = h.noise / n


cdef float64_t _leaf_log_normaliser(MondrianTree tree, intp_t j, const Hyper* h) noexcept nogil:
    """Log of ``C`` in ``prod_i N(y_i; mu, noise) = C N(ybar; mu, noise / n)`` (0 without
    labels): the leaf's share of the log marginal likelihood beyond its message."""
    cdef float64_t n = tree.value[3 * j]
    cdef float64_t sy = tree.value[3 * j + 1]
    cdef float64_t scatter
    if n <= 0.0:
        return 0.0
    scatter = tree.value[3 * j + 2] - sy * sy / n
    if scatter < 0.0:
        scatter = 0.0
    return (-0.5 * (n - 1.0) * log(2.0 * M_PI * h.noise) - 0.5 * log(n)
            - 0.5 * scatter / h.noise)


cdef intp_t _pruned_preorder(MondrianTree tree, float64_t lifetime,
                             intp_t* order) noexcept nogil:
    """Write the nodes of the tree pruned at ``lifetime`` to ``order`` in pre-order (children
    after parents; the output array is the stack's storage); return their number."""
    cdef intp_t top = 1, count = 0, j
    order[0] = 0
    while count < top:
        j = order[count]
        count += 1
        if not is_leaf_at(tree, j, lifetime):
            order[top] = tree.nodes[j].left_child
            order[top + 1] = tree.nodes[j].right_child
            top += 2
    return count


cdef void node_messages(MondrianTree tree, intp_t j, const Hyper* hs, intp_t P,
                        float64_t* msg_mean, float64_t* msg_var, intp_t stride,
                        float64_t* log_ml) noexcept nogil:
    """The likelihood messages of node ``j`` under the ``P`` priors ``hs`` (layout of
    :func:`_upward`) from its statistics (a leaf of the pruned tree) or from its children's
    messages, which must be current (independent model: internal nodes are left as they
    are); unless ``log_ml`` is NULL, ``log_ml[k]`` gains the node's share of the log marginal
    likelihood under prior ``k``."""
    cdef float64_t lifetime = hs[0].lifetime, rate = hs[0].rate
    cdef intp_t k, left, right
    cdef float64_t va, vb, d_left, d_right, d_node
    cdef float64_t* mm
    cdef float64_t* mv
    if is_leaf_at(tree, j, lifetime):
        for k in range(P):
            _leaf_message(tree, j, &hs[k], &msg_mean[k * stride + j], &msg_var[k * stride + j])
            if log_ml != NULL:
                log_ml[k] += _leaf_log_normaliser(tree, j, &hs[k])
        return
    if not hs[0].hierarchical:
        return
    left = tree.nodes[j].left_child
    right = tree.nodes[j].right_child
    d_left = _clock_denominator(rate, node_time(tree, left, lifetime))
    d_right = _clock_denominator(rate, node_time(tree, right, lifetime))
    d_node = _clock_denominator(rate, tree.nodes[j].split_time)
    for k in range(P):
        mm = msg_mean + k * stride
        mv = msg_var + k * stride
        va = mv[left] + hs[k].sigma2 / d_left - hs[k].sigma2 / d_node
        vb = mv[right] + hs[k].sigma2 / d_right - hs[k].sigma2 / d_node
        if log_ml != NULL and va < INFINITY and vb < INFINITY:
            log_ml[k] += _log_normal(mm[left], mm[right], va + vb)
        _product(mm[left], va, mm[right], vb, &mm[j], &mv[j])


cdef void _upward(MondrianTree tree, const Hyper* hs, intp_t P, intp_t* order,
                  float64_t* msg_mean, float64_t* msg_var, intp_t stride,
                  float64_t* log_ml) noexcept nogil:
    """Fill the likelihood messages L_j of every node of the pruned tree under the ``P`` priors
    ``hs``, which share their rate, lifetime and model: prior ``k``'s go to
    ``msg_mean[k stride + j]`` and ``msg_var[k stride + j]``, with one set of clock
    exponentials for all the priors and, per prior, the same operations whatever ``P`` (one
    call per prior gives the same bits).

    ``order`` receives the nodes in pre-order. Unless ``log_ml`` is NULL, ``log_ml[k]`` gets
    the log marginal likelihood of all the targets under prior ``k``.
    """
    cdef float64_t lifetime = hs[0].lifetime
    cdef bint hierarchical = hs[0].hierarchical
    cdef intp_t count = _pruned_preorder(tree, lifetime, order), j, c, k
    cdef float64_t va
    cdef float64_t* mm
    cdef float64_t* mv
    if log_ml != NULL:
        for k in range(P):
            log_ml[k] = 0.0
    for c in range(count - 1, -1, -1):
        node_messages(tree, order[c], hs, P, msg_mean, msg_var, stride, log_ml)
    if log_ml == NULL:
        return
    for k in range(P):
        mm = msg_mean + k * stride
        mv = msg_var + k * stride
        if hierarchical:
            # The root's edge from the virtual node at mean0, psi(0) above it.
            va = mv[0] + _psi(&hs[k], node_time(tree, 0, lifetime)) - _psi(&hs[k], 0.0)
            if va < INFINITY:
                log_ml[k] += _log_normal(mm[0], hs[k].mean0, va)
        else:
            for c in range(count):
                j = order[c]
                if is_leaf_at(tree, j, lifetime) and mv[j] < INFINITY:
                    log_ml[k] += _log_normal(mm[j], hs[k].mean0, mv[j] + hs[k].prior_var)


@cython.final
cdef class GaussianPrior:
    """Hyperparameters of the regression trees' Gaussian model, in standardised target units.

    Built once by the regressor (its empirical-Bayes choice) and read by every kernel of this
    module; typed, immutable and picklable.

    Parameters
    ----------
    mean0 : float
        Value of the virtual node above the root (prior mean of the leaf means).
    noise : float
        Observation noise variance, > 0.
    prior_var : float
        Prior variance of a leaf mean in the independent-leaf model, > 0.
    sigma2 : float
        Scale of the variance clock ``psi(t) = sigma2 * sigmoid(rate * t)`` of the
        hierarchical model, >= 0 (the leaf marginal prior variance is ``sigma2 / 2``).
    rate : float
        Rate of the sigmoid in ``psi``, >= 0.
    hierarchical : bool
        Hierarchical prior (True) or independent leaves (False).
    """

    def __init__(self, float64_t mean0, float64_t noise, float64_t prior_var,
                 float64_t sigma2, float64_t rate, bint hierarchical):
        if not -INFINITY < mean0 < INFINITY:
            raise ValueError(f"mean0 must be finite, got {mean0}")
        if not 0.0 < noise < INFINITY:
            raise ValueError(f"noise must be positive and finite, got {noise}")
        if not 0.0 < prior_var < INFINITY:
            raise ValueError(f"prior_var must be positive and finite, got {prior_var}")
        if not 0.0 <= sigma2 < INFINITY:
            raise ValueError(f"sigma2 must be non-negative and finite, got {sigma2}")
        if not 0.0 <= rate < INFINITY:
            raise ValueError(f"rate must be non-negative and finite, got {rate}")
        self.mean0 = mean0
        self.noise = noise
        self.prior_var = prior_var
        self.sigma2 = sigma2
        self.rate = rate
        self.hierarchical = hierarchical

    cdef Hyper at(self, float64_t lifetime):
        """The C struct read by the kernels, for a tree read at ``lifetime``."""
        cdef Hyper h
        h.mean0 = self.mean0
        h.sigma2 = self.sigma2
        h.rate = self.rate
        h.noise = self.noise
        h.prior_var = self.prior_var
        h.hierarchical = self.hierarchical
        h.lifetime = lifetime
        return h

    def __reduce__(self):
        return (GaussianPrior, (self.mean0, self.noise, self.prior_var, self.sigma2,
                                self.rate, self.hierarchical))

    def __eq__(self, other):
        if not isinstance(other, GaussianPrior):
            return NotImplemented
        return self.__reduce__()[1] == other.__reduce__()[1]

    def __hash__(self):
        return hash(self.__reduce__()[1])

    def __repr__(self):
        return (f"GaussianPrior(mean0={self.mean0!r}, noise={self.noise!r}, "
                f"prior_var={self.prior_var!r}, sigma2={self.sigma2!r}, rate={self.rate!r}, "
                f"hierarchical={bool(self.hierarchical)!r})")


def upward_messages(MondrianTree tree, GaussianPrior params not None, lifetime=None):
    """Likelihood messages of every node and the log marginal likelihood of the targets.

    The one-prior case of :func:`upward_messages_grid` (the same recursion, the same bits)
    plus the log marginal likelihood.

    Parameters
    ----------
    tree : MondrianTree
        A tree whose statistics rows are ``(1, y, y**2)``.
    params : GaussianPrior
        Hyperparameters of the model.
    lifetime : float, default=None
        Read the tree pruned at this lifetime.

    Returns
    -------
    msg_mean, msg_var : ndarray of shape (node_count,)
    log_ml : float
    """
    if tree.value_stride != 3:
        raise ValueError("regression trees carry (1, y, y**2) statistics")
    cdef float64_t lam = read_lifetime(tree, lifetime)
    cdef Hyper h = params.at(lam)
    msg_mean = np.zeros(tree.node_count)
    msg_var = np.ones(tree.node_count)
    order = np.empty(tree.node_count, dtype=np.intp)
    cdef float64_t[::1] mm = msg_mean
    cdef float64_t[::1] mv = msg_var
    cdef intp_t[::1] od = order
    cdef float64_t log_ml
    with nogil:
        _upward(tree, &h, 1, &od[0], &mm[0], &mv[0], 0, &log_ml)
    return msg_mean, msg_var, log_ml


def predict_moments_trees(list trees, list messages, const float64_t[:, ::1] X,
                          float64_t[:, ::1] out, GaussianPrior params not None,
                          intp_t n_quadrature=4,
                          lifetime=None, bint plain_walk=False):
    """Add every tree's predictive mean and second moment at each row of ``X`` to ``out``.

    Parameters
    ----------
    trees : list of MondrianTree
    messages : list of (msg_mean, msg_var) pairs
        From :func:`upward_messages`, one per tree, computed at the same lifetime.
    X : ndarray of shape (n_samples, n_features)
        Test points in the scaled feature space.
    out : ndarray of shape (n_samples, 2) or (n_samples, 3)
        Accumulates ``E[y]`` and ``E[y**2]`` summed over trees (and, in a third column, the
        squares of the trees' means ``E[y]**2``: their spread is the between-tree part of the
        forest's variance).
    params : GaussianPrior
        Hyperparameters of the model.
    n_quadrature : int, default=4
        Points of the quadrature over the branching time.
    lifetime : float, default=None
        Read the trees pruned at this lifetime.
    plain_walk : bool, default=False
        Compute eta at every node of each path on the way down (the reference walk of the
        tests) instead of from the leaf upward; the same bits either way.
    """
    cdef MondrianTree tree
    cdef Hyper h
    cdef intp_t n = X.shape[0], m
    cdef const float64_t[::1] mm
    cdef const float64_t[::1] mv
    cdef bint squared_mean
    cdef float64_t* box = NULL
    cdef size_t box_size = 0
    cdef const float64_t* rows = &X[0, 0] if n > 0 else NULL
    cdef Outer o
    cdef float64_t sums[2]
    cdef float64_t* means[1]
    cdef float64_t* variances[1]
    memset(&o, 0, sizeof(Outer))
    if len(trees) != len(messages):
        raise ValueError("one pair of messages per tree is needed")
    if n_quadrature < 1:
        raise ValueError("n_quadrature must be >= 1")
    if out.shape[1] not in (2, 3) or out.shape[0] != n:
        raise ValueError(f"out must have shape ({n}, 2) or ({n}, 3)")
    squared_mean = out.shape[1] == 3
    cdef float64_t* moments = &out[0, 0] if n > 0 else NULL
    try:
        for m in range(len(trees)):
            tree = trees[m]
            mm, mv = messages[m]
            if mm.shape[0] != tree.node_count or mv.shape[0] != tree.node_count:
                raise ValueError("stale messages: the tree changed since they were computed")
            h = params.at(read_lifetime(tree, lifetime))
            means[0] = <float64_t*> &mm[0]
            variances[0] = <float64_t*> &mv[0]
            with nogil:
                reserve(<void**> &box, &box_size, 2 * tree.n_features * sizeof(float64_t))
                _predict_rows(tree, &h, 1, rows, n, X.shape[1], means, variances,
                              n_quadrature, box, plain_walk, &o, sums, moments,
                              out.shape[1], 0, squared_mean)
    finally:
        _outer_free(&o)
        free(box)


def node_posteriors(MondrianTree tree, GaussianPrior params not None, lifetime=None):
    """Posterior mean and variance of every node mean (exact belief propagation).

    Parameters
    ----------
    tree : MondrianTree
    params : GaussianPrior
        Hyperparameters of the model.
    lifetime : float, default=None
        Read the tree pruned at this lifetime. Nodes below the pruned leaves get NaN.

    Returns
    -------
    mean, var : ndarray of shape (node_count,)
    """
    msg_mean, msg_var, _ = upward_messages(tree, params, lifetime)
    cdef float64_t lam = read_lifetime(tree, lifetime)
    cdef Hyper h = params.at(lam)
    post_mean = np.full(tree.node_count, np.nan)
    post_var = np.full(tree.node_count, np.nan)
    cav_mean = np.empty(tree.node_count)
    cav_var = np.empty(tree.node_count)
    cdef float64_t[::1] mm = msg_mean, mv = msg_var, pm = post_mean, pv = post_var
    cdef float64_t[::1] cm = cav_mean, cv = cav_var
    cdef intp_t top = 1, j, child, sibling, side
    cdef float64_t tau, q_var
    stack = np.empty(tree.node_count, dtype=np.intp)
    cdef intp_t[::1] st = stack
    parent_time = np.zeros(tree.node_count)
    cdef float64_t[::1] pt = parent_time
    st[0] = 0
    cm[0] = h.mean0
    cv[0] = 0.0
    with nogil:
        while top > 0:
            top -= 1
            j = st[top]
            tau = node_time(tree, j, lam)
            if not h.hierarchical:
                if is_leaf_at(tree, j, lam):
                    _product(h.mean0, h.prior_var, mm[j], mv[j], &pm[j], &pv[j])
                else:
                    st[top] = tree.nodes[j].left_child
                    st[top + 1] = tree.nodes[j].right_child
                    top += 2
                continue
            q_var = cv[j] + _psi(&h, tau) - _psi(&h, pt[j])
            _product(cm[j], q_var, mm[j], mv[j], &pm[j], &pv[j])
            if is_leaf_at(tree, j, lam):
                continue
            for side in range(2):
                child = tree.nodes[j].left_child if side == 0 else tree.nodes[j].right_child
                sibling = tree.nodes[j].right_child if side == 0 else tree.nodes[j].left_child
                _product(cm[j], q_var, mm[sibling],
                         mv[sibling] + _psi(&h, node_time(tree, sibling, lam)) - _psi(&h, tau),
                         &cm[child], &cv[child])
                pt[child] = tau
                st[top] = child
                top += 1
    return post_mean, post_var


# ---------------------------------------------------------------------- prediction kernel

cdef struct Outer:
    # What the predictive of a tree needs at a node besides the test point's walk, for the P
    # priors of a call: the same for every row, so found once per node per call (lazily, on the
    # paths of the rows) instead of once per row on every node of its path. A call of one row
    # keeps (``memo`` False) only the records of the node and its parent, in two slots by depth.
    bint memo              # records by node (many rows) or by depth parity (one row)
    unsigned char* known   # node_count flags; all 0 between trees (memo)
    intp_t* filled         # the nodes flagged so far (to clear them for the next tree)
    intp_t n_filled
    float64_t* rec         # slot s, prior k: the OUTER_FIELDS floats at rec[OUTER_FIELDS (s P + k)]
    float64_t* psi_end     # P floats: psi at the lifetime (a branch-off node's leaf time)
    float64_t* u           # n_quadrature floats: the quadrature's points in (0, 1)
    float64_t* boxes       # every box of a lean tree (_every_box), and its queue
    intp_t* queue
    size_t known_size, filled_size, rec_size, psi_end_size, u_size, boxes_size, queue_size


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


cdef enum:
    # A call with at least one row per EVERY_BOX_NODES nodes of a lean tree builds every box
    # once (MondrianTree._all_boxes, O(nodes D), in the call's scratch); the rows then read a
    # few each. Fewer rows grow the boxes they need from the stored points (walk_etas). On
    # kin8nm (14745 nodes, D = 8, 100 trees) the two cost the same CPU time near 400 rows.
    EVERY_BOX_NODES = 32


cdef inline bint _every_box(MondrianTree tree, intp_t n_rows) noexcept nogil:
    """Whether a call predicting ``n_rows`` rows builds every box of ``tree`` first (the same
    bits either way)."""
    return tree.box_min_samples > 0 and n_rows * EVERY_BOX_NODES >= tree.node_count


cdef int _outer_reserve(Outer* o, intp_t node_count, intp_t P, intp_t n_quadrature,
                        intp_t n_rows) except -1 nogil:
    """Size ``o`` for a tree of ``node_count`` nodes and a call of ``n_rows`` rows (``o``
    zeroed before its first use; ``_outer_free`` when done)."""
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
    return 0


cdef void _outer_free(Outer* o) noexcept nogil:
    free(o.known)
    free(o.filled)
    free(o.rec)
    free(o.psi_end)
    free(o.u)
    free(o.boxes)
    free(o.queue)


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


cdef int _predict_rows(MondrianTree tree, const Hyper* hs, intp_t P, const float64_t* X,
                       intp_t n, intp_t x_step, float64_t** msg_means, float64_t** msg_vars,
                       intp_t n_quadrature, float64_t* box, bint plain, Outer* o,
                       float64_t* sums, float64_t* moments, intp_t row_step, intp_t stride,
                       bint squared_mean) except -1 nogil:
    """One tree's predictive at the ``n`` rows of ``X`` (row ``i`` at ``X + i x_step``) under
    the ``P`` priors ``hs``: row ``i`` adds to ``moments + i row_step`` as
    :func:`_predict_row_grid` says (``stride``, ``squared_mean``), every box of the tree built
    first when that pays (``_every_box``); ``o`` holds the call's scratch."""
    cdef intp_t i
    cdef const float64_t* boxes = NULL
    _outer_reserve(o, tree.node_count, P, n_quadrature, n)
    if _every_box(tree, n):
        reserve(<void**> &o.boxes, &o.boxes_size,
                2 * tree.node_count * tree.n_features * sizeof(float64_t))
        reserve(<void**> &o.queue, &o.queue_size, tree.node_count * sizeof(intp_t))
        tree._all_boxes(o.boxes, o.queue)
        boxes = o.boxes
    _outer_begin(o, hs, P, n_quadrature)
    for i in range(n):
        _predict_row_grid(tree, hs, P, X + i * x_step, msg_means, msg_vars, n_quadrature,
                          boxes, box, plain, o, sums, moments + i * row_step, stride,
                          squared_mean)
    _outer_end(o)
    return 0


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


cdef void _predict_row_grid(MondrianTree tree, const Hyper* hs, intp_t P, const float64_t* x,
                            float64_t** msg_means, float64_t** msg_vars, intp_t n_quadrature,
                            const float64_t* boxes, float64_t* box, bint plain, Outer* o,
                            float64_t* sums, float64_t* moments, intp_t stride,
                            bint squared_mean) noexcept nogil:
    """The tree's predictive at ``x`` under the ``P`` priors ``hs``, which share their rate,
    prior mean, model and lifetime: one walk and one set of clock exponentials for all of
    them, then for each prior its own operations, in the same order whatever ``P`` (so one call
    per prior gives the same bits). Prior ``k`` adds its predictive mean and second moment (and
    squared mean when ``squared_mean``) to ``moments[k stride :]``. ``o``: the node records of
    this tree and call (``_outer_begin``); ``sums``: 2 P floats of scratch. Eta comes from the
    leaf upward (``walk_etas``, with ``boxes``, every node's or NULL, and ``box``, 2 D floats)
    unless ``plain`` (every node's, on the way down).

    The walk starts where the leaf-first pass stopped (``top``): above it eta is 0, so x
    cannot branch off there and those nodes only pass their records down, read from ``o``."""
    cdef intp_t j, q, k, i, top = 0, depth = 0, parent
    cdef intp_t path[WALK_DEPTH_MAX]
    cdef float64_t etas[WALK_DEPTH_MAX]
    cdef float64_t weight, w, t, m, v, a, b, psi_t, d_t
    cdef float64_t* mean_sum = sums
    cdef float64_t* second_sum = sums + P
    cdef const float64_t* r
    cdef const Hyper* h
    cdef bint hierarchical = hs[0].hierarchical
    cdef float64_t rate = hs[0].rate, lifetime = hs[0].lifetime
    cdef WalkStep step
    for k in range(P):
        mean_sum[k] = 0.0
        second_sum[k] = 0.0
    if not plain:
        depth = walk_etas(tree, x, lifetime, boxes, box, path, etas, &top)
    if depth > 0:
        # The records of the path down to top: the deepest known one, then down from it.
        i = top
        while i >= 0 and not _known(o, path[i]):
            i -= 1
        for i in range(i + 1, top + 1):
            _outer_fill(tree, hs, P, msg_means, msg_vars, o, path[i], i,
                        path[i - 1] if i > 0 else -1)
        walk_start_path(&step, tree, x, lifetime, path, etas, top, top)
    else:
        walk_start_boxes(&step, tree, x, lifetime, boxes)
        if not _known(o, 0):
            _outer_fill(tree, hs, P, msg_means, msg_vars, o, 0, 0, -1)
    while True:
        j = step.node
        r = _record(o, P, j, step.depth)
        if step.p > 0.0:
            weight = step.reach * step.p
            if weight > 0.0:
                if hierarchical:
                    w = weight / n_quadrature
                    for q in range(n_quadrature):
                        t = step.tau_parent - log1p(-o.u[q] * step.p) / step.eta
                        d_t = _clock_denominator(rate, t)
                        for k in range(P):
                            psi_t = hs[k].sigma2 / d_t
                            a = psi_t - r[OUTER_FIELDS * k + OUT_PSI_PARENT]
                            b = r[OUTER_FIELDS * k + OUT_PSI] - psi_t
                            _product(r[OUTER_FIELDS * k + OUT_MEAN],
                                     r[OUTER_FIELDS * k + OUT_VAR] + a, msg_means[k][j],
                                     msg_vars[k][j] + b, &m, &v)
                            v += o.psi_end[k] - psi_t + hs[k].noise
                            mean_sum[k] += w * m
                            second_sum[k] += w * (v + m * m)
                else:
                    for k in range(P):
                        h = &hs[k]
                        mean_sum[k] += weight * h.mean0
                        second_sum[k] += weight * (h.prior_var + h.noise + h.mean0 * h.mean0)
            if step.survival <= 0.0:
                break
        if step.is_leaf:
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
    for k in range(P):
        moments[k * stride] += mean_sum[k]
        moments[k * stride + 1] += second_sum[k]
        if squared_mean:
            moments[k * stride + 2] += mean_sum[k] * mean_sum[k]


def predict_moments_grid(list trees, list messages, const float64_t[:, ::1] X,
                         float64_t[:, :, ::1] out, list params, intp_t n_quadrature=4):
    """:func:`predict_moments_trees` (three columns) at several priors of one rate in one pass.

    The held-out choice of the regressor scores a grid of noise shares at each rate; the
    walk of a row down a tree (its boxes, branch-off probabilities) and the variance clock's
    exponentials depend only on the tree and the rate, so they are computed once for every
    prior of the grid. ``out[k]`` gets exactly (bit for bit) what
    ``predict_moments_trees(trees, messages[k], X, out[k], params[k], n_quadrature)`` adds.

    Parameters
    ----------
    trees : list of MondrianTree
    messages : list of lists of (msg_mean, msg_var) pairs
        ``messages[k]``: from :func:`upward_messages` at ``params[k]``, one pair per tree.
    X : ndarray of shape (n_samples, n_features)
        Test points in the scaled feature space.
    out : ndarray of shape (len(params), n_samples, 3)
        Accumulates, per prior, ``E[y]``, ``E[y**2]`` and ``E[y]**2`` summed over trees.
    params : list of GaussianPrior
        Priors sharing ``rate``, ``mean0`` and ``hierarchical``.
    n_quadrature : int, default=4
        Points of the quadrature over the branching time.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import MondrianForestRegressor
    >>> from mondrian.forest._gaussian import GaussianPrior, predict_moments_grid
    >>> from mondrian.forest._gaussian import predict_moments_trees, upward_messages
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((60, 2))
    >>> model = MondrianForestRegressor(n_estimators=3, random_state=0).fit(X, X[:, 0])
    >>> priors = [GaussianPrior(0.0, s, 1.0, 2.0, 1.0, True) for s in (0.1, 0.5)]
    >>> msgs = [[upward_messages(t, p)[:2] for t in model._trees] for p in priors]
    >>> Xs = model._scaler.transform(X[:5])
    >>> grid = np.zeros((2, 5, 3))
    >>> predict_moments_grid(model._trees, msgs, Xs, grid, priors)
    >>> one = np.zeros((5, 3))
    >>> predict_moments_trees(model._trees, msgs[1], Xs, one, priors[1])
    >>> bool(np.array_equal(grid[1], one))
    True
    """
    cdef MondrianTree tree
    cdef intp_t n = X.shape[0], P = len(params), m, k, side
    cdef float64_t lam
    cdef const float64_t[::1] view
    cdef const float64_t* rows = &X[0, 0] if n > 0 else NULL
    cdef GaussianPrior prior
    if P == 0:
        return
    if n_quadrature < 1:
        raise ValueError("n_quadrature must be >= 1")
    if len(messages) != P:
        raise ValueError("one list of messages per prior is needed")
    if out.shape[0] != P or out.shape[1] != n or out.shape[2] != 3:
        raise ValueError(f"out must have shape ({P}, {n}, 3)")
    first = params[0]
    for prior in params:
        if (prior.rate != first.rate or prior.mean0 != first.mean0
                or prior.hierarchical != first.hierarchical):
            raise ValueError("the priors of one grid call share rate, mean0 and hierarchical")
    for k in range(P):
        if len(messages[k]) != len(trees):
            raise ValueError("one pair of messages per tree is needed")
    hs_arr = np.empty(P * sizeof(Hyper), dtype=np.uint8)
    mean_ptrs = np.empty(P, dtype=np.uintp)
    var_ptrs = np.empty(P, dtype=np.uintp)
    state_arr = np.empty(2 * P)
    box_arr = np.empty(2 * X.shape[1] + 1)  # walk_etas' box of a small node
    cdef Hyper* hs = <Hyper*> <size_t> hs_arr.ctypes.data
    cdef float64_t* box = <float64_t*> <size_t> box_arr.ctypes.data
    cdef float64_t** msg_means = <float64_t**> <size_t> mean_ptrs.ctypes.data
    cdef float64_t** msg_vars = <float64_t**> <size_t> var_ptrs.ctypes.data
    cdef float64_t* state = <float64_t*> <size_t> state_arr.ctypes.data
    cdef float64_t* moments = &out[0, 0, 0]
    cdef Outer o
    memset(&o, 0, sizeof(Outer))
    try:
        for m in range(len(trees)):
            tree = trees[m]
            lam = read_lifetime(tree, None)
            for k in range(P):
                prior = params[k]
                hs[k] = prior.at(lam)
                # (the arrays stay alive in ``messages`` while their pointers are read)
                for side in range(2):
                    view = messages[k][m][side]
                    if view.shape[0] != tree.node_count:
                        raise ValueError("stale messages: the tree changed since they were "
                                         "computed")
                    if side == 0:
                        msg_means[k] = <float64_t*> &view[0]
                    else:
                        msg_vars[k] = <float64_t*> &view[0]
            with nogil:
                _predict_rows(tree, hs, P, rows, n, X.shape[1], msg_means, msg_vars,
                              n_quadrature, box, False, &o, state, moments, 3, 3 * n, True)
    finally:
        _outer_free(&o)


def upward_messages_grid(MondrianTree tree, list params):
    """The messages of :func:`upward_messages` (without the log marginal likelihood) at
    several priors of one rate, in one pass: the same bits as one call per prior.

    Parameters
    ----------
    tree : MondrianTree
        A tree whose statistics rows are ``(1, y, y**2)``, read at its own lifetime.
    params : list of GaussianPrior
        Priors sharing ``rate`` and ``hierarchical``.

    Returns
    -------
    msg_mean, msg_var : ndarray of shape (len(params), node_count)
        Row ``k``: the messages at ``params[k]``.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import MondrianForestRegressor
    >>> from mondrian.forest._gaussian import GaussianPrior, upward_messages
    >>> from mondrian.forest._gaussian import upward_messages_grid
    >>> rng = np.random.default_rng(0)
    >>> X = rng.random((60, 2))
    >>> tree = MondrianForestRegressor(n_estimators=1, random_state=0).fit(X, X[:, 0])._trees[0]
    >>> priors = [GaussianPrior(0.0, s, 1.0, 2.0, 1.0, True) for s in (0.1, 0.5)]
    >>> means, variances = upward_messages_grid(tree, priors)
    >>> mean, var, _ = upward_messages(tree, priors[1])
    >>> bool(np.array_equal(means[1], mean) and np.array_equal(variances[1], var))
    True
    """
    if tree.value_stride != 3:
        raise ValueError("regression trees carry (1, y, y**2) statistics")
    cdef intp_t P = len(params), N = tree.node_count, k
    cdef float64_t lam = read_lifetime(tree, None)
    cdef GaussianPrior prior
    msg_mean = np.zeros((P, N))
    msg_var = np.ones((P, N))
    if P == 0:
        return msg_mean, msg_var
    first = params[0]
    for prior in params:
        if prior.rate != first.rate or prior.hierarchical != first.hierarchical:
            raise ValueError("the priors of one grid call share rate and hierarchical")
    hs_arr = np.empty(P * sizeof(Hyper), dtype=np.uint8)
    cdef Hyper* hs = <Hyper*> <size_t> hs_arr.ctypes.data
    for k in range(P):
        prior = params[k]
        hs[k] = prior.at(lam)
    order = np.empty(N, dtype=np.intp)
    cdef intp_t[::1] od = order
    cdef float64_t[:, ::1] mm = msg_mean
    cdef float64_t[:, ::1] mv = msg_var
    with nogil:
        _upward(tree, hs, P, &od[0], &mm[0, 0], &mv[0, 0], N, NULL)
    return msg_mean, msg_var
