"""The cost of forgetting one row: O(depth + leaf size) per tree, whatever the number of
stored points (issue 26: forgetting a row is orders of magnitude cheaper than a refit)."""

import numpy as np
import pytest

import mondrian.core.ensemble as ensemble_module
import mondrian.estimator.forgetting as forgetting_module
from _forget_checks import check_model
from mondrian import MondrianForestClassifier, MondrianForestRegressor

pytestmark = pytest.mark.exact


def _counted(monkeypatch):
    """Record the work (nodes and leaf-list entries visited) of every forget_trees,
    relocate_trees and commit_forget call, and refuse the pass over the whole store that
    finds rows without a tree."""
    work = []

    def count(function):
        def wrapper(*args):
            steps = function(*args)
            work.append(steps)
            return steps
        return wrapper

    def no_scan(X_store, U):
        raise AssertionError(f"a pass over the {X_store.shape[0]} stored points")

    def count_commit(*args):  # (the classifiers' forget: one call, its work in an array)
        out = np.zeros(1, dtype=np.intp)
        commit(*args, out)
        work.append(int(out[0]))

    commit = ensemble_module.commit_forget
    monkeypatch.setattr(ensemble_module, "commit_forget", count_commit)
    monkeypatch.setattr(ensemble_module, "forget_trees", count(ensemble_module.forget_trees))
    monkeypatch.setattr(ensemble_module, "relocate_trees",
                        count(ensemble_module.relocate_trees))
    monkeypatch.setattr(forgetting_module, "_scan_matches", no_scan)
    return work


def _fitted(kind, n, seed):
    """A 2-tree model of ``kind`` on ``n`` random points of 3 features, its data and rng."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, 3))
    if kind == "regressor":
        y = rng.normal(size=n)
        model = MondrianForestRegressor(n_estimators=2, random_state=seed)
    else:
        y = rng.integers(0, 5, n)  # (random labels: pure regions stay small)
        model = MondrianForestClassifier(n_estimators=2, random_state=seed)
    return model.fit(X, y), X, y, rng


@pytest.mark.parametrize("kind", ["regressor", "classifier"])
def test_forget_one_row_work_does_not_grow_with_the_store(kind, monkeypatch):
    # 32 times more stored points: an O(n) step (a scan of the store, a renumbering of every
    # point) would do ~32 times the work per row; O(depth + leaf) grows like log n. The mean
    # too, not only the median: a step over every node (a search of the box slots' owners, a
    # pass clearing per-node marks) taken by some rows only shows in it; the work counted
    # includes the node slots read to keep the box slots dense.
    per_row, mean = {}, {}
    for n in (1_000, 32_000):
        model, X, y, rng = _fitted(kind, n, 0)
        work = _counted(monkeypatch)
        for i in rng.choice(n, 100, replace=False):
            before = len(work)
            model.forget(X[i:i + 1], y[i:i + 1])
            assert len(work) in (before + 1, before + 2)  # (no mover when the last goes)
            work[before:] = [sum(work[before:])]
        per_row[n] = float(np.median(work))
        mean[n] = float(np.mean(work))
        monkeypatch.undo()
        # Still the trees of the remaining points (boxes bit for bit; float sums to rounding).
        check_model(model, exact_values=kind == "classifier")
    assert per_row[32_000] < 3 * per_row[1_000], per_row
    assert mean[32_000] < 4 * mean[1_000], mean


def test_warm_paths_reads_only():
    import pickle

    from mondrian.core._forget_store import warm_paths

    model = _fitted("classifier", 500, 2)[0]
    before = pickle.dumps(model)
    ensemble = model._ensemble
    warm_paths(ensemble.trees, ensemble.store.X, np.array([0, 499, 500, -1], dtype=np.intp))
    assert pickle.dumps(model) == before
