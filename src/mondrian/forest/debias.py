"""Debiased Mondrian forest regression: a combination of one forest read at two lifetimes.

A forest read at a lifetime ``l`` below the one it was fitted to is the forest pruned at
``l`` (every cut born after ``l`` removed; the kernels read it in place). Cattaneo,
Klusowski and Underwood (2023, "Inference with Mondrian random forests") cancel the leading
bias term of a Mondrian forest estimator ``m(l)`` whose bias expands in powers of ``1 / l``
with a combination ``sum_r w_r m(l_r)`` whose weights solve ``sum_r w_r = 1`` and
``sum_r w_r l_r**(-p s) = 0`` for ``s = 1..J`` (:func:`richardson_weights`).

The default regressor is fitted at lifetime ``inf`` (its hierarchical prior does the
smoothing), so the longer read is the fitted forest itself, which stands for an unknown
effective lifetime ``L``; the shorter one is the forest pruned at ``l``. The combination is

    m = (1 + beta) m(fitted) - beta m(l),      beta = l**p / (L**p - l**p) >= 0,

the Richardson weights of the pair ``(l, L)``: weights summing to 1, the fitted forest
extrapolated away from its coarser reading. ``L`` being unknown, ``beta`` is fitted with
``l`` on the held-out points of the regressor's hyperparameter choice (the probe forest fitted
on the other rows, in :meth:`_held_out_choice`):

* ``l`` runs over :data:`LIFETIME_QUANTILES` of the probe's split times, and for each the
  ``beta`` minimising the squared error that a forest of the model's ``T`` trees is expected
  to reach (the probe's ``K`` trees are noisier: the per-tree spread corrects for it, as in
  the regressor's :func:`_expected_nll`) in closed form, clipped to ``[0, BETA_MAX]``;
* the guard: the best pair is kept only when its held-out gain over the plain forest exceeds
  ``MIN_GAIN_SE`` standard errors, when the pair chosen on one half of the held-out points
  gains on the other half (cross-fitted: no selection optimism), and when the held-out
  likelihood gains too; otherwise the model predicts as the plain forest (``beta = 0``). The
  probe of the issue's first trial picked an extrapolation on energy (RMSE 1.05 -> 1.60 of
  RandomForest's) with no guard; a one-standard-error guard alone let yacht split 0 go from
  1.29 to 1.56 (56 held-out points);
* the predictive variance: ``f var_plain + g shift**2``, the plain forest's (calibrated on the
  same points) scaled by ``f`` (``VARIANCE_FACTORS``: never wider) plus ``g``
  (``SHIFT_FACTORS``) times the square of the combination's move of the mean, both chosen
  for the held-out likelihood of the combination's expected errors. (``f`` bounded below by
  the ratio of the combination's normalised squared errors to the plain forest's was
  measured and rejected: concrete split 0's NLL -0.05, but naval's +0.08 to +0.12 and its
  split 1 lost the combination to the likelihood check, RMSE / RF 1.013 -> 1.153.)

The choice is ``(lifetime, beta, f, g)`` in ``_debias_choice`` (absent when
``debias=None``: the model is then the plain forest, bit for bit).
"""

import weakref

import numpy as np
from sklearn.utils.validation import check_is_fitted

from mondrian.forest._gaussian import GaussianPrior, predict_moments_trees, upward_messages
from mondrian.forest._gaussian_online import refresh_messages
from mondrian.forest._node_cache import predict_cache

__all__ = ["richardson_weights", "choose_combination", "combine_lifetimes", "debias_info"]

# Candidate shorter lifetimes: quantiles of the probe's split times (the cuts of its trees).
LIFETIME_QUANTILES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.35)
BETA_MAX = 3.0  # w = (4, -3) at most: a bounded extrapolation
MIN_GAIN_SE = 1.0  # held-out gain over the plain forest, in standard errors
MIN_HELD_OUT = 20  # held-out points needed to consider a combination
# Folds of the cross-fitted guard (5 folds measured: the same choices on yacht, energy, concrete).
CROSS_FOLDS = 2
# Predictive variance of the combination: f var_plain + g shift**2 (see _variance_terms).
VARIANCE_FACTORS = np.geomspace(0.25, 1.0, 5)
SHIFT_FACTORS = (0.0, 0.0625, 0.25, 1.0)
# The messages of the shorter reading, per posterior cache (filled by the first prediction,
# refreshed by the online updates after it): (key, messages, buffers or None, trees, nodes
# recomputed by the last refresh). Kept
# beside the cache, not in it: the cache is pickled, and a model's pickle bytes may not
# depend on whether it predicted (nor grow by the messages: +26% on a 600-row forest).
_SHORT_MESSAGES = weakref.WeakKeyDictionary()

DEBIAS_DOC = """    debias : {"auto"} or None, default="auto"
        Debiased forest (Cattaneo, Klusowski & Underwood, 2023): the prediction is
        ``(1 + beta) m(fitted) - beta m(l)``, the fitted forest extrapolated away from itself
        read at a shorter lifetime ``l`` (weights summing to 1, the Richardson weights that
        cancel a bias ``c / lifetime``). ``"auto"`` chooses ``l`` and ``beta`` on the held-out
        points of the hyperparameter choice (see ``noise_variance``; batches of 50 points or
        more) and keeps the plain forest unless the gain exceeds one standard error, holds on
        the half of those points the choice did not see, and improves their likelihood; the
        predictive variance follows the combination's errors. ``debias_`` reports the choice
        (None: the plain forest). ``None``: the plain forest, as before this option (set after
        fit, the plain forest of that fit: no refit needed to compare). Cost: a
        few probe predictions at fit; with a combination, one more read of the trees (of
        their part above ``l``) per prediction, and after an online update the messages of
        that part refreshed along the new points' paths (O(path length)). See the user
        guide, "The regressor".
"""


def richardson_weights(lifetimes, power=1.0):
    """Weights of a combination of readings at ``lifetimes`` that cancel a bias expansion
    ``sum_s c_s / lifetime**(power s)``, ``s = 1..J`` (``J + 1`` lifetimes).

    They solve ``sum_r w_r = 1`` and ``sum_r w_r lifetime_r**(-power s) = 0`` for every
    ``s``: two lifetimes ``l0 < l1`` give ``w1 = l1**p / (l1**p - l0**p)``,
    ``w0 = -l0**p / (l1**p - l0**p)``.

    Parameters
    ----------
    lifetimes : sequence of float
        Distinct positive finite lifetimes.
    power : float, default=1.0
        Exponent ``p`` of the leading bias term.

    Returns
    -------
    ndarray of shape (len(lifetimes),)
    """
    lifetimes = np.asarray(lifetimes, dtype=np.float64)
    if lifetimes.ndim != 1 or lifetimes.size < 1:
        raise ValueError("lifetimes must be a non-empty sequence")
    if not (np.all(np.isfinite(lifetimes)) and np.all(lifetimes > 0)):
        raise ValueError("lifetimes must be positive and finite")
    if np.unique(lifetimes).size != lifetimes.size:
        raise ValueError("lifetimes must be distinct")
    orders = np.arange(lifetimes.size)[:, None]
    system = lifetimes[None, :] ** (-power * orders)  # row s: sum_r w_r l_r**(-p s)
    target = np.zeros(lifetimes.size)
    target[0] = 1.0
    return np.linalg.solve(system, target)


def _per_tree_means(forest, params, smoothing, X, lifetime):
    """The predictive mean of each tree of ``forest`` at the rows of ``X`` (shape (trees, n))
    read at ``lifetime`` (None: its own)."""
    out = np.zeros((len(forest._trees), X.shape[0]))
    moments = np.zeros((X.shape[0], 2))
    for k, tree in enumerate(forest._trees):
        moments[:] = 0.0
        message = upward_messages(tree, smoothing, lifetime)[:2]
        predict_moments_trees([tree], [message], X, moments, params,
                              int(forest.n_quadrature), lifetime)
        out[k] = moments[:, 0]
    return out


def _fit_beta(r, d, s_ad, s_dd, w, kappa):
    """Closed-form ``beta`` minimising ``sum w [(r - beta d)**2 - kappa var_t(a + beta d)]``
    (the expected squared error of a forest of ``T`` trees from a probe of ``K``; ``kappa =
    1/K - 1/T``), clipped to ``[0, BETA_MAX]``."""
    curvature = np.sum(w * (d * d - kappa * s_dd))
    if not curvature > 0.0:
        return 0.0
    return float(np.clip(np.sum(w * (r * d + kappa * s_ad)) / curvature, 0.0, BETA_MAX))


def _squared(r, s_aa, candidate, beta, kappa):
    """Per point: the expected squared error of the combination ``beta`` of ``candidate``."""
    d, s_ad, s_dd = candidate
    e = r - beta * d
    return e * e - kappa * (s_aa + 2.0 * beta * s_ad + beta * beta * s_dd)


def _best(r, s_aa, candidates, w, kappa):
    """The candidate and ``beta`` of least weighted expected squared error (index, beta)."""
    best, best_score = (0, 0.0), np.inf
    for k, (d, s_ad, s_dd) in enumerate(candidates):
        beta = _fit_beta(r, d, s_ad, s_dd, w, kappa)
        score = np.sum(w * _squared(r, s_aa, candidates[k], beta, kappa))
        if score < best_score:
            best, best_score = (k, beta), score
    return best


def _cross_fitted_gain(r, s_aa, candidates, w, kappa):
    """Per point: the gain in expected squared error over the plain forest of the combination
    chosen (lifetime and ``beta``) on the other folds of the points (every ``CROSS_FOLDS``-th
    point: the held-out points come in random order), so that the guard sees no selection
    optimism."""
    gain = np.zeros_like(r)
    fold = np.arange(len(r)) % CROSS_FOLDS
    base = r * r - kappa * s_aa
    for f in range(CROSS_FOLDS):
        other = fold == f
        fit = ~other
        k, beta = _best(r[fit], s_aa[fit], [tuple(c[fit] for c in cand) for cand in candidates],
                        w[fit], kappa)
        cand = tuple(c[other] for c in candidates[k])
        gain[other] = base[other] - _squared(r[other], s_aa[other], cand, beta, kappa)
    return gain


def _mean_and_error(values, w):
    """Weighted mean of per-point ``values`` (weights summing to 1) and its standard error."""
    mean = float(np.sum(w * values))
    n = len(values)
    return mean, float(np.sqrt(np.sum(w * (values - mean) ** 2) / max(n - 1, 1)))


def _variance_terms(squared, var_plain, shift, w):
    """The factor ``f`` of the plain variance and ``g`` of the squared shift of the mean in
    the combination's predictive variance ``f var_plain + g shift**2`` that minimise the
    held-out Gaussian NLL for the expected squared errors ``squared``."""
    best, best_score = (1.0, 0.0), np.inf
    for f in VARIANCE_FACTORS:
        for g in SHIFT_FACTORS:
            var = np.maximum(f * var_plain + g * shift * shift, 1e-300)
            score = np.sum(w * (np.log(var) + np.maximum(squared, 0.0) / var))
            if score < best_score:
                best, best_score = (float(f), float(g)), score
    return best


def choose_combination(model, probe, prior, floor, X_val, y_val, w_val, spread_scale):
    """Choose the debiased combination on the held-out points and keep it in
    ``model._debias_choice`` (nothing when ``model.debias`` is None).

    Parameters
    ----------
    model : _BaseMondrianRegressor
        The regressor whose hyperparameters are being chosen.
    probe : MondrianForestRegressor
        Its probe forest, fitted on the other rows.
    prior : GaussianPrior
        The chosen hyperparameters of the probe's posteriors (calibration scale included).
    floor : float
        Floor of the predictive's noise (probe's units).
    X_val, y_val, w_val : ndarray
        Held-out points (trees' coordinates), their targets in the probe's units, weights.
    spread_scale : float
        The chosen factor of the spread of the trees' means in the predictive variance.
    """
    model.__dict__.pop("_debias_choice", None)  # a choice never outlives a re-choice
    if getattr(model, "debias", None) is None:
        return
    model._debias_choice = None
    K, T = len(probe._trees), model._chosen_for_n_trees()
    if K < 2 or len(y_val) < MIN_HELD_OUT:
        return
    times = np.concatenate([t.nodes_array["split_time"][t.nodes_array["left_child"] != -1]
                            for t in probe._trees])
    times = times[np.isfinite(times) & (times > 0)]
    if times.size == 0:
        return
    kappa = 1.0 / K - 1.0 / T
    w = w_val / np.sum(w_val)
    _, within, spread = probe._held_out_moments_grid([prior], X_val, floor)[0]
    var_plain = np.maximum(within + spread_scale * spread * (T - 1) / T, 1e-300)
    params = GaussianPrior(mean0=prior.mean0, noise=max(prior.noise, floor),
                           prior_var=prior.prior_var, sigma2=prior.sigma2, rate=prior.rate,
                           hierarchical=prior.hierarchical)  # the predictive's, floored
    plain = _per_tree_means(probe, params, prior, X_val, None)
    a = plain.mean(axis=0)
    r = y_val - a
    s_aa = plain.var(axis=0, ddof=1)
    lifetimes = np.unique(np.quantile(times, LIFETIME_QUANTILES))
    candidates = []
    for lifetime in lifetimes:
        diff = plain - _per_tree_means(probe, params, prior, X_val, lifetime)
        d = diff.mean(axis=0)
        candidates.append((d, np.sum((plain - a) * (diff - d), axis=0) / (K - 1),
                           diff.var(axis=0, ddof=1)))
    cross_gain = _cross_fitted_gain(r, s_aa, candidates, w, kappa)
    k, beta = _best(r, s_aa, candidates, w, kappa)
    # The guard: the combination chosen on one half must gain on the other (no selection
    # optimism), and the one chosen on every point by more than MIN_GAIN_SE standard errors.
    base = r * r - kappa * s_aa
    squared = _squared(r, s_aa, candidates[k], beta, kappa)
    gain, error = _mean_and_error(base - squared, w)
    if not (beta > 0.0 and _mean_and_error(cross_gain, w)[0] > 0.0
            and gain > MIN_GAIN_SE * error):
        return
    shift = beta * candidates[k][0]
    factor, shift_factor = _variance_terms(squared, var_plain, shift, w)
    # The likelihood must gain too: where the plain forest is sure (inputs repeated in the
    # training rows, wine_red) a moved mean costs more likelihood than its squared error saves.
    var = np.maximum(factor * var_plain + shift_factor * shift * shift, 1e-300)
    if not (np.sum(w * (np.log(var) + np.maximum(squared, 0.0) / var))
            < np.sum(w * (np.log(var_plain) + np.maximum(base, 0.0) / var_plain))):
        return
    model._debias_choice = (float(lifetimes[k]), beta, factor, shift_factor)


def _short_key(model, lifetime, counts):
    """What the shorter reading's messages depend on beside the hyperparameters (a new version
    after every update, whose messages are those of the same cache's ``smoothing``)."""
    return (model._version, lifetime, tuple(counts))


def _short_messages(model, cache, lifetime):
    """The messages of every tree pruned at ``lifetime``: those kept beside ``cache``, or a
    full pass (kept for the next reads and online refreshes)."""
    stored = _SHORT_MESSAGES.get(cache)
    key = _short_key(model, lifetime, [t.node_count for t in model._trees])
    if stored is None or stored[0] != key:
        stored = (key, [upward_messages(t, cache.smoothing, lifetime)[:2]
                        for t in model._trees], None, list(model._trees), 0)
        _SHORT_MESSAGES[cache] = stored
    return stored[1]


def refresh_short_messages(model, cache, trees, counts, X_new):
    """After an online update that refreshed ``cache`` in place (same hyperparameters, the
    same ``trees``, of ``counts`` nodes before, ``X_new`` added): bring the shorter reading's
    messages kept beside it up to date along the updated paths (:func:`refresh_messages` at
    ``l``: O(path length) per point, the bits of a full pass on every node a reading at ``l``
    uses); nothing without them (none read since the last full pass: a full pass at the next
    read). Return the number of nodes recomputed.

    Runs inside the update (under the write lock); on its failure the update is rolled back
    to a shallow copy of the cache, which has no messages here (a full pass when read)."""
    choice = model.__dict__.get("_debias_choice")
    stored = _SHORT_MESSAGES.get(cache)
    if choice is None or model.debias is None or stored is None:
        return 0
    lifetime = choice[0]
    key, messages, buffers, kept, _ = stored
    if (key != (model._version - 1, lifetime, tuple(counts)) or len(kept) != len(trees)
            or any(a is not b for a, b in zip(kept, trees, strict=True))):
        del _SHORT_MESSAGES[cache]  # stale: a full pass at the next read
        return 0
    # The arrays of a full pass belong to this entry alone: refreshed in place.
    buffers = buffers or [(m, v, np.zeros(len(m), dtype=np.uint8)) for m, v in messages]
    del _SHORT_MESSAGES[cache]  # (until the refresh is done)
    buffers, messages, work = refresh_messages(trees, buffers, cache.smoothing, counts, X_new,
                                               lifetime)
    _SHORT_MESSAGES[cache] = (_short_key(model, lifetime, [t.node_count for t in trees]),
                              messages, buffers, kept, work)
    return work


def shorter_reading(model):
    """``(l, messages)``: the lifetime of the debiased combination's shorter forest and its
    trees' messages there (:func:`combine_lifetimes` reads them), or None for the plain
    forest; the reader of the model's own lifetime may read both at once (their walks
    shared, ``predict_moments_trees``'s ``shorter_messages``: the same bits)."""
    choice = model.__dict__.get("_debias_choice")
    if choice is None or model.debias is None:  # set_params(debias=None): the plain forest
        return None
    return choice[0], _short_messages(model, model._posterior(), choice[0])


def combine_lifetimes(model, X_scaled, mean, var, coarse=None):
    """The debiased combination's mean and variance from the plain forest's (standardised
    units); unchanged without a choice, or when the forest cannot be read below ``l``.
    ``coarse``: the shorter forest's mean at the rows if already read (as read here)."""
    choice = model.__dict__.get("_debias_choice")
    if choice is None or model.debias is None:  # set_params(debias=None): the plain forest
        return mean, var
    lifetime, beta, factor, shift_factor = choice
    if coarse is None:
        coarse = _shorter_means(model, X_scaled)
    shift = beta * (mean - coarse)
    return mean + shift, factor * var + shift_factor * shift * shift


def _shorter_means(model, X_scaled):
    """The shorter forest's predictive means at the rows (a pass of its own)."""
    cache = model._posterior()
    lifetime, messages = shorter_reading(model)
    boxes = predict_cache(model)  # (the boxes do not depend on the lifetime read)

    def run(trees, X, out):
        chosen = messages
        if trees is not model._trees:  # a chunk of the trees (threads)
            index = {id(t): k for k, t in enumerate(model._trees)}
            chosen = [messages[index[id(t)]] for t in trees]
        predict_moments_trees(trees, chosen, X, out, cache.params, int(model.n_quadrature),
                              lifetime, cache=boxes)

    return model._accumulate(run, X_scaled, 2, model._n_jobs())[:, 0] / len(model._trees)


def debias_info(model):
    """The debiased combination in use (the ``debias_`` attribute of the forest regressor):
    ``{"lifetime": l, "weights": (1 + beta, -beta), "variance_factor": f, "shift_factor": g}``,
    or None for the plain forest (``debias=None``, also when set after fit, or no gain on the
    held-out points)."""
    check_is_fitted(model, "_trees")
    choice = model.__dict__.get("_debias_choice")
    if choice is None or model.debias is None:
        return None
    lifetime, beta, factor, shift_factor = choice
    return {"lifetime": lifetime, "weights": (1.0 + beta, -beta), "variance_factor": factor,
            "shift_factor": shift_factor}
