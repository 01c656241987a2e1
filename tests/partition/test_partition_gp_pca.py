"""GP regression and kernel PCA with random partition kernels against dense oracles."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mondrian import (
    RandomPartitionGPRegressor,
    RandomPartitionKernelPCA,
)
from mondrian.partition.gp import _nlml, block_pcg

from _data import sine_regression


def _data(n=500, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X, y = sine_regression(n, d, rng, slope=1.0)
    return X, y, rng.uniform(size=(40, d))


def _dense_gp(gp, X, y, Xt):
    """Posterior mean and latent sd of the dense GP with the model's kernel and variances."""
    f = gp.features_
    Z, Zt = f.transform(X).toarray(), f.transform(Xt).toarray()
    s2, n2 = gp.signal_variance_, gp.noise_variance_
    A = s2 * Z @ Z.T + n2 * np.eye(len(y))
    Ks = s2 * Zt @ Z.T
    mean = Ks @ np.linalg.solve(A, y - y.mean()) + y.mean()
    var = s2 * (Zt * Zt).sum(axis=1) - np.einsum("ij,ji->i", Ks, np.linalg.solve(A, Ks.T))
    return mean, np.sqrt(var), A


@pytest.mark.exact
@pytest.mark.parametrize("name", ["fast_cluster", "random_forest"])
@pytest.mark.parametrize("preconditioner", [True, False])
def test_cg_posterior_equals_dense_gp(name, preconditioner):
    X, y, Xt = _data()
    gp = RandomPartitionGPRegressor(name, n_partitions=40, solver="cg",
                                    preconditioner=preconditioner,
                                    variances="marginal_likelihood", random_state=0).fit(X, y)
    mean, std = gp.predict(Xt, return_std=True)
    dmean, dstd, A = _dense_gp(gp, X, y, Xt)
    np.testing.assert_allclose(mean, dmean, atol=1e-6)
    np.testing.assert_allclose(std, dstd, atol=1e-6)
    # The fitted variances maximise the exact marginal likelihood (N < n_hyper_samples).
    sign, logdet = np.linalg.slogdet(A)
    yc = y - y.mean()
    lml = -0.5 * (yc @ np.linalg.solve(A, yc) + logdet + len(y) * np.log(2 * np.pi))
    assert gp.log_marginal_likelihood_ == pytest.approx(lml, rel=1e-8)


@pytest.mark.exact
def test_primal_equals_dual():
    X, y, Xt = _data()
    kw = dict(n_partitions=25, random_state=3, max_primal_features=10**6)
    fixed = dict(signal_variance=0.7, noise_variance=0.05)
    p = RandomPartitionGPRegressor(solver="primal", **fixed, **kw).fit(X, y)
    d = RandomPartitionGPRegressor(solver="cg", tol=1e-12, **fixed, **kw).fit(X, y)
    for a, b in zip(p.predict(Xt, return_std=True), d.predict(Xt, return_std=True), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-8)
    # Fitted variances: both regimes maximise the same exact likelihood.
    p = RandomPartitionGPRegressor(solver="primal", **kw).fit(X, y)
    d = RandomPartitionGPRegressor(solver="cg", **kw).fit(X, y)
    assert p.log_marginal_likelihood_ == pytest.approx(d.log_marginal_likelihood_, rel=1e-6)
    np.testing.assert_allclose(p.predict(Xt), d.predict(Xt), atol=1e-4)
    assert RandomPartitionGPRegressor(**kw).fit(X, y).solver_ == "primal"
    assert RandomPartitionGPRegressor(n_partitions=25, max_primal_features=5).fit(X, y).solver_ \
        == "cg"


@pytest.mark.exact
def test_nlml_closed_form():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(30, 6))
    y = rng.normal(size=30)
    s2, n2 = 0.8, 0.3
    A = s2 * Z @ Z.T + n2 * np.eye(30)
    dense = 0.5 * (y @ np.linalg.solve(A, y) + np.linalg.slogdet(A)[1] + 30 * np.log(2 * np.pi))
    lam, U = np.linalg.eigh(Z.T @ Z)
    assert _nlml(np.log([s2, n2]), lam, U.T @ Z.T @ y, y @ y, 30) == pytest.approx(dense)


@pytest.mark.exact
def test_preconditioner_reduces_iterations():
    X, y, _ = _data(n=800)
    common = dict(n_partitions=30, solver="cg", signal_variance=1.0, noise_variance=0.1,
                  random_state=0)
    with_pc = RandomPartitionGPRegressor(preconditioner=True, **common).fit(X, y)
    without = RandomPartitionGPRegressor(preconditioner=False, **common).fit(X, y)
    assert with_pc.n_iter_ < without.n_iter_


@pytest.mark.exact
def test_block_pcg_solves():
    rng = np.random.default_rng(0)
    M = rng.normal(size=(20, 20))
    A = M @ M.T + np.eye(20)
    B = rng.normal(size=(20, 3))
    X, _ = block_pcg(lambda V: A @ V, B, tol=1e-12)
    np.testing.assert_allclose(X, np.linalg.solve(A, B), atol=1e-8)


@pytest.mark.exact
@pytest.mark.parametrize("name", ["fast_cluster", "random_forest"])
def test_kernel_pca_equals_dense_eigensolver(name):
    X, y, Xt = _data(n=300)
    pca = RandomPartitionKernelPCA(name, n_components=3, n_partitions=30, random_state=0)
    T = pca.fit_transform(X, y)
    Z = pca.features_.transform(X).toarray()
    H = np.eye(300) - 1.0 / 300
    w, V = np.linalg.eigh(H @ Z @ Z.T @ H)
    w, V = w[::-1][:3], V[:, ::-1][:, :3]
    np.testing.assert_allclose(pca.eigenvalues_, w, rtol=1e-8)
    np.testing.assert_allclose(np.abs(V.T @ pca.eigenvectors_), np.eye(3), atol=1e-6)
    np.testing.assert_allclose(pca.transform(X), T, atol=1e-8)
    # New points: the centred cross kernel against the dense formula.
    Zt = pca.features_.transform(Xt).toarray()
    Kt = Zt @ Z.T
    Kt_c = Kt - Kt.mean(axis=1, keepdims=True) - (Z @ Z.T).mean(axis=0) + (Z @ Z.T).mean()
    np.testing.assert_allclose(pca.transform(Xt),
                               Kt_c @ pca.eigenvectors_ / np.sqrt(pca.eigenvalues_), atol=1e-8)


@pytest.mark.exact
@settings(max_examples=15, deadline=None)
@given(n=st.integers(3, 60), d=st.integers(1, 4), k=st.integers(1, 3), seed=st.integers(0, 99),
       solver=st.sampled_from(["primal", "cg"]))
def test_gp_and_pca_shapes_fuzz(n, d, k, seed, solver):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.normal(size=n)
    gp = RandomPartitionGPRegressor(n_partitions=5, solver=solver, random_state=seed).fit(X, y)
    mean, std = gp.predict(X[:2], return_std=True)
    assert mean.shape == std.shape == (2,)
    assert np.all(np.isfinite(mean)) and np.all(std >= 0)
    pca = RandomPartitionKernelPCA(n_components=min(k, n), n_partitions=5, random_state=seed)
    assert pca.fit_transform(X).shape == (n, min(k, n))
    assert pca.transform(X[:1]).shape == (1, min(k, n))
