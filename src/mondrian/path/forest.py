"""Lifetime paths of the Mondrian forests and ``lifetime="auto"`` (section 7).

A forest fitted at a terminal lifetime Λ, read at any λ < Λ, is a forest of lifetime λ. The path
walks the cuts of all trees in order of birth time and keeps the validation predictions and
losses up to date, so every lifetime at which the model changes is scored for about the cost of
one fit. The traversal lives in :mod:`mondrian.path._engine`; this module holds the estimator
side: the transductive copy of the forest the path runs on, the result object and the automatic
choice of the lifetime.
"""

import copy
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from mondrian.core._tree import extend_trees
from mondrian.path._engine import run_path

__all__ = ["ForestLifetimePath", "LifetimePathMixin", "best_interval", "make_lifetime_path"]


@dataclass
class ForestLifetimePath:
    """Losses of a Mondrian forest at every lifetime at which it changes.

    Entry ``k`` describes the forest holding the first ``k`` cuts (in order of birth time over
    all trees): the forest at every lifetime in ``(lifetimes[k], upper_lifetimes[k]]``.

    Attributes
    ----------
    lifetimes : ndarray of shape (n_cuts + 1,)
        Lower end of each interval: 0, then the birth times of the cuts.
    upper_lifetimes : ndarray of shape (n_cuts + 1,)
        Upper end of each interval: the next birth time, or the terminal lifetime.
    metrics : dict of str to ndarray
        Validation losses on each interval: ``"mse"`` and ``"nll"`` (Gaussian negative
        log-likelihood per point, in the units of ``y``) for regressors; ``"log_loss"`` and
        ``"accuracy"`` for classifiers.
    criterion : str
        The metric that chose ``best_lifetime`` (minimised; accuracy is maximised).
    best_index : int
        Interval with the best criterion (the first one on ties: the smallest lifetime).
    best_lifetime : float
        A lifetime inside that interval: its midpoint, or ``inf`` when it is unbounded.
    direction : str
        ``"forward"`` (cuts added from lifetime 0) or ``"backward"`` (removed from Λ down).
    forest_ : estimator
        The forest the path was computed on: a copy of the fitted forest whose trees were
        extended with the validation inputs (without their labels; by projectivity the trees
        keep their law) and whose leaves are read as independent posteriors. ``forest_.prune(λ)``
        predicts on the validation points exactly what the path reports at ``λ``. This is a
        transductive model (section 7): the validation points sit inside its leaves, whereas
        the fitted forest, which does not hold them, integrates over their branching off into
        fresh cells (that predict the prior) and so predicts them differently.
    """

    lifetimes: np.ndarray
    upper_lifetimes: np.ndarray
    metrics: dict
    criterion: str
    best_index: int
    best_lifetime: float
    direction: str
    forest_: object = field(default=None, repr=False)

    @property
    def n_cuts(self):
        """Number of cuts in the forest (intervals minus one)."""
        return len(self.lifetimes) - 1


def best_interval(values, maximize):
    """Index of the first value that is best up to rounding, ignoring NaN.

    Ties go to the smallest lifetime: a curve that is flat in exact arithmetic (e.g. the
    leave-one-out likelihood once every training point sits alone in its cell) keeps the start
    of its plateau, whatever the rounding of its running sums.
    """
    values = np.asarray(values, dtype=np.float64)
    sign = 1.0 if maximize else -1.0
    score = np.where(np.isnan(values), -np.inf, sign * values)
    top = np.max(score)
    return int(np.argmax(score >= top - 1e-10 * max(1.0, abs(top))))


def make_lifetime_path(times, metrics, criterion, maximize, terminal, direction, forest=None):
    """A :class:`ForestLifetimePath` from the cut times of a path and its metric rows."""
    lifetimes = np.concatenate([[0.0], times])
    upper = np.concatenate([times, [terminal]])
    best = best_interval(metrics[criterion], maximize)
    return ForestLifetimePath(
        lifetimes=lifetimes,
        upper_lifetimes=upper,
        metrics=metrics,
        criterion=criterion,
        best_index=best,
        best_lifetime=float(0.5 * (lifetimes[best] + upper[best])),
        direction=direction,
        forest_=forest,
    )


class LifetimePathMixin:
    """``lifetime_path`` and ``lifetime="auto"`` for the Mondrian forests (not for direct use).

    Subclasses define ``_path_metrics`` (names, the criterion, whether it is maximised),
    ``_path_copy_params`` (parameters of the copy whose predictions the path reproduces),
    ``_path_targets`` (validated and encoded ``y``), ``_path_reader`` and ``_path_rows``.
    """

    def lifetime_path(self, X, y, *, direction="forward"):
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

        Parameters
        ----------
        X : array-like of shape (n_val, n_features)
            Validation inputs.
        y : array-like of shape (n_val,)
            Validation targets.
        direction : {"forward", "backward"}, default="forward"
            Add the cuts from lifetime 0 up, or start from the fitted lifetime and remove them
            in decreasing birth time (the same numbers, reached from the other end).

        Returns
        -------
        ForestLifetimePath
        """
        check_is_fitted(self, "_trees")
        if direction not in ("forward", "backward"):
            raise ValueError(f"direction must be 'forward' or 'backward', got {direction!r}")
        forest, leaves, reader = self._path_setup(X, y)
        times, metrics = run_path(forest._trees, leaves, reader, forward=direction == "forward")
        return self._path_result(forest, times, metrics, direction)

    def _path_setup(self, X, y):
        """Validated inputs, the transductive forest, the leaves of ``X`` and a fresh reader."""
        X = validate_data(self, X, reset=False, dtype=np.float64, order="C")
        targets = self._path_targets(X, y)
        forest, leaves = self._path_forest(X)
        return forest, leaves, forest._path_reader(targets)

    def _path_result(self, forest, times, metrics, direction):
        names, criterion, maximize = self._path_metrics()
        values = forest._path_units(dict(zip(names, metrics.T, strict=True)))
        return make_lifetime_path(times, values, criterion, maximize, forest.lifetime_,
                                  direction, forest)

    def _path_forest(self, X_val):
        """A copy of the forest holding the validation inputs, and their leaves in each tree."""
        forest = copy.deepcopy(self)
        forest.set_params(**self._path_copy_params())
        # The validation points never move the feature map (even during its warm-up): the
        # trees are extended, never re-sampled, and keep the fitted model's units.
        rows = np.zeros((X_val.shape[0], forest._store.rows.shape[1]))
        val = forest._store.append(forest._scaler.transform(X_val), rows)
        extend_trees(forest._trees, forest._store.X, forest._store.rows, val)
        forest._after_prune()  # caches depend on the trees
        leaves = np.vstack([tree.leaf_sample_assignment()[val] for tree in forest._trees])
        return forest, np.ascontiguousarray(leaves, dtype=np.intp)

    def _path_stop(self, X, y, lifetime):
        """Path reader state at ``lifetime`` and the forest it ran on (for tests)."""
        forest, leaves, reader = self._path_setup(X, y)
        run_path(forest._trees, leaves, reader, forward=True, stop=float(lifetime))
        return reader, forest

    # ----------------------------------------------------------------- lifetime="auto"

    def _fit_lifetime(self, X, y):
        """The lifetime to fit at: the parameter, or the best of a validation path."""
        self.__dict__.pop("lifetime_path_", None)  # from an earlier fit
        if not (isinstance(self.lifetime, str) and self.lifetime == "auto"):
            return float(self.lifetime)
        rng = check_random_state(self.random_state)
        n_val = int(round(self.validation_fraction * X.shape[0]))
        if n_val < 1 or X.shape[0] - n_val < 2:
            raise ValueError(
                f'lifetime="auto" holds out validation_fraction={self.validation_fraction} of '
                f"the {X.shape[0]} samples; that leaves no validation or training set"
            )
        X_fit, X_val, y_fit, y_val = train_test_split(
            X, y, test_size=n_val, random_state=rng, stratify=self._auto_stratify(y, n_val)
        )
        probe = clone(self).set_params(lifetime=np.inf)
        probe.fit(X_fit, y_fit)
        X_val, y_val = probe._auto_validation(X_val, y_val)
        if len(y_val) == 0:
            return np.inf
        path = probe.lifetime_path(X_val, y_val)
        self.lifetime_path_ = _without_forest(path)
        return path.best_lifetime

    def _auto_stratify(self, y, n_val):
        return None

    def _auto_validation(self, X, y):
        return X, y


def _without_forest(path):
    """The path without its (large) forest, to keep on the fitted estimator."""
    out = copy.copy(path)
    out.forest_ = None
    return out
