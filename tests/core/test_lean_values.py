"""Lean values: trees that store the statistics row of a node only when it stores its box (it
holds at least ``box_min_samples``, K, points) predict what trees storing every row predict,
bit for bit.

The rows of small nodes are the sums of their points' contribution rows, rebuilt from the
store (the one-row walk, the tabled path, the Dirichlet path, the pause rule, ``value_array``).
Class counts are integers, so the sums are exact in any order: a lean classifier and a full
one (every row stored: ``lean_values`` off, K = 0) grown with the same seeds draw the same
random numbers and give the same bits, after batch fits, streams with duplicate rows, class
widening, pickles, merges, pruning, undo rollbacks and integer sample weights. K = 2 makes
almost every node rebuild its row, K = 32 is the default.
"""

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mondrian import MondrianForestClassifier
from mondrian.core._tree import MondrianTree
from mondrian.forest._dirichlet import predict_proba_dirichlet_trees
from mondrian.forest._hnsp import predict_proba_trees
from mondrian.merging import feature_range, merge_forests

from _checks import box_min_samples, fit_then_extend, node_records_56
from _data import awkward_classes

pytestmark = pytest.mark.exact

KS = [2, 4, 32]


def _data(seed, n=300, d=4, n_classes=3):
    X, _ = awkward_classes(seed, n, d, constant_column=None, ties_column=2)
    return X, ((X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)) % n_classes


def _same(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape
    assert a.tobytes() == b.tobytes()


def _model(seed, lean, **params):
    model = MondrianForestClassifier(n_estimators=3, random_state=seed, **params)
    model._lean_values = lean
    return model


def _pair(seed, k, fit, **params):
    """The same model with every row stored (K = 0, no lean values), and lean with K."""
    with box_min_samples(0):
        full = fit(_model(seed, False, **params))
    with box_min_samples(k):
        lean = fit(_model(seed, True, **params))
    return full, lean


def _check_lean(model, k):
    """Each tree stores the rows of exactly the nodes with a stored box (>= k points)."""
    for tree in model._trees:
        assert tree.lean_values and tree.box_min_samples == k
        assert tree._stored_value_array().shape == (tree.box_count, tree.value_stride)
        assert tree.memory_usage()["value"] == tree.box_count * tree.value_stride * 8


def _same_models(full, lean, X_test):
    for a, b in zip(full._trees, lean._trees, strict=True):
        assert a.nodes_array.tobytes() == b.nodes_array.tobytes()
        _same(a.value_array, b.value_array)
        _same(a.get_rng_state().view(np.float64), b.get_rng_state().view(np.float64))
    # The tabled path (many rows) and the one-row path (each row alone).
    _same(full.predict_proba(X_test), lean.predict_proba(X_test))
    for i in range(0, len(X_test), 7):
        _same(full.predict_proba(X_test[i:i + 1]), lean.predict_proba(X_test[i:i + 1]))


@pytest.mark.parametrize("k", KS)
def test_batch_fit_and_both_predict_paths(k, global_random_seed):
    X, y = _data(global_random_seed)
    full, lean = _pair(global_random_seed, k, lambda m: m.fit(X, y))
    _check_lean(lean, k)
    assert any(t.box_count < t.node_count for t in lean._trees)
    _same_models(full, lean, np.vstack([X[:60] + 0.03, X[:20] * 3.0]))
    # A smaller lifetime: leaves of the pruned tree that hold small subtrees.
    U = full._ensemble.feature_map.transform(X[:50])
    for rows in (U, U[:1]):
        outs = []
        for model in (full, lean):
            out = np.zeros((len(rows), len(model.classes_)))
            predict_proba_trees(model._trees, rows, out, 1.0, False, 0.5)
            outs.append(out)
        _same(*outs)


@pytest.mark.parametrize("k", KS)
def test_streams_with_duplicates_and_class_widening(k, global_random_seed):
    X, y = _data(global_random_seed, n=260, n_classes=9)
    order = np.argsort(y, kind="stable")  # classes arrive one after another: widenings
    X, y = X[order], y[order]

    def stream(model):
        model.partial_fit(X[:30], y[:30])
        for i in range(30, 120):
            model.partial_fit(X[i:i + 1], y[i:i + 1])
        for i in range(120, 260, 25):
            model.partial_fit(X[i:i + 25], y[i:i + 25])
        return model

    full, lean = _pair(global_random_seed, k, stream)
    _check_lean(lean, k)
    assert len(lean.classes_) > 2
    _same_models(full, lean, X[::3] + 0.01)


@pytest.mark.parametrize("k", [2, 32])
def test_learn_one_stream(k, global_random_seed):
    X, y = _data(global_random_seed, n=200)

    def stream(model):
        for x, label in zip(X, y, strict=True):
            model.learn_one(dict(enumerate(x)), int(label))
        return model

    full, lean = _pair(global_random_seed, k, stream)
    _check_lean(lean, k)
    _same_models(full, lean, X[:40] - 0.02)
    for x in X[:10]:
        assert full.predict_proba_one(dict(enumerate(x))) == \
            lean.predict_proba_one(dict(enumerate(x)))


@pytest.mark.parametrize("k", [4, 32])
def test_integer_sample_weights_are_exact(k, global_random_seed):
    X, y = _data(global_random_seed)
    weights = np.random.default_rng(global_random_seed).integers(0, 4, len(X)).astype(float)

    def fit(model):
        model.fit(X[:200], y[:200], sample_weight=weights[:200])
        model.partial_fit(X[200:], y[200:], sample_weight=weights[200:])
        return model

    full, lean = _pair(global_random_seed, k, fit)
    _same_models(full, lean, X[:50] + 0.02)


def test_fractional_sample_weights_to_rounding(global_random_seed):
    # Fractional weights make the sums depend on their order: rounding only.
    X, y = _data(global_random_seed)
    weights = np.random.default_rng(global_random_seed).uniform(0.5, 2.0, len(X))
    full, lean = _pair(global_random_seed, 4,
                       lambda m: m.fit(X, y, sample_weight=weights))
    np.testing.assert_allclose(lean.predict_proba(X[:60]), full.predict_proba(X[:60]),
                               rtol=1e-12, atol=1e-15)
    for i in range(0, 60, 6):  # one-row path: rows summed from the points, not differences
        np.testing.assert_allclose(lean.predict_proba(X[i:i + 1]),
                                   full.predict_proba(X[i:i + 1]), rtol=1e-12, atol=1e-15)


def test_pickles_copies_merges_and_prunes(global_random_seed):
    k = 4
    X, y = _data(global_random_seed)
    X_test = X[:40] + 0.05
    full, lean = _pair(global_random_seed, k, lambda m: m.fit(X[:150], y[:150]))
    for other in (pickle.loads(pickle.dumps(lean)), copy.deepcopy(lean)):
        _check_lean(other, k)
        _same_models(full, other, X_test)
    # Whole tree states (rows by box slot: version 3, or 4 with lean_values) round trip.
    store = lean._store
    for tree, reference in zip(lean._trees, full._trees, strict=True):
        cls, args, state = tree.__reduce__()
        assert state["version"] == 4 and state["lean_values"]
        assert state["value"].shape[0] == tree.box_count
        loaded = cls(*args)
        loaded.__setstate__(state)
        with pytest.raises(ValueError, match="attach_points"):
            loaded.value_array  # noqa: B018
        loaded.attach_points(store.X, store.rows)
        _same(loaded.value_array, reference.value_array)
    # Online after a load, then pruning.
    loaded = pickle.loads(pickle.dumps(lean))
    for model in (full, loaded):
        model.partial_fit(X[150:220], y[150:220])
    _check_lean(loaded, k)
    _same_models(full, loaded, X_test)
    lifetime = float(np.median([t.nodes_array["split_time"][0] for t in full._trees])) + 1.0
    _same_models(full.prune(lifetime), loaded.prune(lifetime), X_test)
    # Merging two shards (the second's points renumbered after the first's).
    scaling = feature_range(X)
    shards = []
    for kk, flag in ((0, False), (k, True)):
        with box_min_samples(kk):
            shards.append([
                # shards on different rows: a fixed map needs fixed weights too
                _model(global_random_seed + s, flag, feature_scaling=scaling,
                       feature_weights=None).fit(X[a:b], y[a:b])
                for s, (a, b) in enumerate([(0, 150), (150, 300)])
            ])
    merged_full, merged_lean = merge_forests(shards[0]), merge_forests(shards[1])
    _check_lean(merged_lean, k)
    _same_models(merged_full, merged_lean, X_test)


def test_full_state_of_an_old_build_loads():
    # A version 2 state (one row per node) loads into a tree that stores every row.
    X, y = _data(5)
    with box_min_samples(4):
        full = _model(5, False).fit(X, y)
    tree = full._trees[0]
    cls, args, state = tree.__reduce__()
    assert state["version"] == 4 and not state.pop("lean_values")
    state = dict(state, version=2, nodes=node_records_56(tree.nodes_array))  # as saved then
    loaded = cls(*args[:7])  # (old builds: seven arguments)
    loaded.__setstate__(state)
    assert not loaded.lean_values
    _same(loaded.value_array, tree.value_array)


def test_dirichlet_path(global_random_seed):
    X, y = _data(global_random_seed)
    full, lean = _pair(global_random_seed, 4, lambda m: m.fit(X, y))
    U = full._ensemble.feature_map.transform(X[:30] + 0.1)
    outs = []
    for model in (full, lean):
        out = np.zeros((30, len(model.classes_)))
        predict_proba_dirichlet_trees(model._trees, U, out, 1.0)
        predict_proba_dirichlet_trees(model._trees, U, out, 0.5, 2.0)
        outs.append(out)
    _same(*outs)


def _tree_pair(seed, k, d, S):
    full = MondrianTree(d, S, np.inf, 2, True, seed, 0)
    lean = MondrianTree(d, S, np.inf, 2, True, seed, k, True)
    for tree in (full, lean):
        tree.count_columns = -1
    return full, lean


def _same_trees(full, lean):
    assert full.nodes_array.tobytes() == lean.nodes_array.tobytes()
    _same(full.value_array, lean.value_array)
    slots = lean.box_slots
    kept = slots >= 0
    _same(lean._stored_value_array()[slots[kept]], full.value_array[kept])


def test_undo_rollback_restores_rows_and_widening(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    X = rng.random((300, 3))
    X[200:] = X[:100] * 3.0  # new points outside: inserted parents, slots handed over
    rows = np.eye(3)[rng.integers(0, 3, 300)]
    full, lean = _tree_pair(global_random_seed, 4, 3, 3)
    for tree in (full, lean):
        tree.fit(X, rows, np.arange(120))
    before = (lean.nodes_array.tobytes(), lean.box_slots.tobytes(),
              lean._stored_value_array().tobytes(), lean.value_array.tobytes())
    lean.begin_undo()
    for i in range(120, 300, 9):
        lean.extend(X, rows, np.arange(i, min(i + 9, 300)))
    assert lean.box_count > 0
    lean.rollback_undo()
    after = (lean.nodes_array.tobytes(), lean.box_slots.tobytes(),
             lean._stored_value_array().tobytes(), lean.value_array.tobytes())
    assert after == before
    # A widening under the log (a new class) rolls back too.
    lean.begin_undo()
    wide = np.hstack([rows, np.zeros((300, 3))])
    lean.set_value_columns(6, np.arange(3))
    with pytest.raises(ValueError, match="attach_points"):
        lean.value_array  # noqa: B018
    lean.extend(X, wide, np.arange(120, 150))
    lean.rollback_undo()
    lean.attach_points(X, rows)
    assert (lean.nodes_array.tobytes(), lean.box_slots.tobytes(),
            lean._stored_value_array().tobytes(), lean.value_array.tobytes()) == before
    # And both trees go on alike.
    for tree in (full, lean):
        tree.extend(X, rows, np.arange(120, 300))
    _same_trees(full, lean)


def test_estimator_rollback_is_bit_identical(global_random_seed):
    X, y = _data(global_random_seed)
    with box_min_samples(4):
        model = _model(global_random_seed, True).fit(X[:100], y[:100])
    state = pickle.dumps(model)
    values = [t.value_array.tobytes() for t in model._trees]
    bad = X[100:101].copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError):
        model.partial_fit(bad, y[100:101])
    assert [t.value_array.tobytes() for t in model._trees] == values
    assert pickle.dumps(model) == state


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(1, 60),
    d=st.integers(1, 3),
    k=st.integers(1, 8),
    chunks=st.lists(st.integers(1, 20), min_size=1, max_size=5),
    lifetime=st.sampled_from([0.5, 3.0, np.inf]),
)
def test_property_lean_rows_equal_full_rows(seed, n, d, k, chunks, lifetime):
    rng = np.random.default_rng(seed)
    X = np.round(rng.random((n + sum(chunks), d)) * 4) / 4  # ties and duplicates
    rows = np.eye(3)[rng.integers(0, 3, len(X))] * rng.integers(1, 3, (len(X), 1))
    full, lean = _tree_pair(seed, k, d, 3)
    fit_then_extend((full, lean), X, rows, n, chunks)
    _same_trees(full, lean)
    outs = []
    for tree in (full, lean):
        out = np.zeros((len(X), 3))
        predict_proba_trees([tree], X + 0.1, out, 1.0, False, lifetime)  # tabled
        for i in range(min(len(X), 5)):
            predict_proba_trees([tree], X[i:i + 1] - 0.1, out[i:i + 1], 1.0, True, lifetime)
        outs.append(out)
    _same(*outs)


def test_compact_state_needs_no_attached_rows_and_shifted_trees_refuse():
    X, y = _data(7)
    with box_min_samples(4):
        model = _model(7, True).fit(X, y)
    store, tree = model._store, model._trees[0]
    cls, args, state = tree.__reduce__()
    loaded = cls(*args)
    loaded.__setstate__(state)  # no points attached
    compact = loaded.compact_state(store.X, store.rows)
    assert compact["value"] is None and compact["lean_values"]
    rebuilt = MondrianTree.from_compact_state(compact, store.X, store.rows)
    assert rebuilt.lean_values and rebuilt.box_count == tree.box_count
    for t in (rebuilt, tree):  # (slots are numbered in another order)
        assert np.array_equal(t.box_slots >= 0, tree.box_slots >= 0)
    kept = tree.box_slots >= 0
    _same(rebuilt._stored_value_array()[rebuilt.box_slots[kept]],
          tree._stored_value_array()[tree.box_slots[kept]])
    _same(rebuilt.value_array, tree.value_array)
    rebuilt.shift_samples(5)  # its points renumbered: the store must be attached again
    with pytest.raises(ValueError, match="attach"):
        rebuilt.value_array  # noqa: B018
