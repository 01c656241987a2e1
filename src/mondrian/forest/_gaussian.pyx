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
from libc.math cimport INFINITY, M_PI, log
from libc.stdint cimport int32_t
from libc.stdlib cimport free, malloc
from libc.string cimport memset

from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.core._walk cimport is_leaf_at, node_time, read_lifetime, reserve
from mondrian.forest._gaussian_model cimport _clock_denominator, _leaf_message, _product
from mondrian.forest._gaussian_predict cimport Outer, Reading, outer_free, predict_rows
from mondrian.forest._node_cache cimport NodeTables

import numpy as np


cdef inline float64_t _psi(const Hyper* h, float64_t t) noexcept nogil:
    return h.sigma2 / _clock_denominator(h.rate, t)


cdef inline float64_t _log_normal(float64_t x, float64_t mean, float64_t var) noexcept nogil:
    return -0.5 * (log(2.0 * M_PI * var) + (x - mean) * (x - mean) / var)


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


# Features below which a call of many rows whose every box is at hand (stored, or cached)
# walks its rows in groups side by side rather than partitioning them down the tree.
cdef intp_t GROUP_MAX_FEATURES = 32

# A call builds the cached boxes only with at least one row per this many nodes (building reads
# every node: a call of fewer rows costs more that way than its own walks); it reads them
# whatever its rows (the classifier's TABLE_ROWS_PER_NODE).
cdef intp_t BUILD_ROWS_PER_NODE = 32


cdef bint _groups_pay(MondrianTree tree, intp_t n, bint plain_walk):
    """Whether a call of ``n`` rows walks them in groups when every box is at hand (few
    features: a box distance costs little beside the rows' partition down the tree)."""
    return n > 1 and not plain_walk and tree.n_features < GROUP_MAX_FEATURES


cdef object _every_box(object cache, MondrianTree tree, intp_t n, bint plain_walk):
    """The cached boxes of every node of the lean ``tree`` (a ``NodeTables``; built now if
    the cache has room and the call has many rows), or None (no cache, no room, none kept for
    a call of few rows, or the call does not group its rows)."""
    cdef NodeTables kept
    cdef intp_t* queue
    if (cache is None or tree.box_min_samples == 0 or tree.node_count == 0
            or not _groups_pay(tree, n, plain_walk)):
        return None
    if n * BUILD_ROWS_PER_NODE < tree.node_count:
        return cache.find(tree, ("boxes",))
    kept, fresh = cache.entry(tree, ("boxes",), 0, 2 * tree.node_count * tree.n_features)
    if not fresh:
        return kept
    queue = <intp_t*> malloc(tree.node_count * sizeof(intp_t))
    if queue == NULL:
        cache.release(kept.nbytes)
        raise MemoryError()
    try:
        with nogil:
            tree._all_boxes(kept.boxes, queue)
    except BaseException:
        cache.release(kept.nbytes)
        raise
    finally:
        free(queue)
    cache.store(tree, ("boxes",), kept)
    return kept


def predict_moments_trees(list trees, list messages, const float64_t[:, ::1] X,
                          float64_t[:, ::1] out, GaussianPrior params not None,
                          intp_t n_quadrature=4,
                          lifetime=None, bint plain_walk=False, cache=None,
                          shorter_lifetime=None, list shorter_messages=None):
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
        forest's variance). Two columns more with ``shorter_messages``.
    params : GaussianPrior
        Hyperparameters of the model.
    n_quadrature : int, default=4
        Points of the quadrature over the branching time.
    lifetime : float, default=None
        Read the trees pruned at this lifetime.
    plain_walk : bool, default=False
        Compute eta at every node of each path on the way down (the reference walk of the
        tests) instead of from the leaf upward; the same bits either way.
    cache : PredictCache, default=None
        Where a call of many rows keeps every box of a lean tree of few features for the next
        calls of the same model (``mondrian.forest._node_cache``); the same bits either way.
    shorter_lifetime : float, default=None
        With ``shorter_messages`` (computed at this lifetime, one pair per tree): also read
        the trees pruned there, into the last two columns of ``out``: the bits of a call of
        its own, the rows' walks shared with the first reading when it is no shorter.
    """
    cdef MondrianTree tree
    cdef Hyper h, h_short
    cdef const float64_t* boxes
    cdef const int32_t* slots
    cdef intp_t n = X.shape[0], m, width = out.shape[1]
    cdef bint squared_mean
    cdef float64_t* box = NULL
    cdef size_t box_size = 0
    cdef const float64_t* rows = &X[0, 0] if n > 0 else NULL
    cdef Outer o, o_short
    cdef Reading shorter
    cdef Reading* fused
    cdef float64_t sums[2]
    cdef float64_t* means[2]
    cdef float64_t* variances[2]
    memset(&o, 0, sizeof(Outer))
    memset(&o_short, 0, sizeof(Outer))
    if len(trees) != len(messages):
        raise ValueError("one pair of messages per tree is needed")
    if n_quadrature < 1:
        raise ValueError("n_quadrature must be >= 1")
    if shorter_messages is not None:
        width -= 2
        if len(trees) != len(shorter_messages):
            raise ValueError("one pair of messages per tree is needed")
    if width not in (2, 3) or out.shape[0] != n:
        raise ValueError(f"out must have shape ({n}, 2) or ({n}, 3)"
                         + (" and two more columns" if shorter_messages is not None else ""))
    squared_mean = width == 3
    cdef float64_t* moments = &out[0, 0] if n > 0 else NULL
    shorter.hs = &h_short
    shorter.msg_means = means + 1
    shorter.msg_vars = variances + 1
    shorter.o = &o_short
    shorter.moments = moments + width if n > 0 else NULL
    try:
        for m in range(len(trees)):
            tree = trees[m]
            _messages_of(tree, messages[m], means, variances)
            h = params.at(read_lifetime(tree, lifetime))
            fused = NULL
            if shorter_messages is not None:
                _messages_of(tree, shorter_messages[m], means + 1, variances + 1)
                h_short = params.at(read_lifetime(tree, shorter_lifetime))
                fused = &shorter
            kept = _every_box(cache, tree, n, plain_walk)
            boxes, slots = NULL, NULL
            if kept is not None:
                boxes = (<NodeTables> kept).boxes
            elif _groups_pay(tree, n, plain_walk) and tree.box_min_samples == 0:
                boxes, slots = tree.bounds, tree.box_slot  # (every box stored)
            with nogil:
                reserve(<void**> &box, &box_size, 2 * tree.n_features * sizeof(float64_t))
                if fused != NULL and h_short.lifetime > h.lifetime:  # (not within its walks)
                    predict_rows(tree, &h_short, 1, rows, n, X.shape[1], means + 1,
                                 variances + 1, n_quadrature, box, plain_walk, &o_short, sums,
                                 shorter.moments, out.shape[1], 2, False, boxes, slots)
                    fused = NULL
                predict_rows(tree, &h, 1, rows, n, X.shape[1], means, variances,
                             n_quadrature, box, plain_walk, &o, sums, moments,
                             out.shape[1], 0, squared_mean, boxes, slots, fused)
    finally:
        outer_free(&o)
        outer_free(&o_short)
        free(box)


cdef int _messages_of(MondrianTree tree, pair, float64_t** mean,
                      float64_t** var) except -1:
    """Point ``mean`` and ``var`` at a tree's pair of messages (checked against the tree)."""
    cdef const float64_t[::1] mm
    cdef const float64_t[::1] mv
    mm, mv = pair
    if mm.shape[0] != tree.node_count or mv.shape[0] != tree.node_count:
        raise ValueError("stale messages: the tree changed since they were computed")
    mean[0] = <float64_t*> &mm[0]
    var[0] = <float64_t*> &mv[0]
    return 0


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
                predict_rows(tree, hs, P, rows, n, X.shape[1], msg_means, msg_vars,
                             n_quadrature, box, False, &o, state, moments, 3, 3 * n, True)
    finally:
        outer_free(&o)


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
