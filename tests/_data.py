"""The synthetic data sets of the tests, one generator per kind of data.

Each generator draws from ``np.random.RandomState(seed)`` (``generator=True``:
``np.random.default_rng(seed)``), or from ``seed`` itself when it is already a random state or
generator (to draw more from the same stream afterwards). The draws and arithmetic are those the
test modules made in their own helpers before, so every data set keeps its bits.
"""

import numpy as np


def random_state(seed, generator=False):
    """``seed`` if it is a random state or generator, else a new one seeded with it."""
    if isinstance(seed, np.random.RandomState | np.random.Generator):
        return seed
    return np.random.default_rng(seed) if generator else np.random.RandomState(seed)


def sine_regression(n, d, seed=0, *, frequency=6.0, amplitude=1.0, slope=0.0, offset=0.0,
                    noise=0.1, generator=False):
    """``X`` uniform on ``[0, 1]^d`` and ``y = amplitude sin(frequency x_0) + slope x_1 +
    noise N(0, 1) + offset``."""
    rng = random_state(seed, generator)
    X = rng.uniform(size=(n, d))
    y = np.sin(frequency * X[:, 0])
    if amplitude != 1.0:
        y = amplitude * y
    if slope:
        y = y + (X[:, 1] if slope == 1.0 else slope * X[:, 1])
    y = y + noise * rng.normal(size=n)
    if offset:
        y = y + offset
    return X, y


def diagonal_classes(n=150, seed=0, shift=0.0):
    """``X`` uniform on ``[0, 1]^3 + shift``, class 1 above the diagonal ``x_0 + x_1 = 1``."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(size=(n, 3)) + shift
    y = (X[:, 0] + X[:, 1] > 1.0 + 2 * shift).astype(int)
    return X, y


def threshold_classes(n, d, seed=0, *, noise=0.3, generator=False):
    """``X`` uniform on ``[0, 1]^d``, class 1 where ``x_0 + noise N(0, 1) > 0.5``."""
    rng = random_state(seed, generator)
    X = rng.uniform(size=(n, d))
    y = (X[:, 0] + noise * rng.normal(size=n) > 0.5).astype(int)
    return X, y


def gaussian_classes(seed, n, d, *, noise=0.3, constant_column=None, constant=1.5,
                     n_duplicates=0, ties_column=None):
    """``X`` standard normal (``default_rng(seed)``), class 1 where ``x_0 + noise N(0, 1) > 0``.

    Optionally awkward: column ``constant_column`` set to ``constant`` (zero-width sides),
    rows ``n // 2 ..`` repeating the first ``n_duplicates`` rows (leaves that cannot be cut),
    column ``ties_column`` rounded (ties inside a column); in that order.
    """
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if constant_column is not None:
        X[:, constant_column] = constant
    if n_duplicates:
        X[n // 2:n // 2 + n_duplicates] = X[:n_duplicates]
    if ties_column is not None:
        X[:, ties_column] = np.round(X[:, ties_column])
    y = (X[:, 0] + noise * rng.normal(size=n) > 0).astype(int)
    return X, y


def awkward_classes(seed, n, d, **params):
    """:func:`gaussian_classes` with a constant column 2, 40 duplicated rows and ties in
    column 3 unless ``params`` say otherwise."""
    params = {"constant_column": 2, "n_duplicates": 40, "ties_column": 3, **params}
    return gaussian_classes(seed, n, d, **params)


def count_weights(rng, n):
    """Integer sample weights 0..3 drawn from ``rng``; the first row's (it sets the feature
    map's offset) is 2, so it is kept."""
    weights = rng.randint(0, 4, size=n)
    weights[0] = 2
    return weights
