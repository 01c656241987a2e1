"""The grouped walk of prediction (``core/_group_walk.pxd``: a group of rows' descents side by
side, then their etas from the leaves up, the distances side by side, a reader running the
stages a group apart) gives each row the path, etas and top of the one-row walk
(``walk_etas``) byte for byte: the classifier's and the regressor's trees, lean and full
boxes, every count of rows around the group size, rows far outside every box, a shorter
lifetime, the dispatched distances and the portable loop. The two models' reads through it
give the bits of their plain walks."""

import numpy as np
import pytest

from mondrian import MondrianForestClassifier, MondrianForestRegressor
from mondrian.core._batch_walk import set_portable_kernels
from mondrian.core._group_walk import group_walk, leaf_etas
from mondrian.forest import _node_cache
from mondrian.forest._gaussian import GaussianPrior, predict_moments_trees, upward_messages
from mondrian.forest._hnsp import predict_proba_trees

from _checks import box_min_samples

pytestmark = pytest.mark.exact

ROWS = (1, 4, 15, 16, 17, 31, 32, 33, 48, 49, 75)


def _model(kind, k, d=4):
    rng = np.random.default_rng(k + (kind == "regressor"))
    X = rng.normal(size=(300, d))
    with box_min_samples(k):
        if kind == "regressor":
            model = MondrianForestRegressor(n_estimators=2, random_state=k)
            model.fit(X, X[:, 0] + np.sin(2 * X[:, 1]))
        else:
            model = MondrianForestClassifier(n_estimators=2, random_state=k)
            model.fit(X, np.digitize(X[:, 0] - 0.5 * X[:, 2], [-1.0, 0.0, 1.0]))
    # Rows on the data, beside it, and far outside every box (every node measured).
    S = np.vstack([X[:30] + 1e-3 * rng.normal(size=(30, d)), 30.0 * rng.normal(size=(15, d)),
                   X[30:60]])
    return model, np.ascontiguousarray(model._validate_X_predict(S))


def _same(got, want):
    for key in ("length", "top", "path", "etas"):
        assert got[key].tobytes() == want[key].tobytes(), key


@pytest.mark.parametrize("kind", ["classifier", "regressor"])
@pytest.mark.parametrize("k", [0, 4])
@pytest.mark.parametrize("portable", [False, True])
@pytest.mark.parametrize("d", [4, 31])  # (31: a whole block of the distances and a tail)
def test_grouped_walk_is_the_one_row_walk(kind, k, portable, d):
    model, S = _model(kind, k, d)
    for tree in model._trees:
        assert (tree.box_count == tree.node_count) == (k == 0)
        every = np.ascontiguousarray(tree.bounds_array.reshape(tree.node_count, -1))
        sources = [(every, None)]
        if k == 0:  # (the stored boxes through their slots, as the readers take them)
            sources.append((np.ascontiguousarray(tree.stored_boxes.reshape(
                tree.box_count, -1)), tree.box_slots))
        lifetimes = (None, 0.5 * float(tree.lifetime))
        for lifetime in lifetimes:
            want = leaf_etas(tree, S, lifetime)
            assert np.any(want["top"] > 0) and np.any(want["top"] == 0)
            for boxes, slots in sources:
                for rows in ROWS:
                    got = group_walk(tree, S[:rows], boxes, slots, lifetime, portable)
                    _same(got, {key: value[:rows] for key, value in want.items()})


def test_grouped_walk_keeps_no_path_deeper_than_the_walk():
    """A path deeper than WALK_DEPTH_MAX is left to the plain walk (length 0, top -1), as
    ``walk_etas`` leaves it; the other rows of its group are walked as usual."""
    # Halving values: most cuts split off the largest point, so the paths are long.
    x0 = 0.5 ** np.arange(400)
    X = np.c_[x0, np.zeros((400, 3))]
    with box_min_samples(0):
        model = MondrianForestClassifier(n_estimators=1, random_state=7).fit(X, np.arange(400) % 3)
    tree = model._trees[0]
    S = np.ascontiguousarray(model._validate_X_predict(
        np.vstack([np.c_[x0[:40], np.full((40, 3), 5.0)], X[:40], X[-20:]])))
    want = leaf_etas(tree, S)
    assert np.any(want["length"] == 0) and np.any(want["length"] > 0)
    every = np.ascontiguousarray(tree.bounds_array.reshape(tree.node_count, -1))
    _same(group_walk(tree, S, every), want)


def test_group_walk_refuses_missing_boxes():
    model, S = _model("classifier", 0)
    tree = model._trees[0]
    every = np.ascontiguousarray(tree.bounds_array.reshape(tree.node_count, -1))
    with pytest.raises(ValueError, match="every node needs a box"):
        group_walk(tree, S, every[:-1])
    with pytest.raises(ValueError, match="every node needs a box"):
        group_walk(tree, S, np.ascontiguousarray(every[:, :-2]))


@pytest.mark.parametrize("k", [0, 4])
@pytest.mark.parametrize("portable", [False, True])
def test_both_models_read_through_the_grouped_walk_give_the_plain_walk(k, portable):
    """The classifier's tabled calls and the regressor's calls over every box (stored, or
    kept in the prediction cache) walk their rows in groups: the bits of the plain walk
    (every eta on the way down) for every count of rows around the group size."""
    classifier, S = _model("classifier", k)
    regressor, R = _model("regressor", k)
    params = GaussianPrior(0.1, 0.5, 1.0, 2.0, 1.3, True)
    messages = [upward_messages(tree, params, None)[:2] for tree in regressor._trees]

    def proba(rows, plain):
        out = np.zeros((rows, len(classifier.classes_)))
        predict_proba_trees(classifier._trees, S[:rows], out,
                            float(classifier.discount_factor), False, None, plain)
        return out

    def moments(rows, plain, cache):
        out = np.zeros((rows, 3))
        predict_moments_trees(regressor._trees, messages, R[:rows], out, params, 3, None,
                              plain, cache=cache)
        return out

    old = set_portable_kernels(portable)
    try:
        full = _node_cache.PredictCache(0, 1 << 30)
        for _ in range(2):  # (filled by calls of every row: then every box at hand)
            moments(len(R), False, full)
        if k:  # (a lean tree's boxes kept; a full tree's are read where they are stored)
            assert all(full.find(tree, ("boxes",)) is not None for tree in regressor._trees)
        for rows in ROWS[1:]:
            assert proba(rows, False).tobytes() == proba(rows, True).tobytes(), rows
            cache = _node_cache.PredictCache(0, 1 << 30)
            plain = moments(rows, True, None).tobytes()
            assert moments(rows, False, full).tobytes() == plain, rows
            for _ in range(3):  # (a cache of its own filled, then read)
                assert moments(rows, False, cache).tobytes() == plain, rows
    finally:
        set_portable_kernels(old)
