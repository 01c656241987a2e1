"""Every estimator with a lifetime path, fitted on a small problem (shared by the path tests)."""

from dataclasses import dataclass

import numpy as np

from mondrian import (
    MondrianForestClassifier,
    MondrianForestDensity,
    MondrianForestRegressor,
    MondrianKernelRidge,
    MondrianKernelSGDClassifier,
    MondrianKernelSGDRegressor,
    MondrianTreeClassifier,
    MondrianTreeRegressor,
)

from _data import sine_regression


@dataclass
class PathCase:
    """A fitted estimator, validation data for its path and what it predicts."""

    name: str
    model: object
    X_val: np.ndarray
    y_val: np.ndarray | None  # None: the density (no targets)
    predict: str  # the method whose output must not change
    needs_validation: bool  # forests: no training-only criterion
    backward: bool  # whether direction="backward" is available

    def path(self, with_validation=True, **kwargs):
        if not with_validation:
            return self.model.lifetime_path(**kwargs)
        if self.y_val is None:
            return self.model.lifetime_path(self.X_val, **kwargs)
        return self.model.lifetime_path(self.X_val, self.y_val, **kwargs)

    def predictions(self):
        return getattr(self.model, self.predict)(self.X_val)


# name -> (estimator factory, task, lifetime of the fixed fit)
ESTIMATORS = {
    "forest_classifier": (MondrianForestClassifier, "classification", np.inf),
    "tree_classifier": (MondrianTreeClassifier, "classification", np.inf),
    "forest_regressor": (MondrianForestRegressor, "regression", np.inf),
    "tree_regressor": (MondrianTreeRegressor, "regression", np.inf),
    "density": (MondrianForestDensity, "density", 20.0),
    "kernel_ridge": (MondrianKernelRidge, "regression", 5.0),
    "kernel_sgd_regressor": (MondrianKernelSGDRegressor, "regression", 5.0),
    "kernel_sgd_classifier": (MondrianKernelSGDClassifier, "classification", 5.0),
}

_PREDICT = {"classification": "predict_proba", "regression": "predict", "density": "score_samples"}


def make_estimator(name, **params):
    """An unfitted estimator of the case ``name`` (a few trees, seeded)."""
    factory, _, lifetime = ESTIMATORS[name]
    n_trees = {"tree_classifier": None, "tree_regressor": None}.get(name, 5)
    kwargs = {"random_state": 0, "lifetime": lifetime}
    if n_trees is not None:
        kwargs["n_estimators"] = n_trees
    if name.startswith("kernel"):
        kwargs["max_features"] = 400
    kwargs.update(params)
    return factory(**kwargs)


def training_data(name, n=150, seed=0):
    """Training inputs and targets for the case ``name`` (``y`` is None for the density)."""
    X, y = sine_regression(n, 2, seed, frequency=5, slope=1.0)
    task = ESTIMATORS[name][1]
    if task == "classification":
        return X, (y > np.median(y)).astype(int)
    return X, (None if task == "density" else y)


def make_case(name):
    """The estimator of ``name`` fitted at its fixed lifetime, with validation data."""
    X, y = training_data(name, seed=0)
    X_val, y_val = training_data(name, n=60, seed=1)
    model = make_estimator(name).fit(X, y)
    task = ESTIMATORS[name][1]
    return PathCase(
        name=name, model=model, X_val=X_val, y_val=y_val, predict=_PREDICT[task],
        needs_validation=not (name == "density" or name.startswith("kernel")),
        backward=not name.startswith("kernel_sgd"),
    )
