"""Two readings of a regressor's trees in one pass (``predict_moments_trees``'s
``shorter_messages``: the debiased combination reads the forest at its own lifetime and at a
shorter one). A grouped row's shorter reading takes its first walk's path and etas; the result
is the bits of two calls of their own, whatever the boxes (stored, kept in the cache), the
walk, the rows per call, the kernels or the threads.
"""

import numpy as np
import pytest

from mondrian import MondrianForestRegressor
from mondrian.core._batch_walk import set_portable_kernels
from mondrian.forest import _node_cache, debias, regressor
from mondrian.forest._gaussian import GaussianPrior, predict_moments_trees, upward_messages

from _checks import box_min_samples

pytestmark = pytest.mark.exact


def _fitted(k, n_estimators=3, d=5):
    rng = np.random.default_rng(k)
    X = rng.normal(size=(500, d))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.1 * rng.normal(size=500)
    with box_min_samples(k):
        model = MondrianForestRegressor(n_estimators=n_estimators, random_state=k).fit(X, y)
    # Rows on the data, beside it and far outside it.
    S = np.vstack([X[:150], X[:150] + 0.05 * rng.normal(size=(150, d)),
                   3.0 * rng.normal(size=(60, d))])
    return model, np.ascontiguousarray(model._validate_X_predict(S))


def _apart(model, Ss, params, width, lifetime, shorter, plain, cache, step):
    """The two readings by calls of their own."""
    first = np.zeros((Ss.shape[0], width))
    second = np.zeros((Ss.shape[0], 2))
    messages = [upward_messages(t, params, lifetime)[:2] for t in model._trees]
    short = [upward_messages(t, params, shorter)[:2] for t in model._trees]
    for start in range(0, Ss.shape[0], step):
        rows = slice(start, start + step)
        predict_moments_trees(model._trees, messages, Ss[rows], first[rows], params, 3,
                              lifetime, plain, cache=cache)
        predict_moments_trees(model._trees, short, Ss[rows], second[rows], params, 3,
                              shorter, plain, cache=cache)
    return first, second


def _together(model, Ss, params, width, lifetime, shorter, plain, cache, step):
    out = np.zeros((Ss.shape[0], width + 2))
    messages = [upward_messages(t, params, lifetime)[:2] for t in model._trees]
    short = [upward_messages(t, params, shorter)[:2] for t in model._trees]
    for start in range(0, Ss.shape[0], step):
        rows = slice(start, start + step)
        predict_moments_trees(model._trees, messages, Ss[rows], out[rows], params, 3,
                              lifetime, plain, cache=cache, shorter_lifetime=shorter,
                              shorter_messages=short)
    return out[:, :width], out[:, width:]


@pytest.mark.parametrize("portable", [False, True])
@pytest.mark.parametrize("k", [0, 8])
def test_two_readings_in_one_pass_give_the_bits_of_two_passes(k, portable):
    model, Ss = _fitted(k)
    hierarchical = GaussianPrior(0.1, 0.5, 1.0, 2.0, 1.3, True)
    independent = GaussianPrior(0.1, 0.5, 1.0, 2.0, 1.3, False)
    old = set_portable_kernels(portable)
    try:
        for params in (hierarchical, independent):
            # (shorter than the first reading at every depth, at none, and longer: apart)
            for lifetime, shorter in ((None, 0.3), (None, 1.5), (2.0, 0.05), (None, 1e9),
                                      (0.5, 1.5)):
                for plain, step, width in ((False, None, 3), (False, 7, 2), (False, 1, 3),
                                           (True, None, 2)):
                    cache = _node_cache.PredictCache(0, 1 << 30) if k else None
                    step = step or Ss.shape[0]
                    args = (model, Ss, params, width, lifetime, shorter, plain)
                    expected = _apart(*args, None, step)
                    for _ in range(2):  # (the cache filled, then read)
                        got = _together(*args, cache, step)
                        assert got[0].tobytes() == expected[0].tobytes()
                        assert got[1].tobytes() == expected[1].tobytes()
    finally:
        set_portable_kernels(old)


def test_the_shorter_walk_measures_the_nodes_above_the_first_ones_top():
    """Rows whose first walk stopped below the shorter reading's leaf (inside a deep node's
    box) must measure the shorter leaf themselves: pinned by rows on the training points
    read at a lifetime that cuts every path short."""
    model, Ss = _fitted(8)
    params = GaussianPrior(0.1, 0.5, 1.0, 2.0, 1.3, True)
    cache = _node_cache.PredictCache(0, 1 << 30)
    args = (model, Ss, params, 2, None, 0.02, False)
    expected = _apart(*args, None, Ss.shape[0])
    assert np.any(expected[1][:, 0] != expected[1][0, 0])  # (not every row at the root)
    for _ in range(2):
        got = _together(*args, cache, Ss.shape[0])
        assert got[1].tobytes() == expected[1].tobytes()


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_the_debiased_estimator_gives_the_bits_of_separate_passes(monkeypatch, n_jobs):
    model, _ = _fitted(8, n_estimators=20)  # (more trees than a chunk: threads)
    assert model.debias_ is not None
    model.set_params(n_jobs=n_jobs)
    rng = np.random.default_rng(5)
    S = rng.normal(size=(300, 5))
    fused = [model.predict(S, return_std=True) for _ in range(2)]
    fused.append((model.predict(S[:1]), None))
    with monkeypatch.context() as m:
        m.setattr(regressor, "shorter_reading", lambda model: None)  # (a pass of its own)
        apart = [model.predict(S, return_std=True) for _ in range(2)]
        apart.append((model.predict(S[:1]), None))
    for (mean, std), (mean_apart, std_apart) in zip(fused, apart, strict=True):
        assert mean.tobytes() == mean_apart.tobytes()
        assert std is None or std.tobytes() == std_apart.tobytes()
    assert debias.shorter_reading(model)[0] == model._debias_choice[0]
    model.set_params(debias=None)
    assert debias.shorter_reading(model) is None


def test_refusals():
    model, Ss = _fitted(0)
    params = GaussianPrior(0.1, 0.5, 1.0, 2.0, 1.3, True)
    messages = [upward_messages(t, params)[:2] for t in model._trees]
    out = np.zeros((Ss.shape[0], 4))
    with pytest.raises(ValueError, match="one pair of messages per tree"):
        predict_moments_trees(model._trees, messages, Ss, out, params, 3,
                              shorter_lifetime=0.5, shorter_messages=messages[:1])
    with pytest.raises(ValueError, match="and two more columns"):
        predict_moments_trees(model._trees, messages, Ss, np.zeros((Ss.shape[0], 3)), params,
                              3, shorter_lifetime=0.5, shorter_messages=messages)
    stale = [(m[:-1], v[:-1]) for m, v in messages]
    with pytest.raises(ValueError, match="stale messages"):
        predict_moments_trees(model._trees, messages, Ss, out, params, 3,
                              shorter_lifetime=0.5, shorter_messages=stale)
