"""Bad input raises a clear error and never changes a fitted model; online class handling."""

import pickle

import numpy as np
import pytest

from mondrian import MondrianForestClassifier
from mondrian.estimator.versioned import STATE_VERSION


@pytest.fixture
def data():
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(60, 3))
    y = (X[:, 0] > 0.5).astype(int)
    return X, y


@pytest.fixture
def fitted(data):
    X, y = data
    return MondrianForestClassifier(n_estimators=5, random_state=0).fit(X, y)


def _snapshot(model):
    return pickle.dumps(model)


BAD_X = {
    "nan": (
        lambda X: np.where(np.arange(X.size).reshape(X.shape) == 4, np.nan, X),
        ValueError,
        "NaN",
    ),
    "inf": (
        lambda X: np.where(np.arange(X.size).reshape(X.shape) == 4, np.inf, X),
        ValueError,
        "infinity",
    ),
    "wrong_n_features": (lambda X: X[:, :2], ValueError, "features"),
    "one_dimensional": (lambda X: X[:, 0], ValueError, "2D array"),
    "empty": (lambda X: X[:0], ValueError, "0 sample"),
    "complex": (lambda X: X + 1j, ValueError, "Complex"),
}


@pytest.mark.parametrize("case", sorted(BAD_X))
def test_bad_X_in_partial_fit_leaves_model_unchanged(fitted, data, case):
    X, y = data
    make, error, message = BAD_X[case]
    before = _snapshot(fitted)
    X_bad = make(X)
    with pytest.raises(error, match=message):
        fitted.partial_fit(X_bad, y[: len(X_bad)])
    assert _snapshot(fitted) == before


@pytest.mark.parametrize("case", sorted(BAD_X))
def test_bad_X_in_predict(fitted, data, case):
    if case == "empty":
        pytest.skip("empty X is handled by scikit-learn's validation the same way")
    X, _ = data
    make, error, message = BAD_X[case]
    with pytest.raises(error, match=message):
        fitted.predict_proba(make(X))


@pytest.mark.parametrize("lifetime", [-1.0, np.nan, "long"])
def test_bad_lifetime(data, lifetime):
    X, y = data
    with pytest.raises((ValueError, TypeError), match="lifetime"):
        MondrianForestClassifier(lifetime=lifetime).fit(X, y)


def test_mixed_string_and_number_labels(data, fitted):
    X, _ = data
    y = ["a", 1] * 30
    with pytest.raises(TypeError, match="mixes strings and numbers"):
        MondrianForestClassifier(n_estimators=2).fit(X, y)
    before = _snapshot(fitted)
    with pytest.raises(TypeError):
        fitted.partial_fit(X[:2], ["a", "b"])
    assert _snapshot(fitted) == before


def test_regression_target_rejected(data):
    X, _ = data
    with pytest.raises(ValueError, match="Unknown label type"):
        MondrianForestClassifier(n_estimators=2).fit(X, np.linspace(0, 1, len(X)))


def test_new_classes_mid_stream(data):
    X, y = data
    model = MondrianForestClassifier(n_estimators=5, random_state=0)
    model.partial_fit(X[:20], y[:20] + 1)  # classes {1, 2}
    assert model.classes_.tolist() == [1, 2]
    model.partial_fit(X[20:40], np.zeros(20, dtype=int))  # class 0 sorts first
    assert model.classes_.tolist() == [0, 1, 2]
    proba = model.predict_proba(X)
    assert proba.shape == (len(X), 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    # The class counts of the root follow the sorted classes.
    root = model.estimators_[0].tree_.value[0]
    np.testing.assert_array_equal(root, [20, np.sum(y[:20] == 0), np.sum(y[:20] == 1)])
    model.learn_one(X[0], 7)
    assert model.classes_.tolist() == [0, 1, 2, 7]
    assert set(model.predict_proba_one(X[0])) == {0, 1, 2, 7}


def test_fixed_classes_reject_unseen_labels(data):
    X, y = data
    model = MondrianForestClassifier(n_estimators=3, random_state=0)
    model.partial_fit(X[:10], y[:10], classes=[0, 1, 2])
    assert model.classes_.tolist() == [0, 1, 2]
    assert model.predict_proba(X[:3]).shape == (3, 3)
    before = _snapshot(model)
    with pytest.raises(ValueError, match=r"labels \[5\]"):
        model.partial_fit(X[10:20], np.full(10, 5))
    with pytest.raises(ValueError, match="not in the classes"):
        model.learn_one(X[0], 5)
    with pytest.raises(ValueError, match="differs"):
        model.partial_fit(X[10:20], y[10:20], classes=[0, 1])
    assert _snapshot(model) == before


def test_first_call_with_classes_not_covering_y(data):
    X, y = data
    model = MondrianForestClassifier(n_estimators=3)
    with pytest.raises(ValueError, match="not in `classes`"):
        model.partial_fit(X, y, classes=[0])
    assert not hasattr(model, "classes_")


def test_learn_one_with_dicts(data):
    X, y = data
    model = MondrianForestClassifier(n_estimators=3, random_state=0)
    assert model.predict_proba_one({"a": 1.0}) == {}
    assert model.predict_one({"a": 1.0}) is None
    for row, label in zip(X, y, strict=True):
        model.learn_one({"a": row[0], "b": row[1], "c": row[2]}, label)
    proba = model.predict_proba_one({"c": X[0, 2], "a": X[0, 0], "b": X[0, 1]})
    assert set(proba) == {0, 1}
    assert abs(sum(proba.values()) - 1) < 1e-12
    with pytest.raises(ValueError, match="missing"):
        model.predict_proba_one({"a": 1.0})
    with pytest.raises(ValueError, match="NaN"):
        model.learn_one({"a": np.nan, "b": 0.0, "c": 0.0}, 0)


def test_predict_one_with_a_dict_does_not_change_the_model(data):
    """Predicting with a dict never records its key order (only learn_one does): the model
    pickles the same before and after, and a later learn_one reads the keys of its own dict."""
    X, y = data
    model = MondrianForestClassifier(n_estimators=3, random_state=0).fit(X, y)
    before = pickle.dumps(model)
    row = {"a": X[0, 0], "b": X[0, 1], "c": X[0, 2]}
    model.predict_one(row)
    model.predict_proba_one(row)
    assert pickle.dumps(model) == before


def test_learn_one_matches_partial_fit(data):
    X, y = data
    a = MondrianForestClassifier(n_estimators=4, random_state=3)
    b = MondrianForestClassifier(n_estimators=4, random_state=3)
    for row, label in zip(X, y, strict=True):
        a.learn_one(row, label)
        b.partial_fit(row[None, :], [label])
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_pickle_is_versioned(fitted):
    state = fitted.__getstate__()
    assert state["_mondrian_state_version"] == STATE_VERSION
    state["_mondrian_state_version"] = 99
    clone = MondrianForestClassifier.__new__(MondrianForestClassifier)
    with pytest.raises(ValueError, match="state version 99"):
        clone.__setstate__(state)
