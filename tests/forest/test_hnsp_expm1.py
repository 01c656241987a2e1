"""The classifier's own expm1 (``forest/_vmath.h``, ``mf_vm_expm1``: the branch-off terms' p
and d_bar on every path): within an ulp of glibc's over the arguments the terms meet (every
float <= 0 down to -inf, tiny ones and zeros returned as they are), the dispatched clones
give the bits of the portable loop, and the classifier's paths (one row, tabulated, grouped,
batched, cached; finite and infinite lifetimes, far rows) give each other's bits."""

import math

import numpy as np
import pytest

from mondrian import MondrianForestClassifier
from mondrian.core._batch_walk import set_portable_kernels
from mondrian.forest import _node_cache
from mondrian.forest._hnsp import _expm1, predict_proba_trees

pytestmark = pytest.mark.exact

TINY = np.finfo(float).tiny
SUB = 5e-324


def _args():
    rng = np.random.default_rng(0)
    edges = [0.0, -0.0, -SUB, -TINY, -(2.0 ** -54), -(2.0 ** -53), -1e-300, -0.5 * math.log(2),
             -math.log(2), -1.5 * math.log(2), -36.0, -37.5, -38.0, -44.9, -45.0, -45.1,
             -709.0, -745.2, -1e300, -np.finfo(float).max, -np.inf]
    return np.concatenate([
        -rng.uniform(0.0, 50.0, 60000),
        -rng.uniform(0.0, 1.5, 60000),  # p of short edges, the reduction's n = 0, -1, -2
        -(10.0 ** rng.uniform(-330.0, 3.0, 40000)),
        -np.ldexp(rng.uniform(0.0, 1.0, 10000), rng.integers(-1074, -20, 10000)),
        -np.arange(0, 70) * math.log(2),  # the reduction's edges
        -(np.arange(1, 70) - 0.5) * math.log(2),
        edges,
    ])


def _ulps(got, want):
    return np.abs(got - want) / np.spacing(np.abs(want))


@pytest.mark.parametrize("flag", [False, True], ids=["dispatched", "portable"])
def test_expm1_within_an_ulp_of_glibc(flag):
    x = _args()
    old = set_portable_kernels(flag)
    try:
        got = _expm1(x)
    finally:
        set_portable_kernels(old)
    want = np.array([math.expm1(v) for v in x])  # glibc's
    normal = np.abs(want) >= TINY
    worst = _ulps(got[normal], want[normal]).max()
    print(f"max error {worst:.2f} ulp, {np.mean(got != want):.1%} of arguments differ")
    assert worst <= 1.0
    # short edges' p: 6.4% of them differ from glibc (8.9% without carrying the reduction's
    # rounding error c)
    assert np.mean(got[60000:120000] != want[60000:120000]) < 0.075
    assert np.all(np.abs(got[~normal] - want[~normal]) <= SUB)
    # x itself below 2**-54 (zeros with their sign, subnormals); -1 exactly far out
    small = np.abs(x) < 2.0 ** -54
    assert got[small].tobytes() == x[small].tobytes()
    assert np.all(got[x <= -38.0] == -1.0)
    specials = np.array([np.nan, -np.inf, np.inf, 710.0])
    assert np.array_equal(_expm1(specials), [np.nan, -1.0, np.inf, np.inf], equal_nan=True)


def test_expm1_above_zero_stays_close():
    """Not an argument of the terms, but the function is defined there: within two ulps."""
    x = np.random.default_rng(1).uniform(0.0, 709.0, 20000)
    want = np.array([math.expm1(v) for v in x])
    assert _ulps(_expm1(x), want).max() <= 2.0


def test_dispatched_expm1_is_the_portable_loop():
    x = _args()
    out = []
    for flag in (False, True):
        old = set_portable_kernels(flag)
        try:
            out.append(np.concatenate([_expm1(x[:n]) for n in range(1, 20)] + [_expm1(x)]))
        finally:
            set_portable_kernels(old)
    assert out[0].tobytes() == out[1].tobytes()


@pytest.mark.parametrize("lifetime", [2.0, np.inf])
@pytest.mark.parametrize("n_features", [3, 40])
def test_every_path_gives_the_same_bits(lifetime, n_features):
    """One row at a time (``_predict_row``, with ``_step_p``'s p), the plain tabulated walk
    and the grouped / batched walks (p and d_bar in vector lanes), cached or not, with the
    dispatched kernels and the portable ones: one expm1, so the same bits."""
    rng = np.random.default_rng(n_features)
    X = rng.normal(size=(300, n_features))
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1], [-1.0, 0.0, 1.0])
    model = MondrianForestClassifier(n_estimators=3, random_state=1,
                                     lifetime=lifetime).fit(X, y)
    S = np.vstack([X[:60] + 0.1 * rng.normal(size=(60, n_features)),
                   8.0 * rng.normal(size=(60, n_features))])
    Z = np.ascontiguousarray(model._validate_X_predict(S))

    def plain():
        out = np.zeros((len(S), 4))
        predict_proba_trees(model._trees, Z, out, float(model.discount_factor), False, None,
                            True)
        return out / len(model._trees)

    results = []
    for flag in (False, True):
        old = set_portable_kernels(flag)
        old_budget = _node_cache.CACHE_BYTES
        try:
            _node_cache.CACHE_BYTES = 0
            results.append(model.predict_proba(S))
            _node_cache.CACHE_BYTES = old_budget
            model.predict_proba(S)  # (fills the cache)
            results.append(model.predict_proba(S))
            results.append(np.vstack([model.predict_proba(S[i:i + 1]) for i in range(len(S))]))
            results.append(plain())
        finally:
            _node_cache.CACHE_BYTES = old_budget
            set_portable_kernels(old)
    for other in results[1:]:
        assert other.tobytes() == results[0].tobytes()
