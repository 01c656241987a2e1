"""One recursion for the upward messages: ``upward_messages`` is the one-prior case of
``upward_messages_grid`` (bit for bit), and its log marginal likelihood matches a dense
NumPy computation in both models, with unlabelled points and at a pruning lifetime. The
prediction kernel (node records filled once per call) matches a plain walk down each path and
gives a row the same bits whatever the other rows of the call."""

import numpy as np
import pytest

from mondrian import MondrianForestRegressor, MondrianTreeRegressor
from mondrian.core._tree import MondrianTree
from mondrian.forest._gaussian import (
    GaussianPrior,
    predict_moments_trees,
    upward_messages,
    upward_messages_grid,
)

from _reference import TreeArrays, decision_path, distance_to_box, separation_probability


def _tree(seed, n=14, unlabelled=3):
    """A tree on ``n`` points, the last ``unlabelled`` of them without a target (count 0)."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(size=(n, 2))
    y = rng.normal(size=n)
    labelled = np.arange(n) < n - unlabelled
    stats = np.column_stack([np.ones(n), y, y * y]) * labelled[:, None]
    tree = MondrianTree(2, 3, np.inf, 1, False, seed)
    tree.fit(X, stats, np.arange(n, dtype=np.intp))
    return tree, y, labelled


def _pruned_leaf_paths(tree, lifetime):
    """Root-to-leaf path of every point in the tree pruned at ``lifetime``."""
    nodes = tree.nodes_array
    paths = []
    for leaf in tree.leaf_sample_assignment():
        chain = [leaf]
        while nodes["parent"][chain[-1]] >= 0:
            chain.append(nodes["parent"][chain[-1]])
        chain = chain[::-1]
        for depth, j in enumerate(chain):  # cut at the first node that is a pruned leaf
            if nodes["left_child"][j] == -1 or nodes["split_time"][j] >= lifetime:
                chain = chain[: depth + 1]
                break
        paths.append(chain)
    return paths


def _dense_log_ml(tree, y, labelled, prior, lifetime):
    """log N(y; mean0, cov) of the labelled targets, cov built point pair by point pair."""
    nodes = tree.nodes_array
    paths = [p for p, keep in zip(_pruned_leaf_paths(tree, lifetime), labelled, strict=True)
             if keep]
    y = y[labelled]
    n = len(y)

    def psi(t):
        return prior.sigma2 if np.isinf(t) else prior.sigma2 / (1.0 + np.exp(-prior.rate * t))

    cov = np.empty((n, n))
    for a in range(n):
        for b in range(n):
            same = paths[a][-1] == paths[b][-1]
            if prior.hierarchical:
                # shared edges: from the virtual node (time 0) to the deepest common node
                common = [i for i, j in zip(paths[a], paths[b], strict=False) if i == j][-1]
                leaf = nodes["left_child"][common] == -1 or nodes["split_time"][common] >= lifetime
                t = lifetime if leaf else nodes["split_time"][common]
                cov[a, b] = psi(t) - psi(0.0)
            else:
                cov[a, b] = prior.prior_var if same else 0.0
    cov += prior.noise * np.eye(n)
    resid = y - prior.mean0
    _, logdet = np.linalg.slogdet(2 * np.pi * cov)
    return -0.5 * (logdet + resid @ np.linalg.solve(cov, resid))


def _priors(hierarchical, rate):
    return [GaussianPrior(0.3, noise, 0.85, 1.7, rate, hierarchical) for noise in (0.05, 0.4)]


@pytest.mark.exact
@pytest.mark.parametrize("hierarchical", [True, False])
@pytest.mark.parametrize("rate", [0.0, 2.5])
@pytest.mark.parametrize("seed", range(4))
def test_one_prior_messages_are_the_grid_at_one_prior(hierarchical, rate, seed):
    tree, _, _ = _tree(seed)
    for prior in _priors(hierarchical, rate):
        mean, var, _ = upward_messages(tree, prior)
        means, variances = upward_messages_grid(tree, [prior])
        assert means.shape == variances.shape == (1, tree.node_count)
        assert np.array_equal(means[0], mean) and np.array_equal(variances[0], var)
        assert np.any(np.isinf(var))  # the unlabelled leaves send flat messages


@pytest.mark.exact
@pytest.mark.parametrize("hierarchical", [True, False])
@pytest.mark.parametrize("lifetime", [None, 1.5])
@pytest.mark.parametrize("seed", range(4))
def test_log_marginal_likelihood_matches_dense_gaussian(hierarchical, lifetime, seed):
    tree, y, labelled = _tree(seed)
    read_at = np.inf if lifetime is None else lifetime
    for prior in _priors(hierarchical, 2.5):
        _, _, log_ml = upward_messages(tree, prior, lifetime)
        expected = _dense_log_ml(tree, y, labelled, prior, read_at)
        np.testing.assert_allclose(log_ml, expected, rtol=1e-10)


# ---------------------------------------------------------------------- the predictive


def _psi(prior, t):
    return prior.sigma2 if np.isinf(t) else prior.sigma2 / (1.0 + np.exp(-prior.rate * t))


def _times_product(ma, va, mb, vb):
    """Normalised product of two Gaussian densities (an infinite variance is flat)."""
    if np.isinf(va):
        return mb, vb
    if np.isinf(vb):
        return ma, va
    return (ma * vb + mb * va) / (va + vb), va * vb / (va + vb)


def _reference_moments(t, msg_mean, msg_var, prior, x, n_quadrature):
    """E[y] and E[y**2] of one tree at ``x`` (section 6): branch off above each node of the
    path with the probabilities of section 5.1, at the quadrature's times, or reach the leaf;
    the outside messages carried down the path from the virtual node above the root."""
    path = decision_path(t, x)
    cav_mean, cav_var = prior.mean0, 0.0
    mean = second = 0.0
    alive = 1.0
    for i, j in enumerate(path):
        above, tau = t.parent_time[j], t.split_time[j]
        eta = distance_to_box(t, j, x)
        p = separation_probability(eta, tau - above)
        q_var = cav_var + _psi(prior, tau) - _psi(prior, above)
        if alive * p > 0.0:
            if prior.hierarchical:
                for u in (np.arange(n_quadrature) + 0.5) / n_quadrature:
                    s = above - np.log1p(-u * p) / eta  # the branch-off node's time
                    m, v = _times_product(
                        cav_mean, cav_var + _psi(prior, s) - _psi(prior, above),
                        msg_mean[j], msg_var[j] + _psi(prior, tau) - _psi(prior, s))
                    v += _psi(prior, t.lifetime) - _psi(prior, s) + prior.noise
                    mean += alive * p / n_quadrature * m
                    second += alive * p / n_quadrature * (v + m * m)
            else:
                mean += alive * p * prior.mean0
                second += alive * p * (prior.prior_var + prior.noise + prior.mean0**2)
        alive *= 1.0 - p
        if t.is_leaf(j):
            if prior.hierarchical:
                m, v = _times_product(cav_mean, q_var, msg_mean[j], msg_var[j])
            else:
                m, v = _times_product(prior.mean0, prior.prior_var, msg_mean[j], msg_var[j])
            return mean + alive * m, second + alive * (v + prior.noise + m * m)
        child = path[i + 1]
        sibling = t.children_right[j] if child == t.children_left[j] else t.children_left[j]
        cav_mean, cav_var = _times_product(
            cav_mean, q_var, msg_mean[sibling],
            msg_var[sibling] + _psi(prior, t.split_time[sibling]) - _psi(prior, tau))
    raise AssertionError("the path ends at a leaf")


def _fitted_tree(smoothing, lifetime, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(size=(60, 2))
    y = np.sin(4 * X[:, 0]) + 0.2 * rng.normal(size=60)
    est = MondrianTreeRegressor(random_state=seed, feature_scaling=None, feature_weights=None,
                                lifetime=lifetime,
                                smoothing=smoothing).fit(X, y)
    return est, rng.uniform(-0.3, 1.3, size=(40, 2))


@pytest.mark.exact
@pytest.mark.parametrize("smoothing", ["hierarchical", "independent"])
@pytest.mark.parametrize("lifetime", [2.0, np.inf])
@pytest.mark.parametrize("plain_walk", [False, True])
@pytest.mark.parametrize("n_quadrature", [3, 11])  # (11: more points than vector lanes)
def test_predictive_matches_reference_walk(smoothing, lifetime, plain_walk, n_quadrature):
    est, X = _fitted_tree(smoothing, lifetime)
    t = TreeArrays.from_estimator(est)
    tree = est._trees[0]
    for prior in _priors(smoothing == "hierarchical", 1.3) + [est._posterior().params]:
        msg_mean, msg_var, _ = upward_messages(tree, prior)
        out = np.zeros((len(X), 2))
        predict_moments_trees([tree], [(msg_mean, msg_var)], X, out, prior, n_quadrature,
                              plain_walk=plain_walk)
        expected = [_reference_moments(t, msg_mean, msg_var, prior, x, n_quadrature)
                    for x in X]
        np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-14)


@pytest.mark.exact
@pytest.mark.parametrize("smoothing", ["hierarchical", "independent"])
@pytest.mark.parametrize("lifetime", [None, 0.8])
def test_a_row_predicts_the_same_bits_whatever_the_rows_around_it(smoothing, lifetime):
    """The node records are filled on the first row's path that needs them, per tree and
    call: a row alone, in a batch, or in another order, and a tree alone or after others,
    gives the same bits."""
    _, X = _fitted_tree(smoothing, np.inf, seed=3)
    X = np.vstack([X, X[:5]])
    trees = MondrianForestRegressor(n_estimators=3, smoothing=smoothing, feature_scaling=None,
                                    random_state=3).fit(X, np.sin(4 * X[:, 0]))._trees
    prior = _priors(smoothing == "hierarchical", 1.3)[1]
    messages = [upward_messages(tree, prior, lifetime)[:2] for tree in trees]

    def moments(rows):
        out = np.zeros((len(rows), 3))
        predict_moments_trees(trees, messages, np.ascontiguousarray(rows), out, prior, 4,
                              lifetime)
        return out

    batch = moments(X)
    order = np.random.RandomState(0).permutation(len(X))
    assert np.array_equal(moments(X[order]), batch[order])
    alone = np.vstack([moments(X[i : i + 1]) for i in range(len(X))])
    assert np.array_equal(alone, batch)
    one_by_one = np.zeros_like(batch)
    for tree, pair in zip(trees, messages, strict=True):
        predict_moments_trees([tree], [pair], X, one_by_one, prior, 4, lifetime)
    assert np.array_equal(one_by_one, batch)
