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

from _data import sine_regression


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
    pruned._ensemble = big._ensemble.pruned(1.0)
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
    X, y = sine_regression(n, 2, rng, slope=1.0)
    X_val = rng.uniform(size=(n_val, 2))
    y_val = np.sin(6 * X_val[:, 0]) + X_val[:, 1]
    return X, y, X_val, y_val


@pytest.mark.exact
@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_path_equals_ridge_solves_from_scratch(direction):
    X, y, X_val, y_val = _path_problem()
    alpha, M, terminal = 0.3, 6, 4.0
    model = MondrianKernelRidge(M, lifetime=terminal, alpha=alpha, random_state=0).fit(X, y)
    path = model.lifetime_path(X_val, y_val, direction=direction)
    assert path.direction == direction and path.criterion == "validation_error"
    # The trees the path reads: copies of the fitted trees that also hold the validation inputs
    # (every cut of the fitted trees is still there, with its time).
    copy = model._path_copy(X_val)
    for ours, theirs in zip(model._trees, copy._trees, strict=True):
        cuts = ours.nodes_array["left_child"] != -1
        kept = theirs.nodes_array["split_time"][theirs.nodes_array["left_child"] != -1]
        assert set(ours.nodes_array["split_time"][cuts]) <= set(kept)
    np.testing.assert_array_equal(copy._store.X[: len(X)], model._store.X)
    np.testing.assert_array_equal(path.upper_lifetimes[:-1], path.lifetimes[1:])
    assert path.upper_lifetimes[-1] == terminal
    mean = y.mean()
    for k in [*range(0, len(path.lifetimes), 7), len(path.lifetimes) - 1]:
        # The model with k cuts is the model at every lifetime in (t_k, t_k+1], ends included.
        lifetime = path.upper_lifetimes[k]
        Z = copy._features(copy._store.X, lifetime)
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


def test_path_ends_at_the_fitted_model():
    """The last interval of a path is the fitted model: its training error and evidence (cells
    holding only validation points add nothing to either), with or without validation data."""
    X, y, X_val, y_val = _path_problem(seed=8)
    model = MondrianKernelRidge(6, lifetime=3.0, alpha=0.3, random_state=0).fit(X, y)
    model.partial_fit(X_val[:20], y_val[:20])  # the path reads every stored training point
    X_all, y_all = np.vstack([X, X_val[:20]]), np.r_[y, y_val[:20]]
    train_mse = np.mean((model.predict(X_all) - y_all) ** 2)
    for path in (model.lifetime_path(), model.lifetime_path(X_val[20:], y_val[20:])):
        np.testing.assert_allclose(path.training_error[-1], train_mse, rtol=1e-9)
        np.testing.assert_allclose(path.log_marginal_likelihood[-1],
                                   model.log_marginal_likelihood(), rtol=1e-9)
    assert model.lifetime_path().criterion == "log_marginal_likelihood"
    assert "validation_error" not in model.lifetime_path().metrics


@pytest.mark.exact
@pytest.mark.slow
def test_long_path_stays_accurate():
    """Thousands of rank-one updates: forward, backward and a direct solve still agree."""
    X, y, X_val, y_val = _path_problem(seed=1, n=1500, n_val=300)
    model = MondrianKernelRidge(
        20, alpha=1.0, max_lifetime=np.inf, max_features=3000, random_state=0
    )
    # Trees sampled up to max_lifetime with no ridge solve: what lifetime="auto" sweeps.
    probe = model._path_probe(X, y)
    forward = probe.lifetime_path(X_val, y_val, direction="forward")
    backward = probe.lifetime_path(X_val, y_val, direction="backward")
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
        50, lifetime="auto", alpha=0.01, max_lifetime=200.0, max_features=3000,
        lifetime_selection="marginal_likelihood", feature_scaling=None, random_state=0
    ).fit(X, y)
    path = model.lifetime_path_
    assert path.criterion == "log_marginal_likelihood"
    assert 0.5 <= path.best_lifetime <= 50.0, path.best_lifetime
    assert model.lifetime_ == path.best_lifetime


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
    assert model.lifetime_path_.criterion == "validation_error"
    assert model.path_ is model.lifetime_path_
    assert model.lifetime_ == model.lifetime_path_.best_lifetime
    mean, std = model.predict(X_val, return_std=True)
    assert np.sqrt(np.mean((mean - y_val) ** 2)) < 0.3
    assert np.all(std > 0)
    model.set_params(lifetime=1.0).fit(X, y)
    assert not hasattr(model, "lifetime_path_") and not hasattr(model, "path_")


@pytest.mark.exact
def test_lifetime_posterior_and_mixture():
    X, y, X_val, y_val = _path_problem(seed=5)
    model = MondrianKernelRidge(10, lifetime=20.0, alpha=0.3, random_state=0).fit(X, y)
    path = model.lifetime_path()
    probs = path.lifetime_posterior()
    np.testing.assert_allclose(probs.sum(), 1.0)
    # With a uniform prior the posterior is the marginal likelihood times the interval length.
    lengths = path.upper_lifetimes - path.lifetimes
    expected = np.exp(path.log_marginal_likelihood - path.log_marginal_likelihood.max()) * lengths
    np.testing.assert_allclose(probs, expected / expected.sum(), rtol=1e-9)
    mean, std = model.predict_lifetime_mixture(X_val, path, n_components=5)
    assert np.all(std > 0)
    assert np.sqrt(np.mean((mean - y_val) ** 2)) < 0.5
    # The default path is the marginal-likelihood path of the fitted model.
    default, _ = model.predict_lifetime_mixture(X_val, n_components=5)
    np.testing.assert_allclose(default, mean, rtol=1e-12)
    # One component is the ridge predictive of the fitted trees at the most probable lifetime.
    best = int(np.argmax(probs))
    single, single_std = model.predict_lifetime_mixture(X_val, path, n_components=1)
    lifetime = path.upper_lifetimes[best]
    Z = model._features(model._store.X, lifetime)
    Z_val = model._features(model._validate_X_predict(X_val), lifetime)
    A = (Z.T @ Z).toarray() + 0.3 * np.eye(Z.shape[1])
    w = np.linalg.solve(A, Z.T @ (y - y.mean()))
    np.testing.assert_allclose(single, Z_val @ w + y.mean(), rtol=1e-9)
    sigma2 = ((y - y.mean()) @ (y - y.mean()) - (y - y.mean()) @ (Z @ w)) / len(y)
    quad = np.sum(Z_val.toarray() * np.linalg.solve(A, Z_val.toarray().T).T, axis=1)
    np.testing.assert_allclose(single_std, np.sqrt(sigma2 * (1 + quad)), rtol=1e-9)
    # It does not depend on an earlier path call, and it refuses lifetimes the trees lack.
    model.lifetime_path(X_val, y_val)
    again, _ = model.predict_lifetime_mixture(X_val, path, n_components=1)
    np.testing.assert_array_equal(again, single)
    short = MondrianKernelRidge(10, lifetime=0.5, alpha=0.3, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="lifetime_"):
        short.predict_lifetime_mixture(X_val, path, n_components=len(path.lifetimes))


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
    reg = MondrianKernelSGDRegressor(30, lifetime=8.0, max_features=3000, random_state=0)
    path = reg.fit(X, y).lifetime_path(X_val, y_val)
    assert path.validation_loss[-1] < 0.5 * path.validation_loss[0]
    fitted = MondrianKernelSGDRegressor(30, lifetime="auto", max_features=3000,
                                        random_state=0).fit(X, y)
    assert np.sqrt(np.mean((fitted.predict(X_val) - y_val) ** 2)) < 0.3
    assert fitted.lifetime_ == fitted.lifetime_path_.best_lifetime
    labels = (y > np.median(y)).astype(int)
    clf = MondrianKernelSGDClassifier(30, lifetime=4.0, random_state=0).fit(X, labels)
    proba = clf.predict_proba(X_val)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert clf.score(X_val, (y_val > np.median(y)).astype(int)) > 0.85


@pytest.mark.parametrize("Estimator", [MondrianKernelSGDRegressor, MondrianKernelSGDClassifier])
def test_sgd_path_replays_the_fit(Estimator):
    """Without validation data the path replays the fit's SGD steps on the fitted trees: its
    last record is the fitted model's training loss."""
    X, y, _, _ = _path_problem(seed=9)
    if Estimator is MondrianKernelSGDClassifier:
        y = (y > np.median(y)).astype(int)
    model = Estimator(8, lifetime=3.0, random_state=0).fit(X, y)
    path = model.lifetime_path(eval_every=7)
    assert path.criterion == "training_loss" and path.upper_lifetimes[-1] == 3.0
    if Estimator is MondrianKernelSGDClassifier:
        proba = model.predict_proba(X)
        loss = -np.mean(np.log(proba[np.arange(len(y)), y]))
        error = np.mean(model.predict(X) != y)
        np.testing.assert_allclose(path.training_error[-1], error, rtol=1e-12)
    else:
        loss = np.mean((model.predict(X) - y) ** 2)
    np.testing.assert_allclose(path.training_loss[-1], loss, rtol=1e-9)
    with pytest.raises(ValueError, match="backward"):
        model.lifetime_path(direction="backward")


@pytest.mark.exact
def test_features_read_the_fitted_lifetime_not_the_parameter():
    """set_params(lifetime=...) after fit changes neither the features nor their number, and
    a lifetime above the fitted one is refused (the trees were only grown up to it)."""
    X = np.random.RandomState(0).uniform(size=(50, 3))
    model = MondrianKernelFeatures(20, lifetime=1.0, random_state=0).fit(X)
    Z, n_out = model.transform(X), model.n_features_out_
    model.set_params(lifetime=5.0)
    assert model.n_features_out_ == n_out
    assert (model.transform(X) != Z).nnz == 0
    with pytest.raises(ValueError, match="fitted lifetime"):
        model.transform(X, lifetime=4.0)


@pytest.mark.parametrize("Model", [MondrianKernelRidge, MondrianKernelSGDRegressor])
def test_max_features_below_the_number_of_trees_is_refused(Model):
    """The model at lifetime 0 already has one feature per tree: a cap below that is an error
    naming the parameter, not a silently empty path."""
    X, y, X_val, y_val = _path_problem(seed=11)
    model = Model(10, lifetime=2.0, max_features=5, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="max_features=5 is below n_estimators=10"):
        model.lifetime_path(X_val, y_val)
    with pytest.raises(ValueError, match="max_features"):
        Model(10, lifetime="auto", max_features=5, random_state=0).fit(X, y)
