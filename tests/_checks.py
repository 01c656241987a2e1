"""Structural checks shared by the property and unit tests of the tree core."""

import _thread
import contextlib
import signal
import threading

import numpy as np
from numpy.testing import assert_array_equal
from scipy import stats

from _reference import feature_map

TREE_LEAF = -1
TREE_UNDEFINED = -2

# The per-node arrays of a tree snapshot with one entry per node.
NODE_ARRAYS = (
    "children_left",
    "children_right",
    "parent",
    "feature",
    "threshold",
    "split_time",
    "n_node_samples",
    "paused",
)
TREE_ARRAYS = (*NODE_ARRAYS, "lower_bounds", "upper_bounds", "value")


# The package stores boxes and cuts in scaled units and reports them in original units as
# scaled * scale + offset. That round trip is exact only up to rounding, so with min-max
# scaling the box and threshold checks allow this many ulps of |x| + |offset| (0 disables the
# slack; reported to the lead as a deviation from "data bounding box" in the API spec).
ROUNDING_ULPS = 8


# The node records of state versions 2 and 3 (56 bytes: a 32-bit paused flag and a zero
# padding word), in which fingerprints of earlier implementations were taken.
NODE56_DTYPE = np.dtype([
    ("threshold", np.float64), ("split_time", np.float64), ("n_node_samples", np.intp),
    ("first_sample", np.intp), ("parent", np.int32), ("left_child", np.int32),
    ("right_child", np.int32), ("feature", np.int32), ("paused", np.int32),
    ("reserved", np.int32),
])


def node_records_as(nodes, dtype):
    """``nodes`` (``MondrianTree.nodes_array``, paused flags decoded) in an older record layout
    ``dtype`` (its ``reserved`` padding zero)."""
    out = np.zeros(nodes.shape[0], dtype=dtype)
    for name in dtype.names:
        if name != "reserved":
            out[name] = nodes[name]
    return out


def node_records_56(nodes):
    """``nodes`` (``MondrianTree.nodes_array``, paused flags decoded) in the 56-byte layout."""
    return node_records_as(nodes, NODE56_DTYPE)


def fit_then_extend(trees, X, rows, n, chunks):
    """Fit every tree of ``trees`` on the first ``n`` rows, then extend each by the next
    ``chunks[0]`` rows, the next ``chunks[1]``, and so on."""
    for tree in trees:
        tree.fit(X, rows, np.arange(n))
    start = n
    for size in chunks:
        for tree in trees:
            tree.extend(X, rows, np.arange(start, start + size))
        start += size


def rounding_tolerance(est, X):
    """Per-feature slack for original-unit boxes and thresholds (0 without scaling)."""
    if getattr(est, "feature_scaling", None) is None or ROUNDING_ULPS == 0:
        return np.zeros(X.shape[1])
    offset = np.abs(np.asarray(est.feature_offset_, dtype=np.float64))
    finfo = np.finfo(np.float64)
    relative = finfo.eps * (np.abs(X).max(axis=0) + offset)
    return ROUNDING_ULPS * (relative + finfo.smallest_subnormal)


def tree_snapshot(est):
    """Copies of every public array of `est.tree_` plus its scalars, keyed by name."""
    t = est.tree_
    snap = {name: np.array(getattr(t, name)) for name in TREE_ARRAYS}
    snap["node_count"] = int(t.node_count)
    snap["max_depth"] = int(t.max_depth)
    return snap


def assert_same_tree(est_a, est_b):
    """The two fitted trees have bit-identical public arrays."""
    a, b = tree_snapshot(est_a), tree_snapshot(est_b)
    assert a["node_count"] == b["node_count"]
    assert a["max_depth"] == b["max_depth"]
    for name in TREE_ARRAYS:
        assert_array_equal(a[name], b[name], err_msg=name, strict=True)


def assert_same_forest(forest_a, forest_b):
    """Both forests hold the same number of bit-identical trees."""
    assert len(forest_a.estimators_) == len(forest_b.estimators_)
    for tree_a, tree_b in zip(forest_a.estimators_, forest_b.estimators_, strict=True):
        assert_same_tree(tree_a, tree_b)


def node_depths(children_left, children_right, root=0):
    """Depth of every node reachable from `root`; unreachable nodes get -1."""
    depth = np.full(len(children_left), -1, dtype=np.intp)
    depth[root] = 0
    stack = [root]
    while stack:
        j = stack.pop()
        for child in (children_left[j], children_right[j]):
            if child != TREE_LEAF:
                assert depth[child] == -1, f"node {child} reached twice"
                depth[child] = depth[j] + 1
                stack.append(child)
    return depth


def check_tree_invariants(est, X, y):
    """Assert every structural invariant of a fitted tree trained on exactly (X, y).

    Checks the node links, the sentinels, the box nesting and split separation, the split
    times (strictly increasing downwards, leaves == lifetime), the sample and class counts
    (children add up to the parent, root == data, leaves == the points `apply` sends there),
    the pause rule of §3.1 and the placement of every training point.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    s = tree_snapshot(est)
    left, right, parent = s["children_left"], s["children_right"], s["parent"]
    feature, threshold, tau = s["feature"], s["threshold"], s["split_time"]
    lower, upper = s["lower_bounds"], s["upper_bounds"]
    n_nodes = s["node_count"]
    lifetime = float(est.lifetime)
    n_features = X.shape[1]
    classes = np.asarray(est.classes_)

    # shapes
    for name in NODE_ARRAYS:
        assert s[name].shape == (n_nodes,), name
    assert lower.shape == upper.shape == (n_nodes, n_features)
    assert s["value"].shape == (n_nodes, len(classes))
    assert n_nodes >= 1

    # links and sentinels: node 0 is the root, every node is reached exactly once
    leaf = left == TREE_LEAF
    assert_array_equal(leaf, right == TREE_LEAF)
    assert parent[0] == TREE_LEAF
    depth = node_depths(left, right)
    assert np.all(depth >= 0), "unreachable nodes"
    assert s["max_depth"] == depth.max()
    internal = np.flatnonzero(~leaf)
    assert_array_equal(parent[left[internal]], internal)
    assert_array_equal(parent[right[internal]], internal)
    assert np.all(feature[leaf] == TREE_UNDEFINED)
    assert np.all(threshold[leaf] == TREE_UNDEFINED)
    assert np.all((feature[internal] >= 0) & (feature[internal] < n_features))
    assert s["paused"].dtype == bool  # (the core keeps it in a leaf's feature: never shown)
    assert not np.any(s["paused"][internal]), "an internal node is paused"

    # boxes: non-empty, nested, and separated by the split of the parent. A cut lies in
    # [lower, upper) of the parent box: the open interval, except that the package falls back
    # to the lower end when no float lies strictly inside (adjacent floats), which still
    # separates the points under "left iff x <= threshold"
    tol = rounding_tolerance(est, X)
    assert np.all(lower <= upper)
    for j in internal:
        for child in (left[j], right[j]):
            assert np.all(lower[child] >= lower[j]) and np.all(upper[child] <= upper[j])
        f, thr, slack = feature[j], threshold[j], tol[feature[j]]
        assert lower[j, f] - slack <= thr, "cut below the box"
        assert upper[left[j], f] <= thr + slack, "left child box crosses the cut"
        assert upper[left[j], f] < lower[right[j], f], "children boxes overlap"
        if slack == 0:
            assert thr < upper[j, f], "cut at or above the upper end of the box"
            assert thr < lower[right[j], f], "right child box crosses the cut"
        else:
            assert thr <= lower[right[j], f] + slack, "right child box crosses the cut"

    # split times
    assert np.all(tau[leaf] == lifetime)
    assert np.all(tau[internal] < lifetime)
    assert np.all(tau[internal] > 0)
    assert np.all(tau[left[internal]] > tau[internal])
    assert np.all(tau[right[internal]] > tau[internal])

    # counts
    counts, value = s["n_node_samples"], s["value"]
    assert counts[0] == len(X)
    assert_array_equal(counts[internal], counts[left[internal]] + counts[right[internal]])
    assert np.all(counts >= 1)
    assert_array_equal(value[internal], value[left[internal]] + value[right[internal]])
    label_counts = np.array([np.sum(y == c) for c in classes], dtype=np.float64)
    assert_array_equal(value[0], label_counts)
    assert_array_equal(value.sum(axis=1), counts)

    # pause rule (§3.1): a paused leaf is pure, too small, or has a zero-extent box; with an
    # infinite lifetime every leaf is in one of these states, or its linear dimension (scaled
    # units) is so small (< 1e-300) that its Exp(LD) split time overflows to inf
    stuck = (
        ((value > 0).sum(axis=1) <= 1)
        | (counts < est.min_samples_split)
        | np.all(lower == upper, axis=1)
    )
    scale = feature_map(est)[1]
    overflow = ((upper - lower) / scale).sum(axis=1) < 1e-300
    assert np.all(stuck[s["paused"].astype(bool)]), "a paused leaf could still split"
    if np.isinf(lifetime):
        assert np.all((stuck | overflow)[leaf]), "a splittable leaf under an infinite lifetime"

    # training points: apply gives a leaf, the point is in the box of that leaf and of all its
    # ancestors (and, when boxes are exact, in no other leaf box); each leaf box is the bounding
    # box of the points sent there and its counts are theirs
    leaves = np.asarray(est.apply(X))
    assert leaves.shape == (len(X),)
    assert np.all(leaf[leaves])
    leaf_ids = np.flatnonzero(leaf)
    for x, j in zip(X, leaves, strict=True):
        if not np.any(tol):
            inside = np.all((lower[leaf_ids] <= x) & (x <= upper[leaf_ids]), axis=1)
            assert_array_equal(leaf_ids[inside], [j])
        node = j
        while node != TREE_LEAF:
            assert np.all(lower[node] <= x + tol) and np.all(x <= upper[node] + tol)
            node = parent[node]
    assert_array_equal(np.bincount(leaves, minlength=n_nodes)[leaf], counts[leaf])
    for j in leaf_ids:
        held = leaves == j
        assert np.all(np.abs(lower[j] - X[held].min(axis=0)) <= tol)
        assert np.all(np.abs(upper[j] - X[held].max(axis=0)) <= tol)
        assert_array_equal(value[j], [np.sum(y[held] == c) for c in classes])


def check_proba(proba, n_rows, n_classes):
    """Probabilities have the right shape, lie in [0, 1] and rows sum to 1 (to rounding)."""
    proba = np.asarray(proba)
    assert proba.shape == (n_rows, n_classes)
    assert np.all(np.isfinite(proba))
    assert np.all(proba >= 0.0) and np.all(proba <= 1.0 + 1e-12)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-12)


def reads_beside_writes(read, write, n_readers=2):
    """Run ``read()`` in a loop on ``n_readers`` threads while ``write()`` runs on this one;
    return what the reads raised (``repr`` of the first exception of each reader)."""
    stop, errors = threading.Event(), []

    def reader():
        while not stop.is_set():
            try:
                read()
            except Exception as exc:  # noqa: BLE001
                errors.append(repr(exc))
                return

    threads = [threading.Thread(target=reader) for _ in range(n_readers)]
    for t in threads:
        t.start()
    try:
        write()
    finally:
        stop.set()
        for t in threads:
            t.join()
    return errors


def run_interrupted(call, delay):
    """Run ``call`` while a timer thread interrupts the main thread after ``delay`` seconds;
    return whether the interrupt came before the call returned."""
    timer = threading.Timer(delay, _thread.interrupt_main)
    hit = False
    # Other tests (dask's LocalCluster) may leave a SIGINT handler of their own behind, which
    # interrupt_main would call instead of raising KeyboardInterrupt: use Python's default here.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer.start()
        try:
            call()
        finally:
            timer.join()
            for _ in range(100):  # a pending interrupt fires at the next bytecode
                pass
    except KeyboardInterrupt:
        hit = True
    finally:
        signal.signal(signal.SIGINT, previous)
    return hit


@contextlib.contextmanager
def box_min_samples(k):
    """Trees made inside get ``box_min_samples=k`` by default (whatever their width)."""
    from mondrian.core import _tree

    old = _tree.BOX_MIN_SAMPLES, _tree.BOX_MIN_SAMPLES_PER_FEATURE
    _tree.BOX_MIN_SAMPLES, _tree.BOX_MIN_SAMPLES_PER_FEATURE = k, 0.0
    try:
        yield
    finally:
        _tree.BOX_MIN_SAMPLES, _tree.BOX_MIN_SAMPLES_PER_FEATURE = old


def two_sample_chi2_pvalue(a, b, min_expected=5.0):
    """p-value of the chi-square homogeneity test of two samples of small integers.

    Rare categories are pooled with their neighbours (in sorted order) until every pooled
    category has an expected count of at least `min_expected` in both samples, which keeps
    the chi-square approximation valid.
    """
    values = np.union1d(a, b)
    table = np.array([[np.sum(a == v) for v in values], [np.sum(b == v) for v in values]])
    frac = np.array([len(a), len(b)]) / (len(a) + len(b))
    pooled, current = [], np.zeros(2)
    for col in table.T:
        current = current + col
        if np.all(current.sum() * frac >= min_expected):
            pooled.append(current)
            current = np.zeros(2)
    if current.sum() > 0:
        if pooled:
            pooled[-1] = pooled[-1] + current
        else:
            pooled.append(current)
    if len(pooled) < 2:
        return 1.0  # both samples sit in one category
    return stats.chi2_contingency(np.array(pooled).T).pvalue
