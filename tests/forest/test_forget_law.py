"""Statistical tests of forgetting (docs/algorithms.md §13): ``fit(D)`` then ``forget(S)`` has
the law of ``fit(D \\ S)``.

Fixed seeds (from ``global_random_seed``) and stated tolerances, as in
``tests/core/test_tree_law.py``: goodness-of-fit tests reject below p = 1e-4 (each fails for
at most 1 seed in 10,000 under the null); the sample sizes make the errors these tests exist
for (a stale box after a removal, a cut kept that no longer separates points, a split time
re-drawn or not inherited, a node left unpaused) give p-values far below that. The data sit
in their original units (``feature_scaling=None``: no warm-up of the map) and the feature
weights are uniform.
"""

import numpy as np
import pytest
from scipy import stats

from mondrian import MondrianForestClassifier

from _checks import two_sample_chi2_pvalue as _two_sample_chi2_pvalue
from _data import threshold_classes

pytestmark = pytest.mark.statistical

P_MIN = 1e-4


def _forest(seed, n_trees, **params):
    params.setdefault("feature_scaling", None)
    return MondrianForestClassifier(n_estimators=n_trees, feature_weights=None,
                                    random_state=seed, **params)


def _leaf_counts(forest):
    leaves = [int((tree.nodes_array["left_child"] == -1).sum()) for tree in forest._trees]
    paused = [int(tree.nodes_array["paused"].sum()) for tree in forest._trees]
    return np.array(leaves), np.array(paused)


def _far_points_data(seed):
    """12 points in the unit cube (alternating labels) and 2 far points along feature 0: a
    fit on all of them cuts feature 0 first most of the time, a fit without the far points
    in proportion to the cube's sides."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(12, 3)) * np.array([0.5, 1.0, 2.0])
    X = np.vstack([X, [[-6.0, 0.5, 1.0], [6.0, 0.2, 0.3]]])
    y = np.arange(14) % 2
    return X, y


def test_root_split_time_after_forget_is_exponential_in_the_remaining_box(global_random_seed):
    """After forgetting the two far points, the root split time times the linear dimension of
    the remaining box is Exp(1): KS at p > 1e-4 and the mean within 4 standard errors (2000
    trees). The root of the fit on all points is usually cut at time ~1/13 along feature 0;
    keeping that cut or its time (instead of the remaining root's) fails by far."""
    X, y = _far_points_data(global_random_seed)
    forest = _forest(global_random_seed, 2000).fit(X, y)
    forest.forget(X[12:], y[12:])
    rate = float(np.ptp(X[:12], axis=0).sum())
    tau = np.array([tree.nodes_array["split_time"][0] for tree in forest._trees]) * rate
    assert stats.kstest(tau, "expon").pvalue > P_MIN
    assert abs(tau.mean() - 1.0) < 4.0 / np.sqrt(len(tau))


def test_root_cut_dimension_after_forget_follows_the_remaining_sides(global_random_seed):
    """The root's cut dimension after the forget is drawn in proportion to the sides of the
    remaining box (chi-square goodness of fit, p > 1e-4, 2000 trees); before it, feature 0
    dominates."""
    X, y = _far_points_data(global_random_seed)
    forest = _forest(global_random_seed + 1, 2000).fit(X, y)
    before = np.bincount([t.nodes_array["feature"][0] for t in forest._trees], minlength=3)
    forest.forget(X[12:], y[12:])
    dims = np.array([t.nodes_array["feature"][0] for t in forest._trees])
    sides = np.ptp(X[:12], axis=0)
    expected = sides / sides.sum() * len(dims)
    assert stats.chisquare(np.bincount(dims, minlength=3), expected).pvalue > P_MIN
    assert before[0] > 0.8 * len(dims)


@pytest.mark.parametrize("lifetime", [3.0, np.inf])
def test_leaf_counts_after_forget_match_a_fit_on_the_rest(global_random_seed, lifetime):
    """The numbers of leaves and of paused leaves of fit(D) + forget(S) and of fit(D \\ S)
    (independent forests of 1500 trees) have the same distribution: two-sample chi-square
    at p > 1e-4. S holds a third of the points, among them minority labels, so that nodes
    become pure and must pause (a forget that did not pause them leaves too many leaves)."""
    X, y = threshold_classes(60, 2, global_random_seed, generator=True)
    rng = np.random.default_rng(global_random_seed + 7)
    S = rng.choice(len(X), 20, replace=False)
    rest = np.setdiff1d(np.arange(len(X)), S)
    a = _forest(global_random_seed, 1500, lifetime=lifetime).fit(X, y)
    a.forget(X[S], y[S])
    b = _forest(global_random_seed + 100, 1500, lifetime=lifetime).fit(X[rest], y[rest])
    leaves_a, paused_a = _leaf_counts(a)
    leaves_b, paused_b = _leaf_counts(b)
    assert _two_sample_chi2_pvalue(leaves_a, leaves_b) > P_MIN
    assert _two_sample_chi2_pvalue(paused_a, paused_b) > P_MIN


def test_stream_with_forgets_matches_a_fit_on_the_rest(global_random_seed):
    """partial_fit batches interleaved with forgets (online growth after a forget) give the
    law of a batch fit on the points that remain (leaf counts, depth of the points; two-sample
    chi-square at p > 1e-4, 1500 trees each)."""
    X, y = threshold_classes(90, 2, global_random_seed, generator=True)
    a = _forest(global_random_seed, 1500, lifetime=4.0)
    a.partial_fit(X[:30], y[:30])
    a.forget(X[:10], y[:10])
    a.partial_fit(X[30:60], y[30:60])
    a.forget(X[25:40], y[25:40])
    a.partial_fit(X[60:], y[60:])
    rest = np.r_[10:25, 40:90]
    b = _forest(global_random_seed + 100, 1500, lifetime=4.0).fit(X[rest], y[rest])
    assert a.n_samples_seen_ == len(rest)
    assert _two_sample_chi2_pvalue(_leaf_counts(a)[0], _leaf_counts(b)[0]) > P_MIN
    depth_a = np.array([t.node_depths().max() for t in a._trees])
    depth_b = np.array([t.node_depths().max() for t in b._trees])
    assert _two_sample_chi2_pvalue(depth_a, depth_b) > P_MIN


def test_forgetting_weight_matches_a_fit_with_the_lower_weights(global_random_seed):
    """Forgetting part of the weights (the pause rule counts weights: min_samples_split=4)
    gives the law of a fit with the lowered weights (leaf and paused-leaf counts, two-sample
    chi-square at p > 1e-4, 1500 trees each)."""
    X, y = threshold_classes(50, 2, global_random_seed, generator=True)
    w = np.arange(50) % 3 + 1.0
    a = _forest(global_random_seed, 1500, lifetime=5.0, min_samples_split=4)
    a.fit(X, y, sample_weight=w)
    heavy = np.flatnonzero(w > 1)
    a.forget(X[heavy], y[heavy], sample_weight=np.ones(len(heavy)))
    w2 = w.copy()
    w2[heavy] -= 1
    b = _forest(global_random_seed + 100, 1500, lifetime=5.0, min_samples_split=4)
    b.fit(X, y, sample_weight=w2)
    la, pa = _leaf_counts(a)
    lb, pb = _leaf_counts(b)
    assert _two_sample_chi2_pvalue(la, lb) > P_MIN
    assert _two_sample_chi2_pvalue(pa, pb) > P_MIN


def test_regressor_leaf_counts_after_forget_match_a_fit_on_the_rest(global_random_seed):
    """The regressor (pause rule: fewer than min_samples_split=3 points, weighted) after
    fit(D) + forget(S) against fit(D \\ S): leaf counts, two-sample chi-square at p > 1e-4,
    1500 trees each."""
    from mondrian import MondrianForestRegressor

    X, _ = threshold_classes(60, 2, global_random_seed, generator=True)
    t = X[:, 0] - X[:, 1]
    S = np.random.default_rng(global_random_seed + 3).choice(len(X), 25, replace=False)
    rest = np.setdiff1d(np.arange(len(X)), S)
    params = dict(n_estimators=1500, lifetime=4.0, min_samples_split=3, feature_scaling=None,
                  feature_weights=None, noise_variance=0.1, prior_variance=1.0,
                  sigmoid_rate=1.0)
    a = MondrianForestRegressor(random_state=global_random_seed, **params).fit(X, t)
    a.forget(X[S], t[S])
    b = MondrianForestRegressor(random_state=global_random_seed + 100, **params)
    b.fit(X[rest], t[rest])
    la, lb = _leaf_counts(a)[0], _leaf_counts(b)[0]
    assert _two_sample_chi2_pvalue(la, lb) > P_MIN
