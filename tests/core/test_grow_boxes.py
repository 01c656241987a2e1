"""Batch growth's box loops: every node's box is that of the points below
it, and the trees keep the bits of the implementation before the children's boxes were
written by the partition (fingerprints of that implementation, x86-64 Linux)."""

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mondrian.core._tree import MondrianTree

from _checks import node_records_56

# sha256 (first 32 hex digits) of nodes_array, bounds_array and leaf_sample_assignment() of the
# trees of _cases(), fitted by the growth loops of commit e4a7487 (a box pass at every node,
# then the partition); "extended" re-recorded when the online extension began to draw its
# exponential clock at every node it visits, even where the batch adds no extent (issue 25).
FINGERPRINTS = {
    "uniform": "f9c64d024b1b6029c57168a04b235f1e",
    "uniform_all_boxes": "f9c64d024b1b6029c57168a04b235f1e",
    "signed_zeros": "aa6b23c9517d939c4b61c17667e7347b",
    "d13_finite": "ac033f80021a8b5a434c2468fd778820",
    "extended": "e9d2ec5ff41022ab940da5112b456bda",
}


def _cases():
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(2000, 5))
    y = rng.randint(0, 3, 2000)
    yield "uniform", X, y, np.inf, None, None
    yield "uniform_all_boxes", X, y, np.inf, 0, None
    # Ties between -0.0 and 0.0: the sign a bound keeps depends on the order of the points.
    Z = rng.choice([-0.0, 0.0, 1.0, -1.0, 0.5], size=(600, 4))
    Z[:, 0] = rng.uniform(size=600)
    yield "signed_zeros", Z, rng.randint(0, 2, 600), np.inf, 0, None
    W = rng.normal(size=(1500, 13))  # 13 features: vector loops with a remainder
    W[:, 3] = np.round(W[:, 3])
    yield "d13_finite", W, rng.randint(0, 4, 1500), 5.0, None, None
    yield "extended", X, y, np.inf, 0, 900  # growth below an online extension


def _fit(X, y, lifetime, box_min_samples, split):
    X = np.ascontiguousarray(X)
    rows = np.ascontiguousarray(np.eye(y.max() + 1)[y])
    tree = MondrianTree(X.shape[1], rows.shape[1], lifetime, 2, False, 7,
                        box_min_samples=box_min_samples)
    if split is None:
        tree.fit(X, rows, np.arange(len(X)))
    else:
        tree.fit(X, rows, np.arange(split))
        tree.extend(X, rows, np.arange(split, len(X)))
    tree.attach_points(X)
    return tree, X


@pytest.mark.exact
@pytest.mark.parametrize("case", list(_cases()), ids=lambda c: c[0])
def test_growth_matches_the_recorded_fingerprints(case):
    name, *args = case
    tree, _ = _fit(*args)
    h = hashlib.sha256()
    nodes = node_records_56(tree.nodes_array)  # (the layout the fingerprints were taken in)
    for a in (nodes, tree.bounds_array, tree.leaf_sample_assignment()):
        h.update(np.ascontiguousarray(a).tobytes())
    assert h.hexdigest()[:32] == FINGERPRINTS[name]


@pytest.mark.exact
@pytest.mark.parametrize("case", [c for c in _cases() if c[4] == 0], ids=lambda c: c[0])
def test_every_stored_box_is_the_box_of_the_points_below(case):
    _, *args = case
    tree, X = _fit(*args)
    bounds = tree.bounds_array
    nodes = tree.nodes_array
    assert tree.box_count == tree.node_count  # every box stored, written by the growth
    for j in range(tree.node_count):
        points = X[tree._subtree_samples(j)]
        assert np.array_equal(bounds[j, 0], points.min(axis=0))
        assert np.array_equal(bounds[j, 1], points.max(axis=0))
        if nodes["left_child"][j] != -1:  # the cut separates the children's points
            f, thr = nodes["feature"][j], nodes["threshold"][j]
            assert np.all(X[tree._subtree_samples(nodes["left_child"][j]), f] <= thr)
            assert np.all(X[tree._subtree_samples(nodes["right_child"][j]), f] > thr)


def _reference_box_loops(X, nodes):
    """Boxes and leaf orders grown by the loops before the dim-blocked box loop, written
    again in numpy: the root's box grown row by row in the order of the points, then at
    every cut one pass of the two-pointer partition that grows the left box in the order
    its rows are met (strict rule) and the right box in the reverse one (ties replace)."""
    n, D = X.shape
    idx = list(range(n))
    lo, hi, leaves = {}, {}, {}
    lo[0], hi[0] = X[0].copy(), X[0].copy()
    for i in idx[1:]:
        lo[0] = np.where(X[i] < lo[0], X[i], lo[0])
        hi[0] = np.where(X[i] > hi[0], X[i], hi[0])
    stack = [(0, 0, n)]
    while stack:
        j, start, end = stack.pop()
        left = nodes["left_child"][j]
        if left == -1:
            leaves[j] = idx[start:end]
            continue
        right = nodes["right_child"][j]
        f, thr = nodes["feature"][j], nodes["threshold"][j]
        box = {c: [np.full(D, np.inf), np.full(D, -np.inf)] for c in (left, right)}
        i, k = start, end - 1
        while i <= k:
            v = X[idx[i]]
            if v[f] <= thr:
                b = box[left]
                b[0], b[1] = np.where(v < b[0], v, b[0]), np.where(v > b[1], v, b[1])
                i += 1
            else:
                b = box[right]
                b[0], b[1] = np.where(v <= b[0], v, b[0]), np.where(v >= b[1], v, b[1])
                idx[i], idx[k] = idx[k], idx[i]
                k -= 1
        for c in (left, right):
            lo[c], hi[c] = box[c]
        stack += [(right, i, end), (left, start, i)]
    return lo, hi, leaves


@pytest.mark.exact
@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 120), D=st.sampled_from([1, 3, 4, 7, 16, 19, 33]),
       seed=st.integers(0, 2**31 - 1))
def test_growth_matches_the_reference_box_loops_on_ties_and_signed_zeros(n, D, seed):
    # Few distinct values, both zeros among them: every bound is a tie broken by the order
    # of the points, and the sign of a zero bound shows which point won. D covers the
    # 16-dim blocks, the 4-dim blocks and the single dims of the box loop.
    rng = np.random.RandomState(seed)
    X = rng.choice([-0.0, 0.0, -1.0, 1.0, 0.5], size=(n, D))
    y = rng.randint(0, 2, n)
    tree, X = _fit(X, y, np.inf, 0, None)
    nodes = tree.nodes_array
    lo, hi, leaves = _reference_box_loops(X, nodes)
    bounds = tree.bounds_array
    assert sorted(lo) == list(range(tree.node_count))
    for j in range(tree.node_count):
        assert bounds[j, 0].tobytes() == lo[j].tobytes()
        assert bounds[j, 1].tobytes() == hi[j].tobytes()
    for j, points in leaves.items():
        assert list(tree.leaf_samples(j)) == points
