"""Gaussian-process regression with a random partition kernel (Davies & Ghahramani, 2014)."""

import numbers

import numpy as np
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from mondrian.core.base import StrictParamsMixin, atomic_fit
from mondrian.core.targets import centre_and_scale
from mondrian.partition.features import RandomPartitionFeatures

__all__ = ["RandomPartitionGPRegressor", "block_pcg"]


def block_pcg(matmat, B, *, precondition=None, tol=1e-8, max_iter=1000):
    """Preconditioned conjugate gradients on every column of ``B`` at once.

    Parameters
    ----------
    matmat : callable
        ``V -> A V`` for an SPD ``A`` (``V`` of shape (n, k)).
    B : ndarray of shape (n, k)
    precondition : callable or None, default=None
        ``V -> M V`` for an SPD approximation ``M`` of ``A^-1``.
    tol : float, default=1e-8
        Stop a column when its residual norm is below ``tol`` times the norm of its ``b``.
    max_iter : int, default=1000

    Returns
    -------
    X : ndarray of shape (n, k)
    n_iter : int

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian.partition.gp import block_pcg
    >>> A = np.array([[4.0, 1.0], [1.0, 3.0]])
    >>> X, _ = block_pcg(lambda V: A @ V, np.eye(2))
    >>> bool(np.allclose(X, np.linalg.inv(A)))
    True
    """
    B = np.asarray(B, dtype=np.float64)
    X = np.zeros_like(B)
    R = B.copy()
    Zr = precondition(R) if precondition is not None else R.copy()
    P = Zr.copy()
    rz = np.einsum("ij,ij->j", R, Zr)
    target = tol * np.linalg.norm(B, axis=0)
    active = np.linalg.norm(R, axis=0) > target
    n_iter = 0
    while active.any() and n_iter < max_iter:
        n_iter += 1
        AP = matmat(P)
        pap = np.einsum("ij,ij->j", P, AP)
        alpha = np.where(active, rz / np.where(active, pap, 1.0), 0.0)
        X += alpha * P
        R -= alpha * AP
        active &= np.linalg.norm(R, axis=0) > target
        Zr = precondition(R) if precondition is not None else R.copy()
        rz_new = np.einsum("ij,ij->j", R, Zr)
        beta = np.where(active, rz_new / np.where(rz != 0, rz, 1.0), 0.0)
        P = Zr + beta * P
        rz = rz_new
    return X, n_iter


def _nlml(theta, lam, b, yy, n):
    """Negative log marginal likelihood of ``y ~ N(0, s2 Z Z^T + n2 I)`` from the eigenvalues
    ``lam`` of ``Z^T Z`` and ``b = U^T Z^T y`` (zero eigenvalues need not be listed)."""
    s2, n2 = np.exp(theta)
    d = s2 * lam + n2
    quad = (yy - np.sum(b * b * s2 / d)) / n2
    logdet = n * np.log(n2) + np.sum(np.log1p(s2 * lam / n2))
    return 0.5 * (quad + logdet + n * np.log(2.0 * np.pi))


def _fit_variances(lam, b, yy, n, fixed_signal, fixed_noise, var_y):
    """Maximise the marginal likelihood over the free log variances (L-BFGS from two starts)."""
    # Relative bounds only: the targets come standardised, and constant ones (variance 0) may
    # take any scale.
    var_y = var_y if var_y > 0 else 1.0
    lo, hi = np.log(var_y) - 14.0, np.log(var_y) + 4.0
    free = [fixed_signal is None, fixed_noise is None]
    base = np.log([fixed_signal if fixed_signal is not None else var_y,
                   fixed_noise if fixed_noise is not None else 0.1 * var_y])
    if not any(free):
        return np.exp(base), -_nlml(base, lam, b, yy, n)

    def objective(t):
        theta = base.copy()
        theta[free] = t
        return _nlml(theta, lam, b, yy, n)

    best = None
    for start in ([0.0, -2.3], [-0.7, -0.7]):
        x0 = (np.log(var_y) + np.array(start))[free]
        res = minimize(objective, x0, method="L-BFGS-B", bounds=[(lo, hi)] * int(sum(free)))
        if best is None or res.fun < best.fun:
            best = res
    theta = base.copy()
    theta[free] = best.x
    return np.exp(theta), -float(best.fun)


class RandomPartitionGPRegressor(StrictParamsMixin, RegressorMixin, BaseEstimator):
    """GP regression with a random partition kernel ``s2 K`` and Gaussian noise ``n2``.

    ``K = Z Z^T`` with ``Z`` the features of :class:`RandomPartitionFeatures` (``C`` columns, the
    clusters of all partitions); the targets are centred on their training mean.

    - ``solver="primal"``: Bayesian linear regression on ``Z`` (weights ``N(0, s2 I)``), exact.
      One eigendecomposition of the ``C x C`` matrix ``Z^T Z`` gives the exact log marginal
      likelihood for any ``(s2, n2)`` in ``O(C)``; both variances maximise it.
    - ``solver="cg"``: conjugate gradients in sample space on ``(s2 K + n2 I) alpha = y``, with
      ``O(m N)`` products and, with ``preconditioner=True``, the block preconditioner
      ``(1/m) sum_r (K_r + (n2/s2) I)^-1 / s2`` (corrected eq. 10 of the paper). The variances
      maximise the exact marginal likelihood of a random subsample of ``n_hyper_samples`` points
      (all of them when ``N`` is smaller), from one eigendecomposition of its kernel matrix.
      Predictive variances need one solve per test point (done as a block of right-hand sides).
    - ``solver="auto"``: primal when ``C <= min(max_primal_features, N)``, else CG.

    Parameters
    ----------
    partitioner : str or partitioner object, default="fast_cluster"
    n_partitions : int, default=200
    solver : {"auto", "primal", "cg"}, default="auto"
    preconditioner : bool, default=True
    signal_variance, noise_variance : float or None, default=None
        Fixed values; ``None`` fits them by marginal likelihood.
    max_primal_features : int, default=2000
    n_hyper_samples : int, default=2000
    tol : float, default=1e-8
        CG relative residual tolerance.
    max_iter : int, default=2000
    random_state : int, RandomState instance or None, default=None

    Attributes
    ----------
    features_ : RandomPartitionFeatures
    solver_ : str
    signal_variance_, noise_variance_ : float
    log_marginal_likelihood_ : float
        At the fitted variances (of the subsample in the CG regime; ``None`` there when both
        variances are fixed).
    n_iter_ : int
        CG iterations of the training solve (1 for the primal: one direct solve).

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import RandomPartitionGPRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(200, 2)); y = np.sin(6 * X[:, 0]) + 0.1 * rng.normal(size=200)
    >>> gp = RandomPartitionGPRegressor(n_partitions=50, random_state=0).fit(X, y)
    >>> mean, std = gp.predict(X[:3], return_std=True)
    >>> mean.shape, std.shape
    ((3,), (3,))
    """

    _parameter_constraints = {
        "partitioner": [str, object],
        "n_partitions": [Interval(numbers.Integral, 1, None, closed="left")],
        "solver": [StrOptions({"auto", "primal", "cg"})],
        "preconditioner": ["boolean"],
        "signal_variance": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "noise_variance": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "max_primal_features": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_hyper_samples": [Interval(numbers.Integral, 2, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, partitioner="fast_cluster", n_partitions=200, *, solver="auto",
                 preconditioner=True, signal_variance=None, noise_variance=None,
                 max_primal_features=2000, n_hyper_samples=2000, tol=1e-8, max_iter=2000,
                 random_state=None):
        self.partitioner = partitioner
        self.n_partitions = n_partitions
        self.solver = solver
        self.preconditioner = preconditioner
        self.signal_variance = signal_variance
        self.noise_variance = noise_variance
        self.max_primal_features = max_primal_features
        self.n_hyper_samples = n_hyper_samples
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state

    @atomic_fit
    def fit(self, X, y):
        """Draw the partitions, fit the variances and solve for the posterior.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : object
        """
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=np.float64, order="C", y_numeric=True)
        rng = check_random_state(self.random_state)
        self.features_ = RandomPartitionFeatures(
            self.partitioner, self.n_partitions, random_state=rng.randint(2**31 - 1))
        Z = self.features_.fit_transform(X, y).tocsc()
        n, C = Z.shape
        # The fit works in units where |y - mean| < 1 (a power of two: exact), so any finite
        # target scale gives the same variances and predictions up to units.
        self.y_mean_, self._y_scale = centre_and_scale(y)
        yc = (y - self.y_mean_) / self._y_scale
        fixed = tuple(None if v is None else self._to_standard(v)
                      for v in (self.signal_variance, self.noise_variance))
        solver = self.solver
        if solver == "auto":
            solver = "primal" if C <= min(self.max_primal_features, n) else "cg"
        self.solver_ = solver
        if solver == "primal":
            lam, U = np.linalg.eigh((Z.T @ Z).toarray())
            lam = np.maximum(lam, 0.0)
            b = U.T @ (Z.T @ yc)
            (s2, n2), self.log_marginal_likelihood_ = _fit_variances(
                lam, b, yc @ yc, n, *fixed, yc.var())
            d = 1.0 / (lam / n2 + 1.0 / s2)
            self._w = U @ (d * b) / n2
            self._F = U * np.sqrt(d)
            self.n_iter_ = 1
        elif None not in fixed:
            # Nothing to fit: skip the O(n^3) likelihood of the subsample.
            s2, n2 = float(fixed[0]), float(fixed[1])
            self.log_marginal_likelihood_ = None
        else:
            sub = np.sort(rng.choice(n, self.n_hyper_samples, replace=False)) \
                if n > self.n_hyper_samples else np.arange(n)
            Zs = Z[sub]
            lam, U = np.linalg.eigh((Zs @ Zs.T).toarray())
            lam = np.maximum(lam, 0.0)
            ys = yc[sub] - yc[sub].mean() if len(sub) < n else yc[sub]
            # In the basis of K's eigenvectors, sqrt(lam) U^T y plays the role of U^T Z^T y.
            b = np.sqrt(lam) * (U.T @ ys)
            (s2, n2), self.log_marginal_likelihood_ = _fit_variances(
                lam, b, ys @ ys, len(sub), *fixed, ys.var())
        self._s2, self._n2 = float(s2), float(n2)
        if solver == "cg":
            alpha, self.n_iter_ = self._solve(yc[:, None])
            self._alpha = alpha[:, 0]
        with np.errstate(over="ignore"):
            scale2 = np.float64(self._y_scale) ** 2
            self.signal_variance_ = float(self._s2 * scale2)
            self.noise_variance_ = float(self._n2 * scale2)
        if self.log_marginal_likelihood_ is not None:
            # The density of the targets in their units: one factor 1/scale per target.
            n_lml = n if solver == "primal" or n <= self.n_hyper_samples else \
                int(self.n_hyper_samples)
            self.log_marginal_likelihood_ -= n_lml * float(np.log(self._y_scale))
        return self

    def _to_standard(self, variance):
        """A fixed variance in units of y squared, in the standardised units of the fit."""
        tiny, huge = np.finfo(np.float64).tiny, np.finfo(np.float64).max
        with np.errstate(over="ignore", under="ignore"):
            value = float(np.float64(variance) / self._y_scale / self._y_scale)
        return min(max(value, tiny), huge)

    def _solve(self, B):
        """``(s2 K + n2 I)^-1 B`` by (block) PCG."""
        prod = self.features_._products
        s2, n2 = self._s2, self._n2
        precondition = None
        if self.preconditioner:
            precondition = lambda V: prod.precondition(V, n2 / s2) / s2  # noqa: E731
        return block_pcg(lambda V: s2 * prod.matmat(V) + n2 * V, B,
                         precondition=precondition, tol=self.tol, max_iter=self.max_iter)

    def predict(self, X, return_std=False):
        """Posterior mean (and standard deviation of the latent function) at ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        return_std : bool, default=False
            Also return the latent function's posterior standard deviation (add
            ``noise_variance_`` to its square for the predictive variance of a new target).

        Returns
        -------
        mean : ndarray of shape (n_samples,)
        std : ndarray of shape (n_samples,), only with ``return_std=True``
        """
        check_is_fitted(self, "features_")
        X = validate_data(self, X, dtype=np.float64, order="C", reset=False)
        # Standardised units inside (see fit); the mean and the standard deviation go back to
        # the units of y (a variance could overflow or underflow there).
        s2, scale = self._s2, self._y_scale
        if self.solver_ == "primal":
            Zt = self.features_.transform(X)
            mean = (Zt @ self._w) * scale + self.y_mean_
            if not return_std:
                return mean
            var = np.square(np.asarray(Zt @ self._F)).sum(axis=1)
        else:
            mean = s2 * self.features_.cross_kernel(X, self._alpha) * scale + self.y_mean_
            if not return_std:
                return mean
            Zt = self.features_.transform(X)
            Ztr = self.features_._indicator(self.features_._labels)
            var = np.empty(X.shape[0])
            for start in range(0, X.shape[0], 256):
                block = slice(start, start + 256)
                Kx = np.asarray((Ztr @ Zt[block].T).toarray())  # (N, b): k(X_train, x*)
                sol, _ = self._solve(Kx)
                var[block] = s2 - s2 * s2 * np.einsum("ij,ij->j", Kx, sol)
        return mean, np.sqrt(np.maximum(var, 0.0)) * scale
