"""River-style ``learn_one`` / ``predict_one`` on the regressors."""

import pickle

import numpy as np
import pytest

from mondrian import MondrianForestRegressor, MondrianTreeRegressor
from mondrian.core.ensemble import fail_after_trees

rng = np.random.RandomState(0)
X = rng.rand(80, 3)
Y = np.sin(4 * X[:, 0]) + 0.1 * rng.randn(80)
NAMES = ["a", "b", "c"]


def as_dict(row, names=NAMES):
    return dict(zip(names, row.tolist(), strict=True))


@pytest.mark.exact
@pytest.mark.parametrize("make", [
    lambda: MondrianForestRegressor(4, random_state=0),
    lambda: MondrianTreeRegressor(random_state=0),
])
def test_learn_one_is_partial_fit_of_one_row(make):
    # The same model, bit for bit, as partial_fit on one-row batches (arrays and dicts alike).
    by_row, by_dict, by_batch = make(), make(), make()
    for k in range(40):
        by_row.learn_one(X[k], Y[k])
        by_dict.learn_one(as_dict(X[k]), Y[k])
        by_batch.partial_fit(X[k : k + 1], Y[k : k + 1])
    want_mean, want_std = by_batch.predict(X[40:], return_std=True)
    for model in (by_row, by_dict):
        mean, std = model.predict(X[40:], return_std=True)
        np.testing.assert_array_equal(mean, want_mean)
        np.testing.assert_array_equal(std, want_std)


@pytest.mark.exact
def test_predict_one_matches_predict():
    model = MondrianForestRegressor(5, random_state=1).fit(X[:60], Y[:60])
    mean, std = model.predict(X[60:], return_std=True)
    for k in range(60, 80):
        got_mean, got_std = model.predict_one(as_dict(X[k]), return_std=True)
        assert got_mean == pytest.approx(mean[k - 60], rel=1e-12, abs=1e-12)
        assert got_std == pytest.approx(std[k - 60], rel=1e-12, abs=1e-12)
        assert model.predict_one(X[k]) == got_mean
        assert isinstance(got_mean, float) and isinstance(got_std, float)


def test_predict_one_before_training_is_none():
    model = MondrianForestRegressor(3)
    assert model.predict_one({"a": 1.0}) is None
    assert model.predict_one({"a": 1.0}, return_std=True) == (None, None)


def test_dict_keys_follow_the_first_dict_and_unknown_keys_are_named():
    model = MondrianForestRegressor(3, random_state=0)
    model.learn_one({"a": 0.1, "b": 0.2}, 1.0)
    model.learn_one({"b": 0.9, "a": 0.3}, 2.0)  # another key order reads the same features
    assert model._store.n_samples == 2
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match=r"\['z'\]"):
        model.learn_one({"a": 0.1, "b": 0.2, "z": 1.0}, 1.0)
    with pytest.raises(ValueError, match="'b' is missing"):
        model.learn_one({"a": 0.1}, 1.0)
    with pytest.raises(ValueError, match="'b' is missing"):
        model.predict_one({"a": 0.1})
    assert pickle.dumps(model) == before


def test_named_features_of_fit_order_the_dict():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=NAMES)
    model = MondrianForestRegressor(3, random_state=0).fit(frame, Y)
    shuffled = {"c": X[0, 2], "a": X[0, 0], "b": X[0, 1]}
    assert model.predict_one(shuffled) == pytest.approx(model.predict(frame[:1])[0])


@pytest.mark.parametrize("target", [None, "1.0", np.nan, np.inf, [1.0, 2.0], object()])
def test_bad_target_leaves_model_unchanged(target):
    model = MondrianForestRegressor(3, random_state=0).fit(X[:30], Y[:30])
    before = pickle.dumps(model)
    with pytest.raises((ValueError, TypeError)):
        model.learn_one(X[30], target)
    assert pickle.dumps(model) == before
    fresh = MondrianForestRegressor(3)
    with pytest.raises((ValueError, TypeError)):
        fresh.learn_one(X[30], target)
    assert not hasattr(fresh, "_ensemble")


@pytest.mark.parametrize("x", [[np.nan, 0.0, 0.0], [1.0, 2.0], ["a", 0.0, 0.0]])
def test_bad_x_leaves_model_unchanged(x):
    model = MondrianForestRegressor(3, random_state=0).fit(X[:30], Y[:30])
    before = pickle.dumps(model)
    with pytest.raises((ValueError, TypeError)):
        model.learn_one(x, 1.0)
    assert pickle.dumps(model) == before


def test_auto_lifetime_needs_a_batch():
    with pytest.raises(ValueError, match="auto"):
        MondrianForestRegressor(3, lifetime="auto").learn_one(X[0], Y[0])


def test_failure_inside_the_core_on_a_small_model_is_rolled_back():
    # While the update adds at least 1/32 of the stored points the trees are snapshotted.
    model = MondrianForestRegressor(4, random_state=0).fit(X[:20], Y[:20])
    before = pickle.dumps(model)
    fail_after_trees(1, MemoryError)
    try:
        with pytest.raises(MemoryError):
            model.learn_one(X[20], Y[20])
    finally:
        fail_after_trees(None)
    assert pickle.dumps(model) == before


def test_views_refuse_learn_one():
    model = MondrianForestRegressor(2, random_state=0).fit(X[:30], Y[:30])
    with pytest.raises(ValueError, match="read-only view"):
        model.estimators_[0].learn_one(X[0], 1.0)
