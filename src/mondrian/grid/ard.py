"""Per-dimension lifetimes by the marginal likelihood of the ARD Laplace kernel.

The Mondrian grid (and the Mondrian kernel on inputs multiplied by per-dimension weights)
converges to the ARD Laplace kernel ``exp(-sum_d lambda_d |x_d - x'_d|)``. Its lifetimes can
therefore be estimated like the length-scales of a Gaussian process with that very kernel:
by maximising the log marginal likelihood of the targets on a random subsample, which costs
O(n³) per step in the subsample's size n and nothing in the full data's size. This is the
exact kernel of the Mondrian models (an L1 distance); a Matérn-1/2 ARD kernel
(``relevance`` method ``"gp_ard"``) scales an L2 distance instead.
"""

import numbers

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.optimize import minimize
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from mondrian.estimator.relevance import register_weight_method

__all__ = ["laplace_ard_lifetimes", "laplace_ard_nll"]

# Bounds of the optimised logarithms: lifetimes e^-9 (a dimension switched off) to e^6 per
# unit of input, signal variance e^±5 and noise variance e^-9 to e^2 (standardised targets).
_LOG_LIFETIME = (-9.0, 6.0)
_LOG_SIGNAL = (-5.0, 5.0)
_LOG_NOISE = (-9.0, 2.0)
_JITTER = 1e-8


def _distances(U):
    """Per-dimension absolute differences, shape (n_dims, n, n)."""
    return np.abs(U.T[:, :, None] - U.T[:, None, :])


def laplace_ard_nll(theta, D, Y):
    """Negative log marginal likelihood of the ARD Laplace GP, and its gradient.

    The prior covariance is ``s2 * exp(-sum_d lambda_d D_d) + noise * I``; every column of
    ``Y`` is an independent draw of it.

    Parameters
    ----------
    theta : ndarray of shape (n_dims + 2,)
        ``log lambda_1 .. log lambda_D, log s2, log noise``.
    D : ndarray of shape (n_dims, n, n)
        Per-dimension absolute differences of the inputs.
    Y : ndarray of shape (n, n_outputs)

    Returns
    -------
    nll : float
    grad : ndarray of shape (n_dims + 2,)

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian.grid.ard import laplace_ard_nll
    >>> U = np.array([[0.0], [1.0]])
    >>> D = np.abs(U.T[:, :, None] - U.T[:, None, :])
    >>> nll, grad = laplace_ard_nll(np.zeros(3), D, np.array([[1.0], [-1.0]]))
    >>> grad.shape
    (3,)
    """
    n_dims, n = D.shape[0], D.shape[1]
    lam, s2, noise = np.exp(theta[:n_dims]), np.exp(theta[n_dims]), np.exp(theta[n_dims + 1])
    K_signal = s2 * np.exp(-np.tensordot(lam, D, axes=1))
    K = K_signal.copy()
    K[np.diag_indices(n)] += noise + _JITTER
    factor = cho_factor(K, lower=True)
    A = cho_solve(factor, Y)
    k = Y.shape[1]
    nll = 0.5 * float(np.sum(Y * A)) + k * float(np.log(np.diag(factor[0])).sum()) \
        + 0.5 * k * n * np.log(2 * np.pi)
    # d nll / d theta_j = -1/2 tr(W dK/d theta_j), W = A A' - k K^-1.
    W = A @ A.T - k * cho_solve(factor, np.eye(n))
    WK = W * K_signal
    grad = np.empty(n_dims + 2)
    # dK/d log lambda_d = -lambda_d D_d * K_signal.
    grad[:n_dims] = 0.5 * lam * np.tensordot(D, WK, axes=([1, 2], [0, 1]))
    grad[n_dims] = -0.5 * float(WK.sum())
    grad[n_dims + 1] = -0.5 * noise * float(np.trace(W))
    return nll, grad


def laplace_ard_lifetimes(X, y, *, n_samples=500, max_iter=200, random_state=None,
                          return_details=False):
    """Lifetimes of the ARD Laplace kernel maximising the marginal likelihood of ``y``.

    Fits a Gaussian process with covariance ``s2 exp(-sum_d lambda_d |x_d - x'_d|) + noise``
    (the kernel the Mondrian grid and the weighted Mondrian kernel converge to) on a random
    subsample of at most ``n_samples`` rows, targets standardised, by L-BFGS from
    ``lambda_d = 1``, ``s2 = 1``, ``noise = 0.1``.

    Parameters
    ----------
    X : array-like of shape (n, n_features)
        Inputs in the units the lifetimes are for (for instance min-max scaled).
    y : array-like of shape (n,) or (n, n_outputs)
        Targets (columns: independent outputs sharing the kernel, e.g. one-hot classes).
    n_samples : int, default=500
        Largest subsample; memory is ``8 n_features n_samples²`` bytes and every step
        ``O(n_samples³ + n_features n_samples²)``.
    max_iter : int, default=200
        L-BFGS iterations at most.
    random_state : int, RandomState instance or None
        Draws the subsample.
    return_details : bool, default=False
        Also return a dict with ``signal_variance``, ``noise_variance`` (standardised target
        units), ``nll`` and ``n_iter``.

    Returns
    -------
    lifetimes : ndarray of shape (n_features,)
        ``lambda_d`` per unit of ``X``; a dimension the likelihood switches off ends at the
        lower bound ``e^-9`` (about 1e-4), constant ones at exactly 0.
    details : dict, only when ``return_details``

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian.grid.ard import laplace_ard_lifetimes
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(size=(200, 2))
    >>> y = np.sin(6 * X[:, 0]) + 0.1 * rng.normal(size=200)
    >>> lam = laplace_ard_lifetimes(X, y, random_state=0)
    >>> bool(lam[1] < 0.1 * lam[0])
    True
    """
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    Y = Y.reshape(len(Y), -1)
    if len(Y) != len(X):
        raise ValueError(f"X has {len(X)} rows but y has {len(Y)}")
    if not np.isfinite(X).all() or not np.isfinite(Y).all():
        raise ValueError("X and y must be finite")
    if not isinstance(n_samples, numbers.Integral) or n_samples < 2:
        raise ValueError(f"n_samples must be an integer >= 2, got {n_samples!r}")
    if not isinstance(max_iter, numbers.Integral) or max_iter < 1:
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
    if len(X) < 2:
        raise ValueError("laplace_ard_lifetimes needs at least 2 rows")
    rng = check_random_state(random_state)
    if len(X) > n_samples:
        keep = rng.choice(len(X), n_samples, replace=False)
        X, Y = X[keep], Y[keep]
    spread = Y.std(axis=0)
    Y = (Y - Y.mean(axis=0)) / np.where(spread > 0, spread, 1.0)
    n_dims = X.shape[1]
    D = _distances(X)
    theta0 = np.r_[np.zeros(n_dims), 0.0, np.log(0.1)]
    bounds = [_LOG_LIFETIME] * n_dims + [_LOG_SIGNAL, _LOG_NOISE]
    # One BLAS thread: at a few hundred rows threads mostly synchronise (many times slower on
    # a loaded machine).
    with threadpool_limits(limits=1, user_api="blas"):
        result = minimize(laplace_ard_nll, theta0, args=(D, Y), jac=True, method="L-BFGS-B",
                          bounds=bounds, options={"maxiter": int(max_iter)})
    lifetimes = np.exp(result.x[:n_dims])
    lifetimes[np.ptp(X, axis=0) == 0] = 0.0  # no information, whatever the optimiser did
    if not return_details:
        return lifetimes
    return lifetimes, {"signal_variance": float(np.exp(result.x[n_dims])),
                       "noise_variance": float(np.exp(result.x[n_dims + 1])),
                       "nll": float(result.fun), "n_iter": int(result.nit)}


def _laplace_ard(U, y, classification, rng):
    """Relevance method ``"laplace_ard"``: lifetimes of the ARD Laplace kernel
    ``exp(-sum_d l_d |u_d - u'_d|)`` (the Mondrian models' own limit kernel, L1) maximising the
    GP marginal likelihood on at most 500 rows (classes: one-hot outputs sharing the kernel);
    see :func:`laplace_ard_lifetimes`."""
    target = (y[:, None] == np.unique(y)[None, :]).astype(np.float64) if classification else y
    return laplace_ard_lifetimes(U, target, n_samples=500, random_state=rng)


# The grid owns this method and registers it (mondrian.estimator.relevance keeps the registry).
register_weight_method("laplace_ard", _laplace_ard)
