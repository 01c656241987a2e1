"""Versioned state of a Mondrian tree: pickles and compact states, and their conversion.

The tree's ``__getstate__``/``__setstate__`` and ``compact_state``/``from_compact_state`` are
these functions (:mod:`mondrian.core._tree` keeps the methods, so pickles still name
``mondrian.core._tree.MondrianTree``). Every state ever written by a release loads: the older
node records are converted field by field, and every loaded record, link and box slot is
checked before the tree uses it (:func:`~mondrian.core._state_checks.tree_records_error`).
"""

from libc.stdint cimport int32_t
from libc.string cimport memcpy

import numpy as np

cimport numpy as cnp

from mondrian.core._tree cimport (
    MAX_NODES,
    TREE_LEAF,
    TREE_PAUSED,
    TREE_UNDEFINED,
    MondrianTree,
    Node,
    _realloc,
    stored_row,
)
from mondrian.core._typedefs cimport BOX_POINTS_MAX
from mondrian.core._state_checks import tree_records_error

cnp.import_array()

# Version of the whole pickled state of a MondrianTree (__getstate__): 1 kept a box for every
# node; 2 (lean boxes) keeps the stored boxes, and the read columns when they are not the stored
# ones (a classifier that met classes online); 3 is 2 with lean values (statistics rows by box
# slot). Versions 1 to 3 hold node records with a `paused` field (56 bytes, or 72 before the
# struct was packed); 4 holds the 48-byte records (a paused leaf's flag in its `feature`) and
# says whether its values are lean. All load; a later version is refused.
TREE_STATE_VERSION = 4
_TREE_READ_VERSIONS = (1, 2, 3, 4)
# Version of the compact state (compact_state / from_compact_state): 1, or 2 with a "columns"
# entry (builds without read columns refuse those clearly). Both load.
COMPACT_STATE_VERSION = 1
_COMPACT_READ_VERSIONS = (1, 2)


def _as_node_dtype(nodes, bint legacy):
    """``nodes`` as a contiguous array of ``NODE_DTYPE``, converted field by field (by name:
    ``astype`` between structured dtypes goes by position), in any byte order. ``legacy``:
    the records of states before version 4 (56 bytes, or 72 with intp ids and another field
    order), with a ``paused`` field (0 or 1, leaves only) that goes into the leaf's
    ``feature`` (``TREE_PAUSED``); their other fields are copied as they are."""
    from mondrian.core._tree import NODE_DTYPE  # (at call time: _tree imports this module)
    nodes = np.asarray(nodes)
    if nodes.dtype == NODE_DTYPE and not legacy:
        out = np.ascontiguousarray(nodes)
        if ((out["feature"] == TREE_PAUSED) & (out["left_child"] != TREE_LEAF)).any():
            # (the extension would absorb points into an internal node)
            raise ValueError("inconsistent MondrianTree state: a paused node is not a leaf")
        return out
    names = nodes.dtype.names or ()
    wanted = NODE_DTYPE.names + (("paused",) if legacy else ())
    missing = [name for name in wanted if name not in names]
    if nodes.ndim != 1 or missing:
        raise ValueError(f"inconsistent MondrianTree state: node fields {missing} missing")
    out = np.zeros(nodes.shape[0], dtype=NODE_DTYPE)
    for name in NODE_DTYPE.names:
        lowest = TREE_UNDEFINED if legacy or name != "feature" else TREE_PAUSED
        if (name in ("parent", "left_child", "right_child", "feature")
                and nodes.shape[0]
                and not lowest <= nodes[name].min() <= nodes[name].max() < MAX_NODES):
            raise ValueError(f"inconsistent MondrianTree state: node field {name!r} "
                             "out of the 32-bit range")
        out[name] = nodes[name]
    if ((out["feature"] == TREE_PAUSED) & (out["left_child"] != TREE_LEAF)).any():
        raise ValueError("inconsistent MondrianTree state: a paused node is not a leaf")
    if legacy and nodes.shape[0]:
        paused = np.asarray(nodes["paused"])
        if not np.isin(paused, (0, 1)).all() or (
                paused.astype(bool) & (out["left_child"] != TREE_LEAF)).any():
            raise ValueError("inconsistent MondrianTree state: node field 'paused' is not "
                             "0 or 1 on leaves and 0 on internal nodes")
        out["feature"][paused.astype(bool)] = TREE_PAUSED
    return out


def _same_bits(a, b):
    """Whether two float64 arrays hold the same bits (``-0.0`` differs from ``0.0``)."""
    return a.shape == b.shape and np.array_equal(a.view(np.uint64), b.view(np.uint64))


def _refuse(message):
    raise ValueError(f"inconsistent MondrianTree state: {message}")


def _check_loaded(MondrianTree tree, nodes, sample_next, slots=None, intp_t n_boxes=0,
                  bint whole=True):
    """Refuse (``ValueError``) node records, links and box slots the core cannot use
    (:func:`~mondrian.core._state_checks.tree_records_error`); ``whole``: the records carry
    their parents and counts (a compact state derives them afterwards)."""
    error = tree_records_error(nodes, sample_next, slots, n_features=tree.n_features,
                               n_boxes=n_boxes, box_min_samples=tree.box_min_samples,
                               with_parents=whole, with_counts=whole)
    if error is not None:
        _refuse(error)


def _loaded_extras(MondrianTree tree, state):
    """The random stream and ``count_columns`` of a saved tree state, checked."""
    try:
        words = [int(word) for word in np.asarray(state["rng"]).ravel()]
        count_columns = int(state.get("count_columns", 0))
    except (TypeError, ValueError, OverflowError):
        _refuse("the random state or count_columns is not an integer")
    if len(words) != 4 or not all(0 <= w < 2**64 for w in words) or not any(words):
        _refuse("the random state must be four 64-bit words, not all zero")
    rng = np.array(words, dtype=np.uint64)
    if not -1 <= count_columns <= tree.value_stride:
        _refuse(f"count_columns={count_columns} outside [-1, value_stride]")
    return rng, count_columns


cdef dict tree_getstate(MondrianTree tree):
    """The whole state of ``tree`` (``MondrianTree.__getstate__``), at ``TREE_STATE_VERSION``."""
    sample_next = np.empty(tree.n_samples_seen, dtype=np.intp)
    if tree.n_samples_seen:
        memcpy(cnp.PyArray_DATA(sample_next), tree.sample_next,
               tree.n_samples_seen * sizeof(intp_t))
    state = {
        "version": TREE_STATE_VERSION,
        "lean_values": bool(tree.lean_values),
        "nodes": tree._raw_nodes(),
        "box_min_samples": tree.box_min_samples,
        "box_slot": tree.box_slots,
        "boxes": tree.stored_boxes,
        "value": tree._stored_value_array(),
        "sample_next": sample_next,
        "rng": tree.get_rng_state(),
        "count_columns": tree.count_columns,
    }
    if not tree._trivial_columns():
        state["columns"] = tree.column_order.astype(np.int32)
    return state


cdef int tree_setstate(MondrianTree tree, object state) except -1:
    """Load into the fresh ``tree`` the whole state ``state`` (``MondrianTree.__setstate__``;
    no points attached: see ``attach_points``). Version 1 (a box for every node, before lean
    boxes) loads; its small nodes' boxes are dropped. The state decides whether the
    statistics rows are lean (version 3, or 4 with ``lean_values``) or one per node. Versions
    before 4 hold the older node records (converted)."""
    version = state.get("version")
    if version not in _TREE_READ_VERSIONS:
        raise ValueError(
            f"cannot load a MondrianTree saved with state version {version}; "
            f"this build reads versions {_TREE_READ_VERSIONS} (a newer version of the "
            "package saved it?)"
        )
    if tree.node_count or tree.box_count:
        raise ValueError("__setstate__ needs a fresh MondrianTree")
    tree.lean_values = (version == 3 or
                        (version == TREE_STATE_VERSION and bool(state["lean_values"])))
    nodes = _as_node_dtype(state["nodes"], version < TREE_STATE_VERSION)
    cdef intp_t n = nodes.shape[0], D = tree.n_features
    if version == 1:
        boxes = np.ascontiguousarray(state["bounds"], dtype=np.float64)
        if boxes.shape[:1] != (n,):
            _refuse("version 1 keeps one box per node")
        counts = nodes["n_node_samples"]
        slot = np.where(counts >= tree.box_min_samples,
                        np.cumsum(counts >= tree.box_min_samples) - 1, -1)
        boxes = np.ascontiguousarray(boxes[slot >= 0])
    else:
        box_min_samples = int(state["box_min_samples"])
        if not 0 <= box_min_samples <= BOX_POINTS_MAX:
            _refuse(f"box_min_samples={box_min_samples} out of [0, {BOX_POINTS_MAX}]")
        tree.box_min_samples = box_min_samples
        boxes = np.ascontiguousarray(state["boxes"], dtype=np.float64)
        slot = state["box_slot"]
    cdef const int32_t[::1] slots = np.ascontiguousarray(slot, dtype=np.int32)
    value = np.ascontiguousarray(state["value"], dtype=np.float64)
    sample_next = np.ascontiguousarray(state["sample_next"], dtype=np.intp)
    rng, count_columns = _loaded_extras(tree, state)
    cdef intp_t m = boxes.shape[0]
    if (boxes.ndim != 3 or boxes.shape[1:] != (2, D)
            or value.shape != (m if tree.lean_values else n, tree.value_stride)):
        _refuse("the boxes or statistics rows do not have the tree's shape")
    _check_loaded(tree, nodes, sample_next, np.asarray(slots), m)
    tree.node_count = 0
    tree.box_count = 0
    tree._resize(max(n, 1))
    if m > tree.box_capacity:
        _realloc(<void**>&tree.bounds, m * 2 * D, sizeof(float64_t))
        if tree.lean_values and tree.value_stride:
            _realloc(<void**>&tree.value, m * tree.value_stride, sizeof(float64_t))
        tree.box_capacity = m
    tree.box_count = m
    if m:
        memcpy(tree.bounds, cnp.PyArray_DATA(boxes), m * 2 * D * sizeof(float64_t))
    if value.shape[0] and tree.value_stride:
        memcpy(tree.value, cnp.PyArray_DATA(value), value.size * sizeof(float64_t))
    if n:
        memcpy(tree.nodes, cnp.PyArray_DATA(nodes), n * sizeof(Node))
        memcpy(tree.box_slot, &slots[0], n * sizeof(int32_t))
    tree.node_count = n
    tree.n_samples_seen = 0
    tree._ensure_samples(sample_next.shape[0])
    if sample_next.shape[0]:
        memcpy(tree.sample_next, cnp.PyArray_DATA(sample_next),
               sample_next.shape[0] * sizeof(intp_t))
    tree.rng.s0 = rng[0]
    tree.rng.s1 = rng[1]
    tree.rng.s2 = rng[2]
    tree.rng.s3 = rng[3]
    tree.count_columns = count_columns
    if state.get("columns") is not None:
        tree.set_column_order(state["columns"])
    return 0


cdef object tree_compact_state(MondrianTree tree, const float64_t[:, ::1] X,
                               const float64_t[:, ::1] rows):
    """``MondrianTree.compact_state`` (its docstring says what is kept)."""
    nodes = tree.nodes_array
    bounds, value, counts, parent = tree.derived_arrays(X, rows)
    left, right = nodes["left_child"], nodes["right_child"]
    internal = left != TREE_LEAF
    leaf = ~internal
    if not (
        np.array_equal(parent, nodes["parent"])
        and np.array_equal(counts, nodes["n_node_samples"])
        and (right[leaf] == TREE_LEAF).all()
        and (nodes["feature"][leaf] == TREE_UNDEFINED).all()
        and (nodes["threshold"][leaf] == TREE_UNDEFINED).all()
        and (nodes["first_sample"][internal] == TREE_LEAF).all()
        and (nodes["paused"][internal] == 0).all()
        and np.isin(nodes["paused"][leaf], (0, 1)).all()
    ):
        return None
    index = np.int32 if max(tree.node_count, tree.n_samples_seen) < 2**31 - 1 else np.intp
    sample_next = np.empty(tree.n_samples_seen, dtype=np.intp)
    if tree.n_samples_seen:
        memcpy(cnp.PyArray_DATA(sample_next), tree.sample_next,
               tree.n_samples_seen * sizeof(intp_t))
    leaf_time = nodes["split_time"][leaf]
    state = {
        "version": COMPACT_STATE_VERSION,
        "class": type(tree),
        "params": (tree.n_features, tree.value_stride, tree.lifetime,
                   tree.min_samples_split, tree.pause_pure),
        "box_min_samples": tree.box_min_samples,
        "node_count": tree.node_count,
        "internal": np.packbits(internal),
        "children": np.stack([left[internal], right[internal]], axis=1).astype(index),
        "feature": nodes["feature"][internal].astype(np.int32),
        "threshold": nodes["threshold"][internal],
        "split_time": nodes["split_time"][internal],
        "leaf_split_time": (None if (leaf_time == tree.lifetime).all() else leaf_time),
        "first_sample": nodes["first_sample"][leaf].astype(index),
        "paused": np.packbits(nodes["paused"][leaf].astype(bool)),
        "sample_next": sample_next.astype(index),
        "rng": tree.get_rng_state(),
        "count_columns": tree.count_columns,
    }
    slots = tree.box_slots
    kept = slots >= 0
    stored = tree.stored_boxes[slots[kept]]
    if _same_bits(stored, bounds[kept]):
        state["bounds"] = None
    else:
        bounds[kept] = stored  # every node's box, the stored ones as they are
        state["bounds"] = bounds
    del stored, bounds
    if tree.lean_values:
        # The stored rows (the others are the sums of the points by definition).
        stored = tree._stored_value_array()[slots[kept]]
        if _same_bits(stored, value[kept]):
            state["value"] = None
        else:
            value[kept] = stored
            state["value"] = value
        state["lean_values"] = True  # (builds without lean values load it storing all)
    else:
        stored = tree._stored_value_array()
        state["value"] = None if _same_bits(stored, value) else stored
    if not tree._trivial_columns():
        state["version"] = 2  # builds without read columns refuse it clearly
        state["columns"] = tree.column_order.astype(np.int32)
    return state


cdef MondrianTree tree_from_compact_state(object state, const float64_t[:, ::1] X,
                                          const float64_t[:, ::1] rows):
    """``MondrianTree.from_compact_state``: the tree saved by ``tree_compact_state``."""
    from mondrian.core._tree import NODE_DTYPE  # (at call time: _tree imports this module)
    if not isinstance(state, dict) or state.get("version") not in _COMPACT_READ_VERSIONS:
        raise ValueError(
            "cannot load a compact MondrianTree state of version "
            f"{state.get('version') if isinstance(state, dict) else None}; this build "
            f"reads versions {_COMPACT_READ_VERSIONS}"
        )
    cls = state["class"]
    if not (isinstance(cls, type) and issubclass(cls, MondrianTree)):
        raise ValueError("a compact tree state must name a MondrianTree class")
    params = tuple(state["params"])
    if len(params) != 5 or params[:2] != (X.shape[1], rows.shape[1]):
        _refuse("the compact state's widths do not match the store's")
    # (states saved before lean boxes have no box_min_samples: the default applies)
    cdef MondrianTree tree = cls(*params, 0, state.get("box_min_samples"),
                                 bool(state.get("lean_values", False)))
    rng, tree.count_columns = _loaded_extras(tree, state)
    cdef intp_t n = int(state["node_count"])
    if not 0 <= n < MAX_NODES:
        _refuse(f"node_count={n} out of range")
    internal = np.unpackbits(np.asarray(state["internal"], dtype=np.uint8),
                             count=n).astype(bool)
    leaf = ~internal
    n_leaves = int(leaf.sum())
    nodes = np.zeros(n, dtype=NODE_DTYPE)
    children = np.asarray(state["children"]).reshape(-1, 2)
    # (checked before the int32 fields take them: a wrapped id would pass the test below)
    if children.shape[0] != n - n_leaves or (
            children.size and not 0 <= children.min() <= children.max() < n):
        raise ValueError("inconsistent compact MondrianTree state")
    nodes["left_child"][leaf] = TREE_LEAF
    nodes["right_child"][leaf] = TREE_LEAF
    nodes["left_child"][internal] = children[:, 0]
    nodes["right_child"][internal] = children[:, 1]
    paused = np.unpackbits(np.asarray(state["paused"], dtype=np.uint8),
                           count=n_leaves).astype(bool)
    nodes["feature"][leaf] = np.where(paused, TREE_PAUSED, TREE_UNDEFINED)
    nodes["feature"][internal] = state["feature"]
    nodes["threshold"][leaf] = TREE_UNDEFINED
    nodes["threshold"][internal] = state["threshold"]
    leaf_time = state["leaf_split_time"]
    nodes["split_time"][leaf] = tree.lifetime if leaf_time is None else leaf_time
    nodes["split_time"][internal] = state["split_time"]
    nodes["first_sample"][internal] = TREE_LEAF
    nodes["first_sample"][leaf] = state["first_sample"]
    nodes["parent"] = TREE_LEAF
    nodes["n_node_samples"] = 0
    sample_next = np.ascontiguousarray(state["sample_next"], dtype=np.intp)
    cdef intp_t m = sample_next.shape[0]
    _check_loaded(tree, nodes, sample_next, whole=False)
    tree._resize(max(n, 1))
    if n:
        memcpy(tree.nodes, cnp.PyArray_DATA(nodes), n * sizeof(Node))
    tree.node_count = n
    tree._ensure_samples(m)
    if m:
        memcpy(tree.sample_next, cnp.PyArray_DATA(sample_next), m * sizeof(intp_t))
    bounds, value, counts, parent = tree.derived_arrays(X, rows)
    if (counts < 0).any():
        raise ValueError("inconsistent compact MondrianTree state")
    cdef intp_t j
    cdef intp_t[::1] cnt = counts
    cdef intp_t[::1] par = parent
    for j in range(n):
        tree.nodes[j].parent = par[j]
        tree.nodes[j].n_node_samples = cnt[j]
    cdef intp_t D = tree.n_features, S = tree.value_stride
    if state["bounds"] is not None:
        bounds = np.ascontiguousarray(state["bounds"], dtype=np.float64)
    if state["value"] is not None:
        value = np.ascontiguousarray(state["value"], dtype=np.float64)
    if bounds.shape != (n, 2, D) or value.shape != (n, S):
        raise ValueError("inconsistent compact MondrianTree state")
    cdef const float64_t[:, :, ::1] b = bounds
    cdef const float64_t[:, ::1] v = value
    for j in range(n):
        tree.box_slot[j] = -1
        if cnt[j] >= tree.box_min_samples:
            tree._new_box(j)
            memcpy(tree.bounds + 2 * D * tree.box_slot[j], &b[j, 0, 0],
                   2 * D * sizeof(float64_t))
        if S and stored_row(tree, j) != NULL:
            memcpy(<float64_t*>stored_row(tree, j), &v[j, 0], S * sizeof(float64_t))
    tree._attach(X.base, &X[0, 0] if X.shape[0] else NULL, X.shape[0])
    tree._attach_rows(rows.base, &rows[0, 0] if rows.shape[0] and S else NULL,
                      rows.shape[0], rows.shape[1])
    tree.rng.s0 = rng[0]
    tree.rng.s1 = rng[1]
    tree.rng.s2 = rng[2]
    tree.rng.s3 = rng[3]
    if state.get("columns") is not None:
        tree.set_column_order(state["columns"])
    return tree
