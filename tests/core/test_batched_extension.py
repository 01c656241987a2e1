"""The node-major extension of a tree by a mini-batch (issue 25), on the tree core.

``MondrianTree.extend`` inserts a whole set of points ``P`` block by block: at a node of box
``B`` a cut is born above it at ``parent_time + E``, ``E ~ Exp(LD(B') - LD(B))`` with ``B' =
bbox(B u P)`` (``LD``: the sum of the sides), in a dimension drawn in proportion to the extent
gained there and at a location uniform in the gained region; else the node takes ``B'`` and
routes ``P`` to its children. Checked here, with fixed seeds and stated tolerances:

* in law against a tree sampled on all points at once (projectivity): the root split time
  times the linear dimension of the union box is Exp(1) (KS, p > 1e-4), the root cut's
  dimension frequencies are the union box's sides over their sum (4 binomial standard
  errors), its location is uniform on the union's range (KS), and at a finite lifetime the
  leaf counts follow those of batch trees (two-sample chi-square, p > 1e-4);
* exactly: the stored boxes and statistics rows equal a recount from the stored points
  below each node, and an undo log puts the tree back bit for bit, with every box stored, with
  lean boxes and with lean values, for batches inside and outside the stored boxes.

The work per insertion (``extend_work``) not growing with the store is checked in
``test_insertion_work.py`` and ``test_extension_partial_boxes.py``.
"""

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from scipy import stats

from mondrian.core._tree import MondrianTree

from _checks import two_sample_chi2_pvalue

P_MIN = 1e-4
N_SE = 4.0
N_TREES = 3000
WIDTHS = np.array([0.5, 1.0, 2.0])  # sides of the union box


def _corner_then_rest(seed):
    """Six points: two in a small corner of the box of side WIDTHS (fitted first), then a
    batch of four that spans the whole box (the union box is exactly [0, WIDTHS])."""
    rng = np.random.default_rng(seed)
    first = rng.uniform(0.0, 0.1, size=(2, 3)) * WIDTHS
    batch = rng.uniform(0.0, 1.0, size=(4, 3)) * WIDTHS
    batch[0] = 0.0
    batch[1] = WIDTHS
    X = np.ascontiguousarray(np.vstack([first, batch]))
    return X, np.ones((len(X), 1))


def _extended_roots(seed0, box_min_samples):
    times, dims, where = [], [], []
    for s in range(N_TREES):
        X, rows = _corner_then_rest(seed0 + s)
        tree = MondrianTree(3, 1, np.inf, seed=seed0 + s, box_min_samples=box_min_samples)
        tree.fit(X, rows, np.arange(2))
        tree.extend(X, rows, np.arange(2, 6))
        root = tree.nodes_array[0]
        times.append(root["split_time"])
        dims.append(root["feature"])
        where.append(root["threshold"] / WIDTHS[root["feature"]])
    return np.array(times), np.array(dims), np.array(where)


@pytest.mark.statistical
@pytest.mark.parametrize("box_min_samples", [0, None])
def test_batched_extension_root_has_the_batch_law(global_random_seed, box_min_samples):
    """A tree fitted on two corner points and extended by a batch of four has the root of a
    tree sampled on the six: split time ~ Exp(LD), dimension ~ sides, location uniform. Every
    box stored (0), or none (the default: the root's box read from its points)."""
    times, dims, where = _extended_roots(1000 * global_random_seed, box_min_samples)
    linear_dim = WIDTHS.sum()
    assert stats.kstest(times * linear_dim, "expon").pvalue > P_MIN
    for d, side in enumerate(WIDTHS):
        p = side / linear_dim
        se = np.sqrt(p * (1 - p) / N_TREES)
        assert abs(np.mean(dims == d) - p) < N_SE * se, (d, np.mean(dims == d), p)
    assert stats.kstest(where, "uniform").pvalue > P_MIN


@pytest.mark.statistical
@pytest.mark.parametrize("batches", [[30], [10, 10, 10], [1, 29]])
def test_batched_extension_leaf_counts_at_a_finite_lifetime(global_random_seed, batches):
    """Leaf counts at lifetime 2 on 34 points: fitted on 4 then extended by the batches,
    against fitted on all 34 (2000 trees each)."""
    rng = np.random.default_rng(global_random_seed)
    X = np.ascontiguousarray(rng.uniform(0.0, 1.0, size=(34, 2)))
    rows = np.ones((len(X), 1))
    seed0 = 7919 * global_random_seed
    batch_leaves, online_leaves = [], []
    for s in range(2000):
        batch = MondrianTree(2, 1, 2.0, seed=seed0 + s).fit(X, rows, np.arange(34))
        batch_leaves.append(int(np.sum(batch.nodes_array["left_child"] == -1)))
        online = MondrianTree(2, 1, 2.0, seed=seed0 + 10**6 + s).fit(X, rows, np.arange(4))
        start = 4
        for size in batches:
            online.extend(X, rows, np.arange(start, start + size))
            start += size
        online_leaves.append(int(np.sum(online.nodes_array["left_child"] == -1)))
    assert two_sample_chi2_pvalue(np.array(batch_leaves), np.array(online_leaves)) > P_MIN


def _points_below(nodes, tree):
    """The stored points below every node (leaf lists unioned up the tree)."""
    below, order = {}, [0]
    for j in order:
        if nodes[j]["left_child"] != -1:
            order.extend([nodes[j]["left_child"], nodes[j]["right_child"]])
    for j in reversed(order):
        if nodes[j]["left_child"] == -1:
            below[j] = list(tree.leaf_samples(j))
        else:
            below[j] = below[nodes[j]["left_child"]] + below[nodes[j]["right_child"]]
    return below


def _tree_state(tree):
    return (tree._raw_nodes(), tree.box_slots, tree.stored_boxes, tree._stored_value_array(),
            tree.leaf_sample_assignment(), tree.get_rng_state())


def _make(kind, seed):
    lean = dict(box_min_samples=0) if kind == "full" else dict(box_min_samples=6)
    if kind == "lean values":
        lean["lean_values"] = True
    return MondrianTree(3, 2, np.inf, min_samples_split=2, pause_pure=True, seed=seed, **lean)


@pytest.mark.exact
@pytest.mark.parametrize("kind", ["full", "lean boxes", "lean values"])
def test_batched_extension_boxes_rows_recount_and_rollback(kind, global_random_seed):
    """After every mini-batch the stored boxes and rows are the min/max and sums over the
    points below their node; each batch, rolled back, leaves the tree bit for bit as it was
    (batches inside the fitted range and outside it, with ties)."""
    rng = np.random.default_rng(global_random_seed)
    X = np.round(rng.uniform(0.0, 1.0, size=(200, 3)) * 20) / 20
    X[120:140] *= 3.0  # a batch outside every stored box
    X = np.ascontiguousarray(X)
    rows = np.eye(2)[rng.integers(0, 2, len(X))]
    tree = _make(kind, global_random_seed)
    tree.fit(X, rows, np.arange(40))
    start = 40
    for size in (20, 60, 20, 1, 59):
        before = _tree_state(tree)
        idx = np.arange(start, start + size)
        assert tree.begin_undo()
        tree.extend(X, rows, idx)
        tree.rollback_undo()
        for a, b in zip(before, _tree_state(tree), strict=True):
            assert_array_equal(a, b)
        tree.extend(X, rows, idx)
        start += size
        nodes = tree.nodes_array
        below = _points_below(nodes, tree)
        slots, boxes = tree.box_slots, tree.stored_boxes
        stored_rows = tree._stored_value_array()
        for j, points in below.items():
            assert nodes[j]["n_node_samples"] == len(points)
            if slots[j] >= 0:
                assert_array_equal(boxes[slots[j], 0], X[points].min(axis=0))
                assert_array_equal(boxes[slots[j], 1], X[points].max(axis=0))
            r = slots[j] if kind == "lean values" else j
            if r >= 0:
                assert_array_equal(stored_rows[r], rows[points].sum(axis=0))
