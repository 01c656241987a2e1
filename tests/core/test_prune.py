"""``prune(lifetime)``: the forest restricted to a smaller lifetime."""

import pickle

import numpy as np
import pytest

from mondrian import MondrianForestClassifier, MondrianForestRegressor
from mondrian.forest._gaussian import predict_moments_trees, upward_messages

from _data import threshold_classes


@pytest.mark.exact
@pytest.mark.parametrize("lifetime", [0.0, 0.3, 2.0])
def test_pruned_classifier_predicts_the_forest_read_at_that_lifetime(lifetime):
    X, y = threshold_classes(150, 3, 0)
    forest = MondrianForestClassifier(n_estimators=8, lifetime=6.0, random_state=0).fit(X, y)
    pruned = forest.prune(lifetime)
    X_test = np.random.RandomState(1).uniform(-0.2, 1.2, size=(50, 3))
    read_at = forest._proba_scaled(forest._validate_X_predict(X_test), lifetime=lifetime)
    np.testing.assert_array_equal(pruned.predict_proba(X_test), read_at)
    for tree in pruned.estimators_:
        structure = tree.tree_
        assert np.all(structure.split_time[structure.children_left == -1] == lifetime)
        assert np.all(structure.split_time[structure.children_left != -1] < lifetime)
    # Every training point sits in one leaf of the pruned trees, which hold them all.
    leaves = pruned.apply(X)
    for m, tree in enumerate(pruned._trees):
        assignment = tree.leaf_sample_assignment()
        np.testing.assert_array_equal(assignment, leaves[:, m])
    assert forest.lifetime == 6.0 and pruned.lifetime == lifetime


def test_pruned_model_is_an_ordinary_estimator():
    X, y = threshold_classes(150, 3, 1)
    forest = MondrianForestClassifier(n_estimators=5, lifetime=4.0, random_state=0).fit(X[:100],
                                                                                          y[:100])
    before = pickle.dumps(forest)
    pruned = forest.prune(1.0)
    pruned.partial_fit(X[100:], y[100:])
    assert pickle.dumps(forest) == before  # the original is untouched
    assert pruned.n_samples_seen_ == len(X)
    again = pickle.loads(pickle.dumps(pruned))
    np.testing.assert_array_equal(again.predict_proba(X), pruned.predict_proba(X))
    with pytest.raises(ValueError, match="lifetime"):
        forest.prune(5.0)


@pytest.mark.statistical
def test_pruned_trees_have_the_law_of_trees_grown_to_that_lifetime():
    """P(two points share a leaf) = exp(-lifetime * ||x - x'||_1) for the pruned trees.

    The regressor with min_samples_split=1 never pauses (the classifier pauses pure nodes,
    which makes the law depend on labels). 2000 trees: 4 binomial standard errors.
    """
    X = np.array([[0.1, 0.2], [0.35, 0.3], [0.6, 0.9], [0.9, 0.1]])
    y = np.array([0.0, 1.0, 0.5, 2.0])
    forest = MondrianForestRegressor(n_estimators=2000, lifetime=8.0, feature_scaling=None,
                                     min_samples_split=1, noise_variance=1.0,
                                     prior_variance=1.0, sigmoid_rate=1.0,
                                     random_state=0).fit(X, y)
    leaves = forest.prune(2.0).apply(X)
    for a in range(4):
        for b in range(a + 1, 4):
            rate = np.mean(leaves[a] == leaves[b])
            expected = np.exp(-2.0 * np.abs(X[a] - X[b]).sum())
            assert abs(rate - expected) < 4 * np.sqrt(expected * (1 - expected) / 2000) + 1e-3


@pytest.mark.exact
def test_pruned_regressor_matches_messages_read_at_that_lifetime():
    rng = np.random.RandomState(2)
    X = rng.uniform(size=(120, 2))
    y = np.sin(5 * X[:, 0]) + 0.1 * rng.normal(size=120)
    params = dict(noise_variance=0.01, prior_variance=0.5, sigmoid_rate=2.0)
    forest = MondrianForestRegressor(n_estimators=4, lifetime=5.0, random_state=0,
                                     **params).fit(X, y)
    pruned = forest.prune(1.5)
    X_test = rng.uniform(size=(30, 2))
    hyper = forest._posterior().params
    messages = [upward_messages(tree, hyper, 1.5)[:2] for tree in forest._trees]
    out = np.zeros((30, 2))
    predict_moments_trees(forest._trees, messages, forest._validate_X_predict(X_test), out,
                          hyper, int(forest.n_quadrature), 1.5)
    mean = out[:, 0] / 4 * forest._y_scaler.scale + forest._y_scaler.offset
    np.testing.assert_allclose(pruned.predict(X_test), mean, rtol=1e-12)
