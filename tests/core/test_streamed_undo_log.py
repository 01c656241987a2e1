"""The undo log of a mini-batch extension: past its first entries it is written with
streaming stores (``UndoLog.stream``, mondrian.core._undo). A rollback restores the tree bit
for bit and a commit keeps what an extension without a log makes, for full and lean trees and
odd widths (the streamed copies' last double, rows not on 16 bytes)."""

import pickle

import numpy as np
import pytest

from mondrian.core._tree import MondrianTree

rng = np.random.RandomState(11)
D, S = 5, 3
X = rng.rand(3000, D)
ROWS = np.eye(S)[rng.randint(0, S, 3000)]
STORED = 1500


def _tree(lean):
    tree = MondrianTree(D, S, np.inf, 2, True, seed=5, box_min_samples=8 if lean else 0,
                        lean_values=lean)
    return tree.fit(X, ROWS, np.arange(STORED, dtype=np.intp))


@pytest.mark.parametrize("lean", [False, True])
@pytest.mark.parametrize("batch", [1, 16, 150, 700])
def test_rollback_of_a_batch_restores_the_tree_exactly(lean, batch):
    tree = _tree(lean)
    before = pickle.dumps(tree)
    for start in range(STORED, X.shape[0] - batch, 433):
        assert tree.begin_undo()
        tree.extend(X, ROWS, np.arange(start, start + batch, dtype=np.intp))
        assert pickle.dumps(tree) != before
        tree.rollback_undo()
        assert not tree.undo_open
        assert pickle.dumps(tree) == before


@pytest.mark.parametrize("lean", [False, True])
def test_committed_batches_match_batches_without_a_log(lean):
    tree, reference = _tree(lean), _tree(lean)
    for start in range(STORED, X.shape[0], 150):
        indices = np.arange(start, min(start + 150, X.shape[0]), dtype=np.intp)
        tree.begin_undo()
        tree.extend(X, ROWS, indices)
        if start % 300 == 0:  # (every other batch rolled back, then extended again)
            tree.rollback_undo()
            tree.begin_undo()
            tree.extend(X, ROWS, indices)
        tree.commit_undo()
        reference.extend(X, ROWS, indices)
        assert pickle.dumps(tree) == pickle.dumps(reference)
