"""One recursion for the upward messages: ``upward_messages`` is the one-prior case of
``upward_messages_grid`` (bit for bit), and its log marginal likelihood matches a dense
NumPy computation in both models, with unlabelled points and at a pruning lifetime."""

import numpy as np
import pytest

from mondrian.core._tree import MondrianTree
from mondrian.forest._gaussian import GaussianPrior, upward_messages, upward_messages_grid


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
                common = [i for i, j in zip(paths[a], paths[b]) if i == j][-1]
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
