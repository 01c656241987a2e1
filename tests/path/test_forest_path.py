"""Lifetime paths of the forests (section 7) and ``lifetime="auto"``."""

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from mondrian import (
    MondrianForestClassifier,
    MondrianForestRegressor,
    MondrianTreeClassifier,
)

from _reference import TreeArrays, branch_off_probabilities, to_scaled


def _regression_data(n, seed, noise=0.3):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-1, 3, size=(n, 3))
    y = 10 * np.sin(2 * X[:, 0]) + X[:, 1] + noise * rng.normal(size=n) + 100
    return X, y


def _classification_data(n, seed):
    rng = np.random.RandomState(seed)
    X = rng.uniform(size=(n, 2))
    y = (X[:, 0] + 0.2 * rng.normal(size=n) > X[:, 1]).astype(int) + 2 * (X[:, 0] > 0.8)
    return X, y


def _interval_lifetime(path, k):
    upper = path.upper_lifetimes[k]
    return 0.5 * (path.lifetimes[k] + upper) if np.isfinite(upper) else np.inf


def _some_intervals(path):
    return sorted({0, 1, 7, path.n_cuts // 3, path.best_index, path.n_cuts})


def _pruned_along(path):
    """``(k, forest pruned inside interval k)`` for a few intervals of the path."""
    for k in _some_intervals(path):
        yield k, path.forest_.prune(_interval_lifetime(path, k))


def _fitted_path(model, data):
    """The model fitted on 300 points of ``data`` and its path on 150 validation points."""
    X, y = data(300, 0)
    X_val, y_val = data(150, 1)
    model.fit(X, y)
    return model, X_val, y_val, model.lifetime_path(X_val, y_val)


@pytest.fixture(scope="module")
def regression_path():
    return _fitted_path(MondrianForestRegressor(n_estimators=8, random_state=0), _regression_data)


@pytest.fixture(scope="module")
def classification_path():
    model = MondrianForestClassifier(n_estimators=8, random_state=0)
    return _fitted_path(model, _classification_data)


@pytest.mark.exact
def test_regression_path_equals_the_pruned_forest(regression_path):
    """At every lifetime the path's losses are those of the pruned forest, recomputed."""
    _, X_val, y_val, path = regression_path
    assert path.n_cuts > 100
    for k, pruned in _pruned_along(path):
        mean, std = pruned.predict(X_val, return_std=True)
        mse = np.mean((mean - y_val) ** 2)
        nll = np.mean(0.5 * np.log(2 * np.pi * std**2) + (y_val - mean) ** 2 / (2 * std**2))
        assert_allclose(path.metrics["mse"][k], mse, rtol=1e-9)
        assert_allclose(path.metrics["nll"][k], nll, rtol=1e-9)


@pytest.mark.exact
def test_classification_path_equals_the_pruned_forest(classification_path):
    _, X_val, y_val, path = classification_path
    assert path.n_cuts > 50
    for k, pruned in _pruned_along(path):
        proba = pruned.predict_proba(X_val)
        codes = np.searchsorted(pruned.classes_, y_val)
        log_loss = -np.mean(np.log(proba[np.arange(len(y_val)), codes]))
        assert_allclose(path.metrics["log_loss"][k], log_loss, rtol=1e-9)
        assert path.metrics["accuracy"][k] == np.mean(pruned.predict(X_val) == y_val)


@pytest.mark.exact
@pytest.mark.parametrize("which", ["regression", "classification"])
def test_path_state_equals_pruned_predictions(which, request):
    """Stopped at a lifetime, the path's per-point predictions are the pruned forest's."""
    model, X_val, y_val, path = request.getfixturevalue(f"{which}_path")
    for k in (3, path.best_index):
        lam = _interval_lifetime(path, k)
        reader, forest = model._path_stop(X_val, y_val, lam)
        pruned = forest.prune(lam)
        if which == "regression":
            mean, var = reader.predictions()
            scale, offset = model._y_scaler.scale, model._y_scaler.offset
            ref_mean, ref_std = pruned.predict(X_val, return_std=True)
            assert_allclose(mean * scale + offset, ref_mean, rtol=1e-12)
            assert_allclose(np.sqrt(var) * scale, ref_std, rtol=1e-9)
        else:
            assert_allclose(reader.predictions(), pruned.predict_proba(X_val), rtol=1e-12)


@pytest.mark.exact
@pytest.mark.parametrize("which", ["regression", "classification"])
def test_backward_path_equals_forward_path(which, request):
    model, X_val, y_val, forward = request.getfixturevalue(f"{which}_path")
    backward = model.lifetime_path(X_val, y_val, direction="backward")
    assert backward.direction == "backward"
    assert_array_equal(backward.lifetimes, forward.lifetimes)
    for name, values in forward.metrics.items():
        assert_allclose(backward.metrics[name], values, rtol=1e-9, atol=1e-12)
    assert backward.best_index == forward.best_index


def test_path_intervals_and_best_lifetime(regression_path):
    reg, _, _, path = regression_path
    assert path.lifetimes[0] == 0.0
    assert np.all(np.diff(path.lifetimes) >= 0)
    assert_array_equal(path.upper_lifetimes[:-1], path.lifetimes[1:])
    assert path.upper_lifetimes[-1] == reg.lifetime_ == np.inf
    k = path.best_index
    assert path.metrics["mse"][k] == path.metrics["mse"].min()
    assert path.lifetimes[k] < path.best_lifetime <= path.upper_lifetimes[k]
    # Lifetime 0: every tree is its root, which predicts the posterior mean of all targets.
    assert path.metrics["mse"][0] > path.metrics["mse"][k]


def test_path_with_a_finite_fitted_lifetime():
    X, y = _regression_data(200, 3)
    reg = MondrianForestRegressor(n_estimators=4, lifetime=2.0, random_state=1).fit(X, y)
    path = reg.lifetime_path(*_regression_data(50, 4))
    assert path.upper_lifetimes[-1] == 2.0
    assert path.lifetimes[-1] < 2.0


def test_path_leaves_the_model_unchanged(regression_path):
    reg, X_val, y_val, _ = regression_path
    before = reg.predict(X_val, return_std=True)
    n_seen = reg.n_samples_seen_
    reg.lifetime_path(X_val, y_val)
    after = reg.predict(X_val, return_std=True)
    assert_array_equal(before[0], after[0])
    assert_array_equal(before[1], after[1])
    assert reg.n_samples_seen_ == n_seen


def test_path_bad_input(classification_path, regression_path):
    clf, X_val, y_val, _ = classification_path
    with pytest.raises(ValueError, match="never saw"):
        clf.lifetime_path(X_val, np.full(len(y_val), 17))
    with pytest.raises(ValueError, match="direction"):
        clf.lifetime_path(X_val, y_val, direction="sideways")
    with pytest.raises(ValueError, match="shape"):
        clf.lifetime_path(X_val, y_val[:-1])
    X_bad = X_val.copy()
    X_bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clf.lifetime_path(X_bad, y_val)
    reg, X_val, y_val, _ = regression_path
    with pytest.raises(ValueError, match="NaN or infinity"):
        reg.lifetime_path(X_val, np.full(len(y_val), np.inf))
    with pytest.raises(ValueError, match="features"):
        reg.lifetime_path(X_val[:, :2], y_val)
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        MondrianForestRegressor().lifetime_path(X_val, y_val)


def test_lifetime_auto_chooses_short_lifetimes_for_noise():
    """Pure noise targets: the best forest is the coarse one (few cuts)."""
    rng = np.random.RandomState(5)
    X = rng.uniform(size=(400, 2))
    y_noise = rng.normal(size=400)
    _, y_signal = _regression_data(400, 5)
    X_signal, _ = _regression_data(400, 5)
    noisy = MondrianForestRegressor(n_estimators=10, lifetime="auto", random_state=0)
    noisy.fit(X, y_noise)
    signal = MondrianForestRegressor(n_estimators=10, lifetime="auto", random_state=0)
    signal.fit(X_signal, y_signal)
    assert 0 < noisy.lifetime_ < signal.lifetime_ < np.inf
    assert noisy.lifetime_path_.forest_ is None  # the fitted model keeps a light path
    assert noisy.get_params()["lifetime"] == "auto"
    assert all(tree.lifetime == noisy.lifetime_ for tree in noisy._trees)
    assert noisy.estimators_[0].lifetime_ == noisy.lifetime_


def test_lifetime_auto_classifier_and_online_updates():
    X, y = _classification_data(400, 6)
    clf = MondrianForestClassifier(n_estimators=10, lifetime="auto", random_state=0)
    clf.partial_fit(X[:300], y[:300])
    lam = clf.lifetime_
    assert 0 < lam < np.inf
    clf.partial_fit(X[300:], y[300:])
    assert clf.lifetime_ == lam
    assert clf.n_samples_seen_ == 400
    clone = pickle.loads(pickle.dumps(clf))
    assert_array_equal(clone.predict_proba(X), clf.predict_proba(X))
    with pytest.raises(ValueError, match="auto"):
        MondrianForestClassifier(lifetime="auto").learn_one(X[0], y[0])
    with pytest.raises(ValueError, match="validation"):
        MondrianForestClassifier(lifetime="auto", validation_fraction=0.9).fit(X[:5], y[:5])


def test_lifetime_auto_is_reproducible():
    X, y = _regression_data(200, 7)
    a = MondrianForestRegressor(n_estimators=5, lifetime="auto", random_state=3).fit(X, y)
    b = MondrianForestRegressor(n_estimators=5, lifetime="auto", random_state=3).fit(X, y)
    assert a.lifetime_ == b.lifetime_
    assert_array_equal(a.predict(X), b.predict(X))


@pytest.mark.exact
@pytest.mark.parametrize("lifetime", [np.inf, 2.5])
def test_dirichlet_smoothing_matches_the_extension_oracle(lifetime):
    """Independent Dirichlet leaves, integrated over the extension of the tree (section 5)."""
    X, y = _classification_data(120, 8)
    alpha = 0.7
    tree = MondrianTreeClassifier(
        lifetime=lifetime, smoothing="dirichlet", concentration=alpha, random_state=2
    ).fit(X, y)
    rng = np.random.RandomState(9)
    X_test = rng.uniform(-0.5, 1.5, size=(40, 2))
    ref = TreeArrays.from_estimator(tree)
    K = len(tree.classes_)
    expected = []
    def dirichlet(counts):
        return (counts + alpha / K) / (counts.sum() + alpha)

    for x in to_scaled(tree, X_test):
        path, _, s_end = branch_off_probabilities(ref, x)
        leaf = dirichlet(ref.value[path[-1]])
        expected.append(s_end * leaf + (1 - s_end) / K)
    assert_allclose(tree.predict_proba(X_test), np.array(expected), rtol=1e-12, atol=1e-15)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(5, 40),
    n_val=st.integers(1, 20),
    seed=st.integers(0, 2**16),
    lifetime=st.sampled_from([0.5, 5.0, np.inf]),
)
def test_path_properties(n, n_val, seed, lifetime):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 2))
    y = rng.randint(0, 3, size=n)
    clf = MondrianForestClassifier(n_estimators=3, lifetime=lifetime, random_state=seed)
    clf.fit(X, y)
    X_val = rng.normal(size=(n_val, 2))
    y_val = rng.choice(clf.classes_, size=n_val)
    path = clf.lifetime_path(X_val, y_val)
    assert np.all(np.isfinite(path.metrics["log_loss"]))
    assert np.all((path.metrics["accuracy"] >= 0) & (path.metrics["accuracy"] <= 1))
    assert np.all(np.diff(path.lifetimes) >= 0)
    assert path.upper_lifetimes[-1] == clf.lifetime_
    last = path.forest_.prune(_interval_lifetime(path, path.n_cuts))
    proba = last.predict_proba(X_val)
    assert_allclose(proba.sum(axis=1), 1.0)


@pytest.mark.exact
def test_path_leaves_without_labels_back_off_to_their_labelled_ancestor():
    """At lifetime inf each validation point ends alone in a leaf without labels; the path
    reads it as the posterior of its deepest labelled ancestor, not as the prior."""
    X, y = _regression_data(80, 11)
    X_val, y_val = _regression_data(30, 12)
    reg = MondrianForestRegressor(n_estimators=1, random_state=4).fit(X, y)
    path = reg.lifetime_path(X_val, y_val)
    forest = path.forest_
    tree = forest._trees[0]
    value, parent = tree.value_array, tree.nodes_array["parent"]
    params = forest._posterior().params
    leaves = tree.apply(forest._scaler.transform(X_val, clip=True))
    backed_off = 0
    expected = []
    for leaf in leaves:
        node = leaf
        while value[node, 0] == 0:
            node = parent[node]
        backed_off += node != leaf
        precision = 1 / params.prior_var + value[node, 0] / params.noise
        mean = (params.mean0 / params.prior_var + value[node, 1] / params.noise)
        expected.append(mean / precision * forest._y_scaler.scale + forest._y_scaler.offset)
    assert backed_off > 20
    assert_allclose(forest.predict(X_val), expected, rtol=1e-10)
    mse = np.mean((np.array(expected) - y_val) ** 2)
    assert_allclose(path.metrics["mse"][-1], mse, rtol=1e-9)


def test_path_copy_keeps_the_feature_map_during_warm_up():
    """With fewer than 64 points the map is still adapting; validation points outside the
    training range must not move it (the copy's trees are extended, not re-sampled)."""
    X, y = _regression_data(40, 13)
    reg = MondrianForestRegressor(n_estimators=3, random_state=0).fit(X, y)
    X_val, y_val = _regression_data(20, 14)
    X_val[:5] += 10.0
    path = reg.lifetime_path(X_val, y_val)
    assert_array_equal(path.forest_.feature_offset_, reg.feature_offset_)
    assert_array_equal(path.forest_.feature_scale_, reg.feature_scale_)
    # Every cut of the fitted trees is still there, with its time and location.
    for ours, theirs in zip(reg._trees, path.forest_._trees, strict=True):
        mine = ours.nodes_array
        cuts = mine["left_child"] != -1
        times = set(theirs.nodes_array["split_time"][theirs.nodes_array["left_child"] != -1])
        assert set(mine["split_time"][cuts]) <= times


def test_lifetime_path_attribute_never_outlives_its_fit():
    X, y = _classification_data(200, 15)
    clf = MondrianForestClassifier(n_estimators=4, lifetime="auto", random_state=0).fit(X, y)
    assert hasattr(clf, "lifetime_path_")
    assert not hasattr(clf.prune(clf.lifetime_ / 2), "lifetime_path_")
    clf.set_params(lifetime=3.0).fit(X, y)
    assert not hasattr(clf, "lifetime_path_")


@pytest.mark.parametrize("Estimator", [MondrianForestClassifier, MondrianForestRegressor])
def test_failed_refit_leaves_the_fitted_model(Estimator):
    X, y = _classification_data(40, 16)
    model = Estimator(n_estimators=3, random_state=0).fit(X, y)
    before = pickle.dumps(model)
    expected = model.predict(X)
    model.set_params(lifetime="auto")
    with pytest.raises(ValueError, match="validation"):
        model.fit(np.ones((2, 5)), y[:2])
    model.set_params(lifetime=np.inf)
    assert pickle.dumps(model) == before
    assert_array_equal(model.predict(X), expected)
