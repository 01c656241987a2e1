"""Issue 11: a rejected call leaves the model exactly as it was; one regression test per defect."""

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from mondrian import MondrianForestClassifier, MondrianForestDensity, MondrianForestRegressor
from mondrian.kernel import (
    LaplaceRandomFourierFeatures,
    MondrianKernelFeatures,
    MondrianKernelRidge,
    MondrianKernelSGDClassifier,
    MondrianKernelSGDRegressor,
    RandomBinningFeatures,
)

rng = np.random.RandomState(0)
X = rng.rand(120, 3)
Y_REG = X[:, 0] + 0.1 * rng.randn(120)
Y_CLF = (X[:, 0] > 0.5).astype(int)


def state(model):
    return pickle.dumps(model)


def assert_unchanged(model, before, call, error=(ValueError, TypeError)):
    with pytest.raises(error):
        call()
    assert state(model) == before


def test_regressor_rejected_batch_keeps_target_sums():
    model = MondrianForestRegressor(4, random_state=0).fit(X, Y_REG)
    before = state(model)
    sums = model._y_sums.copy()
    assert_unchanged(model, before, lambda: model.partial_fit(np.full((2, 3), 1e200), [1.0, 2.0]))
    np.testing.assert_array_equal(model._y_sums, sums)


@pytest.mark.parametrize("targets", [[None, 1.0], [np.nan, 1.0], [np.inf, 0.0]])
def test_regressor_rejects_none_targets_without_change(targets):
    model = MondrianForestRegressor(4, random_state=0).fit(X, Y_REG)
    before = state(model)
    y = np.array(targets, dtype=object)
    assert_unchanged(model, before, lambda: model.partial_fit(X[:2], y))
    with pytest.raises(ValueError):
        MondrianForestRegressor(4, random_state=0).fit(X[:2], y)


def test_regressor_learns_later_targets_far_beyond_the_frozen_scale():
    """Targets of 1e300 after a fit on O(1) targets: the target scale grows (stored sums
    rescaled exactly) instead of overflowing; predictions stay finite and follow the data."""
    model = MondrianForestRegressor(4, random_state=0).fit(X, Y_REG)
    model.partial_fit(X[:2], [1e300, -1e300])
    mean, std = model.predict(X[:5], return_std=True)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std)) and np.all(std > 0)
    assert model._y_scaler.scale > 1e299


def test_kernel_ridge_rejects_none_targets_without_change():
    model = MondrianKernelRidge(4, random_state=0).fit(X, Y_REG)
    before = state(model)
    y = np.array([None, 1.0], dtype=object)
    assert_unchanged(model, before, lambda: model.partial_fit(X[:2], y))
    assert np.all(np.isfinite(model.predict(X[:5])))


@pytest.mark.parametrize("label", [np.nan, None, [1, 2], {"a": 1}, "a", 0.5])
def test_learn_one_bad_label_adds_no_class(label):
    model = MondrianForestClassifier(4, random_state=0).fit(X, Y_CLF)
    before = state(model)
    assert_unchanged(model, before, lambda: model.learn_one(X[0], label))
    np.testing.assert_array_equal(model.classes_, [0, 1])


@pytest.mark.parametrize("label", [np.nan, None, [1, 2]])
def test_learn_one_bad_first_label_leaves_model_unfitted(label):
    model = MondrianForestClassifier(4, random_state=0)
    with pytest.raises((ValueError, TypeError)):
        model.learn_one(X[0], label)
    assert not hasattr(model, "classes_") and not hasattr(model, "_ensemble")


def test_learn_one_bad_x_adds_no_class():
    model = MondrianForestClassifier(4, random_state=0).fit(X, Y_CLF)
    before = state(model)
    assert_unchanged(model, before, lambda: model.learn_one([1e200, 0.0, 0.0], 7))


ESTIMATORS = [
    (MondrianForestClassifier, Y_CLF),
    (MondrianForestRegressor, Y_REG),
    (MondrianForestDensity, None),
    (MondrianKernelFeatures, None),
    (MondrianKernelRidge, Y_REG),
    (MondrianKernelSGDRegressor, Y_REG),
    (MondrianKernelSGDClassifier, Y_CLF),
    (RandomBinningFeatures, None),
    (LaplaceRandomFourierFeatures, None),
]


def _fit(model, y):
    return model.fit(X) if y is None else model.fit(X, y)


NUMERIC_PARAMS = [
    (cls, y, name, value)
    for cls, y in ESTIMATORS
    for name in ("n_estimators", "lifetime", "n_components", "n_jobs")
    if name in cls().get_params()
    for value in ((True, False, 0) if name == "n_jobs" else (True, False))
]


@pytest.mark.parametrize("cls, y, name, value", NUMERIC_PARAMS,
                         ids=[f"{c.__name__}-{n}={v}" for c, _, n, v in NUMERIC_PARAMS])
def test_booleans_and_zero_jobs_are_rejected(cls, y, name, value):
    model = cls(**{name: value})
    with pytest.raises(InvalidParameterError, match=name):
        _fit(model, y)


@pytest.mark.parametrize("cls", [RandomBinningFeatures, LaplaceRandomFourierFeatures,
                                 MondrianKernelFeatures])
def test_rejected_numpy_refit_keeps_feature_names(cls):
    model = cls().fit(pd.DataFrame(X, columns=["a", "b", "c"]))
    before = state(model)
    assert_unchanged(model, before, lambda: model.fit(np.full((3, 3), np.nan)))
    assert list(model.feature_names_in_) == ["a", "b", "c"]


def test_fourier_features_of_huge_finite_x_raise_instead_of_nan():
    model = LaplaceRandomFourierFeatures(n_components=20, random_state=0).fit(X)
    with pytest.raises(ValueError, match="too large"):
        model.transform(np.full((2, 3), 1e308))
    assert np.all(np.isfinite(model.transform(X[:5])))


def test_kernel_ridge_partial_fit_respects_max_features():
    model = MondrianKernelRidge(4, lifetime=3.0, random_state=0).fit(X[:30], Y_REG[:30])
    n_features = model._ridge.n_features
    model.set_params(max_features=n_features + 3)
    before = state(model)
    assert_unchanged(model, before, lambda: model.partial_fit(X[30:], Y_REG[30:]))
    model.set_params(max_features=4000)
    model.partial_fit(X[30:], Y_REG[30:])
    assert model._ridge.n_features > n_features + 3


def test_auto_lifetime_of_regressor_does_not_depend_on_units_of_y():
    data = np.random.RandomState(3)
    Xa = data.rand(300, 2)
    ya = np.sin(6 * Xa[:, 0]) + 0.05 * data.randn(300)
    lifetimes = [MondrianForestRegressor(4, lifetime="auto", random_state=0).fit(Xa, ya * s)
                 .lifetime_ for s in (1.0, 1e-6, 1e6)]
    assert lifetimes[1] == pytest.approx(lifetimes[0], rel=1e-6)
    assert lifetimes[2] == pytest.approx(lifetimes[0], rel=1e-6)
