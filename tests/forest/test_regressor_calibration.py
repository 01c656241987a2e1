"""Calibration of the regressor's predictive variance: the held-out choice scores a
small probe as the full forest, and the chosen variance and spread scales act as documented."""

import numpy as np
import pytest

from mondrian import MondrianForestRegressor, MondrianTreeRegressor
from mondrian.forest._gaussian import predict_moments_trees, upward_messages
from mondrian.forest._hyperparameters import (
    HELD_OUT_NOISE_SHARES,
    HELD_OUT_RATE_MULTIPLIERS,
    HELD_OUT_SPREAD_SCALES,
    HELD_OUT_VARIANCE_SCALES,
    _expected_nll,
    _forest_moments,
)

from _data import sine_regression


@pytest.mark.statistical
def test_probe_estimates_the_squared_error_of_the_full_forest():
    """(y - m_K)^2 - b/K + b/T is unbiased for the squared error of the mean of T trees."""
    rng = np.random.RandomState(0)
    y, mu, s = 0.3, 0.0, 0.5  # tree means ~ N(mu, s^2) around a fixed target
    K, T, reps = 8, 100, 200_000
    means = mu + s * rng.normal(size=(reps, K))
    m = means.mean(axis=1)
    spread = means.var(axis=1, ddof=1)
    squared, between = _forest_moments(m, spread, y, K, T)
    expected = (y - mu) ** 2 + s**2 / T
    se = squared.std() / np.sqrt(reps)
    assert abs(squared.mean() - expected) < 4 * se
    assert abs(between.mean() - s**2 * (T - 1) / T) < 4 * between.std() / np.sqrt(reps)
    # The probe's own squared error is biased by s^2 (1/K - 1/T): the correction matters.
    assert abs(((y - m) ** 2).mean() - expected) > 20 * se


def test_expected_nll_of_the_probe_itself_is_its_plain_nll():
    """With T = K trees and unit scales the score is the NLL of the probe's own predictive."""
    rng = np.random.RandomState(1)
    K, n = 8, 50
    means = rng.normal(size=(K, n))
    variances = rng.uniform(0.1, 1.0, size=(K, n))
    y = rng.normal(size=n)
    m = means.mean(axis=0)
    var = variances.mean(axis=0) + means.var(axis=0)  # law of total variance
    plain = np.mean(0.5 * np.log(2 * np.pi * var) + (y - m) ** 2 / (2 * var))
    score = _expected_nll(m, variances.mean(axis=0), means.var(axis=0, ddof=1), y, None, K, K,
                          np.ones(1), np.ones(1))
    assert score.shape == (1, 1)
    np.testing.assert_allclose(score[0, 0], plain, rtol=1e-12)


def test_third_column_accumulates_the_squared_tree_means():
    X, y = sine_regression(300, 2, 3)
    model = MondrianForestRegressor(n_estimators=4, random_state=0).fit(X, y)
    params = model._posterior().params
    Xs = model._scaler.transform(X[:40])
    three = np.zeros((40, 3))
    messages = [upward_messages(t, params)[:2] for t in model._trees]
    predict_moments_trees(model._trees, messages, Xs, three, params)
    squares = np.zeros(40)
    for tree, message in zip(model._trees, messages, strict=True):
        two = np.zeros((40, 2))
        predict_moments_trees([tree], [message], Xs, two, params)
        squares += two[:, 0] ** 2
    two = np.zeros((40, 2))
    predict_moments_trees(model._trees, messages, Xs, two, params)
    np.testing.assert_array_equal(three[:, :2], two)
    np.testing.assert_allclose(three[:, 2], squares, rtol=1e-12)
    with pytest.raises(ValueError, match="out must have shape"):
        predict_moments_trees(model._trees, messages, Xs, np.zeros((40, 4)), params)


def _with_choice(model, choice):
    model._hyper_choice = choice
    model._version += 1  # the posterior cache is stale
    return model


def test_variance_scale_multiplies_the_tree_variance_and_keeps_the_mean():
    """Scaling the noise and prior variances together changes no mean; test points away from
    the data too (a tree's predictive mixes the nodes where they branch off, with weights that
    the scale does not change)."""
    X, y = sine_regression(300, 2, 3)
    X_test = np.vstack([X, np.random.RandomState(7).uniform(-1, 2, size=(50, 2))])
    tree = MondrianTreeRegressor(random_state=0).fit(X, y)
    share, multiplier = tree._hyper_choice[:2]
    mean1, std1 = _with_choice(tree, (share, multiplier, 1.0, 1.0)).predict(X_test,
                                                                            return_std=True)
    mean2, std2 = _with_choice(tree, (share, multiplier, 2.0, 1.0)).predict(X_test,
                                                                            return_std=True)
    np.testing.assert_allclose(mean2, mean1, rtol=1e-10, atol=1e-12)
    # Inside the data no point branches off (lifetime inf): the variance doubles exactly.
    np.testing.assert_allclose(std2[:300] ** 2, 2 * std1[:300] ** 2, rtol=1e-10)
    # Away from it the predictive is a mixture: E[v] doubles, the spread of its means does not.
    far1, far2 = std1[300:] ** 2, std2[300:] ** 2
    assert np.all(far2 >= far1 * (1 - 1e-12)) and np.all(far2 <= 2 * far1 * (1 + 1e-12))
    assert np.any(far2 < 1.99 * far1)
    hyper = tree.hyperparameters_
    _with_choice(tree, (share, multiplier, 1.0, 1.0))
    for name in ("noise_variance", "prior_variance"):
        assert np.isclose(hyper[name], 2 * tree.hyperparameters_[name], rtol=1e-12)


def test_spread_scale_is_linear_in_the_between_tree_variance():
    X, y = sine_regression(300, 2, 3)
    model = MondrianForestRegressor(n_estimators=6, random_state=0).fit(X, y)
    share, multiplier, scale = model._hyper_choice[:3]
    out = {}
    for d in (0.0, 0.5, 1.0):
        out[d] = _with_choice(model, (share, multiplier, scale, d)).predict(X, return_std=True)
        assert model.hyperparameters_["spread_scale"] == d
    np.testing.assert_array_equal(out[0.5][0], out[1.0][0])
    np.testing.assert_allclose(out[0.5][1] ** 2, (out[0.0][1] ** 2 + out[1.0][1] ** 2) / 2,
                               rtol=1e-9)
    assert np.all(out[0.0][1] <= out[1.0][1])
    assert np.any(out[0.0][1] < out[1.0][1])


def test_held_out_choice_holds_the_scales():
    X, y = sine_regression(300, 2, 3)
    model = MondrianForestRegressor(n_estimators=6, random_state=0).fit(X, y)
    share, multiplier, scale, spread, floor = model._hyper_choice
    assert floor == 0.0  # no duplicated input
    assert share in HELD_OUT_NOISE_SHARES and multiplier in HELD_OUT_RATE_MULTIPLIERS
    assert scale in HELD_OUT_VARIANCE_SCALES and spread in HELD_OUT_SPREAD_SCALES
    again = MondrianForestRegressor(n_estimators=6, random_state=0).fit(X, y)
    assert again._hyper_choice == model._hyper_choice
    # A fixed prior variance: the variances are the user's, no scale is chosen.
    fixed = MondrianForestRegressor(n_estimators=6, prior_variance=0.5,
                                    random_state=0).fit(X, y)
    assert fixed._hyper_choice[2:4] == (1.0, 1.0)
    # The scales change no mean: the means are those of the unit scales.
    unit = _with_choice(MondrianForestRegressor(n_estimators=6, random_state=0).fit(X, y),
                        (share, multiplier, 1.0, 1.0))
    np.testing.assert_allclose(model.predict(X), unit.predict(X), rtol=1e-10, atol=1e-12)
    # A model pickled before the scales (a 2-tuple choice) predicts with scales 1.
    old = _with_choice(MondrianForestRegressor(n_estimators=6, random_state=0).fit(X, y),
                       (share, multiplier))
    ref = _with_choice(MondrianForestRegressor(n_estimators=6, random_state=0).fit(X, y),
                       (share, multiplier, 1.0, 1.0))
    np.testing.assert_array_equal(old.predict(X, return_std=True)[1],
                                  ref.predict(X, return_std=True)[1])
