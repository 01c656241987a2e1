"""The density's leaf values kept in the prediction cache (``log_density_trees_cached``): the
second call of many rows keeps every tree's leaf log densities for the next calls of the same
model; the bits are those of the descents that sum the shares row by row."""

import numpy as np
import pytest

from mondrian import MondrianForestDensity
from mondrian.density._full_cell import log_density_trees, log_density_trees_cached
from mondrian.forest import _node_cache

pytestmark = pytest.mark.exact


def _data(n, seed):
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.normal(size=n), rng.gamma(2.0, size=n), rng.uniform(size=n)])


def _uncached(model, X):
    """``score_samples`` without a cache (a budget of 0 bytes)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_node_cache, "CACHE_BYTES", 0)
        return model.score_samples(X)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_cached_score_samples_give_the_bits_of_uncached_ones(n_jobs):
    X = _data(300, 0)
    model = MondrianForestDensity(n_estimators=5, n_jobs=n_jobs, random_state=0).fit(X)
    # Rows inside and outside the trees' domain, and far away.
    S = np.vstack([_data(150, 1), 4.0 * _data(50, 2), X[:20]])
    expected = _uncached(model, S)
    for _ in range(3):
        assert model.score_samples(S).tobytes() == expected.tobytes()
    assert model.score_samples(S[:1]).tobytes() == expected[:1].tobytes()
    assert model.score_samples(S[:7]).tobytes() == expected[:7].tobytes()
    entries = _node_cache.predict_cache(model)._entries
    assert [key[1][0] for key in entries].count("density") == 5
    # A write starts afresh: the new model's bits.
    model.partial_fit(_data(40, 3))
    expected = _uncached(model, S)
    for _ in range(3):
        assert model.score_samples(S).tobytes() == expected.tobytes()


def test_kept_leaf_values_follow_the_lifetime_and_concentration():
    X = _data(200, 4)
    model = MondrianForestDensity(n_estimators=3, lifetime=6.0, random_state=1).fit(X)
    U = np.ascontiguousarray(model._to_unit(_data(120, 5))[0].clip(0.0, 1.0))
    cache = _node_cache.PredictCache(0, 1 << 30)
    for lifetime in (6.0, 2.5, 0.5, 6.0):
        for concentration in (1.0, 0.1):
            expected = np.empty(len(U))
            log_density_trees(model._trees, U, lifetime, concentration, expected)
            for _ in range(3):
                got = np.empty(len(U))
                log_density_trees_cached(model._trees, U, lifetime, concentration, got, cache)
                assert got.tobytes() == expected.tobytes()
    assert len(cache._entries) == 3 * 3 * 2
    # No room: the descents sum the shares as before.
    small = _node_cache.PredictCache(0, 8)
    got = np.empty(len(U))
    for _ in range(2):
        log_density_trees_cached(model._trees, U, 6.0, 1.0, got, small)
    log_density_trees(model._trees, U, 6.0, 1.0, expected)
    assert got.tobytes() == expected.tobytes() and not small._entries


def test_trees_out_of_creation_order_are_refused_once():
    X = _data(400, 6)
    model = MondrianForestDensity(n_estimators=4, random_state=2).fit(X)
    model.forget(X[::3])  # (its holes are filled by later nodes: children before parents)
    U = np.ascontiguousarray(model._to_unit(_data(100, 7))[0].clip(0.0, 1.0))
    expected = np.empty(len(U))
    log_density_trees(model._trees, U, model._trees[0].lifetime, 1.0, expected)
    cache = _node_cache.PredictCache(0, 1 << 30)
    for _ in range(4):
        got = np.empty(len(U))
        log_density_trees_cached(model._trees, U, model._trees[0].lifetime, 1.0, got, cache)
        assert got.tobytes() == expected.tobytes()
    refused = len(cache._refused)
    assert refused > 0 and len(cache._entries) + refused == 4
    assert cache.nbytes == sum(entry.nbytes for _, entry in cache._entries.values())
