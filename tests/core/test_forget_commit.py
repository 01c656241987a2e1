"""A forget committed in one step (core/_forget_commit.pyx, ``TreeEnsemble.forget_committed``,
the classifiers' ``forget``): the same bytes as the forget under a snapshot, and atomic without
one: it raises before its first write or completes."""

import pickle

import numpy as np
import pytest

import mondrian.core.ensemble as ensemble_module
from _forget_checks import check_model
from mondrian import MondrianForestClassifier, MondrianTreeClassifier
from mondrian.core._forget_bulk import set_bulk_min_points
from mondrian.core._forget_commit import commit_forget
from mondrian.estimator.forgetting import plan_forget

from _data import awkward_classes

pytestmark = pytest.mark.exact


def _state(model):
    """Everything a forget may change, as bytes (store order, capacity and node ids too)."""
    ens = model._ensemble
    store = ens.store
    parts = [store.X.tobytes(), store.rows.tobytes(), store.stamps.tobytes(),
             store._X.shape, store.n_arrived]
    for tree in ens.trees:
        parts += [tree._raw_nodes().tobytes(), tree.bounds_array.tobytes(),
                  tree._full_value_array().tobytes(), tree.leaf_sample_assignment().tobytes(),
                  tree.box_slots.tobytes(), tree.n_samples_seen]
    return parts


def _fitted(seed, n=400, **params):
    X, y = awkward_classes(seed, n, 4, n_duplicates=40, noise=0.5)
    model = MondrianForestClassifier(n_estimators=4, random_state=seed, **params)
    return model.fit(X, y), X, y


def _plan(model, X, y, rows, weights=None):
    ens = model._ensemble
    units, columns, factor = model._forget_units(y[rows], len(rows))
    store = ens.store
    return plan_forget(store.X, store.rows, ens.feature_map.transform(X[rows]), units,
                       columns, weights, None, store.stamps, ens.matching_tree())


@pytest.mark.parametrize("size", [1, 3, 8, 60, 330, 396])
@pytest.mark.parametrize("weighted", [False, True])
def test_committed_forget_is_the_snapshot_forget_bit_for_bit(size, weighted):
    """``forget_committed`` and ``forget`` (the path under a snapshot) on two copies: the same
    trees, store and capacity (330 and 396 of 400 rows: the store gives its memory back)."""
    rng = np.random.default_rng(size)
    a, X, y = _fitted(size)
    if weighted:
        w = rng.integers(1, 4, len(X)).astype(float)
        a = MondrianForestClassifier(n_estimators=4, random_state=size).fit(X, y, w)
    a = pickle.loads(pickle.dumps(a))  # (two copies alike: a pickle renumbers box slots)
    b = pickle.loads(pickle.dumps(a))
    rows = np.sort(rng.choice(len(X), size, replace=False))
    weights = np.full(size, 1.0) if weighted else None
    plan = _plan(a, X, y, rows, weights)
    a._ensemble.forget(*plan)
    b._ensemble.forget_committed(*plan)
    assert _state(a) == _state(b)
    assert pickle.dumps(a) == pickle.dumps(b)
    check_model(b)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("shape", ["whole lists", "scattered"])
def test_unlinking_by_predecessors_is_the_walks_unlinking(seed, shape):
    """A large committed call takes its dropped points out of the leaves' lists by their
    predecessors (one pass over the links: ``unlink_by_links``), the path under a snapshot by
    walking the lists: the same lists, trees and store. The rows dropped are every point of
    some lists of the first tree with a few of the others (neighbours, heads and tails of
    one list), or scattered; their order in the call does not follow the lists."""
    rng = np.random.default_rng(seed)
    a, X, y = _fitted(seed)
    a = pickle.loads(pickle.dumps(a))
    b = pickle.loads(pickle.dumps(a))
    leaf_of = a._ensemble.trees[0].leaf_sample_assignment()
    if shape == "whole lists":
        leaves = rng.choice(np.unique(leaf_of), 6, replace=False)
        rows = np.flatnonzero(np.isin(leaf_of, leaves))
        rows = np.union1d(rows, rng.choice(len(X), 12, replace=False))
    else:
        rows = np.sort(rng.choice(len(X), 60, replace=False))
    assert len(rows) >= 8  # (the bulk path, with flags by store index)
    a.forget(X[rows], y[rows])
    b._ensemble.forget(*_plan(b, X, y, rows))
    assert _state(a) == _state(b)
    check_model(a)


@pytest.mark.parametrize("bulk_from", [8, 10**9])
def test_classifier_forget_commits_without_a_snapshot(bulk_from, monkeypatch):
    """The classifiers' forget takes neither a snapshot nor an undo log (one row or many),
    and ends as a forget under a snapshot does."""
    old = set_bulk_min_points(bulk_from)
    try:
        for model_class in (MondrianForestClassifier, MondrianTreeClassifier):
            X, y = awkward_classes(3, 300, 4, n_duplicates=30, noise=0.5)
            a = pickle.loads(pickle.dumps(model_class(random_state=3).fit(X, y)))
            b = pickle.loads(pickle.dumps(a))

            def refused(self, *args):
                raise AssertionError("a snapshot of the trees")

            with monkeypatch.context() as patch:
                patch.setattr(ensemble_module.TreeEnsemble, "snapshot", refused)
                patch.setattr(ensemble_module.TreeEnsemble, "undo_snapshot", refused)
                for rows in (np.arange(1), np.arange(5, 45)):
                    a.forget(X[rows], y[rows])
            for rows in (np.arange(1), np.arange(5, 45)):
                b._ensemble.forget(*_plan(b, X, y, rows))
            assert _state(a) == _state(b)
            check_model(a)
    finally:
        set_bulk_min_points(old)


@pytest.mark.parametrize("exception", [MemoryError, KeyboardInterrupt])
@pytest.mark.parametrize("size", [1, 50])
def test_failure_before_the_commit_changes_nothing(exception, size, monkeypatch):
    """Everything that can fail comes before the first write: a failure there (an
    allocation, an interrupt while the inputs are checked) leaves the model as it was."""
    model, X, y = _fitted(5)
    before = _state(model)

    def failing(*args):
        raise exception("injected before the writes")

    monkeypatch.setattr(ensemble_module, "commit_forget", failing)
    with pytest.raises(exception):
        model.forget(X[:size], y[:size])
    assert _state(model) == before
    monkeypatch.undo()
    model.forget(X[:size], y[:size])
    check_model(model)


@pytest.mark.parametrize("size", [1, 50])
def test_interrupt_after_the_commit_leaves_the_forget_complete(size, monkeypatch):
    """An interrupt arriving once the core returned finds the forget done: the model is the
    one of a completed forget (never half of it)."""
    model, X, y = _fitted(6)
    model = pickle.loads(pickle.dumps(model))
    done = pickle.loads(pickle.dumps(model)).forget(X[:size], y[:size])

    def interrupted(*args):
        commit_forget(*args)
        raise KeyboardInterrupt("injected after the writes")

    monkeypatch.setattr(ensemble_module, "commit_forget", interrupted)
    with pytest.raises(KeyboardInterrupt):
        model.forget(X[:size], y[:size])
    assert _state(model) == _state(done)
    check_model(model)


def test_bad_inputs_of_the_core_are_refused_before_any_write():
    model, X, y = _fitted(7)
    before = _state(model)
    ens = model._ensemble
    store = ens.store
    indices, deltas, drop, rows = _plan(model, X, y, np.arange(10))
    n = store.n_samples
    movers = np.arange(n - 10, n, dtype=np.intp)
    holes = np.arange(10, dtype=np.intp)
    good = dict(movers=movers, holes=holes)
    for name, value in (("movers", movers - 20), ("holes", holes + n)):
        args = {**good, name: value}
        with pytest.raises(ValueError, match="cannot move"):
            commit_forget(ens.trees, store, {"n_samples": n - 10}, store.X, store.rows,
                          indices, deltas, drop, args["movers"], args["holes"], n - 10,
                          store._X, store._rows, store._stamps, store._X[:n - 10],
                          store._rows[:n - 10])
        assert _state(model) == before
    with pytest.raises(ValueError, match="not held"):
        commit_forget(ens.trees, store, {}, store.X, store.rows, indices + n, deltas, drop,
                      movers, holes, n - 10, store._X, store._rows, store._stamps,
                      store._X[:n - 10], store._rows[:n - 10])
    assert _state(model) == before


@pytest.mark.parametrize("min_samples_split", [2, 5])
@pytest.mark.parametrize("weighted", [False, True])
def test_pause_checks_by_leads_are_the_rows_decisions(min_samples_split, weighted):
    """A large call settles its pause checks from each stored point's leading columns,
    found once for every tree (core/_forget_call.pyx): the same bytes as reading the rows."""
    from mondrian.core._forget_call import set_leads

    rng = np.random.default_rng(min_samples_split)
    X, y = awkward_classes(min_samples_split, 400, 4, n_duplicates=40, noise=0.5)
    w = rng.integers(1, 4, len(X)).astype(float) if weighted else None
    a = MondrianForestClassifier(n_estimators=4, random_state=1,
                                 min_samples_split=min_samples_split).fit(X, y, w)
    a = pickle.loads(pickle.dumps(a))
    b = pickle.loads(pickle.dumps(a))
    rows = np.sort(rng.choice(len(X), 120, replace=False))
    plan = _plan(a, X, y, rows, None if w is None else w[rows])
    a._ensemble.forget_committed(*plan)
    old = set_leads(False)
    try:
        b._ensemble.forget_committed(*plan)
    finally:
        set_leads(old)
    assert _state(a) == _state(b)
    check_model(a)
