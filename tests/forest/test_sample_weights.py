"""sample_weight as counts, class_weight, and the errors of weighted fits."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.utils.class_weight import compute_sample_weight

from mondrian import (
    MondrianForestClassifier,
    MondrianForestDensity,
    MondrianForestRegressor,
    MondrianTreeClassifier,
)

from _data import count_weights

pytestmark = pytest.mark.exact

_SHAPE_FIELDS = ("parent", "left_child", "right_child", "feature", "threshold", "split_time",
                 "paused")


def _data(n=60, d=3, seed=0, n_classes=3):
    rng = np.random.RandomState(seed)
    X = rng.uniform(size=(n, d))
    y = (X[:, 0] * n_classes).astype(int) % n_classes
    noisy = rng.rand(n) < 0.3
    y[noisy] = rng.randint(0, n_classes, noisy.sum())
    return X, y, count_weights(rng, n)


def _assert_same_trees(a, b):
    for ta, tb in zip(a._trees, b._trees, strict=True):
        na, nb = ta.nodes_array, tb.nodes_array
        for name in _SHAPE_FIELDS:
            assert_array_equal(na[name], nb[name], err_msg=name)
        assert_array_equal(ta.bounds_array, tb.bounds_array)


@pytest.mark.parametrize("min_samples_split", [2, 5])
def test_integer_weights_equal_repeated_rows_classifier(min_samples_split):
    """Same seed: the weighted forest is the forest of the repeated rows, bit for bit (tree
    shapes, boxes, class counts). With min_samples_split=5 the pause rule must count weights:
    a leaf of 2 stored rows of weights 3 and 2 holds 5 points."""
    X, y, w = _data()
    params = dict(n_estimators=5, min_samples_split=min_samples_split, random_state=0)
    weighted = MondrianForestClassifier(**params).fit(X, y, sample_weight=w)
    repeated = MondrianForestClassifier(**params).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    _assert_same_trees(weighted, repeated)
    for ta, tb in zip(weighted._trees, repeated._trees, strict=True):
        assert_array_equal(ta.value_array, tb.value_array)
    X_test = np.random.RandomState(1).uniform(-0.2, 1.2, size=(50, 3))
    assert_array_equal(weighted.predict_proba(X_test), repeated.predict_proba(X_test))
    assert weighted.n_samples_seen_ == np.count_nonzero(w)


def test_weighted_count_feeds_the_pause_rule():
    """Counting stored rows instead of weights (MondrianTree.count_columns = 0) pauses leaves
    that the repeated data splits: the test above relies on the weighted count."""
    X, y, w = _data()
    params = dict(n_estimators=5, min_samples_split=5, random_state=0)
    rows_rule = MondrianForestClassifier(**params)
    rows_rule._count_columns = 0
    rows_rule.fit(X, y, sample_weight=w)
    repeated = MondrianForestClassifier(**params).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    assert ([t.node_count for t in rows_rule._trees]
            != [t.node_count for t in repeated._trees])


@pytest.mark.parametrize("min_samples_split", [2, 5])
def test_integer_weights_equal_repeated_rows_regressor(min_samples_split):
    X, _, w = _data(n=45)
    y = np.sin(4 * X[:, 0]) + X[:, 1]
    # Fixed hyperparameters: their held-out choice splits rows, not counts.
    # Label-blind: the weight search on counts equals the one on repeated rows only in law.
    params = dict(n_estimators=4, min_samples_split=min_samples_split, random_state=0,
                  noise_variance=0.01, sigmoid_rate=1.0, feature_weights=None)
    weighted = MondrianForestRegressor(**params).fit(X, y, sample_weight=w)
    repeated = MondrianForestRegressor(**params).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    _assert_same_trees(weighted, repeated)
    for ta, tb in zip(weighted._trees, repeated._trees, strict=True):
        assert_allclose(ta.value_array, tb.value_array, rtol=1e-12, atol=1e-12)
    X_test = np.random.RandomState(1).uniform(-0.2, 1.2, size=(30, 3))
    mean_w, std_w = weighted.predict(X_test, return_std=True)
    mean_r, std_r = repeated.predict(X_test, return_std=True)
    assert_allclose(mean_w, mean_r, rtol=1e-9)
    assert_allclose(std_w, std_r, rtol=1e-9)


def test_weighted_held_out_choice_regressor():
    """Batches of 50+ points choose hyperparameters on a held-out split: weights go with it."""
    X, _, w = _data(n=120, seed=3)
    y = np.sin(4 * X[:, 0])
    reg = MondrianForestRegressor(n_estimators=3, random_state=0).fit(X, y, sample_weight=w)
    assert reg._hyper_choice is not None
    assert np.isfinite(reg.predict(X)).all()


def test_partial_fit_weights_equal_repeated_rows():
    """Online, too. The feature map's warm-up counts stored rows (64), so the first batch
    stores 64 rows: both maps freeze on it."""
    X, y, w = _data(n=120)
    w[:64] = np.maximum(w[:64], 1)  # 64 stored rows in the first batch
    a = MondrianForestClassifier(n_estimators=4, min_samples_split=4, random_state=0)
    b = MondrianForestClassifier(n_estimators=4, min_samples_split=4, random_state=0)
    for part in (slice(0, 64), slice(64, 90), slice(90, 120)):
        a.partial_fit(X[part], y[part], classes=[0, 1, 2], sample_weight=w[part])
        b.partial_fit(np.repeat(X[part], w[part], axis=0), np.repeat(y[part], w[part]),
                      classes=[0, 1, 2])
    _assert_same_trees(a, b)
    assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_zero_weight_rows_are_left_out():
    X, y, _ = _data()
    w = np.ones(len(y))
    w[5::4] = 0
    y = y.copy()
    y[7] = 9  # a class seen only with weight 0
    w[7] = 0
    keep = w > 0
    a = MondrianForestClassifier(n_estimators=3, random_state=0).fit(X, y, sample_weight=w)
    b = MondrianForestClassifier(n_estimators=3, random_state=0).fit(X[keep], y[keep])
    assert_array_equal(a.classes_, [0, 1, 2])
    _assert_same_trees(a, b)
    assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_class_weight_dict_equals_sample_weight():
    X, y, _ = _data()
    # Label-blind: the weight search reads sample weights as counts, class weights not at all.
    a = MondrianForestClassifier(n_estimators=3, class_weight={0: 2.0, 2: 0.5},
                                 feature_weights=None, random_state=0).fit(X, y)
    w = np.select([y == 0, y == 2], [2.0, 0.5], 1.0)
    b = MondrianForestClassifier(n_estimators=3, feature_weights=None,
                                 random_state=0).fit(X, y, sample_weight=w)
    assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    # partial_fit and learn_one apply a dict too
    c = MondrianForestClassifier(n_estimators=3, class_weight={0: 2.0, 2: 0.5}, random_state=0)
    c.partial_fit(X[:20], y[:20])
    for x, label in zip(X[20:], y[20:], strict=True):
        c.learn_one(x, label)
    assert_allclose(c._trees[0].value_array[0], np.bincount(y, weights=w))


def test_class_weight_balanced():
    X, y, _ = _data()
    y[:40] = 0  # unbalanced
    a = MondrianForestClassifier(n_estimators=3, class_weight="balanced",
                                 random_state=0).fit(X, y)
    w = compute_sample_weight("balanced", y)
    b = MondrianForestClassifier(n_estimators=3, random_state=0).fit(X, y, sample_weight=w)
    assert_allclose(a.predict_proba(X), b.predict_proba(X), rtol=1e-12)
    root = a._trees[0].value_array[0]
    assert_allclose(root, np.full(3, len(y) / 3))  # every class weighs n / K
    with pytest.raises(ValueError, match="balanced"):
        MondrianForestClassifier(class_weight="balanced").partial_fit(X, y)
    with pytest.raises(ValueError, match="class_weight"):
        MondrianForestClassifier(n_estimators=2, class_weight={0: -1.0}).fit(X, y)


def test_fractional_weights_keep_probabilities_valid():
    """Light rows (weight 0.01) beside unit ones, finite lifetime (leaves keep a discount):
    HNSP tables are min(count, 1), so count - d * tables >= 0 and every probability is
    non-negative (with tables 1{count > 0} a light leaf goes negative)."""
    X, y, _ = _data(n=200, seed=5)
    w = np.where(np.arange(len(y)) % 2 == 0, 1.0, 0.01)
    X_test = np.random.RandomState(2).uniform(-0.5, 1.5, size=(300, 3))
    for lifetime in (1.0, 3.0, np.inf):
        clf = MondrianForestClassifier(n_estimators=10, lifetime=lifetime, min_samples_split=1,
                                       random_state=0).fit(X, y, sample_weight=w)
        for data in (X, X_test):
            proba = clf.predict_proba(data)
            assert proba.min() >= 0.0
            assert_allclose(proba.sum(axis=1), 1.0)
    # Weights summing below min_samples_split: the tree pauses at the root.
    tiny = MondrianForestClassifier(n_estimators=2, random_state=0).fit(
        X[:50], y[:50], sample_weight=np.full(50, 0.01))
    assert all(t.node_count == 1 for t in tiny._trees)


@pytest.mark.parametrize("bad, match", [
    (-1.0, "(?i)negative"), (np.nan, "NaN|finite|infinity"), (0.0, "zero"),
])
@pytest.mark.parametrize("Model", [MondrianForestClassifier, MondrianForestRegressor])
def test_bad_weights_are_rejected_and_leave_the_model_unchanged(Model, bad, match):
    X, y, _ = _data()
    model = Model(n_estimators=2, random_state=0).fit(X[:30], y[:30])
    before = [t.nodes_array.copy() for t in model._trees]
    w = np.ones(30) if bad != 0.0 else np.zeros(30)
    w[3] = bad
    with pytest.raises(ValueError, match=match):
        model.partial_fit(X[30:], y[30:], sample_weight=w)
    with pytest.raises(ValueError, match=match):
        Model(n_estimators=2).fit(X[30:], y[30:], sample_weight=w)
    for t, nodes in zip(model._trees, before, strict=True):
        assert_array_equal(t.nodes_array, nodes)
    with pytest.raises(ValueError):
        model.partial_fit(X[30:], y[30:], sample_weight=np.ones(3))


def test_tree_classifier_takes_weights():
    X, y, w = _data()
    a = MondrianTreeClassifier(random_state=0).fit(X, y, sample_weight=w)
    b = MondrianTreeClassifier(random_state=0).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_density_integer_weights_repeat_rows():
    X, _, w = _data(n=40, d=2)
    a = MondrianForestDensity(n_estimators=3, lifetime=3.0, random_state=0)
    b = MondrianForestDensity(n_estimators=3, lifetime=3.0, random_state=0)
    a.fit(X, sample_weight=w)
    b.fit(np.repeat(X, w, axis=0))
    assert_array_equal(a.score_samples(X), b.score_samples(X))
    with pytest.raises(ValueError, match="integer"):
        MondrianForestDensity(n_estimators=2, lifetime=3.0).fit(X, sample_weight=w * 0.5 + 0.1)


@pytest.mark.parametrize("Model", [MondrianForestClassifier, MondrianForestRegressor])
def test_auto_lifetime_leaves_zero_weight_rows_out(Model):
    """lifetime="auto" holds out part of the rows of positive weight only."""
    X, y, _ = _data(n=150, seed=4)
    if Model is MondrianForestRegressor:
        y = X[:, 0] + np.sin(5 * X[:, 1])
    w = (np.arange(150) % 3 != 1).astype(float)
    keep = w > 0
    a = Model(n_estimators=3, lifetime="auto", random_state=0).fit(X, y, sample_weight=w)
    b = Model(n_estimators=3, lifetime="auto", random_state=0).fit(X[keep], y[keep])
    assert a.lifetime_ == b.lifetime_
    assert_allclose(a.predict(X), b.predict(X), rtol=1e-12)
