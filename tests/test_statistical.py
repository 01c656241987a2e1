"""Statistical tests of the tree law and exact tests of the predictive against the oracles.

Every Monte-Carlo test uses fixed seeds (derived from `global_random_seed`) and a stated
tolerance. Goodness-of-fit tests reject only below p = 1e-4: under the null the p-value is
uniform, so each test fails for at most 1 seed in 10,000, while the sample sizes are chosen so
that the gross errors these tests exist for (a wrong clock rate, a wrong dimension weight, a
wrong branch-off rule) give p-values far below 1e-4. Frequency tests allow 4 binomial standard
errors (two-sided false-failure rate 6e-5 per comparison).
"""

import numpy as np
import pytest
from numpy.testing import assert_array_equal
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

pytestmark = pytest.mark.statistical

P_MIN = 1e-4  # rejection level of the goodness-of-fit tests
N_SE = 4.0  # allowed deviation of a frequency, in binomial standard errors


def _root_split_times(forest):
    return np.array([est.tree_.split_time[0] for est in forest.estimators_])


def _two_sample_chi2_pvalue(a, b, min_expected=5.0):
    """p-value of the chi-square homogeneity test of two samples of small integers.

    Rare categories are pooled with their neighbours (in sorted order) until every pooled
    category has an expected count of at least `min_expected` in both samples, which keeps
    the chi-square approximation valid.
    """
    values = np.union1d(a, b)
    table = np.array([[np.sum(a == v) for v in values], [np.sum(b == v) for v in values]])
    frac = np.array([len(a), len(b)]) / (len(a) + len(b))
    pooled, current = [], np.zeros(2)
    for col in table.T:
        current = current + col
        if np.all(current.sum() * frac >= min_expected):
            pooled.append(current)
            current = np.zeros(2)
    if current.sum() > 0:
        if pooled:
            pooled[-1] = pooled[-1] + current
        else:
            pooled.append(current)
    if len(pooled) < 2:
        return 1.0  # both samples sit in one category
    return stats.chi2_contingency(np.array(pooled).T).pvalue


# --------------------------------------------------------------------------------------------
# law of the batch-grown tree
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("feature_scaling", ["minmax", None])
def test_root_split_time_is_exponential_in_linear_dimension(global_random_seed, feature_scaling):
    """The root split time is Exp(sum of the root box sides, in scaled units) (§1.1).

    KS test at p > 1e-4 plus the sample mean within 4 standard errors (an exponential has
    sd == mean, so SE = mean / sqrt(N)). The root has two labels, so it never pauses.
    """
    rng = np.random.default_rng(global_random_seed)
    X = rng.uniform(0.0, 1.0, size=(12, 3)) * np.array([0.5, 1.0, 2.0])
    y = np.arange(12) % 2
    forest = MondrianForestClassifier(
        n_estimators=3000, feature_scaling=feature_scaling, random_state=global_random_seed
    ).fit(X, y)
    tau = _root_split_times(forest)
    rate = 3.0 if feature_scaling == "minmax" else float(np.ptp(X, axis=0).sum())
    assert stats.kstest(tau, "expon", args=(0.0, 1.0 / rate)).pvalue > P_MIN
    assert abs(tau.mean() - 1.0 / rate) < N_SE / (rate * np.sqrt(len(tau)))


@pytest.mark.parametrize("feature_scaling", ["minmax", None])
def test_root_split_dimension_and_location(global_random_seed, feature_scaling):
    """The root cut dimension is chosen with probability proportional to the side length, and
    its location is uniform on that side (§1.1).

    Chi-square goodness of fit for the dimension, KS against U(0, 1) for the relative location
    of the threshold, both at p > 1e-4. With min-max scaling every side has length 1.
    """
    rng = np.random.default_rng(global_random_seed)
    X = rng.uniform(0.0, 1.0, size=(10, 3)) * np.array([0.25, 1.0, 3.0])
    y = np.arange(10) % 2
    forest = MondrianForestClassifier(
        n_estimators=3000, feature_scaling=feature_scaling, random_state=global_random_seed
    ).fit(X, y)
    side = np.ptp(X, axis=0)
    expected = np.full(3, 1 / 3) if feature_scaling == "minmax" else side / side.sum()
    dims = np.array([est.tree_.feature[0] for est in forest.estimators_])
    observed = np.bincount(dims, minlength=3)
    assert stats.chisquare(observed, expected * len(dims)).pvalue > P_MIN
    thresholds = np.array([est.tree_.threshold[0] for est in forest.estimators_])
    relative = (thresholds - X.min(axis=0)[dims]) / side[dims]
    assert np.all((relative > 0) & (relative < 1))
    assert stats.kstest(relative, "uniform").pvalue > P_MIN


def _same_leaf_frequency(leaves, i, j):
    return np.mean(leaves[i] == leaves[j])


SAME_LEAF_CASES = {
    # two points with different labels and nothing else
    "pair": (np.array([[0.2, 0.3], [0.5, 0.1]]), np.array([0, 1]), [(0, 1)]),
    # alternating labels around the pair; the tested pairs have different labels
    "alternating": (
        np.array(
            [
                [0.3, 0.4],
                [0.45, 0.5],
                [0.0, 0.0],
                [1.0, 0.2],
                [0.7, 1.0],
                [0.1, 0.9],
                [0.5, 0.35],
                [0.9, 0.6],
            ]
        ),
        np.arange(8) % 2,
        [(0, 1), (0, 3)],
    ),
    # wide, uneven feature ranges (the min-max map matters) and three labels
    "wide": (
        np.array([[0.0, 50.0], [4.0, 60.0], [10.0, 0.0], [2.0, 100.0], [7.0, 20.0], [3.0, 55.0]]),
        np.array([0, 1, 2, 0, 1, 2]),
        [(0, 1), (1, 5)],
    ),
}


@pytest.mark.parametrize("case", sorted(SAME_LEAF_CASES))
@pytest.mark.parametrize("growth", ["fit", "one_by_one", "minibatch"])
def test_same_leaf_probability_is_laplace_kernel(global_random_seed, case, growth):
    """Two points share a leaf with probability exp(-lifetime * ||x - x'||_1) (scaled units).

    Pausing cannot interfere: the two points have different labels, so every node holding
    both has two labels and at least 2 points, and never pauses. The result must hold for
    batch-grown and for online-grown trees (§2: online extension samples the same law).
    The frequency over 3000 trees must be within 4 binomial standard errors.
    """
    X, y, pairs = SAME_LEAF_CASES[case]
    scaling = "minmax" if case == "wide" else None
    n_trees = 3000
    # choose the lifetime so that the first pair shares a leaf with probability 1/2
    i0, j0 = pairs[0]
    span = np.ptp(X, axis=0) if scaling == "minmax" else np.ones(X.shape[1])
    lifetime = np.log(2.0) / np.sum(np.abs(X[i0] - X[j0]) / span)
    forest = MondrianForestClassifier(
        n_estimators=n_trees,
        lifetime=lifetime,
        feature_scaling=scaling,
        random_state=global_random_seed,
    )
    order = np.random.default_rng(global_random_seed).permutation(len(X))
    if growth == "fit":
        forest.fit(X, y)
    else:
        size = 1 if growth == "one_by_one" else 3
        for start in range(0, len(X), size):
            rows = order[start : start + size]
            forest.partial_fit(X[rows], y[rows], classes=np.unique(y))
    scale = forest.feature_scale_ if scaling == "minmax" else np.ones(X.shape[1])
    leaves = forest.apply(X)
    for i, j in pairs:
        expected = np.exp(-lifetime * np.sum(np.abs(X[i] - X[j]) / scale))
        se = np.sqrt(expected * (1 - expected) / n_trees)
        assert abs(_same_leaf_frequency(leaves, i, j) - expected) < N_SE * se, (i, j)


# --------------------------------------------------------------------------------------------
# online-grown trees have the law of batch-grown trees
# --------------------------------------------------------------------------------------------


def _tree_statistics(forest):
    leaves = np.array([np.sum(est.tree_.children_left == -1) for est in forest.estimators_])
    depth = np.array([est.tree_.max_depth for est in forest.estimators_])
    return leaves, depth, _root_split_times(forest)


@pytest.mark.parametrize("scaling", [None, "minmax_corners_first", "minmax_any_order"])
@pytest.mark.parametrize("lifetime", [2.0, np.inf])
@pytest.mark.parametrize("batch_size", [1, 5])
def test_online_and_batch_trees_have_the_same_law(
    global_random_seed, lifetime, batch_size, scaling
):
    """Trees grown by partial_fit (one point at a time, or in mini-batches) and by fit on the
    same data follow the same law (§2, §3.3), compared on the leaf count, the depth (two-sample
    chi-square) and the root split time (two-sample KS), each at p > 1e-4 (2000 trees each).

    The data has three labels so that pausing and un-pausing both happen along the stream.
    With min-max scaling the map must end equal to the batch map: either because the stream
    starts with the corners (0, 0) and (1, 1), so the map never moves, or, in any order,
    because the 14 points are within the scaler's warm-up, during which a change of the map
    re-samples the trees.
    """
    rng = np.random.default_rng(global_random_seed)
    X = np.vstack([[0.0, 0.0], [1.0, 1.0], rng.uniform(0.0, 1.0, size=(12, 2))])
    y = rng.integers(0, 3, size=14)
    y[:3] = [0, 1, 2]
    feature_scaling = None if scaling is None else "minmax"
    kwargs = dict(n_estimators=2000, lifetime=lifetime, feature_scaling=feature_scaling)
    batch = MondrianForestClassifier(random_state=global_random_seed, **kwargs).fit(X, y)
    online = MondrianForestClassifier(random_state=global_random_seed + 1, **kwargs)
    if scaling == "minmax_any_order":
        order = rng.permutation(len(X))
    else:
        order = np.concatenate([[0, 1], 2 + rng.permutation(len(X) - 2)])
    for start in range(0, len(X), batch_size):
        rows = order[start : start + batch_size]
        online.partial_fit(X[rows], y[rows], classes=[0, 1, 2])
    if feature_scaling == "minmax":
        assert_array_equal(online.feature_scale_, batch.feature_scale_)
    leaves_b, depth_b, tau_b = _tree_statistics(batch)
    leaves_o, depth_o, tau_o = _tree_statistics(online)
    assert _two_sample_chi2_pvalue(leaves_b, leaves_o) > P_MIN
    assert _two_sample_chi2_pvalue(depth_b, depth_o) > P_MIN
    assert stats.ks_2samp(tau_b, tau_o).pvalue > P_MIN


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
