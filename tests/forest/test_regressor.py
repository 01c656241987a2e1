"""Mondrian forest regression: exact Gaussian belief propagation, KRR link, calibration."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mondrian import MondrianForestRegressor, MondrianTreeRegressor
from mondrian.core._tree import MondrianTree
from mondrian.forest._gaussian import GaussianPrior, node_posteriors, upward_messages


def _tree_on(X, y, lifetime, seed, min_samples_split=1):
    tree = MondrianTree(X.shape[1], 3, lifetime, min_samples_split, False, seed)
    tree.fit(X, np.column_stack([np.ones_like(y), y, y * y]), np.arange(len(X), dtype=np.intp))
    return tree


def _brute_force(tree, y, params, lifetime):
    """Posterior of every node mean of the pruned tree by dense joint-Gaussian conditioning."""
    nodes = tree.nodes_array

    def psi(t):
        if np.isinf(t):
            return params.sigma2
        return params.sigma2 / (1 + np.exp(-params.rate * t))

    def is_leaf(j):
        return nodes["left_child"][j] == -1 or nodes["split_time"][j] >= lifetime

    # Nodes of the pruned tree with their parent and edge variance.
    parent = {0: -1}
    time = {}
    order = [0]
    for j in order:
        time[j] = lifetime if is_leaf(j) else nodes["split_time"][j]
        if not is_leaf(j):
            for child in (nodes["left_child"][j], nodes["right_child"][j]):
                parent[child] = j
                order.append(child)
    kept = sorted(order)
    pos = {j: k for k, j in enumerate(kept)}
    edge = np.array([psi(time[j]) - psi(time[parent[j]] if parent[j] >= 0 else 0.0) for j in kept])
    ancestors = []
    for j in kept:
        chain, a = [], j
        while a >= 0:
            chain.append(pos[a])
            a = parent[a]
        ancestors.append(set(chain))
    n = len(kept)
    cov_mu = np.array(
        [[edge[list(ancestors[a] & ancestors[b])].sum() for b in range(n)] for a in range(n)]
    )
    # Leaf of every training point in the pruned tree: its first ancestor that was kept.
    point_node = []
    for j in tree.leaf_sample_assignment():
        while j not in pos:
            j = nodes["parent"][j]
        assert is_leaf(j)
        point_node.append(pos[j])
    point_node = np.array(point_node)
    cov_y = cov_mu[np.ix_(point_node, point_node)] + params.noise * np.eye(len(y))
    cov_mu_y = cov_mu[:, point_node]
    gain = np.linalg.solve(cov_y, cov_mu_y.T).T
    mean = params.mean0 + gain @ (y - params.mean0)
    var = np.diag(cov_mu - gain @ cov_mu_y.T)
    _, logdet = np.linalg.slogdet(2 * np.pi * cov_y)
    resid = y - params.mean0
    log_ml = -0.5 * (logdet + resid @ np.linalg.solve(cov_y, resid))
    return kept, mean, var, log_ml


@pytest.mark.exact
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("lifetime", [2.0, np.inf])
def test_belief_propagation_matches_dense_conditioning(seed, lifetime):
    rng = np.random.RandomState(seed)
    X = rng.uniform(size=(9, 2))
    y = rng.normal(size=9)
    tree = _tree_on(X, y, np.inf, seed)
    params = GaussianPrior(
        mean0=0.3, sigma2=1.7, rate=2.5, noise=0.4, prior_var=0.85, hierarchical=True
    )
    read_at = lifetime if np.isfinite(lifetime) else np.inf
    post_mean, post_var = node_posteriors(tree, params, None if np.isinf(read_at) else read_at)
    kept, mean, var, log_ml = _brute_force(tree, y, params, read_at)
    np.testing.assert_allclose(post_mean[kept], mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(post_var[kept], var, rtol=1e-10, atol=1e-12)
    _, _, bp_log_ml = upward_messages(tree, params, None if np.isinf(read_at) else read_at)
    np.testing.assert_allclose(bp_log_ml, log_ml, rtol=1e-10)


@pytest.mark.exact
def test_training_points_predict_leaf_posterior():
    """A training point lies in every box on its path, so it never branches off."""
    rng = np.random.RandomState(1)
    X = rng.uniform(size=(30, 2))
    y = rng.normal(size=30)
    model = MondrianTreeRegressor(
        random_state=0,
        noise_variance=0.2,
        prior_variance=0.5,
        sigmoid_rate=3.0,
        feature_scaling=None,
    ).fit(X, y)
    params = model._posterior().params
    tree = model._trees[0]
    post_mean, post_var = node_posteriors(tree, params)
    leaves = tree.apply(X)
    mean, std = model.predict(X, return_std=True)
    scale, offset = model._y_scaler.scale, model._y_scaler.offset
    np.testing.assert_allclose(mean, post_mean[leaves] * scale + offset, rtol=1e-10)
    np.testing.assert_allclose(std**2, (post_var[leaves] + params.noise) * scale**2, rtol=1e-10)


@pytest.mark.exact
def test_single_tree_independent_leaves_equal_kernel_ridge():
    """Report App. B.1: one tree with independent leaves is ridge regression on leaf indicators
    with delta^2 = noise variance / prior variance (prior mean 0)."""
    rng = np.random.RandomState(3)
    X = rng.uniform(size=(80, 3))
    y = np.sin(4 * X[:, 0]) + 0.1 * rng.normal(size=80)
    y -= y.mean()
    noise, prior = 0.05, 0.8
    model = MondrianTreeRegressor(
        lifetime=3.0,
        smoothing="independent",
        noise_variance=noise,
        prior_variance=prior,
        random_state=0,
    ).fit(X, y)
    leaves = model.apply(X)
    _, columns = np.unique(leaves, return_inverse=True)
    Z = np.eye(columns.max() + 1)[columns]
    delta2 = noise / prior
    weights = np.linalg.solve(Z.T @ Z + delta2 * np.eye(Z.shape[1]), Z.T @ y)
    np.testing.assert_allclose(model.predict(X), Z @ weights, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("smoothing", ["hierarchical", "independent"])
def test_far_from_data_std_tends_to_prior(smoothing):
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(200, 2))
    y = 3 * X[:, 0] + rng.normal(scale=0.2, size=200)
    model = MondrianForestRegressor(
        n_estimators=10, lifetime=5.0, smoothing=smoothing, random_state=0
    ).fit(X, y)
    hyper = model.hyperparameters_
    prior_var = hyper["prior_variance"]
    if smoothing == "hierarchical":
        # The leaf prior variance at lifetime L is psi(L) - psi(0) = 2 v (sigmoid(g L) - 1/2).
        prior_var *= 2 * (1 / (1 + np.exp(-hyper["sigmoid_rate"] * 5.0)) - 0.5)
    prior_std = np.sqrt(prior_var + hyper["noise_variance"])
    mean, std = model.predict([[1e4, -1e4], [0.5, 0.5]], return_std=True)
    np.testing.assert_allclose(std[0], prior_std, rtol=1e-4)
    np.testing.assert_allclose(mean[0], hyper["prior_mean"], rtol=1e-4)
    assert std[1] < std[0]


@pytest.mark.statistical
def test_interval_coverage_on_a_known_function():
    """Central 95% intervals on held-out draws of a known noisy function.

    A single tree's predictive is calibrated: coverage 0.95 +- 0.03 (the 2,000 test points give a
    binomial standard error of 0.005; the rest is model error). The forest's variance scales
    are chosen on held-out points (the law of total variance alone adds the whole spread of the
    tree means while averaging them shrinks the error): coverage 0.95 +- 0.03 too.
    """
    rng = np.random.RandomState(0)

    def f(X):
        return np.sin(6 * X[:, 0]) + X[:, 1] ** 2

    X = rng.uniform(size=(1000, 2))
    y = f(X) + 0.3 * rng.normal(size=1000)
    X_test = rng.uniform(size=(2000, 2))
    y_test = f(X_test) + 0.3 * rng.normal(size=2000)
    forest = MondrianForestRegressor(n_estimators=30, random_state=0).fit(X, y)
    mean, std = forest.predict(X_test, return_std=True)
    coverage = np.mean(np.abs(y_test - mean) <= 1.96 * std)
    assert 0.92 <= coverage <= 0.98
    tree_cover = []
    for seed in range(5):
        tree = MondrianTreeRegressor(random_state=seed).fit(X, y)
        mean, std = tree.predict(X_test, return_std=True)
        tree_cover.append(np.mean(np.abs(y_test - mean) <= 1.96 * std))
    assert abs(np.mean(tree_cover) - 0.95) <= 0.03


def test_units_of_y_only_scale_the_outputs():
    rng = np.random.RandomState(2)
    X = rng.uniform(size=(100, 3))
    y = X @ [1.0, -2.0, 0.5] + 0.1 * rng.normal(size=100)
    # Label-blind: weights searched in other units agree only to float noise (about 1e-4).
    a = MondrianForestRegressor(n_estimators=5, feature_weights=None, random_state=0).fit(X, y)
    b = MondrianForestRegressor(n_estimators=5, feature_weights=None, random_state=0).fit(
        X, 1e6 * y - 3e7)
    mean_a, std_a = a.predict(X[:10] + 0.05, return_std=True)
    mean_b, std_b = b.predict(X[:10] + 0.05, return_std=True)
    np.testing.assert_allclose(mean_b, 1e6 * mean_a - 3e7, rtol=1e-9)
    np.testing.assert_allclose(std_b, 1e6 * std_a, rtol=1e-9)


def test_partial_fit_in_batches_matches_fit_in_quality():
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(600, 2))
    y = np.sin(6 * X[:, 0]) + 0.1 * rng.normal(size=600)
    X_test = rng.uniform(size=(500, 2))
    y_test = np.sin(6 * X_test[:, 0])
    # Averaged over 4 seeds (the same ones on both sides): the hyperparameters the online
    # model chooses on its first 50-point batch vary from seed to seed.
    rmse_batch, rmse_online = [], []
    for seed in range(4):
        batch = MondrianForestRegressor(n_estimators=20, random_state=seed).fit(X, y)
        online = MondrianForestRegressor(n_estimators=20, random_state=seed)
        for start in range(0, 600, 50):
            online.partial_fit(X[start : start + 50], y[start : start + 50])
        rmse_batch.append(np.sqrt(np.mean((batch.predict(X_test) - y_test) ** 2)))
        rmse_online.append(np.sqrt(np.mean((online.predict(X_test) - y_test) ** 2)))
        assert online.n_samples_seen_ == 600
    assert abs(np.mean(rmse_online) - np.mean(rmse_batch)) < 0.25 * np.mean(rmse_batch)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(2, 25),
    d=st.integers(1, 3),
    shift=st.floats(-1e3, 1e3),
    seed=st.integers(0, 1000),
    lifetime=st.sampled_from([0.5, 3.0, np.inf]),
)
def test_properties_std_positive_finite_and_shift_invariant(n, d, shift, seed, lifetime):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-5, 5, size=(n, d))
    y = rng.normal(size=n)
    X_test = rng.uniform(-10, 10, size=(7, d))
    a = MondrianForestRegressor(n_estimators=3, lifetime=lifetime, random_state=seed)
    b = MondrianForestRegressor(n_estimators=3, lifetime=lifetime, random_state=seed)
    mean_a, std_a = a.fit(X, y).predict(X_test, return_std=True)
    mean_b, std_b = b.fit(X, y + shift).predict(X_test, return_std=True)
    assert np.all(np.isfinite(mean_a)) and np.all(np.isfinite(std_a))
    assert np.all(std_a > 0)
    np.testing.assert_allclose(mean_b, mean_a + shift, atol=1e-7 * (1 + abs(shift)))
    np.testing.assert_allclose(std_b, std_a, rtol=1e-6, atol=1e-9)


def test_held_out_choice_of_the_hyperparameters():
    """On the first batch, noise share and rate come from a held-out probe; fixed values and
    small batches skip it; the choice is reproducible and survives online updates."""
    from mondrian.forest._hyperparameters import HELD_OUT_NOISE_SHARES, HELD_OUT_RATE_MULTIPLIERS

    rng = np.random.RandomState(3)
    X = rng.uniform(size=(300, 2))
    y = np.sin(6 * X[:, 0]) + 0.1 * rng.normal(size=300)
    model = MondrianForestRegressor(n_estimators=6, random_state=0).fit(X, y)
    share, multiplier, scale, spread, floor = model._hyper_choice
    assert share in HELD_OUT_NOISE_SHARES and multiplier in HELD_OUT_RATE_MULTIPLIERS
    assert floor == 0.0  # no duplicated input (see test_noise_floor)
    again = MondrianForestRegressor(n_estimators=6, random_state=0).fit(X, y)
    assert again._hyper_choice == model._hyper_choice
    hyper = model.hyperparameters_
    assert np.isclose(hyper["noise_variance"], scale * share * np.var(y), rtol=1e-9)
    # The noise share is applied to the target variance of all the data seen so far.
    model.partial_fit(X[:50] + 0.01, 2 * y[:50])
    assert model._hyper_choice == (share, multiplier, scale, spread, floor)
    n, s1, s2 = model._y_sums
    var_std = s2 / n - (s1 / n) ** 2
    expected = scale * share * var_std * model._y_scaler.scale ** 2
    assert np.isclose(model.hyperparameters_["noise_variance"], expected, rtol=1e-9)
    fixed = MondrianForestRegressor(n_estimators=3, noise_variance=0.01, sigmoid_rate=2.0,
                                    random_state=0).fit(X, y)
    assert fixed._hyper_choice is None
    small = MondrianForestRegressor(n_estimators=3, random_state=0).fit(X[:30], y[:30])
    assert small._hyper_choice is None
