"""Forgetting many rows in one call (core/_forget_bulk.pyx): the points' paths are walked
together, level by level, and the store's moves after them too. The result must be the one of
the one-path-per-point walks bit for bit (same bytes), and the tree of a sequence of one-row
forgets (same structure, boxes, statistics and predictions, up to node ids and store order)."""

import pickle
from contextlib import contextmanager

import numpy as np
import pytest

import mondrian.core.ensemble as ensemble_module
from _forget_checks import check_model, check_tree
from mondrian import (
    MondrianForestClassifier,
    MondrianForestDensity,
    MondrianForestRegressor,
    MondrianTreeClassifier,
    MondrianTreeRegressor,
)
from mondrian.core._forget import forget_trees, relocate_trees
from mondrian.core._forget_bulk import set_bulk_min_points
from mondrian.core._tree import MondrianTree

from _data import awkward_classes

pytestmark = pytest.mark.exact

ONE_PATH = 10**9  # set_bulk_min_points: every call walks one path per point


@contextmanager
def _bulk_from(n):
    old = set_bulk_min_points(n)
    try:
        yield
    finally:
        set_bulk_min_points(old)


def _state(model):
    """Everything a forget may change, as bytes (store order and node ids included)."""
    ens = model._ensemble
    parts = [ens.store.X.tobytes(), ens.store.rows.tobytes(), ens.store.stamps.tobytes()]
    for tree in ens.trees:
        parts += [tree._raw_nodes().tobytes(), tree.bounds_array.tobytes(),
                  tree._full_value_array().tobytes(), tree.leaf_sample_assignment().tobytes(),
                  tree.box_slots.tobytes(), bytes(tree.get_rng_state())]
    return parts


def _canonical(tree, X):
    """The tree from its root, without node ids or store indices: each node's cut, split
    time, count, paused flag, box and statistics (bytes), and each leaf's points (their
    coordinates, sorted)."""
    nodes = tree.nodes_array
    bounds, values = tree.bounds_array, tree._full_value_array()

    def walk(j):
        node = nodes[j]
        head = (int(node["feature"]), float(node["threshold"]), float(node["split_time"]),
                int(node["n_node_samples"]), bool(node["paused"]), bounds[j].tobytes(),
                values[j].tobytes())
        if node["left_child"] == -1:
            points = sorted(X[i].tobytes() for i in tree.leaf_samples(j))
            return head, tuple(points)
        return head, walk(node["left_child"]), walk(node["right_child"])

    return walk(0)


def _data(seed, n=300, d=4, duplicates=True):
    X, y = awkward_classes(seed, n, d, n_duplicates=40 if duplicates else 0, noise=0.5)
    return X, y


MODELS = {
    "forest-classifier": lambda s, **p: MondrianForestClassifier(n_estimators=3, random_state=s,
                                                                 **p),
    "forest-regressor": lambda s, **p: MondrianForestRegressor(n_estimators=3, random_state=s,
                                                               **p),
    "tree-classifier": lambda s, **p: MondrianTreeClassifier(random_state=s, **p),
    "tree-regressor": lambda s, **p: MondrianTreeRegressor(random_state=s, **p),
}


def _target(kind, X, y):
    return y if "classifier" in kind else X[:, 0] + y


def _predictions(model, X):
    if hasattr(model, "predict_proba"):
        return model.predict_proba(X).tobytes()
    return model.predict(X).tobytes()


@pytest.mark.parametrize("kind", list(MODELS))
@pytest.mark.parametrize("lifetime", [np.inf, 1.0])
@pytest.mark.parametrize("weighted", [False, True])
def test_bulk_forget_is_the_one_path_forget_bit_for_bit(kind, lifetime, weighted):
    X, y = _data(3)
    target = _target(kind, X, y)
    rng = np.random.default_rng(0)
    weights = rng.integers(1, 4, len(X)).astype(float) if weighted else None
    parts = [rng.choice(len(X), 120, replace=False), rng.choice(len(X), 9, replace=False)]
    states = []
    for bulk_from in (ONE_PATH, 8):
        model = MODELS[kind](5, lifetime=lifetime).fit(X, target, sample_weight=weights)
        with _bulk_from(bulk_from):
            model.forget(X[parts[0]], target[parts[0]])
            rest = parts[1][~np.isin(parts[1], parts[0])]
            if weighted:  # part of each row's weight (the rows stay, lighter)
                model.forget(X[rest], target[rest], sample_weight=np.full(len(rest), 0.5))
            else:
                model.forget(X[rest], target[rest])
        check_model(model, exact_values="classifier" in kind)
        states.append((_state(model), _predictions(model, X)))
    assert states[0] == states[1]


def _sequential_and_bulk(make, X, target, gone):
    """A model forgetting the rows ``gone`` one call per row (oldest first), and one
    forgetting them in one call."""
    labels = () if target is None else (target,)
    sequential = make().fit(X, *labels)
    for i in gone:
        sequential.forget(X[i:i + 1], *(t[i:i + 1] for t in labels))
    bulk = make().fit(X, *labels)
    with _bulk_from(8):
        bulk.forget(X[gone], *(t[gone] for t in labels))
    return sequential, bulk


@pytest.mark.parametrize("kind", list(MODELS))
@pytest.mark.parametrize("lifetime", [np.inf, 1.0])
def test_bulk_forget_is_a_sequence_of_one_row_forgets(kind, lifetime):
    # Rows leave each node's statistics in the order of the store (one call) or of the calls:
    # the same order here, so float sums (a regressor's) keep their bits too. With
    # duplicates, a row may remove an older copy, earlier in the store than in the calls:
    # class counts are exact in any order, float sums may differ in the last bit then.
    X, y = _data(4, duplicates="classifier" in kind)
    target = _target(kind, X, y)
    gone = np.arange(0, 200, 2)  # (in store order: the rows lose their points in that order)
    sequential, bulk = _sequential_and_bulk(lambda: MODELS[kind](7, lifetime=lifetime), X,
                                            target, gone)
    if "classifier" in kind:
        # (A regressor re-chooses its held-out hyperparameters as its store shrinks past
        # thresholds: they depend on the sizes the calls went through, not on the trees.)
        assert _predictions(sequential, X) == _predictions(bulk, X)
    for a, b in zip(sequential._trees, bulk._trees, strict=True):
        assert _canonical(a, sequential._store.X) == _canonical(b, bulk._store.X)
    check_model(bulk, exact_values="classifier" in kind)


def test_bulk_forget_of_the_density_is_the_one_path_forget():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 2))
    X[150:] = X[:50]  # duplicates
    states = []
    for bulk_from in (ONE_PATH, 8):
        model = MondrianForestDensity(n_estimators=3, lifetime=5.0, random_state=1).fit(X)
        with _bulk_from(bulk_from):
            model.forget(X[20:120])
        states.append((pickle.dumps(model._trees), model._store.X.tobytes(),
                       model.score_samples(X).tobytes()))
    assert states[0] == states[1]
    sequential, bulk = _sequential_and_bulk(
        lambda: MondrianForestDensity(n_estimators=3, lifetime=5.0, random_state=1), X, None,
        np.arange(20, 120))
    assert sequential.score_samples(X).tobytes() == bulk.score_samples(X).tobytes()


@pytest.mark.parametrize("kind", ["forest-classifier", "forest-regressor"])
def test_forgetting_all_but_a_few_rows(kind):
    X, y = _data(6, n=200, duplicates=kind == "forest-classifier")
    target = _target(kind, X, y)
    keep = np.array([3, 77, 150])
    gone = np.setdiff1d(np.arange(len(X)), keep)
    sequential, bulk = _sequential_and_bulk(lambda: MODELS[kind](2), X, target, gone)
    assert bulk.n_samples_seen_ == 3
    if kind == "forest-classifier":
        assert _predictions(sequential, X) == _predictions(bulk, X)
    for a, b in zip(sequential._trees, bulk._trees, strict=True):
        assert _canonical(a, sequential._store.X) == _canonical(b, bulk._store.X)
    check_model(bulk, exact_values=kind == "forest-classifier")


@pytest.mark.parametrize("trial", range(24))
def test_tree_core_bulk_equals_one_path(trial):
    """The tree core alone: every box stored or lean boxes, lean values, pausing or not,
    finite or infinite lifetime, ties; one call forgets a random share of the points, then
    the store's last points move into the freed places, under an undo log rolled back and
    replayed. Bulk and one-path walks leave the same bytes, and the recount holds."""
    rng = np.random.default_rng(100 + trial)
    n, D, K = int(rng.integers(20, 300)), int(rng.integers(1, 4)), 3
    X = rng.random((n, D))
    if trial % 2:
        X = np.round(X * 5) / 5
    rows = np.eye(K)[rng.integers(0, K, n)] * (1.0 if trial % 3 else rng.random((n, 1)))
    gone = np.sort(rng.choice(n, int(rng.integers(8, n)), replace=False)).astype(np.intp)
    m = n - len(gone)
    held = np.setdiff1d(np.arange(n), gone)
    holes = np.setdiff1d(np.arange(m), held).astype(np.intp)
    movers = held[held >= m].astype(np.intp)
    out = []
    for bulk_from in (ONE_PATH, 1):
        tree = MondrianTree(D, K, [np.inf, 2.0][trial % 2], 2, trial % 4 < 2, trial,
                            box_min_samples=[0, 4, 32][trial % 3], lean_values=trial % 3 == 1)
        tree.fit(X, rows, np.arange(n))
        before = pickle.dumps(tree)
        with _bulk_from(bulk_from):
            tree.begin_undo()
            forget_trees([tree], X, rows, gone, rows[gone].copy(), np.ones(len(gone), np.uint8))
            relocate_trees([tree], X, movers, holes, m)
            tree.rollback_undo()
            assert pickle.dumps(tree) == before
            forget_trees([tree], X, rows, gone, rows[gone].copy(), np.ones(len(gone), np.uint8))
            relocate_trees([tree], X, movers, holes, m)
        X2, rows2 = X.copy(), rows.copy()
        X2[holes], rows2[holes] = X[movers], rows[movers]
        X2, rows2 = np.ascontiguousarray(X2[:m]), np.ascontiguousarray(rows2[:m])
        tree.attach_points(X2, rows2)
        check_tree(tree, X2, rows2, exact_values=trial % 3 != 0)
        out.append(pickle.dumps(tree))
    assert out[0] == out[1]


def test_bulk_call_with_a_bad_row_in_the_middle_changes_nothing():
    X, y = _data(8)
    model = MondrianForestClassifier(n_estimators=4, random_state=8).fit(X, y)
    before = _state(model)
    rows = np.arange(100)
    bad = X[rows].copy()
    bad[50, 1] += 1e-9
    with pytest.raises(ValueError, match="row 50 of X"):
        model.forget(bad, y[rows])
    assert _state(model) == before
    model.forget(X[rows], y[rows])  # (and the same call without the bad row goes through)
    check_model(model)


@pytest.mark.parametrize("exception", [MemoryError, KeyboardInterrupt])
def test_bulk_call_failing_after_some_trees_changes_nothing(exception, monkeypatch):
    X, y = _data(9)  # (the regressor's trees are snapshotted: test_forget_commit.py else)
    y = X[:, 0] + y
    model = MondrianForestRegressor(n_estimators=6, random_state=9).fit(X, y)
    before = _state(model)

    def failing_relocate(trees, *args):
        relocate_trees(trees[:4], *args)  # bulk moves in four trees, then the failure
        raise exception("injected")

    monkeypatch.setattr(ensemble_module, "relocate_trees", failing_relocate)
    with pytest.raises(exception):
        model.forget(X[:150], y[:150])
    assert _state(model) == before
    monkeypatch.undo()
    model.forget(X[:150], y[:150])
    check_model(model, exact_values=False)  # (sums of floats: to rounding)


def counted_commit(function, calls):
    """``commit_forget`` recording the work of each call in ``calls``."""
    def wrapper(*args):
        work = np.zeros(1, dtype=np.intp)
        function(*args, work)
        calls.append(int(work[0]))
    return wrapper


def test_bulk_work_grows_with_the_points_forgotten_not_the_store(monkeypatch):
    """64 rows forgotten in one call from a store 32 times larger: the nodes on their paths
    and the leaf-list entries read grow like the depth (log n), not like the store."""
    work = {}
    for n in (2_000, 64_000):
        rng = np.random.default_rng(0)
        X = rng.random((n, 3))
        y = rng.integers(0, 5, n)
        model = MondrianForestClassifier(n_estimators=2, random_state=0).fit(X, y)
        calls = []

        monkeypatch.setattr(ensemble_module, "commit_forget",
                            counted_commit(ensemble_module.commit_forget, calls))
        rows = rng.choice(n, 64, replace=False)
        model.forget(X[rows], y[rows])
        monkeypatch.undo()
        work[n] = sum(calls)
        check_model(model)
    assert work[64_000] < 3 * work[2_000], work
