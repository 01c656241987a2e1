"""The regressor's hyperparameters: chosen on held-out points (noise share, rate, variance
calibration), else by the trees' marginal likelihood, with the noise floor that duplicated
inputs give; and the posteriors they define (:meth:`HyperparameterMixin._posterior`)."""

import numpy as np
from scipy.special import chdtri
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from mondrian.estimator.conventions import resolve_min_samples_split
from mondrian.estimator.holdout import holdout_split
from mondrian.forest._gaussian import (
    GaussianPrior,
    predict_moments_grid,
    upward_messages,
    upward_messages_grid,
)
from mondrian.forest.debias import choose_combination

__all__ = ["HyperparameterMixin"]

# Empirical-Bayes grids: noise share of the target variance, and sigmoid rate in units of
# the inverse median split time. The shares reach 1 (the prior variance then stays at its
# floor of 1e-3 of the target variance): when no cut separates the points (identical inputs,
# or pure noise) the marginal likelihood is largest there, and a grid stopping at 0.7 made the
# predictive std about 18% too small at n = 30 (benchmarks/results/defaults.md).
NOISE_SHARES = np.r_[np.geomspace(1e-3, 0.7, 10), 0.85, 1.0]
RATE_MULTIPLIERS = np.array([0.25, 1.0, 4.0, 16.0])
N_TREES_EMPIRICAL_BAYES = 4

# Held-out choice on the first batch: the grid point (noise share, rate multiplier) whose
# predictive negative log-likelihood on a held-out part is best, for a probe forest fitted on
# the rest. Marginal likelihood favours large noise shares, which over-smooth the predictions.
HELD_OUT_NOISE_SHARES = np.geomspace(1e-6, 0.7, 14)
HELD_OUT_RATE_MULTIPLIERS = np.geomspace(0.25, 64.0, 9)
HELD_OUT_FRACTION = 0.2
HELD_OUT_MAX_POINTS = 800  # held-out points scored per grid point, at most
# Trees of the held-out probe: with 4 the probe's own Monte-Carlo noise favoured smooth, wide
# predictives (kin8nm test std about 1.2x the error, RMSE 1.11 of RF); 8 trees on at most 800
# held-out points cost about as much as 4 on 2000 (bench_weights: mean RMSE / RF 1.099 -> 1.095,
# kin8nm 1.114 -> 1.066, power_plant 1.059 -> 1.022 with feature_weights="auto").
N_TREES_HELD_OUT = 8
MIN_SAMPLES_HELD_OUT = 50
# Calibration of the predictive variance, chosen at the held-out choice's noise share and rate
# (see _expected_nll): a factor c of the model's noise and prior variances (it multiplies every
# tree's predictive variance and changes no mean) and a factor d of the spread of the trees'
# means in the forest's variance (c = d = 1: the model as before, law of total variance).
HELD_OUT_VARIANCE_SCALES = np.geomspace(0.125, 4.0, 16)
HELD_OUT_SPREAD_SCALES = np.r_[0.0, np.geomspace(1.0 / 64, 1.0, 7)]
# An online regressor re-chooses them once its stored points grew by this factor (the choices
# of a stream cost about 3 times its last one; 2 cost ChickWeights MAE 23.9 -> 25.0, 1.25 made
# the choices half of an 8000-row kin8nm stream).
HYPER_REFRESH_GROWTH = 1.5
# An online re-choice (a choice after an earlier one on the same feature map) searches the
# (noise share, rate multiplier) grid locally: from the last choice's cell, the window of this
# many grid steps either side, re-centred on the best cell until the best one's window is all
# scored (a local optimum of the same scores). 15 cells in place of 126 for one window: on an
# 8000-row kin8nm stream (10 trees) the re-choices went from about half of the learn_one +
# predict_one loop to about a fifth, with the same prequential MAE (online_regression.md).
LOCAL_SHARE_STEPS = 2
LOCAL_RATE_STEPS = 1
# Floor of the predictive's noise from duplicated inputs (see _duplicate_noise_floor): the
# one-sided lower confidence bound of this level on sigma_y^2.
NOISE_FLOOR_LEVEL = 0.95


def grid_search(score, shape, centre=None):
    """The (noise share, rate multiplier) cell of least score: over the whole grid of
    ``shape`` (``centre`` None: the first best in grid order), or the local search from
    ``centre`` (``LOCAL_SHARE_STEPS``): score the window around the best cell scored so far
    until the best cell's whole window is scored. ``score(cells)`` returns ``(cell, score)``
    pairs for the cells asked (each asked once)."""
    scores = np.full(shape, np.nan)
    done = np.zeros(shape, dtype=bool)  # (a NaN score is scored too)

    def first_best():
        best = None
        for cell in np.ndindex(shape):
            if scores[cell] < (np.inf if best is None else scores[best]):
                best = cell
        return best

    def run(cells):
        for cell, value in score(cells):
            scores[cell], done[cell] = value, True
        return first_best()

    if centre is None:
        return run(list(np.ndindex(shape)))
    best = centre
    while best is not None and (cells := [c for c in _window(best, shape) if not done[c]]):
        best = run(cells)
    return best


def _window(cell, shape):
    """The cells of the local search's window around ``cell`` (``LOCAL_SHARE_STEPS`` shares
    and ``LOCAL_RATE_STEPS`` rates either side, within the grid), in grid order."""
    (a, b), (n_a, n_b) = cell, shape
    rows = range(max(a - LOCAL_SHARE_STEPS, 0), min(a + LOCAL_SHARE_STEPS + 1, n_a))
    columns = range(max(b - LOCAL_RATE_STEPS, 0), min(b + LOCAL_RATE_STEPS + 1, n_b))
    return [(i, j) for i in rows for j in columns]


def _duplicate_noise_floor(X, y, weights=None, level=NOISE_FLOOR_LEVEL):
    """Lower confidence bound on the noise variance from rows with identical inputs.

    Rows of ``X`` (the trees' coordinates) that are equal form a group ``g``; no partition
    separates them, so their targets differ by noise alone and the pooled within-group sum of
    squares ``S = sum_g sum_i w_i (y_gi - ybar_g)**2`` over ``nu = sum_g (W_g - 1)`` degrees of
    freedom (``W_g`` the group's total weight; weights are counts: a row of weight ``w`` is
    ``w`` identical rows) gives the unbiased estimate ``S / nu`` of sigma_y^2, with
    ``S / sigma_y^2 ~ chi2(nu)`` for Gaussian noise. Returned is the one-sided lower bound
    ``S / chi2_nu^{-1}(level)``: it exceeds sigma_y^2 with probability ``1 - level`` whatever
    ``nu``. The estimate itself would exceed it about half of the time (a third for
    ``nu = 1``, then by a factor above 3.8 one time in 20), and a floor that is too high
    widens every prediction with nothing above it to correct that. Groups of total weight at
    most 1 (fractional weights) carry no degree of freedom and are left out. 0 without
    duplicated inputs (or with equal targets within every group).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    weights : ndarray of shape (n_samples,) or None
        Counts (None: all 1).
    level : float
        Confidence level of the bound.

    Returns
    -------
    float
    """
    if len(y) < 2:
        return 0.0
    _, group = np.unique(X, axis=0, return_inverse=True)
    group = group.reshape(-1)
    w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=np.float64)
    total = np.bincount(group, w)
    if len(total) == len(y) and np.all(total <= 1.0):
        return 0.0  # no duplicated input, no weight above 1: nothing to pool
    # Deviations from one member of the group: exact zeros for a single row or for
    # equal targets, and no cancellation against a large common mean.
    member = np.zeros(len(total), dtype=np.intp)
    member[group] = np.arange(len(y))  # one row of each group
    d = y - y[member[group]]
    squares = np.maximum(np.bincount(group, w * d * d)
                         - np.bincount(group, w * d) ** 2 / np.maximum(total, 1e-300), 0.0)
    pooled = total > 1.0
    dof = float(np.sum(total[pooled] - 1.0))
    sum_squares = float(np.sum(squares[pooled]))
    if dof <= 0.0 or not sum_squares > 0.0:
        return 0.0
    return sum_squares / float(chdtri(dof, 1.0 - level))


# A fit whose Gaussian posterior is not finite (sample weights past float64's reach) is refused.
_WEIGHTS_TOO_LARGE = ("y and sample_weight give no finite posterior (weights too large for "
                      "float64 arithmetic): rescale sample_weight")


def _floored(params, floor):
    """``params`` for prediction: the noise added to every predictive variance raised to
    ``floor`` (the posteriors, computed with ``params``, and so every mean, stay as they are)."""
    if not params.noise < floor:
        return params
    return GaussianPrior(mean0=params.mean0, noise=floor, prior_var=params.prior_var,
                         sigma2=params.sigma2, rate=params.rate,
                         hierarchical=params.hierarchical)


def _forest_moments(mean, spread, y, n_probe, n_trees):
    """Per point: the expected squared error of a forest of ``n_trees`` trees and its expected
    between-tree variance, from a probe of ``n_probe`` trees: their mean prediction ``mean``
    and the unbiased ``spread`` (variance) of their means (see :func:`_expected_nll`)."""
    T = float(n_trees)
    squared = (y - mean) ** 2 - spread / n_probe + spread / T
    return squared, spread * (T - 1.0) / T


def _expected_nll(mean, within, spread, y, weights, n_probe, n_trees, scales, spread_scales):
    """Held-out Gaussian NLL that a forest of ``n_trees`` trees is expected to reach, from a
    probe of ``n_probe`` trees, for every factor ``c`` in ``scales`` (rows) of the trees' mean
    predictive variance and ``d`` in ``spread_scales`` (columns) of the spread of their means;
    ``mean``, ``within`` and ``spread`` are the probe's mean prediction, the mean of its trees'
    predictive variances and the unbiased variance of their means at each held-out point.

    The forest predicts the mean ``m_T`` of its trees' means with the variance ``c W + d B_T``.
    A probe of ``K`` trees has a noisier mean than the forest: with ``b`` the unbiased spread,
    ``E (y - m_T)**2 = E (y - m_K)**2 - b / K + b / T`` and ``E B_T = b (T - 1) / T``. Scoring
    the probe's own NLL instead favours wide predictives, and the full spread ``B_T``
    over-covers when the trees differ but their mean is accurate (naval: test mean
    (error / std)**2 0.13). (The held-out choice passes ``c = 1`` and re-predicts at each scale
    of the noise and prior variances: that scale multiplies the conditional variances, not the
    spread of a tree's branch-off mixture.)
    """
    squared, between = _forest_moments(mean, spread, y, n_probe, n_trees)
    var = (np.multiply.outer(scales, within)[:, None, :]
           + np.multiply.outer(spread_scales, between)[None, :, :])
    var = np.maximum(var, 1e-300)
    nll = 0.5 * np.log(2 * np.pi * var) + squared / (2 * var)
    return np.average(nll, axis=-1, weights=weights)


class HyperparameterMixin:
    """Hyperparameters of :class:`~mondrian.forest.regressor.MondrianForestRegressor` and its
    single tree (module docstring). ``_held_out_probe_class`` is the forest the held-out choice
    fits as its probe."""

    _held_out_probe_class = None

    def _refresh_hyper_choice(self):
        """Re-choose the held-out hyperparameters on every stored point when their number has
        grown by ``HYPER_REFRESH_GROWTH`` since the last choice (or reached
        ``MIN_SAMPLES_HELD_OUT``).

        The choice reads only the stored points (the trees' coordinates) and their scaled
        targets: a batch fit chooses at its end on the whole grid, an online model at the end
        of every update that grew the store enough (amortised: a bounded number of probe fits
        per doubling), searching the grid locally from its last choice (:func:`grid_search`),
        so that both choose alike whenever the batch's cell is the local optimum reached.
        """
        n = self._store.n_samples
        if not self._hyper_choice_due(n):
            return False
        rows = self._store.rows  # (w, w y, w y^2) in standardised units
        weights = rows[:, 0]
        y_std = rows[:, 1] / weights
        self._hyper_choice = self._held_out_choice(
            self._store.X, y_std, self.lifetime_,
            None if np.all(weights == 1.0) else np.ascontiguousarray(weights))
        self._hyper_n = n
        return True

    def _hyper_choice_due(self, n):
        """Whether :meth:`_refresh_hyper_choice` chooses again with ``n`` stored points."""
        if self._weights_probe_model:
            return False  # a probe of the weight search: the marginal likelihood decides
        last = getattr(self, "_hyper_n", 0)  # (models pickled before it existed)
        return not (n < MIN_SAMPLES_HELD_OUT or (last and n < HYPER_REFRESH_GROWTH * last))

    def _base_params(self):
        n, s1, s2 = self._y_sums
        mean = s1 / n
        var = max(s2 / n - mean * mean, 0.0)
        if var <= 0.0:
            var = 1.0  # constant targets: any positive scale will do
        return mean, var

    def _params(self, mean, var, noise_share, rate, scale=1.0):
        """The model's hyperparameters at a noise share and rate; ``scale`` multiplies the noise
        and prior variances (the held-out choice's variance scale: it changes no posterior or
        predictive mean, and every variance of the model by that factor)."""
        to_std = self._y_scaler.variance_from_units
        noise = (
            to_std(self.noise_variance) if self.noise_variance is not None
            else noise_share * var
        )
        if self.prior_variance is not None:
            prior = to_std(self.prior_variance)
        else:
            prior = max(var - noise, 1e-3 * var)
        noise, prior = scale * noise, scale * prior
        return GaussianPrior(
            mean0=mean,
            noise=noise,
            prior_var=prior,
            # The leaf marginal prior variance of the hierarchical model is sigma2 / 2.
            sigma2=2.0 * prior,
            rate=rate,
            hierarchical=self.smoothing == "hierarchical",
        )

    def _time_scale(self, trees):
        times = np.concatenate([
            t.nodes_array["split_time"][t.nodes_array["left_child"] != -1] for t in trees
        ])
        times = times[np.isfinite(times) & (times > 0)]
        return float(np.median(times)) if times.size else 1.0

    def _chosen_for_n_trees(self):
        """The number of trees the held-out choice scores for: the model's, or for a part of
        a forest (``mondrian.merging.forest_parts``) the whole forest's, so that every part
        makes the whole forest's choice."""
        return getattr(self, "_whole_n_trees", None) or self._n_trees()

    def _held_out_choice(self, X, y, lifetime, weights=None):
        """Noise share and rate multiplier with the best held-out predictive likelihood, then
        the variance and spread scales of the predictive (``X`` in the trees' coordinates,
        ``y`` standardised by ``_y_scaler``).

        A probe forest of ``N_TREES_HELD_OUT`` trees is fitted on ``1 - HELD_OUT_FRACTION`` of
        the first batch; every (share, rate) grid point is scored by the Gaussian negative
        log-likelihood of the probe's predictions on the rest (at most ``HELD_OUT_MAX_POINTS``
        of them, randomly ordered by the split; the same predictive as :meth:`predict`); a
        re-choice scores the cells of the local search from the last choice only
        (:meth:`_local_grid_centre`, :func:`grid_search`). At the
        best one, the scales minimise the negative log-likelihood that a forest of this model's
        number of trees is expected to reach (:func:`_expected_nll`); they change no mean.
        When the noise is chosen, the noise of the predictive never goes below the floor that
        duplicated inputs give (:func:`_duplicate_noise_floor` of all of ``X``, ``y``; see
        :func:`_floored`): the probe's scoring applies it too, so the choice sees the predictive
        it will get (held-out points that repeat a fit point's input and target no longer
        reward a tiny noise without bound).
        Returns ``(share, multiplier, variance_scale, spread_scale, noise_floor)`` (the floor in
        the standardised units of ``_y_scaler``; choices pickled without it read as floor 0),
        or None when nothing is to be chosen, for a probe, for batches smaller than
        ``MIN_SAMPLES_HELD_OUT`` or of identical inputs (the marginal likelihood decides then).
        """
        # The combination of lifetimes (forest/debias.py) belongs to the held-out choice it
        # was made with: re-chosen below with it, or gone when there is none.
        self.__dict__.pop("_debias_choice", None)
        search_shares = self.noise_variance is None
        search_rates = self.sigmoid_rate is None and self.smoothing == "hierarchical"
        # The calibration scales are chosen only when no variance is fixed by the user.
        search_scales = search_shares and self.prior_variance is None
        n = len(y) if weights is None else float(weights.sum())  # weights are counts
        if getattr(self, "_probe", False) or n < MIN_SAMPLES_HELD_OUT:
            return None
        if not (search_shares or search_rates):
            return None
        if not np.any(X != X[:1]):
            # Identical inputs: no cut, every tree one leaf. The predictive is that of one
            # Gaussian sample, whose marginal likelihood is exact; a held-out split would only
            # add the noise of its few held-out points.
            return None
        rng = check_random_state(self.random_state)
        floor = _duplicate_noise_floor(X, y, weights) if search_shares else 0.0
        if weights is None:
            weights = np.ones(len(y))
        # The weights follow their rows through the split (a last column of X).
        X_fit, X_val, y_fit, y_val = holdout_split(np.column_stack([X, weights]), y,
                                                   HELD_OUT_FRACTION, rng)
        X_val, y_val = X_val[:HELD_OUT_MAX_POINTS], y_val[:HELD_OUT_MAX_POINTS]
        w_fit, w_val = X_fit[:, -1], X_val[:, -1]
        X_fit = np.ascontiguousarray(X_fit[:, :-1])
        X_val = np.ascontiguousarray(X_val[:, :-1])
        # The probe lives in the trees' coordinates (no map of its own) and never chooses.
        # Its targets are standardised: fixed variances (units of y squared) are converted.
        to_std = self._y_scaler.variance_from_units
        prior, noise = (None if v is None else to_std(v)
                        for v in (self.prior_variance, self.noise_variance))
        probe = self._held_out_probe_class(
            N_TREES_HELD_OUT, lifetime=lifetime,
            min_samples_split=resolve_min_samples_split(self.min_samples_split, len(y)),
            feature_scaling=None, feature_weights=None, smoothing=self.smoothing,
            noise_variance=1.0, prior_variance=prior,
            sigmoid_rate=1.0, n_quadrature=self.n_quadrature,
            random_state=rng.randint(np.iinfo(np.int32).max),
        )
        probe._probe = True
        probe.fit(X_fit, y_fit, sample_weight=w_fit)
        probe.set_params(noise_variance=noise, sigmoid_rate=self.sigmoid_rate)
        mean, var = probe._base_params()
        # The floor in the probe's own standardised units (its targets are ours, rescaled).
        probe_floor = probe._y_scaler.variance_from_units(floor) if floor > 0.0 else 0.0
        base_rate = 1.0 / probe._time_scale(probe._trees)
        y_val = probe._y_scaler.transform(y_val)
        shares = HELD_OUT_NOISE_SHARES if search_shares else [None]
        multipliers = HELD_OUT_RATE_MULTIPLIERS if search_rates else [None]
        scales = HELD_OUT_VARIANCE_SCALES if search_scales else np.ones(1)
        spread_scales = HELD_OUT_SPREAD_SCALES if search_scales else np.ones(1)
        K, forest = N_TREES_HELD_OUT, self._n_trees() > 1
        # One grid call per rate: the shares of a rate share the walks and the clock.
        moments = {}

        def score(cells):
            out = []
            for b in sorted({b for _, b in cells}):
                rows = sorted(a for a, c in cells if c == b)
                rate = self._rate(multipliers[b], base_rate)
                grid = probe._held_out_moments_grid(
                    [probe._params(mean, var, shares[a], rate) for a in rows], X_val,
                    probe_floor)
                for a, share_moments in zip(rows, grid, strict=True):
                    # Scored as the probe itself predicts (T = K trees, unit scales: the plain
                    # NLL), or as one of its trees for a single-tree model.
                    out.append(((a, b), _expected_nll(*share_moments, y_val, w_val, K,
                                                      K if forest else 1, np.ones(1),
                                                      np.ones(1))[0, 0]))
                    moments[a, b] = share_moments
            return out

        best = grid_search(score, (len(shares), len(multipliers)),
                           self._local_grid_centre(shares, multipliers))
        kept = moments[best]
        best = (shares[best[0]], multipliers[best[1]])
        share, multiplier = best
        rate = self._rate(multiplier, base_rate)
        rescaled = iter(probe._held_out_moments_grid(
            [probe._params(mean, var, share, rate, scale) for scale in scales if scale != 1.0],
            X_val, probe_floor))
        scores = np.array([
            _expected_nll(*(next(rescaled) if scale != 1.0 else kept),
                          y_val, w_val, K, self._chosen_for_n_trees(), np.ones(1),
                          spread_scales)[0]
            for scale in scales])
        k, j = np.unravel_index(int(np.argmin(scores)), scores.shape)
        # The lifetime combination (forest/debias.py), chosen on the same held-out points.
        choose_combination(self, probe, probe._params(mean, var, share, rate, scales[k]),
                           probe_floor, X_val, y_val, w_val, float(spread_scales[j]))
        return (share, multiplier, float(scales[k]), float(spread_scales[j]), floor)

    def _local_grid_centre(self, shares, multipliers):
        """The grid cell of the last held-out choice, where an online re-choice starts its
        local search (see ``LOCAL_SHARE_STEPS``); None for the whole grid: a first choice,
        one after the stream window re-mapped the points, or one off these grids."""
        choice = self.__dict__.get("_hyper_choice")
        if choice is None or not self.__dict__.get("_hyper_n"):
            return None
        cell = []
        for grid, value in ((shares, choice[0]), (multipliers, choice[1])):
            found = [k for k, v in enumerate(grid) if v is value or v == value]
            if not found:
                return None
            cell.append(found[0])
        return tuple(cell)

    def _rate(self, multiplier, base_rate):
        """The sigmoid rate: fixed by the user, or a multiple of the inverse median split time."""
        if self.sigmoid_rate is not None:
            return self.sigmoid_rate
        return (1.0 if multiplier is None else multiplier) * base_rate

    def _held_out_moments_grid(self, params, X_scaled, floor=0.0):
        """At each prior of ``params`` (one rate): the trees' mean prediction, their mean
        predictive variance and the unbiased variance of their means (a list of triples of
        arrays of shape (n_points,)), in one pass of ``predict_moments_grid``; the predictive
        noise floored by ``floor`` (:func:`_floored`)."""
        out = np.zeros((len(params), X_scaled.shape[0], 3))
        per_tree = [upward_messages_grid(tree, params) for tree in self._trees]
        messages = [[(means[k], variances[k]) for means, variances in per_tree]
                    for k in range(len(params))]
        predict_moments_grid(self._trees, messages, X_scaled, out,
                             [_floored(p, floor) for p in params], int(self.n_quadrature))
        K = len(self._trees)
        result = []
        for sums in out:
            mean = sums[:, 0] / K
            within = np.maximum(sums[:, 1] - sums[:, 2], 0.0) / K
            spread = (np.maximum(sums[:, 2] - K * mean * mean, 0.0) / (K - 1) if K > 1
                      else np.zeros_like(mean))
            result.append((mean, within, spread))
        return result

    def _empirical_bayes(self, mean, var, base_rate, pick=None):
        """Hyperparameters of the data summarised by the target mean and variance and the
        inverse median split time ``base_rate`` (see :meth:`_hyper_statistics`).

        With a held-out choice (see :meth:`_held_out_choice`), its noise share and rate
        multiplier applied to that target variance and time scale; otherwise the grid point
        ``pick`` (noise share, rate) maximising the trees' marginal likelihood, found now when
        None. (The posteriors' hyperparameters: the predictive's noise is floored by
        :meth:`_noise_floor`.)
        """
        choice = getattr(self, "_hyper_choice", None)
        if choice is not None:
            share, multiplier = choice[:2]
            scale = choice[2] if len(choice) > 2 else 1.0  # (models pickled before scales)
            return self._params(mean, var, share, self._rate(multiplier, base_rate), scale)
        pick = self._marginal_pick(mean, var, base_rate) if pick is None else pick
        if pick is None:  # every candidate's evidence overflowed (refused by the caller)
            return None
        return self._params(mean, var, *pick)

    def _marginal_pick(self, mean, var, base_rate):
        """The (noise share, rate) of the grid maximising the marginal likelihood of the first
        ``N_TREES_EMPIRICAL_BAYES`` trees (the choice of batches under
        ``MIN_SAMPLES_HELD_OUT``)."""
        trees = self._trees[:N_TREES_EMPIRICAL_BAYES]
        shares = NOISE_SHARES if self.noise_variance is None else [None]
        if self.sigmoid_rate is not None:
            rates = [self.sigmoid_rate]
        elif self.smoothing == "hierarchical":
            rates = base_rate * RATE_MULTIPLIERS
        else:
            rates = [base_rate]
        best, best_score = None, -np.inf
        for share in shares:
            for rate in rates:
                params = self._params(mean, var, share, rate)
                score = sum(upward_messages(tree, params)[2] for tree in trees)
                if score > best_score:
                    best, best_score = (share, rate), score
        return best

    def _noise_floor(self):
        """Floor of the predictive's noise (standardised units): that of the held-out choice
        (0 for choices pickled without it), or without a choice that of the stored points;
        0 for a fixed ``noise_variance``."""
        if self.noise_variance is not None:
            return 0.0
        choice = getattr(self, "_hyper_choice", None)
        if choice is not None:
            return choice[4] if len(choice) > 4 else 0.0
        state = self.__dict__.get("_hyper_params")
        if state is not None and state[4] is not None:
            return state[4]  # that of the points stored at the last derivation
        return self._store_noise_floor()

    def _store_noise_floor(self):
        """:func:`_duplicate_noise_floor` of the stored points (trees' coordinates, standardised
        targets, weights as counts)."""
        store = self._store
        rows = store.rows  # (w, w y, w y^2)
        weights = rows[:, 0]
        return _duplicate_noise_floor(store.X, rows[:, 1] / weights,
                                      None if np.all(weights == 1.0) else weights)

    def _posterior(self):
        """Current hyperparameters and upward messages of every tree: ``smoothing`` those of
        the posteriors, ``params`` those of the predictive (its noise floored)."""
        cache = self._posterior_cache
        if not cache.current(self._version):
            frozen = self.__dict__.get("_frozen_prior")
            state = self.__dict__.get("_hyper_params")
            if frozen is not None:  # a lifetime-path copy (see _path_copy_setup)
                mean0, noise, prior, rate = frozen[:4]
                floor = frozen[4] if len(frozen) > 4 else 0.0
                smoothing = GaussianPrior(mean0=mean0, noise=noise, prior_var=prior,
                                          sigma2=2.0 * prior, rate=rate,
                                          hierarchical=self.smoothing == "hierarchical")
            else:
                if state is None:  # (views, merged or pruned forests, older pickles)
                    state = self._hyper_statistics(self._store.n_samples)
                smoothing = self._empirical_bayes(*state[:4])
                if smoothing is None:  # every candidate's evidence overflowed
                    raise ValueError(_WEIGHTS_TOO_LARGE)
                choice = getattr(self, "_hyper_choice", None)
                floor = self._noise_floor() if choice is not None or state[4] is None else state[4]
            cache.smoothing, cache.params = smoothing, _floored(smoothing, floor)
            results = [upward_messages(tree, smoothing) for tree in self._trees]
            log_ml = float(np.mean([r[2] for r in results]))
            if np.isnan(log_ml):  # NaN messages: refused at fit, never predicted from
                raise ValueError(_WEIGHTS_TOO_LARGE)
            cache.messages = [(m, v) for m, v, _ in results]
            cache.log_ml = log_ml
            cache.buffers, cache.trees = None, list(self._trees)
            cache.shared, cache.seen = [0], 0  # new arrays: detached from earlier copies
            cache.version = self._version
        return cache

    def _hyper_statistics(self, n):
        """What the hyperparameters of the posteriors read from the data, as the tuple kept in
        ``_hyper_params`` between derivations: ``(mean, var, base_rate, pick, floor,
        *settings, n)``: the target mean and variance, the inverse median split time of the
        first ``N_TREES_EMPIRICAL_BAYES`` trees, without a held-out choice the marginal
        likelihood's grid point and the stored points' noise floor (else None), the
        parameters they depend on (:meth:`_hyper_settings`) and the number of stored
        points ``n``."""
        mean, var = self._base_params()
        base_rate = 1.0 / self._time_scale(self._trees[:N_TREES_EMPIRICAL_BAYES])
        pick = floor = None
        if getattr(self, "_hyper_choice", None) is None:
            pick = self._marginal_pick(mean, var, base_rate)
            floor = 0.0 if self.noise_variance is not None else self._store_noise_floor()
        return (mean, var, base_rate, pick, floor, *self._hyper_settings(), n)

    @property
    def hyperparameters_(self):
        """The hyperparameters in use, in the units of ``y``.

        ``noise_variance`` (σ_y² of the predictive), ``noise_floor`` (its lower bound from
        duplicated inputs, 0 without; the posteriors use the chosen noise below it, see the
        user guide), ``prior_variance`` (prior variance of a leaf mean),
        ``sigmoid_rate`` (γ of the variance clock ψ(t) = 2·prior_variance·sigmoid(γ t)),
        ``prior_mean`` and ``spread_scale`` (factor of the spread of the trees' means in the
        forest's predictive variance, chosen on held-out points; 1 is the law of total
        variance).
        """
        check_is_fitted(self, "_trees")
        params = self._posterior().params
        y_map = self._y_scaler
        return {
            "noise_variance": float(y_map.variance_to_units(params.noise)),
            "noise_floor": float(y_map.variance_to_units(self._noise_floor())),
            "prior_variance": float(y_map.variance_to_units(params.prior_var)),
            "sigmoid_rate": params.rate,
            "prior_mean": float(y_map.inverse(params.mean0)),
            "spread_scale": self._spread_scale(),
        }

    def _spread_scale(self):
        """Factor of the spread of the trees' means in the predictive variance (held-out
        choice; 1 without one: the law of total variance)."""
        choice = getattr(self, "_hyper_choice", None)
        if choice is None or len(choice) < 4:  # (models pickled before the scales)
            return 1.0
        return float(choice[3])
