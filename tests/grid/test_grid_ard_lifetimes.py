"""Lifetimes of the ARD Laplace kernel by marginal likelihood (mondrian.grid.ard)."""

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from scipy.stats import multivariate_normal

from mondrian.estimator.relevance import WEIGHT_METHODS, relevance
from mondrian.grid.ard import _distances, laplace_ard_lifetimes, laplace_ard_nll


def _problem(n=40, d=3, outputs=1, seed=0):
    rng = np.random.RandomState(seed)
    U = rng.uniform(size=(n, d))
    Y = np.column_stack([np.sin(4 * U[:, 0] + k) + 0.1 * rng.normal(size=n)
                         for k in range(outputs)])
    return U, Y


@pytest.mark.exact
@pytest.mark.parametrize("outputs", [1, 2])
def test_nll_is_the_gaussian_log_density(outputs):
    U, Y = _problem(outputs=outputs)
    theta = np.array([0.3, -0.5, 1.1, 0.2, -1.7])
    lam, s2, noise = np.exp(theta[:3]), np.exp(theta[3]), np.exp(theta[4])
    # The covariance written out pair by pair, independently of the vectorised code.
    n = len(U)
    K = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            K[i, j] = s2 * np.exp(-np.sum(lam * np.abs(U[i] - U[j])))
    K += (noise + 1e-8) * np.eye(n)
    expected = -sum(multivariate_normal(np.zeros(n), K).logpdf(Y[:, k]) for k in range(outputs))
    nll, _ = laplace_ard_nll(theta, _distances(U), Y)
    assert nll == pytest.approx(expected, rel=1e-10)


@pytest.mark.exact
@pytest.mark.parametrize("outputs", [1, 2])
def test_gradient_matches_finite_differences(outputs):
    U, Y = _problem(outputs=outputs, seed=1)
    D = _distances(U)
    theta = np.array([0.3, -0.5, 1.1, 0.2, -1.7])
    _, grad = laplace_ard_nll(theta, D, Y)
    numeric = approx_fprime(theta, lambda t: laplace_ard_nll(t, D, Y)[0], 1e-6)
    np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-5)


@pytest.mark.statistical
def test_irrelevant_dimension_gets_a_small_lifetime():
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(150, 3))
    y = np.sin(6 * X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=150)
    lam, info = laplace_ard_lifetimes(X, y, max_iter=100, random_state=0, return_details=True)
    assert lam[2] < 0.1 * lam[0]
    assert lam[1] > lam[2]
    # Standardised targets: the fitted noise is near 0.1^2 / var(y), far below the signal.
    assert info["noise_variance"] < 0.2 * info["signal_variance"]


def test_subsample_is_seeded_and_constant_dimensions_are_zero():
    rng = np.random.RandomState(0)
    X = np.column_stack([rng.uniform(size=120), np.full(120, 3.0)])
    y = X[:, 0] ** 2
    a = laplace_ard_lifetimes(X, y, n_samples=50, max_iter=20, random_state=3)
    b = laplace_ard_lifetimes(X, y, n_samples=50, max_iter=20, random_state=3)
    np.testing.assert_array_equal(a, b)
    assert a[1] == 0.0


@pytest.mark.parametrize("kwargs, message", [
    ({"n_samples": 1}, "n_samples"),
    ({"max_iter": 0}, "max_iter"),
])
def test_bad_parameters_raise(kwargs, message):
    U, Y = _problem()
    with pytest.raises(ValueError, match=message):
        laplace_ard_lifetimes(U, Y, **kwargs)


def test_bad_input_raises():
    U, Y = _problem()
    with pytest.raises(ValueError, match="rows"):
        laplace_ard_lifetimes(U, Y[:-1])
    bad = U.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        laplace_ard_lifetimes(bad, Y)
    with pytest.raises(ValueError, match="2-D"):
        laplace_ard_lifetimes(U[:, 0], Y)


def test_registered_as_a_weight_method():
    assert "laplace_ard" in WEIGHT_METHODS
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(100, 3)) * [1.0, 10.0, 100.0]
    r = relevance("laplace_ard", X, np.sin(6 * X[:, 0]), False, random_state=0)
    assert r.shape == (3,) and r[0] > 10 * max(r[1], r[2])
    labels = (X[:, 1] > 5).astype(int)
    r = relevance("laplace_ard", X, labels, True, random_state=0)
    assert r[1] > 10 * max(r[0], r[2])


def test_kernel_ridge_weights_from_laplace_ard():
    from mondrian import MondrianKernelRidge

    rng = np.random.RandomState(0)
    X = rng.uniform(size=(120, 3))
    y = np.sin(6 * X[:, 0]) + 0.05 * rng.normal(size=120)
    model = MondrianKernelRidge(n_estimators=5, lifetime=3.0, alpha=0.1,
                                feature_weights="laplace_ard", random_state=0).fit(X, y)
    info = model.feature_weights_info_
    assert info["method"] == "laplace_ard"
    r = info["relevance"]
    assert r[0] > 10 * max(r[1], r[2])
    # A non-uniform power keeps dimension 0 heaviest.
    assert model.feature_weights_[0] >= model.feature_weights_[1:].max()
