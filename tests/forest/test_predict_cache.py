"""The per-tree prediction cache (``forest/_node_cache.pyx``): the second call of many rows keeps
each tree's node tables (and, on lean trees of few features, every box) for the next calls of
the same model. Cached calls give the bits of uncached ones; every write (fit,
partial_fit, forget, set_params) and every pickle or copy starts afresh; the cache is bounded
and never pickled; concurrent readers share it.
"""

import copy
import pickle
import threading

import numpy as np
import pytest

from mondrian import MondrianForestClassifier
from mondrian.estimator.locking import model_lock, read_locked
from mondrian.forest import _node_cache

from _checks import box_min_samples, reads_beside_writes

pytestmark = pytest.mark.exact


@pytest.fixture
def budget():
    """Set ``CACHE_BYTES`` for a test (restored after)."""
    old = _node_cache.CACHE_BYTES

    def set_budget(nbytes):
        _node_cache.CACHE_BYTES = nbytes

    yield set_budget
    _node_cache.CACHE_BYTES = old


def _data(seed, n=600, d=6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + X[:, 1] ** 2 > 0.5).astype(int) + (X[:, 2] > 1.0)
    return X, y


def _rows(X, seed):
    rng = np.random.default_rng(seed)
    return np.vstack([X[:200], X[:200] + 0.05 * rng.normal(size=(200, X.shape[1])),
                      3.0 * rng.normal(size=(100, X.shape[1]))])


def _uncached(model, X):
    old = _node_cache.CACHE_BYTES
    _node_cache.CACHE_BYTES = 0
    try:
        return model.predict_proba(X)
    finally:
        _node_cache.CACHE_BYTES = old


def _cache(model):
    return _node_cache.predict_cache(model)


def _twice(model, S):
    """Predict twice: the second call fills the cache."""
    model.predict_proba(S)
    model.predict_proba(S)


def _fitted(k, d, n_estimators):
    """A classifier on ``_data(k, d=d)`` (lean boxes below ``k`` points), its test rows and
    their uncached prediction."""
    X, y = _data(k, d=d)
    with box_min_samples(k):
        model = MondrianForestClassifier(n_estimators=n_estimators, random_state=k).fit(X, y)
    S = _rows(X, k)
    return model, S, _uncached(model, S)


@pytest.mark.parametrize("k", [0, 8])
@pytest.mark.parametrize("d", [6, 36])
def test_cached_calls_give_the_bits_of_uncached_ones(k, d):
    model, S, reference = _fitted(k, d, 4)
    first = model.predict_proba(S)  # asks for the entries (a model predicted once keeps none)
    assert not _cache(model)._entries
    second = model.predict_proba(S)  # builds them
    cache = _cache(model)
    assert len(cache._entries) == 4 and cache.nbytes > 0
    third = model.predict_proba(S)  # reads them
    assert first.tobytes() == reference.tobytes()
    assert second.tobytes() == reference.tobytes()
    assert third.tobytes() == reference.tobytes()
    # Another lifetime (a lifetime path's reads): other entries, exact too.
    lifetime = 0.5
    S_scaled = model._validate_X_predict(S)
    with read_locked(model):
        at = [model._proba_scaled(S_scaled, lifetime) for _ in range(3)]
    assert len(_cache(model)._entries) == 8
    _node_cache.CACHE_BYTES, old = 0, _node_cache.CACHE_BYTES
    try:
        with read_locked(model):
            expected = model._proba_scaled(S_scaled, lifetime)
    finally:
        _node_cache.CACHE_BYTES = old
    assert at[0].tobytes() == expected.tobytes() == at[1].tobytes() == at[2].tobytes()
    assert at[0].tobytes() != reference.tobytes()
    # A call of few rows reads the kept tables (and boxes) of the calls of many.
    assert model.predict_proba(S[:2]).tobytes() == reference[:2].tobytes()


@pytest.mark.parametrize("k", [0, 8])
@pytest.mark.parametrize("d", [6, 36])
def test_calls_of_few_rows_read_kept_tables_but_never_build_them(k, d):
    model, S, reference = _fitted(k, d, 3)
    few = [S[:2], S[450:455], S[-9:]]  # (inside the data, near it, far outside)
    nodes = min(tree.node_count for tree in model._trees)
    assert all(len(rows) * 32 < nodes for rows in few)  # (below the tabulating threshold)
    for _ in range(3):
        for rows in few:
            model.predict_proba(rows)
    assert not _cache(model)._entries  # (calls of few rows build nothing)
    _twice(model, S)
    entries = dict(_cache(model)._entries)
    assert len(entries) == 3
    for start, rows in zip((0, 450, len(S) - 9), few, strict=True):
        got = model.predict_proba(rows)
        assert got.tobytes() == reference[start:start + len(rows)].tobytes()
    assert _cache(model)._entries == entries


def test_every_write_starts_a_new_generation():
    X, y = _data(1)
    model = MondrianForestClassifier(n_estimators=3, random_state=1).fit(X[:300], y[:300])
    S = _rows(X, 1)
    _twice(model, S)
    before = _cache(model)
    assert before._entries
    model.partial_fit(X[300:], y[300:])
    assert model_lock(model).derived is None  # (dropped when the write began)
    assert _cache(model) is not before and not _cache(model)._entries
    assert model.predict_proba(S).tobytes() == _uncached(model, S).tobytes()
    _twice(model, S)
    model.set_params(discount_factor=2.0)
    assert not _cache(model)._entries
    assert model.predict_proba(S).tobytes() == _uncached(model, S).tobytes()
    _twice(model, S)
    model.forget(X[:100], y[:100])
    assert not _cache(model)._entries
    assert model.predict_proba(S).tobytes() == _uncached(model, S).tobytes()
    _twice(model, S)
    model.fit(X[100:], y[100:])
    for _ in range(3):
        assert model.predict_proba(S).tobytes() == _uncached(model, S).tobytes()


def test_the_cache_is_not_part_of_the_model():
    X, y = _data(2)
    model = MondrianForestClassifier(n_estimators=3, random_state=2).fit(X, y)
    S = _rows(X, 2)
    data = pickle.dumps(model)
    reference = model.predict_proba(S)
    _twice(model, S)
    assert _cache(model)._entries
    assert pickle.dumps(model) == data
    for other in (pickle.loads(data), copy.deepcopy(model)):
        assert _cache(other) is None or not _cache(other)._entries
        assert other.predict_proba(S).tobytes() == reference.tobytes()
    # A shallow copy shares the trees and their lock, so it reads the same cache.
    shallow = copy.copy(model)
    assert _cache(shallow) is _cache(model)
    assert shallow.predict_proba(S).tobytes() == reference.tobytes()


def test_a_read_inside_a_write_does_not_use_the_cache():
    X, y = _data(3)
    model = MondrianForestClassifier(n_estimators=2, random_state=3).fit(X, y)
    seen = []

    class Probe(MondrianForestClassifier):
        def fit(self, X, y, sample_weight=None):
            super().fit(X, y, sample_weight)
            seen.append(_node_cache.predict_cache(self))
            return self

    Probe(n_estimators=2, random_state=3).fit(X, y)
    assert seen and all(cache is None for cache in seen)
    assert _node_cache.predict_cache(model) is not None


def test_the_budget_bounds_the_cache(budget):
    X, y = _data(4)
    model = MondrianForestClassifier(n_estimators=5, random_state=4).fit(X, y)
    S = _rows(X, 4)
    reference = _uncached(model, S)
    m = max(tree.node_count for tree in model._trees)
    per_tree = ((m + 1) * 8 + 2 * m * X.shape[1]) * 8  # (tables: records of 2 K + 2; boxes)
    budget(2 * per_tree)
    for _ in range(3):
        assert model.predict_proba(S).tobytes() == reference.tobytes()
    cache = _cache(model)
    assert 1 <= len(cache._entries) <= 2 and cache.nbytes <= 2 * per_tree
    assert cache.nbytes == sum(entry.nbytes for _, entry in cache._entries.values())
    budget(0)
    assert _cache(model) is None
    assert model.predict_proba(S).tobytes() == reference.tobytes()


def test_threads_share_the_cache_and_its_bits():
    X, y = _data(5)
    model = MondrianForestClassifier(n_estimators=6, random_state=5, n_jobs=2).fit(X, y)
    S = _rows(X, 5)
    reference = _uncached(model, S)
    results, barrier = [], threading.Barrier(4)

    def read():
        barrier.wait()
        for _ in range(3):
            results.append(model.predict_proba(S).tobytes())

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [reference.tobytes()] * 12
    cache = _cache(model)
    assert len(cache._entries) == 6
    assert cache.nbytes == sum(entry.nbytes for _, entry in cache._entries.values())


def test_reads_beside_a_writer_see_whole_models():
    X, y = _data(6)
    model = MondrianForestClassifier(n_estimators=3, random_state=6).fit(X[:200], y[:200])
    S = _rows(X, 6)
    seen = []

    def read():
        seen.append(model.predict_proba(S).tobytes())

    def write():
        for start in range(200, 600, 100):
            model.partial_fit(X[start:start + 100], y[start:start + 100])

    assert reads_beside_writes(read, write) == []
    # Every read gave the bits of one of the models the writer went through.
    states = [MondrianForestClassifier(n_estimators=3, random_state=6).fit(X[:200], y[:200])]
    for start in range(200, 600, 100):
        states.append(copy.deepcopy(states[-1]).partial_fit(X[start:start + 100],
                                                            y[start:start + 100]))
    allowed = {_uncached(state, S).tobytes() for state in states}
    assert set(seen) <= allowed
    assert model.predict_proba(S).tobytes() == _uncached(model, S).tobytes()


@pytest.mark.parametrize("k", [0, 8])
def test_regressor_groups_and_cached_boxes_keep_the_bits(k):
    """A regressor call of many rows over few features walks its rows in groups over every
    box (stored, or a lean tree's kept in the cache): the bits of the node-major pass, of the
    plain walk, and of rows one at a time, with and without the cache, debiased too."""
    from mondrian import MondrianForestRegressor
    from mondrian.forest._gaussian import GaussianPrior, predict_moments_trees, upward_messages

    rng = np.random.default_rng(k)
    X = rng.normal(size=(500, 5))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + 0.1 * rng.normal(size=500)
    with box_min_samples(k):
        model = MondrianForestRegressor(n_estimators=3, random_state=k).fit(X, y)
    S = _rows(X, k)
    Ss = np.ascontiguousarray(model._validate_X_predict(S))
    params = GaussianPrior(0.1, 0.5, 1.0, 2.0, 1.3, True)
    messages = [upward_messages(tree, params, None)[:2] for tree in model._trees]

    def moments(plain, cache=None, step=None, lifetime=None):
        out = np.zeros((Ss.shape[0], 3))
        step = step or Ss.shape[0]
        for start in range(0, Ss.shape[0], step):
            predict_moments_trees(model._trees, messages, Ss[start:start + step],
                                  out[start:start + step], params, 3, lifetime, plain,
                                  cache=cache)
        return out

    reference = moments(True)
    cache = _node_cache.PredictCache(0, 1 << 30)
    for _ in range(3):
        assert moments(False, cache).tobytes() == reference.tobytes()
    assert len(cache._entries) == (3 if k else 0)
    assert moments(False).tobytes() == reference.tobytes()
    assert moments(False, cache, step=1).tobytes() == reference.tobytes()
    assert moments(False, cache, step=7).tobytes() == reference.tobytes()
    # Calls of few rows read the kept boxes but never build them.
    few = _node_cache.PredictCache(0, 1 << 30)
    assert all(7 * 32 < tree.node_count for tree in model._trees)
    for _ in range(3):
        assert moments(False, few, step=7).tobytes() == reference.tobytes()
    assert not few._entries and not few.nbytes
    # Pruned at the call: the same boxes, other leaves.
    assert (moments(False, cache, lifetime=0.5).tobytes()
            == moments(True, lifetime=0.5).tobytes())
    # Through the estimator (its debiased combination reads a shorter lifetime too).
    expected = _uncached_predict(model, S)
    for _ in range(3):
        got = model.predict(S, return_std=True)
        assert got[0].tobytes() == expected[0].tobytes()
        assert got[1].tobytes() == expected[1].tobytes()


def _uncached_predict(model, X):
    old = _node_cache.CACHE_BYTES
    _node_cache.CACHE_BYTES = 0
    try:
        return model.predict(X, return_std=True)
    finally:
        _node_cache.CACHE_BYTES = old


@pytest.mark.parametrize("text", ["lots", "-1", "1.5"])
def test_budget_from_a_bad_environment_value_is_refused(monkeypatch, text):
    monkeypatch.setenv("MONDRIAN_PREDICT_CACHE_BYTES", text)
    with pytest.raises(ValueError, match="MONDRIAN_PREDICT_CACHE_BYTES"):
        _node_cache._budget_from_environment()


def test_budget_from_the_environment(monkeypatch):
    monkeypatch.delenv("MONDRIAN_PREDICT_CACHE_BYTES", raising=False)
    assert _node_cache._budget_from_environment() == 1 << 30
    monkeypatch.setenv("MONDRIAN_PREDICT_CACHE_BYTES", "0")
    assert _node_cache._budget_from_environment() == 0
