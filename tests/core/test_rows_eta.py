"""``mf_rows_eta`` (``core/_box_kernels.h``): the distances of a node's few rows to a box
read whole, rows side by side in groups and the last ones one chain each. Its bits must be
those of the one-row reference loop (the portable switch) for every number of rows (partial
groups), few and many features, rows inside, on the bounds and far outside, infinite bounds."""

import numpy as np
import pytest

from mondrian.core._batch_walk import _rows_eta, set_portable_kernels

pytestmark = pytest.mark.exact


def _reference(box, X, idx):
    D = X.shape[1]
    out = []
    with np.errstate(invalid="ignore"):
        for i in idx:
            out.append(_chain(box, X[i], D))
    return np.array(out)


def _chain(box, x, D):
    eta = 0.0
    for d in range(D):
        below = float(box[d] - x[d])
        above = float(x[d] - box[D + d])
        # (side_gap: a NaN difference, inf - inf, is no gap)
        eta += (below if below > 0.0 else 0.0) + (above if above > 0.0 else 0.0)
    return eta


def _distances(box, X, idx, portable):
    out = np.full(len(idx), np.nan)
    old = set_portable_kernels(portable)
    try:
        _rows_eta(box, X, idx, out)
    finally:
        set_portable_kernels(old)
    return out


@pytest.mark.parametrize("D", [1, 3, 16, 36, 37, 100])
@pytest.mark.parametrize("m", [1, 2, 3, 4, 5, 6, 7, 8, 9, 13])
def test_same_bits_as_the_portable_loop(D, m):
    rng = np.random.default_rng(100 * D + m)
    lo = rng.normal(size=D)
    hi = lo + rng.uniform(0.0, 2.0, size=D)
    if D > 2:
        lo[1], hi[2] = -np.inf, np.inf
    box = np.concatenate([lo, hi])
    X = rng.normal(size=(40, D)) * rng.choice([0.1, 1.0, 1e3], size=(40, 1))
    X[0] = lo  # on the bounds: inside
    X[1] = 0.5 * (lo + hi)  # inside everywhere
    X[1, ~np.isfinite(X[1])] = 0.0
    X[2] = 1e300 * np.sign(rng.normal(size=D))  # far outside
    idx = rng.choice(40, size=m, replace=m > 40)
    idx[0] = 2 if m > 2 else idx[0]
    X[3, ::2] = np.nan  # (no gap where the row is NaN)
    if m > 1:
        idx[-1] = 0  # (-inf on the -inf bound: inf - inf, no gap)
    if m > 3:
        idx[1] = 3
    fast = _distances(box, X, idx.astype(np.intp), False)
    portable = _distances(box, X, idx.astype(np.intp), True)
    assert fast.tobytes() == portable.tobytes()
    assert portable.tobytes() == _reference(box, X, idx).tobytes()


def test_checks_its_arguments():
    X = np.zeros((3, 2))
    with pytest.raises(ValueError):
        _rows_eta(np.zeros(3), X, np.zeros(1, dtype=np.intp), np.zeros(1))
    with pytest.raises(IndexError):
        _rows_eta(np.zeros(4), X, np.array([3], dtype=np.intp), np.zeros(1))
