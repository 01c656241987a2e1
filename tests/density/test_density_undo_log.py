"""Small online updates of the density roll back through the full-cell trees' undo log: a
failure inside the core leaves the model bit-identical, without a tree copy."""

import pickle

import numpy as np
import pytest

from mondrian import MondrianForestDensity
from mondrian.core import ensemble as ensemble_module
from mondrian.core.ensemble import fail_after_trees
from mondrian.density._full_cell import FullCellTree

from _checks import run_interrupted

pytestmark = pytest.mark.exact

rng = np.random.RandomState(5)
X = rng.rand(400, 2)
N_TREES = 4


@pytest.fixture(autouse=True)
def _disarm():
    yield
    fail_after_trees(None)


def test_full_cell_rollback_restores_the_tree_exactly():
    tree = FullCellTree(2, 0, 6.0, 1, False, 3)
    empty = np.zeros((400, 0))
    tree.fit(X, empty, np.arange(100, dtype=np.intp))
    before = pickle.dumps(tree)
    for start, batch in [(100, 1), (150, 3), (200, 60)]:
        assert tree.begin_undo()
        tree.extend(X, empty, np.arange(start, start + batch, dtype=np.intp))
        assert pickle.dumps(tree) != before
        tree.rollback_undo()
        assert pickle.dumps(tree) == before
    # Committed one at a time, the tree is the one extended without a log.
    reference = pickle.loads(before)
    for i in range(100, 160):
        tree.begin_undo()
        tree.extend(X, empty, np.array([i], dtype=np.intp))
        tree.commit_undo()
    for i in range(100, 160):
        reference.extend(X, empty, np.array([i], dtype=np.intp))
    assert pickle.dumps(tree) == pickle.dumps(reference)


def _fitted():
    return MondrianForestDensity(N_TREES, lifetime=4.0, random_state=0).fit(X[:200])


def _small_update(model):
    return model.partial_fit(X[300:302])  # 2 rows on 200 stored: the undo path


def test_small_update_takes_the_undo_path(monkeypatch):
    copies = []
    original = ensemble_module.TreeEnsemble.snapshot
    monkeypatch.setattr(ensemble_module.TreeEnsemble, "snapshot",
                        lambda self: (copies.append(1), original(self))[1])
    _small_update(_fitted())
    assert copies == []


@pytest.mark.parametrize("exception", [MemoryError, KeyboardInterrupt])
@pytest.mark.parametrize("after", [0, 1, N_TREES - 1])
def test_failure_inside_the_core_leaves_the_density_unchanged(exception, after):
    model = _fitted()
    before = pickle.dumps(model)
    scores = model.score_samples(X[:50])
    fail_after_trees(after, exception)
    with pytest.raises(exception):
        _small_update(model)
    fail_after_trees(None)
    assert pickle.dumps(model) == before
    np.testing.assert_array_equal(model.score_samples(X[:50]), scores)
    reference = pickle.loads(before)
    _small_update(reference)
    _small_update(model)
    assert _canonical(model) == _canonical(reference)


def _canonical(model):
    """Pickle bytes of every attribute after a round trip (how objects are shared inside one
    pickle may differ between a model and a loaded copy; the values may not)."""
    state = pickle.loads(pickle.dumps(model)).__dict__
    return {name: pickle.dumps(value) for name, value in state.items()}


def test_keyboard_interrupt_mid_call_gives_before_or_after():
    base = MondrianForestDensity(N_TREES, lifetime=6.0, random_state=0).fit(X[:300])
    before = pickle.dumps(base)
    after_model = pickle.loads(before)
    _small_update(after_model)
    outcomes = [_canonical(pickle.loads(before)), _canonical(after_model)]
    interrupted = 0
    for delay in np.random.RandomState(2).uniform(0, 0.002, size=25):
        trial = pickle.loads(before)
        interrupted += run_interrupted(lambda trial=trial: _small_update(trial), delay)
        assert _canonical(trial) in outcomes
    assert interrupted > 0
