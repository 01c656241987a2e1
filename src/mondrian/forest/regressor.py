"""Mondrian forest regressor with predictive uncertainty (Lakshminarayanan, Roy & Teh, 2016)."""

import contextlib
import copy
import numbers

import numpy as np
from scipy.special import chdtri
from sklearn.base import RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from mondrian.core.base import (
    FOREST_PARAMETER_CONSTRAINTS,
    BaseMondrianEnsemble,
    FeatureImportanceMixin,
    MondrianTreeStructure,
    PruneMixin,
    SingleTreeMixin,
    check_sample_weight,
    drop_zero_weights,
    online_update,
    unchanged_on_error,
)
from mondrian.core.conventions import (
    ConventionsMixin,
    TreeSequenceMixin,
    resolve_min_samples_split,
)
from mondrian.core.forgetting import WINDOW_DOC
from mondrian.core.relevance import FOREST_FEATURE_WEIGHTS_DOC
from mondrian.forest._gaussian import (
    GaussianPrior,
    predict_moments_grid,
    predict_moments_trees,
    upward_messages,
    upward_messages_grid,
)
from mondrian.forest._online_posterior import OnlinePosteriorMixin, _PosteriorCache
from mondrian.forest.debias import (  # [debias, issue 22]
    DEBIAS_DOC,
    choose_combination,
    combine_lifetimes,
    debias_info,
)
from mondrian.forest.forgetting import RegressorForgetMixin
from mondrian.path._engine import GaussianLeafReader, inherit_unlabelled
from mondrian.path.forest import LifetimePathMixin
from mondrian.path.holdout import holdout_split

__all__ = ["MondrianForestRegressor", "MondrianTreeRegressor"]

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
# feature_weights="auto" of the regressors: every power probed under both maps, the simplest
# candidate within one paired standard error of the best, and from this many rows the powers
# of the ARD Laplace lifetimes competing with those of the extra trees (benchmarks/results/
# weights.md, 2026-11-23 noise floor: mean RMSE / RF 1.103 -> 1.053 over the 8 UCI sets, NLL
# better than RF on the same 4, mean fit / RF 0.95 -> 1.45).
WEIGHTS_LAPLACE_MIN_ROWS = 2000

# An online regressor re-chooses them once its stored points grew by this factor (the choices
# of a stream cost about 3 times its last one; 2 cost ChickWeights MAE 23.9 -> 25.0, 1.25 made
# the choices half of an 8000-row kin8nm stream).
HYPER_REFRESH_GROWTH = 1.5
# Floor of the predictive's noise from duplicated inputs (see _duplicate_noise_floor): the
# one-sided lower confidence bound of this level on sigma_y^2.
NOISE_FLOOR_LEVEL = 0.95


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


def _check_one_output(y):
    """A clear error for multi-output targets (before scikit-learn's generic one)."""
    shape = getattr(y, "shape", None)
    if shape is None:
        shape = np.asarray(y).shape if y is not None else ()
    if len(shape) == 2 and shape[1] != 1:
        raise ValueError(
            f"y has shape {shape}: the Mondrian regressors predict one target (their Gaussian "
            "leaf statistics are per output). Fit one model per output, e.g. "
            "sklearn.multioutput.MultiOutputRegressor(MondrianForestRegressor())"
        )


def _check_one_target(y):
    """One regression target as a float, or a clear error (before any change)."""
    if y is None:
        raise ValueError("y is None: learn_one needs the sample's target")
    if isinstance(y, (str, bytes)) or np.ndim(y) != 0:
        raise ValueError(f"y must be a single number, got {y!r}")
    try:
        value = float(y)
    except (TypeError, ValueError):
        raise TypeError(f"y must be a real number, got {type(y).__name__}") from None
    if not np.isfinite(value):
        raise ValueError(f"y must be finite, got {y!r}")
    return value


def _check_finite_targets(y):
    """Object targets holding None become NaN under ``y_numeric``: reject them clearly."""
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN, infinity or None")


# Standardised targets stay below this magnitude: a batch reaching beyond it multiplies the
# target scale by a power of two (see _TargetScaler.update), so squares and sums of standardised
# targets never come near overflow, whatever the units of y.
MAX_STANDARDISED_EXPONENT = 20  # |y - offset| / scale < 2**20


class _TargetScaler:
    """Affine map ``y -> (y - offset) / scale`` of the targets, applied before the trees sum them.

    The offset is the first target seen; the scale is the range of the targets when it first
    becomes positive (1 while every target equals the offset: their standardised values are all
    0, so any scale fits them). A later batch whose standardised values would exceed
    ``2**MAX_STANDARDISED_EXPONENT`` in magnitude multiplies the scale by the power of two
    ``2**k`` that brings them below 1: the stored sums of ``y`` and ``y**2`` are then multiplied
    by ``2**-k`` and ``2**-2k``, which is exact in floating point (only contributions below the
    smallest float, negligible next to the new targets, can round away). Any finite targets
    whose range is finite work: from a first batch of range 1e-303 to targets of 1e300.

    Differences are formed from halves (``y / 2 - offset / 2``, exact for normal floats), so
    they never overflow; targets whose range exceeds the largest float are refused.
    """

    def __init__(self):
        self.offset = None
        self.scale = 1.0
        self.frozen = False

    def update(self, y):
        """Take the targets ``y`` into account; return the ``k`` by which the scale was
        multiplied by ``2**k`` (0: the stored standardised sums stay valid as they are).

        Raises a ``ValueError`` when the targets' range exceeds the largest float.
        """
        y = np.asarray(y, dtype=np.float64)
        if y.size == 0:
            return 0
        if self.offset is None:
            self.offset = float(y[0])
        high, low = max(float(y.max()), self.offset), min(float(y.min()), self.offset)
        span = 2.0 * (0.5 * high - 0.5 * low)
        if not np.isfinite(span):
            raise ValueError(
                "the range of y exceeds the largest float64 (max(y) - min(y) overflows): "
                "rescale y"
            )
        if not self.frozen:
            if span > 0:
                self.scale = span
                self.frozen = True
            return 0
        # |y - offset| <= span < 2**e_span; scale >= 2**(e_scale - 1).
        e_span = int(np.frexp(span)[1])
        e_scale = int(np.frexp(self.scale)[1])
        k = e_span - e_scale + 1
        if k <= MAX_STANDARDISED_EXPONENT:
            return 0
        scale = float(np.ldexp(self.scale, k))
        if not np.isfinite(scale):
            raise ValueError(
                "the range of y exceeds the largest float64 (max(y) - min(y) overflows): "
                "rescale y"
            )
        self.scale = scale
        return k

    def transform(self, y):
        y = np.asarray(y, dtype=np.float64)
        with np.errstate(over="ignore"):
            return (0.5 * y - 0.5 * self.offset) / (0.5 * self.scale)

    def inverse(self, mean, std=None):
        """Map standardised means (and standard deviations) back to the units of ``y``."""
        with np.errstate(over="ignore"):
            mean = mean * self.scale + self.offset
            return mean if std is None else (mean, std * self.scale)

    def variance_to_units(self, variance):
        """A variance of standardised targets in units of y squared (inf beyond float64)."""
        with np.errstate(over="ignore"):
            return np.float64(variance) * self.scale * self.scale

    def variance_from_units(self, variance):
        """A variance in units of y squared as one of standardised targets, kept positive and
        finite (a fixed hyperparameter far outside the targets' range)."""
        tiny, huge = np.finfo(np.float64).tiny, np.finfo(np.float64).max
        with np.errstate(over="ignore", under="ignore"):
            value = float(np.float64(variance) / self.scale / self.scale)
        return min(max(value, tiny), huge)


def _rescaled_rows(values, k):
    """Rows ``[n, sum y, sum y**2]`` of standardised targets after the scale grew by ``2**k``
    (exact: multiplications by powers of two)."""
    out = np.array(values, dtype=np.float64, copy=True)
    out[..., 1] = np.ldexp(out[..., 1], -k)
    out[..., 2] = np.ldexp(out[..., 2], -2 * k)
    return out


def _rescaled_tree(tree, k):
    """A new tree equal to ``tree`` with its target sums rescaled by :func:`_rescaled_rows`."""
    cls, args, state = tree.__reduce__()
    state["value"] = _rescaled_rows(state["value"], k)
    out = cls(*args)
    out.__setstate__(state)
    return out


class _BaseMondrianRegressor(
    ConventionsMixin, OnlinePosteriorMixin, RegressorMixin, LifetimePathMixin, PruneMixin,
    FeatureImportanceMixin, RegressorForgetMixin, BaseMondrianEnsemble,
):
    """Regression on Mondrian trees with Gaussian posteriors (not for direct use)."""

    _parameter_constraints = {
        **BaseMondrianEnsemble._parameter_constraints,
        "lifetime": [Interval(numbers.Real, 0, None, closed="both"), StrOptions({"auto"})],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "smoothing": [StrOptions({"hierarchical", "independent"})],
        "noise_variance": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "prior_variance": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "sigmoid_rate": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "n_quadrature": [Interval(numbers.Integral, 1, None, closed="left")],
        "window": [Interval(numbers.Integral, 1, None, closed="left"), None],
    }

    _mutable_state = ("_posterior_cache",)
    _count_columns = 1  # min_samples_split counts the (weighted) first statistics column
    # Set on the probes of the feature-weight search (see _weights_probe).
    _weights_probe_model = False
    _tree_view_attributes = (
        *BaseMondrianEnsemble._tree_view_attributes, "_y_scaler", "_y_sums", "_hyper_choice",
        "_hyper_n",
    )

    def _init_view(self):
        self._version = 0
        self._posterior_cache = _PosteriorCache()
        # A view derives its own when read; a merged forest now, on all its points (as a
        # batch fit at its end).
        self._hyper_params = (None if self.__dict__.get("_read_only_view")
                              else self._hyper_statistics(self._store.n_samples))

    def _after_prune(self):
        self._posterior_cache = _PosteriorCache()
        self._hyper_params = None
        self._y_sums = self._y_sums.copy()
        self._y_scaler = copy.deepcopy(self._y_scaler)

    # ----------------------------------------------------------------- training

    def _node_losses(self, value):
        # Squared error of each node's targets about their (weighted) mean, from (n, Σy, Σy²).
        n = np.maximum(value[:, 0], np.finfo(float).tiny)
        return np.maximum(value[:, 2] - value[:, 1] ** 2 / n, 0.0)

    def _learn(self, X, y, first, n_new_trees=0, weights=None, stream=False):
        """Add the points (of positive ``weights``, None: all 1) to the model."""
        if first:
            self._validate_lifetime()
            self._choose_feature_weights(X, y, stream=stream, sample_weight=weights)
            lifetime = self._fit_lifetime(X, y, weights)
            self._hyper_choice, self._hyper_n = None, 0
            self.__dict__.pop("_debias_choice", None)  # [debias, issue 22] chosen anew
            self._hyper_params = None
            self._y_scaler = _TargetScaler()
            self._y_scaler.update(y)
            self._y_sums = np.zeros(3)
            self._init_trees(X, self._n_trees(), 3, lifetime)
            self._posterior_cache = _PosteriorCache()
            self._version = 0
        # The target map, the rows and the sums are staged and checked before any is kept.
        y_scaler = copy.copy(self._y_scaler)
        k = y_scaler.update(y)
        y_std = y_scaler.transform(y)
        rows = np.column_stack([np.ones_like(y_std), y_std, y_std * y_std])
        if weights is not None:
            rows *= weights[:, None]  # Gaussian sufficient statistics scale by the weight
        sums = (_rescaled_rows(self._y_sums, k) if k else self._y_sums) + rows.sum(axis=0)
        if not (np.all(np.isfinite(rows)) and np.all(np.isfinite(sums))):
            raise ValueError("y holds values whose standardised squares overflow float64")
        # A grown target scale rewrites every tree's sums: snapshot them whatever the size of
        # the update, so that a failure rolls the rescaling back too.
        with unchanged_on_error(self, deep=True) if k else contextlib.nullcontext():
            if k:
                self._rescale_targets(k)
            self._y_scaler, self._y_sums = y_scaler, sums
            trees, counts = list(self._trees), [tree.node_count for tree in self._trees]
            self._grow_new_trees(n_new_trees, self._n_jobs())
            self._add_points(X, rows, self._n_jobs())
            if not first:
                self._feed_weights_window(X, y, weights)
            chose = self._refresh_hyper_choice()
            self._version += 1
            self._refresh_posterior(trees, counts, len(X), chose)
        return self


    def _rescale_targets(self, k):
        """The scale of the targets grew by ``2**k``: rescale the stored sums of every tree and
        the stored rows (new objects; the old ones stay as they were for a rollback)."""
        self._hyper_params = None  # in the old units: derive them again
        ensemble = self._ensemble
        ensemble.trees = [_rescaled_tree(tree, k) for tree in ensemble.trees]
        store = ensemble.store
        store._rows = _rescaled_rows(store._rows, k)
        choice = getattr(self, "_hyper_choice", None)
        if choice is not None and len(choice) > 4:  # the noise floor, in standardised units
            self._hyper_choice = (*choice[:4], float(np.ldexp(choice[4], -2 * k)))

    def _refresh_hyper_choice(self):
        """Re-choose the held-out hyperparameters on every stored point when their number has
        grown by ``HYPER_REFRESH_GROWTH`` since the last choice (or reached
        ``MIN_SAMPLES_HELD_OUT``).

        The choice reads only the stored points (the trees' coordinates) and their scaled
        targets, so a model fed online and one fitted at once on the same points choose alike:
        a batch fit chooses at its end, an online model at the end of every update that grew
        the store enough (amortised: a bounded number of probe fits per doubling).
        """
        if self._weights_probe_model:
            return False  # a probe of the weight search: the marginal likelihood decides
        n = self._store.n_samples
        last = getattr(self, "_hyper_n", 0)  # (models pickled before it existed)
        if n < MIN_SAMPLES_HELD_OUT or (last and n < HYPER_REFRESH_GROWTH * last):
            return False
        rows = self._store.rows  # (w, w y, w y^2) in standardised units
        weights = rows[:, 0]
        y_std = rows[:, 1] / weights
        self._hyper_choice = self._held_out_choice(
            self._store.X, y_std, self.lifetime_,
            None if np.all(weights == 1.0) else np.ascontiguousarray(weights))
        self._hyper_n = n
        return True

    def _search_weights(self, X, y, method, quantile=False, sample_weight=None):
        """``feature_weights="auto"``: the joint search of the regressors (see
        ``WEIGHTS_LAPLACE_MIN_ROWS``); a named method keeps the search of every model."""
        # In the units the trees use (the model is equivariant to affine changes of units):
        # the same search for y and c * y, and no squared error overflows at 1e300.
        scaler = _TargetScaler()
        scaler.update(y)
        y = scaler.transform(y)
        options = {}
        if self.feature_weights == "auto":
            options = {"joint_map": True, "simplest": True}
            n_rows = len(y) if sample_weight is None else float(np.sum(sample_weight))
            if n_rows >= WEIGHTS_LAPLACE_MIN_ROWS:
                method = (method, "laplace_ard")
        self._search_scaler = scaler  # the probes convert fixed variances with it
        try:
            return super()._search_weights(X, y, method, quantile, sample_weight, **options)
        finally:
            del self._search_scaler

    def _weights_probe(self, weights):
        # The probes compare powers of the weights with one another: they skip the held-out
        # hyperparameter choice (most of a small fit's cost) and use the marginal likelihood.
        probe = super()._weights_probe(weights)
        probe._weights_probe_model = True
        # Fixed variances are in units of y, the probes' targets standardised.
        scaler = self.__dict__.get("_search_scaler")
        for name in ("noise_variance", "prior_variance"):
            value = getattr(probe, name)
            if value is not None and scaler is not None:
                setattr(probe, name, scaler.variance_from_units(value))
        return probe

    def _after_reweight(self):
        self._hyper_n = 0  # the stored points moved: choose again on them
        self._hyper_params = None

    def fit(self, X, y, sample_weight=None):
        """Sample the forest on the training data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs; NaN and infinite values are rejected.
        y : array-like of shape (n_samples,)
            Targets (any units; the model is equivariant to affine changes of units). A 2-D
            ``y`` with several columns is refused (one model per output).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights, read as counts: a weight of 0 leaves the row out (it does
            not shape the partition either), an integer weight ``k`` gives the model of the
            row repeated ``k`` times. A fractional weight scales the row's Gaussian sufficient
            statistics ``(1, y, y**2)`` (see the user guide, "Sample weights").

        Returns
        -------
        self : object
        """
        with unchanged_on_error(self):
            self._validate_params()
            _check_one_output(y)
            X, y = validate_data(self, X, y, dtype=np.float64, order="C", y_numeric=True)
            _check_finite_targets(y)
            weights = check_sample_weight(sample_weight, X)
            X, y, weights = drop_zero_weights(weights, X, y)
            return self._learn(X, y, first=True, weights=weights)

    def partial_fit(self, X, y, sample_weight=None):
        """Extend the forest with new training points (same law as fitting all at once).

        The update is thread-safe and validated before any change: a rejected input leaves the
        model exactly as before, and so does a ``MemoryError`` or ``KeyboardInterrupt`` raised
        inside the update (large updates copy the trees first, small ones keep an undo log of
        the nodes they change; see the user guide, "Threads and failed calls"); reads from
        other threads wait for it to finish.

        A larger ``n_estimators`` set after fit adds trees sampled on the stored points (the law
        of a forest that had them from the start); a smaller one, or a changed ``lifetime``,
        ``min_samples_split`` or ``feature_scaling``, raises a ``ValueError`` (call ``fit``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Counts, as in :meth:`fit` (rows of weight 0 are left out).

        Returns
        -------
        self : object
        """
        with online_update(self, X):
            first = not hasattr(self, "_trees")
            # Parameter changes since fit are refused before anything changes.
            n_new_trees = 0 if first else self._warm_start_check()
            if first:
                self._validate_params()
            fast = None if first else self._fast_rows(X)
            if fast is not None and (type(y) is np.ndarray and y.ndim == 1
                                     and y.dtype == np.float64 and y.shape[0] == len(fast)
                                     and np.isfinite(y).all()):
                X = fast  # what validate_data would return unchanged (y too)
            else:
                _check_one_output(y)
                X, y = validate_data(self, X, y, dtype=np.float64, order="C", y_numeric=True,
                                     reset=first)
            _check_finite_targets(y)
            weights = check_sample_weight(sample_weight, X)
            X, y, weights = drop_zero_weights(weights, X, y)
            if not first:
                self._scaler.check(X)  # before the target map and sums change
            return self._learn(X, y, first, n_new_trees, weights, stream=True)

    # ----------------------------------------------------------------- river-style API

    def learn_one(self, x, y):
        """Learn from one sample (river-style online API; same model as ``partial_fit``).

        Atomic and thread-safe like :meth:`partial_fit`: a rejected input leaves the model
        exactly as before. The posteriors are refreshed after the update, as after every
        ``partial_fit``: the hyperparameters are derived again when the stored points grew by
        ``HYPER_PARAMS_GROWTH`` (10%) since they last were, and otherwise only the nodes on the
        sample's path change (O(depth) work). ``lifetime="auto"`` needs a batch: call ``fit``
        or ``partial_fit`` first.

        Parameters
        ----------
        x : dict or 1-D array-like
            One sample. Dicts are read in the order of ``feature_names_in_`` when the model was
            trained on named features, else in the key order of the first dict seen; a missing
            key, or a key outside those features, raises a ``ValueError`` naming it.
        y : float
            Its target.

        Returns
        -------
        self : object

        Examples
        --------
        >>> from mondrian import MondrianForestRegressor
        >>> reg = MondrianForestRegressor(n_estimators=5, random_state=0)
        >>> for k in range(20):
        ...     reg = reg.learn_one({"a": k / 20, "b": 1 - k / 20}, float(k))
        >>> mean, std = reg.predict_one({"a": 0.5, "b": 0.5}, return_std=True)
        >>> bool(0 < mean < 20 and std > 0)
        True
        """
        self._check_writable()
        target = _check_one_target(y)
        with online_update(self, x):
            row = self._one_row(x, learn=True)  # may remember the key order of a first dict
            first = not hasattr(self, "_trees")
            n_new_trees = 0
            if first:
                self._validate_params()
                self._validate_lifetime()
                if isinstance(self.lifetime, str):
                    raise ValueError(
                        'lifetime="auto" chooses the lifetime on a batch: call fit or '
                        "partial_fit before learn_one"
                    )
                self.n_features_in_ = row.shape[1]
            else:
                n_new_trees = self._warm_start_check()
                self._scaler.check(row)
            return self._learn(row, np.array([target]), first, n_new_trees, stream=True)

    def predict_one(self, x, return_std=False):
        """Predictive mean (and standard deviation) of one sample.

        Parameters
        ----------
        x : dict or 1-D array-like
            One sample (read as in :meth:`learn_one`).
        return_std : bool, default=False
            Also return the predictive standard deviation (noise included).

        Returns
        -------
        mean : float or None
            ``None`` before any training (river's convention: nothing to predict yet).
        std : float or None, only when ``return_std`` is True
        """
        if not hasattr(self, "_trees"):
            return (None, None) if return_std else None
        row = self._fast_scaled_row(x, clip=True)  # None: the full validation below
        if row is None:
            row = self._scaler.transform(self._one_row(x), clip=True)
        mean, std = self._moments_scaled(row)
        mean = float(mean[0])
        return (mean, float(std[0])) if return_std else mean

    # ----------------------------------------------------------------- hyperparameters

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

    def _held_out_choice(self, X, y, lifetime, weights=None):
        """Noise share and rate multiplier with the best held-out predictive likelihood, then
        the variance and spread scales of the predictive (``X`` in the trees' coordinates,
        ``y`` standardised by ``_y_scaler``).

        A probe forest of ``N_TREES_HELD_OUT`` trees is fitted on ``1 - HELD_OUT_FRACTION`` of
        the first batch; every (share, rate) grid point is scored by the Gaussian negative
        log-likelihood of the probe's predictions on the rest (at most ``HELD_OUT_MAX_POINTS``
        of them, randomly ordered by the split; the same predictive as :meth:`predict`). At the
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
        probe = MondrianForestRegressor(
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
        scores = np.full((len(shares), len(multipliers)), np.nan)
        moments = {}
        for b, multiplier in enumerate(multipliers):
            rate = self._rate(multiplier, base_rate)
            grid = probe._held_out_moments_grid(
                [probe._params(mean, var, share, rate) for share in shares], X_val, probe_floor)
            for a, share_moments in enumerate(grid):
                # Scored as the probe itself predicts (T = K trees, unit scales: the plain
                # NLL), or as one of its trees for a single-tree model.
                scores[a, b] = _expected_nll(*share_moments, y_val, w_val, K,
                                             K if forest else 1, np.ones(1), np.ones(1))[0, 0]
                moments[a, b] = share_moments
        best, best_score, kept = None, np.inf, None
        for a, share in enumerate(shares):  # the first best in (share, multiplier) order
            for b, multiplier in enumerate(multipliers):
                if scores[a, b] < best_score:
                    best, best_score, kept = (share, multiplier), scores[a, b], moments[a, b]
        share, multiplier = best
        rate = self._rate(multiplier, base_rate)
        rescaled = iter(probe._held_out_moments_grid(
            [probe._params(mean, var, share, rate, scale) for scale in scales if scale != 1.0],
            X_val, probe_floor))
        scores = np.array([
            _expected_nll(*(next(rescaled) if scale != 1.0 else kept),
                          y_val, w_val, K, self._n_trees(), np.ones(1), spread_scales)[0]
            for scale in scales])
        k, j = np.unravel_index(int(np.argmin(scores)), scores.shape)
        # [debias, issue 22] the lifetime combination, chosen on the same held-out points
        choose_combination(self, probe, probe._params(mean, var, share, rate, scales[k]),
                           probe_floor, X_val, y_val, w_val, float(spread_scales[j]))
        return (share, multiplier, float(scales[k]), float(spread_scales[j]), floor)

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

    # ----------------------------------------------------------------- lifetime paths

    def _path_metrics(self):
        return ("mse", "nll"), "mse", False

    def _path_copy_setup(self, forest):
        # Read the leaves independently, with this forest's hyperparameters frozen. They pass
        # in standardised units: in units of y a variance may overflow (targets of 1e300).
        cache = self._posterior()
        params, floor = cache.smoothing or cache.params, self._noise_floor()
        choice = getattr(self, "_hyper_choice", None)
        if choice is not None and len(choice) > 2:
            # The path reads the model before its calibration (variance and spread scales 1):
            # the scales were chosen for the hierarchical forest at its lifetime, change no
            # mean (nor the path's mse, which selects the lifetime), and the plain law of total
            # variance is what the path reader sums.
            share, multiplier = choice[:2]
            base_rate = 1.0 / self._time_scale(self._trees[:N_TREES_EMPIRICAL_BAYES])
            params = self._params(*self._base_params(), share, self._rate(multiplier, base_rate))
            forest._hyper_choice = (share, multiplier, 1.0, 1.0, floor)
        forest.set_params(smoothing="independent")
        forest._frozen_prior = (params.mean0, params.noise, params.prior_var, params.rate, floor)

    def _path_targets(self, X, y):
        y = np.asarray(y, dtype=np.float64)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
        if not np.isfinite(y).all():
            raise ValueError("y contains NaN or infinity")
        return self._y_scaler.transform(y)

    def _path_reader(self, y_std):
        cache = self._posterior()
        params = cache.smoothing or cache.params  # the leaves' posteriors
        means, variances = [], []
        for tree in self._trees:
            value = tree.value_array
            precision = 1.0 / params.prior_var + value[:, 0] / params.noise
            reading = np.column_stack([
                (params.mean0 / params.prior_var + value[:, 1] / params.noise)
                / precision,
                1.0 / precision,
            ])
            inherit_unlabelled(tree, reading, (value[:, 0] > 0).astype(np.uint8))
            means.append(reading[:, 0].copy())
            variances.append(reading[:, 1].copy())
        return GaussianLeafReader(means, variances, y_std, cache.params.noise)

    def _path_units(self, metrics):
        y_map = self._y_scaler
        return {"mse": y_map.variance_to_units(metrics["mse"]),
                "nll": metrics["nll"] + np.log(y_map.scale)}

    # ----------------------------------------------------------------- prediction

    def _moments_scaled(self, X_scaled, lifetime=None):
        cache = self._posterior()

        def run(trees, X, out):
            index = {id(t): k for k, t in enumerate(self._trees)}
            messages = [cache.messages[index[id(t)]] for t in trees]
            predict_moments_trees(
                trees, messages, X, out, cache.params, int(self.n_quadrature), lifetime
            )

        spread_scale = self._spread_scale()
        out = self._accumulate(run, X_scaled, 2 if spread_scale == 1.0 else 3, self._n_jobs())
        out /= len(self._trees)
        mean = out[:, 0]
        if spread_scale == 1.0:  # the law of total variance over the trees
            var = np.maximum(out[:, 1] - mean * mean, 0.0)
        else:  # the trees' mean predictive variance plus the scaled spread of their means
            var = (np.maximum(out[:, 1] - out[:, 2], 0.0)
                   + spread_scale * np.maximum(out[:, 2] - mean * mean, 0.0))
        if lifetime is None:  # [debias, issue 22] the combination of lifetimes, if chosen
            mean, var = combine_lifetimes(self, X_scaled, mean, var)
        # The standard deviation, not the variance, goes back to units: the variance of targets
        # of 1e-300 or 1e300 would underflow or overflow.
        return self._y_scaler.inverse(mean, np.sqrt(var))

    def _spread_scale(self):
        """Factor of the spread of the trees' means in the predictive variance (held-out
        choice; 1 without one: the law of total variance)."""
        choice = getattr(self, "_hyper_choice", None)
        if choice is None or len(choice) < 4:  # (models pickled before the scales)
            return 1.0
        return float(choice[3])

    def predict(self, X, return_std=False):
        """Predictive mean (and standard deviation) of the targets.

        The predictive distribution of each tree mixes the posterior of the leaf reached by
        ``x`` with the posteriors of the nodes that would be created if ``x`` branched off the
        tree higher up; the forest combines its trees by the law of total variance, the spread
        of their means scaled by ``hyperparameters_["spread_scale"]`` (chosen on held-out
        points with a common scale of the noise and prior variances: the calibration).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        return_std : bool, default=False
            Also return the predictive standard deviation (noise included).

        Returns
        -------
        mean : ndarray of shape (n_samples,)
        std : ndarray of shape (n_samples,), only when ``return_std`` is True
        """
        mean, std = self._moments_scaled(self._validate_X_predict(X))
        return (mean, std) if return_std else mean

    def log_marginal_likelihood(self):
        """Average over trees of the log marginal likelihood of the (scaled) training targets."""
        check_is_fitted(self, "_trees")
        cache = self._posterior()
        log_ml = cache.log_ml
        if log_ml is None:  # after an online refresh: one full pass (the same bits)
            log_ml = float(np.mean([upward_messages(tree, cache.smoothing)[2]
                                    for tree in self._trees]))
        return log_ml


_LIFETIME_DOC = """    lifetime : float or "auto", default=np.inf
        Lifetime λ of the Mondrian process (scaled feature units). ``"auto"`` holds out
        ``validation_fraction`` of the first batch, fits at lifetime ``inf`` on the rest, walks
        the :meth:`lifetime_path` on the held-out part (squared error of independent Gaussian
        leaves) and refits on the whole batch at the best lifetime (``lifetime_``; the path is
        kept in ``lifetime_path_``). Later online updates keep that lifetime.
"""

_REGRESSOR_DOC_PARAMS = """\
        For the regressors, ``"auto"`` probes every power under both maps (min-max, and the
        per-feature quantile map in front of it), keeps the simplest candidate that the best
        does not beat by one paired standard error, and from 2000 rows lets the powers of the
        ARD Laplace lifetimes (``"laplace_ard"``) compete with those of the extra trees.
    smoothing : {"hierarchical", "independent"}, default="hierarchical"
        ``"hierarchical"``: node means form a Gaussian random walk down the tree whose
        variance grows with split time through ``ψ(t) = σ² sigmoid(γ t)`` (LRT 2016); posteriors by
        exact belief propagation. ``"independent"``: each leaf mean has its own Gaussian prior.
    noise_variance : float, default=None
        Observation noise σ_y² (units of y squared). ``None`` chooses its share of the target
        variance on the first batch: a probe forest of 8 trees is fitted on 80% of it and the
        share (14 values from 1e-6 to 0.7) and the sigmoid rate that give the best Gaussian
        predictive log-likelihood on the other 20% are kept (batches under 50 points: the grid
        point maximising the trees' marginal likelihood instead). The same points then calibrate
        the predictive: a common scale of the noise and prior variances (it changes no mean)
        and a factor of the spread of the tree means, chosen for the expected log-likelihood
        of the full forest; a fixed ``noise_variance`` or ``prior_variance`` disables this.
        The noise of the predictive never goes below the 95% lower confidence bound on σ_y²
        that training rows with identical inputs and different targets give (their pooled
        within-group variance; 0 without duplicated inputs), in the held-out scoring too; the
        posteriors, and so the means, keep the chosen noise.
    prior_variance : float, default=None
        Prior variance of a leaf mean (σ²/2 in the hierarchical model). ``None`` uses the
        target variance minus the noise variance.
    sigmoid_rate : float, default=None
        Rate γ of the variance clock. ``None`` picks it with the noise share, among 9 multiples
        (0.25 to 64) of the inverse median split time.
    n_quadrature : int, default=4
        Quadrature points over the branching time of a test point.
    validation_fraction : float, default=0.2
        Share of the data held out to choose the lifetime when ``lifetime="auto"``.
"""


class MondrianForestRegressor(TreeSequenceMixin, _BaseMondrianRegressor):
    __doc__ = f"""Online Mondrian forest regressor with calibrated predictive uncertainty.

    Trees are Mondrian processes on the data, grown in batch (:meth:`fit`) or online
    (:meth:`partial_fit`) with the same law. Each tree carries a hierarchical Gaussian prior on
    its node means; ``predict(X, return_std=True)`` integrates over where ``x`` would branch off
    each tree, so the predictive standard deviation grows back to the prior's away from the
    data. Default hyperparameters are chosen by empirical Bayes at the end of a fit and, online,
    each time the stored points grew by 10% (see the user guide, "Online hyperparameters").

    Parameters
    ----------
    n_estimators : int, default=100
        Number of trees.
{_LIFETIME_DOC}    min_samples_split : int or float, default=2
        Leaves with fewer points (a total sample weight below it, with weights) pause. A float
        in (0, 1] is a share of the first batch's rows (scikit-learn's rule,
        ``max(2, ceil(min_samples_split * n_samples))``), fixed at the first fit.
    feature_scaling : {{"minmax"}} or None, default="minmax"
        Min-max feature map frozen on first sight (see :class:`MondrianForestClassifier`).
{FOREST_FEATURE_WEIGHTS_DOC}{_REGRESSOR_DOC_PARAMS}{DEBIAS_DOC}    n_jobs : int, default=None
        Threads over trees.
    {WINDOW_DOC}
    random_state : int, RandomState instance or None, default=None
        Seeds the trees' random streams.
    verbose : int, default=0
        Verbosity of the threaded training.

    Attributes
    ----------
    estimators_ : list of MondrianTreeRegressor
        The trees.
    n_features_in_ : int
        Number of features seen during fit.
    hyperparameters_ : dict
        Hyperparameters in use (units of y).
    lifetime_ : float
        The lifetime of the fitted trees (the parameter, or the one chosen by ``"auto"``).
    feature_importances_ : ndarray of shape (n_features,)
        Share of each feature in the decrease of the training squared error at the trees'
        cuts (see the user guide, "Feature importances").
    feature_weights_ : ndarray of shape (n_features,)
        The weights of the feature map (ones without weights). With a learned map,
        ``feature_weights_info_`` holds the search (method, relevances, power, scores, map).
    debias_ : dict or None
        The debiased combination in use (lifetime, weights, variance terms), None for the plain
        forest (see ``debias``).

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import MondrianForestRegressor
    >>> X = np.linspace(0, 1, 50)[:, None]
    >>> y = np.sin(6 * X[:, 0])
    >>> reg = MondrianForestRegressor(n_estimators=10, random_state=0).fit(X, y)
    >>> mean, std = reg.predict([[0.5], [5.0]], return_std=True)
    >>> bool(std[1] > std[0])
    True
    """

    _parameter_constraints = {
        **_BaseMondrianRegressor._parameter_constraints,
        **FOREST_PARAMETER_CONSTRAINTS,
        "debias": [StrOptions({"auto"}), None],  # [debias, issue 22]
    }
    debias_ = property(debias_info)  # [debias, issue 22]

    def __init__(
        self,
        n_estimators=100,
        *,
        lifetime=np.inf,
        min_samples_split=2,
        feature_scaling="minmax",
        feature_weights="auto",
        smoothing="hierarchical",
        noise_variance=None,
        prior_variance=None,
        sigmoid_rate=None,
        n_quadrature=4,
        validation_fraction=0.2,
        debias="auto",
        window=None,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.n_estimators = n_estimators
        self.lifetime = lifetime
        self.min_samples_split = min_samples_split
        self.feature_scaling = feature_scaling
        self.feature_weights = feature_weights
        self.smoothing = smoothing
        self.noise_variance = noise_variance
        self.prior_variance = prior_variance
        self.sigmoid_rate = sigmoid_rate
        self.n_quadrature = n_quadrature
        self.validation_fraction = validation_fraction
        self.debias = debias
        self.n_jobs = n_jobs
        self.window = window
        self.random_state = random_state
        self.verbose = verbose


class MondrianTreeRegressor(SingleTreeMixin, _BaseMondrianRegressor):
    __doc__ = f"""A single Mondrian tree regressor; see :class:`MondrianForestRegressor`.

    Parameters
    ----------
{_LIFETIME_DOC}    min_samples_split : int or float, default=2
        Leaves with fewer points pause (a float: a share of the first batch, as in the
        forest).
    feature_scaling : {{"minmax"}} or None, default="minmax"
        Min-max feature map frozen on first sight.
{FOREST_FEATURE_WEIGHTS_DOC}{_REGRESSOR_DOC_PARAMS}\
    {WINDOW_DOC}
    random_state : int, RandomState instance or None, default=None
        Seed of the tree's random stream.

    Attributes
    ----------
    tree_ : MondrianTreeStructure
        Read-only arrays describing the tree; ``value`` holds the mean and variance of the
        targets below each node (units of y).
    n_features_in_ : int
        Number of features seen during fit.
    feature_importances_ : ndarray of shape (n_features,)
        Share of each feature in the decrease of the training squared error at the cuts.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import MondrianTreeRegressor
    >>> X = np.linspace(0, 1, 40)[:, None]
    >>> tree = MondrianTreeRegressor(random_state=0).fit(X, X[:, 0] ** 2)
    >>> mean, std = tree.predict([[0.5]], return_std=True)
    >>> bool(abs(mean[0] - 0.25) < 0.1)
    True
    """

    def __init__(
        self,
        *,
        lifetime=np.inf,
        min_samples_split=2,
        feature_scaling="minmax",
        feature_weights="auto",
        smoothing="hierarchical",
        noise_variance=None,
        prior_variance=None,
        sigmoid_rate=None,
        n_quadrature=4,
        validation_fraction=0.2,
        window=None,
        random_state=None,
    ):
        self.lifetime = lifetime
        self.min_samples_split = min_samples_split
        self.feature_scaling = feature_scaling
        self.feature_weights = feature_weights
        self.smoothing = smoothing
        self.noise_variance = noise_variance
        self.prior_variance = prior_variance
        self.sigmoid_rate = sigmoid_rate
        self.n_quadrature = n_quadrature
        self.validation_fraction = validation_fraction
        self.window = window
        self.random_state = random_state

    def _value_in_units(self, value):
        n = np.maximum(value[:, 0], 1.0)
        mean = value[:, 1] / n
        var = np.maximum(value[:, 2] / n - mean**2, 0.0)
        return np.column_stack([self._y_scaler.inverse(mean),
                                self._y_scaler.variance_to_units(var)])

    @property
    def tree_(self):
        """Read-only description of the fitted tree (:class:`MondrianTreeStructure`)."""
        check_is_fitted(self, "_trees")
        return MondrianTreeStructure(
            self._trees[0], self._scaler, value_transform=self._value_in_units, owner=self
        )


MondrianForestRegressor._tree_view_class = MondrianTreeRegressor
# The weight search of a single tree probes a small forest (one tree scores too noisily).
MondrianTreeRegressor._weights_probe_class = MondrianForestRegressor
