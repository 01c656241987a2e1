"""The held-out choice's grid kernels: one pass for every prior of a rate
gives the same bits as one call per prior, and the regressor chooses exactly as with one
``upward_messages`` + ``predict_moments_trees`` call per grid point."""

import numpy as np
import pytest

from mondrian import MondrianForestRegressor
from mondrian.forest import regressor as regressor_module
from mondrian.forest._gaussian import (
    GaussianPrior,
    predict_moments_grid,
    predict_moments_trees,
    upward_messages,
    upward_messages_grid,
)
from mondrian.forest._hyperparameters import _floored

from _data import sine_regression


def _priors(hierarchical, rate, mean0=0.1):
    shares = np.geomspace(1e-6, 0.7, 5)
    return [GaussianPrior(mean0, s, 1.0 - s, 2.0 * (1.0 - s), rate, hierarchical)
            for s in shares]


@pytest.mark.exact
@pytest.mark.parametrize("smoothing", ["hierarchical", "independent"])
@pytest.mark.parametrize("lifetime", [np.inf, 3.0])
@pytest.mark.parametrize("rows", [7, 300])  # boxes rebuilt per node / all at once
def test_grid_kernels_match_one_call_per_prior(smoothing, lifetime, rows):
    X, y = sine_regression(400, 3, 5, slope=1.0)
    model = MondrianForestRegressor(n_estimators=3, lifetime=lifetime, smoothing=smoothing,
                                    random_state=0).fit(X, y)
    trees = model._trees
    Xs = model._scaler.transform(np.random.RandomState(1).uniform(-0.2, 1.2, size=(rows, 3)))
    for rate in (0.0, 0.8, 5.0):
        priors = _priors(smoothing == "hierarchical", rate)
        grids = [upward_messages_grid(tree, priors) for tree in trees]
        for k, prior in enumerate(priors):
            for tree, (means, variances) in zip(trees, grids, strict=True):
                mean, var, _ = upward_messages(tree, prior)
                assert np.array_equal(means[k], mean) and np.array_equal(variances[k], var)
        messages = [[(g[0][k], g[1][k]) for g in grids] for k in range(len(priors))]
        out = np.zeros((len(priors), rows, 3))
        predict_moments_grid(trees, messages, Xs, out, priors, 3)
        for k, prior in enumerate(priors):
            one = np.zeros((rows, 3))
            predict_moments_trees(trees, messages[k], Xs, one, prior, 3)
            assert np.array_equal(out[k], one)
            assert np.all(np.isfinite(one)) and np.any(one != 0.0)


@pytest.mark.exact
def test_grid_kernels_refuse_priors_of_different_rates():
    X, y = sine_regression(100, 3, 5, slope=1.0)
    tree = MondrianForestRegressor(n_estimators=1, random_state=0).fit(X, y)._trees[0]
    priors = _priors(True, 1.0)[:1] + _priors(True, 2.0)[:1]
    with pytest.raises(ValueError, match="share rate"):
        upward_messages_grid(tree, priors)
    messages = [[upward_messages(tree, p)[:2]] for p in priors]
    with pytest.raises(ValueError, match="share rate"):
        predict_moments_grid([tree], messages, X[:2], np.zeros((2, 2, 3)), priors)
    with pytest.raises(ValueError, match="shape"):
        predict_moments_grid([tree], messages[:1], X[:2], np.zeros((1, 3, 3)), priors[:1])


def _one_call_per_prior(self, params, X_scaled, floor=0.0):
    """The held-out moments as before the grid kernels: one prediction per prior (its noise
    floored for the predictive, as the regressor does)."""
    K = len(self._trees)
    result = []
    for p in params:
        out = np.zeros((X_scaled.shape[0], 3))
        messages = [upward_messages(tree, p)[:2] for tree in self._trees]
        predict_moments_trees(self._trees, messages, X_scaled, out, _floored(p, floor),
                              int(self.n_quadrature))
        mean = out[:, 0] / K
        within = np.maximum(out[:, 1] - out[:, 2], 0.0) / K
        spread = (np.maximum(out[:, 2] - K * mean * mean, 0.0) / (K - 1) if K > 1
                  else np.zeros_like(mean))
        result.append((mean, within, spread))
    return result


@pytest.mark.exact
@pytest.mark.parametrize("params", [{}, {"smoothing": "independent"}, {"n_estimators": 1},
                                    {"noise_variance": 0.05}, {"weights": True}])
def test_held_out_choice_is_that_of_one_prediction_per_grid_point(params, monkeypatch):
    params = dict(params)
    X, y = sine_regression(400, 3, 5, slope=1.0)
    fit_params = {}
    if params.pop("weights", False):
        fit_params["sample_weight"] = np.random.RandomState(2).randint(1, 4, len(y)) * 1.0
    make = {"n_estimators": 4, "random_state": 7, **params}
    fast = MondrianForestRegressor(**make).fit(X, y, **fit_params)
    monkeypatch.setattr(regressor_module.MondrianForestRegressor, "_held_out_moments_grid",
                        _one_call_per_prior)
    slow = MondrianForestRegressor(**make).fit(X, y, **fit_params)
    assert fast._hyper_choice is not None
    assert fast._hyper_choice == slow._hyper_choice
    mean_f, std_f = fast.predict(X[:50], return_std=True)
    mean_s, std_s = slow.predict(X[:50], return_std=True)
    assert np.array_equal(mean_f, mean_s) and np.array_equal(std_f, std_s)
