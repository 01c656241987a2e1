"""Checks shared by the tests of forgetting: a tree equals the tree of its remaining points."""

import numpy as np
from numpy.testing import assert_allclose, assert_array_equal


def _sorted_rows(A):
    return A[np.lexsort(A.T[::-1])]


def check_tree(tree, X, rows, exact_values=True):
    """The tree is the tree of the points in its leaves: counts, parents, stored boxes and
    statistics equal a recount, every cut separates points of its node, the leaves hold
    each stored point once, and a node stores a box iff it holds box_min_samples points."""
    if tree.node_count == 0:
        assert X.shape[0] == 0
        return
    bounds, value, counts, parent = tree.derived_arrays(X, rows)
    nodes = tree.nodes_array
    assert (counts >= 0).all(), "a node the root does not reach"
    assert_array_equal(counts, nodes["n_node_samples"])
    assert_array_equal(parent, nodes["parent"])
    assert tree.bounds_array.tobytes() == bounds.tobytes()
    if exact_values:
        assert tree._full_value_array().tobytes() == value.tobytes()
    else:
        assert_allclose(tree._full_value_array(), value, rtol=1e-9, atol=1e-9)
    leaves = np.flatnonzero(nodes["left_child"] == -1)
    held = np.sort(np.concatenate([tree.leaf_samples(j) for j in leaves]))
    assert_array_equal(held, np.arange(X.shape[0]))
    internal = np.flatnonzero(nodes["left_child"] != -1)
    for j in internal:
        f, t = nodes["feature"][j], nodes["threshold"][j]
        assert bounds[j, 0, f] <= t < bounds[j, 1, f]
        assert nodes["split_time"][j] < tree.lifetime
        assert nodes["split_time"][j] > (0 if nodes["parent"][j] < 0
                                         else nodes["split_time"][nodes["parent"][j]])
    if tree.box_min_samples > 0:
        assert_array_equal(tree.box_slots >= 0, counts >= tree.box_min_samples)
        assert tree.box_count == int((counts >= tree.box_min_samples).sum())


def check_model(model, exact_values=True):
    store = model._store
    for tree in model._trees:
        check_tree(tree, store.X, store.rows, exact_values)
