"""Statistical tests of the law of Mondrian trees: batch-grown and online-grown.

Every test uses fixed seeds (derived from `global_random_seed`) and a stated tolerance.
Goodness-of-fit tests reject only below p = 1e-4: under the null the p-value is uniform, so each
test fails for at most 1 seed in 10,000, while the sample sizes are chosen so that the gross
errors these tests exist for (a wrong clock rate, a wrong dimension weight, a wrong extension
rule) give p-values far below 1e-4. Frequency tests allow 4 binomial standard errors (two-sided
false-failure rate 6e-5 per comparison).
"""

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from scipy import stats

from mondrian import MondrianForestClassifier

from _checks import two_sample_chi2_pvalue as _two_sample_chi2_pvalue

pytestmark = pytest.mark.statistical

P_MIN = 1e-4  # rejection level of the goodness-of-fit tests
N_SE = 4.0  # allowed deviation of a frequency, in binomial standard errors


def _root_split_times(forest):
    return np.array([est.tree_.split_time[0] for est in forest.estimators_])


def _root_forest(seed, n_samples, widths, feature_scaling):
    """3000 trees on ``n_samples`` uniform points in a box of the given side ``widths``, with
    alternating labels (so the root never pauses); returns the points and the forest."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, size=(n_samples, len(widths))) * np.array(widths)
    y = np.arange(n_samples) % 2
    forest = MondrianForestClassifier(
        n_estimators=3000, feature_scaling=feature_scaling, random_state=seed
    ).fit(X, y)
    return X, forest


# --------------------------------------------------------------------------------------------
# law of the batch-grown tree
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("feature_scaling", ["minmax", None])
def test_root_split_time_is_exponential_in_linear_dimension(global_random_seed, feature_scaling):
    """The root split time is Exp(sum of the root box sides, in scaled units) (§1.1).

    KS test at p > 1e-4 plus the sample mean within 4 standard errors (an exponential has
    sd == mean, so SE = mean / sqrt(N)). The root has two labels, so it never pauses.
    """
    X, forest = _root_forest(global_random_seed, 12, [0.5, 1.0, 2.0], feature_scaling)
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
    X, forest = _root_forest(global_random_seed, 10, [0.25, 1.0, 3.0], feature_scaling)
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
