"""The packed 56-byte node struct: 32-bit node ids and features, no padding, the public
scikit-learn style arrays still intp, and whole states saved with the old 72-byte layout
(every integer field intp, in another field order) loading bit for bit."""

import numpy as np
import pytest

from mondrian import MondrianForestClassifier, MondrianTreeClassifier
from mondrian.core._tree import NODE_DTYPE

pytestmark = pytest.mark.exact

# The node layout saved before the struct was packed (its field order and types).
_OLD_NODE_DTYPE = np.dtype([
    ("parent", np.intp), ("left_child", np.intp), ("right_child", np.intp),
    ("feature", np.intp), ("threshold", np.float64), ("split_time", np.float64),
    ("n_node_samples", np.intp), ("first_sample", np.intp), ("paused", np.intp),
])
_INDEX_FIELDS = ("parent", "left_child", "right_child", "feature", "paused")


def _data(seed, n=400, d=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + 0.4 * rng.normal(size=n) > 0).astype(int) + (X[:, 1] > 0.8)
    return X, y


def test_node_struct_is_packed():
    assert NODE_DTYPE.itemsize == 56
    assert sum(NODE_DTYPE[name].itemsize for name in NODE_DTYPE.names) == 56  # no padding
    for name in _INDEX_FIELDS + ("reserved",):
        assert NODE_DTYPE[name] == np.int32
    for name in ("n_node_samples", "first_sample"):
        assert NODE_DTYPE[name] == np.intp  # store indices can pass 2**31 in long streams


def test_public_index_arrays_stay_intp():
    X, y = _data(0)
    tree = MondrianTreeClassifier(random_state=0).fit(X, y).tree_
    nodes = tree._tree.nodes_array
    for attribute, field in (("children_left", "left_child"), ("children_right", "right_child"),
                             ("parent", "parent"), ("feature", "feature")):
        out = getattr(tree, attribute)
        assert out.dtype == np.intp and not out.flags.writeable
        np.testing.assert_array_equal(out, nodes[field])
    assert not nodes["reserved"].any()  # written, so node bytes are deterministic


def _old_layout(nodes):
    old = np.zeros(nodes.shape[0], dtype=_OLD_NODE_DTYPE)
    for name in _OLD_NODE_DTYPE.names:
        old[name] = nodes[name]
    return old


def test_state_with_the_old_72_byte_nodes_loads_bit_for_bit():
    X, y = _data(1)
    model = MondrianForestClassifier(n_estimators=3, random_state=1).fit(X[:300], y[:300])
    model.partial_fit(X[300:], y[300:])  # paused leaves, moved nodes: every field in use
    expected = model.predict_proba(X)
    for k, tree in enumerate(model._trees):
        cls, args, state = tree.__reduce__()
        assert state["nodes"].dtype == NODE_DTYPE
        state = dict(state, nodes=_old_layout(state["nodes"]))
        assert state["nodes"].itemsize == 72
        loaded = cls(*args)
        loaded.__setstate__(state)
        assert loaded.nodes_array.tobytes() == tree.nodes_array.tobytes()
        assert loaded.box_slots.tobytes() == tree.box_slots.tobytes()
        loaded.attach_points(model._store.X, model._store.rows)  # (lean values: read rows)
        assert loaded.value_array.tobytes() == tree.value_array.tobytes()
        model._trees[k] = loaded
    model._ensemble.attach_points()
    assert model.predict_proba(X).tobytes() == expected.tobytes()


def test_old_state_with_ids_past_32_bits_is_rejected():
    X, y = _data(2)
    tree = MondrianTreeClassifier(random_state=0).fit(X, y).tree_._tree
    cls, args, state = tree.__reduce__()
    old = _old_layout(state["nodes"])
    old["left_child"][0] = 2**31
    with pytest.raises(ValueError, match="left_child"):
        cls(*args).__setstate__(dict(state, nodes=old))
    partial = old[[name for name in _OLD_NODE_DTYPE.names if name != "paused"]]
    with pytest.raises(ValueError, match="paused"):
        cls(*args).__setstate__(dict(state, nodes=partial))


def test_compact_state_with_child_ids_past_32_bits_is_rejected():
    X, y = _data(3)
    model = MondrianForestClassifier(n_estimators=1, random_state=3).fit(X, y)
    tree, store = model._trees[0], model._store
    state = tree.compact_state(store.X, store.rows)
    assert type(tree).from_compact_state(state, store.X, store.rows).nodes_array.tobytes() \
        == tree.nodes_array.tobytes()
    children = np.array(state["children"], dtype=np.intp)
    children[0, 1] = 2**32 + 1  # would wrap to the valid id 1 in an int32 field
    with pytest.raises(ValueError, match="inconsistent"):
        type(tree).from_compact_state(dict(state, children=children), store.X, store.rows)
