"""The regressor's quadrature exp and log1p (``forest/_vmath.h``): within an ulp of glibc's over
the whole range of their arguments (edge cases, subnormals, huge and tiny, zeros, infinities,
NaN), and the dispatched kernels (AVX2 / AVX-512 clones) give the bits of the portable loops
forced by ``set_portable_kernels``, alone and inside the regressor's predictive (one-row and
batched calls, several priors, quadratures of every size, rows branching off at more nodes
than a flush holds)."""

import math

import numpy as np
import pytest

from mondrian import MondrianForestRegressor
from mondrian.core._batch_walk import set_portable_kernels
from mondrian.forest._gaussian import (
    GaussianPrior,
    predict_moments_grid,
    predict_moments_trees,
    upward_messages,
)
from mondrian.forest._gaussian_predict import _vmath

pytestmark = pytest.mark.exact

TINY = np.finfo(float).tiny  # the smallest normal float
SUB = 5e-324


@pytest.fixture(params=[False, True], ids=["dispatched", "portable"])
def portable(request):
    old = set_portable_kernels(request.param)
    yield request.param
    set_portable_kernels(old)


def _glibc(name, x):
    """``math.exp`` / ``math.log1p`` (glibc's) with IEEE results where Python raises."""
    out = np.empty(len(x))
    for i, v in enumerate(x):
        try:
            out[i] = getattr(math, name)(v)
        except OverflowError:
            out[i] = math.inf
        except ValueError:  # log1p at -1 and below
            out[i] = -math.inf if v == -1.0 else math.nan
    return out


def _ulps(got, want):
    return np.abs(got - want) / np.spacing(np.abs(want))


def _exp_args():
    rng = np.random.default_rng(0)
    edges = [0.0, -0.0, SUB, -SUB, TINY, -TINY, 1e-300, 0.5 * math.log(2), -0.5 * math.log(2),
             math.log(2), 709.78, 709.7827128933839, 709.79, 710.0, 1400.0, 1e300,
             -708.3964185322641, -708.4, -740.0, -745.13, -745.1332191019411, -745.14, -746.0,
             -1400.0, -1e300, np.inf, -np.inf, np.nan]
    return np.concatenate([
        rng.uniform(-750.0, 712.0, 40000),
        rng.uniform(-40.0, 0.0, 40000),  # the clocks' -rate t
        rng.uniform(-1.0, 1.0, 20000),
        np.ldexp(rng.uniform(-1.0, 1.0, 10000), rng.integers(-1074, -20, 10000)),
        np.arange(-1075, 1025) * math.log(2),  # the reduction's edges
        edges,
    ])


def _log1p_args():
    rng = np.random.default_rng(1)
    edges = [0.0, -0.0, SUB, -SUB, TINY, -TINY, 2.0 ** -53, -(2.0 ** -53), 2.0 ** -54,
             -1.0 + 2.0 ** -53, -1.0 + 1e-12, -0.5, -0.2928932188134524, 0.41421356237309515,
             1.0, 2.0 ** 53, 1.7e308, np.finfo(float).max, -1.0, -1.5, -np.inf, np.inf, np.nan]
    u = (np.arange(4) + 0.5) / 4
    return np.concatenate([
        -rng.uniform(0.0, 1.0, 40000),  # the quadrature's -u p
        -np.outer(u, rng.uniform(0.0, 1.0, 5000)).ravel(),
        -(10.0 ** rng.uniform(-330.0, 0.0, 20000)),
        -(1.0 - 10.0 ** rng.uniform(-16.0, 0.0, 10000)),
        10.0 ** rng.uniform(-330.0, 308.0, 20000),
        edges,
    ])


def _check_ulp(got, want):
    finite = np.isfinite(want)
    normal = finite & (np.abs(want) >= TINY)
    assert np.all(_ulps(got[normal], want[normal]) <= 1.0)
    tiny = finite & ~normal  # subnormal or zero results: within a subnormal step
    assert np.all(np.abs(got[tiny] - want[tiny]) <= SUB)
    assert np.array_equal(got[~finite], want[~finite], equal_nan=True)
    exact_zero = want == 0.0
    assert np.array_equal(np.signbit(got[exact_zero & (got == 0.0)]),
                          np.signbit(want[exact_zero & (got == 0.0)]))


def test_exp_within_an_ulp_of_glibc(portable):
    x = _exp_args()
    _check_ulp(_vmath("exp", x), _glibc("exp", x))


def test_log1p_within_an_ulp_of_glibc(portable):
    a = _log1p_args()
    got, want = _vmath("log1p", a), _glibc("log1p", a)
    _check_ulp(got, want)
    # a itself below 2**-54 (zeros with their sign, subnormals)
    small = np.abs(a) < 2.0 ** -54
    assert got[small].tobytes() == a[small].tobytes()


@pytest.mark.parametrize("name", ["exp", "log1p"])
def test_dispatched_functions_are_the_portable_loops(name):
    x = _exp_args() if name == "exp" else _log1p_args()
    out = []
    for flag in (False, True):
        old = set_portable_kernels(flag)
        try:
            # every length: full vectors and remainders
            out.append(np.concatenate([_vmath(name, x[:n]) for n in range(1, 20)]
                                      + [_vmath(name, x)]))
        finally:
            set_portable_kernels(old)
    assert out[0].tobytes() == out[1].tobytes()


def _deep_model():
    """Halving values: most cuts split off the largest point, so the paths are long and rows
    far outside branch off at dozens of nodes (more than a flush holds, 32)."""
    x0 = 0.5 ** np.arange(300)
    X = np.c_[x0, np.zeros((300, 2))]
    y = np.sin(40 * x0) + x0
    model = MondrianForestRegressor(n_estimators=2, random_state=3).fit(X, y)
    S = np.vstack([np.c_[x0[::5], np.full((60, 2), 4.0)], X[::7], X[:9] + 1e-3])
    return model, np.ascontiguousarray(model._validate_X_predict(S))


def _reads(model, S, n_quadrature):
    """Moments of one prior (all rows, then one row per call) and of a grid of three."""
    params = [GaussianPrior(0.1, s, 1.0, 2.0, 1.3, True) for s in (0.5, 0.2, 3.0)]
    messages = [[upward_messages(tree, p, None)[:2] for tree in model._trees] for p in params]
    one = np.zeros((S.shape[0], 3))
    predict_moments_trees(model._trees, messages[0], S, one, params[0], n_quadrature)
    rows = np.zeros((S.shape[0], 3))
    for i in range(S.shape[0]):
        predict_moments_trees(model._trees, messages[0], S[i:i + 1], rows[i:i + 1], params[0],
                              n_quadrature)
    grid = np.zeros((3, S.shape[0], 3))
    predict_moments_grid(model._trees, messages, S, grid, params, n_quadrature)
    return one, rows, grid


@pytest.mark.parametrize("n_quadrature", [1, 4, 11])
def test_regressor_dispatched_is_portable(n_quadrature):
    model, S = _deep_model()
    out = []
    for flag in (False, True):
        old = set_portable_kernels(flag)
        try:
            out.append(_reads(model, S, n_quadrature))
        finally:
            set_portable_kernels(old)
    for fast, plain in zip(*out, strict=True):
        assert fast.tobytes() == plain.tobytes()
    one, rows, grid = out[0]
    assert one.tobytes() == rows.tobytes()  # a row's bits do not depend on the call
    assert one.tobytes() == grid[0].tobytes()  # nor on the other priors of a grid
    mean, std = model.predict(S, return_std=True)
    assert np.all(np.isfinite(mean)) and np.all(std > 0.0)


def test_clock_against_glibc_quadrature():
    """The clocks of the quadrature (1 + exp(-rate t) at t = tau - log1p(-u p) / eta) by
    these functions are within 1e-15 relative of glibc's."""
    rng = np.random.default_rng(2)
    p = np.concatenate([rng.uniform(0.0, 1.0, 2000), 10.0 ** rng.uniform(-300, 0, 500), [1.0]])
    u = np.repeat((np.arange(4) + 0.5) / 4, p.size)
    a = -u * np.tile(p, 4)
    tau = np.tile(rng.uniform(0.0, 5.0, p.size), 4)
    eta = np.tile(10.0 ** rng.uniform(-3, 3, p.size), 4)
    rate = 1.7
    ours = 1.0 + _vmath("exp", -rate * (tau - _vmath("log1p", a) / eta))
    theirs = 1.0 + _glibc("exp", -rate * (tau - _glibc("log1p", a) / eta))
    assert np.allclose(ours, theirs, rtol=1e-15, atol=0.0)
