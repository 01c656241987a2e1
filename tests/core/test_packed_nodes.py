"""The packed 48-byte node struct: 32-bit node ids and features, no padding, the paused flag of
a leaf kept in its ``feature`` (``TREE_PAUSED``) and invisible outside the core, the public
scikit-learn style arrays still intp, and whole states saved with the older 56-byte and 72-byte
layouts (a ``paused`` field; the 72-byte one with every integer field intp, in another field
order) loading bit for bit."""

import pickle

import numpy as np
import pytest

from mondrian import MondrianForestClassifier, MondrianTreeClassifier
from mondrian.core._tree import NODE_DTYPE, NODE_VIEW_DTYPE

from _checks import node_records_as
from _data import gaussian_classes

pytestmark = pytest.mark.exact

TREE_PAUSED = -3  # the raw `feature` of a paused leaf (core/_tree.pxd)

# The node layout saved before the struct was packed (its field order and types).
_OLD_NODE_DTYPE = np.dtype([
    ("parent", np.intp), ("left_child", np.intp), ("right_child", np.intp),
    ("feature", np.intp), ("threshold", np.float64), ("split_time", np.float64),
    ("n_node_samples", np.intp), ("first_sample", np.intp), ("paused", np.intp),
])
# The 56-byte layout saved by state versions 2 and 3 (a 32-bit paused flag and padding word).
_NODE56_DTYPE = np.dtype([
    ("threshold", np.float64), ("split_time", np.float64), ("n_node_samples", np.intp),
    ("first_sample", np.intp), ("parent", np.int32), ("left_child", np.int32),
    ("right_child", np.int32), ("feature", np.int32), ("paused", np.int32),
    ("reserved", np.int32),
])
_INDEX_FIELDS = ("parent", "left_child", "right_child", "feature")


def _data(seed, n=400, d=4):
    X, y = gaussian_classes(seed, n, d, noise=0.4)
    return X, y + (X[:, 1] > 0.8)


def test_node_struct_is_packed():
    assert NODE_DTYPE.itemsize == 48
    assert sum(NODE_DTYPE[name].itemsize for name in NODE_DTYPE.names) == 48  # no padding
    assert "paused" not in NODE_DTYPE.names and "reserved" not in NODE_DTYPE.names
    for name in _INDEX_FIELDS:
        assert NODE_DTYPE[name] == np.int32
    for name in ("n_node_samples", "first_sample"):
        assert NODE_DTYPE[name] == np.intp  # store indices can pass 2**31 in long streams
    # The views: the same fields and a derived bool `paused`.
    assert NODE_VIEW_DTYPE.names == NODE_DTYPE.names + ("paused",)
    assert NODE_VIEW_DTYPE["paused"] == np.bool_


def test_public_index_arrays_stay_intp():
    X, y = _data(0)
    tree = MondrianTreeClassifier(random_state=0).fit(X, y).tree_
    nodes = tree._tree.nodes_array
    assert nodes.dtype == NODE_VIEW_DTYPE
    for attribute, field in (("children_left", "left_child"), ("children_right", "right_child"),
                             ("parent", "parent"), ("feature", "feature")):
        out = getattr(tree, attribute)
        assert out.dtype == np.intp and not out.flags.writeable
        np.testing.assert_array_equal(out, nodes[field])


def _leaf_pauses(est):
    """Per leaf of ``est.tree_``: (whether it is paused, whether its pause rule holds)."""
    t = est.tree_
    leaf = t.children_left == -1
    value = t.value[leaf]
    extent = (t.upper_bounds - t.lower_bounds)[leaf].sum(axis=1)
    rule = ((value > 0).sum(axis=1) <= 1) | (extent <= 0.0) | (
        t.n_node_samples[leaf] < est.min_samples_split)
    return t.paused[leaf], rule


def _check_encoding(est):
    """The raw records hold the paused flag in `feature`; the views show the old semantics."""
    t = est.tree_
    raw = t._tree._raw_nodes()
    leaf = raw["left_child"] == -1
    assert t.paused.dtype == bool and not t.paused.flags.writeable
    np.testing.assert_array_equal(t.paused, leaf & (raw["feature"] == TREE_PAUSED))
    assert np.isin(raw["feature"][leaf], (-2, TREE_PAUSED)).all()
    assert (raw["feature"][~leaf] >= 0).all()
    assert (t.feature[leaf] == -2).all()  # as in scikit-learn, paused or not
    np.testing.assert_array_equal(t.feature[~leaf], raw["feature"][~leaf])
    assert not t.paused[~leaf].any()


@pytest.mark.parametrize("seed", range(4))
def test_paused_leaves_regrow_through_the_encoding(seed):
    """A pure root pauses; a point of another class un-pauses it and it regrows. With a finite
    lifetime some regrown leaves expire: those must not stay paused (a flag left set on
    regrowth), and every leaf is paused exactly when its pause rule holds."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(60, 3))
    est = MondrianTreeClassifier(lifetime=1.5, random_state=3).fit(X, np.zeros(60, dtype=int))
    assert est.tree_.node_count == 1 and est.tree_.paused[0] and est.tree_.feature[0] == -2
    assert est.tree_._tree._raw_nodes()["feature"][0] == TREE_PAUSED
    _check_encoding(est)
    seen_expired = 0
    for k in range(40):
        x = rng.normal(size=(1, 3))
        est.partial_fit(x, [int(x[0, 0] > 0) + (k % 5 == 0)])
        _check_encoding(est)
        paused, rule = _leaf_pauses(est)
        np.testing.assert_array_equal(paused, rule)
        seen_expired += int((~paused).sum() > 0)
    assert est.tree_.node_count > 1 and not est.tree_.paused[0]
    assert seen_expired  # the test reaches unpaused (expired) leaves


def test_prune_keeps_paused_leaves_and_unpauses_dropped_cuts():
    X, y = _data(6, n=300)
    model = MondrianForestClassifier(n_estimators=2, random_state=6).fit(X, y)
    times = np.concatenate([t.nodes_array["split_time"][t.nodes_array["left_child"] != -1]
                            for t in model._trees])
    lifetime = float(np.median(times))
    pruned = model.prune(lifetime)
    for full, cut in zip(model._trees, pruned._trees, strict=True):
        nodes = full.nodes_array
        parent_time = np.where(nodes["parent"] >= 0,
                               nodes["split_time"][np.maximum(nodes["parent"], 0)], -np.inf)
        kept_leaf = (nodes["left_child"] == -1) & (parent_time < lifetime)
        dropped = (nodes["left_child"] != -1) & (nodes["split_time"] >= lifetime) & (
            parent_time < lifetime)
        expected = sorted([(n, True) for n in nodes["n_node_samples"][kept_leaf & nodes["paused"]]]
                          + [(n, False) for n in nodes["n_node_samples"][
                              (kept_leaf & ~nodes["paused"]) | dropped]])
        view = cut.nodes_array
        leaf = view["left_child"] == -1
        assert sorted(zip(view["n_node_samples"][leaf].tolist(),
                          view["paused"][leaf].tolist(), strict=True)) == expected
        assert (view["feature"][leaf] == -2).all()


def _old_state(tree, dtype):
    """The whole state of ``tree`` as a build before the 48-byte records saved it."""
    cls, args, state = tree.__reduce__()
    assert state["version"] == 4 and state["nodes"].dtype == NODE_DTYPE
    state = dict(state, nodes=node_records_as(tree.nodes_array, dtype),
                 version=3 if state.pop("lean_values") else 2)
    return cls, args, state


@pytest.mark.parametrize("dtype", [_OLD_NODE_DTYPE, _NODE56_DTYPE], ids=["72", "56"])
def test_state_with_older_node_records_loads_bit_for_bit(dtype):
    X, y = _data(1)
    model = MondrianForestClassifier(n_estimators=3, random_state=1).fit(X[:300], y[:300])
    model.partial_fit(X[300:350], y[300:350])  # paused leaves, moved nodes: every field in use
    twin = pickle.loads(pickle.dumps(model))
    expected = model.predict_proba(X)
    n_paused = 0
    for k, tree in enumerate(model._trees):
        cls, args, state = _old_state(tree, dtype)
        assert state["nodes"].itemsize == dtype.itemsize
        n_paused += int(state["nodes"]["paused"].sum())
        loaded = cls(*args)
        loaded.__setstate__(state)
        assert loaded._raw_nodes().tobytes() == tree._raw_nodes().tobytes()
        assert loaded.nodes_array.tobytes() == tree.nodes_array.tobytes()
        assert loaded.box_slots.tobytes() == tree.box_slots.tobytes()
        loaded.attach_points(model._store.X, model._store.rows)  # (lean values: read rows)
        assert loaded.value_array.tobytes() == tree.value_array.tobytes()
        model._trees[k] = loaded
    assert n_paused
    model._ensemble.attach_points()
    assert model.predict_proba(X).tobytes() == expected.tobytes()
    # The loaded paused leaves regrow as the saved ones do.
    model.partial_fit(X[350:], y[350:])
    twin.partial_fit(X[350:], y[350:])
    for a, b in zip(model._trees, twin._trees, strict=True):
        assert a._raw_nodes().tobytes() == b._raw_nodes().tobytes()
    assert model.predict_proba(X).tobytes() == twin.predict_proba(X).tobytes()


def test_whole_state_round_trip_keeps_the_paused_flags():
    X, y = _data(4)
    tree = MondrianForestClassifier(n_estimators=1, random_state=4).fit(X, y)._trees[0]
    cls, args, state = tree.__reduce__()
    assert state["nodes"].dtype == NODE_DTYPE and (state["nodes"]["feature"] == TREE_PAUSED).any()
    loaded = cls(*args)
    loaded.__setstate__(state)
    assert loaded._raw_nodes().tobytes() == tree._raw_nodes().tobytes()


def test_unknown_or_inconsistent_states_are_rejected():
    X, y = _data(2)
    tree = MondrianTreeClassifier(random_state=0).fit(X, y).tree_._tree
    cls, args, state = tree.__reduce__()
    with pytest.raises(ValueError, match="state version 5"):
        cls(*args).__setstate__(dict(state, version=5))
    old = node_records_as(tree.nodes_array, _OLD_NODE_DTYPE)
    old_state = dict(state, nodes=old, version=2)
    old["left_child"][0] = 2**31
    with pytest.raises(ValueError, match="left_child"):
        cls(*args).__setstate__(old_state)
    partial = old[[name for name in _OLD_NODE_DTYPE.names if name != "paused"]]
    with pytest.raises(ValueError, match="paused"):
        cls(*args).__setstate__(dict(old_state, nodes=partial))
    # A paused flag on an internal node, or not 0 / 1, has no encoding.
    for node, flag in ((0, 1), (int(np.flatnonzero(old["left_child"] == -1)[0]), 2)):
        bad = node_records_as(tree.nodes_array, _NODE56_DTYPE)
        bad["paused"][node] = flag
        with pytest.raises(ValueError, match="paused"):
            cls(*args).__setstate__(dict(state, nodes=bad, version=2))
    # A 48-byte record paused (feature TREE_PAUSED) off a leaf.
    raw = tree._raw_nodes()
    raw["feature"][0] = TREE_PAUSED
    with pytest.raises(ValueError, match="paused node is not a leaf"):
        cls(*args).__setstate__(dict(state, nodes=raw))
    with pytest.raises(ValueError, match="paused node is not a leaf"):
        cls(*args).__setstate__(dict(state, nodes=raw.astype(raw.dtype.newbyteorder())))
    # 48-byte records in a state that says it holds the older ones.
    with pytest.raises(ValueError, match="paused"):
        cls(*args).__setstate__(dict(state, version=2))


def test_compact_state_with_child_ids_past_32_bits_is_rejected():
    X, y = _data(3)
    model = MondrianForestClassifier(n_estimators=1, random_state=3).fit(X, y)
    tree, store = model._trees[0], model._store
    state = tree.compact_state(store.X, store.rows)
    rebuilt = type(tree).from_compact_state(state, store.X, store.rows)
    assert rebuilt.nodes_array.tobytes() == tree.nodes_array.tobytes()
    assert rebuilt._raw_nodes().tobytes() == tree._raw_nodes().tobytes()  # the paused flags
    children = np.array(state["children"], dtype=np.intp)
    children[0, 1] = 2**32 + 1  # would wrap to the valid id 1 in an int32 field
    with pytest.raises(ValueError, match="inconsistent"):
        type(tree).from_compact_state(dict(state, children=children), store.X, store.rows)
