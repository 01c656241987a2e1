"""Compact pickles (ensemble state version 2) and the memory breakdown of fitted models."""

import pickle

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from mondrian import MondrianForestClassifier, MondrianForestRegressor
from mondrian.core._tree import MondrianTree
from mondrian.core.ensemble import ENSEMBLE_STATE_VERSION, TreeEnsemble
from mondrian.density.estimator import MondrianForestDensity

from _data import gaussian_classes

pytestmark = pytest.mark.exact


def _data(seed, n=300, d=4):
    X, y = gaussian_classes(seed, n, d, noise=0.5)
    return X, y + (X[:, 1] > 1)


def _same_trees(a, b):
    assert len(a) == len(b)
    for s, t in zip(a, b, strict=True):
        assert type(s) is type(t)
        assert s.nodes_array.tobytes() == t.nodes_array.tobytes()
        assert s.bounds_array.tobytes() == t.bounds_array.tobytes()
        assert s.value_array.tobytes() == t.value_array.tobytes()
        assert_array_equal(s.leaf_sample_assignment(), t.leaf_sample_assignment())
        for node in np.flatnonzero(s.nodes_array["left_child"] == -1):
            assert_array_equal(s.leaf_samples(node), t.leaf_samples(node))
        assert_array_equal(s.get_rng_state(), t.get_rng_state())


def _fitted(kind, seed):
    X, y = _data(seed)
    if kind == "classifier":
        model = MondrianForestClassifier(n_estimators=4, random_state=seed).fit(X[:200], y[:200])
        model.partial_fit(X[200:], y[200:])  # online extension: inserted parents, regrown leaves
    elif kind == "regressor":
        model = MondrianForestRegressor(n_estimators=4, random_state=seed).fit(X[:200], X[:200, 0])
        model.partial_fit(X[200:], X[200:, 0])
    else:
        model = MondrianForestDensity(n_estimators=3, random_state=seed).fit(X[:, :2])
    return model


@pytest.mark.parametrize("kind", ["classifier", "regressor", "density"])
def test_round_trip_rebuilds_every_buffer_bit_for_bit(kind, global_random_seed):
    model = _fitted(kind, global_random_seed)
    loaded = pickle.loads(pickle.dumps(model))
    _same_trees(model._trees, loaded._trees)
    X, y = _data(global_random_seed + 1, n=50)
    if kind == "density":
        assert_array_equal(model.score_samples(X[:, :2]), loaded.score_samples(X[:, :2]))
        return
    predict = model.predict_proba if kind == "classifier" else model.predict
    assert_array_equal(predict(X), loaded.__getattribute__(predict.__name__)(X))
    # Online learning continues exactly from the rebuilt trees.
    target = y if kind == "classifier" else X[:, 0]
    model.partial_fit(X, target)
    loaded.partial_fit(X, target)
    _same_trees(model._trees, loaded._trees)


def test_classifier_state_leaves_out_boxes_statistics_parents_and_counts(global_random_seed):
    model = _fitted("classifier", global_random_seed)
    state = model._ensemble.__getstate__()
    assert state["version"] == ENSEMBLE_STATE_VERSION == 2
    for tree_state in state["trees"]:
        assert isinstance(tree_state, dict)
        assert tree_state["bounds"] is None and tree_state["value"] is None
        assert "parent" not in tree_state and "n_node_samples" not in tree_state
    # Bounds are the bulk of the old format: the compact pickle is several times smaller
    # (whole trees keep only the stored boxes and statistics rows, lean, since: 2x).
    old = dict(model._ensemble.__dict__, version=1)
    assert len(pickle.dumps(old)) > 2 * len(pickle.dumps(state))


def test_full_cell_boxes_are_kept(global_random_seed):
    # The density trees' boxes are cells, not data boxes: the check keeps them.
    model = _fitted("density", global_random_seed)
    for tree_state in model._ensemble.__getstate__()["trees"]:
        assert tree_state["bounds"] is not None


def test_previous_format_loads_and_unknown_versions_are_rejected(global_random_seed):
    model = _fitted("classifier", global_random_seed)
    ensemble = model._ensemble
    old = dict(ensemble.__dict__, version=1)  # version 1: whole trees
    loaded = TreeEnsemble.__new__(TreeEnsemble)
    loaded.__setstate__(pickle.loads(pickle.dumps(old)))
    _same_trees(ensemble.trees, loaded.trees)
    state = ensemble.__getstate__()
    state["version"] = 99
    with pytest.raises(ValueError, match="state version 99"):
        TreeEnsemble.__new__(TreeEnsemble).__setstate__(state)


def test_corrupt_compact_state_is_rejected(global_random_seed):
    model = _fitted("classifier", global_random_seed)
    X, rows = model._store.X, model._store.rows
    state = model._trees[0].compact_state(X, rows)
    bad = dict(state, version=0)
    with pytest.raises(ValueError, match="compact MondrianTree state of version 0"):
        MondrianTree.from_compact_state(bad, X, rows)
    bad = dict(state, children=state["children"][:-1])
    with pytest.raises(ValueError, match="inconsistent"):
        MondrianTree.from_compact_state(bad, X, rows)


def test_changed_statistics_are_stored_not_rebuilt(global_random_seed):
    # A tree whose statistics are not the sums over its leaf lists keeps them in its state.
    model = _fitted("classifier", global_random_seed)
    X, rows = model._store.X, model._store.rows
    tree = model._trees[0]
    assert tree.compact_state(X, rows)["value"] is None
    tree.set_value_columns(rows.shape[1], np.arange(rows.shape[1])[::-1].copy())
    state = tree.compact_state(X, rows)
    assert state["value"] is not None
    assert tree.value_array.tobytes() == MondrianTree.from_compact_state(
        state, X, rows).value_array.tobytes()


def test_derived_arrays_match_the_stored_buffers(global_random_seed):
    model = _fitted("classifier", global_random_seed)
    X, rows = model._store.X, model._store.rows
    for tree in model._trees:
        bounds, value, counts, parent = tree.derived_arrays(X, rows)
        nodes = tree.nodes_array
        assert bounds.tobytes() == tree.bounds_array.tobytes()
        assert value.tobytes() == tree.value_array.tobytes()
        assert_array_equal(counts, nodes["n_node_samples"])
        assert_array_equal(parent, nodes["parent"])


def test_memory_usage_breakdown(global_random_seed):
    model = _fitted("classifier", global_random_seed)
    usage = model.memory_usage_
    trees = model._trees
    D, K = trees[0].n_features, trees[0].value_stride
    n_nodes = sum(t.node_count for t in trees)
    assert usage["bounds"] == sum(t.box_count for t in trees) * 2 * D * 8  # stored boxes
    assert usage["box_slots"] == n_nodes * 4
    # lean values: the rows of the nodes with a stored box only
    assert usage["value"] == sum(t.box_count for t in trees) * K * 8
    assert usage["nodes"] == n_nodes * trees[0]._raw_nodes().itemsize  # the stored records
    assert usage["store_X"] == model._store.X.nbytes
    parts = ("nodes", "box_slots", "bounds", "value", "sample_next", "store_X", "store_rows")
    assert usage["total"] == sum(usage[k] for k in parts)
    assert usage["reserved"] >= 0
