"""The lifetime-path engine: its cut source (birth-ordered cuts, subtree orders) and walker.

A counting visitor records, after every cut, the number of live cells and the number of
(tree, point, point) triples that share a cell; both are recomputed from the trees pruned at a
lifetime inside every interval (``MondrianTree.apply``). Forward and backward walks must give
the same rows, and leave every point in its terminal leaf (forward) or in the root (backward).
"""

import numpy as np
import pytest

from mondrian.core._tree import MondrianTree
from mondrian.forest._path_readers import GaussianLeafReader
from mondrian.path._engine import (
    CountingVisitor,
    TreeCuts,
    cut_events,
    plan_path,
    run_path,
    subtree_order,
    walk_path,
)


def _trees(X, n_trees=3, lifetime=3.0, seed=0):
    rows = np.zeros((X.shape[0], 1))
    indices = np.arange(X.shape[0], dtype=np.intp)
    return [MondrianTree(X.shape[1], 1, lifetime, seed=seed + m).fit(X, rows, indices)
            for m in range(n_trees)]


@pytest.fixture(scope="module")
def forest():
    X = np.random.RandomState(1).uniform(size=(60, 2))
    trees = _trees(X)
    leaves = np.vstack([t.leaf_sample_assignment() for t in trees]).astype(np.intp)
    return X, trees, leaves


def test_subtree_order_ranges(forest):
    X, trees, leaves = forest
    for tree, leaf in zip(trees, leaves, strict=True):
        order, start, end = subtree_order(tree, leaf)
        assert sorted(order) == list(range(len(X)))
        nodes = tree.nodes_array
        for j in range(tree.node_count):
            left, right = nodes["left_child"][j], nodes["right_child"][j]
            points = set(order[start[j]:end[j]])
            if left == -1:
                assert points == set(np.flatnonzero(leaf == j))
            else:
                # A node's range is its left child's followed by its right child's.
                assert start[left] == start[j] and end[left] == start[right]
                assert end[right] == end[j]


def test_cut_events_truncation(forest):
    _, trees, _ = forest
    times = cut_events(trees)[0]
    assert np.all(np.diff(times) >= 0)
    assert len(times) == sum(t.node_count // 2 for t in trees)
    stop = times[len(times) // 2]
    assert np.array_equal(cut_events(trees, stop=stop)[0], times[times < stop])
    assert np.array_equal(cut_events(trees, max_events=7)[0], times[:7])
    assert len(cut_events(trees, stop=stop, max_events=10**6)[0]) == np.sum(times < stop)


def _pruned_counts(X, trees, lifetime):
    n_cells, pairs = 0, 0.0
    for tree in trees:
        _, counts = np.unique(tree.apply(X, lifetime=lifetime), return_counts=True)
        n_cells += len(counts)
        pairs += float(np.sum(counts.astype(float) ** 2))
    return n_cells, pairs


@pytest.mark.parametrize("forward", [True, False])
def test_counting_visitor_matches_pruned_trees(forest, forward):
    X, trees, leaves = forest
    source = TreeCuts(*plan_path(trees, leaves))
    visitor = CountingVisitor(len(trees), len(X))
    metrics = walk_path(source, visitor, forward)
    times = source.times
    assert metrics.shape == (len(times) + 1, 2)
    # Row e holds for lifetimes in (times[e-1], times[e]]: read the pruned trees inside.
    bounds = np.r_[0.0, times, times[-1] + 1.0]
    for e in range(0, len(times) + 1, 5):
        lifetime = 0.5 * (bounds[e] + bounds[e + 1])
        if bounds[e] == bounds[e + 1]:
            continue
        assert tuple(metrics[e]) == _pruned_counts(X, trees, lifetime)
    assert np.array_equal(metrics[:, 0], len(trees) + np.arange(len(times) + 1))
    expected = leaves if forward else np.zeros_like(leaves)
    assert np.array_equal(visitor.cells(), expected)


def test_forward_equals_backward_and_plans_are_reused(forest):
    X, trees, leaves = forest
    plan = plan_path(trees, leaves)
    rng = np.random.RandomState(3)
    means = [rng.normal(size=t.node_count) for t in trees]
    variances = [rng.uniform(0.1, 1.0, size=t.node_count) for t in trees]
    y = rng.normal(size=len(X))
    rows = []
    for forward in (True, False):
        reader = GaussianLeafReader(means, variances, y, 0.5)
        times, metrics = run_path(trees, leaves, reader, forward=forward, plan=plan)
        rows.append(metrics)
    np.testing.assert_allclose(rows[0], rows[1], rtol=0, atol=1e-12)
    counting = [walk_path(TreeCuts(*plan), CountingVisitor(len(trees), len(X)), f)
                for f in (True, False)]
    assert np.array_equal(counting[0], counting[1])
    # The forward walk stopped at a lifetime leaves the reader in the pruned forest's state.
    stop = times[len(times) // 3]
    reader = GaussianLeafReader(means, variances, y, 0.5)
    _, stopped = run_path(trees, leaves, reader, forward=True, stop=stop)
    np.testing.assert_allclose(stopped, rows[0][: len(stopped)], rtol=0, atol=1e-12)
    leaf_means = np.mean([m[t.apply(X, lifetime=stop)] for m, t in zip(means, trees,
                                                                        strict=True)], axis=0)
    np.testing.assert_allclose(reader.predictions()[0], leaf_means, rtol=0, atol=1e-12)


def test_terminal_cells_are_the_pruned_leaves(forest):
    X, trees, leaves = forest
    times = cut_events(trees)[0]
    plan = plan_path(trees, leaves, max_events=len(times) // 2)
    source = TreeCuts(*plan)
    lifetime = 0.5 * (times[len(times) // 2 - 1] + times[len(times) // 2])
    for cells, tree in zip(source.terminal_cells(), trees, strict=True):
        assert np.array_equal(cells, np.unique(tree.apply(X, lifetime=lifetime)))


def test_source_from_trees_truncates_at_max_cells(forest):
    X, trees, leaves = forest
    times = cut_events(trees)[0]
    n_events = len(times) // 2
    source = TreeCuts.from_trees(trees, max_cells=len(trees) + n_events)
    # The stored points by default: the same plan as from their leaves.
    for got, want in zip(source.as_tuple(), plan_path(trees, leaves, max_events=n_events),
                         strict=True):
        assert np.array_equal(got, want)
    # The kept model ends at the next birth time, or at the trees' lifetime.
    assert source.terminal == times[n_events]
    assert TreeCuts.from_trees(trees, leaves).terminal == trees[0].lifetime
    assert TreeCuts.from_trees(trees, leaves, stop=times[3]).terminal == times[3]
    assert TreeCuts.from_trees(trees, max_cells=1).n_events == 0


def test_ridge_visitor_walks_both_ways_on_the_engine(forest):
    from mondrian.kernel._ridge_path import RidgePathVisitor

    X, trees, leaves = forest
    n_events = len(cut_events(trees)[0]) // 2
    source = TreeCuts(*plan_path(trees, leaves, max_events=n_events))
    y = np.sin(3 * X[:, 0]) + X[:, 1]
    y -= y.mean()
    is_train = (np.arange(len(X)) < 45).astype(np.uint8)
    forward = walk_path(source, RidgePathVisitor(y, is_train, 0.1), True)
    # Backward from the terminal cells the source computes itself.
    backward = walk_path(source, RidgePathVisitor(y, is_train, 0.1), False)
    np.testing.assert_allclose(forward, backward, rtol=1e-8, atol=1e-8)
    assert np.array_equal(forward[:, 3], len(trees) + np.arange(n_events + 1))
    # Every row is the ridge solution of the features of the pruned trees at that lifetime.
    times = cut_events(trees)[0]  # all cuts: the next one bounds the last interval
    for e in (0, n_events // 2, n_events):
        lifetime = 0.5 * ((times[e - 1] if e > 0 else 0.0) + times[e])
        cells = np.column_stack([t.apply(X, lifetime=lifetime) for t in trees])
        Z = np.hstack([(cells[:, [m]] == np.unique(cells[:, m])).astype(float)
                       for m in range(len(trees))]) / np.sqrt(len(trees))
        train = is_train.astype(bool)
        w = np.linalg.solve(Z[train].T @ Z[train] + 0.1 * np.eye(Z.shape[1]),
                            Z[train].T @ y[train])
        mse = np.mean((Z[train] @ w - y[train]) ** 2)
        np.testing.assert_allclose(forward[e, 0], mse, rtol=1e-8)
