"""Gaussian-process regression with a random partition kernel (Davies & Ghahramani, 2014)."""

import numbers

import numpy as np
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from mondrian._docstrings import N_PARTITIONS, PARTITIONER
from mondrian.estimator.atomic import atomic_fit
from mondrian.estimator.locking import LockedMethodsMixin
from mondrian.estimator.params import StrictParamsMixin
from mondrian.estimator.targets import centre_and_scale
from mondrian.estimator.versioned import VersionedStateMixin
from mondrian.partition.features import RandomPartitionFeatures
from mondrian.partition.partitioners import resolve_partitioner

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


def _heldout_nll(theta, lam, b, A, resid, yh):
    """Negative log predictive density of held-out targets ``yh`` under the GP with variances
    ``exp(theta)`` conditioned on the kept rows.

    ``lam`` (r,) are eigenvalues of the kept rows' ``Z^T Z`` on an orthonormal basis ``V`` of
    feature space, ``b = V^T Z^T y``, ``A = Z_h V`` (held-out features in that basis) and ``resid``
    the squared norm of each held-out feature row outside the basis (0 for a full basis). The
    posterior weights are ``N(V diag(s2 / (s2 lam + n2)) b, V diag(s2 n2 / (s2 lam + n2)) V^T)``
    on the basis and ``N(0, s2)`` off it.
    """
    s2, n2 = np.exp(theta)
    d = s2 * lam + n2
    mean = A @ (s2 * b / d)
    var = s2 * resid + (A * A) @ (s2 * n2 / d) + n2
    return 0.5 * float(np.sum(np.log(2.0 * np.pi * var) + (yh - mean) ** 2 / var))


def _fit_variances(objective, fixed_signal, fixed_noise, var_y):
    """Minimise ``objective(log [s2, n2])`` over the free log variances (L-BFGS from two
    starts); returns the variances and the objective's minimum."""
    # Relative bounds only: the targets come standardised, and constant ones (variance 0) may
    # take any scale.
    var_y = var_y if var_y > 0 else 1.0
    lo, hi = np.log(var_y) - 14.0, np.log(var_y) + 4.0
    free = [fixed_signal is None, fixed_noise is None]
    base = np.log([fixed_signal if fixed_signal is not None else var_y,
                   fixed_noise if fixed_noise is not None else 0.1 * var_y])
    if not any(free):
        return np.exp(base), objective(base)

    def restricted(t):
        theta = base.copy()
        theta[free] = t
        return objective(theta)

    best = None
    for start in ([0.0, -2.3], [-0.7, -0.7]):
        x0 = (np.log(var_y) + np.array(start))[free]
        res = minimize(restricted, x0, method="L-BFGS-B", bounds=[(lo, hi)] * int(sum(free)))
        if best is None or res.fun < best.fun:
            best = res
    theta = base.copy()
    theta[free] = best.x
    return np.exp(theta), float(best.fun)


def _subsample(rows, size, rng):
    """At most ``size`` of ``rows`` (sorted), drawn without replacement."""
    if len(rows) <= size:
        return rows
    return np.sort(rng.choice(rows, size, replace=False))


def _heldout_variances(Z, yc, keep, held, solver, fixed, n_hyper, rng):
    """Variances maximising the predictive density of the rows ``held`` given the rows ``keep``
    (standardised units); returns them and the mean log density per held-out row."""
    if solver == "primal":
        Zk, Zh = Z[keep], Z[held]
        yk = yc[keep]
        offset = yk.mean()
        lam, V = np.linalg.eigh((Zk.T @ Zk).toarray())
        lam = np.maximum(lam, 0.0)
        b = V.T @ (Zk.T @ (yk - offset))
        A = np.asarray(Zh @ V)
        resid = np.zeros(len(held))
    else:
        # Sample space on subsamples: with K_k = U diag(lam) U^T, the columns of
        # Z_k^T U / sqrt(lam) are an orthonormal basis of the span of the kept rows' features.
        keep, held = _subsample(keep, n_hyper, rng), _subsample(held, n_hyper, rng)
        Zk, Zh = Z[keep], Z[held]
        yk = yc[keep]
        offset = yk.mean()
        lam, U = np.linalg.eigh((Zk @ Zk.T).toarray())
        pos = lam > lam.max() * 1e-12
        lam, U = lam[pos], U[:, pos]
        b = np.sqrt(lam) * (U.T @ (yk - offset))
        A = np.asarray((Zh @ Zk.T) @ U) / np.sqrt(lam)
        kh = np.asarray(Zh.multiply(Zh).sum(axis=1)).ravel()
        resid = np.maximum(kh - (A * A).sum(axis=1), 0.0)
    yh = yc[held] - offset
    (s2, n2), nll = _fit_variances(
        lambda theta: _heldout_nll(theta, lam, b, A, resid, yh), *fixed, yk.var())
    return (s2, n2), -nll / len(held)


class RandomPartitionGPRegressor(StrictParamsMixin, RegressorMixin, LockedMethodsMixin,
                                 VersionedStateMixin,
                                 BaseEstimator):
    __doc__ = f"""GP regression with a random partition kernel ``s2 K`` and Gaussian noise ``n2``.

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

    The marginal likelihood is the right criterion when the partitions ignore the labels (fast
    cluster, Mondrian). A random forest, though, is grown on the very targets the GP conditions
    on: its cells are chosen to make those targets alike, so their likelihood rewards a tiny
    noise variance that fresh points do not share (on the UCI sets the fitted noise was 1e-5 ..
    5e-3 of ``var(y)`` and the test errors averaged 1.5-2.5 predictive variances on power_plant,
    kin8nm, naval and protein). With ``variances="holdout"`` (what ``"auto"`` picks for a
    partitioner whose ``uses_labels`` is true) a random ``validation_fraction`` of the rows is
    held out before the partitions are drawn from the others; the variances maximise the exact
    predictive density of the held-out targets given the kept rows (primal: an
    eigendecomposition of the kept rows' ``Z^T Z``; CG: of the kernel matrix of at most
    ``n_hyper_samples`` kept rows, scoring at most as many held-out rows), and the GP then
    conditions on every row with those variances. The partitions see ``1 - validation_fraction``
    of the rows.

    Parameters
    ----------
{PARTITIONER}{N_PARTITIONS}\
    solver : {{"auto", "primal", "cg"}}, default="auto"
    preconditioner : bool, default=True
    signal_variance, noise_variance : float or None, default=None
        Fixed values; ``None`` fits them (see ``variances``).
    variances : {{"auto", "marginal_likelihood", "holdout"}}, default="auto"
        How the free variances are fitted: the marginal likelihood of the training targets, or
        the predictive density of held-out rows the partitions did not see. ``"auto"``: held
        out when the partitioner's ``uses_labels`` attribute is true (the random forest), the
        marginal likelihood otherwise. With fewer than one held-out row or two kept rows the
        marginal likelihood is used.
    validation_fraction : float in (0, 1), default=0.2
        Share of the rows held out with ``variances="holdout"``.
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
    log_marginal_likelihood_ : float or None
        At the fitted variances (of the subsample in the CG regime; ``None`` there when both
        variances are fixed or held out, which needs no likelihood of the training targets).
    variance_selection_ : str
        ``"marginal_likelihood"``, ``"holdout"`` or ``"fixed"``.
    heldout_log_likelihood_ : float or None
        Mean log predictive density per held-out row at the fitted variances (``"holdout"``).
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

    _state_types = {"features_": RandomPartitionFeatures}

    _parameter_constraints = {
        "partitioner": [str, object],
        "n_partitions": [Interval(numbers.Integral, 1, None, closed="left")],
        "solver": [StrOptions({"auto", "primal", "cg"})],
        "preconditioner": ["boolean"],
        "signal_variance": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "noise_variance": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "variances": [StrOptions({"auto", "marginal_likelihood", "holdout"})],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "max_primal_features": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_hyper_samples": [Interval(numbers.Integral, 2, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="neither")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, partitioner="fast_cluster", n_partitions=200, *, solver="auto",
                 preconditioner=True, signal_variance=None, noise_variance=None,
                 variances="auto", validation_fraction=0.2, max_primal_features=2000,
                 n_hyper_samples=2000, tol=1e-8, max_iter=2000, random_state=None):
        self.partitioner = partitioner
        self.n_partitions = n_partitions
        self.solver = solver
        self.preconditioner = preconditioner
        self.signal_variance = signal_variance
        self.noise_variance = noise_variance
        self.variances = variances
        self.validation_fraction = validation_fraction
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
        n = X.shape[0]
        # The fit works in units where |y - mean| < 1 (a power of two: exact), so any finite
        # target scale gives the same variances and predictions up to units.
        self.y_mean_, self._y_scale = centre_and_scale(y)
        yc = (y - self.y_mean_) / self._y_scale
        fixed = tuple(None if v is None else self._to_standard(v)
                      for v in (self.signal_variance, self.noise_variance))
        selection = self._variance_selection(fixed, n)
        if selection == "holdout":
            # The partitions see the kept rows only, so the held-out rows are new points to
            # them, as test points will be; the GP then conditions on every row.
            perm = rng.permutation(n)
            n_held = int(round(self.validation_fraction * n))
            held, keep = np.sort(perm[:n_held]), np.sort(perm[n_held:])
            self._held_rows = held
            features = self.features_
            features._validate_params()
            validate_data(features, X, dtype=np.float64, order="C")  # n_features_in_
            Z = features._fit(X, y, keep)._indicator(features._labels).tocsc()
        else:
            Z = self.features_.fit_transform(X, y).tocsc()
        self.variance_selection_ = selection
        C = Z.shape[1]
        solver = self.solver
        if solver == "auto":
            solver = "primal" if C <= min(self.max_primal_features, n) else "cg"
        self.solver_ = solver
        self.heldout_log_likelihood_ = None
        if selection == "holdout":
            (s2, n2), self.heldout_log_likelihood_ = _heldout_variances(
                Z, yc, keep, held, solver, fixed, self.n_hyper_samples, rng)
            self.heldout_log_likelihood_ -= float(np.log(self._y_scale))
            fixed = (s2, n2)
        if solver == "primal":
            lam, U = np.linalg.eigh((Z.T @ Z).toarray())
            lam = np.maximum(lam, 0.0)
            b = U.T @ (Z.T @ yc)
            (s2, n2), nlml = _fit_variances(
                lambda theta: _nlml(theta, lam, b, yc @ yc, n), *fixed, yc.var())
            self.log_marginal_likelihood_ = -nlml
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
            (s2, n2), nlml = _fit_variances(
                lambda theta: _nlml(theta, lam, b, ys @ ys, len(sub)), *fixed, ys.var())
            self.log_marginal_likelihood_ = -nlml
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

    def _variance_selection(self, fixed, n):
        """How the free variances are chosen: "fixed", "marginal_likelihood" or "holdout"."""
        if None not in fixed:
            return "fixed"
        choice = self.variances
        if choice == "auto":
            partitioner = resolve_partitioner(self.partitioner)
            choice = "holdout" if getattr(partitioner, "uses_labels", False) \
                else "marginal_likelihood"
        n_held = int(round(self.validation_fraction * n))
        if choice == "holdout" and (n_held < 1 or n - n_held < 2):
            choice = "marginal_likelihood"  # too few rows to hold any out
        return choice

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
