"""feature_weights="auto" of the regressors: the joint map-and-power search with the
one-standard-error rule, and the ARD Laplace lifetimes competing from WEIGHTS_LAPLACE_MIN_ROWS
rows; a named method and the classifier keep the search of every model."""

import numpy as np

import mondrian.forest.regressor as regressor
from mondrian import MondrianForestClassifier, MondrianForestRegressor
from mondrian.estimator.relevance import choose_weights

from _data import sine_regression


def test_auto_is_the_joint_search(monkeypatch):
    X, y = sine_regression(300, 4)
    model = MondrianForestRegressor(10, feature_weights="auto", random_state=0).fit(X, y)
    info = model.feature_weights_info_
    assert {c[0] for c in info["candidates"]} == {"minmax", "quantile"}
    assert len(info["candidates"]) == 2 * len(info["powers"])  # every power, both maps
    # The same choice as choose_weights(joint_map=True, simplest=True) with this model's probes,
    # on the targets in the model's standardised units.
    probe = MondrianForestRegressor(10, feature_weights="auto", random_state=0)
    scaler = regressor._TargetScaler()
    scaler.update(y)
    weights, _, again = choose_weights(X, scaler.transform(y), False, probe._weights_score,
                                       "extra_trees", 0, 0.2, quantile=True, joint_map=True,
                                       simplest=True)
    np.testing.assert_array_equal(model.feature_weights_, weights)
    assert (info["map"], info["power"]) == (again["map"], again["power"])
    # From WEIGHTS_LAPLACE_MIN_ROWS rows the Laplace lifetimes compete too.
    assert "laplace_ard" not in {c[1] for c in info["candidates"]}
    monkeypatch.setattr(regressor, "WEIGHTS_LAPLACE_MIN_ROWS", 200)
    model = MondrianForestRegressor(10, feature_weights="auto", random_state=0).fit(X, y)
    assert "laplace_ard" in {c[1] for c in model.feature_weights_info_["candidates"]}


def test_named_method_and_classifier_keep_the_plain_search():
    X, y = sine_regression(300, 4)
    named = MondrianForestRegressor(10, feature_weights="extra_trees", random_state=0).fit(X, y)
    assert named.feature_weights_info_.get("candidates") is None
    clf = MondrianForestClassifier(10, feature_weights="auto", random_state=0).fit(X, y > 0)
    assert clf.feature_weights_info_.get("candidates") is None
