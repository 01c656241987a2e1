"""MondrianForestDensity with feature weights: the process on the cell [0, w_1] x ... x [0, w_D].

Each test would fail if the math were wrong: a missing or wrong Jacobian breaks the
normalisation, a wrong cell breaks the laws of the cuts, a weight of 0 handled as a small side
breaks the equality with the model without that feature. Statistical tests use fixed seeds and
pass at level 1e-3.
"""

import pickle

import numpy as np
import pytest
from scipy import stats

from mondrian import MondrianForestDensity, merge_forests
from mondrian.core._tree import extend_trees
from mondrian.density._full_cell import FullCellTree, log_density_trees


def _blobs(n, seed=0, d=2):
    rng = np.random.RandomState(seed)
    half = n // 2
    return np.vstack([rng.normal(0.0, 1.0, size=(half, d)),
                      rng.normal(3.0, 0.3, size=(n - half, d))])


def _forest_log(model, Y):
    """Log density of the forest part (no background), in the units of ``Y`` (inside B_0)."""
    V, inside = model._to_unit(Y)
    assert inside.all()
    return model._log_mean_trees(log_density_trees, V, model.lifetime_) - model._log_scale()


def _forest_mass_on_domain(model, n=200_000, seed=1):
    """Uniform Monte Carlo of the integral of exp(score_samples) over B_0, and its expected
    value (1 - w) + w Q(B_0) (the Laplace background puts (1 - exp(-1/2))^D inside B_0)."""
    low, high = model.domain_
    D = low.size
    U = np.random.RandomState(seed).uniform(size=(n, D))
    values = np.exp(model.score_samples(low + U * (high - low))) * np.prod(high - low)
    w = model.outside_weight_
    return values, (1 - w) + w * (1 - np.exp(-0.5)) ** D


@pytest.mark.parametrize("weights", [(1.0, 0.25), (0.2, 3.0), (1.0, 0.0)])
def test_weighted_density_integrates_to_one(weights):
    """Within 4 standard errors: without the Jacobian prod(w) the mass would be off by a
    factor 4 to 5 (or infinite for a weight of 0)."""
    X = _blobs(300)
    model = MondrianForestDensity(n_estimators=8, lifetime=10.0, concentration=0.5,
                                  feature_weights=weights, random_state=0).fit(X)
    values, expected = _forest_mass_on_domain(model)
    assert abs(values.mean() - expected) < 4 * values.std() / np.sqrt(values.size)


def test_weighted_density_integrates_to_one_by_quadrature_in_2d():
    """Midpoint quadrature on the product grid of every cut of every tree (mapped back to the
    units of x): each grid cell lies in one leaf of each tree, so the rule is exact for the
    forest part; the smooth background adds a tiny error."""
    X = _blobs(200, seed=2)
    w = np.array([2.0, 0.75])
    model = MondrianForestDensity(n_estimators=4, lifetime=4.0, concentration=1.0,
                                  feature_weights=w, random_state=3).fit(X)
    low, high = model.domain_
    edges = []
    for d in range(2):
        cuts = np.concatenate([tree.bounds_array[:, :, d].ravel() for tree in model._trees])
        edges.append(np.unique(np.r_[low[d], low[d] + cuts / w[d] * (high[d] - low[d]),
                                     high[d]]))
    mids = [0.5 * (e[1:] + e[:-1]) for e in edges]
    sizes = np.outer(np.diff(edges[0]), np.diff(edges[1])).ravel()
    points = np.stack(np.meshgrid(*mids, indexing="ij"), axis=-1).reshape(-1, 2)
    mass = np.sum(np.exp(model.score_samples(points)) * sizes)
    ow = model.outside_weight_
    assert abs(mass - ((1 - ow) + ow * (1 - np.exp(-0.5)) ** 2)) < 1e-5
    forest = np.sum(np.exp(_forest_log(model, points)) * sizes)
    assert abs(forest - 1.0) < 1e-9


def test_a_weight_of_zero_is_never_cut_and_the_density_is_uniform_along_it():
    """Weights (1, 0, 2) give exactly the trees of weights (1, 2) on features 0 and 2 (the
    draws skip a side of length 0), and the density divided by the width of feature 1."""
    X = _blobs(200, seed=4, d=3)
    params = dict(n_estimators=5, lifetime=6.0, concentration=0.3, random_state=5)
    full = MondrianForestDensity(feature_weights=[1.0, 0.0, 2.0], **params).fit(X)
    part = MondrianForestDensity(feature_weights=[1.0, 2.0], **params).fit(X[:, [0, 2]])
    for a, b in zip(full._trees, part._trees, strict=True):
        na, nb = a.nodes_array, b.nodes_array
        internal = na["left_child"] != -1
        assert not np.any(na["feature"][internal] == 1)
        np.testing.assert_array_equal(np.where(na["feature"] == 2, 1, na["feature"]),
                                      nb["feature"])
        np.testing.assert_array_equal(na["threshold"], nb["threshold"])
        np.testing.assert_array_equal(na["split_time"], nb["split_time"])
    rng = np.random.RandomState(6)
    low, high = full.domain_
    inside = low + rng.uniform(size=(500, 3)) * (high - low)
    width = high[1] - low[1]
    np.testing.assert_allclose(_forest_log(full, inside),
                               _forest_log(part, inside[:, [0, 2]]) - np.log(width), rtol=1e-12)
    # Along feature 1 the forest density is flat inside B_0.
    moved = inside.copy()
    moved[:, 1] = low[1] + rng.uniform(size=500) * width
    np.testing.assert_array_equal(_forest_log(full, inside), _forest_log(full, moved))
    # Draws spread uniformly along it.
    draws = full.sample(4000, random_state=0)
    core = np.all((draws >= low) & (draws <= high), axis=1)
    assert stats.kstest((draws[core, 1] - low[1]) / width, "uniform").pvalue > 1e-3


def test_isotropic_weights_are_a_lifetime():
    """Weights 2 * ones with lifetime λ: the trees of weights None with lifetime 2 λ, scaled
    by 2 (a power of two: exact), and the same density to rounding."""
    X = _blobs(250, seed=7)
    params = dict(n_estimators=4, concentration=0.4, random_state=8)
    a = MondrianForestDensity(lifetime=3.0, feature_weights=[2.0, 2.0], **params).fit(X)
    b = MondrianForestDensity(lifetime=6.0, **params).fit(X)
    for ta, tb in zip(a._trees, b._trees, strict=True):
        na, nb = ta.nodes_array, tb.nodes_array
        internal = nb["left_child"] >= 0
        np.testing.assert_array_equal(na["left_child"], nb["left_child"])
        np.testing.assert_array_equal(na["threshold"][internal], 2 * nb["threshold"][internal])
        np.testing.assert_array_equal(na["split_time"] * 2, nb["split_time"])
    Y = np.vstack([X, _blobs(100, seed=9) * 1.5])
    np.testing.assert_allclose(a.score_samples(Y), b.score_samples(Y), rtol=1e-12)


def test_weights_equal_a_uniform_process_on_the_prescaled_cell():
    """The estimator's weighted density is the plain Mondrian density of the points mapped to
    v = w (x - lower) / width, on the cell [0, w], times the Jacobian prod(w / width) (trees
    built here by hand from the same seeds)."""
    X = _blobs(150, seed=10)
    w = np.array([0.3, 1.7])
    model = MondrianForestDensity(n_estimators=3, lifetime=5.0, concentration=0.7,
                                  feature_weights=w, random_state=11).fit(X)
    low, high = model.domain_
    V = np.ascontiguousarray(w * (X - low) / (high - low))
    trees = []
    for seed in model._seeds:
        tree = FullCellTree(2, 0, 5.0, 1, False, int(seed))
        tree.start_cell(w)
        trees.append(tree)
    extend_trees(trees, V, np.zeros((len(V), 0)), np.arange(len(V), dtype=np.intp))
    Y = low + np.random.RandomState(12).uniform(size=(300, 2)) * (high - low)
    out = np.empty(len(Y))
    log_density_trees(trees, np.ascontiguousarray(w * (Y - low) / (high - low)), 5.0, 0.7, out)
    forest = out - np.log(len(trees)) + np.sum(np.log(w / (high - low)))
    ow = model.outside_weight_
    expected = np.logaddexp(np.log1p(-ow) + forest, np.log(ow) + model._log_background(Y))
    np.testing.assert_allclose(model.score_samples(Y), expected, rtol=1e-12)


def _root_law(model, w, x0, lifetime):
    """Per tree: root time, root dimension, distance (unit coordinates) from x0 to the lower
    face along feature 0 of its cell."""
    time, dim, distance = [], [], []
    u0 = (x0 - model.domain_[0]) / (model.domain_[1] - model.domain_[0])
    for tree in model._trees:
        nodes = tree.nodes_array
        time.append(nodes["split_time"][0])
        dim.append(nodes["feature"][0])
        j = tree.apply((u0 * w)[None, :])[0]
        distance.append(u0[0] - tree.bounds_array[j, 0, 0] / w[0])
    return np.array(time), np.array(dim), np.array(distance), u0[0]


@pytest.mark.statistical
def test_weighted_cuts_have_their_law_online_and_in_batch():
    """400 trees each, weights (0.5, 2): root time ~ Exp(2.5) (sides w_d), root dimension 1
    with probability 0.8, distance to the cell's face along feature 0 ~ min(Exp(0.5 λ), u0);
    batch fit and fit + partial_fit agree (two-sample KS on node counts)."""
    rng = np.random.RandomState(0)
    first = np.vstack([[[0.0, 0.0], [1.0, 1.0]], rng.uniform(0.0, 0.5, size=(15, 2))])
    second = rng.uniform(0.5, 1.0, size=(15, 2))
    w, lifetime, n_trees = np.array([0.5, 2.0]), 6.0, 400
    params = dict(n_estimators=n_trees, lifetime=lifetime, margin=0.0, feature_weights=w)
    batch = MondrianForestDensity(random_state=1, **params).fit(np.vstack([first, second]))
    online = MondrianForestDensity(random_state=2, **params).fit(first).partial_fit(second)
    x0 = second[0]
    for model in (batch, online):
        time, dim, distance, u0 = _root_law(model, w, x0, lifetime)
        assert stats.kstest(time, stats.expon(scale=1 / 2.5).cdf).pvalue > 1e-3
        assert stats.binomtest(int(np.sum(dim == 1)), n_trees, 0.8).pvalue > 1e-3
        rate = lifetime * w[0]
        below = 1 - np.exp(-rate * u0)  # P(distance < u0)
        edges = np.r_[stats.expon(scale=1 / rate).ppf(np.linspace(0, below, 8,
                                                                  endpoint=False)), u0]
        probabilities = np.r_[np.diff(1 - np.exp(-rate * edges)), np.exp(-rate * u0)]
        observed = np.r_[np.histogram(distance[distance < u0], edges)[0],
                         np.sum(distance >= u0)]
        assert stats.chisquare(observed, probabilities * n_trees).pvalue > 1e-3
    counts = [np.array([t.node_count for t in m._trees]) for m in (batch, online)]
    assert stats.ks_2samp(*counts).pvalue > 1e-3


def test_weights_survive_pickle_growth_prune_and_merge():
    X = _blobs(200, seed=13)
    w = [0.5, 2.0]
    model = MondrianForestDensity(n_estimators=3, lifetime=5.0, concentration=0.5,
                                  feature_weights=w, random_state=14).fit(X[:150])
    copy = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(copy.feature_weights_, w)
    model.partial_fit(X[150:])
    copy.partial_fit(X[150:])
    np.testing.assert_array_equal(model.score_samples(X), copy.score_samples(X))
    # Trees added later start on the weighted cell too.
    copy.set_params(n_estimators=5)
    copy.partial_fit(X[:5])
    for tree in copy._trees:
        np.testing.assert_array_equal(tree.bounds_array[0], [[0.0, 0.0], w])
    values, expected = _forest_mass_on_domain(copy.prune(2.0), n=50_000)
    assert abs(values.mean() - expected) < 4 * values.std() / np.sqrt(values.size)
    # Merge: the same weights merge (the mean of the parts), other weights are refused.
    other = MondrianForestDensity(n_estimators=2, lifetime=5.0, concentration=0.5,
                                  feature_weights=w, random_state=15).fit(X[:150])
    part = MondrianForestDensity(n_estimators=3, lifetime=5.0, concentration=0.5,
                                 feature_weights=w, random_state=14).fit(X[:150])
    merged = merge_forests([part, other])
    expected = np.logaddexp(np.log(3) + part.score_samples(X), np.log(2) + other.score_samples(X))
    np.testing.assert_allclose(merged.score_samples(X), expected - np.log(5), rtol=1e-9)
    np.testing.assert_array_equal(merged.feature_weights_, w)
    different = MondrianForestDensity(n_estimators=2, lifetime=5.0, concentration=0.5,
                                      feature_weights=[1.0, 1.0], random_state=15).fit(X[:150])
    with pytest.raises(ValueError, match="weights"):
        merge_forests([part, different])
    # A changed weight after fit is refused by partial_fit.
    part.set_params(feature_weights=[1.0, 2.0])
    with pytest.raises(ValueError, match="feature_weights"):
        part.partial_fit(X[:3])


@pytest.mark.parametrize("weights, match", [
    ([0.0, 0.0], "all 0"),
    ([1.0, -1.0], "non-negative"),
    ([1.0, np.inf], "non-negative"),
    ([1.0, 1.0, 1.0], "3 entries"),
    ("relevance", "feature_weights"),
])
def test_bad_weights_raise(weights, match):
    with pytest.raises(ValueError, match=match):
        MondrianForestDensity(n_estimators=2, feature_weights=weights).fit(_blobs(60))


def test_auto_weights_switch_off_uniform_noise_features():
    """Two informative features plus two uniform noise features: the marginal gains over the
    uniform density of B_0 are small for the noise (only its edges inside the margin), the
    weights keep it nearly uncut, and the choice beats uniform weights on the leave-one-out
    likelihood it was made with (and on held-out points)."""
    rng = np.random.RandomState(16)
    X = np.column_stack([_blobs(400, seed=17), rng.uniform(size=(400, 2))])
    model = MondrianForestDensity(n_estimators=10, feature_weights="auto",
                                  random_state=18).fit(X)
    info = model.feature_weights_info_
    assert info["power"] > 0
    w = model.feature_weights_
    assert w[2:].max() < 0.1 * w[:2].min()
    assert info["scores"][list(info["powers"]).index(info["power"])] > info["scores"][0]
    uniform = MondrianForestDensity(n_estimators=10, random_state=18).fit(X)
    test = np.column_stack([_blobs(400, seed=19), rng.uniform(size=(400, 2))])
    assert model.score(test) > uniform.score(test) + 0.1 * len(test)
    # Too few rows: uniform weights, nothing searched.
    small = MondrianForestDensity(n_estimators=2, feature_weights="auto").fit(X[:20])
    np.testing.assert_array_equal(small.feature_weights_, np.ones(4))


@pytest.mark.exact
def test_weighted_lifetime_paths_equal_pruned_models():
    """With weights (one of them 0) the path's validation curve is prune(λ).score_samples and
    its leave-one-out curve the pruned forest's leave-one-out mean (1e-9), both with the
    Jacobian; lifetime="auto" keeps the best leave-one-out lifetime."""
    X = _blobs(200, seed=20, d=3)
    X_val = np.vstack([_blobs(60, seed=21, d=3), [[40.0, 0.0, -40.0]]])
    full = MondrianForestDensity(n_estimators=4, lifetime=20.0, concentration=0.5,
                                 feature_weights=[0.5, 0.0, 2.0], random_state=22).fit(X)
    path = full.lifetime_path(X_val)
    for k in sorted({0, 5, path.n_cuts // 2, path.best_index, path.n_cuts}):
        lifetime = 0.5 * (path.lifetimes[k] + path.upper_lifetimes[k])
        if not np.isfinite(lifetime):
            lifetime = path.lifetimes[k] + 1.0
        pruned = full.prune(float(min(lifetime, full.lifetime_)))
        np.testing.assert_allclose(path.metrics["log_likelihood"][k],
                                   pruned.score_samples(X_val).mean(), rtol=1e-9)
        np.testing.assert_allclose(path.metrics["loo_log_likelihood"][k],
                                   pruned._loo_rows().mean(), rtol=1e-9)
    auto = MondrianForestDensity(n_estimators=4, concentration=0.5, random_state=22,
                                 feature_weights=[0.5, 0.0, 2.0]).fit(X)
    loo = auto.lifetime_path_.metrics["loo_log_likelihood"]
    np.testing.assert_allclose(auto._loo_rows().mean(), loo.max(), rtol=1e-9)
