"""Ridge regression on Mondrian grid features, with the greedy lifetime search of the report."""

import numbers

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data
from threadpoolctl import threadpool_limits

from mondrian._docstrings import GRID_FEATURE_SCALING
from mondrian.core.feature_map import FeatureScaler
from mondrian.estimator.atomic import atomic_fit
from mondrian.estimator.holdout import holdout_split
from mondrian.estimator.locking import LockedMethodsMixin
from mondrian.estimator.params import StrictParamsMixin
from mondrian.estimator.targets import check_target_scale
from mondrian.estimator.versioned import VersionedStateMixin
from mondrian.grid._cuts import GridCuts, GridSample
from mondrian.grid._search import greedy_search
from mondrian.grid.features import GridMap, check_lifetimes, draw_seed
from mondrian.grid.path import METRICS, GridLifetimePath
from mondrian.kernel._ridge_inverse import RidgeInverse
from mondrian.kernel._ridge_path import RidgePathVisitor

__all__ = ["MondrianGridRidge"]


class MondrianGridRidge(RegressorMixin, StrictParamsMixin, LockedMethodsMixin, VersionedStateMixin,
                        BaseEstimator):
    __doc__ = f"""\
    Kernel ridge regression on Mondrian grid features (ARD Laplace kernel), with learned
    per-dimension lifetimes.

    Minimises ``||y - Z w||^2 + alpha ||w||^2`` over the cell indicators ``Z`` of
    :class:`MondrianGridFeatures` (targets centred on their training mean).

    With ``lifetimes="auto"`` the lifetimes are searched greedily (section 5.2 of Balog's
    report): from lifetime 0 in every dimension, each step tries holding the next cut of every
    dimension (``search="add"``), and also dropping its last one (``"add_remove"``), scores
    each trial on the validation part and commits the best. A trial is an exact incremental
    update of the ridge solution: a cut splits every cell it crosses that holds points on both
    sides (one product with the inverse of ``Z'Z + alpha I`` and a low-rank correction per
    split), a removed cut merges the cell pairs it separated (the four-step merge per pair);
    the kernel ridge path's inverse does both (one implementation). The configuration of
    smallest validation error is kept (``lifetimes_``) and the model is refitted at it on the
    training data (all of ``X`` when the validation part was carved from it).

    Parameters
    ----------
    n_grids : int, default=50
        Number of grids M.
    alpha : float, default=1.0
        Ridge constant δ².
    lifetimes : "auto" or float or array-like of shape (n_features,), default="auto"
        Fixed lifetimes (scaled units; a scalar is used for every dimension), or "auto".
    search : {{"add", "add_remove"}}, default="add"
        Moves tried by the greedy search. ``"add_remove"`` never returns to a configuration
        it has visited (so it cannot cycle).
    max_features : int, default=2000
        Largest number of features (cells over all grids) of any model the search scores: a
        trial that would exceed it is not eligible, and the search ends when no trial is
        (the search then reports the best configuration seen, which may be limited by this
        budget: raise it, or lower ``n_grids``, if the last steps were still improving). With
        fixed lifetimes, a model with more features raises a ``ValueError``.
    cuts_per_step : int or None, default=None
        Cuts held (or dropped) by one trial in one dimension, in birth order over all grids.
        ``None`` means ``n_grids`` (about one more cut per grid: every step changes the kernel
        by a comparable amount, and the validation noise of single-cut trials, which change
        one grid in ``M``, no longer decides the direction); 1 is the report's procedure.
    n_iter_no_change : int or None, default=None
        Stop the search after this many steps without a smaller validation error (None: go
        on until no trial is eligible).
    validation_fraction : float, default=0.2
        Share of ``X`` held out to score the search when ``fit`` gets no ``X_val``.
{GRID_FEATURE_SCALING}\
    random_state : int, RandomState instance or None, default=None
        Seeds the validation split and the grids.

    Attributes
    ----------
    lifetimes_ : ndarray of shape (n_features,)
        Lifetimes of the fitted model.
    lifetime_path_ : GridLifetimePath
        The configurations visited by the search (``lifetimes="auto"`` only).
    coef_ : ndarray of shape (n_outputs,)
        Ridge weights.
    n_features_out_ : int
        Number of grid features of the fitted model.
    n_features_in_ : int

    Notes
    -----
    Thread safety (:class:`~mondrian.estimator.locking.LockedMethodsMixin`, as the other
    estimators): any number of threads may read the model at once (``predict``, ``score``,
    pickling); ``fit`` runs alone, and reads arriving meanwhile wait for it. ``fit`` is
    atomic: when it raises, the previous model is left as it was.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import MondrianGridRidge
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(size=(200, 2))
    >>> y = np.sin(6 * X[:, 0]) + 0.05 * rng.normal(size=200)
    >>> model = MondrianGridRidge(n_grids=10, alpha=0.1, max_features=300,
    ...                           random_state=0).fit(X, y)
    >>> bool(model.lifetimes_[1] < model.lifetimes_[0])
    True
    """

    _state_types = {"_map": GridMap, "_ridge": RidgeInverse}

    _parameter_constraints = {
        "n_grids": [Interval(numbers.Integral, 1, None, closed="left")],
        "alpha": [Interval(numbers.Real, 0, None, closed="neither")],
        "lifetimes": [StrOptions({"auto"}), "array-like",
                      Interval(numbers.Real, 0, None, closed="both")],
        "search": [StrOptions({"add", "add_remove"})],
        "max_features": [Interval(numbers.Integral, 1, None, closed="left")],
        "cuts_per_step": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "n_iter_no_change": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "feature_scaling": [StrOptions({"minmax"}), None],
        "random_state": ["random_state"],
    }

    def __init__(self, n_grids=50, *, alpha=1.0, lifetimes="auto", search="add",
                 max_features=2000, cuts_per_step=None, n_iter_no_change=None,
                 validation_fraction=0.2, feature_scaling="minmax", random_state=None):
        self.n_grids = n_grids
        self.alpha = alpha
        self.lifetimes = lifetimes
        self.search = search
        self.max_features = max_features
        self.cuts_per_step = cuts_per_step
        self.n_iter_no_change = n_iter_no_change
        self.validation_fraction = validation_fraction
        self.feature_scaling = feature_scaling
        self.random_state = random_state

    @atomic_fit
    def fit(self, X, y, X_val=None, y_val=None):
        """Choose the lifetimes (if "auto") and fit the ridge weights.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        X_val, y_val : array-like, default=None
            Validation data scoring the search (``lifetimes="auto"``); by default
            ``validation_fraction`` of ``X`` is held out. With ``X_val`` given, the final model
            is fitted on ``X`` only.

        Returns
        -------
        self : object
        """
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=np.float64, order="C", y_numeric=True)
        check_target_scale(y)
        if (X_val is None) != (y_val is None):
            raise ValueError("give both X_val and y_val, or neither")
        auto = isinstance(self.lifetimes, str)
        if not auto:
            lifetimes = check_lifetimes(self.lifetimes, X.shape[1])
            if X_val is not None:
                raise ValueError("X_val scores the lifetime search: it needs lifetimes='auto'")
        if auto and self.max_features < self.n_grids:
            raise ValueError(
                f"max_features={self.max_features} is below n_grids={self.n_grids}: the model "
                "at lifetime 0 already has one feature per grid")
        rng = check_random_state(self.random_state)
        if X_val is not None:
            X_val, y_val = validate_data(self, X_val, y_val, reset=False, dtype=np.float64,
                                         order="C", y_numeric=True)
            if len(y_val) == 0:
                raise ValueError("X_val holds no sample")
            X_fit, y_fit = X, y
        elif auto:
            if len(y) < 2:
                raise ValueError(
                    "n_samples = 1: lifetimes='auto' needs at least 2 samples (one to fit, "
                    "one to validate)")
            X_fit, X_val, y_fit, y_val = holdout_split(X, y, self.validation_fraction, rng)
        scaler = FeatureScaler(self.feature_scaling == "minmax", warm_up=X.shape[0])
        scaler.update(X)
        X_scaled = scaler.transform(X)
        seed = draw_seed(rng)
        path = None
        if auto:
            # The grids hold the fit and validation points, fit part first.
            X_both = np.vstack([scaler.transform(X_fit, clip=True),
                                scaler.transform(X_val, clip=True)])
            sample = GridSample(X_both, int(self.n_grids), seed)
            path = self._search(sample, y_fit, y_val)
            lifetimes = path.best_lifetimes
        else:
            sample = GridSample(X_scaled, int(self.n_grids), seed)
        # The features are the cells holding training points (all of X; with an explicit
        # X_val, cells holding only validation points would get weight 0 anyway).
        grid_map = GridMap(sample, lifetimes, X_scaled)
        if grid_map.n_features > self.max_features and not auto:
            raise ValueError(
                f"the grids have {grid_map.n_features} cells at these lifetimes, more than "
                f"max_features={self.max_features}: lower the lifetimes or n_grids, or raise "
                "max_features")
        Z = grid_map.transform(X_scaled)
        y_offset = float(np.mean(y))
        A = (Z.T @ Z).toarray() + self.alpha * np.eye(Z.shape[1])
        ridge = RidgeInverse(max(Z.shape[1], 1), float(self.alpha))
        ridge.start(np.ascontiguousarray(A), Z.T @ (y - y_offset))
        ridge.update_weights()
        self._scaler, self._map, self._ridge, self._y_offset = scaler, grid_map, ridge, y_offset
        self.lifetimes_ = np.asarray(lifetimes, dtype=np.float64).copy()
        self.__dict__.pop("lifetime_path_", None)
        if path is not None:
            self.lifetime_path_ = path
        return self

    def _search(self, sample, y_fit, y_val):
        """The greedy search on ``sample`` (fit points first, then validation points)."""
        source = GridCuts(sample)
        offset = float(np.mean(y_fit))
        targets = np.ascontiguousarray(np.r_[y_fit, y_val] - offset)
        is_train = np.r_[np.ones(len(y_fit), np.uint8), np.zeros(len(y_val), np.uint8)]
        # Room for 128 pending splits: a trial that splits fewer cells never writes the
        # stored inverse, so going back to the saved state copies no C x C block.
        visitor = RidgePathVisitor(targets, is_train, float(self.alpha),
                                   capacity=int(self.max_features), pending_cuts=128)
        # Every move is a series of O(C^2) BLAS-2 updates and small BLAS-3 flushes: threads
        # only add synchronisation to them (16x slower on a loaded 2-core machine).
        with threadpool_limits(limits=1, user_api="blas"):
            steps = greedy_search(source, visitor, allow_remove=self.search == "add_remove",
                                  max_features=int(self.max_features),
                                  cuts_per_step=int(self.n_grids if self.cuts_per_step is None
                                                    else self.cuts_per_step),
                                  n_iter_no_change=self.n_iter_no_change)
        rows = np.array([row for *_, row in steps])
        return GridLifetimePath(
            [s[0] for s in steps], [s[1] for s in steps], np.array([s[2] for s in steps]),
            {name: rows[:, k] for k, name in enumerate(METRICS)}, self.search)

    @property
    def coef_(self):
        """Ridge weights of the grid features."""
        check_is_fitted(self, "_ridge")
        return self._ridge.coef

    @property
    def n_features_out_(self):
        """Number of grid features of the fitted model."""
        check_is_fitted(self, "_map")
        return self._map.n_features

    def predict(self, X):
        """Ridge prediction.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "_ridge")
        X = validate_data(self, X, reset=False, dtype=np.float64, order="C")
        Z = self._map.transform(self._scaler.transform(X, clip=True))
        return Z @ self._ridge.coef + self._y_offset
