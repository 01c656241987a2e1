"""cpu_act scaled to [0, 1], the models of the kernel benchmark and the choice of ``alpha``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from shared.datasets import load_cpu_act, subsample_train
from shared.metrics import rmse
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import Ridge
from sklearn.metrics.pairwise import laplacian_kernel, manhattan_distances
from sklearn.preprocessing import MinMaxScaler

QUICK_TRAIN_ROWS = 2000
VALIDATION_FRACTION = 0.2
ALPHA_GRID = (0.001, 0.01, 0.1, 1.0)
ALPHA_LIFETIMES = (0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6)
ALPHA_ROWS = 2000
MONDRIAN, BINNING, FOURIER, EXACT = (
    "Mondrian kernel", "random binning", "random Fourier", "exact Laplace kernel",
)


@dataclass
class Problem:
    """cpu_act scaled to [0, 1] by the training rows, with a validation part of the training rows.

    Attributes
    ----------
    X_train, y_train, X_test, y_test : ndarray
        All training rows and the test rows.
    X_fit, y_fit, X_val, y_val : ndarray
        The training rows split into a fit part and a validation part.
    note : str
        How the data was split and subsampled.
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    X_fit: np.ndarray
    y_fit: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    note: str


def load_problem(quick: bool, seed: int) -> Problem:
    """Load cpu_act, subsample it in quick mode, scale it and carve the validation part."""
    data = subsample_train(load_cpu_act(seed), QUICK_TRAIN_ROWS if quick else None, seed)
    scaler = MinMaxScaler().fit(data.X_train)
    X_train, X_test = scaler.transform(data.X_train), scaler.transform(data.X_test)
    n = len(data.y_train)
    val = np.zeros(n, dtype=bool)
    val[np.random.default_rng(seed).permutation(n)[: int(round(VALIDATION_FRACTION * n))]] = True
    note = (f"{data.note}; validation part: {val.sum()} random training rows, "
            f"fit part: {n - val.sum()}")
    return Problem(X_train, data.y_train, X_test, data.y_test, X_train[~val],
                   data.y_train[~val], X_train[val], data.y_train[val], note)


def make_features(method: str, n_components: int, lifetime: float, seed: int):
    """An unfitted random-feature transformer of the Laplace kernel."""
    import mondrian

    if method == BINNING:
        return mondrian.RandomBinningFeatures(n_components, lifetime=lifetime, random_state=seed)
    return mondrian.LaplaceRandomFourierFeatures(n_components, lifetime=lifetime,
                                                 random_state=seed)


def feature_ridge(transformer, X: np.ndarray, y: np.ndarray, X_eval: np.ndarray,
                  alpha: float) -> tuple[np.ndarray, int]:
    """Fit ``transformer`` and a ridge on centred targets; predict ``X_eval``.

    Returns
    -------
    prediction : ndarray
    n_features : int
        Number of feature columns.
    """
    Z = transformer.fit_transform(X)
    offset = float(np.mean(y))
    ridge = Ridge(alpha=alpha, fit_intercept=False).fit(Z, y - offset)
    return ridge.predict(transformer.transform(X_eval)) + offset, Z.shape[1]


def mondrian_ridge(n_trees: int, lifetime: float, alpha: float, seed: int, **kwargs):
    """``MondrianKernelRidge`` on the benchmark's scaled inputs."""
    import mondrian

    return mondrian.MondrianKernelRidge(n_estimators=n_trees, lifetime=lifetime, alpha=alpha,
                                        feature_scaling=None, random_state=seed, **kwargs)


def exact_laplace_ridge(X: np.ndarray, y: np.ndarray, X_eval: np.ndarray, lifetime: float,
                        alpha: float) -> np.ndarray:
    """Exact Laplace kernel ridge (centred targets, no intercept) predictions on ``X_eval``."""
    offset = float(np.mean(y))
    model = KernelRidge(alpha=alpha, kernel="precomputed")
    model.fit(laplacian_kernel(X, gamma=lifetime), y - offset)
    return model.predict(laplacian_kernel(X_eval, X, gamma=lifetime)) + offset


def choose_alpha(problem: Problem, seed: int) -> tuple[float, float, list[dict]]:
    """Exact Laplace kernel ridge on at most ``ALPHA_ROWS`` fit rows, scored on validation.

    Returns
    -------
    alpha, lifetime : float
        The best pair of the grid.
    rows : list of dict
        Validation RMSE of every pair, one row per alpha.
    """
    rng = np.random.default_rng(seed)
    n = len(problem.y_fit)
    keep = np.sort(rng.choice(n, min(n, ALPHA_ROWS), replace=False))
    X, y = problem.X_fit[keep], problem.y_fit[keep]
    offset = float(np.mean(y))
    D_train = manhattan_distances(X)
    D_val = manhattan_distances(problem.X_val, X)
    rows, best = [], (np.inf, None, None)
    for alpha in ALPHA_GRID:
        row = {"alpha": alpha}
        for lifetime in ALPHA_LIFETIMES:
            model = KernelRidge(alpha=alpha, kernel="precomputed")
            model.fit(np.exp(-lifetime * D_train), y - offset)
            err = rmse(problem.y_val, model.predict(np.exp(-lifetime * D_val)) + offset)
            row[f"λ={lifetime:g}"] = err
            if err < best[0]:
                best = (err, alpha, lifetime)
        rows.append(row)
    return best[1], best[2], rows
