"""Sample weights with the other features of the forests: the feature
map (fixed range, feature weights), the target rescaling, compact pickles, merging and the
tabled HNSP prediction."""

import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from mondrian import MondrianForestClassifier, MondrianForestRegressor, merge_forests
from mondrian.merging import forest_parts

from _data import count_weights

pytestmark = pytest.mark.exact

_FIXED = dict(noise_variance=0.01, sigmoid_rate=1.0)


def _data(n=45, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(size=(n, 3))
    return X, np.sin(4 * X[:, 0]) + X[:, 1], count_weights(rng, n)


@pytest.mark.parametrize("extra", [
    {},
    {"feature_scaling": (np.zeros(3), np.ones(3))},
    {"feature_weights": np.array([1.0, 2.0, 0.5])},
    {"feature_scaling": (np.zeros(3), np.ones(3)), "feature_weights": np.array([1.0, 2.0, 0.5])},
])
def test_weights_equal_repeated_rows_through_a_target_rescale(extra):
    """Integer weights = repeated rows with a fixed range and/or feature weights, also after
    a later batch 1e6 times larger rescales the stored sums (the weight column stays)."""
    X, y, w = _data()
    # Label-blind unless given: weighted and repeated rows search weights equal only in law.
    params = dict(n_estimators=3, random_state=0, **_FIXED, **{"feature_weights": None, **extra})
    a = MondrianForestRegressor(**params).fit(X, y, sample_weight=w)
    b = MondrianForestRegressor(**params).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    m = int(w[:20].sum())
    a.partial_fit(X[:20], 1e6 * y[:20], sample_weight=w[:20])
    b.partial_fit(np.repeat(X, w, axis=0)[:m], 1e6 * np.repeat(y, w)[:m])
    for ta, tb in zip(a._trees, b._trees, strict=True):
        assert_array_equal(ta.bounds_array, tb.bounds_array)
        assert_allclose(ta.value_array, tb.value_array, rtol=1e-9, atol=1e-12)
    assert_allclose(a.predict(X), b.predict(X), rtol=1e-9)


@pytest.mark.parametrize("extra", [
    {"feature_weights": "auto"},
    {"feature_scaling": (np.zeros(4), np.ones(4)), "feature_weights": [1, 2, 3, 0.5],
     "min_samples_split": 4},
    {"class_weight": {0: 2.0, 1: 0.5}},
])
def test_compact_pickle_of_weighted_models_keeps_learning_bit_for_bit(extra):
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(200, 4))
    y = (X[:, 0] > 0.5).astype(int) + (X[:, 1] > 0.7)
    w = rng.rand(200) * 3
    a = MondrianForestClassifier(n_estimators=3, random_state=0, lifetime=3.0, **extra)
    a.fit(X[:150], y[:150], sample_weight=w[:150])
    b = pickle.loads(pickle.dumps(a))
    for model in (a, b):
        model.partial_fit(X[150:170], y[150:170], sample_weight=w[150:170])
        for i in range(170, 200):
            model.partial_fit(X[i:i + 1], y[i:i + 1])
    assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    for ta, tb in zip(a._trees, b._trees, strict=True):
        assert_array_equal(ta.value_array, tb.value_array)
        assert_array_equal(ta.bounds_array, tb.bounds_array)
    regs = []
    for _ in range(2):
        params = {k: v for k, v in extra.items() if k != "class_weight"}
        r = MondrianForestRegressor(n_estimators=3, random_state=0, lifetime=3.0, **params)
        regs.append(r.fit(X[:150], 1e3 * X[:150, 0], sample_weight=w[:150]))
    regs[1] = pickle.loads(pickle.dumps(regs[1]))
    for r in regs:  # a rescale (1e9), then the one-row path with its re-choices
        r.partial_fit(X[150:170], 1e9 * X[150:170, 0], sample_weight=w[150:170])
        for i in range(170, 200):
            r.learn_one(X[i], X[i, 0])
    assert_array_equal(regs[0].predict(X), regs[1].predict(X))
    assert regs[0]._hyper_choice == regs[1]._hyper_choice


def test_fractional_weights_tabled_proba_equals_per_row():
    rng = np.random.RandomState(1)
    X = rng.uniform(size=(300, 3))
    y = (X[:, 0] * 3).astype(int)
    clf = MondrianForestClassifier(n_estimators=3, random_state=0, min_samples_split=5)
    clf.fit(X, y, sample_weight=rng.rand(300) * 2 + 0.01)
    X_test = rng.uniform(-0.1, 1.1, size=(100, 3))
    per_row = np.vstack([clf.predict_proba(X_test[i:i + 1]) for i in range(100)])
    assert_array_equal(clf.predict_proba(X_test), per_row)


@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_weighted_forest_parts_merge_to_the_full_forest(kind):
    rng = np.random.RandomState(1)
    X = rng.uniform(size=(120, 3))
    w = rng.rand(120) * 3
    if kind == "classifier":
        est, y = MondrianForestClassifier(n_estimators=4, random_state=0, min_samples_split=4,
                                          lifetime=3.0), (X[:, 0] * 3).astype(int)
        out = MondrianForestClassifier.predict_proba
    else:
        est, y = MondrianForestRegressor(n_estimators=4, random_state=0, min_samples_split=4,
                                         lifetime=3.0, prior_variance=1.0, **_FIXED), X[:, 0]
        out = MondrianForestRegressor.predict
    merged = merge_forests([p.fit(X, y, sample_weight=w) for p in forest_parts(est, 2)])
    full = est.fit(X, y, sample_weight=w)
    assert_array_equal(out(merged, X), out(full, X))
    for model in (merged, full):
        model.partial_fit(X[:10], y[:10], sample_weight=w[:10])
    assert_array_equal(out(merged, X), out(full, X))


def test_auto_feature_weights_see_the_sample_weights():
    """Integer weights read as counts: the weight search on weighted rows should choose what
    it chooses on the repeated rows."""
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(200, 4))
    y = (X[:, 0] > 0.5).astype(int)
    w = np.where(X[:, 1] > 0.5, 5, 1)
    params = dict(n_estimators=3, random_state=0, feature_weights="auto", lifetime=2.0)
    a = MondrianForestClassifier(**params).fit(X, y, sample_weight=w)
    b = MondrianForestClassifier(**params).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    assert_array_equal(a.feature_weights_, b.feature_weights_)
    assert_array_equal(a.feature_weights_info_["relevance"], b.feature_weights_info_["relevance"])
    # A regression search picks a non-uniform power: the same one, and nearly the same weights
    # (scikit-learn's extra trees spend their random stream differently on a node of identical
    # copies than on one weighted row, so the relevances differ slightly).
    y_reg = 3 * X[:, 0] + X[:, 0] * X[:, 1] + 0.1 * rng.normal(size=200)
    a = MondrianForestRegressor(**params).fit(X, y_reg, sample_weight=w)
    b = MondrianForestRegressor(**params).fit(np.repeat(X, w, axis=0), np.repeat(y_reg, w))
    # (20-tree probes whatever n_estimators: power 0.5; 3-tree probes chose 1)
    assert a.feature_weights_info_["power"] == b.feature_weights_info_["power"] == 0.5
    np.testing.assert_allclose(a.feature_weights_, b.feature_weights_, rtol=0.15)
    unweighted = MondrianForestRegressor(**params).fit(X, y_reg)
    assert not np.allclose(unweighted.feature_weights_, a.feature_weights_, rtol=0.01)


def test_weighted_weight_search_splits_and_scores_like_repeated_rows():
    """The pieces of the weighted search equal their repeated-row versions exactly: the
    hold-out split (as counts of copies), the paired acceptance rule and a method that runs
    on copies (mutual information sees the repeated rows, in another order)."""
    from mondrian.estimator.holdout import holdout_split
    from mondrian.estimator.relevance import _weighted_split, beats, relevance

    rng = np.random.RandomState(1)
    X = rng.uniform(size=(60, 3))
    y = (X[:, 0] > 0.5).astype(int)
    w = rng.randint(1, 4, size=60)
    copies = np.repeat(np.arange(60), w)
    fit, val, _, _ = holdout_split(copies, y[copies], 0.2, np.random.RandomState(3),
                                   stratify=True, min_fit=2)
    X_fit, X_val, y_fit, _, w_fit, w_val = _weighted_split(X, y, w, 0.2,
                                                           np.random.RandomState(3), True)
    assert_array_equal(np.sort(np.repeat(X_fit, w_fit.astype(int), axis=0), axis=0),
                       np.sort(X[fit], axis=0))
    assert_array_equal(np.sort(np.repeat(X_val, w_val.astype(int), axis=0), axis=0),
                       np.sort(X[val], axis=0))
    s1, s2 = rng.normal(size=60), rng.normal(size=60) + 0.2
    for margin in (0.0, 0.5, 1.0, 2.0):
        assert beats(s2, s1, margin, w) == beats(np.repeat(s2, w), np.repeat(s1, w), margin)
    r_w = relevance("mutual_info", X_fit, y_fit, True, 0, sample_weight=w_fit)
    r_rep = relevance("mutual_info", np.repeat(X_fit, w_fit.astype(int), axis=0),
                      np.repeat(y_fit, w_fit.astype(int)), True, 0)
    np.testing.assert_allclose(r_w, r_rep, atol=0.05)


def test_learn_one_classes_with_a_zero_class_weight_skips_the_row():
    """learn_one skips a row whose class weight is 0; learn_one(classes=) on a fitted model
    used to raise ("every sample has zero weight") instead of skipping the row and widening
    the classes. A label outside `classes` is still refused, leaving the model unchanged."""
    class_weight = {0: 2.0, 1: 0.0, 2: 0.5, 7: 0.0}
    clf = MondrianForestClassifier(n_estimators=2, random_state=0, class_weight=class_weight)
    clf.learn_one([0.9, 0.1], 0)
    for x in np.random.RandomState(0).uniform(size=(10, 2)):
        clf.learn_one(x, int(x[0] * 3))
    n_stored = clf._store.n_samples
    before = pickle.dumps(clf)
    with pytest.raises(ValueError, match="not in `classes`"):
        clf.learn_one([0.3, 0.4], 7, classes=[0, 1, 2, 3])
    assert pickle.dumps(clf) == before
    clf.learn_one([0.3, 0.4], 1, classes=[0, 1, 2, 3])
    assert_array_equal(clf.classes_, [0, 1, 2, 3])
    assert clf._store.n_samples == n_stored
    assert clf._classes_fixed
    # the first sample still cannot be left out
    with pytest.raises(ValueError, match="zero weight"):
        MondrianForestClassifier(class_weight=class_weight).learn_one([0.1, 0.2], 1,
                                                                       classes=[0, 1, 2])


@pytest.mark.parametrize("fixed", ["prior_variance", "noise_variance"])
def test_held_out_choice_with_a_fixed_variance_is_equivariant_to_units(fixed):
    """The held-out probe fits the standardised stored targets: a fixed prior or noise
    variance (units of y squared) must be converted, or the choice depends on the units of y
    (it did: the probe read prior_variance=0.5 * 1024**2 as a variance of standardised
    targets)."""
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(200, 3))
    y = np.sin(6 * X[:, 0]) + 0.1 * rng.randn(200)
    value = {"prior_variance": 0.5, "noise_variance": 0.01}[fixed]
    out = []
    for c in (1.0, 1024.0, 2.0 ** 20):  # powers of two: standardisation is exact
        reg = MondrianForestRegressor(n_estimators=3, random_state=0, **{fixed: value * c * c})
        reg.fit(X, c * y)
        out.append((reg._hyper_choice, reg.predict(X[:20]) / c))
    for choice, pred in out[1:]:
        assert choice == out[0][0]
        assert_array_equal(pred, out[0][1])
