"""A batched lean classifier tree (32 features or more) keeps every node's box in the
prediction cache as rank codes into each feature's sorted distinct stored values
(``forest/_node_cache.pyx``: ``BoxCoder``, ``encode_boxes``), and its batches measure the
rows against the coded boxes: decoded box by box, or from the rows' ranks
(``core/_code_kernels.h``). The codes must decode to the float boxes bit for bit and the
predictions must be those of the plain walk, under both kernels and both readers, on lean
and full boxes, weights, pruned models, paused leaves, rows far outside the data, after
``partial_fit`` and ``forget``; a bound with no code of its bits (-0.0 beside 0.0) drops the
tree's codes, never a bit. Codes of 2 bytes are kept only under ``_set_wide_codes`` (not
by default); every test but the last runs with them on, so both widths stay checked."""

import numpy as np
import pytest

from mondrian import MondrianForestClassifier
from mondrian.core._batch_walk import set_portable_kernels
from mondrian.forest import _hnsp_cache, _node_cache
from mondrian.forest._hnsp import predict_proba_trees

from _checks import box_min_samples

pytestmark = pytest.mark.exact

D = 36


@pytest.fixture(params=[False, True], ids=["dispatched", "portable"])
def portable(request):
    old = set_portable_kernels(request.param)
    yield request.param
    set_portable_kernels(old)


@pytest.fixture(autouse=True)
def wide_codes():
    old = _hnsp_cache._set_wide_codes(True)
    yield
    _hnsp_cache._set_wide_codes(old)


@pytest.fixture(params=[1, 10**6], ids=["ranks", "decoded"])
def reader(request):
    old = _hnsp_cache._set_rank_min_features(request.param)
    yield request.param
    _hnsp_cache._set_rank_min_features(old)


def _data(seed, n=400, levels=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    if levels is not None:  # (few distinct values: codes of one byte)
        X = np.round(X * levels) / levels
    y = (X[:, 0] + X[:, 1] ** 2 > 0.5).astype(int) + (X[:, 2] > 1.0)
    return X, y


def _rows(model, X, seed):
    rng = np.random.default_rng(seed)
    S = np.vstack([X[:80], X[:80] + 1e-2 * rng.normal(size=(80, D)),
                   rng.normal(size=(60, D)), 50.0 * rng.normal(size=(30, D))])
    return np.ascontiguousarray(model._validate_X_predict(S))


def _proba(model, S, plain=False, cache=None, lifetime=None, step=None):
    out = np.zeros((S.shape[0], len(model.classes_)))
    step = step or S.shape[0]
    for start in range(0, S.shape[0], step):
        predict_proba_trees(model._trees, S[start:start + step], out[start:start + step],
                            float(model.discount_factor), model.branch_off_counts == "tables",
                            lifetime, plain, cache)
    return out


def _reachable(tree):
    nodes = tree._raw_nodes()
    seen, stack = [], [0]
    while stack:
        j = stack.pop()
        seen.append(j)
        if nodes["left_child"][j] >= 0:
            stack += [nodes["left_child"][j], nodes["right_child"][j]]
    return np.sort(seen)


def _check_codes(model, S, lifetime=None, expect_codes=True):
    """Three calls through one cache (ask, build, read) give the plain walk's bits, and
    every kept entry's codes decode to the float boxes of its tree, bit for bit."""
    reference = _proba(model, S, plain=True, lifetime=lifetime)
    cache = _node_cache.PredictCache(0, 1 << 30)
    for _ in range(3):
        assert _proba(model, S, cache=cache, lifetime=lifetime).tobytes() == reference.tobytes()
    # A call of a few rows reads the kept codes too.
    assert (_proba(model, S, cache=cache, lifetime=lifetime, step=3).tobytes()
            == reference.tobytes())
    coded = 0
    for tree, entry in cache._entries.values():
        codes = entry.box_codes
        if codes is None:
            continue
        coded += 1
        keep = _reachable(tree)
        boxes = tree.bounds_array.reshape(tree.node_count, 2 * D)[keep]
        decoded = entry.box_coder.decode(codes[keep])
        assert decoded.tobytes() == boxes.tobytes()
        assert codes.dtype == (np.uint8 if entry.box_coder.code_size == 1 else np.uint16)
    assert (coded == len(model._trees)) if expect_codes else coded == 0
    return cache


@pytest.mark.parametrize("k", [2, 8, 32])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("levels", [None, 4])
def test_codes_decode_to_the_boxes_and_give_the_plain_bits(portable, reader, k, weighted,
                                                            levels):
    X, y = _data(k, levels=levels)
    weight = np.random.default_rng(k).uniform(0.2, 3.0, size=len(y)) if weighted else None
    with box_min_samples(k):
        model = MondrianForestClassifier(n_estimators=3, random_state=k)
        model.fit(X, y, sample_weight=weight)
    S = _rows(model, X, k)
    cache = _check_codes(model, S)
    size = {entry.box_coder.code_size for _, entry in cache._entries.values()}
    assert size == ({1} if levels else {2})
    _check_codes(model, S, lifetime=0.3 * model.lifetime_)
    _check_codes(model.prune(0.5 * model.lifetime_), S)


def test_full_boxes_keep_no_codes(portable, reader):
    X, y = _data(5)
    with box_min_samples(0):
        model = MondrianForestClassifier(n_estimators=2, random_state=5).fit(X, y)
    _check_codes(model, _rows(model, X, 5), expect_codes=False)


def test_paused_leaves_partial_fit_and_forget(portable, reader):
    X, y = _data(3, n=500)
    with box_min_samples(8):
        model = MondrianForestClassifier(n_estimators=2, random_state=3)
        for i in range(0, 400, 50):
            model.partial_fit(X[i:i + 50], y[i:i + 50], classes=[0, 1, 2])
    S = _rows(model, X, 3)
    _check_codes(model, S)
    with box_min_samples(8):
        model.partial_fit(X[400:], y[400:])
    _check_codes(model, S)
    model.forget(X[:120], y[:120])
    _check_codes(model, S)


def test_a_bound_without_a_code_of_its_bits_drops_the_codes(portable, reader):
    # -0.0 and 0.0 are one value to the sorted table: a box bound of the other bits has no
    # code, and its tree falls back to rebuilding the boxes from its points.
    X, y = _data(9)
    X[:, 5] = np.where(np.arange(len(y)) % 2, 0.0, -0.0)
    with box_min_samples(4):
        model = MondrianForestClassifier(n_estimators=3, random_state=9).fit(X, y)
    S = _rows(model, X, 9)
    reference = _proba(model, S, plain=True)
    cache = _node_cache.PredictCache(0, 1 << 30)
    for _ in range(3):
        assert _proba(model, S, cache=cache).tobytes() == reference.tobytes()
    for tree, entry in cache._entries.values():
        if entry.box_codes is not None:  # (a tree whose every bound had a code)
            keep = _reachable(tree)
            decoded = entry.box_coder.decode(entry.box_codes[keep])
            assert decoded.tobytes() == tree.bounds_array.reshape(-1, 2 * D)[keep].tobytes()


def test_estimator_calls_read_the_codes_within_the_budget():
    X, y = _data(4)
    with box_min_samples(8):
        model = MondrianForestClassifier(n_estimators=3, random_state=4).fit(X, y)
    S = _rows(model, X, 4)
    old = _node_cache.CACHE_BYTES
    _node_cache.CACHE_BYTES = 0
    try:
        reference = model.predict_proba(S)
    finally:
        _node_cache.CACHE_BYTES = old
    calls = [model.predict_proba(S) for _ in range(3)]
    assert all(call.tobytes() == reference.tobytes() for call in calls)
    cache = _node_cache.predict_cache(model)
    coder = cache.box_coder(model._trees[0])
    K = len(model.classes_)
    expected = coder.nbytes + sum(
        (t.node_count + 1) * (2 * K + 2) * 8 + 2 * t.node_count * D * 2
        for t in model._trees)
    assert cache.nbytes == expected
    # Floats instead (the switch): the same bits, 8 bytes a bound.
    old = _hnsp_cache.set_box_codes(False)
    try:
        model.set_params(n_estimators=3)  # (a write: a new generation, a new cache)
        calls = [model.predict_proba(S) for _ in range(3)]
    finally:
        _hnsp_cache.set_box_codes(old)
    assert all(call.tobytes() == reference.tobytes() for call in calls)
    assert all(entry.box_codes is None
               for _, entry in _node_cache.predict_cache(model)._entries.values())


@pytest.mark.parametrize("levels", [None, 4])
def test_by_default_only_codes_of_one_byte_are_kept(portable, levels, wide_codes):
    # More than 256 distinct values in a feature: no codes, the boxes rebuilt at every call
    # (the same bits), and no coder built nor counted in the budget (usps: 6 MB per
    # generation); at most 256: codes of one byte.
    X, y = _data(11, levels=levels)
    with box_min_samples(8):
        model = MondrianForestClassifier(n_estimators=2, random_state=11).fit(X, y)
    old = _hnsp_cache._set_wide_codes(False)
    try:
        cache = _check_codes(model, _rows(model, X, 11), expect_codes=levels is not None)
    finally:
        _hnsp_cache._set_wide_codes(old)
    coders = [found[1] for found in cache._coders.values()]
    assert len(coders) == 1
    kept = sum(entry.nbytes for _, entry in cache._entries.values())
    if levels is None:
        assert coders == [None] and cache.nbytes == kept
        # (asked for codes of 2 bytes, the same cache builds them)
        assert cache.box_coder(model._trees[0]).code_size == 2
        assert cache.box_coder(model._trees[0], 1) is None
    else:
        assert coders[0].code_size == 1 and cache.nbytes == kept + coders[0].nbytes
