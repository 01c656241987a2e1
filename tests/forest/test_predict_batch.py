"""The node-major eta pass of prediction (``core/_batch_walk.pyx``) gives the bits of the plain
walk, with the multi-row box kernel (and its AVX2 / AVX-512 clones) and with the one-row
reference kernel forced (``set_portable_kernels``).

A call of many rows partitions them down each tree and measures every box once against the
rows still outside the boxes below; lean boxes are unions of children's boxes grown from
points. These tests compare it bit for bit with the plain walk (every eta on the way down,
``plain_walk=True``) and with rows predicted one at a time, on lean and full boxes, sample
weights, pruned models, paused leaves (online updates), far rows whose every path node has
eta > 0 (deep trees: more etas than a batch keeps per row), and calls of more rows than a
batch holds. From 128 features the pass marks the dims each row lies outside of and sums an
enclosing box's distance over those alone (``mf_rows_eta_masked``); the portable switch
measures every box over every dim, so comparing both checks the marks too, and a stored box
that does not hold its child's (a hand-made tree) is measured over every dim.
"""

import numpy as np
import pytest

from mondrian import MondrianForestClassifier, MondrianForestRegressor
from mondrian.core._batch_walk import set_portable_kernels
from mondrian.core._walk import walk_path
from mondrian.forest._gaussian import GaussianPrior, predict_moments_trees, upward_messages
from mondrian.forest._hnsp import predict_proba_trees

from _checks import box_min_samples

pytestmark = pytest.mark.exact


@pytest.fixture(params=[False, True], ids=["dispatched", "portable"])
def portable(request):
    old = set_portable_kernels(request.param)
    yield request.param
    set_portable_kernels(old)


def _rows(X, seed, n_far=40):
    rng = np.random.default_rng(seed)
    return np.vstack([X[:60], X[:60] + 1e-2 * rng.normal(size=(60, X.shape[1])),
                      rng.normal(size=(60, X.shape[1])),
                      50.0 * rng.normal(size=(n_far, X.shape[1]))])


def _proba(model, S, plain, step=None, trees=None):
    out = np.zeros((S.shape[0], len(model.classes_)))
    step = step or S.shape[0]
    for start in range(0, S.shape[0], step):
        predict_proba_trees(trees or model._trees, S[start:start + step],
                            out[start:start + step],
                            float(model.discount_factor), model.branch_off_counts == "tables",
                            None, plain)
    return out


def _moments(model, S, plain, hierarchical=True):
    params = GaussianPrior(0.1, 0.5, 1.0, 2.0, 1.3, hierarchical)
    messages = [upward_messages(tree, params, None)[:2] for tree in model._trees]
    out = np.zeros((S.shape[0], 3))
    predict_moments_trees(model._trees, messages, S, out, params, 3, None, plain)
    return out


def _proba_at(model, S, plain, lifetime):
    out = np.zeros((S.shape[0], len(model.classes_)))
    predict_proba_trees(model._trees, S, out, float(model.discount_factor),
                        model.branch_off_counts == "tables", lifetime, plain)
    return out


@pytest.mark.parametrize("k", [0, 2, 32])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n_features", [5, 16, 36])
def test_classifier_batch_is_the_plain_walk(portable, k, weighted, n_features):
    # The classifier batches from 32 features (36: satimage); below (5; 16: letter,
    # pendigits), each row finds its own etas over every box rebuilt once. Both fill the
    # node tables as the rows reach the nodes.
    rng = np.random.default_rng(k)
    X = rng.normal(size=(300, n_features))
    y = (X[:, 0] + X[:, 1] ** 2 > 0.5).astype(int) + (X[:, 2] > 1.0)
    weight = rng.uniform(0.2, 3.0, size=300) if weighted else None
    with box_min_samples(k):
        model = MondrianForestClassifier(n_estimators=3, random_state=k)
        model.fit(X, y, sample_weight=weight)
    S = np.ascontiguousarray(model._validate_X_predict(_rows(X, k)))
    reference = _proba(model, S, True)
    assert _proba(model, S, False).tobytes() == reference.tobytes()
    assert _proba(model, S, False, step=1).tobytes() == reference.tobytes()
    # A few rows per call: their etas node by node, their posteriors along their paths.
    assert 3 * 32 < max(tree.node_count for tree in model._trees)
    assert _proba(model, S, False, step=3).tobytes() == reference.tobytes()
    pruned = model.prune(0.5 * model.lifetime_)
    assert _proba(pruned, S, False).tobytes() == _proba(pruned, S, True).tobytes()
    # Pruned at the call (the tables' leaves are the pruned tree's).
    lifetime = 0.3 * model.lifetime_
    assert (_proba_at(model, S, False, lifetime).tobytes()
            == _proba_at(model, S, True, lifetime).tobytes())
    # Rows in another order: each row's bits are its own (the slots follow the leaves).
    order = rng.permutation(S.shape[0])
    assert _proba(model, S[order], False).tobytes() == reference[order].tobytes()


def test_classifier_paused_leaves_online(portable):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 34))
    y = (X[:, 0] > 0).astype(int)
    with box_min_samples(8):
        model = MondrianForestClassifier(n_estimators=2, random_state=3)
        for i in range(0, 400, 50):
            model.partial_fit(X[i:i + 50], y[i:i + 50], classes=[0, 1])
    S = np.ascontiguousarray(model._validate_X_predict(_rows(X, 3)))
    assert _proba(model, S, False).tobytes() == _proba(model, S, True).tobytes()


def test_deep_paths_and_far_rows_take_the_reference_walk(portable):
    """Far rows have eta > 0 at every node of their path: on trees deeper than the etas a
    batch keeps per row (BATCH_ETAS = 32) such a row is left to walk_etas, the same bits."""
    # Geometric values: each cut splits off a few points, so the paths are long; a constant
    # column (never cut) puts rows with another value in it outside every box.
    x0 = 0.8 ** np.arange(200)
    X = np.c_[x0, np.zeros((200, 33))]
    y = np.arange(200) % 3
    with box_min_samples(4):
        model = MondrianForestClassifier(n_estimators=2, random_state=7, lifetime=1e30)
        model.fit(X, y)
    S = np.ascontiguousarray(model._validate_X_predict(
        np.vstack([np.c_[x0, np.full((200, 33), 5.0)], X])))
    depth = max(len(walk_path(tree, s)["eta"]) for tree in model._trees for s in S)
    assert depth > 33
    assert _proba(model, S, False).tobytes() == _proba(model, S, True).tobytes()
    reg = MondrianForestRegressor(n_estimators=2, random_state=7, lifetime=1e30)
    with box_min_samples(4):
        reg.fit(X, x0)
    R = np.ascontiguousarray(reg._validate_X_predict(np.vstack([np.c_[x0, np.full((200, 33),
                                                                                   5.0)], X])))
    assert _moments(reg, R, False).tobytes() == _moments(reg, R, True).tobytes()


def test_more_rows_than_a_batch(portable):
    rng = np.random.default_rng(11)
    X = rng.normal(size=(200, 40))
    y = (X[:, 0] > 0).astype(int)
    with box_min_samples(16):
        model = MondrianForestClassifier(n_estimators=2, random_state=11).fit(X, y)
    S = np.ascontiguousarray(model._validate_X_predict(
        np.vstack([_rows(X, 11)] * 76)))
    assert S.shape[0] > 16384  # BATCH_ROWS
    fast = _proba(model, S, False)
    assert fast.tobytes() == _proba(model, S, True).tobytes()
    assert fast[:220].tobytes() == _proba(model, S[:220], False).tobytes()


@pytest.mark.parametrize("k", [0, 2, 32])
@pytest.mark.parametrize("hierarchical", [False, True])
@pytest.mark.parametrize("n_features", [5, 130])
def test_regressor_batch_is_the_plain_walk(portable, k, hierarchical, n_features):
    # The regressor reads a batch's rows in leaf order below 128 features, else in their own.
    rng = np.random.default_rng(k + 1)
    X = rng.normal(size=(300, n_features))
    target = X[:, 0] + np.sin(3 * X[:, 1])
    with box_min_samples(k):
        model = MondrianForestRegressor(n_estimators=2, random_state=k).fit(X, target)
    S = np.ascontiguousarray(model._validate_X_predict(_rows(X, k)))
    fast = _moments(model, S, False, hierarchical)
    assert fast.tobytes() == _moments(model, S, True, hierarchical).tobytes()
    # Rows in another order: a row's records and path do not depend on the rows before it.
    order = rng.permutation(S.shape[0])
    assert _moments(model, S[order], False, hierarchical).tobytes() == fast[order].tobytes()
    mean, std = model.predict(S, return_std=True)
    assert np.all(np.isfinite(mean)) and np.all(std > 0.0)


def _with_boxes(tree, boxes):
    """A copy of ``tree`` with its stored boxes replaced, attached to the same points."""
    cls, args, state = tree.__reduce__()
    state["boxes"] = boxes
    copy = cls(*args)
    copy.__setstate__(state)
    return copy


@pytest.mark.parametrize("n_features", [130, 256])
def test_dims_outside_give_the_bits_of_whole_distances(n_features):
    # Rows near the data (outside a box on a few dims) and far (on every dim); marks from
    # 128 features (MASK_MIN_FEATURES), 130: a last word of marks partly used. Then stored
    # boxes shrunk to points around their middles, so that they no longer hold their
    # children's: such a box is measured over every dim, as the portable kernel does (the
    # plain walk, which measures every node on the way down, is not the reference there:
    # the leaf-first walk stops at the first eta 0 whatever the boxes above).
    rng = np.random.default_rng(n_features)
    X = rng.normal(size=(300, n_features))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 1.0)
    with box_min_samples(16):
        model = MondrianForestClassifier(n_estimators=3, random_state=1).fit(X, y)
    S = np.ascontiguousarray(model._validate_X_predict(np.vstack([
        _rows(X, 1), X[:100] + 0.3 * rng.normal(size=(100, n_features))])))
    reference = _proba(model, S, True)
    store = model._ensemble.store
    shrunk = []
    for tree in model._trees:
        boxes = tree.stored_boxes
        slots = tree.box_slots
        left = tree.nodes_array["left_child"]
        inner = [slots[j] for j in range(1, tree.node_count) if slots[j] >= 0 and left[j] >= 0]
        assert inner
        middle = 0.5 * (boxes[inner, 0] + boxes[inner, 1])
        boxes[inner, 0] = np.maximum(boxes[inner, 0], middle - 0.05)
        boxes[inner, 1] = np.minimum(boxes[inner, 1], middle + 0.05)
        copy = _with_boxes(tree, boxes)
        copy.attach_points(store.X, store.rows)
        shrunk.append(copy)
    old = set_portable_kernels(False)
    try:
        fast = _proba(model, S, False)
        fast_shrunk = _proba(model, S, False, trees=shrunk)
        set_portable_kernels(True)
        portable_shrunk = _proba(model, S, False, trees=shrunk)
    finally:
        set_portable_kernels(old)
    assert fast.tobytes() == reference.tobytes()
    assert fast_shrunk.tobytes() == portable_shrunk.tobytes()
    assert fast_shrunk.tobytes() != reference.tobytes()


def test_portable_switch_gives_the_same_public_predictions():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(500, 40))
    y = (X[:, :3].sum(axis=1) > 0).astype(int)
    model = MondrianForestClassifier(n_estimators=3, random_state=5).fit(X, y)
    reg = MondrianForestRegressor(n_estimators=2, random_state=5).fit(X, X[:, 0])
    T = 3.0 * rng.normal(size=(300, 40))
    old = set_portable_kernels(True)
    try:
        slow = model.predict_proba(T), reg.predict(T, return_std=True)
    finally:
        set_portable_kernels(old)
    set_portable_kernels(False)
    try:
        fast = model.predict_proba(T), reg.predict(T, return_std=True)
    finally:
        set_portable_kernels(old)
    assert slow[0].tobytes() == fast[0].tobytes()
    assert slow[1][0].tobytes() == fast[1][0].tobytes()
    assert slow[1][1].tobytes() == fast[1][1].tobytes()


@pytest.mark.parametrize("n_features", [40, 130, 256])
@pytest.mark.parametrize("sparse", [0, 2, 4])
def test_lone_rows_summed_sparsely_give_the_same_bits(n_features, sparse):
    # A last row past the multi-row kernel's groups of four is summed alone over its gaps
    # > 0 (``mf_sparse_rows``: 2, a lone row, by default; 4: up to three rows; 0: never):
    # the bits of the plain walk and of the portable kernel, with and without marks (130,
    # 256: from 128 features; 40 features measure without marks), in calls of 5 and 9 rows
    # (leaves met by one row) and of all.
    from mondrian.core._batch_walk import _set_sparse_rows

    rng = np.random.default_rng(n_features + sparse)
    X = rng.normal(size=(300, n_features))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 1.0)
    with box_min_samples(8):
        model = MondrianForestClassifier(n_estimators=2, random_state=2).fit(X, y)
        reg = MondrianForestRegressor(n_estimators=2, random_state=2).fit(X, X[:, 0])
    S = np.ascontiguousarray(model._validate_X_predict(_rows(X, 3, n_far=10)))
    reference = _proba(model, S, True)
    moments = _moments(reg, S, True)
    old = _set_sparse_rows(sparse)
    old_portable = set_portable_kernels(False)  # (the dispatched kernels, whatever the env)
    try:
        for step in (None, 5, 9):
            assert _proba(model, S, False, step=step).tobytes() == reference.tobytes()
        assert _moments(reg, S, False).tobytes() == moments.tobytes()
        assert _moments(reg, S[:7], False).tobytes() == moments[:7].tobytes()
    finally:
        set_portable_kernels(old_portable)
        _set_sparse_rows(old)
