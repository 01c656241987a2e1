"""The invariant a lean tree (boxes of small nodes recomputed on demand) relies on.

Every data box a tree stores is the componentwise min/max of the stored points below the
node, so recomputing it from those points gives the same bits. These tests check it directly,
node by node, against a brute-force min/max over each subtree's leaf lists, after batch fits,
mini-batch and one-row online extensions, on data with duplicate rows and constant columns
(zero-width sides, paused leaves that regrow), for every model whose boxes are data boxes.
"""

import numpy as np
import pytest

from mondrian import MondrianForestClassifier, MondrianForestRegressor
from mondrian.kernel.ridge import MondrianKernelRidge

from _data import awkward_classes

pytestmark = pytest.mark.exact


def _subtree_points(tree, node):
    nodes = tree.nodes_array
    stack, points = [node], []
    while stack:
        j = stack.pop()
        if nodes["left_child"][j] == -1:
            points.extend(tree.leaf_samples(j).tolist())
        else:
            stack.extend((nodes["left_child"][j], nodes["right_child"][j]))
    return np.asarray(points, dtype=np.intp)


def _check_boxes(model):
    X = model._store.X
    for tree in model._trees:
        bounds = tree.bounds_array
        counts = tree.nodes_array["n_node_samples"]
        for node in range(tree.node_count):
            points = _subtree_points(tree, node)
            assert len(points) == counts[node]
            assert bounds[node, 0].tobytes() == X[points].min(axis=0).tobytes()
            assert bounds[node, 1].tobytes() == X[points].max(axis=0).tobytes()


@pytest.mark.parametrize("kind", ["classifier", "regressor", "kernel"])
def test_stored_boxes_are_min_max_of_the_points_below(kind, global_random_seed):
    X, y = awkward_classes(global_random_seed, 240, 5)
    if kind == "classifier":
        model = MondrianForestClassifier(n_estimators=3, random_state=global_random_seed)
        model.fit(X[:120], y[:120])
        _check_boxes(model)
        model.partial_fit(X[120:200], y[120:200])
        for i in range(200, 240):
            model.learn_one(dict(enumerate(X[i])), int(y[i]))
    elif kind == "regressor":
        model = MondrianForestRegressor(n_estimators=3, random_state=global_random_seed)
        model.fit(X[:120], X[:120, 0])
        _check_boxes(model)
        model.partial_fit(X[120:200], X[120:200, 0])
        for i in range(200, 240):
            model.partial_fit(X[i:i + 1], X[i:i + 1, 0])
    else:
        model = MondrianKernelRidge(n_estimators=3, lifetime=2.0, random_state=global_random_seed)
        model.fit(X[:120], X[:120, 0])
        _check_boxes(model)
        model.partial_fit(X[120:240], X[120:240, 0])
    _check_boxes(model)
