"""merge_forests, forest_parts, per-tree seeds and fixed feature maps (no dask needed)."""

import pickle

import numpy as np
import pytest

from mondrian import (
    MondrianForestClassifier,
    MondrianForestDensity,
    MondrianForestRegressor,
    merge_forests,
)
from mondrian.core.ensemble import draw_seeds
from mondrian.merging import feature_range, forest_parts

pytestmark = pytest.mark.exact

RNG = np.random.default_rng(0)
X = RNG.normal(size=(120, 3))
Y_CLASS = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
Y_REG = X[:, 0] - 2 * X[:, 1] + 0.1 * RNG.normal(size=120)
X_TEST = RNG.normal(size=(40, 3))
REG_FIXED = {"noise_variance": 0.05, "prior_variance": 2.0, "sigmoid_rate": 3.0}


def _models(n_estimators, random_state, **extra):
    return {
        "classifier": (MondrianForestClassifier(n_estimators, random_state=random_state,
                                                **extra), Y_CLASS, "predict_proba"),
        "regressor": (MondrianForestRegressor(n_estimators, random_state=random_state,
                                              **REG_FIXED, **extra), Y_REG, "predict"),
        "density": (MondrianForestDensity(n_estimators, lifetime=3.0, concentration=0.5,
                                          random_state=random_state), None, "density"),
    }


def _fit(model, X_, y):
    return model.fit(X_) if y is None else model.fit(X_, y)


def _read(model, method, X_):
    if method == "density":
        return np.exp(model.score_samples(X_))
    return getattr(model, method)(X_)


def test_seeds_are_seed_sequence_children():
    children = np.random.SeedSequence(7).spawn(6)
    expected = [int(c.generate_state(1, np.uint64)[0] >> 1) for c in children]
    assert draw_seeds(7, 6).tolist() == expected
    assert draw_seeds(7, 6, start=4).tolist() == expected[4:]


@pytest.mark.parametrize("kind", ["classifier", "regressor", "density"])
def test_parts_merged_equal_the_whole_forest_and_keep_learning(kind):
    whole, y, method = _models(7, 11)[kind]
    parts = forest_parts(whole, 3)
    assert [p.n_estimators for p in parts] in ([2, 2, 3], [3, 4])  # regressors: >= 2 trees
    fitted = [_fit(p, X[:80], None if y is None else y[:80]) for p in parts]
    _fit(whole, X[:80], None if y is None else y[:80])
    merged = merge_forests(fitted)
    assert merged.n_estimators == 7
    np.testing.assert_array_equal(merged._seeds, whole._seeds)
    np.testing.assert_array_equal(_read(merged, method, X_TEST), _read(whole, method, X_TEST))
    # Online learning goes on identically, growing more trees included.
    for model in (merged, whole):
        model.set_params(n_estimators=9)
        if y is None:
            model.partial_fit(X[80:])
        else:
            model.partial_fit(X[80:], y[80:])
    np.testing.assert_array_equal(merged._seeds, whole._seeds)
    np.testing.assert_array_equal(_read(merged, method, X_TEST), _read(whole, method, X_TEST))


@pytest.mark.parametrize("kind", ["classifier", "regressor", "density"])
def test_merged_prediction_is_the_tree_weighted_average(kind):
    # Different seeds would search different feature weights: fixed (label-blind) here.
    a, y, method = _models(3, 1, feature_weights=None)[kind]
    b = _models(5, 2, feature_weights=None)[kind][0]
    _fit(a, X, y)
    _fit(b, X, y)
    before = pickle.dumps((a, b))
    merged = merge_forests([a, b])
    expected = (3 * _read(a, method, X_TEST) + 5 * _read(b, method, X_TEST)) / 8
    np.testing.assert_allclose(_read(merged, method, X_TEST), expected, rtol=1e-12, atol=1e-15)
    assert pickle.dumps((a, b)) == before  # the parts are left unchanged


def test_class_unknown_to_a_part_is_a_zero_column():
    # Part b never sees class 2: its trees must read exactly as if told about the class.
    lo, hi = feature_range(X)
    params = {"feature_scaling": (lo, hi)}
    keep = Y_CLASS[60:] != 2
    a = MondrianForestClassifier(4, random_state=1, **params).fit(X[:60], Y_CLASS[:60])
    b = MondrianForestClassifier(4, random_state=2, **params).fit(X[60:][keep], Y_CLASS[60:][keep])
    told = MondrianForestClassifier(4, random_state=2, **params)
    told.partial_fit(X[60:][keep], Y_CLASS[60:][keep], classes=[0, 1, 2])
    assert b.classes_.tolist() == [0, 1]
    merged = merge_forests([a, b])
    assert merged.classes_.tolist() == [0, 1, 2]
    expected = (a.predict_proba(X_TEST) + told.predict_proba(X_TEST)) / 2
    np.testing.assert_allclose(merged.predict_proba(X_TEST), expected, rtol=1e-12)
    # A shard merge: both stores, every tree keeps its own points.
    assert merged.n_samples_seen_ == 60 + int(keep.sum())
    merged.partial_fit(X[:5], Y_CLASS[:5])  # keeps learning
    assert merged.n_samples_seen_ == 65 + int(keep.sum())


def test_data_parallel_needs_a_fixed_feature_map():
    a = MondrianForestClassifier(3, random_state=1).fit(X[:60], Y_CLASS[:60])
    b = MondrianForestClassifier(3, random_state=2).fit(X[60:], Y_CLASS[60:])
    with pytest.raises(ValueError, match="different feature maps: feature map offset differs"):
        merge_forests([a, b])
    lo, hi = feature_range(X)
    a = MondrianForestClassifier(3, random_state=1, feature_scaling=(lo, hi)).fit(X[:60],
                                                                                 Y_CLASS[:60])
    b = MondrianForestClassifier(3, random_state=2, feature_scaling=(lo, hi)).fit(X[60:],
                                                                                 Y_CLASS[60:])
    merged = merge_forests([a, b])
    np.testing.assert_allclose(merged.predict_proba(X_TEST),
                               (a.predict_proba(X_TEST) + b.predict_proba(X_TEST)) / 2)
    np.testing.assert_array_equal(merged._store.X[60:], b._store.X)


def test_data_parallel_regressors_and_densities():
    lo, hi = feature_range(X)
    reg = [MondrianForestRegressor(3, random_state=s, feature_scaling=(lo, hi),
                                   feature_weights=None, **REG_FIXED)
           for s in (1, 2)]
    reg[0].fit(X[:60], Y_REG[:60])
    reg[1].fit(X[60:], Y_REG[60:])
    with pytest.raises(ValueError, match="different target maps"):
        merge_forests(reg)
    dens = [MondrianForestDensity(3, lifetime=3.0, concentration=0.5, random_state=s)
            for s in (1, 2)]
    dens[0].fit(X[:60])
    dens[1].fit(X[60:])
    with pytest.raises(ValueError, match="same first batch domain"):
        merge_forests(dens)


@pytest.mark.parametrize(("change", "message"), [
    ({"lifetime": 2.0}, "different parameters: lifetime"),
    ({"discount_factor": 3.0}, "different parameters: discount_factor"),
    ({"feature_scaling": None}, "different parameters: feature_scaling"),
])
def test_mismatched_parameters_are_named(change, message):
    a = MondrianForestClassifier(3, random_state=1).fit(X, Y_CLASS)
    b = MondrianForestClassifier(3, random_state=2, **change).fit(X, Y_CLASS)
    with pytest.raises(ValueError, match=message):
        merge_forests([a, b])


def test_other_mismatches_raise():
    a = MondrianForestClassifier(3, random_state=1).fit(X, Y_CLASS)
    with pytest.raises(TypeError, match="same model type"):
        merge_forests([a, MondrianForestRegressor(3, random_state=2).fit(X, Y_REG)])
    with pytest.raises(ValueError, match="share tree seeds"):
        merge_forests([a, MondrianForestClassifier(3, random_state=1).fit(X, Y_CLASS)])
    with pytest.raises(ValueError, match="different n_features_in_"):
        merge_forests([a, MondrianForestClassifier(3, random_state=2).fit(X[:, :2], Y_CLASS)])
    with pytest.raises(ValueError, match="at least one"):
        merge_forests([])
    with pytest.raises(TypeError, match="not LinearRegression"):
        from sklearn.linear_model import LinearRegression

        merge_forests([LinearRegression().fit(X, Y_REG)])


def test_auto_hyperparameters_cannot_be_split():
    with pytest.raises(ValueError, match="lifetime='auto'"):
        forest_parts(MondrianForestClassifier(4, lifetime="auto"), 2)
    with pytest.raises(ValueError, match="concentration='auto'"):
        forest_parts(MondrianForestDensity(4, lifetime=2.0), 2)


def test_fixed_feature_range_validation_and_meaning():
    lo, hi = feature_range(X)
    fixed = MondrianForestClassifier(3, random_state=1, feature_scaling=(lo, hi)).fit(X, Y_CLASS)
    np.testing.assert_array_equal(fixed.feature_offset_, lo)
    np.testing.assert_array_equal(fixed.feature_scale_, hi - lo)
    # The same map as min-max on the whole batch (frozen from the start).
    minmax = MondrianForestClassifier(3, random_state=1).fit(X, Y_CLASS)
    np.testing.assert_array_equal(fixed.predict_proba(X_TEST), minmax.predict_proba(X_TEST))
    fixed.partial_fit(10 * X[:3], Y_CLASS[:3])  # outside the range: fine, the map never moves
    np.testing.assert_array_equal(fixed.feature_offset_, lo)
    for bad, message in [((lo, hi[:2]), "shape"), ((hi, lo), "upper < lower"),
                         ((lo, np.full(3, np.inf)), "finite"), ((lo,), "pair")]:
        with pytest.raises(ValueError, match=message):
            MondrianForestClassifier(3, feature_scaling=bad).fit(X, Y_CLASS)


def test_forest_merged_from_shards_refuses_to_forget_and_changes_nothing():
    lo, hi = feature_range(X)
    parts = [MondrianForestClassifier(3, random_state=s, feature_scaling=(lo, hi),
                                      feature_weights=None) for s in (1, 2)]
    parts[0].fit(X[:60], Y_CLASS[:60])
    parts[1].fit(X[60:], Y_CLASS[60:])
    merged = merge_forests(parts)
    before = pickle.dumps(merged)
    with pytest.raises(ValueError, match="merged from parts fitted on different rows"):
        merged.forget(X[:2], Y_CLASS[:2])
    merged.set_params(window=50)
    with pytest.raises(ValueError, match="forget and window need every tree"):
        merged.partial_fit(X[:3], Y_CLASS[:3])
    merged.set_params(window=None)
    assert pickle.dumps(merged) == before
    # Parts fitted on the same rows share the store: the merged forest forgets exactly.
    same = [MondrianForestClassifier(3, random_state=s, feature_weights=None).fit(X, Y_CLASS)
            for s in (1, 2)]
    merged = merge_forests(same).forget(X[:2], Y_CLASS[:2])
    assert merged.n_samples_seen_ == len(X) - 2
