"""The conventions scikit-learn's own forest tests expect of a forest: the forest as a
sequence of its trees, ``n_classes_`` on every classifier, ``verbose`` booleans,
``min_samples_split`` as a share of the training set, and clear errors for the tree
parameters that have no Mondrian meaning."""

import pickle

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.utils._param_validation import InvalidParameterError

from mondrian import (
    MondrianForestClassifier,
    MondrianForestRegressor,
    MondrianTreeClassifier,
    MondrianTreeRegressor,
)

X, y = load_iris(return_X_y=True)
FORESTS = [MondrianForestClassifier, MondrianForestRegressor]
MODELS = [*FORESTS, MondrianTreeClassifier, MondrianTreeRegressor]
# scikit-learn's tree and forest parameters that have no Mondrian meaning.
FOREIGN = ["bootstrap", "ccp_alpha", "criterion", "max_depth", "max_features", "max_leaf_nodes",
           "max_samples", "min_impurity_decrease", "min_samples_leaf",
           "min_weight_fraction_leaf", "oob_score", "splitter", "warm_start"]


@pytest.mark.parametrize("Forest", FORESTS)
def test_a_forest_is_the_sequence_of_its_trees(Forest):
    forest = Forest(n_estimators=4, random_state=0).fit(X, y)
    views = forest.estimators_
    assert len(forest) == 4
    for k in range(-4, 4):
        assert_array_equal(forest[k].apply(X), views[k].apply(X))
    assert [t.apply(X[:5]).tolist() for t in forest] == [v.apply(X[:5]).tolist() for v in views]
    part = forest[1:3]
    assert isinstance(part, list) and len(part) == 2
    assert_array_equal(part[0].apply(X), views[1].apply(X))
    with pytest.raises(IndexError, match="out of range"):
        forest[4]
    with pytest.raises(TypeError, match="integers or slices"):
        forest["0"]
    with pytest.raises(NotFittedError):
        len(Forest())
    assert bool(Forest())  # an unfitted forest is still a true object


def test_every_classifier_has_n_classes():
    tree = MondrianTreeClassifier(random_state=0).fit(X, y)
    assert tree.n_classes_ == 3
    forest = MondrianForestClassifier(n_estimators=3, random_state=0).fit(X, y)
    assert forest.n_classes_ == 3
    assert [view.n_classes_ for view in forest.estimators_] == [3, 3, 3]
    with pytest.raises(NotFittedError):
        _ = MondrianTreeClassifier().n_classes_


@pytest.mark.parametrize("Forest", FORESTS)
@pytest.mark.parametrize("verbose", [False, True, 0, 2])
def test_verbose_takes_booleans_as_scikit_learn(Forest, verbose):
    forest = Forest(n_estimators=2, random_state=0, verbose=verbose, n_jobs=2).fit(X, y)
    reference = Forest(n_estimators=2, random_state=0).fit(X, y)
    assert_array_equal(forest.predict(X), reference.predict(X))


@pytest.mark.parametrize("Model", MODELS)
def test_min_samples_split_as_a_share_of_the_training_set(Model):
    # Label-blind: the weight search's probes fit parts of the batch, on which a share and
    # the count it gives on the whole batch differ (so may the weights they choose).
    kwargs = {"random_state": 0, "feature_weights": None}
    if Model in FORESTS:
        kwargs["n_estimators"] = 3
    # scikit-learn's rule: ceil(0.1 * 150) = 15 points.
    share = Model(min_samples_split=0.1, **kwargs).fit(X, y)
    count = Model(min_samples_split=15, **kwargs).fit(X, y)
    assert_array_equal(share.apply(X), count.apply(X))
    assert_array_equal(share.predict(X), count.predict(X))
    # At least 2 points, whatever the share; 1.0 is the whole first batch.
    tiny = Model(min_samples_split=1e-6, **kwargs).fit(X, y)
    assert_array_equal(tiny.apply(X), Model(min_samples_split=2, **kwargs).fit(X, y).apply(X))
    whole = Model(min_samples_split=1.0, **kwargs).fit(X, y)
    assert_array_equal(whole.apply(X), Model(min_samples_split=150, **kwargs).fit(X, y).apply(X))
    assert np.max(whole.apply(X)) <= 2  # only the root holds 150 points: one cut at most
    # Online: the share is fixed on the first batch and kept by later updates.
    online = Model(min_samples_split=0.1, **kwargs).partial_fit(X[:100], y[:100])
    online.partial_fit(X[100:], y[100:])
    assert online._ensemble.min_samples_split == 10
    for bad in (0.0, 1.5, -0.5):
        with pytest.raises(InvalidParameterError, match="min_samples_split"):
            Model(min_samples_split=bad, **kwargs).fit(X, y)


@pytest.mark.parametrize("Model", MODELS)
@pytest.mark.parametrize("name", FOREIGN)
def test_scikit_learn_tree_parameters_point_to_the_mondrian_equivalent(Model, name):
    with pytest.raises(InvalidParameterError, match=f"no parameter '{name}'"):
        Model(**{name: 3})
    with pytest.raises(InvalidParameterError, match=f"no parameter '{name}'"):
        Model().set_params(**{name: 3})


def test_foreign_parameter_messages_name_the_equivalent():
    hints = {"max_depth": "lifetime", "min_samples_leaf": "min_samples_split",
             "max_features": "feature_weights", "criterion": "feature_weights",
             "oob_score": "lifetime_path"}
    for name, hint in hints.items():
        with pytest.raises(TypeError, match=hint):  # also a TypeError, as Python's own
            MondrianForestClassifier(**{name: None})
    search = GridSearchCV(MondrianForestClassifier(n_estimators=2), {"max_depth": [2, 3]}, cv=2)
    with pytest.raises(ValueError, match="lifetime"):
        search.fit(X, y)


@pytest.mark.parametrize("Forest", FORESTS)
def test_clone_pickle_and_unknown_keywords(Forest):
    forest = Forest(n_estimators=2, random_state=0, min_samples_split=0.2).fit(X, y)
    for copy in (clone(forest), pickle.loads(pickle.dumps(forest))):
        assert copy.get_params() == forest.get_params()
    assert_array_equal(pickle.loads(pickle.dumps(forest)).predict(X), forest.predict(X))
    with pytest.raises(TypeError, match="unexpected keyword"):
        Forest(not_a_parameter=1)
