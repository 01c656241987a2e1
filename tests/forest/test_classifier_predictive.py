"""The classifier's predictive against exact oracles, and the Monte-Carlo checks of the oracles.

The exact tests compare `predict_proba` with the NumPy reference predictive of `_reference.py`
(§5.3) at 1e-10. The Monte-Carlo tests check the reference's branch-off probabilities and
expected discount against sampled extensions, with fixed seeds (derived from
`global_random_seed`): goodness-of-fit tests reject only below p = 1e-4, frequencies and means
allow 4 standard errors.
"""

import numpy as np
import pytest
from scipy import stats

from mondrian import MondrianForestClassifier, MondrianTreeClassifier

from _reference import (
    TreeArrays,
    branch_off_probabilities,
    expected_discount,
    extend_once,
    monte_carlo_branch_off,
    posterior_means,
    predict_proba_tree,
    to_scaled,
)

P_MIN = 1e-4  # rejection level of the goodness-of-fit tests
N_SE = 4.0  # allowed deviation of a frequency, in binomial standard errors


# --------------------------------------------------------------------------------------------
# §5 oracles: branching probabilities, expected discount, predictive
# --------------------------------------------------------------------------------------------


def test_expected_discount_matches_monte_carlo(global_random_seed):
    """E[exp(-gamma S)] for S ~ Exp(eta) truncated to [0, Delta] (§5.2, Appendix A.3).

    2e5 inverse-CDF draws; the MC mean must be within 4 standard errors of the formula. Also
    checks the Delta = inf limit eta / (eta + gamma) and the documented value 0.45143.
    """
    rng = np.random.default_rng(global_random_seed)
    for eta, gamma, delta in [(0.7, 5.0, 0.4), (3.0, 1.0, 2.0), (0.05, 20.0, 7.0)]:
        u = rng.uniform(size=200_000)
        s = -np.log1p(-u * -np.expm1(-eta * delta)) / eta  # inverse CDF of the truncation
        assert np.all(s <= delta)
        samples = np.exp(-gamma * s)
        se = samples.std() / np.sqrt(len(samples))
        assert abs(samples.mean() - expected_discount(eta, delta, gamma)) < N_SE * se
    assert expected_discount(0.7, 0.4, 5.0) == pytest.approx(0.45143, abs=1e-5)
    assert expected_discount(0.7, np.inf, 5.0) == pytest.approx(0.7 / 5.7, rel=1e-15)


def _oracle_tree(seed, lifetime):
    """A small 2-D tree (6 points, alternating labels) for the branch-off oracle."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, size=(6, 2))
    y = np.array([0, 1, 0, 1, 2, 2])
    for state in range(seed, seed + 100):
        tree = MondrianTreeClassifier(lifetime=lifetime, feature_scaling=None, random_state=state)
        tree.fit(X, y)
        if tree.tree_.node_count >= 5:  # want a path with several nodes
            return tree
    raise AssertionError("no tree with >= 5 nodes")


@pytest.mark.slow
@pytest.mark.parametrize("lifetime", [1.3, 4.0, np.inf])
def test_branch_off_probabilities_match_extension_monte_carlo(global_random_seed, lifetime):
    """The analytic {s_j p_j, s_end} of §5.1 equal the empirical distribution of where
    ExtendMondrianBlock (§2.1, reference implementation) inserts a test point, and the mean of
    exp(-gamma S) over the sampled insertions equals the expected discount of §5.2.

    20,000 extensions: chi-square goodness of fit at p > 1e-4, each frequency within 4
    binomial SE, each conditional mean within 4 SE (only nodes with >= 300 insertions).
    """
    tree = _oracle_tree(global_random_seed, lifetime)
    t = TreeArrays.from_estimator(tree)
    rng = np.random.default_rng(global_random_seed)
    gamma = 5.0
    for x in (np.array([1.1, 0.5]), np.array([0.5, 0.5]), rng.uniform(-0.2, 1.2, size=2)):
        path, weights, s_end = branch_off_probabilities(t, x)
        probs = np.append(weights, s_end)
        assert probs.sum() == pytest.approx(1.0, abs=1e-12)
        n_rep = 20_000
        mc_path, counts, gaps = monte_carlo_branch_off(t, x, n_rep, rng)
        assert mc_path == path
        assert np.all(counts[probs == 0] == 0)
        support = probs > 0
        if support.sum() > 1:
            pvalue = stats.chisquare(counts[support], probs[support] * n_rep).pvalue
            assert pvalue > P_MIN
        se = np.sqrt(probs * (1 - probs) / n_rep)
        assert np.all(np.abs(counts / n_rep - probs) <= N_SE * se + 1e-12)
        tau_parent = t.parent_time
        for i, j in enumerate(path):
            if len(gaps[i]) < 300:
                continue
            eta = np.sum(np.maximum(t.lower[j] - x, 0) + np.maximum(x - t.upper[j], 0))
            d_bar = expected_discount(eta, t.split_time[j] - tau_parent[j], gamma)
            samples = np.exp(-gamma * gaps[i])
            se = samples.std() / np.sqrt(len(samples))
            assert abs(samples.mean() - d_bar) < N_SE * se + 1e-12


def test_extension_keeps_the_tree_valid(global_random_seed):
    """The reference extension produces a valid tree: the new parent's box covers the old box
    and the point, its cut separates the point from the old box, and split times still increase
    downwards. This guards the Monte-Carlo oracle itself.
    """
    tree = _oracle_tree(global_random_seed, 1.3)
    t = TreeArrays.from_estimator(tree)
    rng = np.random.default_rng(global_random_seed)
    n_branched = 0
    for _ in range(200):
        x = rng.uniform(-0.5, 1.5, size=2)
        ext = extend_once(t, x, rng)
        e = ext.tree
        for k in np.flatnonzero(e.children_left != -1):
            for child in (e.children_left[k], e.children_right[k]):
                assert e.split_time[child] > e.split_time[k]
                assert np.all(e.lower[child] >= e.lower[k])
                assert np.all(e.upper[child] <= e.upper[k])
        if ext.branched < 0:
            assert e.node_count == t.node_count
            continue
        n_branched += 1
        k, leaf, j = ext.new_parent, ext.new_leaf, ext.branched
        assert e.parent[j] == k and e.parent[leaf] == k
        assert e.root == (k if j == t.root else t.root)
        f, xi = e.feature[k], e.threshold[k]
        if x[f] <= xi:
            assert e.children_left[k] == leaf and xi < e.lower[j, f]
        else:
            assert e.children_right[k] == leaf and e.upper[j, f] < xi
    assert n_branched > 0


@pytest.mark.exact
def test_reference_posterior_sums_to_one(global_random_seed):
    """Appendix A.4: the IKN posterior mean sums to 1 at every node, and the §5.3 mixture sums
    to 1 for finite and infinite lifetimes (exact up to rounding, 1e-12)."""
    rng = np.random.default_rng(global_random_seed)
    X = rng.uniform(size=(20, 3))
    y = rng.integers(0, 3, size=20)
    for lifetime in (0.5, 3.0, np.inf):
        tree = MondrianTreeClassifier(lifetime=lifetime, random_state=global_random_seed)
        t = TreeArrays.from_estimator(tree.fit(X, y))
        G = posterior_means(t, gamma=30.0)
        np.testing.assert_allclose(G.sum(axis=1), 1.0, atol=1e-12)
        assert np.all(G >= 0)
        queries = to_scaled(tree, rng.uniform(-1, 2, size=(30, 3)))
        for counts in ("node", "tables"):
            proba = predict_proba_tree(t, queries, gamma=30.0, branch_off_counts=counts)
            np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
            assert np.all(proba >= 0)


def _random_problem(rng):
    n = int(rng.integers(5, 30))
    d = int(rng.integers(1, 5))
    k = int(rng.integers(2, 5))
    X = rng.normal(size=(n, d)) * rng.uniform(0.1, 10.0, size=d) + rng.normal(size=d)
    y = rng.integers(0, k, size=n)
    queries = np.vstack([X, X.min(0) + (rng.uniform(-0.5, 1.5, size=(40, d)) * np.ptp(X, 0))])
    return X, y, k, queries


@pytest.mark.exact
@pytest.mark.parametrize("branch_off_counts", ["node", "tables"])
@pytest.mark.parametrize("lifetime", [0.0, 0.7, 3.0, np.inf])
@pytest.mark.parametrize("feature_scaling", ["minmax", None])
@pytest.mark.parametrize("growth", ["fit", "partial_fit", "new_classes"])
def test_predict_proba_equals_reference_predictive(
    global_random_seed, branch_off_counts, lifetime, feature_scaling, growth
):
    """MondrianTreeClassifier.predict_proba equals the reference §5.3 predictive to 1e-10 on
    random small trees: training points, points inside the data range and points outside it.
    Trees are batch-fitted, grown by partial_fit with the classes fixed up front (the prior is
    uniform over all of them), or grown by partial_fit with classes appearing mid-stream.

    The two computations do the same arithmetic in possibly different orders, so they agree to
    rounding; 1e-10 leaves ample room for that and none for a modelling difference.
    """
    rng = np.random.default_rng(global_random_seed)
    discount_factor = float(rng.choice([0.5, 10.0]))
    for trial in range(5):
        X, y, k, queries = _random_problem(rng)
        tree = MondrianTreeClassifier(
            lifetime=lifetime,
            discount_factor=discount_factor,
            feature_scaling=feature_scaling,
            branch_off_counts=branch_off_counts,
            random_state=global_random_seed + trial,
        )
        if growth == "fit":
            tree.fit(X, y)
        else:
            classes = np.arange(k) if growth == "partial_fit" else None
            for start in range(0, len(X), 4):
                tree.partial_fit(X[start : start + 4], y[start : start + 4], classes=classes)
        t = TreeArrays.from_estimator(tree)
        gamma = discount_factor * X.shape[1]
        expected = predict_proba_tree(t, to_scaled(tree, queries), gamma, branch_off_counts)
        np.testing.assert_allclose(tree.predict_proba(queries), expected, rtol=0, atol=1e-10)


@pytest.mark.exact
@pytest.mark.parametrize("branch_off_counts", ["node", "tables"])
def test_forest_predict_proba_is_mean_of_reference_trees(global_random_seed, branch_off_counts):
    """The forest predictive is the plain average of the per-tree §5.3 predictives (1e-10)."""
    rng = np.random.default_rng(global_random_seed)
    X, y, k, queries = _random_problem(rng)
    forest = MondrianForestClassifier(
        n_estimators=7,
        lifetime=2.0,
        branch_off_counts=branch_off_counts,
        random_state=global_random_seed,
    ).fit(X, y)
    gamma = forest.discount_factor * X.shape[1]
    expected = np.mean(
        [
            predict_proba_tree(
                TreeArrays.from_estimator(est), to_scaled(est, queries), gamma, branch_off_counts
            )
            for est in forest.estimators_
        ],
        axis=0,
    )
    proba = forest.predict_proba(queries)
    np.testing.assert_allclose(proba, expected, rtol=0, atol=1e-10)
    mean_of_trees = np.mean([est.predict_proba(queries) for est in forest.estimators_], axis=0)
    np.testing.assert_allclose(proba, mean_of_trees, rtol=0, atol=1e-12)
