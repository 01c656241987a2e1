"""feature_importances_ (loss decrease at the cuts) and decision_path."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import sparse

from mondrian import (
    MondrianForestClassifier,
    MondrianForestRegressor,
    MondrianTreeClassifier,
    MondrianTreeRegressor,
)

from _data import sine_regression


def _data(n=300, seed=0):
    X, y_reg = sine_regression(n, 4, seed, noise=0.05)
    return X, (X[:, 0] > 0.5).astype(int), y_reg


@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_importances_find_the_relevant_feature(kind):
    """Only feature 0 matters. The trees cut every feature about as often (the Mondrian
    process ignores the labels), so a label-free count of cuts would give it about 1/4."""
    X, y_class, y_reg = _data()
    if kind == "classifier":
        model = MondrianForestClassifier(n_estimators=10, random_state=0).fit(X, y_class)
    else:
        model = MondrianForestRegressor(n_estimators=10, random_state=0).fit(X, y_reg)
    imp = model.feature_importances_
    assert imp.shape == (4,)
    assert np.all(imp >= 0)
    assert_allclose(imp.sum(), 1.0)
    assert imp[0] > 0.6
    assert imp[0] == imp.max()


def _brute_force_importances(model):
    """A node-by-node reading of the documented definition."""
    total = np.zeros(model.n_features_in_)
    for tree in model._trees:
        nodes, value = tree.nodes_array, tree.value_array
        credit = np.zeros(model.n_features_in_)
        for j in range(tree.node_count):
            left, right = nodes["left_child"][j], nodes["right_child"][j]
            if left == -1:
                continue
            losses = []
            for node in (j, left, right):
                row = value[node]
                if isinstance(model, MondrianForestClassifier):
                    a, k = model.concentration, len(row)
                    losses.append(-sum(c * np.log((c + a / k) / (row.sum() + a)) for c in row))
                else:
                    losses.append(max(row[2] - row[1] ** 2 / row[0], 0.0))
            credit[nodes["feature"][j]] += max(losses[0] - losses[1] - losses[2], 0.0)
        if credit.sum() > 0:
            total += credit / credit.sum()
    return total / total.sum()


@pytest.mark.exact
def test_importances_match_the_definition():
    X, y_class, y_reg = _data(n=80, seed=1)
    clf = MondrianForestClassifier(n_estimators=3, concentration=0.5, random_state=0)
    reg = MondrianForestRegressor(n_estimators=3, random_state=0)
    for model, y in ((clf, y_class), (reg, y_reg)):
        model.fit(X, y)
        assert_allclose(model.feature_importances_, _brute_force_importances(model),
                        rtol=1e-10)


def test_importances_of_trees_without_cuts_are_zero():
    X = np.zeros((5, 3))
    clf = MondrianForestClassifier(n_estimators=2, random_state=0).fit(X, [0, 1, 0, 1, 0])
    assert_array_equal(clf.feature_importances_, np.zeros(3))
    tree = MondrianTreeRegressor(random_state=0).fit(*_data(50)[::2])
    assert_allclose(tree.feature_importances_.sum(), 1.0)


@pytest.mark.exact
@pytest.mark.parametrize("Model", [MondrianForestClassifier, MondrianForestRegressor])
def test_decision_path_is_the_chain_from_root_to_leaf(Model):
    X, y_class, y_reg = _data(n=120)
    y = y_class if Model is MondrianForestClassifier else y_reg
    model = Model(n_estimators=4, lifetime=5.0, random_state=0).fit(X, y)
    X_test = np.random.RandomState(3).uniform(-0.2, 1.2, size=(40, 4))
    indicator, ptr = model.decision_path(X_test)
    assert sparse.issparse(indicator) and indicator.format == "csr"
    assert_array_equal(ptr, np.concatenate([[0], np.cumsum([t.node_count
                                                            for t in model._trees])]))
    assert indicator.shape == (40, ptr[-1])
    leaves = model.apply(X_test)
    dense = indicator.toarray()
    for k, tree in enumerate(model._trees):
        parent = tree.nodes_array["parent"]
        block = dense[:, ptr[k]:ptr[k + 1]]
        for i in range(40):
            expected, node = [], leaves[i, k]
            while node != -1:
                expected.append(node)
                node = parent[node]
            assert_array_equal(np.flatnonzero(block[i]), np.sort(expected))


def test_single_tree_decision_path_returns_the_indicator():
    X, y, _ = _data(n=60)
    tree = MondrianTreeClassifier(random_state=0).fit(X, y)
    indicator = tree.decision_path(X)
    assert indicator.shape == (60, tree.tree_.node_count)
    assert_array_equal(indicator[np.arange(60), tree.apply(X)].A1, 1)
    assert_array_equal(indicator[:, 0].toarray().ravel(), 1)  # every path starts at the root
