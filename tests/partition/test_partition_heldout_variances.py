"""Variances of the partition GP chosen by the held-out likelihood, against dense oracles."""

import numpy as np
import pytest

from mondrian import RandomPartitionGPRegressor
from mondrian.partition.gp import _heldout_nll

from _data import sine_regression


def _data(n=300, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X, y = sine_regression(n, d, rng, amplitude=5.0, slope=1.0, noise=0.5, offset=20.0)
    return X, y, rng.uniform(size=(30, d))


def _dense_heldout_ll(Z, y, keep, held, s2, n2):
    """Mean log predictive density of the held-out rows under the dense GP on the kept rows."""
    Zk, Zh = Z[keep], Z[held]
    yk, yh = y[keep], y[held]
    A = s2 * Zk @ Zk.T + n2 * np.eye(len(keep))
    Khk = s2 * Zh @ Zk.T
    mean = Khk @ np.linalg.solve(A, yk - yk.mean()) + yk.mean()
    var = s2 * (Zh * Zh).sum(axis=1) - np.einsum("ij,ji->i", Khk, np.linalg.solve(A, Khk.T)) + n2
    return float(np.mean(-0.5 * np.log(2 * np.pi * var) - 0.5 * (yh - mean) ** 2 / var))


@pytest.mark.exact
@pytest.mark.parametrize("basis", ["full", "partial"])
def test_heldout_nll_equals_dense_predictive(basis):
    """The eigenbasis formula equals the dense GP's predictive density, with a full basis of
    feature space (primal) and with the span of the kept rows only (sample space)."""
    rng = np.random.default_rng(1)
    Zk, Zh = rng.normal(size=(12, 8)), rng.normal(size=(5, 8))
    yk, yh = rng.normal(size=12), rng.normal(size=5)
    Zk[:, -3:] = 0.0  # three feature directions the kept rows never see
    s2, n2 = 0.7, 0.2
    A = s2 * Zk @ Zk.T + n2 * np.eye(12)
    mean = s2 * Zh @ Zk.T @ np.linalg.solve(A, yk)
    var = s2 * (Zh * Zh).sum(1) - s2**2 * np.einsum("ij,ji->i", Zh @ Zk.T,
                                                     np.linalg.solve(A, Zk @ Zh.T)) + n2
    dense = 0.5 * np.sum(np.log(2 * np.pi * var) + (yh - mean) ** 2 / var)
    if basis == "full":
        lam, V = np.linalg.eigh(Zk.T @ Zk)
        lam = np.maximum(lam, 0.0)
        args = (lam, V.T @ Zk.T @ yk, Zh @ V, np.zeros(5))
    else:
        lam, U = np.linalg.eigh(Zk @ Zk.T)
        keep = lam > 1e-10
        lam, U = lam[keep], U[:, keep]
        Ah = Zh @ Zk.T @ U / np.sqrt(lam)
        args = (lam, np.sqrt(lam) * (U.T @ yk), Ah, (Zh * Zh).sum(1) - (Ah * Ah).sum(1))
    assert _heldout_nll(np.log([s2, n2]), *args, yh) == pytest.approx(dense, rel=1e-10)


@pytest.mark.exact
@pytest.mark.parametrize("solver", ["primal", "cg"])
def test_heldout_variances_maximise_dense_heldout_likelihood(solver):
    """With a label-using partitioner the forest sees the kept rows only, the fitted variances
    maximise the dense held-out likelihood, and the posterior is the dense GP on every row."""
    X, y, Xt = _data(n=150)
    gp = RandomPartitionGPRegressor("random_forest", n_partitions=10, solver=solver,
                                    max_primal_features=10**6, tol=1e-12,
                                    random_state=0).fit(X, y)
    assert gp.variance_selection_ == "holdout"
    held = gp._held_rows
    keep = np.setdiff1d(np.arange(len(y)), held)
    assert len(held) == round(0.2 * len(y))
    for tree in gp.features_.partition_.forest.estimators_:
        assert tree.tree_.weighted_n_node_samples[0] == len(keep)  # bootstrap of the kept rows
    assert gp.features_.n_features_in_ == X.shape[1]
    Z = gp.features_.transform(X).toarray()
    np.testing.assert_allclose(np.diag(Z @ Z.T), 1.0)
    np.testing.assert_array_equal(gp.features_.labels_, gp.features_.partition_labels(X))
    s2, n2 = gp.signal_variance_, gp.noise_variance_
    best = _dense_heldout_ll(Z, y, keep, held, s2, n2)
    assert gp.heldout_log_likelihood_ == pytest.approx(best, rel=1e-8)
    for f2, fn in [(1.3, 1.0), (0.77, 1.0), (1.0, 1.3), (1.0, 0.77)]:
        assert _dense_heldout_ll(Z, y, keep, held, s2 * f2, n2 * fn) < best + 1e-9
    # The posterior conditions on every row with these variances.
    Zt = gp.features_.transform(Xt).toarray()
    A = s2 * Z @ Z.T + n2 * np.eye(len(y))
    Ks = s2 * Zt @ Z.T
    mean = Ks @ np.linalg.solve(A, y - y.mean()) + y.mean()
    var = s2 * (Zt * Zt).sum(1) - np.einsum("ij,ji->i", Ks, np.linalg.solve(A, Ks.T))
    pm, ps = gp.predict(Xt, return_std=True)
    np.testing.assert_allclose(pm, mean, atol=1e-6)
    np.testing.assert_allclose(ps, np.sqrt(var), atol=1e-6)


@pytest.mark.exact
def test_variance_selection_rules():
    X, y, _ = _data(n=80)
    kw = dict(n_partitions=5, random_state=0)
    assert RandomPartitionGPRegressor(**kw).fit(X, y).variance_selection_ == \
        "marginal_likelihood"  # the fast-cluster partitions ignore the labels
    ml = RandomPartitionGPRegressor("random_forest", variances="marginal_likelihood",
                                    **kw).fit(X, y)
    assert ml.variance_selection_ == "marginal_likelihood" and ml.heldout_log_likelihood_ is None
    ho = RandomPartitionGPRegressor("fast_cluster", variances="holdout", **kw).fit(X, y)
    assert ho.variance_selection_ == "holdout" and np.isfinite(ho.heldout_log_likelihood_)
    fixed = RandomPartitionGPRegressor("random_forest", signal_variance=1.0, noise_variance=0.1,
                                       **kw).fit(X, y)
    assert fixed.variance_selection_ == "fixed"
    # One variance fixed: the other by the held-out likelihood, the fixed one kept.
    half = RandomPartitionGPRegressor("random_forest", noise_variance=0.3, **kw).fit(X, y)
    assert half.variance_selection_ == "holdout"
    assert half.noise_variance_ == pytest.approx(0.3)
    # Too few rows to hold one out: the marginal likelihood.
    tiny = RandomPartitionGPRegressor("random_forest", validation_fraction=0.1, **kw)
    assert tiny.fit(X[:4], y[:4]).variance_selection_ == "marginal_likelihood"
    # Subsampled sample-space regime: finite and reproducible.
    a = RandomPartitionGPRegressor("random_forest", solver="cg", n_hyper_samples=30, **kw)
    b = RandomPartitionGPRegressor("random_forest", solver="cg", n_hyper_samples=30, **kw)
    np.testing.assert_array_equal(a.fit(X, y).predict(X[:5]), b.fit(X, y).predict(X[:5]))
    assert np.isfinite(a.heldout_log_likelihood_)
