"""The undo log of MondrianTree: a rollback restores the tree bit for bit."""

import pickle

import numpy as np
import pytest

from mondrian.core._tree import MondrianTree

rng = np.random.RandomState(3)
X = rng.rand(400, 3)
ROWS = np.eye(3)[rng.randint(0, 3, 400)]


def _tree(n, pause_pure=False, min_samples_split=2):
    tree = MondrianTree(3, 3, 3.0, min_samples_split, pause_pure, seed=7)
    return tree.fit(X, ROWS, np.arange(n, dtype=np.intp))


@pytest.mark.parametrize("pause_pure", [False, True])
@pytest.mark.parametrize("batch", [1, 5, 100])
def test_rollback_restores_the_tree_exactly(pause_pure, batch):
    tree = _tree(200, pause_pure, 5)
    before = pickle.dumps(tree)
    for start in range(200, 400 - batch, 37):
        assert tree.begin_undo()
        assert not tree.begin_undo()  # already open: left to its opener
        tree.extend(X, ROWS, np.arange(start, start + batch, dtype=np.intp))
        assert pickle.dumps(tree) != before
        tree.rollback_undo()
        assert not tree.undo_open
        assert pickle.dumps(tree) == before


def test_commit_keeps_the_changes_and_later_updates_match():
    tree, reference = _tree(150, True, 5), _tree(150, True, 5)
    for i in range(150, 250):
        tree.begin_undo()
        tree.extend(X, ROWS, np.array([i], dtype=np.intp))
        tree.commit_undo()
        reference.extend(X, ROWS, np.array([i], dtype=np.intp))
    assert pickle.dumps(tree) == pickle.dumps(reference)


def test_rollback_of_a_widening():
    tree = _tree(150)
    before = pickle.dumps(tree)
    wide = np.zeros((400, 5))
    wide[:, [0, 2, 4]] = ROWS
    tree.begin_undo()
    tree.set_value_columns(5, np.array([0, 2, 4], dtype=np.intp))
    tree.extend(X, wide, np.arange(150, 300, dtype=np.intp))
    assert tree.value_stride == 5
    tree.rollback_undo()
    assert tree.value_stride == 3
    assert pickle.dumps(tree) == before
    tree.extend(X, ROWS, np.arange(150, 400, dtype=np.intp))  # still grows (buffers sound)
    assert tree.node_count > 0


def test_widening_after_logged_changes_is_refused():
    tree = _tree(150)
    tree.begin_undo()
    tree.extend(X, ROWS, np.array([151], dtype=np.intp))
    with pytest.raises(RuntimeError, match="undo log"):
        tree.set_value_columns(4, np.arange(3, dtype=np.intp))
    tree.rollback_undo()


def test_rollback_of_a_column_order():
    tree = _tree(150)
    before = pickle.dumps(tree)
    tree.begin_undo()
    tree.set_column_order(np.array([2, 0], dtype=np.intp))
    assert tree.n_columns == 2 and tree.value_array.shape == (tree.node_count, 2)
    tree.set_value_columns(6, np.array([0, 1, 2], dtype=np.intp))
    tree.set_column_order(np.array([2, 0, 1, 5], dtype=np.intp))
    tree.rollback_undo()
    assert pickle.dumps(tree) == before
    np.testing.assert_array_equal(tree.column_order, np.arange(3))


def test_read_columns_follow_the_order_not_the_storage():
    """A tree storing permuted rows, read through the inverse order, is the tree of the
    plain rows: same structure, same statistics as read, same pickle once re-laid out."""
    perm = np.array([2, 0, 1])
    plain = _tree(200, pause_pure=True, min_samples_split=3)
    stored = MondrianTree(3, 3, 3.0, 3, True, seed=7)
    stored.set_column_order(np.argsort(perm))  # class k lives in stored column argsort(perm)[k]
    rows = np.ascontiguousarray(ROWS[:, perm])
    stored.fit(X, rows, np.arange(200, dtype=np.intp))
    np.testing.assert_array_equal(stored.nodes_array, plain.nodes_array)
    np.testing.assert_array_equal(stored.value_array, plain.value_array)
    with pytest.raises(ValueError, match="distinct"):
        stored.set_column_order([0, 0])
    with pytest.raises(ValueError, match="drops a column that is read"):
        stored.set_value_columns(3, np.array([0, -1, 1], dtype=np.intp))
    stored.set_value_columns(3, perm.astype(np.intp))  # stored column c holds class perm[c]
    np.testing.assert_array_equal(stored.column_order, np.arange(3))
    assert pickle.dumps(stored) == pickle.dumps(plain)


def test_pause_rule_sums_weighted_counts_in_the_read_order():
    """0.7 + 0.2 + 0.1 is 0.9999999999999999 in that order and 1.0 in the reverse one: with
    min_samples_split=1 the leaf of these three weighted points pauses exactly when the sum
    runs over the read columns (the sorted classes), whatever the stored order."""
    points = np.array([[0.1, 0.1, 0.1], [0.5, 0.5, 0.5], [0.9, 0.9, 0.9]])
    weights = np.diag([0.7, 0.2, 0.1])
    plain = MondrianTree(3, 3, np.inf, 1, False, seed=1)
    plain.count_columns = -1
    plain.fit(points, weights, np.arange(3, dtype=np.intp))
    assert plain.node_count == 1  # 0.9999999999999999 < 1: paused
    stored = MondrianTree(3, 3, np.inf, 1, False, seed=1)
    stored.count_columns = -1
    stored.set_column_order([2, 1, 0])
    stored.fit(points, weights[:, ::-1].copy(), np.arange(3, dtype=np.intp))
    assert stored.node_count == 1
