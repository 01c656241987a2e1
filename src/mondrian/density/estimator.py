"""Mondrian forest density estimation with a Polya-tree Beta prior (Balog 2015, App. C)."""

import numbers

import numpy as np
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from mondrian.core.ensemble import TreeEnsemble
from mondrian.core.feature_map import FeatureScaler, check_weights
from mondrian.density._full_cell import (
    FullCellTree,
    _loo_log_density_trees,
    leaf_log_masses,
    log_density_trees_cached,
    path_edges,
    sample_trees,
)
from mondrian.density._path_reader import LogDensityReader
from mondrian.density.forgetting import DensityForgetMixin
from mondrian.estimator.atomic import online_update, unchanged_on_error
from mondrian.estimator.ensemble import EnsembleMixin
from mondrian.estimator.inputs import check_sample_weight
from mondrian.estimator.params import WINDOW_CONSTRAINT
from mondrian.estimator.relevance import beats, power_weights
from mondrian.estimator.tree_mixins import pruned_copy
from mondrian.estimator.versioned import VersionedStateMixin
from mondrian.forest._node_cache import predict_cache
from mondrian.path._engine import plan_path, run_path
from mondrian.path.result import LifetimePath, check_direction

__all__ = ["MondrianForestDensity"]

# Version of the pickled estimator state (the trees carry their own version too).
STATE_VERSION = 2

# Default terminal lifetime: MAX_LIFETIME_FACTOR * max(1, n ** (1 / D)). Cells of a Mondrian at
# time t have sides of about 1/t, so n ** (1 / D) is the lifetime at which the cube holds about
# n cells; the factor leaves room for cells smaller than the typical spacing of the data.
MAX_LIFETIME_FACTOR = 8.0

# Candidate concentrations of concentration="auto" (chosen by leave-one-out likelihood).
CONCENTRATIONS = np.geomspace(1e-5, 10.0, 7)

# Reported in place of log densities below the most negative float (far outside the domain).
LOG_DENSITY_FLOOR = -np.finfo(np.float64).max

# feature_weights="auto": trees of the probe forests (the per-feature densities and the
# candidate weightings), powers of the per-feature lifetimes tried (0: uniform weights), and
# the smallest first batch searched (smaller ones keep uniform weights).
AUTO_TREES = 10
AUTO_POWERS = (0.0, 0.5, 1.0, 2.0, 4.0)
AUTO_MIN_SAMPLES = 50

# Most copies that integer sample weights may ask for (2**32 rows of even one feature are
# 32 GiB): a larger total is refused rather than left to fail in the allocator.
MAX_REPEATS = 2**32


def _repeat_weighted(X, sample_weight):
    """``X`` with every row repeated by its integer weight (rows of weight 0 dropped)."""
    weights = check_sample_weight(sample_weight, X)
    if weights is None:
        return X
    if not np.array_equal(weights, np.round(weights)):
        raise ValueError(
            "MondrianForestDensity takes integer sample weights (counts: each row stands for "
            "that many copies of it); fractional weights are not supported"
        )
    total = float(weights.sum())
    if total > MAX_REPEATS:
        raise ValueError(
            f"sample_weight sums to {total:.4g} repeated rows, above the {MAX_REPEATS} that "
            "MondrianForestDensity can hold (each unit of weight is a stored copy of its row)"
        )
    return np.ascontiguousarray(np.repeat(X, weights.astype(np.intp), axis=0))


def _domain_map(lower, width, weights=None):
    """The fixed feature map of ``B_0``: ``v = w (x - lower) / width`` (what two ensembles must
    share to be merged)."""
    feature_map = FeatureScaler(True, warm_up=0, weights=weights)
    feature_map.offset = np.asarray(lower, dtype=np.float64).copy()
    feature_map.scale = np.asarray(width, dtype=np.float64).copy()
    feature_map.frozen = np.ones(len(feature_map.offset), dtype=bool)
    return feature_map


class _DensityEnsemble(TreeEnsemble):
    """The density's tree ensemble: every new tree starts with the root cell ``[0, cell_d]``
    (the feature weights; ``None``: the unit cube), also the trees added later."""

    cell = None  # (ensembles pickled before the weights existed have none)

    def __init__(self, *args, cell=None, **kwargs):
        self.cell = None if cell is None else np.asarray(cell, dtype=np.float64).copy()
        super().__init__(*args, **kwargs)

    def _new_trees(self, seeds):
        trees = super()._new_trees(seeds)
        if self.cell is not None:
            for tree in trees:
                tree.start_cell(self.cell)
        return trees


class MondrianForestDensity(DensityForgetMixin, EnsembleMixin, VersionedStateMixin, DensityMixin,
                            BaseEstimator):
    """Density estimation with a forest of Mondrian trees and a Polya-tree Beta prior.

    **Domain.** The first call to :meth:`fit` (or :meth:`partial_fit`) fixes the box ``B_0``:
    the bounding box of its points, padded on each side by ``margin`` times the feature's
    range; a feature with a single value gets a box of width 1 centred on it. ``B_0`` never
    changes afterwards (``domain_``). The trees work in the unit coordinates
    ``u = (x - lower) / width``, in which ``B_0`` is ``[0, 1]^D``; densities in the units of
    ``x`` divide by the volume of ``B_0``.

    **Feature weights.** With weights ``w`` the trees work in ``v = w u`` and ``B_0`` is the
    cell ``[0, w_1] x ... x [0, w_D]``: the process cuts feature ``d`` at rate ``λ w_d`` per
    unit of ``u`` (the dimension of a cut is drawn in proportion to ``w_d`` times the cell's
    side in ``u``). The density in the units of ``x`` is the trees' density in ``v`` times the
    Jacobian ``prod_d w_d / width_d``; the Beta shares depend on volume *fractions* only, so
    only the law of the partition changes. A weight of 0 means the feature is never cut: the
    density is uniform along it across ``B_0`` (factor ``1 / width_d``, the limit of a small
    weight). Multiplying every weight by ``c`` is the same as multiplying the lifetime by
    ``c``. ``feature_weights="auto"`` chooses them on the first batch (see the parameter).

    **Trees.** Each tree is a Mondrian process on *full* cells of ``B_0`` (section 10 of the
    algorithm notes): a cell holding training points is cut at time ``tau_parent + Exp(LD)``,
    ``LD`` being the sum of its side lengths, along a dimension drawn in proportion to the
    side lengths, at a uniform location; cells with data are refined until the lifetime, cells
    without data are left whole. The partition does not depend on the data, so
    :meth:`partial_fit` samples a newly reached empty cell lazily and the forest has the same
    law as one fitted on all the points at once.

    **Mass.** At a cut of depth ``d`` (root 0) leaving volume fractions ``f_1, f_2`` to its
    children, a child's share of its parent's mass is Beta distributed with parameters
    ``A f_c`` (``A = concentration * (d + 1)**2``, the Polya-tree choice); given ``n_1, n_2``
    training points in the children its posterior mean is
    ``(A f_c + n_c) / (A + n_1 + n_2)``. A tree's density at ``u`` is the product of these
    ratios along the path to the leaf of ``u``, divided by the leaf's volume. The forest
    density on ``B_0`` is the mean of the tree densities.

    **Outside B_0.** So that every finite ``x`` has a finite log density, the model is the
    mixture ``p(x) = (1 - w) p_forest(x) + w q(x)``, where ``q`` is the product over features
    of Laplace densities centred at the centre of ``B_0`` with scale the width of ``B_0``, and
    ``w = (n_out + 0.5) / (n + 1)`` (``outside_weight_``) is the posterior mean share of
    points outside ``B_0`` under a Jeffreys prior: ``n_out`` counts the training points that
    fell outside ``B_0`` (only possible in later :meth:`partial_fit` calls; such points are not
    added to the trees).

    **Lifetime.** The lifetime must be finite: a full-cell Mondrian keeps shrinking the cells
    around the points forever. With ``lifetime="auto"`` the trees are sampled to
    ``max_lifetime`` and the lifetime is chosen by the leave-one-out log-likelihood of the
    training points (each point's density with its own count removed from the Beta posteriors
    along its path, on the same partition), computed for every lifetime at which the forest
    changes by :meth:`lifetime_path`; the smallest lifetime of the best plateau is kept and the
    trees are pruned to it. ``concentration="auto"`` chooses ``g`` in the same way among
    ``1e-5 ... 10`` (7 values, one per decade). The choices are made once, by the call that fits the
    first batch; later :meth:`partial_fit` calls keep them.

    Parameters
    ----------
    n_estimators : int, default=50
        Number of trees.
    lifetime : float or "auto", default="auto"
        Lifetime λ of the Mondrian processes, in unit coordinates (``B_0`` has sides 1): a
        positive finite number, or ``"auto"`` to choose it by leave-one-out likelihood.
    concentration : float or "auto", default="auto"
        Hyperparameter ``g > 0`` of the Beta prior: the prior at depth ``d`` has total
        concentration ``g (d + 1)**2``. Larger values smooth towards uniform cell masses.
        ``"auto"`` picks it by leave-one-out likelihood (see above).
    margin : float, default=0.1
        Padding of ``B_0`` on each side, as a fraction of each feature's range in the first
        batch.
    max_lifetime : float, default=None
        Terminal lifetime of the search of ``lifetime="auto"``; ``None`` means
        ``8 * max(1, n ** (1 / D))`` for a first batch of ``n`` points in ``D`` features (cells
        at time ``t`` have sides of about ``1 / t``, so the cube then holds of the order of
        ``8**D * n`` cells). Ignored when ``lifetime`` is a number.
    feature_weights : None, array-like of shape (n_features,) or "auto", default=None
        Relative cut rates of the features (see **Feature weights**): ``None`` cuts every
        feature of ``B_0`` alike; an array of finite non-negative numbers, not all 0 (0: never
        cut, uniform along it). ``"auto"`` chooses them on the first batch (unsupervised, from
        the data alone): for each feature a 1-D density of 10 trees (``AUTO_TREES``) with
        ``lifetime="auto"`` gives ``r_d``, the leave-one-out log-likelihood of its marginal
        over the uniform density of ``B_0`` (an estimate of ``KL(marginal || uniform)``: near
        0 for a feature uniform over ``B_0``, large for a sharp one); the weights
        ``∝ r_d ** p`` (mean 1) for ``p`` in ``AUTO_POWERS = (0, 0.5, 1, 2, 4)`` are scored by
        the leave-one-out log-likelihood of a probe forest of 10 trees, and a non-uniform
        power is kept only when it beats uniform weights by more than one paired standard
        error over the training points. Batches under 50 rows, and a single feature (where
        a weight is only a lifetime scale), keep uniform weights. The weights are frozen
        after the first batch, like ``B_0``. Cost: about one more fit at 50 trees.
    window : int or None, default=None
        Keep only the most recent ``window`` training points: after every :meth:`fit` and
        :meth:`partial_fit` the oldest points beyond them are forgotten exactly
        (:meth:`forget`), so the model is, in law, the density fitted on the last ``window``
        points (with the domain ``B_0``, lifetime and concentration fixed by the first
        batch), and a stream runs in bounded memory. Points outside ``B_0`` count in the
        window too (they leave the background weight as they age); the trees always keep
        their newest point. ``None`` keeps every point. ``set_params(window=...)`` applies at
        the next update.
    n_jobs : int, default=None
        Threads over trees for growing and evaluating the forest (``None``: 1, ``-1``: all
        cores). Results do not depend on it.
    random_state : int, RandomState instance or None, default=None
        Seeds the trees (one seed per tree is drawn from it).

    Attributes
    ----------
    lifetime_ : float
        Lifetime of the fitted trees (the selected one with ``lifetime="auto"``).
    concentration_ : float
        The concentration ``g`` in use.
    lifetime_path_ : LifetimePath
        The leave-one-out path that chose the lifetime (when something was chosen).
    domain_ : ndarray of shape (2, n_features)
        Lower (row 0) and upper (row 1) corners of ``B_0``.
    feature_weights_ : ndarray of shape (n_features,)
        The weights in use (ones without weights).
    feature_weights_info_ : dict
        With ``feature_weights="auto"``: ``relevance`` (the per-feature gains ``r_d``),
        ``powers``, ``scores`` (mean leave-one-out log-likelihood of each probe) and
        ``power`` (the one kept); absent otherwise.
    outside_weight_ : float
        Weight ``w`` of the background density ``q``.
    n_samples_seen_ : int
        Number of training points seen, inside and outside ``B_0``.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of str
        Names of the features, when ``X`` had string column names.

    See Also
    --------
    sklearn.neighbors.KernelDensity : Kernel density estimation.

    Notes
    -----
    Leave-one-out values use the partition sampled with every point, counts removed; this is
    the estimator of section 7 of the algorithm notes (Balog 2015, §4.1).

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import MondrianForestDensity
    >>> X = np.random.RandomState(0).normal(size=(200, 2))
    >>> density = MondrianForestDensity(n_estimators=10, random_state=0).fit(X)
    >>> log_p = density.score_samples([[0.0, 0.0], [3.0, 3.0], [100.0, 0.0]])
    >>> bool(log_p[0] > log_p[1] > log_p[2]), bool(np.all(np.isfinite(log_p)))
    (True, True)

    A weight of 0 leaves a feature uncut (the density is uniform along it inside ``B_0``):

    >>> flat = MondrianForestDensity(n_estimators=10, feature_weights=[1.0, 0.0],
    ...                              random_state=0).fit(X)
    >>> inside = [[0.0, -1.0], [0.0, 1.0]]
    >>> bool(np.isclose(*flat.score_samples(inside), rtol=1e-3))
    True

    A window keeps the last points of a stream (here 100) and forgets the older ones:

    >>> stream = MondrianForestDensity(n_estimators=5, lifetime=4.0, window=100,
    ...                                random_state=0).fit(X[:50])
    >>> for start in range(50, 200, 50):
    ...     stream = stream.partial_fit(X[start:start + 50])
    >>> stream.n_samples_seen_
    100
    """

    _state_version = STATE_VERSION
    _refit_params = ("lifetime", "concentration", "margin", "max_lifetime", "feature_weights")

    _parameter_constraints = {
        "n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
        "lifetime": [StrOptions({"auto"}), Interval(numbers.Real, 0, np.inf, closed="neither")],
        "concentration": [Interval(numbers.Real, 0, np.inf, closed="neither"),
                          StrOptions({"auto"})],
        "margin": [Interval(numbers.Real, 0, np.inf, closed="left")],
        "max_lifetime": [Interval(numbers.Real, 0, np.inf, closed="neither"), None],
        "feature_weights": [None, StrOptions({"auto"}), "array-like"],
        "window": WINDOW_CONSTRAINT,
        "n_jobs": [numbers.Integral, None],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        n_estimators=50,
        *,
        lifetime="auto",
        concentration="auto",
        margin=0.1,
        max_lifetime=None,
        feature_weights=None,
        window=None,
        n_jobs=None,
        random_state=None,
    ):
        self.n_estimators = n_estimators
        self.lifetime = lifetime
        self.concentration = concentration
        self.margin = margin
        self.max_lifetime = max_lifetime
        self.feature_weights = feature_weights
        self.window = window
        self.n_jobs = n_jobs
        self.random_state = random_state

    # ----------------------------------------------------------------- training

    def fit(self, X, y=None, sample_weight=None):
        """Fix the domain ``B_0`` on ``X`` and sample the forest on it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training points; NaN and infinite values are rejected.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            Integer counts: a row of weight ``k`` is stored ``k`` times (exactly the forest of
            the repeated data; 0 leaves it out, also of the domain). Fractional weights raise
            a ``ValueError``.

        Returns
        -------
        self : object
        """
        with unchanged_on_error(self):
            for name in ("lifetime_path_", "feature_weights_info_", "_outside_stamps"):
                self.__dict__.pop(name, None)  # from an earlier fit
            self._validate_params()
            X = validate_data(self, X, dtype=np.float64, order="C")
            X = _repeat_weighted(X, sample_weight)
            lower, width = self._domain(X)
            n, n_features = X.shape
            weights = self._fit_weights(X)
            self._lower = lower
            self._width = width
            self._weights = weights
            self.feature_weights_ = np.ones(n_features) if weights is None else weights.copy()
            U = self._to_trees(np.clip((X - lower) / width, 0.0, 1.0))
            if self.lifetime == "auto":
                if self.max_lifetime is None:
                    terminal = MAX_LIFETIME_FACTOR * max(1.0, n ** (1.0 / n_features))
                    if weights is not None:
                        # Cells at time t have about t * w_d cuts along feature d: the
                        # geometric mean of the positive weights plays the role of 1.
                        positive = weights[weights > 0]
                        terminal = (MAX_LIFETIME_FACTOR * max(1.0, n ** (1.0 / positive.size))
                                    / np.exp(np.mean(np.log(positive))))
                else:
                    terminal = float(self.max_lifetime)
            else:
                terminal = float(self.lifetime)
            seeds = self._tree_seeds(self.n_estimators)
            auto_concentration = isinstance(self.concentration, str)
            self._concentration = 1.0 if auto_concentration else float(self.concentration)
            self.concentration_ = self._concentration
            self._ensemble = _DensityEnsemble(n_features, 0, terminal,
                                              _domain_map(lower, width, weights), seeds,
                                              tree_class=FullCellTree, cell=weights)
            self._ensemble.add_scaled(U, np.zeros((n, 0)), self.n_jobs)
            self._remember_params()
            self.lifetime_ = terminal
            self.domain_ = np.vstack([lower, lower + width])
            self.n_samples_seen_ = n
            self._n_outside = 0
            self.outside_weight_ = 0.5 / (n + 1.0)
            if self.lifetime == "auto" or auto_concentration:
                self._select_hyperparameters(auto_concentration)
            self._trim_window()
        return self

    def partial_fit(self, X, y=None, sample_weight=None):
        """Add training points (the first call fits and fixes the domain).

        Points inside ``B_0`` extend the trees, with the law of a forest fitted on all the
        points at once; points outside only raise the weight of the background density.
        With ``window``, the oldest points beyond the last ``window`` are then forgotten.

        A larger ``n_estimators`` set after fit adds trees sampled on the stored points (the law
        of a forest that had them from the start); a smaller one, or a changed ``lifetime``,
        ``concentration``, ``margin`` or ``max_lifetime``, raises a ``ValueError`` (call
        ``fit``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New training points.
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,), default=None
            Integer counts, as in :meth:`fit`.

        Returns
        -------
        self : object
        """
        if not hasattr(self, "_trees"):
            return self.fit(X, sample_weight=sample_weight)
        with online_update(self, X):
            # Parameter changes since fit are refused before anything changes.
            n_new_trees = self._warm_start_check()
            self._check_window()
            X = validate_data(self, X, reset=False, dtype=np.float64, order="C")
            X = _repeat_weighted(X, sample_weight)
            U, inside = self._to_unit(X)
            n_inside = int(inside.sum())
            self._grow_new_trees(n_new_trees, self.n_jobs)
            self._learn_outside(inside)
            if n_inside:
                self._ensemble.add_scaled(np.ascontiguousarray(U[inside]),
                                          np.zeros((n_inside, 0)), self.n_jobs)
            self._set_seen(self.n_samples_seen_ + X.shape[0])
            self._trim_window()
        return self

    def _fit_weights(self, X):
        """The feature weights for the first batch ``X`` (None: uniform, no map)."""
        fw = self.feature_weights
        if fw is None:
            return None
        if isinstance(fw, str):
            return self._search_weights(X)
        return check_weights(fw, X.shape[1])

    def _probe(self, **params):
        """An unfitted density like this one, with ``AUTO_TREES`` trees and ``params``."""
        probe = type(self)(**{**self.get_params(deep=False), "n_jobs": self.n_jobs,
                              "n_estimators": min(self.n_estimators, AUTO_TREES), **params})
        return probe

    def _search_weights(self, X):
        """``feature_weights="auto"`` (see the parameter): per-feature lifetimes, then powers
        of them scored by the probes' leave-one-out log-likelihood (paired over the points)."""
        n, n_features = X.shape
        if n < AUTO_MIN_SAMPLES or n_features == 1:
            return None
        relevance = np.zeros(n_features)
        for d in range(n_features):
            if np.ptp(X[:, d]) > 0:  # a constant feature keeps weight 0
                one = self._probe(feature_weights=None, lifetime="auto", max_lifetime=None)
                one.fit(X[:, d : d + 1])
                # Leave-one-out log-likelihood of the marginal in unit coordinates: its gain
                # over the uniform density of B_0 (an estimate of KL(marginal || uniform)).
                relevance[d] = max(0.0, float(one._loo_rows().mean()) + one._log_scale())
        rows, scores = [], []
        for power in AUTO_POWERS:
            w = power_weights(relevance, power)
            rows.append(self._probe(feature_weights=w).fit(X)._loo_rows())
            scores.append(float(rows[-1].mean()))
        best = int(np.argmax(scores))
        if AUTO_POWERS[best] != 0 and not beats(rows[best], rows[0]):
            best = 0
        self.feature_weights_info_ = {"relevance": relevance, "powers": AUTO_POWERS,
                                      "scores": np.array(scores), "power": AUTO_POWERS[best]}
        return None if AUTO_POWERS[best] == 0 else power_weights(relevance, AUTO_POWERS[best])

    def _loo_rows(self):
        """Leave-one-out log density of every stored training point (units of ``x``, forest
        part), on the fitted partition at the fitted lifetime."""
        U = self._store.X
        out = np.empty(U.shape[0])
        _loo_log_density_trees(self._trees, U, self.lifetime_, self._concentration, out)
        return out - np.log(len(self._trees)) - self._log_scale()

    def _log_scale(self):
        """Log of the volume of ``B_0`` (units of ``x``) per unit volume of the trees' cell:
        densities of the trees divide by it (the Jacobian of ``x -> v``; a feature of weight 0
        contributes its width, its density being uniform along it)."""
        log_width = float(np.sum(np.log(self._width)))
        weights = self.__dict__.get("_weights")
        if weights is None:
            return log_width
        return log_width - float(np.sum(np.log(weights[weights > 0])))

    def _to_trees(self, U):
        """Unit coordinates -> the trees' coordinates (times the weights)."""
        weights = self.__dict__.get("_weights")
        return U if weights is None else np.ascontiguousarray(U * weights)

    def _domain(self, X):
        """Lower corner and widths of ``B_0`` for the first batch ``X``."""
        with np.errstate(over="ignore", invalid="ignore"):
            low = X.min(axis=0)
            span = X.max(axis=0) - low
            pad = self.margin * span
            varying = span > 0
            lower = np.where(varying, low - pad, low - 0.5)
            width = np.where(varying, span + 2.0 * pad, 1.0)
            upper = lower + width
        if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))
                and np.all(np.isfinite(width)) and np.all(width > 0)):
            raise ValueError(
                "the range of X, padded by margin, overflows float64: rescale the features"
            )
        return lower, width

    def _to_unit(self, X):
        """The trees' coordinates of ``X`` and the mask of the rows inside ``B_0``."""
        with np.errstate(over="ignore", invalid="ignore"):
            U = (X - self._lower) / self._width
        inside = np.all((U >= 0.0) & (U <= 1.0), axis=1)
        return self._to_trees(U), inside

    def _select_hyperparameters(self, auto_concentration):
        """Choose the lifetime and/or the concentration by leave-one-out log-likelihood.

        For every candidate concentration (``CONCENTRATIONS`` with ``"auto"``, else the given
        one) the leave-one-out path scores every lifetime up to the terminal one (only the
        terminal one when the lifetime is fixed); the best pair is kept and the trees are
        pruned to its lifetime.
        """
        candidates = CONCENTRATIONS if auto_concentration else [self._concentration]
        log_volume = self._log_scale()
        leaves = self._leaves(self._store.X)
        plan = plan_path(self._trees, leaves)  # the same cuts and points for every candidate
        best = None
        for concentration in candidates:
            times, loo = self._loo_path(float(concentration), leaves=leaves, plan=plan)
            path = self._path_result(times, {"loo_log_likelihood": loo - log_volume},
                                     "loo_log_likelihood", "forward")
            k = path.best_index if self.lifetime == "auto" else path.n_cuts
            if best is None or loo[k] > best[0]:
                best = (loo[k], float(concentration), path, k)
        _, self._concentration, self.lifetime_path_, k = best
        self.concentration_ = self._concentration
        path = self.lifetime_path_
        if self.lifetime != "auto":
            return  # only the concentration was chosen; the trees keep their lifetime
        lifetime = min(0.5 * (path.lifetimes[k] + path.upper_lifetimes[k]), self.lifetime_)
        if lifetime < self.lifetime_:
            self._ensemble = self._ensemble.pruned(lifetime)
        self.lifetime_ = lifetime

    def _loo_path(self, concentration, forward=True, leaves=None, plan=None):
        """Cut times and mean leave-one-out log-likelihood (unit coordinates) after each."""
        train = self._store.X
        reader = LogDensityReader(
            [path_edges(tree, concentration, True) for tree in self._trees],
            np.full(train.shape[0], -np.inf), 0.0, np.ones(train.shape[0], dtype=bool),
        )
        if leaves is None:
            leaves = self._leaves(train)
        times, values = run_path(self._trees, leaves, reader, forward=forward, plan=plan)
        return times, values[:, 0]

    def lifetime_path(self, X=None, *, direction="forward"):
        """Log-likelihood of the forest at every lifetime up to the fitted one (read-only).

        The cuts of all trees are walked in order of birth time (section 7 of the algorithm
        notes); each one moves the points of the split cell into its children and changes their
        log density by a fixed amount, so the whole path costs about one fit. Two curves: the
        leave-one-out log-likelihood of the training points held by the trees (each point's
        own count removed from every Beta update on its path; forest part only), and, when
        ``X`` is given, the held-out log-likelihood of the full model (background included,
        exactly ``prune(λ).score_samples(X)``).

        Parameters
        ----------
        X : array-like of shape (n_val, n_features), default=None
            Validation points.
        direction : {"forward", "backward"}, default="forward"
            Add cuts from lifetime 0 up, or remove them from the fitted lifetime down.

        Returns
        -------
        LifetimePath
            ``metrics["loo_log_likelihood"]`` (mean per training point) and, with ``X``,
            ``metrics["log_likelihood"]`` (mean per validation point), in the units of ``X``;
            the best interval maximises the validation curve when there is one, else the
            leave-one-out curve.
        """
        check_is_fitted(self, "_trees")
        forward = check_direction(direction)
        log_volume = self._log_scale()
        metrics = {}
        times, loo = self._loo_path(self._concentration, forward)
        metrics["loo_log_likelihood"] = loo - log_volume
        criterion = "loo_log_likelihood"
        if X is not None:
            X = validate_data(self, X, reset=False, dtype=np.float64, order="C")
            U, inside = self._to_unit(X)
            w = self.outside_weight_
            reader = LogDensityReader(
                [path_edges(tree, self._concentration, False) for tree in self._trees],
                np.log(w) + self._log_background(X) + log_volume, float(np.log1p(-w)), inside,
            )
            leaves = np.full((len(self._trees), X.shape[0]), -1, dtype=np.intp)
            leaves[:, inside] = self._leaves(np.ascontiguousarray(U[inside]))
            _, values = run_path(self._trees, leaves, reader, forward=forward)
            metrics["log_likelihood"] = values[:, 0] - log_volume
            criterion = "log_likelihood"
        return self._path_result(times, metrics, criterion, direction)

    def _path_result(self, times, metrics, criterion, direction):
        return LifetimePath.from_cut_times(times, self.lifetime_, metrics, criterion, True,
                                           direction=direction)

    def _leaves(self, U):
        """Leaf of every row of ``U`` (unit coordinates, inside ``B_0``) in every tree."""
        if U.shape[0] == 0:
            return np.empty((len(self._trees), 0), dtype=np.intp)
        return np.ascontiguousarray(np.vstack([tree.apply(U) for tree in self._trees]))

    # ----------------------------------------------------------------- evaluation

    def _log_mean_trees(self, kernel, U, lifetime):
        """``log(mean over trees of kernel values)`` at the rows of ``U`` (unit coordinates).

        ``lifetime`` is a number, or an increasing array for the kernels that read the trees
        at several lifetimes (the output then has one column per lifetime). Trees are
        evaluated in fixed chunks whose results are combined in order, so the output does not
        depend on ``n_jobs``.
        """
        U = np.ascontiguousarray(U, dtype=np.float64)
        total = self._ensemble.accumulate(
            lambda trees, out: kernel(trees, U, lifetime, self._concentration, out),
            (U.shape[0],) + np.shape(lifetime),
            1 if U.shape[0] <= 1 else self.n_jobs,
            combine=np.logaddexp,
        )
        return total - np.log(len(self._trees))

    def _log_background(self, X):
        """Log density of the background ``q`` (product of Laplace densities)."""
        scale = self._width
        centre = self._lower + 0.5 * scale
        with np.errstate(over="ignore"):
            distance = (np.abs(X - centre) / scale).sum(axis=1)
        return -distance - np.sum(np.log(2.0 * scale))

    def _log_density(self, X):
        U, inside = self._to_unit(X)
        log_forest = np.full(X.shape[0], -np.inf)
        if inside.any():
            cache = predict_cache(self)  # (the trees' node values, kept between calls)

            def kernel(trees, U, lifetime, concentration, out):
                log_density_trees_cached(trees, U, lifetime, concentration, out, cache)

            log_forest[inside] = (
                self._log_mean_trees(kernel, U[inside], self.lifetime_) - self._log_scale()
            )
        w = self.outside_weight_
        out = np.logaddexp(np.log1p(-w) + log_forest, np.log(w) + self._log_background(X))
        return np.maximum(out, LOG_DENSITY_FLOOR)

    def score_samples(self, X):
        """Log density of the model at every sample, in the units of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
            Log densities; finite for every finite input.
        """
        check_is_fitted(self, "_trees")
        X = validate_data(self, X, reset=False, dtype=np.float64, order="C")
        return self._log_density(X)

    def score(self, X, y=None):
        """Total log-likelihood of ``X`` under the model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        float
        """
        return float(np.sum(self.score_samples(X)))

    def sample(self, n_samples=1, random_state=None):
        """Draw points from the model.

        With probability ``outside_weight_`` a draw comes from the background density;
        otherwise a tree is chosen uniformly, a leaf by descending it with the posterior mean
        shares of mass, and a uniform point of the leaf's cell.

        Parameters
        ----------
        n_samples : int, default=1
            Number of points.
        random_state : int, RandomState instance or None, default=None
            Seed of the draws.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self, "_trees")
        if not isinstance(n_samples, numbers.Integral) or n_samples < 0:
            raise ValueError(f"n_samples must be a non-negative integer, got {n_samples!r}")
        rng = check_random_state(random_state)
        n_trees = len(self._trees)
        n_outside = int(rng.binomial(n_samples, self.outside_weight_))
        counts = rng.multinomial(n_samples - n_outside, np.full(n_trees, 1.0 / n_trees))
        seeds = rng.randint(0, np.iinfo(np.int64).max, size=n_trees, dtype=np.int64)
        U = np.empty((n_samples - n_outside, self.n_features_in_))
        sample_trees(self._trees, counts.astype(np.intp), seeds.astype(np.uint64),
                     self.lifetime_, self._concentration, U)
        weights = self.__dict__.get("_weights")
        if weights is not None:
            # Back to unit coordinates; uniform along the features of weight 0.
            positive = weights > 0
            U[:, positive] /= weights[positive]
            U[:, ~positive] = rng.uniform(size=(U.shape[0], int((~positive).sum())))
        scale = self._width
        centre = self._lower + 0.5 * scale
        out = np.vstack([
            self._lower + U * scale,
            centre + rng.laplace(size=(n_outside, self.n_features_in_)) * scale,
        ])
        return out[rng.permutation(n_samples)]

    def prune(self, lifetime):
        """The fitted model restricted to a smaller lifetime.

        Cuts born at or after ``lifetime`` are dropped. By the Markov property of the Mondrian
        process the result has the law of the model fitted with that lifetime on the same
        data; it is an ordinary fitted estimator, independent of this one.

        Parameters
        ----------
        lifetime : float
            New lifetime, in ``(0, lifetime_]``.

        Returns
        -------
        MondrianForestDensity
            A new estimator, with ``lifetime`` set to the new value.
        """
        pruned = pruned_copy(self, lifetime, allow_zero=False)
        pruned.domain_ = self.domain_.copy()
        pruned.__dict__.pop("lifetime_path_", None)
        return pruned

    def _leaf_log_masses(self, tree_index):
        """Leaves of one tree with their log masses and log volumes (unit coordinates)."""
        check_is_fitted(self, "_trees")
        return leaf_log_masses(self._trees[tree_index], self.lifetime_, self._concentration)
