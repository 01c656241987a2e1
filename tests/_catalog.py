"""Every estimator the package exports, found by introspection, with small settings and data.

A class added to ``mondrian.__all__`` joins every test that iterates :func:`estimator_classes`
without any list to update here (the settings below only shrink the known size parameters).
"""

import inspect

import numpy as np
from sklearn.base import is_classifier, is_regressor

import mondrian

# Small values of the size parameters, applied when a class has them (speed only).
SMALL = {"n_estimators": 3, "n_components": 8, "n_partitions": 12, "n_grids": 4,
         "max_features": 200, "n_hyper_samples": 50, "n_epochs": 1}


def estimator_classes():
    """The estimator classes of ``mondrian.__all__`` (those with ``fit``), by name."""
    return [getattr(mondrian, name) for name in sorted(mondrian.__all__)
            if inspect.isclass(getattr(mondrian, name)) and hasattr(getattr(mondrian, name), "fit")]


def small(cls, **params):
    """An unfitted ``cls`` with the small settings it has, ``random_state=0`` and ``params``."""
    names = cls._get_param_names()
    kwargs = {k: v for k, v in SMALL.items() if k in names}
    if "random_state" in names:
        kwargs["random_state"] = 0
    if cls.__name__ == "RandomPartitionKernelPCA":
        kwargs["n_components"] = 2
    kwargs.update(params)
    return cls(**kwargs)


def target_kind(estimator):
    """``"class"``, ``"number"`` or None (the models without targets)."""
    if is_classifier(estimator):
        return "class"
    if is_regressor(estimator):
        return "number"
    return None


def data(kind, n=60, n_features=3, seed=0):
    """``(X, y)`` of ``n`` rows for a target ``kind`` (``y`` None for None)."""
    rng = np.random.RandomState(seed)
    X = rng.rand(n, n_features)
    if kind == "class":
        return X, (X[:, 0] + 0.3 * rng.rand(n) > 0.6).astype(np.int64)
    if kind == "number":
        return X, np.sin(4 * X[:, 0]) + 0.1 * rng.randn(n)
    return X, None


def fit_args(estimator, X, y, **kwargs):
    """The positional arguments of ``estimator.fit`` for ``(X, y)``."""
    return (X,) if target_kind(estimator) is None else (X, y)


def fitted(cls, n=60, seed=0, **params):
    """A fitted small ``cls`` and its data ``(model, X, y)``."""
    model = small(cls, **params)
    X, y = data(target_kind(model), n, seed=seed)
    model.fit(*fit_args(model, X, y))
    return model, X, y
