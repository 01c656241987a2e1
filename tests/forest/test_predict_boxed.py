"""A classifier of many features (a node-major batch of rows per tree) keeps every node's box
in the prediction cache when the whole model's would fit its budget, and its batches then read
them (``batch_etas_boxes``) instead of rebuilding from points the boxes that the lean trees do
not store: the same bits as uncached calls, under both kernels; a budget too small for the
boxes keeps the tables of every tree, as before. (Boxes kept as floats here; as codes:
``test_predict_codes.py``.)"""

import numpy as np
import pytest

from mondrian import MondrianForestClassifier
from mondrian.core._batch_walk import set_portable_kernels
from mondrian.forest import _hnsp_cache, _node_cache

from _checks import box_min_samples

pytestmark = pytest.mark.exact

D = 36  # (from 32 features the classifier batches its rows)


@pytest.fixture(autouse=True)
def float_boxes():
    old = _hnsp_cache.set_box_codes(False)
    yield
    _hnsp_cache.set_box_codes(old)


def _model(k, n_trees=4):
    rng = np.random.default_rng(k)
    X = rng.normal(size=(500, D))
    y = (X[:, 0] + X[:, 1] ** 2 > 0.5).astype(int) + (X[:, 2] > 1.0)
    with box_min_samples(k):
        model = MondrianForestClassifier(n_estimators=n_trees, random_state=k).fit(X, y)
    S = np.vstack([X[:150], X[:150] + 0.05 * rng.normal(size=(150, D)),
                   4.0 * rng.normal(size=(60, D))])
    return model, S


def _uncached(model, S):
    old, _node_cache.CACHE_BYTES = _node_cache.CACHE_BYTES, 0
    try:
        return model.predict_proba(S)
    finally:
        _node_cache.CACHE_BYTES = old


def _entry_bytes(tree, K, boxes):
    m = tree.node_count
    # (a record of 2 K + 2 floats per node and one for the root's parent)
    return ((m + 1) * (2 * K + 2) + (2 * m * D if boxes else 0)) * 8


@pytest.mark.parametrize("portable", [False, True])
@pytest.mark.parametrize("k", [8, 72])
def test_cached_boxes_give_the_bits_of_uncached_calls(k, portable):
    model, S = _model(k)
    old = set_portable_kernels(portable)
    try:
        reference = _uncached(model, S)
        calls = [model.predict_proba(S) for _ in range(3)]  # asks, builds, reads
        lifetime = [model.predict_proba(S[::3]) for _ in range(3)]
    finally:
        set_portable_kernels(old)
    cache = _node_cache.predict_cache(model)
    K = len(model.classes_)
    assert cache.nbytes == sum(_entry_bytes(tree, K, True) for tree in model._trees)
    for call in calls:
        assert call.tobytes() == reference.tobytes()
    assert all(call.tobytes() == _uncached(model, S[::3]).tobytes() for call in lifetime)


def test_a_budget_too_small_for_the_boxes_keeps_every_tree_s_tables():
    model, S = _model(8)
    K = len(model.classes_)
    tables = sum(_entry_bytes(tree, K, False) for tree in model._trees)
    reference = _uncached(model, S)
    old, _node_cache.CACHE_BYTES = _node_cache.CACHE_BYTES, tables + 1000
    try:
        calls = [model.predict_proba(S) for _ in range(3)]
        cache = _node_cache.predict_cache(model)
        assert len(cache._entries) == len(model._trees) and cache.nbytes == tables
    finally:
        _node_cache.CACHE_BYTES = old
    for call in calls:
        assert call.tobytes() == reference.tobytes()
