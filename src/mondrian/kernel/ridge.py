"""The Mondrian kernel (Balog, Lakshminarayanan, Ghahramani, Roy & Teh, 2016).

:class:`MondrianKernelFeatures` maps points to sparse random features whose inner products
converge to the Laplace kernel ``exp(-lifetime * ||x - x'||_1)`` (in scaled feature units).
:class:`MondrianKernelRidge` is ridge regression on them, with exact online updates and the
lifetime path that evaluates every kernel width at about the cost of one fit.
"""

import copy
import numbers

import numpy as np
from scipy import sparse
from scipy.linalg import cho_factor, cho_solve
from sklearn.base import ClassNamePrefixFeaturesOutMixin, RegressorMixin, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from mondrian._docstrings import (
    FEATURE_SCALING,
    KERNEL_FEATURE_WEIGHTS,
    KERNEL_TRANSFORMER_FEATURE_WEIGHTS,
    LIFETIME_ATTRIBUTES,
)
from mondrian.core.ensemble import TreeEnsemble
from mondrian.estimator.atomic import atomic_fit, atomic_update
from mondrian.estimator.ensemble import BaseMondrianEnsemble
from mondrian.estimator.holdout import holdout_split
from mondrian.estimator.inputs import dense_blocks, sparse_output
from mondrian.estimator.locking import own_lock
from mondrian.estimator.targets import centre_and_scale, check_target_scale
from mondrian.kernel._features import extension_leaves
from mondrian.kernel._ridge_inverse import RidgeInverse
from mondrian.kernel._ridge_path import RidgePathVisitor
from mondrian.path._engine import TreeCuts, walk_path
from mondrian.path.result import LifetimePath, check_direction

# Online targets may reach this multiple of the first batch's spread (standardised units); their
# squares then stay far below the largest float whatever the number of points.
MAX_STANDARDISED = 2.0**100

__all__ = ["MondrianKernelFeatures", "MondrianKernelRidge"]


def _pruned_leaves(tree, lifetime):
    """Sorted ids of the leaves of ``tree`` pruned at ``lifetime``."""
    nodes = tree.nodes_array
    parent_time = np.where(
        nodes["parent"] >= 0, nodes["split_time"][np.maximum(nodes["parent"], 0)], -np.inf
    )
    is_leaf = (nodes["left_child"] == -1) | (nodes["split_time"] >= lifetime)
    return np.flatnonzero(is_leaf & (parent_time < lifetime))


class _MondrianKernelBase(BaseMondrianEnsemble):
    """Trees sampled without labels, and their leaf-indicator features."""

    _parameter_constraints = {
        **BaseMondrianEnsemble._parameter_constraints,
        "n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
    }
    _parameter_constraints.pop("min_samples_split")

    # Leaves pause only when all their points coincide: the kernel needs the pure process.
    min_samples_split = 1
    _refit_params = ("lifetime", "feature_scaling", "feature_weights")
    # The power search of feature_weights="auto" probes the model itself (same trees and
    # lifetime choice: a kernel model's accuracy depends on both).
    _weights_probe_trees = 0

    def _validate_lifetime(self):
        if self.lifetime != "auto":
            super()._validate_lifetime()

    def _sample(self, X, lifetime):
        """Sample the trees at ``lifetime`` on ``X`` (``self.lifetime`` may be "auto" for the
        estimators that choose it)."""
        self._init_trees(X, self.n_estimators, 0, lifetime)
        self._keys = self._extension_keys(self._tree_seeds(self.n_estimators))
        self._add_points(X, np.zeros((X.shape[0], 0)))

    @staticmethod
    def _extension_keys(seeds):
        """Keys of the hashed uniform draws that place new points (one per tree)."""
        return np.asarray(seeds).astype(np.uint64) ^ np.uint64(0x5DEECE66D)

    def _after_growth(self, seeds):
        self._keys = np.concatenate([self._keys, self._extension_keys(seeds)])

    def _lifetime(self, lifetime):
        # The fitted lifetime, not the parameter: set_params after fit must not change a read.
        lam = self.lifetime_ if lifetime is None else lifetime
        if not 0 <= lam <= self.lifetime_:
            raise ValueError(
                f"lifetime must be in [0, {self.lifetime_}] (the fitted lifetime), got {lam}"
            )
        return float(lam)

    def _leaf_columns(self, lifetime):
        """Per tree, the sorted leaves at ``lifetime`` and the offset of their columns."""
        leaves = [_pruned_leaves(tree, lifetime) for tree in self._trees]
        offsets = np.concatenate([[0], np.cumsum([len(leaf) for leaf in leaves])])
        return leaves, offsets

    def _node_columns(self, lifetime):
        """Per tree, the column of every leaf at ``lifetime`` (-1 for other nodes), and the
        offset of every tree's columns."""
        leaves, offsets = self._leaf_columns(lifetime)
        col_of_node = []
        for tree, leaf, offset in zip(self._trees, leaves, offsets[:-1], strict=True):
            col = np.full(tree.node_count, -1, dtype=np.intp)
            col[leaf] = offset + np.arange(len(leaf))
            col_of_node.append(col)
        return col_of_node, offsets

    def _indicators(self, X_scaled, lifetime, col_of_node, n_columns):
        """CSR leaf-indicator features of scaled points at ``lifetime``, the leaves of tree
        ``m`` numbered by ``col_of_node[m]``; a point cut off by a tree's extension gets no
        entry for it."""
        nodes = extension_leaves(self._trees, X_scaled, self._keys, lifetime)
        n, n_trees = nodes.shape
        columns = np.full(nodes.shape, -1, dtype=np.intp)
        for m in range(n_trees):
            inside = nodes[:, m] >= 0
            columns[inside, m] = col_of_node[m][nodes[inside, m]]
        keep = columns.ravel() >= 0
        rows = np.repeat(np.arange(n), n_trees)[keep]
        return sparse.csr_matrix(
            (np.full(len(rows), 1.0 / np.sqrt(n_trees)), (rows, columns.ravel()[keep])),
            shape=(n, n_columns),
        )

    def _features(self, X_scaled, lifetime):
        """CSR leaf-indicator features of scaled points at ``lifetime`` (columns by tree, then
        by leaf id)."""
        col_of_node, offsets = self._node_columns(lifetime)
        return self._indicators(X_scaled, lifetime, col_of_node, offsets[-1])

    def _cut_source(self, max_features):
        """The path engine's source of the trees' cuts on the stored points, stopped before the
        model has more than ``max_features`` cells."""
        if max_features < len(self._trees):
            raise ValueError(
                f"max_features={max_features} is below n_estimators={len(self._trees)}: the "
                "model at lifetime 0 already has one feature (the root cell) per tree"
            )
        return TreeCuts.from_trees(self._trees, max_cells=max_features)


class _KernelPathMixin:
    """Lifetime paths of the kernel models that learn from targets (ridge and SGD).

    A path reads a fitted model: its trees, its stored (scaled) training points and its
    training targets (``_y_fit``, which the fitted model keeps for this). It never changes the
    model: with validation data the path runs on copies of the trees extended with the
    validation inputs (:meth:`_path_copy`). ``lifetime="auto"`` runs the same path on a probe
    (:meth:`_path_probe`): trees sampled on the fit part up to ``max_lifetime``, with no solve.
    Subclasses define ``_validate_training`` (validates ``X, y`` and fixes the target units)
    and ``_train`` (trains on the sampled trees and ``y``).
    """

    # Classifiers stratify the hold-out split of lifetime="auto".
    _stratify = False

    @property
    def path_(self):
        """Alias of ``lifetime_path_``."""
        return self.lifetime_path_

    @atomic_fit
    def fit(self, X, y):
        """Sample the trees and train the model on them (choosing the lifetime if "auto").

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        self._validate_params()
        X, y = self._validate_training(X, y)
        self.__dict__.pop("lifetime_path_", None)  # from an earlier fit
        self._choose_feature_weights(X, y)
        path = None
        if self.lifetime == "auto":
            path = self._auto_path(X, y)
            lifetime = path.best_lifetime
        else:
            self._validate_lifetime()
            lifetime = float(self.lifetime)
        self._sample(X, lifetime)
        self._y_fit = y.copy()  # read by the lifetime paths
        self._train(y)
        if path is not None:
            self.lifetime_path_ = path
        return self

    def _path_inputs(self, direction, X, y, y_numeric=True):
        """Check a path request: the model the path reads (a copy holding the validation
        inputs, if any), the validated validation targets, and which points train."""
        check_is_fitted(self, "_y_fit")
        check_direction(direction)
        if (X is None) != (y is None):
            raise ValueError("give both validation inputs X and targets y, or neither")
        model, y_val = self, self._y_fit[:0]
        if X is not None:
            X, y_val = validate_data(self, X, y, reset=False, dtype=np.float64, order="C",
                                     y_numeric=y_numeric)
            model = self._path_copy(X)
        is_train = np.r_[np.ones(len(self._y_fit), np.uint8), np.zeros(len(y_val), np.uint8)]
        return model, y_val, is_train

    def _path_copy(self, X_val):
        """A shallow copy whose trees (deep copies) and store also hold the validation inputs.

        Labels are not used, so by projectivity the copied trees have the law of trees sampled
        on the training and validation inputs together; validation points come last in the
        store. The fitted model's trees and store are left untouched.
        """
        model = copy.copy(self)
        model._ensemble, _ = self._ensemble.with_points(self._scaler.transform(X_val, clip=True))
        return own_lock(model)

    def _path_probe(self, X, y):
        """A copy of the estimator with trees sampled on ``(X, y)`` up to ``max_lifetime`` and
        nothing trained: what the path of ``lifetime="auto"`` reads."""
        probe = own_lock(copy.copy(self))  # (its trees are replaced below)
        X, y = probe._validate_training(X, y)
        probe._sample(X, float(self.max_lifetime))
        probe._y_fit = y
        return probe

    def _auto_path(self, X, y):
        """The path that chooses ``lifetime="auto"``: trees sampled up to ``max_lifetime`` on
        the fit part of a hold-out split, trained and scored on the rest."""
        X_fit, X_val, y_fit, y_val = holdout_split(
            X, y, self.validation_fraction, self.random_state, stratify=self._stratify)
        probe = self._path_probe(X_fit, y_fit)
        X_val, y_val = probe._known(X_val, y_val)
        if len(y_val) == 0:
            return probe.lifetime_path()
        return probe.lifetime_path(X_val, y_val)

    def _known(self, X, y):
        """Validation rows whose targets the model can score."""
        return X, y


class MondrianKernelFeatures(ClassNamePrefixFeaturesOutMixin, TransformerMixin,
                             _MondrianKernelBase):
    __doc__ = f"""Sparse random features of the Laplace kernel from Mondrian trees.

    ``fit`` samples ``n_estimators`` Mondrian trees with lifetime λ on the data. A point's
    features are the indicators of the leaf holding it in each tree, scaled by ``1/sqrt(M)``,
    so that ``Z Z'`` converges to ``exp(-λ ||x - x'||_1)`` as ``M`` grows (features in the
    scaled units of ``feature_scaling``).

    ``transform`` is inductive: a new point is placed by the online extension of each tree,
    which cuts it off from the data with the Mondrian process's probability
    ``1 - exp(-Σ η Δ)``; a cut-off point would sit alone in a new cell, so it gets no entry for
    that tree. The uniform draw deciding this is a hash of the point and the tree, so the same
    point always gets the same features, and for every pair of a new and a training point the
    probability of sharing a cell is exactly the Laplace kernel.

    Sparse inputs (CSR, CSC...) are accepted: ``fit`` and ``partial_fit`` densify them (the
    trees store their points densely), ``transform`` densifies 4096 rows at a time.

    Parameters
    ----------
    n_estimators : int, default=50
        Number of trees M (each row of the output has at most M non-zeros).
    lifetime : float, default=1.0
        Lifetime λ: the inverse kernel width, in scaled feature units.
{FEATURE_SCALING}{KERNEL_TRANSFORMER_FEATURE_WEIGHTS}\
    random_state : int, RandomState instance or None, default=None
        Seeds the trees.

    Attributes
    ----------
    n_features_in_ : int
        Number of input features.
    n_features_out_ : int
        Number of features (non-empty cells) at the fitted lifetime.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import MondrianKernelFeatures
    >>> X = np.random.RandomState(0).uniform(size=(5, 2))
    >>> Z = MondrianKernelFeatures(n_estimators=200, lifetime=2.0, random_state=0).fit_transform(X)
    >>> Z.shape[0], bool(np.allclose(Z.multiply(Z).sum(axis=1), 1.0))
    (5, True)
    """

    def __init__(self, n_estimators=50, *, lifetime=1.0, feature_scaling="minmax",
                 feature_weights=None, random_state=None):
        self.n_estimators = n_estimators
        self.lifetime = lifetime
        self.feature_scaling = feature_scaling
        self.feature_weights = feature_weights
        self.random_state = random_state

    @atomic_fit
    def fit(self, X, y=None):
        """Sample the Mondrian trees on ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self : object
        """
        self._validate_params()
        X = np.vstack(dense_blocks(validate_data(self, X, accept_sparse="csr",
                                                 dtype=np.float64, order="C")))
        self._validate_lifetime()
        self._choose_feature_weights(X, None)
        self._sample(X, float(self.lifetime))
        return self

    @atomic_update
    def partial_fit(self, X, y=None):
        """Extend the trees with new points (same law as sampling them on all points).

        A larger ``n_estimators`` set after fit adds trees sampled on the stored points (the law
        of a forest that had them from the start); a smaller one, or a changed ``lifetime`` or
        ``feature_scaling``, raises a ``ValueError`` (call ``fit``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self : object
        """
        if not hasattr(self, "_trees"):
            return self.fit(X)
        n_new_trees = self._warm_start_check()
        X = np.vstack(dense_blocks(validate_data(self, X, accept_sparse="csr",
                                                 dtype=np.float64, order="C", reset=False)))
        self._scaler.check(X)
        self._grow_new_trees(n_new_trees)
        self._add_points(X, np.zeros((X.shape[0], 0)))
        return self

    def transform(self, X, lifetime=None):
        """Leaf-indicator features of ``X``, optionally at a smaller lifetime.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        lifetime : float, default=None
            Features of the trees pruned at this lifetime (``<=`` the fitted one).

        Returns
        -------
        scipy.sparse.csr_matrix of shape (n_samples, n_features_out)
            Or a pandas DataFrame of sparse columns under ``set_output(transform="pandas")``.
        """
        lam = self._lifetime(lifetime) if hasattr(self, "_trees") else None
        if not sparse.issparse(X):
            return sparse_output(self, self._features(self._validate_X_predict(X), lam), X)
        check_is_fitted(self, "_trees")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        blocks = [self._features(self._scaler.transform(block, clip=True), lam)
                  for block in dense_blocks(X)]
        return sparse_output(self, sparse.vstack(blocks, format="csr"), X)

    @property
    def n_features_out_(self):
        """Number of output features at the fitted lifetime."""
        check_is_fitted(self, "_trees")
        return int(self._leaf_columns(self.lifetime_)[1][-1])

    @property
    def _n_features_out(self):
        """Number of output features, for :meth:`get_feature_names_out`."""
        return self.n_features_out_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = []
        tags.input_tags.sparse = True
        return tags


class MondrianKernelRidge(RegressorMixin, _KernelPathMixin, _MondrianKernelBase):
    __doc__ = f"""\
    Ridge regression on Mondrian kernel features, with lifetime paths and online updates.

    Minimises ``||y - Z w||^2 + alpha ||w||^2`` over the leaf-indicator features ``Z`` of
    :class:`MondrianKernelFeatures` (targets centred on the mean of the first training batch).
    As a Bayesian linear model with ``w ~ N(0, σ_n²/alpha I)`` it also gives a predictive
    variance and the marginal likelihood.

    Parameters
    ----------
    n_estimators : int, default=50
        Number of Mondrian trees M.
    lifetime : float or "auto", default=1.0
        Lifetime λ (inverse kernel width, scaled feature units). ``"auto"`` holds out
        ``validation_fraction`` of the data, samples trees up to ``max_lifetime`` on the rest
        (no ridge solve), sweeps every lifetime with the path of :meth:`lifetime_path` and
        keeps the best one, by validation error (or, with
        ``lifetime_selection="marginal_likelihood"``, by the marginal likelihood of trees
        sampled on all the data); the model is then fitted on all the data at that lifetime.
    alpha : float, default=1.0
        Ridge constant δ² (the noise-to-prior variance ratio).
    max_lifetime : float, default=np.inf
        Terminal lifetime of the sweep for ``lifetime="auto"``.
    max_features : int, default=4000
        Paths stop before the number of features exceeds this (they cost O(C²) memory), and
        ``partial_fit`` refuses (``ValueError``, model unchanged) a batch that would grow the
        fitted model past it; it may be raised with ``set_params`` between calls.
    lifetime_selection : {{"validation", "marginal_likelihood"}}, default="validation"
        Criterion of ``lifetime="auto"``.
    validation_fraction : float, default=0.2
        Share of the training data held out by ``lifetime_selection="validation"``.
{FEATURE_SCALING}{KERNEL_FEATURE_WEIGHTS}\
    random_state : int, RandomState instance or None, default=None
        Seeds the trees and the validation split.

    Attributes
    ----------
{LIFETIME_ATTRIBUTES}    coef_ : ndarray of shape (n_features_out,)
        Ridge weights.
    n_features_in_ : int
        Number of input features.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import MondrianKernelRidge
    >>> X = np.random.RandomState(0).uniform(size=(100, 2))
    >>> y = np.sin(4 * X[:, 0]) + X[:, 1]
    >>> ridge = MondrianKernelRidge(n_estimators=20, lifetime=3.0, random_state=0).fit(X, y)
    >>> bool(ridge.score(X, y) > 0.9)
    True
    >>> path = ridge.lifetime_path()  # every lifetime up to 3.0, in one sweep
    >>> path.criterion
    'log_marginal_likelihood'
    """

    _state_types = {"_ensemble": TreeEnsemble, "_ridge": RidgeInverse}

    _parameter_constraints = {
        **_MondrianKernelBase._parameter_constraints,
        "lifetime": [Interval(numbers.Real, 0, None, closed="both"), StrOptions({"auto"})],
        "alpha": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_lifetime": [Interval(numbers.Real, 0, None, closed="right")],
        "max_features": [Interval(numbers.Integral, 1, None, closed="left")],
        "lifetime_selection": [StrOptions({"validation", "marginal_likelihood"})],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
    }

    _refit_params = (*_MondrianKernelBase._refit_params, "alpha")
    # New trees change every feature (and their 1/sqrt(M) weight): the ridge solve needs a fit.
    _can_add_trees = False

    # The ridge inverse is updated in place by partial_fit (snapshotted by atomic_update).
    _mutable_state = ("_ridge",)

    def __init__(self, n_estimators=50, *, lifetime=1.0, alpha=1.0, max_lifetime=np.inf,
                 max_features=4000, lifetime_selection="validation", validation_fraction=0.2,
                 feature_scaling="minmax", feature_weights=None, random_state=None):
        self.n_estimators = n_estimators
        self.lifetime = lifetime
        self.alpha = alpha
        self.max_lifetime = max_lifetime
        self.max_features = max_features
        self.lifetime_selection = lifetime_selection
        self.validation_fraction = validation_fraction
        self.feature_scaling = feature_scaling
        self.feature_weights = feature_weights
        self.random_state = random_state

    # ------------------------------------------------------------------ fitting

    def _validate_training(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64, order="C", y_numeric=True)
        # Targets are centred and divided by a power of two above their spread (exact: the
        # ridge weights are linear in them), so sums of squares never overflow or underflow.
        self._y_offset, self._y_scale = centre_and_scale(y)
        return X, y

    def _standardised(self, y):
        return (np.asarray(y, dtype=np.float64) - self._y_offset) / self._y_scale

    def _train(self, y):
        """Dense ridge solve at ``lifetime_`` on the stored (training) points."""
        self._col_of_node, offsets = self._node_columns(self.lifetime_)
        Z = self._indicators(self._store.X, self.lifetime_, self._col_of_node, offsets[-1])
        if Z.shape[1] > 20000:
            raise ValueError(
                f"{Z.shape[1]} features: too many for the dense solver; lower the lifetime or "
                "the number of trees"
            )
        # A training point of every cell, and its tree, to follow the cell when online updates
        # move nodes.
        self._col_rep = np.zeros(Z.shape[1], dtype=np.intp)
        coo = Z.tocoo()
        self._col_rep[coo.col] = coo.row
        self._col_tree = np.repeat(np.arange(len(self._trees)), np.diff(offsets))
        A = (Z.T @ Z).toarray() + self.alpha * np.eye(Z.shape[1])
        self._ridge = RidgeInverse(max(Z.shape[1], 1), float(self.alpha))
        targets = self._standardised(y)
        self._ridge.start(np.ascontiguousarray(A), Z.T @ targets)
        self._ridge.update_weights()
        self._n_train = len(y)
        self._yty = float(targets @ targets)

    @property
    def coef_(self):
        """Ridge weights of the features at ``lifetime_``."""
        check_is_fitted(self, "_ridge")
        return self._ridge.coef * self._y_scale

    # ------------------------------------------------------------------ prediction

    def _z(self, X_scaled):
        """Features of scaled points in the model's column order."""
        return self._indicators(X_scaled, self.lifetime_, self._col_of_node,
                                self._ridge.n_features)

    def predict(self, X, return_std=False):
        """Ridge prediction, optionally with the Bayesian predictive standard deviation.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        return_std : bool, default=False
            Also return ``sqrt(σ_n² (1 + z' A^{-1} z))`` with the noise variance σ_n² estimated
            by maximum likelihood (:attr:`noise_variance_`).

        Returns
        -------
        mean : ndarray of shape (n_samples,)
        std : ndarray of shape (n_samples,), only when ``return_std`` is True
        """
        check_is_fitted(self, "_ridge")
        Z = self._z(self._validate_X_predict(X))
        mean = (Z @ self._ridge.coef) * self._y_scale + self._y_offset
        if not return_std:
            return mean
        quad = np.asarray((Z @ self._ridge.inverse) * Z.toarray()).sum(axis=1)
        return mean, np.sqrt(self._noise_standardised() * (1.0 + quad)) * self._y_scale

    @property
    def noise_variance_(self):
        """Maximum-likelihood noise variance ``(y'y - y'Z w) / N`` (``inf`` beyond float64)."""
        check_is_fitted(self, "_ridge")
        with np.errstate(over="ignore"):
            return float(np.float64(self._noise_standardised()) * self._y_scale * self._y_scale)

    def _noise_standardised(self):
        fit = self._yty - float(self._ridge.coef @ self._ridge.zty_vector)
        return max(fit / self._n_train, 1e-300)  # in units of the spread of y: relative

    def log_marginal_likelihood(self):
        """Log evidence of the training targets, noise variance profiled out (section 8.2)."""
        check_is_fitted(self, "_ridge")
        C = self._ridge.n_features
        return float(
            -0.5 * self._n_train * (np.log(2 * np.pi * self._noise_standardised()) + 1.0)
            - 0.5 * (self._ridge.logdet - C * np.log(self.alpha))
            - self._n_train * np.log(self._y_scale)  # the density of y in its own units
        )

    # ------------------------------------------------------------------ online

    @atomic_update
    def partial_fit(self, X, y):
        """Exact online update (Supplement C of the paper).

        The trees are extended with the new points; old points keep their cells, and each tree
        gains at most one new cell per point, appended as a feature with ``δ²`` on the diagonal
        of ``A``. Each point then adds ``z z'`` to ``A`` by a rank-one update of its inverse.
        ``n_estimators``, ``lifetime``, ``alpha`` or ``feature_scaling`` changed since fit raise a
        ``ValueError`` (call ``fit``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        if not hasattr(self, "_ridge"):
            # The first call fits (and, with lifetime="auto", chooses the lifetime on it).
            return self.fit(X, y)
        self._warm_start_check()
        X, y = validate_data(self, X, y, dtype=np.float64, order="C", y_numeric=True,
                             reset=False)
        y = check_target_scale(y)  # numbers, finite (None arrives as NaN), not near overflow
        self._scaler.check(X)
        start = self._store.n_samples
        self._add_points(X, np.zeros((X.shape[0], 0)))
        new_points = np.arange(start, self._store.n_samples)
        self._refresh_columns(new_points)
        Z = self._z(self._store.X[new_points])
        with np.errstate(over="ignore"):
            targets = self._standardised(y)
        if not np.all(np.abs(targets) < MAX_STANDARDISED):
            raise ValueError(
                "y holds targets more than 2**100 times the spread of the first batch; the "
                "ridge sums of squares would overflow: refit on all the data"
            )
        value = 1.0 / np.sqrt(len(self._trees))
        for i in range(Z.shape[0]):
            self._ridge.add_point(Z.indices[Z.indptr[i]:Z.indptr[i + 1]].astype(np.intp),
                                  value, float(targets[i]))
        self._ridge.update_weights()
        self._n_train += len(y)
        self._yty += float(targets @ targets)
        self._y_fit = np.concatenate([self._y_fit, y])
        return self

    def _refresh_columns(self, new_points):
        """Re-attach every column to its cell's current node and add columns for new cells."""
        X = self._store.X
        new_X = X[new_points]
        for m, tree in enumerate(self._trees):
            own = np.flatnonzero(self._col_tree == m)
            col = np.full(tree.node_count, -1, dtype=np.intp)
            col[tree.apply(X[self._col_rep[own]], self.lifetime_)] = own
            for point, node in zip(new_points, tree.apply(new_X, self.lifetime_), strict=True):
                if col[node] < 0:
                    if self._ridge.n_features >= self.max_features:
                        # Each feature costs O(C) memory in the O(C²) inverse: refuse to grow
                        # past the cap (atomic_update restores the model as it was).
                        raise ValueError(
                            f"this batch would grow the model past max_features="
                            f"{self.max_features} features (the ridge inverse costs O(C²) "
                            "memory); raise max_features with set_params to continue online, "
                            "or refit"
                        )
                    col[node] = self._ridge.n_features
                    self._ridge.append_empty()
                    self._col_rep = np.append(self._col_rep, point)
                    self._col_tree = np.append(self._col_tree, m)
            self._col_of_node[m] = col

    # ------------------------------------------------------------------ lifetime paths

    def lifetime_path(self, X=None, y=None, *, direction="forward"):
        """Errors and marginal likelihood at every lifetime up to the fitted one (sections
        8.3-8.4), in one sweep.

        The sweep adds the cuts of the fitted trees in birth-time order (``"forward"``) or
        removes them from the fitted lifetime down (``"backward"``), updating ``A^{-1}`` with
        O(C²) rank-one updates per cut, and stops before the number of features exceeds
        ``max_features``. Validation inputs are added to copies of the trees (their partition
        does not look at labels, so the copies have the law of trees sampled on the training
        and validation inputs together); the fitted model is left exactly as it was.

        Parameters
        ----------
        X : array-like of shape (n_val, n_features), default=None
            Validation inputs.
        y : array-like of shape (n_val,), default=None
            Validation targets (given with ``X``).
        direction : {"forward", "backward"}, default="forward"

        Returns
        -------
        LifetimePath
            Intervals tiling ``[0, lifetime_]`` (the last one ends at the next birth time when
            ``max_features`` stops the sweep); metrics ``training_error`` and (with validation
            data) ``validation_error`` (mean squared errors), ``log_marginal_likelihood`` (of
            the training targets, noise variance profiled out) and ``n_features``. The
            criterion is the validation error (minimised), or without validation data the
            marginal likelihood (maximised).
        """
        model, y_val, is_train = self._path_inputs(direction, X, y)
        with np.errstate(over="ignore"):
            targets = self._standardised(np.concatenate([self._y_fit, y_val]))
        source = model._cut_source(int(self.max_features))
        # Each cut is one matrix-vector product and one rank-3 update of the inverse (BLAS;
        # threads help once the inverse no longer fits in cache).
        results = walk_path(source, RidgePathVisitor(targets, is_train, float(self.alpha)),
                            direction == "forward")
        # Back to the units of y: squared errors times scale**2, densities of y per scale.
        with np.errstate(over="ignore"):
            scale2 = np.float64(self._y_scale) ** 2
            metrics = {"training_error": results[:, 0] * scale2}
            if len(y_val):
                metrics["validation_error"] = results[:, 1] * scale2
        metrics["log_marginal_likelihood"] = (
            results[:, 2] - len(self._y_fit) * np.log(self._y_scale))
        metrics["n_features"] = results[:, 3].astype(np.intp)
        criterion = "validation_error" if len(y_val) else "log_marginal_likelihood"
        return LifetimePath.from_cut_times(
            source.times, source.terminal, metrics, criterion,
            criterion == "log_marginal_likelihood", direction=direction,
            selection=results[:, 1] if len(y_val) else results[:, 2],
        )

    def _auto_path(self, X, y):
        """The path that chooses ``lifetime="auto"``; by the marginal likelihood, of trees
        sampled up to ``max_lifetime`` on all the data."""
        if self.lifetime_selection == "marginal_likelihood":
            return self._path_probe(X, y).lifetime_path()
        return super()._auto_path(X, y)

    def predict_lifetime_mixture(self, X, path=None, prior=None, n_components=10):
        """Bayesian predictive averaged over the lifetime posterior of ``path``.

        The ``n_components`` most probable intervals of ``path`` are kept (their
        probabilities renormalised); each contributes the Gaussian predictive of ridge
        regression on the fitted model's training data, with its trees read at the upper end
        of the interval. The fitted trees hold every lifetime in ``[0, lifetime_]`` and no
        more: a component beyond ``lifetime_`` raises ``ValueError``. The paths of this model
        (:meth:`lifetime_path`) only have such intervals; the path of ``lifetime="auto"``
        (``lifetime_path_``, sampled up to ``max_lifetime`` on the fit part of a split) may
        not.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        path : LifetimePath, default=None
            A path with a ``log_marginal_likelihood`` metric. Default: ``lifetime_path()``
            (the marginal-likelihood path of the fitted model).
        prior : scipy.stats frozen distribution, default=None
            See :meth:`LifetimePath.lifetime_posterior`.
        n_components : int, default=10
            Number of intervals kept in the mixture.

        Returns
        -------
        mean, std : ndarray of shape (n_samples,)
            Moments of the mixture.
        """
        check_is_fitted(self, "_ridge")
        X = self._validate_X_predict(X)
        if not isinstance(n_components, numbers.Integral) or isinstance(n_components, bool) \
                or n_components < 1:
            raise ValueError(f"n_components must be a positive integer, got {n_components!r}")
        if prior is not None and not hasattr(prior, "cdf"):
            raise TypeError("prior must be a frozen scipy.stats distribution (with a cdf), "
                            f"got {type(prior).__name__}")
        if path is None:
            path = self.lifetime_path()
        elif not isinstance(path, LifetimePath):
            raise TypeError(f"path must be a LifetimePath, got {type(path).__name__}")
        probs = path.lifetime_posterior(prior)
        keep = np.argsort(probs)[::-1][:n_components]
        lifetimes = path.upper_lifetimes[keep]
        if np.any(lifetimes > self.lifetime_):
            raise ValueError(
                f"the mixture needs lifetimes up to {lifetimes.max():.6g}, beyond the fitted "
                f"lifetime_={self.lifetime_:.6g}: the fitted trees only hold [0, lifetime_]"
            )
        weights = probs[keep] / probs[keep].sum()
        targets = self._standardised(self._y_fit)
        first = np.zeros(len(X))
        second = np.zeros(len(X))
        for weight, lifetime in zip(weights, lifetimes, strict=True):
            Z = self._features(self._store.X, lifetime)
            Z_new = self._features(X, lifetime)
            factor = cho_factor((Z.T @ Z).toarray() + self.alpha * np.eye(Z.shape[1]))
            w = cho_solve(factor, Z.T @ targets)
            sigma2 = max(targets @ targets - targets @ (Z @ w), 1e-300) / len(targets)
            mean = Z_new @ w  # standardised units until the end
            dense = Z_new.toarray()
            var = sigma2 * (1.0 + np.sum(dense * cho_solve(factor, dense.T).T, axis=1))
            first += weight * mean
            second += weight * (var + mean**2)
        std = np.sqrt(np.maximum(second - first**2, 0.0))
        return first * self._y_scale + self._y_offset, std * self._y_scale
