"""scikit-learn conformance of the Mondrian grid estimators (as tests/estimators does for the
others)."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from mondrian import MondrianGridFeatures, MondrianGridRidge


@parametrize_with_checks(
    [
        MondrianGridFeatures(n_grids=5, random_state=0),
        MondrianGridRidge(n_grids=5, max_features=60, random_state=0),
        MondrianGridRidge(n_grids=5, lifetimes=2.0, max_features=5000, random_state=0),
    ],
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
