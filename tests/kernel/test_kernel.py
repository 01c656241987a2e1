"""The Mondrian kernel: convergence to the Laplace kernel, lifetime paths, online updates."""

import copy

import numpy as np
import pytest

from mondrian import (
    MondrianKernelFeatures,
    MondrianKernelRidge,
    MondrianKernelSGDClassifier,
    MondrianKernelSGDRegressor,
)


def _laplace(A, B, lifetime):
    return np.exp(-lifetime * np.abs(A[:, None, :] - B[None, :, :]).sum(-1))


@pytest.mark.statistical
def test_kernel_error_falls_like_inverse_square_root_of_trees():
    """Max error over pairs, averaged over seeds, against M on a log-log scale.

    Each kernel entry is a mean of M Bernoulli draws (std <= 1/(2 sqrt(M))), so the maximum error
    over a fixed set of pairs scales like M^-1/2: the fitted slope must lie in [-0.65, -0.35].
    """
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(8, 3))
    exact = _laplace(X, X, 1.5)
    sizes = np.array([25, 100, 400, 1600])
    errors = []
    for M in sizes:
        err = []
        for seed in range(6):
            Z = MondrianKernelFeatures(
                M, lifetime=1.5, feature_scaling=None, random_state=seed
            ).fit_transform(X)
            err.append(np.abs((Z @ Z.T).toarray() - exact).max())
        errors.append(np.mean(err))
    slope = np.polyfit(np.log(sizes), np.log(errors), 1)[0]
    assert -0.65 <= slope <= -0.35, (slope, errors)
    assert errors[-1] < 4 / np.sqrt(sizes[-1])


@pytest.mark.statistical
def test_new_points_keep_the_kernel_law_with_training_points():
    rng = np.random.RandomState(1)
    X = rng.uniform(size=(6, 2))
    X_new = rng.uniform(-0.2, 1.2, size=(5, 2))
    M = 4000
    features = MondrianKernelFeatures(M, lifetime=2.0, feature_scaling=None, random_state=0).fit(X)
    K = (features.transform(X_new) @ features.transform(X).T).toarray()
    # Each entry is a mean of M independent Bernoulli(k) draws: 5 standard errors.
    np.testing.assert_allclose(K, _laplace(X_new, X, 2.0), atol=5 * 0.5 / np.sqrt(M))
    # Deterministic for a fitted model.
    np.testing.assert_array_equal(
        features.transform(X_new).toarray(), features.transform(X_new).toarray()
    )


@pytest.mark.exact
def test_transform_at_smaller_lifetime_equals_a_pruned_fit():
    """Features at lifetime l of trees grown to L equal those of the same trees pruned at l
    (every cut born at or after l dropped), up to the column order: the Gram matrices agree
    exactly, for training points and for new points placed by the extension."""
    rng = np.random.RandomState(2)
    X = rng.uniform(size=(40, 3))
    X_new = rng.uniform(-0.2, 1.2, size=(15, 3))
    big = MondrianKernelFeatures(30, lifetime=6.0, random_state=3).fit(X)
    pruned = copy.deepcopy(big)
    pruned._trees = [tree.pruned(1.0) for tree in big._trees]
    pruned.lifetime = pruned.lifetime_ = 1.0
    assert sum(t.node_count for t in pruned._trees) < sum(t.node_count for t in big._trees)
    Z_train = big.transform(X, lifetime=1.0)
    P_train = pruned.transform(X)
    for row in Z_train:
        assert row.nnz == 30
    assert Z_train.shape[1] == pruned.n_features_out_ < big.n_features_out_
    for A in (X, X_new):
        gram = (big.transform(A, lifetime=1.0) @ Z_train.T).toarray()
        np.testing.assert_allclose(gram, (pruned.transform(A) @ P_train.T).toarray(),
                                   rtol=0, atol=1e-14)
        # The lifetime matters: at the full lifetime the Gram matrix is another one.
        full = (big.transform(A) @ big.transform(X).T).toarray()
        assert np.abs(gram - full).max() > 0.1
    with pytest.raises(ValueError, match="lifetime"):
        big.transform(X, lifetime=7.0)


def _path_problem(seed=0, n=120, n_val=60):
    rng = np.random.RandomState(seed)
    X = rng.uniform(size=(n, 2))
    y = np.sin(6 * X[:, 0]) + X[:, 1] + 0.1 * rng.normal(size=n)
    X_val = rng.uniform(size=(n_val, 2))
    y_val = np.sin(6 * X_val[:, 0]) + X_val[:, 1]
    return X, y, X_val, y_val


@pytest.mark.exact
@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_path_equals_ridge_solves_from_scratch(direction):
    X, y, X_val, y_val = _path_problem()
    alpha, M, terminal = 0.3, 6, 4.0
    model = MondrianKernelRidge(M, alpha=alpha, max_lifetime=terminal, random_state=0)
    path = model.lifetime_path(X, y, X_val, y_val, direction=direction)
    # The same trees, sampled by the feature map with the same seeds on the same inputs.
    features = MondrianKernelFeatures(M, lifetime=terminal, random_state=0).fit(
        np.vstack([X, X_val])
    )
    np.testing.assert_array_equal(path.upper_lifetimes[:-1], path.lifetimes[1:])
    assert path.upper_lifetimes[-1] == terminal
    mean = y.mean()
    for k in [*range(0, len(path.lifetimes), 7), len(path.lifetimes) - 1]:
        # The model with k cuts is the model at every lifetime in (t_k, t_k+1], ends included.
        lifetime = path.upper_lifetimes[k]
        Z = features.transform(np.vstack([X, X_val]), lifetime=lifetime)
        Z_train, Z_val = Z[: len(X)], Z[len(X) :]
        A = (Z_train.T @ Z_train).toarray() + alpha * np.eye(Z.shape[1])
        w = np.linalg.solve(A, Z_train.T @ (y - mean))
        val_mse = np.mean((Z_val @ w + mean - y_val) ** 2)
        train_mse = np.mean((Z_train @ w + mean - y) ** 2)
        assert path.n_features[k] == Z.shape[1]
        np.testing.assert_allclose(path.validation_error[k], val_mse, rtol=1e-8)
        np.testing.assert_allclose(path.training_error[k], train_mse, rtol=1e-8)
        # Marginal likelihood against the direct Gaussian density, noise profiled out.
        resid = (y - mean) @ (y - mean) - (y - mean) @ (Z_train @ w)
        sigma2 = resid / len(y)
        cov = sigma2 / alpha * (Z_train @ Z_train.T).toarray() + sigma2 * np.eye(len(y))
        _, logdet = np.linalg.slogdet(2 * np.pi * cov)
        direct = -0.5 * (logdet + (y - mean) @ np.linalg.solve(cov, y - mean))
        np.testing.assert_allclose(path.log_marginal_likelihood[k], direct, rtol=1e-8)


@pytest.mark.exact
@pytest.mark.slow
def test_long_path_stays_accurate():
    """Thousands of rank-one updates: forward, backward and a direct solve still agree."""
    X, y, X_val, y_val = _path_problem(seed=1, n=1500, n_val=300)
    model = MondrianKernelRidge(
        20, alpha=1.0, max_lifetime=np.inf, max_features=3000, random_state=0
    )
    forward = model.lifetime_path(X, y, X_val, y_val, direction="forward")
    backward = model.lifetime_path(X, y, X_val, y_val, direction="backward")
    assert len(forward.lifetimes) > 1900
    np.testing.assert_allclose(forward.validation_error, backward.validation_error, rtol=1e-7)
    np.testing.assert_allclose(
        forward.log_marginal_likelihood, backward.log_marginal_likelihood, rtol=1e-9
    )


@pytest.mark.slow
@pytest.mark.statistical
def test_recovers_the_lifetime_of_a_laplace_gaussian_process():
    """Data drawn from a GP with kernel exp(-5 ||x - x'||_1): the marginal likelihood along the
    path peaks within an order of magnitude of 5 (the paper's check, section 8.2)."""
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(400, 2))
    K = _laplace(X, X, 5.0)
    y = np.linalg.cholesky(K + 1e-8 * np.eye(len(X))) @ rng.normal(size=len(X))
    y += 0.1 * rng.normal(size=len(X))
    model = MondrianKernelRidge(
        50, alpha=0.01, max_lifetime=200.0, max_features=3000, feature_scaling=None, random_state=0
    )
    path = model.lifetime_path(X, y)
    assert path.criterion == "marginal_likelihood"
    assert 0.5 <= path.best_lifetime <= 50.0, path.best_lifetime


@pytest.mark.exact
def test_partial_fit_is_exact():
    """After online updates the weights solve the ridge problem on the extended trees."""
    X, y, X_test, _ = _path_problem(seed=3)
    model = MondrianKernelRidge(8, lifetime=3.0, alpha=0.5, random_state=0)
    model.fit(X[:60], y[:60])
    model.partial_fit(X[60:90], y[60:90])
    for i in range(90, 120):
        model.partial_fit(X[i : i + 1], y[i : i + 1])
    # Direct solve on the same (extended) trees.
    Z = model._z(model._store.X)
    A = (Z.T @ Z).toarray() + 0.5 * np.eye(Z.shape[1])
    w = np.linalg.solve(A, Z.T @ (y - model._y_offset))
    np.testing.assert_allclose(model.coef_, w, rtol=1e-8, atol=1e-10)
    Z_test = model._z(model._validate_X_predict(X_test))
    np.testing.assert_allclose(model.predict(X_test), Z_test @ w + model._y_offset, rtol=1e-8)
    # The tracked log-determinant matches a direct one.
    _, logdet = np.linalg.slogdet(A)
    np.testing.assert_allclose(model._ridge.logdet, logdet, rtol=1e-10)


def test_auto_lifetime_and_prediction():
    X, y, X_val, y_val = _path_problem(seed=4, n=300)
    model = MondrianKernelRidge(
        20, lifetime="auto", alpha=0.1, max_features=1500, random_state=0
    ).fit(X, y)
    assert 0 < model.lifetime_ < np.inf
    assert model.path_.criterion == "validation"
    mean, std = model.predict(X_val, return_std=True)
    assert np.sqrt(np.mean((mean - y_val) ** 2)) < 0.3
    assert np.all(std > 0)


@pytest.mark.exact
def test_lifetime_posterior_and_mixture():
    X, y, X_val, y_val = _path_problem(seed=5)
    model = MondrianKernelRidge(10, alpha=0.3, max_lifetime=20.0, random_state=0)
    path = model.lifetime_path(X, y)
    probs = path.lifetime_posterior()
    np.testing.assert_allclose(probs.sum(), 1.0)
    # With a uniform prior the posterior is the marginal likelihood times the interval length.
    lengths = path.upper_lifetimes - path.lifetimes
    expected = np.exp(path.log_marginal_likelihood - path.log_marginal_likelihood.max()) * lengths
    np.testing.assert_allclose(probs, expected / expected.sum(), rtol=1e-9)
    mean, std = model.predict_lifetime_mixture(X_val, path, n_components=5)
    assert np.all(std > 0)
    assert np.sqrt(np.mean((mean - y_val) ** 2)) < 0.5
    # One component equals the ridge predictive at the most probable lifetime.
    best = int(np.argmax(probs))
    single, _ = model.predict_lifetime_mixture(X_val, path, n_components=1)
    ridge = MondrianKernelRidge(10, lifetime=path.upper_lifetimes[best], alpha=0.3,
                                random_state=0)
    assert single.shape == ridge.fit(X, y).predict(X_val).shape


@pytest.mark.exact
def test_sgd_weight_splitting_leaves_predictions_unchanged():
    """With no SGD step after the cuts, splitting weights keeps the root model's predictions."""
    X, y, X_val, _ = _path_problem(seed=6)
    model = MondrianKernelSGDRegressor(10, lifetime=5.0, steps_per_cut=0, n_epochs=5,
                                       random_state=0).fit(X, y)
    pred = model.predict(np.vstack([X, X_val]))
    assert model.coef_.shape[0] > 10  # cuts happened
    np.testing.assert_allclose(pred[: len(X)], pred[0], rtol=1e-12)


def test_sgd_models_learn_along_the_lifetime():
    X, y, X_val, y_val = _path_problem(seed=7, n=1500)
    reg = MondrianKernelSGDRegressor(30, max_features=3000, random_state=0)
    path = reg.lifetime_path(X, y, X_val, y_val)
    assert path.validation_loss[-1] < 0.5 * path.validation_loss[0]
    fitted = MondrianKernelSGDRegressor(30, lifetime="auto", max_features=3000,
                                        random_state=0).fit(X, y)
    assert np.sqrt(np.mean((fitted.predict(X_val) - y_val) ** 2)) < 0.3
    labels = (y > np.median(y)).astype(int)
    clf = MondrianKernelSGDClassifier(30, lifetime=4.0, random_state=0).fit(X, labels)
    proba = clf.predict_proba(X_val)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert clf.score(X_val, (y_val > np.median(y)).astype(int)) > 0.85
