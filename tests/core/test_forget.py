"""Exact tests of forgetting (docs/algorithms.md §13): after ``forget`` every tree is the tree
of the remaining points under the same cuts, recounted from its leaf lists bit for bit, and a
failed call changes nothing."""

import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_array_equal

import mondrian.core.ensemble as ensemble_module
from _forget_checks import _sorted_rows, check_model, check_tree  # noqa: F401
from mondrian import (
    MondrianForestClassifier,
    MondrianForestRegressor,
    MondrianTreeClassifier,
    MondrianTreeRegressor,
)
from mondrian.core._forget import forget_trees, relocate_trees
from mondrian.core._tree import MondrianTree

from _data import awkward_classes

pytestmark = pytest.mark.exact


def _awkward(seed, n=160, d=4):
    return awkward_classes(seed, n, d, n_duplicates=min(30, n // 4), noise=0.5)


def _model(kind, seed, **params):
    if kind == "classifier":
        return MondrianForestClassifier(n_estimators=4, random_state=seed, **params)
    return MondrianForestRegressor(n_estimators=4, random_state=seed, **params)


def _state(model):
    """Everything a forget may change, as bytes."""
    ens = model._ensemble
    parts = [ens.store.X.tobytes(), ens.store.rows.tobytes(), pickle.dumps(model.__dict__.get(
        "_y_sums")), pickle.dumps(model.__dict__.get("_hyper_choice"))]
    for tree in ens.trees:
        parts += [tree._raw_nodes().tobytes(), tree.bounds_array.tobytes(),
                  tree._full_value_array().tobytes(), tree.leaf_sample_assignment().tobytes(),
                  bytes(tree.get_rng_state())]
    return parts


@pytest.mark.parametrize("kind", ["classifier", "regressor"])
@pytest.mark.parametrize("lifetime", [np.inf, 1.5])
def test_forget_leaves_the_trees_of_the_remaining_points(kind, lifetime, global_random_seed):
    X, y = _awkward(global_random_seed)
    target = y if kind == "classifier" else X[:, 0] + y
    model = _model(kind, global_random_seed, lifetime=lifetime).fit(X, target)
    rng = np.random.default_rng(global_random_seed)
    order = rng.permutation(len(X))
    for part in (order[:1], order[1:40], order[40:41], order[41:150]):
        model.forget(X[part], target[part])
        check_model(model, exact_values=kind == "classifier")
    assert model.n_samples_seen_ == len(X) - 150
    # What remains is exactly the multiset of the rows not forgotten (duplicates: which
    # copy goes does not matter).
    kept = np.sort(order[150:])
    assert_array_equal(_sorted_rows(model._store.X), _sorted_rows(model._scaler.transform(X[kept])))
    # Online growth after a forget stays consistent.
    model.partial_fit(X[order[:60]], target[order[:60]])
    check_model(model, exact_values=kind == "classifier")
    model.forget(X[kept], target[kept])
    check_model(model, exact_values=kind == "classifier")
    assert model.n_samples_seen_ == 60


@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_forget_then_partial_fit_restores_the_points(kind, global_random_seed):
    X, y = _awkward(global_random_seed)
    target = y if kind == "classifier" else X[:, 1] * 2.0
    model = _model(kind, global_random_seed).fit(X, target)
    S = np.arange(10, 70)
    model.forget(X[S], target[S])
    model.partial_fit(X[S], target[S])
    check_model(model, exact_values=kind == "classifier")
    assert_array_equal(_sorted_rows(model._store.X), _sorted_rows(model._scaler.transform(X)))


def test_forgetting_every_point_is_refused(global_random_seed):
    """A model of no points has no root for its readers: forgetting every stored point is
    refused and changes nothing; forgetting all but one keeps a model that predicts."""
    X, y = _awkward(global_random_seed, n=40)
    for kind in ("classifier", "regressor"):
        target = y if kind == "classifier" else X[:, 0].copy()
        model = _model(kind, global_random_seed).fit(X, target)
        before = _state(model)
        with pytest.raises(ValueError, match="cannot forget all 40 stored points"):
            model.forget(X, target)
        assert _state(model) == before
        model.forget(X[1:], target[1:])
        assert model.n_samples_seen_ == 1
        assert np.all(np.isfinite(model.predict(X)))
        check_model(model, exact_values=kind == "classifier")
        model.partial_fit(X[:10], target[:10])
        check_model(model, exact_values=kind == "classifier")


def test_counts_are_recounts_and_class_statistics_exact():
    """Class counts after a forget equal the counts of the remaining labels (bit for bit)."""
    X, y = _awkward(3)
    model = MondrianForestClassifier(n_estimators=5, random_state=3).fit(X, y)
    model.forget(X[:50], y[:50])
    for tree in model._trees:
        root = tree._full_value_array()[0]
        assert_array_equal(root[model._class_columns()], np.bincount(y[50:], minlength=2))


def test_regressor_sums_are_recounted():
    X, y = _awkward(4)
    t = X[:, 0] * 3.0
    a = MondrianForestRegressor(n_estimators=3, random_state=4).fit(X, t)
    a.forget(X[:60], t[:60])
    assert_array_equal(a._y_sums, a._store.rows.sum(axis=0))
    assert a._hyper_choice is not None


def test_pure_nodes_become_paused_leaves():
    """Forgetting the only point of another label below a node pauses it (the classifier's
    pause rule), dropping its subtree: every remaining internal node is impure."""
    rng = np.random.default_rng(0)
    X = rng.random((200, 2))  # past the warm-up of the feature map: the trees forget in place
    y = (X[:, 0] > 0.5).astype(int)
    X = np.vstack([X, [[0.1, 0.1]]])
    y = np.append(y, 1)  # one point of label 1 among the zeros
    model = MondrianForestClassifier(n_estimators=20, random_state=0).fit(X, y)
    model.forget(X[-1:], y[-1:])
    check_model(model)
    n_paused = 0
    for tree in model._trees:
        nodes, values = tree.nodes_array, tree._full_value_array()
        for j in np.flatnonzero(nodes["left_child"] != -1):
            assert np.count_nonzero(values[j]) > 1
        for j in np.flatnonzero(nodes["left_child"] == -1):
            if np.count_nonzero(values[j]) == 1:
                assert nodes["paused"][j]
        n_paused += int(nodes["paused"].sum())
    assert n_paused > 0


def test_weights_partial_and_whole(global_random_seed):
    X, y = _awkward(global_random_seed, n=80)
    w = np.arange(80) % 3 + 1.0
    model = MondrianForestClassifier(n_estimators=3, random_state=global_random_seed,
                                     min_samples_split=3).fit(X, y, sample_weight=w)
    keep = w > 1
    model.forget(X[keep][:20], y[keep][:20], sample_weight=np.ones(20))
    check_model(model)
    n = model.n_samples_seen_
    assert n == 80  # lowering a weight keeps the point
    rows = model._store.rows[:, model._class_columns()].sum(axis=1)
    assert_array_equal(rows, np.where(keep, w - np.cumsum(keep) * 0, w) - (
        keep & (np.cumsum(keep) <= 20)))
    model.forget(X[:6], y[:6])  # whole copies, whatever their weight
    assert model.n_samples_seen_ == n - 6
    check_model(model)
    with pytest.raises(ValueError, match="less weight"):
        model.forget(X[79:80], y[79:80], sample_weight=[100.0])


def test_duplicates_forget_one_copy_each():
    X = np.repeat(np.arange(6.0).reshape(3, 2), 3, axis=0)  # three copies of three rows
    y = np.array([0, 0, 1, 1, 1, 0, 0, 1, 1])
    model = MondrianForestClassifier(n_estimators=3, random_state=0).fit(X, y)
    model.forget(X[:1], y[:1])
    assert model.n_samples_seen_ == 8
    model.forget(X[1:2], y[1:2])  # the other copy of row 0 with label 0
    assert model.n_samples_seen_ == 7
    with pytest.raises(ValueError, match="row 0 of X"):
        model.forget(X[:1], y[:1])  # no copy with label 0 left
    model.forget(X[:1])  # any label: the copy labelled 1
    assert model.n_samples_seen_ == 6
    with pytest.raises(ValueError, match="row 0 of X"):
        model.forget(X[:1])
    check_model(model)


@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_bad_row_changes_nothing(kind):
    X, y = _awkward(5)
    target = y if kind == "classifier" else X[:, 0].copy()
    model = _model(kind, 5).fit(X, target)
    before = _state(model)
    bad = X[:5].copy()
    bad[3, 0] += 1e-9
    with pytest.raises(ValueError, match="row 3 of X"):
        model.forget(bad, target[:5])
    assert _state(model) == before
    with pytest.raises(ValueError):
        model.forget(X[:2, :3], target[:2])  # wrong width
    assert _state(model) == before


@pytest.mark.parametrize("exception", [MemoryError, KeyboardInterrupt])
def test_failure_inside_the_core_changes_nothing(exception, monkeypatch):
    # (The regressor re-derives its sums and hyperparameters after a forget: its trees are
    # snapshotted; a classifier's forget commits in one step, tests/core/test_forget_commit.py.)
    X, y = _awkward(6)
    y = X[:, 0] + y
    model = MondrianForestRegressor(n_estimators=6, random_state=6).fit(X, y)
    before = _state(model)
    calls = []

    def failing(trees, *args):
        forget_trees(trees[:3], *args)  # half the trees changed, then the failure
        calls.append(1)
        raise exception("injected")

    monkeypatch.setattr(ensemble_module, "forget_trees", failing)
    with pytest.raises(exception):
        model.forget(X[:30], y[:30])
    assert calls and _state(model) == before

    def failing_relocate(trees, *args):
        relocate_trees(trees[:3], *args)
        raise exception("injected")

    monkeypatch.setattr(ensemble_module, "forget_trees", forget_trees)
    monkeypatch.setattr(ensemble_module, "relocate_trees", failing_relocate)
    with pytest.raises(exception):
        model.forget(X[:30], y[:30])
    assert _state(model) == before


def test_undo_log_rolls_a_forget_back_bit_for_bit():
    rng = np.random.default_rng(7)
    X = rng.random((300, 3))
    rows = np.eye(3)[rng.integers(0, 3, 300)]
    for bms, lean in ((0, False), (8, True), (32, False)):
        tree = MondrianTree(3, 3, 3.0, 2, True, 7, box_min_samples=bms, lean_values=lean)
        tree.fit(X, rows, np.arange(300))
        before = (tree._raw_nodes().tobytes(), tree.bounds_array.tobytes(),
                  tree._full_value_array().tobytes(), tree.leaf_sample_assignment().tobytes(),
                  tree.box_count)
        tree.begin_undo()
        gone = rng.choice(300, 120, replace=False).astype(np.intp)
        forget_trees([tree], X, rows, gone, rows[gone], np.ones(120, np.uint8))
        assert tree.node_count < 2 * 300
        tree.rollback_undo()
        after = (tree._raw_nodes().tobytes(), tree.bounds_array.tobytes(),
                 tree._full_value_array().tobytes(), tree.leaf_sample_assignment().tobytes(),
                 tree.box_count)
        assert after == before


def test_tree_estimators_forget():
    X, y = _awkward(8)
    clf = MondrianTreeClassifier(random_state=0).fit(X, y)
    clf.forget(X[:20], y[:20])
    check_model(clf)
    reg = MondrianTreeRegressor(random_state=0).fit(X, X[:, 0])
    reg.forget(X[:20], X[:20, 0])
    check_model(reg, exact_values=False)
    with pytest.raises(ValueError, match="read-only"):
        MondrianForestClassifier(n_estimators=2, random_state=0).fit(X, y).estimators_[0] \
            .forget(X[:1], y[:1])


def test_forget_during_the_warm_up_is_a_fit_on_the_rest():
    """Before the min-max map freezes (fewer than 64 points), a forget re-samples the trees
    from their seeds on the remaining points: the very model a fit on them gives."""
    X, y = _awkward(9, n=30)
    model = MondrianForestClassifier(n_estimators=3, random_state=0).fit(X, y)
    model.forget(X[:10], y[:10])
    fresh = MondrianForestClassifier(n_estimators=3, random_state=0).fit(X[10:], y[10:])
    assert_array_equal(model._store.X, fresh._store.X)
    for a, b in zip(model._trees, fresh._trees, strict=True):
        assert a._raw_nodes().tobytes() == b._raw_nodes().tobytes()
    assert_array_equal(model.predict_proba(X), fresh.predict_proba(X))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 6), st.integers(0, 2**16)),
                min_size=1, max_size=12),
       st.sampled_from([np.inf, 1.0]))
def test_learn_forget_sequences_match_a_refit_on_what_remains(steps, lifetime):
    """Random sequences of partial_fit and forget: the model always holds exactly the points
    a reference keeps (its store is the multiset of the remaining rows, in arrival order),
    its trees are consistent, and its predictions are those of a model whose trees are
    those trees (no stale statistics)."""
    rng = np.random.default_rng(0)
    pool = np.round(rng.random((400, 2)) * 8) / 8  # many duplicates
    labels = (pool[:, 0] + pool[:, 1] > 1).astype(int)
    model = MondrianForestClassifier(n_estimators=2, lifetime=lifetime, random_state=1)
    model.fit(pool[:80], labels[:80])
    reference = list(range(80))
    cursor = 80
    for learn, size, seed in steps:
        if learn or len(reference) <= size:
            new = list(range(cursor, min(cursor + size, 400)))
            cursor += len(new)
            if new:
                model.partial_fit(pool[new], labels[new])
                reference += new
        else:
            pick = np.random.default_rng(seed).choice(len(reference), size, replace=False)
            gone = [reference[k] for k in sorted(pick)]
            model.forget(pool[gone], labels[gone])
            # The oldest copy of each identical (row, label) goes.
            for i in gone:
                same = [r for r in reference if (pool[r] == pool[i]).all()
                        and labels[r] == labels[i]]
                reference.remove(same[0])
        check_model(model)
        # In arrival order (the store moves its last points into forgotten places).
        arrival = np.argsort(model._store.stamps)
        U = model._scaler.transform(pool[reference])
        assert_array_equal(model._store.X[arrival], U)
        assert_array_equal(model._store.rows[arrival][:, model._class_columns()],
                           np.eye(2)[labels[reference]])


def test_pickle_after_forget_round_trips_and_keeps_learning():
    X, y = _awkward(10)
    model = MondrianForestClassifier(n_estimators=3, random_state=0).fit(X, y)
    model.forget(X[5:40], y[5:40])
    copy = pickle.loads(pickle.dumps(model))
    assert _state(copy) == _state(model)
    assert_array_equal(copy._store.stamps, model._store.stamps)
    for m in (model, copy):
        m.partial_fit(X[5:20], y[5:20])
        m.forget(X[100:110], y[100:110])
    assert _state(copy) == _state(model)
    check_model(copy)


@pytest.mark.parametrize("trial", range(24))
def test_tree_core_forget_and_relocate_random(trial):
    """The tree core alone, on random small problems (every box stored or lean boxes, lean
    values, pausing or not, finite or infinite lifetime, ties): forget random subsets in
    steps (one step under an undo log rolled back and replayed), move the store's last
    points into the freed places, then learn online again; the tree always equals the
    recount of its points."""
    rng = np.random.default_rng(trial)
    n, D, K = int(rng.integers(2, 120)), int(rng.integers(1, 4)), 3
    X = rng.random((n, D))
    if trial % 2:
        X = np.round(X * 5) / 5
    rows = np.eye(K)[rng.integers(0, K, n)]
    tree = MondrianTree(D, K, [np.inf, 2.0][trial % 2], 2, trial % 4 < 2, trial,
                        box_min_samples=[0, 4, 32][trial % 3], lean_values=trial % 3 == 1)
    tree.fit(X, rows, np.arange(n))
    held = np.arange(n)
    for step in range(3):
        if len(held) < 2:
            break
        gone = rng.choice(held, int(rng.integers(1, len(held))), replace=False).astype(np.intp)
        args = (X, rows, gone, rows[gone].copy(), np.ones(len(gone), np.uint8))
        if step == 1:
            before = (tree._raw_nodes().tobytes(), tree.bounds_array.tobytes(),
                      tree._full_value_array().tobytes(), tree.leaf_sample_assignment().tobytes())
            tree.begin_undo()
            forget_trees([tree], *args)
            tree.rollback_undo()
            assert before == (tree._raw_nodes().tobytes(), tree.bounds_array.tobytes(),
                              tree._full_value_array().tobytes(),
                              tree.leaf_sample_assignment().tobytes())
        forget_trees([tree], *args)
        held = np.setdiff1d(held, gone)
    # The store keeps `held` only: its last points move into the places of the others.
    m = len(held)
    holes = np.setdiff1d(np.arange(m), held).astype(np.intp)
    movers = held[held >= m].astype(np.intp)
    relocate_trees([tree], X, movers, holes, m)
    X2, rows2 = X.copy(), rows.copy()
    X2[holes], rows2[holes] = X[movers], rows[movers]
    X2, rows2 = np.ascontiguousarray(X2[:m]), np.ascontiguousarray(rows2[:m])
    tree.attach_points(X2, rows2)
    check_tree(tree, X2, rows2)
    Xn = rng.random((5, D))
    X3 = np.vstack([X2, Xn])
    rows3 = np.vstack([rows2, np.eye(K)[rng.integers(0, K, 5)]])
    tree.extend(X3, rows3, np.arange(m, m + 5))
    check_tree(tree, X3, rows3)
