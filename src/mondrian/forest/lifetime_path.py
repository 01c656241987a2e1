"""Lifetime paths of the Mondrian forests and ``lifetime="auto"`` (section 7).

A forest fitted at a terminal lifetime Λ, read at any λ < Λ, is a forest of lifetime λ. The path
walks the cuts of all trees in order of birth time and keeps the validation predictions and
losses up to date, so every lifetime at which the model changes is scored for about the cost of
one fit. The traversal lives in :mod:`mondrian.path._engine` and the leaf readers in
:mod:`mondrian.forest._path_readers`; this module holds the estimator side: the transductive
copy of the forest the path runs on and the automatic choice of the lifetime; the result is a
:class:`~mondrian.path.result.LifetimePath`.
"""

import copy

import numpy as np
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted, validate_data

from mondrian.estimator.holdout import holdout_split
from mondrian.path._engine import run_path
from mondrian.path.result import LifetimePath, check_direction

__all__ = ["LifetimePathMixin"]


class LifetimePathMixin:
    """``lifetime_path`` and ``lifetime="auto"`` for the Mondrian forests (not for direct use).

    Subclasses define ``_path_metrics`` (names, the criterion, whether it is maximised),
    ``_path_copy_params`` (parameters of the copy whose predictions the path reproduces; or
    ``_path_copy_setup`` for more than parameters),
    ``_path_targets`` (validated and encoded ``y``), ``_path_reader`` and ``_path_rows``.
    """

    def lifetime_path(self, X=None, y=None, *, direction="forward"):
        """Validation losses of the forest at every lifetime up to the fitted one.

        The forest is copied, its trees are extended with the validation inputs (labels unused,
        so the trees keep their law by projectivity; the validation points then sit inside the
        leaves and need no extension integral), and the cuts of all trees are walked in order
        of birth time, moving each validation point to the child that holds it. Leaves are
        read as independent posteriors (Gaussian leaves for regressors, Dirichlet leaves for
        classifiers) so that the model is constant between cuts: with hierarchical smoothing
        the predictions would drift continuously with the lifetime. A leaf holding only
        validation points backs off to its deepest labelled ancestor. The sweep costs
        O(n_val × n_trees × depth); with the copy of the forest, 1.3-2.6 times one fit in the
        benchmarks.

        The fitted forest is left exactly as it was.

        Parameters
        ----------
        X : array-like of shape (n_val, n_features)
            Validation inputs (required: a forest has no training-only criterion).
        y : array-like of shape (n_val,)
            Validation targets.
        direction : {"forward", "backward"}, default="forward"
            Add the cuts from lifetime 0 up, or start from the fitted lifetime and remove them
            in decreasing birth time (the same numbers, reached from the other end).

        Returns
        -------
        LifetimePath
            Intervals tiling ``[0, lifetime_]``; ``metrics`` holds ``"mse"`` and ``"nll"``
            (Gaussian negative log-likelihood per point, units of ``y``) for regressors,
            ``"log_loss"`` and ``"accuracy"`` for classifiers; the criterion (``"mse"``,
            ``"log_loss"``) is minimised. ``forest_`` is the transductive copy of the forest
            the path ran on: its trees also hold the validation inputs (without their labels;
            by projectivity the trees keep their law) and its leaves are read as independent
            posteriors, so ``forest_.prune(λ)`` predicts on the validation points exactly what
            the path reports at ``λ``. The fitted forest, which does not hold those points,
            integrates over their branching off into fresh cells and predicts them differently.
        """
        check_is_fitted(self, "_trees")
        forward = check_direction(direction)
        if X is None or y is None:
            raise ValueError(
                "a forest's lifetime path needs validation data: lifetime_path(X_val, y_val) "
                "(forests have no training-only criterion)"
            )
        forest, leaves, reader = self._path_setup(X, y)
        times, metrics = run_path(forest._trees, leaves, reader, forward=forward)
        return self._path_result(forest, times, metrics, direction)

    def _path_setup(self, X, y):
        """Validated inputs, the transductive forest, the leaves of ``X`` and a fresh reader."""
        X = validate_data(self, X, reset=False, dtype=np.float64, order="C")
        targets = self._path_targets(X, y)
        forest, leaves = self._path_forest(X)
        return forest, leaves, forest._path_reader(targets)

    def _path_result(self, forest, times, metrics, direction):
        names, criterion, maximize = self._path_metrics()
        standardised = dict(zip(names, metrics.T, strict=True))
        values = forest._path_units(standardised)
        return LifetimePath.from_cut_times(times, forest.lifetime_, values, criterion,
                                           maximize, direction=direction, forest_=forest,
                                           selection=standardised[criterion])

    def _path_forest(self, X_val):
        """A copy of the forest holding the validation inputs, and their leaves in each tree."""
        # The validation points never move the feature map (even during its warm-up): the
        # trees are extended, never re-sampled, and keep the fitted model's units.
        ensemble, val = self._ensemble.with_points(self._scaler.transform(X_val))
        # Everything else is deep-copied; the memo puts the extended ensemble in place of ours.
        forest = copy.deepcopy(self, {id(self._ensemble): ensemble})
        self._path_copy_setup(forest)
        forest._after_prune()  # caches depend on the trees
        leaves = np.vstack([tree.leaf_sample_assignment()[val] for tree in forest._trees])
        return forest, np.ascontiguousarray(leaves, dtype=np.intp)

    def _path_copy_setup(self, forest):
        """Make the copy read its leaves as the path does (default: ``_path_copy_params``)."""
        forest.set_params(**self._path_copy_params())

    def _path_stop(self, X, y, lifetime):
        """Path reader state at ``lifetime`` and the forest it ran on (for tests)."""
        forest, leaves, reader = self._path_setup(X, y)
        run_path(forest._trees, leaves, reader, forward=True, stop=float(lifetime))
        return reader, forest

    # ----------------------------------------------------------------- lifetime="auto"

    def _fit_lifetime(self, X, y, weights=None):
        """The lifetime to fit at: the parameter, or the best of a validation path.

        With sample ``weights`` (positive), the probe forest is fitted with the weights of its
        rows; the validation losses are unweighted means.
        """
        self.__dict__.pop("lifetime_path_", None)  # from an earlier fit
        if not (isinstance(self.lifetime, str) and self.lifetime == "auto"):
            return float(self.lifetime)
        if weights is not None:
            X = np.column_stack([X, weights])  # the weights follow their rows through the split
        X_fit, X_val, y_fit, y_val = holdout_split(
            X, y, self.validation_fraction, self.random_state, stratify=self._auto_stratified,
            min_fit=2,
        )
        fit_weights = None
        if weights is not None:
            X_fit, fit_weights = np.ascontiguousarray(X_fit[:, :-1]), X_fit[:, -1]
            X_val = np.ascontiguousarray(X_val[:, :-1])
        probe = clone(self).set_params(lifetime=np.inf)
        if "_map_weights" in self.__dict__:  # the feature map already chosen, not a new search
            probe._inherit_map = (self._map_weights, self.__dict__.get("_map_knots"))
        if fit_weights is None:
            probe.fit(X_fit, y_fit)
        else:
            probe.set_params(**({"class_weight": None} if "class_weight" in
                                probe.get_params() else {}))
            probe.fit(X_fit, y_fit, sample_weight=fit_weights)
        X_val, y_val = probe._auto_validation(X_val, y_val)
        if len(y_val) == 0:
            return np.inf
        path = probe.lifetime_path(X_val, y_val)
        self.lifetime_path_ = _without_forest(path)
        return path.best_lifetime

    # Classifiers stratify their hold-out split.
    _auto_stratified = False

    def _auto_validation(self, X, y):
        return X, y


def _without_forest(path):
    """The path without its (large) forest, to keep on the fitted estimator."""
    out = copy.copy(path)
    out.forest_ = None
    return out
