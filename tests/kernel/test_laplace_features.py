"""Random binning and random Fourier features of the Laplace kernel (the Mondrian kernel baselines).

Monte-Carlo checks use fixed seeds. Tolerances: both estimators of ``k(x, x')`` are averages of
``R`` i.i.d. terms bounded by 1 (binning: indicators) or with variance at most 1 (Fourier:
``2 cos(a) cos(b)``), so the error of one pair has standard deviation at most ``1/sqrt(R)``;
over the 28 pairs of 8 points the maximum stays below ``4/sqrt(R)`` (a 4-sigma bound, union
bound over 28 pairs: failure probability below 28 * 6.3e-5 = 0.2% for a Gaussian error, and the
seeds are fixed).
"""

import pickle

import numpy as np
import pytest
from scipy import sparse
from sklearn.exceptions import NotFittedError

from mondrian import LaplaceRandomFourierFeatures, RandomBinningFeatures


def laplace_kernel(X, lifetime):
    """Exact ``exp(-lifetime * ||x - x'||_1)`` between the rows of ``X``."""
    return np.exp(-lifetime * np.abs(X[:, None, :] - X[None, :, :]).sum(axis=2))


def max_pair_error(Z, X, lifetime):
    """Largest ``|z(x)'z(x') - k(x, x')|`` over the distinct pairs of rows."""
    K_hat = Z @ Z.T
    K_hat = K_hat.toarray() if sparse.issparse(K_hat) else K_hat
    upper = np.triu_indices(len(X), k=1)
    return float(np.max(np.abs(K_hat - laplace_kernel(X, lifetime))[upper]))


POINTS = np.random.RandomState(0).uniform(size=(8, 3))


# --------------------------------------------------------------------------------------------
# Convergence to the Laplace kernel
# --------------------------------------------------------------------------------------------


@pytest.mark.statistical
@pytest.mark.parametrize("lifetime", [0.5, 2.0, 6.0])
@pytest.mark.parametrize("n_components", [2000, 20000])
def test_binning_converges_to_laplace_kernel(n_components, lifetime):
    Z = RandomBinningFeatures(n_components, lifetime=lifetime, random_state=1).fit_transform(POINTS)
    assert max_pair_error(Z, POINTS, lifetime) < 4 / np.sqrt(n_components)


@pytest.mark.statistical
@pytest.mark.parametrize("lifetime", [0.5, 2.0, 6.0])
@pytest.mark.parametrize("n_components", [2000, 20000])
def test_fourier_converges_to_laplace_kernel(n_components, lifetime):
    rff = LaplaceRandomFourierFeatures(n_components, lifetime=lifetime, random_state=1)
    Z = rff.fit_transform(POINTS)
    assert max_pair_error(Z, POINTS, lifetime) < 4 / np.sqrt(n_components)


@pytest.mark.statistical
@pytest.mark.parametrize("Estimator", [RandomBinningFeatures, LaplaceRandomFourierFeatures])
def test_error_shrinks_with_components(Estimator):
    """Average max error over 5 seeds: 100x more components, error at least 4x smaller
    (10x expected)."""

    def mean_error(n_components):
        return np.mean(
            [
                max_pair_error(
                    Estimator(n_components, lifetime=2.0, random_state=s).fit_transform(POINTS),
                    POINTS,
                    2.0,
                )
                for s in range(5)
            ]
        )

    assert mean_error(10000) < mean_error(100) / 4


@pytest.mark.statistical
def test_binning_new_points_share_bins_with_kernel_probability():
    """Transform of unseen points: k(train, test) is still estimated (test bins need a train
    point in them to get a column, which the pair itself guarantees)."""
    rng = np.random.RandomState(3)
    X_train, X_test = rng.uniform(size=(6, 2)), rng.uniform(size=(5, 2))
    lifetime, n_components = 3.0, 10000
    binning = RandomBinningFeatures(n_components, lifetime=lifetime, random_state=2).fit(X_train)
    K_hat = (binning.transform(X_test) @ binning.transform(X_train).T).toarray()
    K = np.exp(-lifetime * np.abs(X_test[:, None] - X_train[None]).sum(axis=2))
    assert np.max(np.abs(K_hat - K)) < 4 / np.sqrt(n_components)


# --------------------------------------------------------------------------------------------
# Shapes, sparsity, determinism
# --------------------------------------------------------------------------------------------


def test_binning_shapes_and_sparsity():
    X = np.random.RandomState(0).uniform(size=(40, 4))
    binning = RandomBinningFeatures(30, lifetime=3.0, random_state=0).fit(X)
    Z = binning.transform(X)
    assert sparse.issparse(Z) and Z.format == "csr"
    assert Z.shape == (40, binning.n_features_out_) == (40, binning.n_bins_.sum())
    assert binning.widths_.shape == binning.shifts_.shape == (30, 4)
    assert np.all(binning.shifts_ >= 0) and np.all(binning.shifts_ < binning.widths_)
    # Every training point has exactly one bin per grid; rows have unit norm.
    np.testing.assert_array_equal(Z.getnnz(axis=1), 30)
    np.testing.assert_allclose(Z.data, 1 / np.sqrt(30))
    np.testing.assert_allclose(Z.multiply(Z).sum(axis=1), 1.0)
    assert Z.has_sorted_indices
    # Grid m owns the columns [offset_m, offset_m + n_bins_m), all of them used.
    offsets = np.r_[0, np.cumsum(binning.n_bins_)]
    grid_of_column = np.searchsorted(offsets, Z.indices, side="right") - 1
    np.testing.assert_array_equal(grid_of_column.reshape(40, 30), np.tile(np.arange(30), (40, 1)))
    assert np.all(np.bincount(Z.indices, minlength=Z.shape[1]) > 0)


def test_binning_unseen_bins_get_no_entry():
    X = np.zeros((3, 2))
    binning = RandomBinningFeatures(10, lifetime=5.0, random_state=0).fit(X)
    assert binning.n_features_out_ == 10  # one bin per grid
    Z = binning.transform(np.array([[0.0, 0.0], [1000.0, -1000.0]]))
    np.testing.assert_array_equal(Z.getnnz(axis=1), [10, 0])


@pytest.mark.exact
def test_binning_bin_keys_match_definition():
    """Two points share a column of grid m exactly when ceil((x - u)/w) agree in every dim."""
    rng = np.random.RandomState(1)
    X = rng.uniform(size=(60, 2))
    binning = RandomBinningFeatures(5, lifetime=4.0, random_state=1).fit(X)
    Z = binning.transform(X).toarray()
    for m in range(5):
        keys = np.ceil((X - binning.shifts_[m]) / binning.widths_[m])
        same_key = np.all(keys[:, None] == keys[None], axis=2)
        cols = slice(binning._offsets[m], binning._offsets[m + 1])
        same_column = (Z[:, cols] @ Z[:, cols].T) > 0
        np.testing.assert_array_equal(same_key, same_column)


@pytest.mark.exact
@pytest.mark.parametrize("dims, lifetime", [(2, 0.5), (30, 60.0)])
def test_binning_byte_keys_agree_with_packed_keys(monkeypatch, dims, lifetime):
    """Keys packed in one int64 and keys kept as byte strings give the same bins (the Gram
    matrix of the features does not depend on the column order). (30, 60.0) has about 30**30
    cells in its index box, so it uses byte keys even without the patch."""
    rng = np.random.RandomState(2)
    X, X_new = rng.uniform(size=(50, dims)), rng.uniform(size=(20, dims))
    X_new[:10] = X[:10]
    packed = RandomBinningFeatures(8, lifetime=lifetime, random_state=3).fit(X)
    monkeypatch.setattr(RandomBinningFeatures, "_RADIX_BITS", 0)
    raw = RandomBinningFeatures(8, lifetime=lifetime, random_state=3).fit(X)
    assert all(grid[2] is None for grid in raw._grids)
    assert (dims == 30) == all(grid[2] is None for grid in packed._grids)
    np.testing.assert_array_equal(packed.n_bins_, raw.n_bins_)
    for Xq in (X, X_new):
        Zp, Zr = packed.transform(Xq), raw.transform(Xq)
        np.testing.assert_array_equal(Zp.getnnz(axis=1), Zr.getnnz(axis=1))
        Zt_p, Zt_r = packed.transform(X), raw.transform(X)
        np.testing.assert_allclose((Zp @ Zt_p.T).toarray(), (Zr @ Zt_r.T).toarray())


@pytest.mark.exact
def test_fourier_shapes_and_formula():
    X = np.random.RandomState(0).uniform(size=(7, 3))
    rff = LaplaceRandomFourierFeatures(25, lifetime=2.0, random_state=0).fit(X)
    Z = rff.transform(X)
    assert isinstance(Z, np.ndarray) and Z.shape == (7, 25) and Z.dtype == np.float64
    assert rff.random_weights_.shape == (3, 25) and rff.random_offset_.shape == (25,)
    assert np.all((rff.random_offset_ >= 0) & (rff.random_offset_ < 2 * np.pi))
    expected = np.sqrt(2 / 25) * np.cos(X @ rff.random_weights_ + rff.random_offset_)
    np.testing.assert_allclose(Z, expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(rff.transform(sparse.csr_matrix(X)), Z, rtol=1e-12, atol=1e-14)


def test_fourier_frequencies_are_cauchy_with_scale_lifetime():
    """Median of |Cauchy(0, s)| is s: check on 200000 draws (std of the sample median ~ 0.4%)."""
    rff = LaplaceRandomFourierFeatures(100000, lifetime=3.0, random_state=0).fit(np.zeros((1, 2)))
    assert np.median(np.abs(rff.random_weights_)) == pytest.approx(3.0, rel=0.02)


@pytest.mark.statistical
def test_binning_widths_are_gamma_two():
    """Gamma(2, 1/λ) widths: mean 2/λ and variance 2/λ² (40000 draws, 3% tolerance)."""
    binning = RandomBinningFeatures(20000, lifetime=4.0, random_state=0).fit(np.zeros((1, 2)))
    assert binning.widths_.mean() == pytest.approx(0.5, rel=0.03)
    assert binning.widths_.var() == pytest.approx(2 / 16, rel=0.03)


@pytest.mark.parametrize("Estimator", [RandomBinningFeatures, LaplaceRandomFourierFeatures])
def test_determinism_and_pickle(Estimator):
    rng = np.random.RandomState(0)
    X, X_new = rng.uniform(size=(30, 3)), rng.uniform(size=(10, 3))

    def dense(Z):
        return Z.toarray() if sparse.issparse(Z) else Z

    a = Estimator(40, lifetime=2.0, random_state=7).fit(X)
    b = Estimator(40, lifetime=2.0, random_state=7).fit(X)
    c = Estimator(40, lifetime=2.0, random_state=8).fit(X)
    np.testing.assert_array_equal(dense(a.transform(X_new)), dense(b.transform(X_new)))
    assert not np.array_equal(dense(a.transform(X_new)), dense(c.transform(X_new)))
    restored = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(dense(a.transform(X_new)), dense(restored.transform(X_new)))
    # Refitting the same estimator with an int seed gives the same features.
    np.testing.assert_array_equal(dense(a.fit(X).transform(X_new)), dense(b.transform(X_new)))


@pytest.mark.parametrize("Estimator", [RandomBinningFeatures, LaplaceRandomFourierFeatures])
def test_no_feature_scaling(Estimator):
    """The inputs are used as given: scaling X by s is the same as scaling the lifetime by s."""
    X = np.random.RandomState(0).uniform(size=(8, 2))
    lifetime, n = 1.5, 5000
    Z_big = Estimator(n, lifetime=lifetime, random_state=0).fit_transform(10 * X)
    assert max_pair_error(Z_big, X, 10 * lifetime) < 4 / np.sqrt(n)


@pytest.mark.parametrize("Estimator", [RandomBinningFeatures, LaplaceRandomFourierFeatures])
def test_parameter_validation_and_not_fitted(Estimator):
    X = np.zeros((3, 2))
    for bad in [
        {"lifetime": 0.0},
        {"lifetime": -1.0},
        {"lifetime": np.inf},
        {"n_components": 0},
        {"n_components": 2.5},
    ]:
        with pytest.raises(ValueError):
            Estimator(**bad).fit(X)
    with pytest.raises(NotFittedError):
        Estimator().transform(X)
    with pytest.raises(ValueError, match="features"):
        Estimator(random_state=0).fit(X).transform(np.zeros((2, 3)))


def test_binning_rejects_overflowing_bin_indices():
    binning = RandomBinningFeatures(3, lifetime=1.0, random_state=0)
    with pytest.raises(ValueError, match="too large"):
        binning.fit(np.array([[1e300], [0.0]]))


def test_feature_names_out():
    X = np.random.RandomState(0).uniform(size=(5, 2))
    rff = LaplaceRandomFourierFeatures(4, random_state=0).fit(X)
    assert list(rff.get_feature_names_out()) == [
        f"laplacerandomfourierfeatures{i}" for i in range(4)
    ]
    binning = RandomBinningFeatures(3, random_state=0).fit(X)
    assert len(binning.get_feature_names_out()) == binning.n_features_out_

