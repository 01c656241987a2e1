"""The undo log of MondrianTree (issue 11): a rollback restores the tree bit for bit."""

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
