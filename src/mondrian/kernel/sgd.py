"""Linear models on Mondrian kernel features trained by SGD along the lifetime (section 8.6).

When a cut splits a cell, both new cells inherit its weight, so every prediction is unchanged,
and a few SGD steps (each O(M) per output) follow. No C x C matrix is formed, so the number of
cells can exceed what the ridge path of :class:`MondrianKernelRidge` can hold, and any
differentiable loss works: squared error for regression, softmax cross-entropy for classification.
"""

import numbers

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from mondrian._docstrings import FEATURE_SCALING, KERNEL_FEATURE_WEIGHTS, LIFETIME_ATTRIBUTES
from mondrian.estimator.state_checks import check_classes
from mondrian.estimator.targets import check_target_scale
from mondrian.kernel._features import extension_leaves
from mondrian.kernel._sgd_path import SGDPathVisitor
from mondrian.kernel.ridge import _KernelPathMixin, _MondrianKernelBase
from mondrian.path._engine import walk_path
from mondrian.path.result import LifetimePath, check_direction

__all__ = ["MondrianKernelSGDClassifier", "MondrianKernelSGDRegressor", "SGDLifetimePath"]


# The SGD paths' result type before every path shared one class.
SGDLifetimePath = LifetimePath



def _location_scale(y):
    """Mean and standard deviation of the targets (scale 1 for constant ones).

    Targets near the largest or the smallest floats overflow or underflow the plain formulas
    (their squares): they are then computed on ``y / max|y|`` and scaled back, so any finite
    target scale works.
    """
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        mean, var = float(np.mean(y)), float(np.var(y))
    if np.isfinite(mean) and np.isfinite(var) and var > 1e-290:
        return mean, float(np.sqrt(var))
    top = float(np.max(np.abs(y)))
    if top == 0:
        return 0.0, 1.0
    unit = y / top
    mean, scale = float(np.mean(unit)) * top, float(np.std(unit)) * top
    return mean, scale if scale > 0 else 1.0


class _MondrianKernelSGD(_KernelPathMixin, _MondrianKernelBase):
    """Shared machinery of the SGD kernel models (not for direct use)."""

    _parameter_constraints = {
        **_MondrianKernelBase._parameter_constraints,
        "lifetime": [Interval(numbers.Real, 0, None, closed="both"), StrOptions({"auto"})],
        "alpha": [Interval(numbers.Real, 0, None, closed="left")],
        "learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
        "steps_per_cut": [Interval(numbers.Integral, 0, None, closed="left")],
        "n_epochs": [Interval(numbers.Integral, 0, None, closed="left")],
        "max_lifetime": [Interval(numbers.Real, 0, None, closed="right")],
        "max_features": [Interval(numbers.Integral, 1, None, closed="left")],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
    }

    _logistic = False
    _stratify = False

    def __init__(self, n_estimators=50, *, lifetime=1.0, alpha=1e-4, learning_rate=0.2,
                 steps_per_cut=20, n_epochs=3, max_lifetime=np.inf, max_features=20000,
                 validation_fraction=0.2, feature_scaling="minmax", feature_weights=None,
                 random_state=None):
        self.n_estimators = n_estimators
        self.lifetime = lifetime
        self.alpha = alpha
        self.learning_rate = learning_rate
        self.steps_per_cut = steps_per_cut
        self.n_epochs = n_epochs
        self.max_lifetime = max_lifetime
        self.max_features = max_features
        self.validation_fraction = validation_fraction
        self.feature_scaling = feature_scaling
        self.feature_weights = feature_weights
        self.random_state = random_state

    def _run(self, targets, is_train, max_features, eval_every):
        """Train along the cuts of the model's trees (at most ``max_features`` cells): the
        weights, losses, error rates and columns, the cut source and the numbers of cuts of
        the models evaluated."""
        source = self._cut_source(max_features)
        visitor = SGDPathVisitor(
            np.ascontiguousarray(targets), is_train, float(self.alpha),
            float(self.learning_rate), int(self.steps_per_cut),
            int(self.n_epochs) * int(is_train.sum()), max(1, eval_every), self._logistic,
            int(self._seeds[0] % (2**32)),
        )
        rows = walk_path(source, visitor, True)
        # Rows of the evaluated models: number of cuts, losses, error rates.
        rows = rows[~np.isnan(rows[:, 0])]
        cuts = rows[:, 0].astype(np.intp)
        return (visitor.weights(), rows[:, 1:3], rows[:, 3:], visitor.columns(), source, cuts)

    def _train(self, y):
        """Train along the cuts of the sampled trees (all of them)."""
        is_train = np.ones(len(y), np.uint8)
        weights, *_, columns, _, _ = self._run(self._targets(y), is_train,
                                               np.iinfo(np.intp).max, len(y) + 1)
        # Column of every leaf, read from the training points that sit in it.
        self._col_of_node = []
        for m, tree in enumerate(self._trees):
            col = np.full(tree.node_count, -1, dtype=np.intp)
            col[tree.leaf_sample_assignment()] = columns[m]
            self._col_of_node.append(col)
        self.coef_ = weights

    def lifetime_path(self, X=None, y=None, *, direction="forward", eval_every=None):
        """Train a copy along every cut up to the fitted lifetime and record its losses.

        SGD training is replayed from lifetime 0 on the fitted model's trees and training
        data (the same steps as :meth:`fit`, the same random picks), recording the losses
        every ``eval_every`` cuts, and stops before the number of cells exceeds
        ``max_features``. Validation inputs are added to copies of the trees (labels unused,
        so the copies have the law of trees sampled on both sets; their extra cuts also get
        SGD steps). The fitted model is left exactly as it was.

        Parameters
        ----------
        X : array-like of shape (n_val, n_features), default=None
            Validation inputs.
        y : array-like of shape (n_val,), default=None
            Validation targets (given with ``X``).
        direction : {"forward"}, default="forward"
            SGD trains forward only: ``"backward"`` raises ``ValueError``.
        eval_every : int, default=None
            Evaluate every this many cuts (default: 50 evaluations over ``max_features``).

        Returns
        -------
        LifetimePath
            One interval per evaluated model: ``(birth time of its last cut, next birth
            time]``. Metrics ``training_loss`` and (with validation data) ``validation_loss``:
            mean squared error in the units of ``y``, or mean cross-entropy; the classifier
            also records the misclassification rates ``training_error``
            (``validation_error``). The criterion (minimised) is the validation loss, or the
            training loss without validation data.
        """
        check_direction(direction, backward=(
            'an SGD path trains forward from lifetime 0: direction="backward" is not '
            "available (MondrianKernelRidge has an exact backward path)"))
        model, y_val, is_train = self._path_inputs(direction, X, y,
                                                   y_numeric=not self._logistic)
        n_val = len(y_val)
        targets = np.vstack([self._targets(self._y_fit), self._path_targets(y_val)])
        if eval_every is None:
            eval_every = max(1, int(self.max_features) // 50)
        _, losses, errors, _, source, cuts = model._run(
            targets, is_train, int(self.max_features), int(eval_every))
        choice = losses[:, 1] if n_val else losses[:, 0]  # standardised: never overflows
        losses = self._loss_units(losses)
        metrics = {"training_loss": losses[:, 0]}
        if n_val:
            metrics["validation_loss"] = losses[:, 1]
        if self._logistic:
            metrics["training_error"] = errors[:, 0]
            if n_val:
                metrics["validation_error"] = errors[:, 1]
        criterion = "validation_loss" if n_val else "training_loss"
        return LifetimePath.from_cut_times(source.times, source.terminal, metrics, criterion,
                                           False, models=cuts, selection=choice)

    def _path_targets(self, y):
        return self._targets(y)

    def _loss_units(self, losses):
        return losses

    def _decision(self, X):
        check_is_fitted(self, "coef_")
        X = self._validate_X_predict(X)
        nodes = extension_leaves(self._trees, X, self._keys, self.lifetime_)
        scores = np.zeros((len(X), self.coef_.shape[1]))
        for m, col in enumerate(self._col_of_node):
            inside = nodes[:, m] >= 0
            cols = col[nodes[inside, m]]
            scores[inside] += self.coef_[cols]
        return scores / np.sqrt(len(self._trees))


_SGD_PARAMS_DOC = f"""    n_estimators : int, default=50
        Number of Mondrian trees M.
    lifetime : float or "auto", default=1.0
        Lifetime λ (scaled feature units). ``"auto"`` holds out ``validation_fraction`` of the
        data, samples trees up to ``max_lifetime`` on the rest, trains along their cuts (the
        path of :meth:`lifetime_path`), keeps the lifetime with the lowest validation loss and
        fits on all the data at that lifetime.
    alpha : float, default=1e-4
        L2 penalty per SGD step (``W <- W - lr (grad + alpha W)``).
    learning_rate : float, default=0.2
        Constant SGD step size.
    steps_per_cut : int, default=20
        SGD steps on random training points after every cut.
    n_epochs : int, default=3
        Epochs of SGD before the first cut (on the root cells).
    max_lifetime : float, default=np.inf
        Terminal lifetime of the sweep of ``lifetime="auto"``.
    max_features : int, default=20000
        Paths stop before the number of cells exceeds this.
    validation_fraction : float, default=0.2
        Share of the training data held out by ``lifetime="auto"``.
{FEATURE_SCALING}{KERNEL_FEATURE_WEIGHTS}\
    random_state : int, RandomState instance or None, default=None
        Seeds the trees and the SGD steps.
"""


class MondrianKernelSGDRegressor(RegressorMixin, _MondrianKernelSGD):
    __doc__ = f"""Least squares on Mondrian kernel features, trained by SGD along the lifetime.

    Parameters
    ----------
{_SGD_PARAMS_DOC}
    Attributes
    ----------
    coef_ : ndarray of shape (n_cells, 1)
        Weights of the cells (targets standardised internally).
{LIFETIME_ATTRIBUTES}
    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import MondrianKernelSGDRegressor
    >>> X = np.random.RandomState(0).uniform(size=(100, 2))
    >>> y = np.sin(4 * X[:, 0]) + X[:, 1]
    >>> sgd = MondrianKernelSGDRegressor(n_estimators=20, lifetime=3.0, random_state=0)
    >>> bool(sgd.fit(X, y).score(X, y) > 0.9)
    True
    >>> sorted(sgd.lifetime_path(X, y).metrics)
    ['training_loss', 'validation_loss']
    """

    def _validate_training(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64, order="C", y_numeric=True)
        y = check_target_scale(y)  # None arrives as NaN: refused, never predicted from
        self._y_mean, self._y_scale = _location_scale(y)
        return X, y

    def _targets(self, y):
        y = np.asarray(y, dtype=np.float64)
        return ((y - self._y_mean) / self._y_scale)[:, None]

    def _loss_units(self, losses):
        with np.errstate(over="ignore"):
            return losses * self._y_scale * self._y_scale

    def predict(self, X):
        """Predicted targets.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return self._decision(X)[:, 0] * self._y_scale + self._y_mean


class MondrianKernelSGDClassifier(ClassifierMixin, _MondrianKernelSGD):
    __doc__ = f"""Softmax regression on Mondrian kernel features, trained by SGD along the lifetime.

    Parameters
    ----------
{_SGD_PARAMS_DOC}
    Attributes
    ----------
    classes_ : ndarray
        Sorted class labels.
    coef_ : ndarray of shape (n_cells, n_classes)
        Weights of the cells.
{LIFETIME_ATTRIBUTES}
    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import MondrianKernelSGDClassifier
    >>> X = np.random.RandomState(0).uniform(size=(100, 2))
    >>> y = X[:, 0] + X[:, 1] > 1
    >>> clf = MondrianKernelSGDClassifier(n_estimators=20, lifetime=3.0, random_state=0)
    >>> bool(clf.fit(X, y).score(X, y) > 0.9)
    True
    """

    _logistic = True
    _classification = True
    _stratify = True

    def _check_loaded_state(self):
        super()._check_loaded_state()
        if "coef_" in self.__dict__:
            coef = self.coef_
            check_classes(self, coef.shape[1] if getattr(coef, "ndim", 0) == 2 else -1)

    def _validate_training(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64, order="C")
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        return X, y

    def _targets(self, y):
        return (np.asarray(y)[:, None] == self.classes_[None, :]).astype(np.float64)

    def _path_targets(self, y):
        unseen = np.setdiff1d(np.unique(y), self.classes_)
        if unseen.size:
            raise ValueError(
                f"y contains labels {unseen.tolist()} that the model never saw in training"
            )
        return self._targets(y)

    def _known(self, X, y):
        known = np.isin(y, self.classes_)
        return X[known], y[known]

    def decision_function(self, X):
        """Class scores (logits).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes), or (n_samples,) for two classes
            For two classes, the score of the second class minus that of the first.
        """
        scores = self._decision(X)
        return scores[:, 1] - scores[:, 0] if scores.shape[1] == 2 else scores

    def predict_proba(self, X):
        """Softmax class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        scores = self._decision(X)
        scores -= scores.max(axis=1, keepdims=True)
        proba = np.exp(scores)
        return proba / proba.sum(axis=1, keepdims=True)

    def predict(self, X):
        """Most probable class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        scores = self._decision(X)
        return self.classes_[np.argmax(scores, axis=1)]
