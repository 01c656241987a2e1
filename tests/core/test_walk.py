"""The shared walk (core/_walk.pxd) against plain NumPy: the leaf at a lifetime and the
branch-off quantities eta, delta, p, reach, survival and exposure along the path of a point."""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from mondrian.core._tree import MondrianTree
from mondrian.core._walk import walk_path

from _reference import TreeArrays, branch_off_probabilities, separation_probability


def _random_tree(seed, lifetime, n=60, d=3):
    rng = np.random.RandomState(seed)
    X = rng.uniform(size=(n, d))
    tree = MondrianTree(d, 1, lifetime, 1, False, seed)
    tree.fit(X, np.ones((n, 1)), np.arange(n, dtype=np.intp))
    return tree, X


def _queries(X, seed):
    """Training points (inside every box of their path), points far outside the data, points
    on the boundary of the data's hull and points between training points."""
    rng = np.random.RandomState(seed + 1000)
    outside = rng.normal(0.5, 1.5, size=(20, X.shape[1]))
    edge = np.clip(rng.normal(0.5, 1.0, size=(10, X.shape[1])), X.min(0), X.max(0))
    between = 0.5 * (X[:10] + X[10:20])
    return np.ascontiguousarray(np.vstack([X[:10], outside, edge, between]))


def _reference_walk(tree, x, lifetime):
    """The walk of `x` in plain Python, from the node and box arrays."""
    nodes, bounds = tree.nodes_array, tree.bounds_array
    rows = {k: [] for k in ("node", "sibling", "is_leaf", "tau_parent", "tau", "delta", "eta",
                            "p", "reach", "survival", "exposure")}
    j, sibling, tau_parent, reach, exposure = 0, -1, 0.0, 1.0, 0.0
    while True:
        leaf = nodes["left_child"][j] == -1 or nodes["split_time"][j] >= lifetime
        tau = lifetime if leaf else nodes["split_time"][j]
        delta = tau - tau_parent
        eta = 0.0
        for lo, hi, v in zip(bounds[j, 0], bounds[j, 1], x, strict=True):
            eta += max(lo - v, 0.0) + max(v - hi, 0.0)
        p = separation_probability(eta, delta) if delta > 0 else 0.0
        if p > 0:
            exposure += eta * delta
        survival = reach * (1.0 - p)
        for key, val in zip(rows, (j, sibling, leaf, tau_parent, tau, delta, eta, p, reach,
                                   survival, exposure), strict=True):
            rows[key].append(val)
        if leaf:
            return {k: np.array(v) for k, v in rows.items()}
        left, right = nodes["left_child"][j], nodes["right_child"][j]
        j, sibling = (left, right) if x[nodes["feature"][j]] <= nodes["threshold"][j] else (
            right, left)
        tau_parent, reach = tau, survival


def _read_lifetimes(tree):
    """Lifetimes to read `tree` at: 0 (the root alone), split times themselves (a cut born
    exactly at the lifetime is dropped), values in between, its own lifetime and above."""
    times = np.sort(tree.nodes_array["split_time"][tree.nodes_array["left_child"] != -1])
    picks = [0.0, times[0], times[len(times) // 2], 0.5 * (times[1] + times[2]),
             times[-1], tree.lifetime, tree.lifetime * 2]
    return picks


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("tree_lifetime", [4.0, np.inf])
def test_walk_matches_the_reference(seed, tree_lifetime):
    tree, X = _random_tree(seed, tree_lifetime)
    for lam in _read_lifetimes(tree):
        read_at = min(lam, tree.lifetime)
        leaves = tree.apply(_queries(X, seed), lifetime=read_at)
        for x, leaf in zip(_queries(X, seed), leaves, strict=True):
            got = walk_path(tree, x, lam)
            want = _reference_walk(tree, x, read_at)
            for key in ("node", "sibling", "is_leaf", "tau_parent", "tau", "delta"):
                assert_array_equal(got[key], want[key], err_msg=key)
            for key in ("eta", "p", "reach", "survival", "exposure"):
                assert_allclose(got[key], want[key], rtol=1e-12, atol=0, err_msg=key)
            # The last node, and only it, is the leaf that apply() finds.
            assert got["node"][-1] == leaf
            assert got["is_leaf"][-1] and not got["is_leaf"][:-1].any()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("tree_lifetime", [4.0, np.inf])
def test_survival_is_the_exposure_law(seed, tree_lifetime):
    """reach * p are the section-5.1 branch-off weights; survival = exp(-sum eta * delta)."""
    tree, X = _random_tree(seed, tree_lifetime)
    snapshot = _snapshot(tree)
    for x in _queries(X, seed):
        got = walk_path(tree, x)
        path, weights, alive = branch_off_probabilities(snapshot, x)
        assert_array_equal(got["node"], path)
        assert_allclose(got["reach"] * got["p"], weights, rtol=1e-12, atol=1e-300)
        assert_allclose(got["survival"][-1], alive, rtol=1e-12, atol=1e-300)
        # Independently of the recursion: survival = prod exp(-eta delta) = exp(-exposure)
        # (1 - p carries an absolute, not a relative, rounding error when p is near 1).
        with np.errstate(invalid="ignore"):
            terms = np.where(got["eta"] > 0, got["eta"] * got["delta"], 0.0)
        assert_allclose(got["exposure"], np.cumsum(terms), rtol=1e-12)
        assert_allclose(got["survival"], np.exp(-np.cumsum(terms)), rtol=1e-12, atol=1e-14)
        assert_allclose(got["reach"][1:], got["survival"][:-1], rtol=0)


@pytest.mark.parametrize("seed", range(3))
def test_eta_has_the_bits_of_the_scalar_distance(seed):
    """eta (``side_gap``: branch-free maxima, MAXSD) has the bits of the scalar sum of
    ``max(lo - v, 0) + max(v - hi, 0)`` over the features, also for points on the faces of
    the boxes (gaps of zero, either sign of zero) and far outside them."""
    tree, X = _random_tree(seed, np.inf)
    on_faces = X[:10].copy()
    on_faces[:, 0] = -0.0 if seed else X[:, 0].min()
    queries = np.ascontiguousarray(np.vstack([_queries(X, seed), on_faces, -X[:5]]))
    for x in queries:
        got = walk_path(tree, x)
        want = _reference_walk(tree, x, tree.lifetime)
        assert_array_equal(got["eta"], want["eta"])


def test_infinite_edge_outside_the_box_cuts_off_for_sure():
    """With an infinite lifetime a leaf's edge is infinite: a point outside its box branches
    off with probability one (p = 1, exposure = inf), a point inside never does."""
    tree, X = _random_tree(3, np.inf)
    far = np.full(X.shape[1], 10.0)
    got = walk_path(tree, far)
    assert got["tau"][-1] == np.inf and got["delta"][-1] == np.inf
    assert got["p"][-1] == 1.0 and got["survival"][-1] == 0.0
    assert got["exposure"][-1] == np.inf
    inside = walk_path(tree, X[0])
    assert (inside["eta"] == 0).all() and (inside["p"] == 0).all()
    assert (inside["survival"] == 1.0).all() and (inside["exposure"] == 0).all()


def test_lifetime_zero_reads_the_root_and_split_times_drop_their_cut():
    tree, X = _random_tree(1, 4.0)
    root = walk_path(tree, X[0], 0.0)
    assert_array_equal(root["node"], [0])
    assert root["tau"][0] == 0.0 and root["delta"][0] == 0.0 and root["p"][0] == 0.0
    # Read exactly at the root's split time, the root's cut is not born yet.
    t0 = tree.nodes_array["split_time"][0]
    at = walk_path(tree, np.full(X.shape[1], 5.0), t0)
    assert_array_equal(at["node"], [0])
    assert at["tau"][0] == t0
    assert at["p"][0] == pytest.approx(-math.expm1(-at["eta"][0] * t0), rel=1e-15)
    below = walk_path(tree, np.full(X.shape[1], 5.0), np.nextafter(t0, np.inf))
    assert len(below["node"]) == 2


def test_walk_rejects_bad_input():
    tree, _ = _random_tree(0, 4.0)
    with pytest.raises(ValueError, match="features"):
        walk_path(tree, np.zeros(tree.n_features + 1))
    with pytest.raises(ValueError, match="empty"):
        walk_path(MondrianTree(2, 1, 1.0), np.zeros(2))


def _snapshot(tree):
    nodes, bounds = tree.nodes_array, tree.bounds_array
    return TreeArrays(
        children_left=nodes["left_child"].astype(np.intp),
        children_right=nodes["right_child"].astype(np.intp),
        feature=nodes["feature"].astype(np.intp),
        threshold=nodes["threshold"].astype(np.float64),
        split_time=nodes["split_time"].astype(np.float64),
        lower=bounds[:, 0],
        upper=bounds[:, 1],
        value=tree.value_array,
        lifetime=tree.lifetime,
    )
