"""scikit-learn conformance of every estimator of ``mondrian.__all__``: the estimator checks,
clone, Pipeline, GridSearchCV.

The estimator checks run on the classes :func:`_catalog.estimator_classes` finds, each with the
settings of :data:`CHECKED` (one instance per entry; a class added to ``mondrian.__all__``
without an entry fails :func:`test_every_estimator_is_checked`).
"""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from _catalog import estimator_classes
from mondrian import MondrianForestClassifier

from _data import diagonal_classes

# The instances the checks run on, by class name: the parameters of each (``random_state=0``
# is added to all). The slow ones run under ``-m slow``.
CHECKED = {
    "LaplaceRandomFourierFeatures": [{"n_components": 20}],
    "MondrianForestClassifier": [{"n_estimators": 10}],
    "MondrianForestDensity": [{"n_estimators": 10}],
    "MondrianForestRegressor": [{"n_estimators": 10}],
    "MondrianGridFeatures": [{"n_grids": 5}],
    "MondrianGridRidge": [{"n_grids": 5, "max_features": 60},
                          {"n_grids": 5, "lifetimes": 2.0, "max_features": 5000}],
    "MondrianKernelFeatures": [{"n_estimators": 10}],
    "MondrianKernelRidge": [{"n_estimators": 10}],
    "MondrianKernelSGDClassifier": [{"n_estimators": 10}],
    "MondrianKernelSGDRegressor": [{"n_estimators": 10}],
    "MondrianTreeClassifier": [{}],
    "MondrianTreeRegressor": [{}],
    "RandomBinningFeatures": [{"n_components": 20}],
    "RandomPartitionFeatures": [{"n_partitions": 10}],
    "RandomPartitionGPRegressor": [{"n_partitions": 10}],
    "RandomPartitionKernelPCA": [{"n_partitions": 10}],
}
# The held-out choice of the variances (the random-forest partitioner's default) is slow.
CHECKED_SLOW = {
    "RandomPartitionGPRegressor": [{"partitioner": "random_forest", "n_partitions": 5}],
}

# Checks expected to fail, with the reason.
_CLASS_WEIGHT_REASON = (
    "class weights rescale the class counts of mixed leaves, but a leaf holding one class "
    "predicts it whatever its weight (pure leaves pause), so weights of 1000 vs 0.0001 do not "
    "turn the regions of the light classes over to the heavy one; scikit-learn passes its "
    "trees this check only by setting their min_weight_fraction_leaf"
)
EXPECTED_FAILED_CHECKS = {
    "MondrianForestClassifier": {"check_class_weight_classifiers": _CLASS_WEIGHT_REASON},
    "MondrianTreeClassifier": {"check_class_weight_classifiers": _CLASS_WEIGHT_REASON},
}


def _instances(settings):
    """One instance per entry of ``settings``, in the order of ``estimator_classes()``."""
    return [cls(**params, random_state=0)
            for cls in estimator_classes() for params in settings.get(cls.__name__, [])]


def _expected_failed_checks(estimator):
    return EXPECTED_FAILED_CHECKS.get(type(estimator).__name__, {})


def test_every_estimator_is_checked():
    assert sorted(CHECKED) == sorted(cls.__name__ for cls in estimator_classes())


@parametrize_with_checks(_instances(CHECKED), expected_failed_checks=_expected_failed_checks)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.slow
@parametrize_with_checks(_instances(CHECKED_SLOW),
                         expected_failed_checks=_expected_failed_checks)
def test_sklearn_estimator_checks_slow(estimator, check):
    check(estimator)


def test_clone_pipeline_and_grid_search():
    X, y = diagonal_classes(120)
    model = MondrianForestClassifier(n_estimators=5, random_state=0)
    assert clone(model).get_params() == model.get_params()
    pipe = make_pipeline(StandardScaler(), model)
    assert pipe.fit(X, y).score(X, y) > 0.9
    search = GridSearchCV(
        model, {"lifetime": [1.0, np.inf], "discount_factor": [1.0, 10.0]}, cv=3
    ).fit(X, y)
    assert search.best_score_ > 0.8
