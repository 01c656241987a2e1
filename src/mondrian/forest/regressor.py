"""Mondrian forest regressor with predictive uncertainty (Lakshminarayanan, Roy & Teh, 2016)."""

import contextlib
import copy
import numbers

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from mondrian._docstrings import FOREST_FEATURE_WEIGHTS, WINDOW, fill_doc
from mondrian.estimator import relevance
from mondrian.estimator.atomic import online_update, unchanged_on_error
from mondrian.estimator.conventions import (
    ConventionsMixin,
    TreeSequenceMixin,
)
from mondrian.estimator.ensemble import BaseMondrianEnsemble
from mondrian.estimator.inputs import check_sample_weight, drop_zero_weights
from mondrian.estimator.params import FOREST_PARAMETER_CONSTRAINTS, WINDOW_CONSTRAINT
from mondrian.estimator.structure import MondrianTreeStructure
from mondrian.estimator.tree_mixins import FeatureImportanceMixin, PruneMixin, SingleTreeMixin
from mondrian.forest._gaussian import predict_moments_trees, upward_messages
from mondrian.forest._hyperparameters import N_TREES_EMPIRICAL_BAYES, HyperparameterMixin
from mondrian.forest._ingest import IngestMixin
from mondrian.forest._node_cache import predict_cache
from mondrian.forest._online_posterior import OnlinePosteriorMixin, _PosteriorCache
from mondrian.forest._path_readers import GaussianLeafReader, inherit_unlabelled
from mondrian.forest._targets import (
    _check_finite_targets,
    _check_one_output,
    _check_one_target,
    _rescaled_rows,
    _rescaled_tree,
    _TargetScaler,
)
from mondrian.forest.debias import DEBIAS_DOC, combine_lifetimes, debias_info, shorter_reading
from mondrian.forest.forgetting import RegressorForgetMixin
from mondrian.forest.lifetime_path import LifetimePathMixin

__all__ = ["MondrianForestRegressor", "MondrianTreeRegressor"]

# feature_weights="auto" of the regressors: every power probed under both maps, the simplest
# candidate within one paired standard error of the best, and from this many rows the powers
# of the ARD Laplace lifetimes competing with those of the extra trees (benchmarks/results/
# weights.md, 2026-11-23 noise floor: mean RMSE / RF 1.103 -> 1.053 over the 8 UCI sets, NLL
# better than RF on the same 4, mean fit / RF 0.95 -> 1.45).
WEIGHTS_LAPLACE_MIN_ROWS = 2000

# Pickles name the target map a class of this module, where it was defined first (the very
# string object of this module's name, as for the classes defined here: the same bytes).
_TargetScaler.__module__ = __name__


class _BaseMondrianRegressor(
    ConventionsMixin, OnlinePosteriorMixin, RegressorMixin, LifetimePathMixin, PruneMixin,
    FeatureImportanceMixin, RegressorForgetMixin, HyperparameterMixin, IngestMixin,
    BaseMondrianEnsemble,
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
        "window": WINDOW_CONSTRAINT,
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
        # The combination of lifetimes was chosen for the unpruned forest.
        self.__dict__.pop("_debias_choice", None)
        self._posterior_cache = _PosteriorCache()
        self._hyper_params = None
        self._y_sums = self._y_sums.copy()
        self._y_scaler = copy.deepcopy(self._y_scaler)

    # ----------------------------------------------------------------- training

    def _node_losses(self, value):
        # Squared error of each node's targets about their (weighted) mean, from (n, Σy, Σy²).
        n = np.maximum(value[:, 0], np.finfo(float).tiny)
        return np.maximum(value[:, 2] - value[:, 1] ** 2 / n, 0.0)

    _target_validation = {"y_numeric": True}

    def _check_raw_targets(self, y):
        _check_one_output(y)

    def _check_targets(self, y):
        _check_finite_targets(y)

    @staticmethod
    def _fast_targets(y, n_rows):
        """Whether ``y`` is a 1-D finite float64 ndarray of ``n_rows`` targets (what
        ``validate_data`` and the target checks return unchanged)."""
        return (type(y) is np.ndarray and y.ndim == 1 and y.dtype == np.float64
                and y.shape[0] == n_rows and np.isfinite(y).all())

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

    @staticmethod
    def _auto_warm_up():
        # The regressors' stream window of feature_weights="auto" holds twice the
        # classifiers' rows (512): chosen on 256 rows (squared errors of probes, a noisy
        # score) the weights raised the prequential MAE of every stream measured, and on 512
        # they lowered it (5 seeds, 10 trees: TrumpApproval 0.533 -> 0.524, ChickWeights
        # 25.4 -> 22.7; kin8nm, 8000 rows, 0.146 -> 0.130; benchmarks/results/
        # online_regression.md); uniform weights for good lose where a feature is irrelevant
        # (tests/forest/test_regressor.py: RMSE 0.031 -> 0.072 online).
        return 2 * relevance.AUTO_WARM_UP  # read at call time (tests may lower it)

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
            X, y = self._validated(X, y, first=True)
            weights = check_sample_weight(sample_weight, X)
            X, y, weights = drop_zero_weights(weights, X, y)
            return self._learn(X, y, first=True, weights=weights)

    @fill_doc
    def partial_fit(self, X, y, sample_weight=None):
        """Extend the forest with new training points (same law as fitting all at once).

        {ONLINE_UPDATE}

        {ONLINE_PARAMETER_CHANGES}

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
            X, y, first = self._prepare_batch(X, y)
            # Parameter changes since fit are refused before anything changes.
            n_new_trees = 0 if first else self._warm_start_check()
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
        if self._fast_one(x, y):
            return self
        self._check_writable()
        target = _check_one_target(y)
        with online_update(self, x):
            row, first, n_new_trees = self._prepare_one(x)
            if not first:
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
        forest.__dict__.pop("_debias_choice", None)  # the path reads the plain forest
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
        boxes = predict_cache(self)
        # [debias] the shorter forest read in the same pass (its walks shared): two columns more
        shorter = shorter_reading(self) if lifetime is None else None

        def run(trees, X, out):
            messages = cache.messages
            short_messages = shorter and shorter[1]
            if trees is not self._trees:  # a chunk of the trees (threads)
                index = {id(t): k for k, t in enumerate(self._trees)}
                messages = [messages[index[id(t)]] for t in trees]
                if shorter:
                    short_messages = [shorter[1][index[id(t)]] for t in trees]
            predict_moments_trees(
                trees, messages, X, out, cache.params, int(self.n_quadrature), lifetime,
                cache=boxes, shorter_lifetime=shorter and shorter[0],
                shorter_messages=short_messages,
            )

        spread_scale = self._spread_scale()
        width = 2 if spread_scale == 1.0 else 3
        out = self._accumulate(run, X_scaled, width + (2 if shorter else 0), self._n_jobs())
        out /= len(self._trees)
        mean = out[:, 0]
        if spread_scale == 1.0:  # the law of total variance over the trees
            var = np.maximum(out[:, 1] - mean * mean, 0.0)
        else:  # the trees' mean predictive variance plus the scaled spread of their means
            var = (np.maximum(out[:, 1] - out[:, 2], 0.0)
                   + spread_scale * np.maximum(out[:, 2] - mean * mean, 0.0))
        if lifetime is None:  # [debias, issue 22] the combination of lifetimes, if chosen
            mean, var = combine_lifetimes(self, X_scaled, mean, var,
                                          out[:, width] if shorter else None)
        # The standard deviation, not the variance, goes back to units: the variance of targets
        # of 1e-300 or 1e300 would underflow or overflow.
        return self._y_scaler.inverse(mean, np.sqrt(var))

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
{FOREST_FEATURE_WEIGHTS}{_REGRESSOR_DOC_PARAMS}{DEBIAS_DOC}    n_jobs : int, default=None
        Threads over trees.
    {WINDOW}
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
{FOREST_FEATURE_WEIGHTS}{_REGRESSOR_DOC_PARAMS}\
    {WINDOW}
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
# The held-out choice of the hyperparameters probes a forest (of a single tree too).
_BaseMondrianRegressor._held_out_probe_class = MondrianForestRegressor
