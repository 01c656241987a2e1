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
    """Record the work (nodes and leaf-list entries visited) of every forget_trees and
    relocate_trees call, and refuse the pass over the whole store that finds rows without a
    tree."""
    work = []

    def count(function):
        def wrapper(*args):
            steps = function(*args)
            work.append(steps)
            return steps
        return wrapper

    def no_scan(X_store, U):
        raise AssertionError(f"a pass over the {X_store.shape[0]} stored points")

    monkeypatch.setattr(ensemble_module, "forget_trees", count(ensemble_module.forget_trees))
    monkeypatch.setattr(ensemble_module, "relocate_trees",
                        count(ensemble_module.relocate_trees))
    monkeypatch.setattr(forgetting_module, "_scan_matches", no_scan)
    return work


@pytest.mark.parametrize("kind", ["regressor", "classifier"])
def test_forget_one_row_work_does_not_grow_with_the_store(kind, monkeypatch):
    # 32 times more stored points: an O(n) step (a scan of the store, a renumbering of every
    # point) would do ~32 times the work per row; O(depth + leaf) grows like log n.
    per_row = {}
    for n in (1_000, 32_000):
        rng = np.random.default_rng(0)
        X = rng.random((n, 3))
        if kind == "regressor":
            y = rng.normal(size=n)
            model = MondrianForestRegressor(n_estimators=2, random_state=0)
        else:
            y = rng.integers(0, 5, n)  # (random labels: pure regions stay small)
            model = MondrianForestClassifier(n_estimators=2, random_state=0)
        model.fit(X, y)
        work = _counted(monkeypatch)
        for i in rng.choice(n, 30, replace=False):
            before = len(work)
            model.forget(X[i:i + 1], y[i:i + 1])
            assert len(work) in (before + 1, before + 2)  # (no mover when the last goes)
            work[before:] = [sum(work[before:])]
        per_row[n] = float(np.median(work))
        monkeypatch.undo()
        # Still the trees of the remaining points (boxes bit for bit; float sums to rounding).
        check_model(model, exact_values=kind == "classifier")
    assert per_row[32_000] < 3 * per_row[1_000], per_row


@pytest.mark.parametrize("kind", ["regressor", "classifier"])
def test_forget_one_row_mean_work_does_not_grow_with_the_tree(kind, monkeypatch):
    # The mean over rows, not the median: a step over every node (a search of the box slots'
    # owners, a pass clearing per-node marks) taken by some rows only would show in it; the
    # work counted includes the node slots read to keep the box slots dense.
    mean_work = {}
    for n in (1_000, 32_000):
        rng = np.random.default_rng(1)
        X = rng.random((n, 3))
        if kind == "regressor":
            model = MondrianForestRegressor(n_estimators=2, random_state=1)
            y = rng.normal(size=n)
        else:
            model = MondrianForestClassifier(n_estimators=2, random_state=1)
            y = rng.integers(0, 5, n)
        model.fit(X, y)
        work = _counted(monkeypatch)
        for i in rng.choice(n, 100, replace=False):
            model.forget(X[i:i + 1], y[i:i + 1])
        mean_work[n] = float(np.mean(work)) * len(work) / 100
        monkeypatch.undo()
    assert mean_work[32_000] < 4 * mean_work[1_000], mean_work


def test_warm_paths_reads_only():
    import pickle

    from mondrian.core._forget_store import warm_paths

    rng = np.random.default_rng(2)
    X = rng.random((500, 3))
    model = MondrianForestClassifier(n_estimators=3, random_state=2).fit(X, rng.integers(0, 3, 500))
    before = pickle.dumps(model)
    ensemble = model._ensemble
    warm_paths(ensemble.trees, ensemble.store.X, np.array([0, 499, 500, -1], dtype=np.intp))
    assert pickle.dumps(model) == before
