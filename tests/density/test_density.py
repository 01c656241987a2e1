"""MondrianForestDensity: mass and normalisation, sampling, leave-one-out, online law, API.

Statistical tests use fixed seeds and state their tolerance; each would fail with probability
about 1e-3 or less under a correct implementation for a random seed.
"""

import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from mondrian import MondrianForestDensity
from mondrian.density._full_cell import (
    FullCellTree,
    _loo_log_density_trees,
    leaf_log_masses,
    log_density_trees,
    sample_trees,
)


def _blobs(n, seed=0):
    """A 2-D mixture of two Gaussians with different scales."""
    rng = np.random.RandomState(seed)
    first = rng.uniform(size=n) < 0.5
    return np.where(
        first[:, None],
        rng.normal([-1.0, 0.0], 0.4, size=(n, 2)),
        rng.normal([1.0, 0.5], 0.6, size=(n, 2)),
    )


def _blobs_log_density(X):
    def log_normal(X, mean, sd):
        return (stats.norm.logpdf(X[:, 0], mean[0], sd) + stats.norm.logpdf(X[:, 1], mean[1], sd))

    return np.logaddexp(np.log(0.5) + log_normal(X, [-1.0, 0.0], 0.4),
                        np.log(0.5) + log_normal(X, [1.0, 0.5], 0.6))


def _oracle_log_density(tree, points, u, lifetime, concentration, exclude=None):
    """Tree log density at ``u`` with node counts recomputed from ``points`` (NumPy).

    The counts come from routing every point except ``points[exclude]`` through the tree, so
    with ``exclude=i`` this is the leave-one-out density of point ``i`` on the same partition.
    """
    nodes, bounds = tree.nodes_array, tree.bounds_array

    def is_leaf(j):
        return nodes["left_child"][j] == -1 or nodes["split_time"][j] >= lifetime

    def child(j, x):
        f = nodes["feature"][j]
        return nodes["left_child"][j] if x[f] <= nodes["threshold"][j] else nodes["right_child"][j]

    counts = np.zeros(tree.node_count)
    for k, x in enumerate(points):
        if k == exclude:
            continue
        j = 0
        counts[j] += 1
        while not is_leaf(j):
            j = child(j, x)
            counts[j] += 1
    j, depth, log_mass = 0, 0, 0.0
    while not is_leaf(j):
        f, threshold = nodes["feature"][j], nodes["threshold"][j]
        low, high = bounds[j, 0, f], bounds[j, 1, f]
        left, right = nodes["left_child"][j], nodes["right_child"][j]
        a = concentration * (depth + 1) ** 2
        c = child(j, u)
        fraction = (threshold - low) / (high - low) if c == left else (high - threshold) / (
            high - low)
        log_mass += np.log((a * fraction + counts[c]) / (a + counts[left] + counts[right]))
        j, depth = c, depth + 1
    return log_mass - np.sum(np.log(bounds[j, 1] - bounds[j, 0]))


def _forest_log_density_unit(model, U):
    """Log of the forest density (no background) in unit coordinates."""
    return model._log_mean_trees(log_density_trees, U, model.lifetime_)


# ----------------------------------------------------------------------------- normalisation


@pytest.mark.exact
@pytest.mark.parametrize("lifetime", [3.0, "auto"])
def test_leaf_masses_sum_to_one_and_match_the_density_kernel(lifetime):
    X = _blobs(300)
    model = MondrianForestDensity(n_estimators=5, lifetime=lifetime, random_state=0).fit(X)
    for m, tree in enumerate(model._trees):
        for read_at in [model.lifetime_, 0.5 * model.lifetime_, 0.0]:
            leaves, log_mass, log_volume = leaf_log_masses(tree, read_at, 1.0)
            assert abs(np.exp(log_mass).sum() - 1.0) < 1e-12
            # Density at the centre of each leaf times its volume is the leaf's mass: the exact
            # integral of the tree density over B_0 is one.
            cells = tree.bounds_array[leaves]
            centres = np.ascontiguousarray(cells.mean(axis=1))
            log_p = np.empty(len(leaves))
            log_density_trees([tree], centres, read_at, 1.0, log_p)
            np.testing.assert_allclose(log_p + log_volume, log_mass, rtol=0, atol=1e-10)
            assert abs(np.exp(log_p + log_volume).sum() - 1.0) < 1e-12
        _, log_mass, _ = model._leaf_log_masses(m)
        assert abs(np.exp(log_mass).sum() - 1.0) < 1e-12


@pytest.mark.statistical
def test_forest_density_integrates_to_one_monte_carlo():
    """Uniform Monte Carlo over B_0, within 4 standard errors.

    In unit coordinates the forest density integrates to one; in the units of x the mixture
    integrates over B_0 to (1 - w) + w Q(B_0), with Q(B_0) = (1 - exp(-1/2))^D for the Laplace
    background of scale the width of B_0.
    """
    X = _blobs(400)
    model = MondrianForestDensity(n_estimators=10, lifetime=12.0, random_state=0).fit(X)
    rng = np.random.RandomState(1)
    n = 200_000
    U = rng.uniform(size=(n, 2))
    values = np.exp(_forest_log_density_unit(model, U))
    assert abs(values.mean() - 1.0) < 4 * values.std() / np.sqrt(n)

    low, high = model.domain_
    Xu = low + U * (high - low)
    values = np.exp(model.score_samples(Xu)) * np.prod(high - low)
    w = model.outside_weight_
    expected = (1 - w) + w * (1 - np.exp(-0.5)) ** 2
    assert abs(values.mean() - expected) < 4 * values.std() / np.sqrt(n)


# ----------------------------------------------------------------------------- sampling


def _one_dimensional_model():
    rng = np.random.RandomState(3)
    X = np.concatenate([rng.beta(2, 8, size=150), 0.6 + 0.3 * rng.beta(5, 5, size=100)])
    return MondrianForestDensity(n_estimators=6, lifetime=25.0, random_state=0).fit(X[:, None])


def _exact_cdf_and_density(model):
    """Exact CDF and density of a 1-D model from its leaves (piecewise-linear CDF)."""
    w = model.outside_weight_
    lower, upper = model.domain_[0, 0], model.domain_[1, 0]
    width = upper - lower
    pieces = []
    for m, tree in enumerate(model._trees):
        leaves, log_mass, _ = model._leaf_log_masses(m)
        cells = tree.bounds_array[leaves][:, :, 0]
        pieces.append((cells[:, 0], cells[:, 1], np.exp(log_mass)))
    background = stats.laplace(loc=lower + 0.5 * width, scale=width)

    def cdf(x):
        u = (np.asarray(x, dtype=float)[..., None] - lower) / width
        forest = np.mean([
            (mass * np.clip((u - lo) / (hi - lo), 0.0, 1.0)).sum(axis=-1)
            for lo, hi, mass in pieces
        ], axis=0)
        return (1 - w) * forest + w * background.cdf(x)

    def density(x):
        u = (np.asarray(x, dtype=float)[..., None] - lower) / width
        forest = np.mean([
            (mass / (hi - lo) * ((lo < u) & (u <= hi))).sum(axis=-1) for lo, hi, mass in pieces
        ], axis=0) / width
        return (1 - w) * forest + w * background.pdf(x)

    return cdf, density


@pytest.mark.statistical
def test_sample_follows_the_exact_cdf_of_score_samples_in_one_dimension():
    """In 1-D the density is piecewise constant: its exact CDF comes from the leaves.

    The density built from the leaves equals exp(score_samples) (1e-10 relative), and a KS
    test of 4000 draws against the CDF passes at level 1e-3 (fixed seed).
    """
    model = _one_dimensional_model()
    cdf, density = _exact_cdf_and_density(model)
    grid = np.random.RandomState(0).uniform(-0.5, 1.5, size=500)
    np.testing.assert_allclose(np.exp(model.score_samples(grid[:, None])), density(grid),
                               rtol=1e-10)
    draws = model.sample(4000, random_state=0)[:, 0]
    assert stats.kstest(draws, cdf).pvalue > 1e-3
    # The background share of the draws is w.
    outside = np.mean((draws < model.domain_[0, 0]) | (draws > model.domain_[1, 0]))
    assert outside < 0.01


@pytest.mark.statistical
def test_tree_draws_fall_in_leaves_with_the_leaf_masses():
    """Chi-square over the leaves of one 2-D tree, 20000 draws, level 1e-3 (leaves with an
    expected count below 5 are pooled); within its leaf, each draw is uniform (KS per
    feature on the relative positions, level 1e-3)."""
    X = _blobs(200)
    model = MondrianForestDensity(n_estimators=1, lifetime=6.0, random_state=2).fit(X)
    tree = model._trees[0]
    leaves, log_mass, _ = model._leaf_log_masses(0)
    n = 20_000
    U = np.empty((n, 2))
    sample_trees([tree], np.array([n], dtype=np.intp), np.array([7], dtype=np.uint64),
                 model.lifetime_, model.concentration_, U)
    reached = tree.apply(U, model.lifetime_)
    observed = np.array([np.sum(reached == leaf) for leaf in leaves])
    assert observed.sum() == n
    expected = n * np.exp(log_mass)
    small = expected < 5
    if small.any():  # pooled (an empty pool would be a 0/0 cell)
        observed = np.r_[observed[~small], observed[small].sum()]
        expected = np.r_[expected[~small], expected[small].sum()]
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    cells = tree.bounds_array[reached]
    relative = (U - cells[:, 0]) / (cells[:, 1] - cells[:, 0])
    for d in range(2):
        assert stats.kstest(relative[:, d], "uniform").pvalue > 1e-3


def test_sample_is_reproducible_and_shaped():
    model = MondrianForestDensity(n_estimators=4, lifetime=5.0, random_state=0).fit(_blobs(50))
    a = model.sample(17, random_state=3)
    np.testing.assert_array_equal(a, model.sample(17, random_state=3))
    assert a.shape == (17, 2) and np.all(np.isfinite(a))
    assert model.sample(0).shape == (0, 2)
    with pytest.raises(ValueError, match="n_samples"):
        model.sample(-1)


# ----------------------------------------------------------------------------- leave-one-out


@pytest.mark.exact
@pytest.mark.parametrize("fraction", [1.0, 0.4])
def test_leave_one_out_matches_a_numpy_oracle(fraction):
    X = _blobs(120, seed=4)
    model = MondrianForestDensity(n_estimators=3, lifetime=10.0, concentration=0.7,
                                  random_state=0).fit(X)
    U = model._store.X
    lifetime = fraction * model.lifetime_
    for tree in model._trees:
        loo = np.empty(len(U))
        _loo_log_density_trees([tree], U, lifetime, 0.7, loo)
        full = np.empty(len(U))
        log_density_trees([tree], U, lifetime, 0.7, full)
        for i in range(0, len(U), 7):
            expected = _oracle_log_density(tree, U, U[i], lifetime, 0.7, exclude=i)
            assert abs(loo[i] - expected) < 1e-10
            expected = _oracle_log_density(tree, U, U[i], lifetime, 0.7)
            assert abs(full[i] - expected) < 1e-10
        # Removing a point lowers its own density.
        assert np.all(loo < full)


def _interval_lifetime(path, k):
    return 0.5 * (path.lifetimes[k] + path.upper_lifetimes[k])


def test_auto_lifetime_prunes_to_the_best_leave_one_out_lifetime():
    X = _blobs(150, seed=5)
    model = MondrianForestDensity(n_estimators=4, max_lifetime=40.0, random_state=0).fit(X)
    path = model.lifetime_path_
    assert path.criterion == "loo_log_likelihood"
    assert path.upper_lifetimes[-1] == 40.0
    assert model.lifetime_ == path.best_lifetime
    assert path.metrics["loo_log_likelihood"][path.best_index] == np.max(
        path.metrics["loo_log_likelihood"]
    )
    for tree in model._trees:
        nodes = tree.nodes_array
        assert tree.lifetime == model.lifetime_
        assert np.all(nodes["split_time"][nodes["left_child"] == -1] == model.lifetime_)


@pytest.mark.exact
def test_path_leave_one_out_equals_pruned_forests():
    """The path's leave-one-out curve equals, at every lifetime, the leave-one-out
    log-likelihood of the pruned forest recomputed from scratch (1e-9 relative)."""
    X = _blobs(150, seed=5)
    full = MondrianForestDensity(n_estimators=4, lifetime=40.0, random_state=0).fit(X)
    path = full.lifetime_path()
    log_volume = np.sum(np.log(full._width))
    assert path.n_cuts > 200
    for k in sorted({0, 1, 10, path.n_cuts // 2, path.best_index, path.n_cuts}):
        lifetime = _interval_lifetime(path, k)
        pruned = full.prune(float(lifetime))
        U = pruned._store.X
        total = pruned._log_mean_trees(_loo_log_density_trees, U, lifetime).mean() - log_volume
        np.testing.assert_allclose(path.metrics["loo_log_likelihood"][k], total, rtol=1e-9)
    # The same numbers from the other end.
    backward = full.lifetime_path(direction="backward")
    np.testing.assert_allclose(
        backward.metrics["loo_log_likelihood"], path.metrics["loo_log_likelihood"], rtol=1e-9
    )


@pytest.mark.exact
def test_path_validation_curve_equals_pruned_score_samples():
    X = _blobs(200, seed=6)
    X_val = np.vstack([_blobs(80, seed=7), [[50.0, -50.0]]])  # one point far outside B_0
    full = MondrianForestDensity(n_estimators=5, lifetime=30.0, random_state=1).fit(X)
    path = full.lifetime_path(X_val)
    assert path.criterion == "log_likelihood"
    assert np.all(np.isfinite(path.metrics["log_likelihood"]))
    for k in sorted({0, 3, path.n_cuts // 3, path.best_index, path.n_cuts}):
        pruned = full.prune(float(_interval_lifetime(path, k)))
        expected = pruned.score_samples(X_val).mean()
        np.testing.assert_allclose(path.metrics["log_likelihood"][k], expected, rtol=1e-9)
    assert path.metrics["log_likelihood"][path.best_index] > path.metrics["log_likelihood"][0]
    with pytest.raises(ValueError, match="direction"):
        full.lifetime_path(X_val, direction="up")


# ----------------------------------------------------------------------------- online law


def _law_data():
    """Two batches in [0, 1]^2; the first holds the corners, so B_0 (margin 0) is the cube."""
    rng = np.random.RandomState(0)
    first = np.vstack([[[0.0, 0.0], [1.0, 1.0]], rng.uniform(0.0, 0.5, size=(15, 2))])
    second = rng.uniform(0.5, 1.0, size=(15, 2))
    return first, second


def _law_statistics(model, x0):
    """Per tree: node count, leaves holding data, root split time and dimension, and the
    distance from ``x0`` to the lower face (feature 0) of its cell."""
    out = {key: [] for key in ("nodes", "data_leaves", "root_time", "root_dim", "distance")}
    for tree in model._trees:
        nodes = tree.nodes_array
        leaf = nodes["left_child"] == -1
        out["nodes"].append(tree.node_count)
        out["data_leaves"].append(np.sum(leaf & (nodes["n_node_samples"] > 0)))
        out["root_time"].append(nodes["split_time"][0])
        out["root_dim"].append(nodes["feature"][0])
        j = tree.apply(x0[None, :])[0]
        out["distance"].append(x0[0] - tree.bounds_array[j, 0, 0])
    return {key: np.array(value) for key, value in out.items()}


def _distance_chi_square(distance, lifetime, x0):
    """P-value of the exact law of the distance to the lower face: min(Exp(lifetime), x0)
    (the Mondrian restricted to an axis-parallel line is a 1-D Mondrian)."""
    edges = np.r_[stats.expon(scale=1 / lifetime).ppf(np.linspace(0, 0.9, 10)), x0]
    probabilities = np.r_[np.diff(1 - np.exp(-lifetime * edges)), np.exp(-lifetime * x0)]
    observed = np.r_[np.histogram(distance[distance < x0], edges)[0], np.sum(distance >= x0)]
    return stats.chisquare(observed, probabilities * len(distance)).pvalue


@pytest.mark.statistical
def test_partial_fit_has_the_law_of_fit():
    """400 trees each: batch fit vs fit on the first batch + partial_fit on the second.

    Two-sample KS tests (node counts, leaves with data) and exact laws (root split time
    ~ Exp(D), uniform root dimension on the square, distance from a point of the second batch
    to its cell's face) all pass at level 1e-3 with these seeds.
    """
    first, second = _law_data()
    lifetime, n_trees = 6.0, 400
    x0 = second[0]
    batch = MondrianForestDensity(n_estimators=n_trees, lifetime=lifetime, margin=0.0,
                                  random_state=1).fit(np.vstack([first, second]))
    online = MondrianForestDensity(n_estimators=n_trees, lifetime=lifetime, margin=0.0,
                                   random_state=2).fit(first).partial_fit(second)
    np.testing.assert_array_equal(batch.domain_, online.domain_)
    a, b = _law_statistics(batch, x0), _law_statistics(online, x0)
    for key in ("nodes", "data_leaves", "distance"):
        assert stats.ks_2samp(a[key], b[key]).pvalue > 1e-3, key
    for s in (a, b):
        assert stats.kstest(s["root_time"], stats.expon(scale=0.5).cdf).pvalue > 1e-3
        assert stats.chisquare(np.bincount(s["root_dim"], minlength=2)).pvalue > 1e-3
        assert _distance_chi_square(s["distance"], lifetime, x0[0]) > 1e-3


def test_partial_fit_in_small_batches_gives_a_valid_model():
    X = _blobs(300, seed=6)
    model = MondrianForestDensity(n_estimators=5, lifetime=8.0, random_state=0)
    for start in range(0, len(X), 7):
        model.partial_fit(X[start : start + 7])
    n_inside = model._store.n_samples
    assert model.n_samples_seen_ == len(X)
    assert model.outside_weight_ == pytest.approx(
        (len(X) - n_inside + 0.5) / (len(X) + 1))
    for tree in model._trees:
        _check_tree_invariants(tree, model._store.X)
        _, log_mass, _ = leaf_log_masses(tree, model.lifetime_, 1.0)
        assert abs(np.exp(log_mass).sum() - 1.0) < 1e-12
    X_test = _blobs(500, seed=7)
    assert model.score_samples(X_test).mean() > -3.0
    # Points outside B_0 raise the background weight, never the trees' counts.
    before = [tree.nodes_array["n_node_samples"][0] for tree in model._trees]
    model.partial_fit(np.full((3, 2), 50.0))
    assert [tree.nodes_array["n_node_samples"][0] for tree in model._trees] == before
    assert model.outside_weight_ == pytest.approx(
        (len(X) + 3 - n_inside + 0.5) / (len(X) + 4))


# ----------------------------------------------------------------------------- API behaviour


def test_log_density_is_finite_far_outside_the_domain():
    model = MondrianForestDensity(n_estimators=3, lifetime=5.0, random_state=0).fit(_blobs(80))
    X = np.array([[0.0, 0.0], [1e3, -1e3], [1e150, 3.0], [1.7e308, -1.7e308]])
    log_p = model.score_samples(X)
    assert np.all(np.isfinite(log_p))
    assert log_p[0] > log_p[1] > log_p[2] >= log_p[3]


def test_pickle_round_trip_and_resumed_training():
    X = _blobs(200, seed=8)
    model = MondrianForestDensity(n_estimators=5, random_state=0).fit(X[:150])
    again = pickle.loads(pickle.dumps(model))
    X_test = _blobs(100, seed=9)
    np.testing.assert_array_equal(again.score_samples(X_test), model.score_samples(X_test))
    model.partial_fit(X[150:])
    again.partial_fit(X[150:])
    np.testing.assert_array_equal(again.score_samples(X_test), model.score_samples(X_test))
    assert type(again._trees[0]) is FullCellTree
    state = model.__getstate__()
    state["_mondrian_state_version"] = 99
    with pytest.raises(ValueError, match="state version 99"):
        MondrianForestDensity().__setstate__(state)


def test_results_do_not_depend_on_n_jobs():
    X = _blobs(200, seed=10)
    X_test = _blobs(50, seed=11)
    scores = [MondrianForestDensity(n_estimators=40, n_jobs=n_jobs, random_state=0)
              .fit(X).score_samples(X_test) for n_jobs in (None, 2)]
    np.testing.assert_array_equal(scores[0], scores[1])


@pytest.mark.exact
def test_prune_reads_the_forest_at_a_smaller_lifetime():
    X = _blobs(150, seed=12)
    model = MondrianForestDensity(n_estimators=4, lifetime=9.0, random_state=0).fit(X)
    before = pickle.dumps(model)
    pruned = model.prune(3.0)
    assert pickle.dumps(model) == before
    assert pruned.lifetime == pruned.lifetime_ == 3.0
    X_test = _blobs(60, seed=13)
    U, inside = model._to_unit(X_test)
    np.testing.assert_allclose(
        _forest_log_density_unit(pruned, U[inside]),
        model._log_mean_trees(log_density_trees, U[inside], 3.0),
        rtol=0, atol=1e-12,
    )
    pruned.partial_fit(X_test)  # an ordinary fitted estimator
    for bad in (0.0, 10.0, np.nan, "1"):
        with pytest.raises(ValueError, match="lifetime"):
            model.prune(bad)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"lifetime": 0.0}, "lifetime"),
        ({"lifetime": -1.0}, "lifetime"),
        ({"lifetime": np.inf}, "lifetime"),
        ({"lifetime": np.nan}, "lifetime"),
        ({"concentration": 0.0}, "concentration"),
        ({"margin": -0.1}, "margin"),
        ({"max_lifetime": np.inf}, "max_lifetime"),
    ],
)
def test_invalid_parameters_raise_and_leave_the_model_unchanged(params, match):
    X = _blobs(60)
    model = MondrianForestDensity(n_estimators=3, lifetime=4.0, random_state=0).fit(X)
    before = pickle.dumps(model)
    model.set_params(**params)
    with pytest.raises(ValueError, match=match):
        model.fit(X)
    model.set_params(lifetime=4.0, concentration="auto", margin=0.1, max_lifetime=None)
    assert pickle.dumps(model) == before


def test_invalid_input_raises_and_leaves_the_model_unchanged():
    X = _blobs(60)
    model = MondrianForestDensity(n_estimators=3, lifetime=4.0, random_state=0).fit(X)
    before = pickle.dumps(model)
    bad_nan = X[:5].copy()
    bad_nan[2, 1] = np.nan
    bad_inf = X[:5].copy()
    bad_inf[0, 0] = np.inf
    for method in (model.fit, model.partial_fit, model.score_samples):
        with pytest.raises(ValueError, match="NaN"):
            method(bad_nan)
        with pytest.raises(ValueError, match="infinity"):
            method(bad_inf)
        if method != model.fit:  # a fit on other features is a new model
            with pytest.raises(ValueError, match="features"):
                method(X[:, :1])
        assert pickle.dumps(model) == before
    with pytest.raises(ValueError, match="finite lifetime"):
        FullCellTree(2, 0, np.inf)
    with pytest.raises(ValueError, match="overflows"):
        model.fit(np.array([[-1.7e308], [1.7e308]]))
    assert pickle.dumps(model) == before


# ----------------------------------------------------------------------------- structure


def _check_tree_invariants(tree, U):
    """Structural invariants of a full-cell tree holding the points ``U``."""
    nodes, bounds = tree.nodes_array, tree.bounds_array
    left, right, parent = nodes["left_child"], nodes["right_child"], nodes["parent"]
    internal = np.flatnonzero(left != -1)
    np.testing.assert_array_equal(bounds[0], np.vstack([np.zeros(tree.n_features),
                                                        np.ones(tree.n_features)]))
    # Every point in exactly one leaf, the one it is routed to.
    assignment = tree.leaf_sample_assignment()
    np.testing.assert_array_equal(assignment, tree.apply(U))
    assert np.all(left[assignment] == -1)
    # Each node's cell holds the points below it, and counts them.
    counts = np.zeros(tree.node_count, dtype=int)
    for i, j in enumerate(assignment):
        while j != -1:
            assert np.all(bounds[j, 0] <= U[i]) and np.all(U[i] <= bounds[j, 1])
            counts[j] += 1
            j = parent[j]
    np.testing.assert_array_equal(counts, nodes["n_node_samples"])
    # Only cells with data are cut; empty cells are never refined.
    assert np.all(nodes["n_node_samples"][internal] > 0)
    # Split times increase with depth; leaves carry the lifetime.
    children = np.r_[left[internal], right[internal]]
    parents = np.r_[internal, internal]
    assert np.all(nodes["split_time"][children] > nodes["split_time"][parents])
    assert np.all(nodes["split_time"][internal] < tree.lifetime)
    assert np.all(nodes["split_time"][left == -1] == tree.lifetime)
    # Children cells partition the parent cell at the threshold.
    for j in internal:
        f, threshold = nodes["feature"][j], nodes["threshold"][j]
        assert bounds[j, 0, f] < threshold < bounds[j, 1, f]
        expected_left, expected_right = bounds[j].copy(), bounds[j].copy()
        expected_left[1, f] = threshold
        expected_right[0, f] = threshold
        np.testing.assert_array_equal(bounds[left[j]], expected_left)
        np.testing.assert_array_equal(bounds[right[j]], expected_right)


@given(
    data=st.data(),
    n_features=st.integers(1, 3),
    n=st.integers(1, 30),
    lifetime=st.floats(0.1, 30.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_tree_structure_properties(data, n_features, n, lifetime, seed):
    X = np.array(data.draw(st.lists(
        st.lists(st.floats(-5.0, 5.0), min_size=n_features, max_size=n_features),
        min_size=n, max_size=n,
    )))
    split = data.draw(st.integers(1, n))
    model = MondrianForestDensity(n_estimators=2, lifetime=lifetime, random_state=seed)
    model.fit(X[:split])
    if split < n:
        model.partial_fit(X[split:])
    for tree in model._trees:
        _check_tree_invariants(tree, model._store.X)


# ----------------------------------------------------------------------------- accuracy


@pytest.mark.statistical
def test_held_out_likelihood_on_a_gaussian_mixture():
    """1000 training points of a 2-D mixture: the held-out mean log-likelihood is within 0.35
    nats of the true density's (about 0.18 with these seeds) and 0.7 above the uniform density
    on B_0."""
    X, X_test = _blobs(1000, seed=0), _blobs(2000, seed=1)
    model = MondrianForestDensity(random_state=0).fit(X)
    score = model.score_samples(X_test).mean()
    truth = _blobs_log_density(X_test).mean()
    uniform = -np.log(np.prod(model.domain_[1] - model.domain_[0]))
    assert score > truth - 0.35
    assert score > uniform + 0.7
    assert model.score(X_test) == pytest.approx(score * len(X_test))


def test_auto_concentration_maximises_the_leave_one_out_likelihood():
    from mondrian.density.estimator import CONCENTRATIONS

    X = _blobs(120, seed=8)
    model = MondrianForestDensity(n_estimators=3, lifetime=10.0, random_state=0).fit(X)
    assert model.concentration_ in CONCENTRATIONS
    assert model.lifetime_ == 10.0  # a fixed lifetime stays
    scores = []
    for g in CONCENTRATIONS:
        fixed = MondrianForestDensity(n_estimators=3, lifetime=10.0, concentration=g,
                                      random_state=0).fit(X)
        scores.append(fixed.lifetime_path().metrics["loo_log_likelihood"][-1])
    assert model.concentration_ == CONCENTRATIONS[int(np.argmax(scores))]
    # Both chosen together: the pair is the best over the grid and every lifetime.
    both = MondrianForestDensity(n_estimators=3, max_lifetime=10.0, random_state=0).fit(X)
    best = both.lifetime_path_.metrics["loo_log_likelihood"].max()
    assert best >= max(scores) - 1e-12


@pytest.mark.exact
def test_backward_path_keeps_its_precision_in_high_dimension():
    """Removing cuts makes large densities fall: running sums by difference would cancel.
    The backward path must equal the forward one (and stay finite)."""
    # Sized to stay small (about 1e5 cuts, 0.3 GB) while a running sum updated only by
    # difference still misses the tolerance below by two orders of magnitude.
    rng = np.random.RandomState(0)
    X = rng.standard_t(2, size=(100, 40))  # heavy tails: a huge box, tiny crowded cells
    X_val = rng.standard_t(2, size=(50, 40))
    model = MondrianForestDensity(n_estimators=3, lifetime=200.0, concentration=1e-5,
                                  random_state=0).fit(X)
    forward = model.lifetime_path(X_val)
    backward = model.lifetime_path(X_val, direction="backward")
    for name in ("loo_log_likelihood", "log_likelihood"):
        assert np.all(np.isfinite(backward.metrics[name]))
        np.testing.assert_allclose(backward.metrics[name], forward.metrics[name], rtol=1e-9)
    pruned = model.prune(float(forward.upper_lifetimes[0]))
    np.testing.assert_allclose(backward.metrics["log_likelihood"][0],
                               pruned.score_samples(X_val).mean(), rtol=1e-9)
