"""Feature weights: a fixed per-feature weight after the min-max map.

Exactness: a model with weights ``w`` is the model fitted with ``feature_scaling=None`` on the
min-max-scaled inputs times ``w`` (same seed, bit for bit); a weight of 0 is never cut.
Law: the same-cell frequency of weighted Mondrian kernel features is the weighted Laplace
kernel; online = batch in law with weights. Learning: "auto" gives irrelevant columns small
weights; the stream window; validation, warm start, pickling, atomicity.
"""

import pickle

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from scipy import stats

from mondrian import (
    MondrianForestClassifier,
    MondrianForestRegressor,
    MondrianKernelFeatures,
    MondrianKernelRidge,
    MondrianKernelSGDClassifier,
    MondrianTreeClassifier,
    MondrianTreeRegressor,
)
from mondrian.estimator.relevance import AUTO_WARM_UP, power_weights, relevance

RNG = np.random.RandomState(0)
X = RNG.uniform(-3.0, 5.0, size=(120, 3)) * np.array([1.0, 10.0, 0.1])
Y_CLASS = (X[:, 0] + X[:, 1] / 10 > 1.0).astype(int) + (X[:, 2] > 0.2)
Y_REG = np.sin(X[:, 0]) + X[:, 1] / 10 + 0.1 * RNG.randn(len(X))
W = np.array([2.0, 0.0, 0.5])


def _scaled_times_weights(X, w):
    """What the feature map computes: ``(X - min) / range * w``, in the same order."""
    low = X.min(axis=0)
    out = np.subtract(X, low, dtype=np.float64)
    out /= np.ptp(X, axis=0)
    out *= w
    return out


def _nodes(model):
    return [tree.nodes_array.copy() for tree in model._trees]


def _assert_same_trees(a, b):
    for na, nb in zip(_nodes(a), _nodes(b), strict=True):
        assert na.tobytes() == nb.tobytes()


MODELS = {
    "classifier": (lambda **kw: MondrianForestClassifier(10, **kw), Y_CLASS),
    "tree-classifier": (lambda **kw: MondrianTreeClassifier(**kw), Y_CLASS),
    "regressor": (lambda **kw: MondrianForestRegressor(10, **kw), Y_REG),
    "tree-regressor": (lambda **kw: MondrianTreeRegressor(**kw), Y_REG),
    "kernel-features": (lambda **kw: MondrianKernelFeatures(10, **{"lifetime": 3.0, **kw}), None),
    "kernel-ridge": (lambda **kw: MondrianKernelRidge(10, **{"lifetime": 3.0, **kw}), Y_REG),
}


def _fit(name, X, **kw):
    make, y = MODELS[name]
    model = make(random_state=0, **kw)
    return model.fit(X) if y is None else model.fit(X, y)


def _outputs(model, X):
    if hasattr(model, "predict_proba"):
        return model.predict_proba(X)
    if hasattr(model, "transform"):
        return model.transform(X).toarray()
    return model.predict(X, return_std=True) if isinstance(
        model, (MondrianForestRegressor, MondrianTreeRegressor)) else model.predict(X)


@pytest.mark.exact
@pytest.mark.parametrize("name", sorted(MODELS))
def test_weights_are_the_map_then_an_unweighted_fit(name):
    """Weights w on X == feature_scaling=None on the min-max-scaled X times w: same trees (bit
    for bit) and same predictions."""
    weighted = _fit(name, X, feature_weights=W)
    U = _scaled_times_weights(X, W)
    plain = _fit(name, U, feature_scaling=None, feature_weights=None)
    _assert_same_trees(weighted, plain)
    assert_array_equal(weighted._store.X, plain._store.X)
    a, b = _outputs(weighted, X), _outputs(plain, U)
    for left, right in zip(np.atleast_1d(a) if not isinstance(a, tuple) else a,
                           np.atleast_1d(b) if not isinstance(b, tuple) else b, strict=True):
        assert_array_equal(left, right)
    assert_array_equal(weighted.feature_weights_, W)


@pytest.mark.exact
@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_weight_of_zero_is_never_cut(name):
    weighted = _fit(name, X, feature_weights=W, **(
        {"lifetime": 50.0} if name.startswith("kernel") else {}))
    features = np.concatenate([t.nodes_array["feature"][t.nodes_array["left_child"] != -1]
                               for t in weighted._trees])
    assert features.size > 0
    assert not np.any(features == 1)
    assert set(np.unique(features)) == {0, 2}


@pytest.mark.exact
def test_thresholds_and_bounds_map_back_to_original_units():
    tree = MondrianTreeClassifier(random_state=0, feature_weights=W).fit(X, Y_CLASS).tree_
    internal = tree.children_left != -1
    thresholds, features = tree.threshold[internal], tree.feature[internal]
    low, high = X.min(axis=0)[features], X.max(axis=0)[features]
    assert np.all((thresholds >= low) & (thresholds <= high))
    assert_array_equal(tree.lower_bounds[0], X.min(axis=0)[[0, 1, 2]] * [1, 0, 1]
                       + [0, X[:, 1].min(), 0])  # weight 0: the offset
    np.testing.assert_allclose(tree.upper_bounds[0][[0, 2]], X.max(axis=0)[[0, 2]])


@pytest.mark.statistical
def test_weighted_kernel_features_give_the_weighted_laplace_kernel():
    """Same-cell frequency over M trees == exp(-lifetime * sum_d w_d |x_d - x'_d|), within 4
    binomial standard errors per pair (M = 3000)."""
    rng = np.random.RandomState(1)
    P = rng.uniform(size=(6, 3))
    w = np.array([1.5, 0.0, 0.4])
    lifetime = 1.3
    M = 3000
    Z = MondrianKernelFeatures(M, lifetime=lifetime, feature_scaling=None, feature_weights=w,
                               random_state=3).fit_transform(P)
    K = (Z @ Z.T).toarray()
    exact = np.exp(-lifetime * (np.abs(P[:, None, :] - P[None, :, :]) * w).sum(-1))
    se = np.sqrt(exact * (1 - exact) / M) + 1e-12
    assert np.all(np.abs(K - exact) <= 4 * se + 1e-12)
    # the unweighted kernel is far from it (the test has power)
    plain = np.exp(-lifetime * np.abs(P[:, None, :] - P[None, :, :]).sum(-1))
    assert np.max(np.abs(K - plain) / (se + 1e-3)) > 10


@pytest.mark.statistical
@pytest.mark.parametrize("batch_size", [1, 5])
def test_online_and_batch_trees_have_the_same_law_with_weights(global_random_seed, batch_size):
    """partial_fit and fit with the same weights: leaf count and depth (chi-square), root split
    time (KS), all at p > 1e-4 over 1500 trees. The root split time is Exp(sum_d w_d) for a
    stream that starts with the corners (so the min-max map never moves)."""
    rng = np.random.default_rng(global_random_seed)
    P = np.vstack([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], rng.uniform(size=(12, 3))])
    y = rng.integers(0, 3, size=14)
    y[:3] = [0, 1, 2]
    w = np.array([3.0, 0.5, 0.0])
    kw = dict(n_estimators=1500, lifetime=2.0, feature_weights=w)
    batch = MondrianForestClassifier(random_state=global_random_seed, **kw).fit(P, y)
    online = MondrianForestClassifier(random_state=global_random_seed + 1, **kw)
    order = np.concatenate([[0, 1], 2 + rng.permutation(12)])
    for start in range(0, 14, batch_size):
        rows = order[start:start + batch_size]
        online.partial_fit(P[rows], y[rows], classes=[0, 1, 2])

    def statistics(forest):
        leaves = np.array([np.sum(t.nodes_array["left_child"] == -1) for t in forest._trees])
        depth = np.array([e.tree_.max_depth for e in forest.estimators_])
        tau = np.array([t.nodes_array["split_time"][0] for t in forest._trees])
        return leaves, depth, tau

    leaves_b, depth_b, tau_b = statistics(batch)
    leaves_o, depth_o, tau_o = statistics(online)
    assert _chi2(leaves_b, leaves_o) > 1e-4
    assert _chi2(depth_b, depth_o) > 1e-4
    assert stats.ks_2samp(tau_b, tau_o).pvalue > 1e-4
    for tau in (tau_b, tau_o):
        assert stats.kstest(tau, "expon", args=(0, 1 / w.sum())).pvalue > 1e-4


def _chi2(a, b):
    values = np.union1d(a, b)
    table = np.array([[np.sum(a == v) for v in values], [np.sum(b == v) for v in values]])
    keep = table.sum(axis=0) >= 10
    pooled = np.column_stack([table[:, keep], table[:, ~keep].sum(axis=1)]) if (~keep).any() \
        else table[:, keep]
    pooled = pooled[:, pooled.sum(axis=0) > 0]
    return 1.0 if pooled.shape[1] < 2 else stats.chi2_contingency(pooled).pvalue


# ------------------------------------------------------------------------------ "auto"

def _toy(n=400, seed=0):
    """Two relevant columns (an interaction) and three pure-noise columns."""
    rng = np.random.RandomState(seed)
    P = rng.uniform(size=(n, 5))
    y_reg = np.sin(4 * P[:, 0]) * P[:, 1] * 3 + 0.05 * rng.randn(n)
    y_cls = ((P[:, 0] > 0.5) ^ (P[:, 1] > 0.4)).astype(int)
    return P, y_reg, y_cls


@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_auto_gives_irrelevant_columns_small_weights(kind):
    P, y_reg, y_cls = _toy()
    if kind == "classifier":
        model = MondrianForestClassifier(20, feature_weights="auto", random_state=0).fit(P, y_cls)
    else:
        model = MondrianForestRegressor(20, feature_weights="auto", random_state=0).fit(P, y_reg)
    w = model.feature_weights_
    info = model.feature_weights_info_
    assert info["method"] == "extra_trees" and info["power"] > 0
    assert w[2:].max() < 0.1 * w[:2].min(), w
    np.testing.assert_allclose(w.mean(), 1.0)


def test_relevance_methods_rank_the_relevant_columns_first():
    P, y_reg, _ = _toy(300)
    for method in ("extra_trees", "permutation", "mutual_info"):
        r = relevance(method, P, y_reg, False, 0)
        assert r[:2].min() > r[2:].max(), (method, r)


def test_power_weights():
    r = np.array([0.5, 0.25, 0.25, 0.0])
    assert_array_equal(power_weights(r, 0), np.ones(4))
    np.testing.assert_allclose(power_weights(r, 1), [2.0, 1.0, 1.0, 0.0])
    np.testing.assert_allclose(power_weights(r, 2), 4 * np.array([4, 1, 1, 0]) / 6)
    assert_array_equal(power_weights(np.zeros(3), 2), np.ones(3))


def test_stream_window_keeps_uniform_weights_then_resamples_once():
    P, _, y_cls = _toy(AUTO_WARM_UP + 100)
    model = MondrianForestClassifier(10, feature_weights="auto", random_state=0)
    step = 64
    for start in range(0, AUTO_WARM_UP, step):
        model.partial_fit(P[start:start + step], y_cls[start:start + step], classes=[0, 1])
        if start + step < AUTO_WARM_UP:
            assert_array_equal(model.feature_weights_, np.ones(5))
            assert model._scaler.weights is None
    w = model.feature_weights_
    # the window chose what a search on its rows chooses, and ranked the columns right
    assert_array_equal(w, model._search_weights(P[:AUTO_WARM_UP], y_cls[:AUTO_WARM_UP],
                                                "extra_trees")[0])
    assert w[2:].max() < w[:2].min(), w
    # every stored point re-mapped with the weights, and the trees sampled on them
    assert_array_equal(model._store.X, model._scaler.transform(P[:AUTO_WARM_UP]))
    assert_array_equal(model._scaler.weights, w)
    cut = np.concatenate([t.nodes_array["feature"][t.nodes_array["left_child"] != -1]
                          for t in model._trees])
    uniform_share = 2 / 5
    assert np.mean(cut < 2) > uniform_share + 0.05  # 1253 cuts: 4 standard errors
    # frozen afterwards
    model.partial_fit(P[AUTO_WARM_UP:], y_cls[AUTO_WARM_UP:])
    assert_array_equal(model.feature_weights_, w)
    assert_array_equal(model._store.X, model._scaler.transform(P))


def test_learn_one_window():
    P, _, y_cls = _toy(AUTO_WARM_UP + 5)
    model = MondrianForestClassifier(5, feature_weights="auto", random_state=0)
    for row, label in zip(P, y_cls, strict=True):
        model.learn_one(dict(enumerate(row)), int(label))
    assert not np.all(model.feature_weights_ == 1.0)
    assert_array_equal(model._store.X, model._scaler.transform(P))


def test_kernel_models_learn_weights_on_the_first_batch():
    P, y_reg, y_cls = _toy(300)
    ridge = MondrianKernelRidge(10, lifetime=2.0, feature_weights="auto", random_state=0)
    ridge.fit(P, y_reg)
    assert ridge.feature_weights_[2:].max() < ridge.feature_weights_[:2].min()
    sgd = MondrianKernelSGDClassifier(5, lifetime=2.0, feature_weights="mutual_info",
                                      n_epochs=1, random_state=0).fit(P[:150], y_cls[:150])
    assert sgd.feature_weights_info_["method"] == "mutual_info"
    with pytest.raises(ValueError, match="labels"):
        MondrianKernelFeatures(5, feature_weights="auto").fit(P)


# ------------------------------------------------------------------------------ API

@pytest.mark.parametrize("bad, match", [
    (np.array([1.0, -1.0, 1.0]), "non-negative"),
    (np.array([1.0, np.nan, 1.0]), "non-negative"),
    (np.array([1.0, 1.0]), "3 features"),
    (np.zeros(3), "all 0"),
    (np.ones((3, 1)), "1-d"),
    ("nope", "not a known weight method"),
    (["a", "b", "c"], "array of non-negative numbers"),
])
@pytest.mark.parametrize("name", ["classifier", "regressor", "kernel-ridge"])
def test_bad_weights_raise_and_leave_the_model_unchanged(name, bad, match):
    model = _fit(name, X)
    before = pickle.dumps(model)
    default = model.feature_weights
    model.set_params(feature_weights=bad)
    with pytest.raises(ValueError, match=match):
        model.fit(X, MODELS[name][1])
    model.set_params(feature_weights=default)
    assert pickle.dumps(model) == before


@pytest.mark.parametrize("name", ["classifier", "regressor", "kernel-ridge"])
def test_changing_weights_after_fit_asks_for_a_refit(name):
    model = _fit(name, X, feature_weights=W)
    model.set_params(feature_weights=W.copy())  # equal values: fine
    model.partial_fit(X[:5], MODELS[name][1][:5])
    model.set_params(feature_weights=W * 2)
    with pytest.raises(ValueError, match="feature_weights"):
        model.partial_fit(X[:5], MODELS[name][1][:5])


@pytest.mark.parametrize("name", sorted(MODELS))
def test_pickle_round_trip(name):
    model = _fit(name, X, feature_weights=W)
    loaded = pickle.loads(pickle.dumps(model))
    assert_array_equal(loaded.feature_weights_, W)
    a, b = _outputs(model, X), _outputs(loaded, X)
    for left, right in zip(a if isinstance(a, tuple) else (a,),
                           b if isinstance(b, tuple) else (b,), strict=True):
        assert_array_equal(left, right)


def test_none_is_the_label_blind_model():
    a = MondrianForestClassifier(10, feature_weights=None, random_state=0).fit(X, Y_CLASS)
    b = MondrianForestClassifier(10, random_state=0, feature_weights=np.ones(3)).fit(X, Y_CLASS)
    _assert_same_trees(a, b)
    assert a._scaler.weights is None
    assert_array_equal(a.feature_weights_, np.ones(3))


# ------------------------------------------------------------------------------ online regression

def test_online_regressor_chooses_its_hyperparameters_like_a_batch_fit():
    """The held-out choice reads the stored points: fed in chunks (the first holding the
    extreme targets, features unscaled so the stores are equal), the online model ends with
    the choice of a batch fit on the same points (its re-choices search locally from the
    last choice, and reach the batch's cell here), and close predictions."""
    rng = np.random.RandomState(0)
    P = rng.uniform(size=(400, 2))
    y = np.sin(6 * P[:, 0]) + 0.1 * rng.randn(400)
    order = np.r_[np.argmin(y), np.argmax(y), np.setdiff1d(np.arange(400),
                                                           [np.argmin(y), np.argmax(y)])]
    P, y = P[order], y[order]
    # (Uniform weights on both sides: the stream's window, 512 rows, stays open here.)
    kw = dict(n_estimators=30, feature_scaling=None, feature_weights=None, random_state=0)
    batch = MondrianForestRegressor(**kw).fit(P, y)
    online = MondrianForestRegressor(**kw)
    for start in (0, 100, 200):  # each batch grows the store by half or more: a re-choice
        stop = {0: 100, 100: 200, 200: 400}[start]
        online.partial_fit(P[start:stop], y[start:stop])
    assert_array_equal(online._store.X, batch._store.X)
    assert online._hyper_n == 400
    assert online._hyper_choice == batch._hyper_choice
    grid = rng.uniform(size=(300, 2))
    truth = np.sin(6 * grid[:, 0])
    rmse_b = np.sqrt(np.mean((batch.predict(grid) - truth) ** 2))
    rmse_o = np.sqrt(np.mean((online.predict(grid) - truth) ** 2))
    assert abs(rmse_o - rmse_b) < 0.25 * rmse_b


# ------------------------------------------------------------------------------ quantile map

def test_quantile_map_is_increasing_and_inverted_by_backward():
    from mondrian.core.feature_map import QuantileMap

    rng = np.random.RandomState(3)
    P = np.column_stack([rng.lognormal(size=500), rng.randint(0, 4, 500), np.full(500, 2.0)])
    qmap = QuantileMap(P)
    grid = np.column_stack([np.linspace(-5, 40, 1000)] * 3)
    U = qmap.forward(grid)
    assert np.all(np.diff(U, axis=0) > 0)  # strictly increasing, also beyond the data
    np.testing.assert_allclose(qmap.backward(U, np.arange(3)), grid, rtol=1e-9, atol=1e-9)
    inside = qmap.forward(P)[:, 0]
    assert 0 <= inside.min() and inside.max() <= 1
    # the skewed feature's values are spread evenly: its median maps near 1/2
    assert abs(np.median(inside) - 0.5) < 0.01


@pytest.mark.exact
def test_a_quantile_map_is_the_map_then_a_plain_fit():
    """A forest whose feature map starts with a quantile map == the forest fitted on the
    quantile-mapped inputs (same seed, bit for bit); thresholds map back to original units."""
    from mondrian.core.feature_map import QuantileMap

    qmap = QuantileMap(X)
    mapped = MondrianForestRegressor(10, random_state=0)
    mapped._inherit_map = (W, qmap)  # what "auto" sets when the quantile map wins
    mapped.fit(X, Y_REG)
    plain = MondrianForestRegressor(10, random_state=0, feature_weights=W).fit(
        qmap.forward(X), Y_REG)
    _assert_same_trees(mapped, plain)
    assert_array_equal(mapped.predict(X), plain.predict(qmap.forward(X)))
    tree = mapped.estimators_[0].tree_
    internal = tree.children_left != -1
    thresholds, features = tree.threshold[internal], tree.feature[internal]
    assert np.all((thresholds >= X.min(axis=0)[features])
                  & (thresholds <= X.max(axis=0)[features]))
    loaded = pickle.loads(pickle.dumps(mapped))
    assert_array_equal(loaded.predict(X), mapped.predict(X))


def test_regressor_stream_window_and_atomic_failure():
    window = MondrianForestRegressor._auto_warm_up()  # the regressors' window: 512 rows
    assert window == 2 * AUTO_WARM_UP
    P, y_reg, _ = _toy(window + 40)
    model = MondrianForestRegressor(8, feature_weights="auto", random_state=0)
    model.partial_fit(P[:200], y_reg[:200])
    model.partial_fit(P[200:window - 100], y_reg[200:window - 100])
    assert_array_equal(model.feature_weights_, np.ones(5))  # still open at 412 rows
    before = pickle.dumps(model)
    bad = P[window - 100:].copy()
    bad[-1, 0] = np.nan
    with pytest.raises(ValueError):
        model.partial_fit(bad, y_reg[window - 100:])  # would have closed the window
    assert pickle.dumps(model) == before
    model.partial_fit(P[window - 100:], y_reg[window - 100:])
    w = model.feature_weights_
    assert w[2:].max() < w[:2].min(), w
    assert_array_equal(model._store.X, model._scaler.transform(P))
    assert model._hyper_n == len(P)  # the hyperparameters were chosen again on the new map


def test_weights_must_beat_uniform_by_more_than_the_paired_noise():
    from mondrian.estimator.relevance import beats, choose_weights

    base = np.zeros(100)
    gain = np.zeros(100)
    gain[:6] = 1.0  # mean 0.06, paired standard error 0.0239: 2.5 standard errors
    assert beats(gain, base) and beats(gain, base, margin=2.4)
    assert not beats(gain, base, margin=2.6)
    assert not beats(base, gain) and not beats(base, base)
    assert beats([0.1], [0.0]) and not beats([0.0], [0.0])
    # a search whose best power wins on the mean (the old rule would take it) but by less than
    # one paired standard error keeps uniform weights and the min-max map
    P, y_reg, _ = _toy(200)

    def score(w, X_fit, y_fit, X_val, y_val):
        rows = np.arange(len(y_val))
        common = np.sin(rows)  # the same rows are hard for every probe: paired away
        if np.all(w == 1.0):
            return common
        return common + 0.01 + 0.1 * (-1.0) ** rows  # +0.01 on the mean, se ~0.016

    w, knots, info = choose_weights(P, y_reg, False, score, "extra_trees", 0, quantile=True)
    assert info["scores"].argmax() != 0  # a power had the best mean
    assert info["power"] == 0 and info["map"] == "minmax" and knots is None
    assert_array_equal(w, np.ones(5))
    w, _, info = choose_weights(P, y_reg, False, score, "extra_trees", 0, margin=0.0)
    assert info["power"] > 0 and not np.all(w == 1.0)


def test_refinement_doubles_or_halves_the_largest_weights_greedily():
    from mondrian.estimator.relevance import _refine

    calls = []

    def rows_of(w):  # best at w[1] / w[0] = 8, whatever the normalisation
        calls.append(w.copy())
        np.testing.assert_allclose(w.mean(), 1.0)
        return np.array([-(w[1] / w[0] - 8.0) ** 2])

    w0 = np.array([0.75, 1.5, 0.75])
    steps = []
    w, s = _refine(w0, rows_of(w0), 2, rows_of, steps)
    # dim 1 (largest) doubled: ratio 4; dim 0 doubled (ratio 2, worse), then halved: ratio 8
    assert steps == [(1, 2.0), (0, 0.5)]
    np.testing.assert_allclose(w[1] / w[0], 8.0)
    np.testing.assert_allclose(w / w.sum(), np.array([0.375, 3.0, 0.75]) / 4.125)
    assert s[0] == 0.0 and len(calls) == 4
    # no step helps on the largest weight: the search stops there (2 probes, nothing kept)
    calls.clear()
    steps = []
    w8 = np.array([1.0, 8.0, 1.0]) * 0.3
    w, _ = _refine(w8, rows_of(w8), 3, rows_of, steps)
    assert steps == [] and len(calls) == 3
    assert_array_equal(w, w8)
