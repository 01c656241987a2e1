"""Unit tests of the tree core through MondrianTreeClassifier / MondrianForestClassifier."""

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import mondrian
from mondrian import MondrianForestClassifier, MondrianTreeClassifier

from _checks import (
    TREE_ARRAYS,
    assert_same_forest,
    assert_same_tree,
    check_proba,
    check_tree_invariants,
)


def _blobs(seed, n=60, d=3, k=3):
    """Noisy class blobs: enough structure for non-trivial trees, cheap to fit."""
    rng = np.random.default_rng(seed)
    centers = rng.uniform(-3, 3, size=(k, d))
    y = rng.integers(0, k, size=n)
    X = centers[y] + rng.normal(scale=1.0, size=(n, d))
    return X, y


# --------------------------------------------------------------------------------------------
# shape of the tree for the extreme lifetimes
# --------------------------------------------------------------------------------------------


def test_zero_lifetime_gives_a_single_leaf(global_random_seed):
    """lifetime=0: no cut is born before the lifetime, so the root is the only node (§1.3);
    it holds every point and is stamped with split_time == 0."""
    X, y = _blobs(global_random_seed)
    tree = MondrianTreeClassifier(lifetime=0.0, random_state=global_random_seed).fit(X, y)
    t = tree.tree_
    assert t.node_count == 1
    assert t.max_depth == 0
    assert_array_equal(t.children_left, [-1])
    assert_array_equal(t.split_time, [0.0])
    assert_array_equal(t.n_node_samples, [len(X)])
    # boxes are reported through the min-max map, exact up to rounding (see _checks)
    assert_allclose(t.lower_bounds[0], X.min(axis=0), rtol=1e-14)
    assert_allclose(t.upper_bounds[0], X.max(axis=0), rtol=1e-14)
    assert_array_equal(tree.apply(X), np.zeros(len(X)))
    check_tree_invariants(tree, X, y)


@pytest.mark.filterwarnings("ignore:The number of unique classes:UserWarning")
def test_infinite_lifetime_isolates_distinct_points(global_random_seed):
    """lifetime=inf with distinct points and all labels distinct: no node with >= 2 points is
    ever pure or degenerate, so splitting goes on until every point sits alone in a leaf."""
    rng = np.random.default_rng(global_random_seed)
    X = rng.normal(size=(25, 2))
    y = np.arange(25)
    tree = MondrianTreeClassifier(random_state=global_random_seed).fit(X, y)
    t = tree.tree_
    leaf = t.children_left == -1
    assert leaf.sum() == len(X)
    assert t.node_count == 2 * len(X) - 1
    assert np.all(t.n_node_samples[leaf] == 1)
    assert len(np.unique(tree.apply(X))) == len(X)
    assert np.all(np.isinf(t.split_time[leaf]))
    check_tree_invariants(tree, X, y)


def test_duplicate_points_with_different_labels_share_a_leaf(global_random_seed):
    """Identical inputs can never be separated (§1.4: zero linear dimension), even with
    different labels and an infinite lifetime; their leaf keeps both labels."""
    rng = np.random.default_rng(global_random_seed)
    X = rng.normal(size=(10, 2))
    X = np.vstack([X, X[:3], X[:3]])
    y = np.concatenate([np.arange(10) % 2, [1, 0, 1], [2, 2, 2]])
    tree = MondrianTreeClassifier(random_state=global_random_seed).fit(X, y)
    leaves = tree.apply(X)
    for i in range(3):
        assert leaves[i] == leaves[10 + i] == leaves[13 + i]
        node = leaves[i]
        assert tree.tree_.n_node_samples[node] == 3
        assert np.count_nonzero(tree.tree_.value[node]) >= 2
    check_tree_invariants(tree, X, y)


def test_identical_rows_give_a_single_leaf():
    """A data set of copies of one point cannot be split at all."""
    X = np.ones((5, 3))
    y = np.array([0, 1, 0, 1, 2])
    tree = MondrianTreeClassifier(random_state=0).fit(X, y)
    assert tree.tree_.node_count == 1
    check_tree_invariants(tree, X, y)
    check_proba(tree.predict_proba(X + 1.0), 5, 3)


def test_min_samples_split_larger_than_data_gives_a_single_leaf():
    """A node with fewer than min_samples_split points pauses (§3.1), so the root stays a
    leaf; it splits as soon as a partial_fit brings it to min_samples_split points."""
    X, y = _blobs(0, n=9)
    tree = MondrianTreeClassifier(min_samples_split=10, random_state=0).fit(X, y)
    assert tree.tree_.node_count == 1
    assert tree.tree_.paused[0]
    tree.partial_fit(X[:1] + 0.5, y[:1])
    assert tree.tree_.node_count > 1
    check_tree_invariants(tree, np.vstack([X, X[:1] + 0.5]), np.append(y, y[:1]))


def test_pure_data_pauses_at_the_root():
    """A single label: the root is pure, pauses, and predicts that label with probability 1."""
    X = np.random.default_rng(0).normal(size=(12, 2))
    y = np.full(12, 7)
    tree = MondrianTreeClassifier(random_state=0).fit(X, y)
    assert tree.tree_.node_count == 1 and tree.tree_.paused[0]
    assert_array_equal(tree.classes_, [7])
    assert_array_equal(tree.predict_proba(X), np.ones((12, 1)))


# --------------------------------------------------------------------------------------------
# public arrays
# --------------------------------------------------------------------------------------------


def test_tree_arrays_are_read_only_copies(global_random_seed):
    """tree_ arrays cannot be written to, and do not alias the live buffers: arrays taken
    before a partial_fit keep their values afterwards (a later resize cannot free them)."""
    X, y = _blobs(global_random_seed)
    tree = MondrianTreeClassifier(random_state=global_random_seed).fit(X[:30], y[:30])
    before = {name: getattr(tree.tree_, name) for name in TREE_ARRAYS}
    frozen = {name: np.array(arr) for name, arr in before.items()}
    for name, arr in before.items():
        assert isinstance(arr, np.ndarray), name
        assert not arr.flags.writeable, name
        with pytest.raises(ValueError):
            arr.flat[0] = arr.flat[0]
    tree.partial_fit(X[30:], y[30:])
    assert tree.tree_.n_node_samples[0] == len(X)
    for name, arr in before.items():
        assert_array_equal(arr, frozen[name], err_msg=name)


def test_threshold_and_bounds_are_in_original_units(global_random_seed):
    """With min-max scaling, thresholds and boxes are reported in the original units: they
    equal offset + scale * (the same quantities of a tree fitted, with the same seed and no
    scaling, on the pre-scaled data). Split times are in scaled units, so they agree directly.
    The two fits differ only by the rounding of the map, hence rtol 1e-9.
    """
    X, y = _blobs(global_random_seed)
    X = X * np.array([1e-2, 1.0, 1e3]) + np.array([5.0, -3.0, 1e4])
    kwargs = dict(lifetime=3.0, random_state=global_random_seed)
    scaled_tree = MondrianTreeClassifier(**kwargs).fit(X, y)
    offset, scale = scaled_tree.feature_offset_, scaled_tree.feature_scale_
    assert_array_equal(scale, np.ptp(X, axis=0))
    assert np.all((X.min(axis=0) <= offset) & (offset <= X.max(axis=0)))
    raw_tree = MondrianTreeClassifier(feature_scaling=None, **kwargs).fit((X - offset) / scale, y)
    a, b = scaled_tree.tree_, raw_tree.tree_
    assert a.node_count == b.node_count
    assert_array_equal(a.children_left, b.children_left)
    assert_array_equal(a.feature, b.feature)
    assert_allclose(a.split_time, b.split_time, rtol=1e-9)
    internal = a.children_left != -1
    f = a.feature[internal]
    assert_allclose(a.threshold[internal], offset[f] + scale[f] * b.threshold[internal], rtol=1e-9)
    assert_allclose(a.lower_bounds, offset + scale * b.lower_bounds, rtol=1e-9)
    assert_allclose(a.upper_bounds, offset + scale * b.upper_bounds, rtol=1e-9)
    # original-unit thresholds route the training points the way the tree does
    check_tree_invariants(scaled_tree, X, y)


def test_scaling_invariance(global_random_seed):
    """Multiplying each feature by a factor in [1e-3, 1e3] leaves the fitted model unchanged up
    to rounding (the min-max map absorbs the factor), so predictions agree to 1e-9."""
    X, y = _blobs(global_random_seed)
    rng = np.random.default_rng(global_random_seed)
    factor = 10.0 ** rng.uniform(-3, 3, size=X.shape[1])
    queries = X.min(0) + rng.uniform(-0.5, 1.5, size=(50, X.shape[1])) * np.ptp(X, 0)
    for lifetime in (1.0, np.inf):
        kwargs = dict(n_estimators=5, lifetime=lifetime, random_state=global_random_seed)
        a = MondrianForestClassifier(**kwargs).fit(X, y)
        b = MondrianForestClassifier(**kwargs).fit(X * factor, y)
        assert_allclose(a.predict_proba(queries), b.predict_proba(queries * factor), atol=1e-9)
        assert_array_equal(a.apply(queries), b.apply(queries * factor))
        for tree_a, tree_b in zip(a.estimators_, b.estimators_, strict=True):
            assert_allclose(tree_a.tree_.split_time, tree_b.tree_.split_time, rtol=1e-9)


# --------------------------------------------------------------------------------------------
# determinism, parallelism, pickling
# --------------------------------------------------------------------------------------------


def test_n_jobs_gives_bit_identical_models(global_random_seed):
    """The same seed gives bit-identical forests for n_jobs=1 and n_jobs=2 (one random
    stream per tree, independent of the scheduling), after fit and after partial_fit.

    Predictions average the same per-tree values; threads may add them in another order, so
    they agree to a few ulps (1e-14), not bitwise.
    """
    X, y = _blobs(global_random_seed)
    queries = X + 0.3
    kwargs = dict(n_estimators=6, lifetime=2.0, random_state=global_random_seed)
    serial = MondrianForestClassifier(n_jobs=1, **kwargs).fit(X[:40], y[:40])
    parallel = MondrianForestClassifier(n_jobs=2, **kwargs).fit(X[:40], y[:40])
    assert_same_forest(serial, parallel)
    assert_allclose(serial.predict_proba(queries), parallel.predict_proba(queries), atol=1e-14)
    serial.partial_fit(X[40:], y[40:])
    parallel.partial_fit(X[40:], y[40:])
    assert_same_forest(serial, parallel)
    assert_allclose(serial.predict_proba(queries), parallel.predict_proba(queries), atol=1e-14)
    assert_array_equal(serial.apply(queries), parallel.apply(queries))


def test_different_seeds_give_different_trees():
    """Different random_state values give different trees (the seed is actually used), and
    the trees of one forest differ from each other."""
    X, y = _blobs(0)
    a = MondrianTreeClassifier(random_state=0).fit(X, y)
    b = MondrianTreeClassifier(random_state=1).fit(X, y)
    assert a.tree_.split_time[0] != b.tree_.split_time[0]
    forest = MondrianForestClassifier(n_estimators=4, random_state=0).fit(X, y)
    roots = {est.tree_.split_time[0] for est in forest.estimators_}
    assert len(roots) == 4


@pytest.mark.parametrize("model", ["tree", "forest"])
def test_pickle_then_partial_fit_continues_exactly(global_random_seed, model):
    """Pickling saves the random streams: a model pickled mid-stream and trained further is
    bit-identical to the uninterrupted model (arrays and predict_proba)."""
    X, y = _blobs(global_random_seed, n=90)
    if model == "tree":
        make = lambda: MondrianTreeClassifier(lifetime=4.0, random_state=global_random_seed)  # noqa: E731
    else:
        make = lambda: MondrianForestClassifier(  # noqa: E731
            n_estimators=4, lifetime=4.0, random_state=global_random_seed
        )
    chunks = [slice(0, 30), slice(30, 31), slice(31, 60), slice(60, 90)]
    straight = make()
    resumed = make()
    for i, chunk in enumerate(chunks):
        straight.partial_fit(X[chunk], y[chunk], classes=[0, 1, 2])
        resumed.partial_fit(X[chunk], y[chunk], classes=[0, 1, 2])
        if i < len(chunks) - 1:
            resumed = pickle.loads(pickle.dumps(resumed))
    if model == "tree":
        assert_same_tree(straight, resumed)
    else:
        assert_same_forest(straight, resumed)
    queries = np.vstack([X, X + 0.5])
    assert_array_equal(straight.predict_proba(queries), resumed.predict_proba(queries))


def test_fit_after_pickle_matches_fresh_fit(global_random_seed):
    """fit on an unpickled fitted model restarts from the seed: same model as a fresh fit."""
    X, y = _blobs(global_random_seed)
    forest = MondrianForestClassifier(n_estimators=3, random_state=global_random_seed)
    fresh = pickle.loads(pickle.dumps(forest.fit(X[:20], y[:20]))).fit(X, y)
    assert_same_forest(fresh, MondrianForestClassifier(**forest.get_params()).fit(X, y))


def test_pickle_in_another_process(tmp_path, global_random_seed):
    """A forest pickled here and loaded in a fresh interpreter predicts bit-identically (no
    state depends on process-local memory)."""
    X, y = _blobs(global_random_seed)
    forest = MondrianForestClassifier(
        n_estimators=5, lifetime=3.0, random_state=global_random_seed
    ).fit(X, y)
    queries = np.vstack([X, X * 2.0])
    (tmp_path / "model.pkl").write_bytes(pickle.dumps(forest))
    np.save(tmp_path / "queries.npy", queries)
    code = (
        "import pickle, sys, numpy as np\n"
        "d = sys.argv[1]\n"
        "model = pickle.load(open(d + '/model.pkl', 'rb'))\n"
        "q = np.load(d + '/queries.npy')\n"
        "np.save(d + '/proba.npy', model.predict_proba(q))\n"
        "np.save(d + '/leaves.npy', model.apply(q))\n"
    )
    root = str(Path(mondrian.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, env=env, timeout=120)
    assert_array_equal(np.load(tmp_path / "proba.npy"), forest.predict_proba(queries))
    assert_array_equal(np.load(tmp_path / "leaves.npy"), forest.apply(queries))


# --------------------------------------------------------------------------------------------
# classifier behaviour that the tree core must support
# --------------------------------------------------------------------------------------------


@pytest.mark.exact
@pytest.mark.parametrize("lifetime", [0.5, np.inf])
def test_single_leaf_predictive_closed_form(lifetime):
    """A pure root leaf with 2 points of class 0 out of classes {0, 1}, 1-D data on [0, 1],
    no scaling, gamma = discount_factor. By §4.3/§5.2-5.3, in closed form:

    * inside the box: s_end = 1 and d = exp(-gamma * lifetime), so p0 = (2 - d/2) / 2;
    * at distance e outside: p = 1 - exp(-e * lifetime) branches off with
      d_bar = e/(e+gamma) * expm1(-(e+gamma) L)/expm1(-e L) (e/(e+gamma) when L = inf);
      "node" counts give p0 = (2 - d_bar/2)/2 and "tables" counts p0 = 1 - d_bar/2.
    """
    X = np.array([[0.0], [1.0]])
    y = np.array([0, 0])
    gamma = 3.0
    for counts in ("node", "tables"):
        tree = MondrianTreeClassifier(
            lifetime=lifetime,
            discount_factor=gamma,
            feature_scaling=None,
            branch_off_counts=counts,
            random_state=0,
        ).partial_fit(X, y, classes=[0, 1])
        assert tree.tree_.node_count == 1
        d = 0.0 if np.isinf(lifetime) else np.exp(-gamma * lifetime)
        leaf = np.array([(2 - d / 2) / 2, d / 4])
        e = 0.8
        if np.isinf(lifetime):
            p, d_bar = 1.0, e / (e + gamma)
        else:
            p = -np.expm1(-e * lifetime)
            d_bar = e / (e + gamma) * np.expm1(-(e + gamma) * lifetime) / np.expm1(-e * lifetime)
        if counts == "node":
            branch = np.array([(2 - d_bar / 2) / 2, d_bar / 4])
        else:
            branch = np.array([1 - d_bar / 2, d_bar / 2])
        expected = np.vstack([leaf, p * branch + (1 - p) * leaf])
        proba = tree.predict_proba(np.array([[0.5], [1.0 + e]]))
        assert_allclose(proba, expected, rtol=1e-12, atol=1e-15)


def test_far_away_predictions_tend_to_the_root_smoothing(global_random_seed):
    """Far from the data the point branches off above the root with d_bar -> 1 (§5.3): the
    strict-IKN prediction tends to the uniform prior and the [BL] one to
    (c_root - tab_root + T_root / K) / n_root."""
    X, y = _blobs(global_random_seed)
    far = np.full((1, X.shape[1]), 1e12)
    kw = dict(lifetime=np.inf, random_state=global_random_seed)
    tables = MondrianTreeClassifier(branch_off_counts="tables", **kw).fit(X, y)
    assert_allclose(tables.predict_proba(far), np.full((1, 3), 1 / 3), atol=1e-9)
    node = MondrianTreeClassifier(branch_off_counts="node", **kw).fit(X, y)
    t = node.tree_
    tab = (t.value > 0).astype(float)
    c_root = tab[t.children_left[0]] + tab[t.children_right[0]]
    expected = (c_root - tab[0] + tab[0].sum() / 3) / c_root.sum()
    assert_allclose(node.predict_proba(far), expected[None, :], atol=1e-9)


def test_predict_log_proba_and_score(global_random_seed):
    """predict_log_proba is log(predict_proba), predict is its argmax, score is accuracy."""
    X, y = _blobs(global_random_seed)
    forest = MondrianForestClassifier(n_estimators=5, random_state=global_random_seed).fit(X, y)
    proba = forest.predict_proba(X)
    with np.errstate(divide="ignore"):
        assert_allclose(forest.predict_log_proba(X), np.log(proba), rtol=1e-12)
    assert_array_equal(forest.predict(X), forest.classes_[np.argmax(proba, axis=1)])
    assert forest.score(X, y) == pytest.approx(np.mean(forest.predict(X) == y))
    # with an infinite lifetime the training points sit in their leaves: accuracy is high
    assert forest.score(X, y) > 0.9


def test_string_labels_and_class_order():
    """Non-integer labels: classes_ is sorted, value columns and predict_proba follow it."""
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array(["b", "a", "c", "a"])
    tree = MondrianTreeClassifier(random_state=0).fit(X, y)
    assert_array_equal(tree.classes_, ["a", "b", "c"])
    assert_array_equal(tree.tree_.value[0], [2, 1, 1])
    assert tree.predict(X[:1])[0] in {"a", "b", "c"}
    check_tree_invariants(tree, X, y)


def test_partial_fit_with_new_class_mid_stream(global_random_seed):
    """A label unseen so far adds a column to classes_, value and predict_proba, with zero
    counts in every node trained before it."""
    X, y = _blobs(global_random_seed)
    first = y != 2
    tree = MondrianTreeClassifier(random_state=global_random_seed)
    tree.partial_fit(X[first], y[first])
    assert_array_equal(tree.classes_, [0, 1])
    tree.partial_fit(X[~first], y[~first])
    assert_array_equal(tree.classes_, [0, 1, 2])
    assert tree.tree_.value.shape[1] == 3
    check_proba(tree.predict_proba(X), len(X), 3)
    order = np.concatenate([np.flatnonzero(first), np.flatnonzero(~first)])
    check_tree_invariants(tree, X[order], y[order])


def test_partial_fit_rejects_labels_outside_fixed_classes():
    """classes= fixes the label set: an unknown label later is an error, not a new column."""
    X, y = _blobs(0)
    tree = MondrianTreeClassifier(random_state=0).partial_fit(X[:10], y[:10], classes=[0, 1, 2])
    with pytest.raises(ValueError):
        tree.partial_fit(X[10:12], np.array([0, 5]))
    check_tree_invariants(tree, X[:10], y[:10])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_inputs_are_rejected(bad):
    """NaN or infinite inputs are refused at the API boundary (§1.4) by fit, partial_fit and
    predict_proba."""
    X, y = _blobs(0)
    X_bad = X.copy()
    X_bad[3, 1] = bad
    with pytest.raises(ValueError):
        MondrianTreeClassifier(random_state=0).fit(X_bad, y)
    tree = MondrianTreeClassifier(random_state=0).fit(X, y)
    with pytest.raises(ValueError):
        tree.partial_fit(X_bad, y)
    with pytest.raises(ValueError):
        tree.predict_proba(X_bad)
    check_tree_invariants(tree, X, y)
