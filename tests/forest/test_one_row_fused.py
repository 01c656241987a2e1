"""The classifier's fused one-row prediction (``forest/_hnsp_one.predict_proba_row``) and the
path prefetch of the one-row readers (``core/_warm.pxd``): the bits of the general routes for
every input they take, None (the general route, its errors) for every other input."""

import numpy as np
import pytest

from mondrian import MondrianForestClassifier, MondrianTreeClassifier
from mondrian.core.feature_map import MAX_SCALED
from mondrian.forest._hnsp import predict_proba_trees
from mondrian.forest._hnsp_one import predict_proba_row


def _learnt(n=400, d=5, model=None, **params):
    rng = np.random.RandomState(0)
    X = rng.rand(n, d)
    y = (X[:, 0] + 0.3 * X[:, 1] > 0.6).astype(int) + (X[:, 2] > 0.7) + 2 * (X[:, 3] > 0.9)
    if model is None:
        model = MondrianForestClassifier(**{"n_estimators": 4, "random_state": 0, **params})
    for row, label in zip(X, y, strict=True):
        model.learn_one(row, int(label))
    return model, X


def _probes(d, seed=1):
    rng = np.random.RandomState(seed)
    return np.vstack([rng.rand(25, d), rng.rand(5, d) * 6 - 3, np.full((1, d), 1e300)])


def _general(model, row):
    """The general one-row route: the full validation, the feature map, _proba_scaled."""
    return model._proba_scaled(model._scaler.transform(row[None, :], clip=True))[0]


def _fused(model, row):
    fm = model._ensemble.feature_map
    return predict_proba_row(model._trees, row, fm.offset, fm.scale, fm.weights, MAX_SCALED,
                             float(model.discount_factor),
                             model.branch_off_counts == "tables", len(model.classes_))


@pytest.mark.parametrize("params", [
    {},
    {"n_estimators": 20},  # more trees than one prefetch group (WARM_TREES)
    {"branch_off_counts": "tables", "discount_factor": 3.0},
    {"feature_weights": np.array([1.0, 2.0, 0.5, 1.0, 3.0])},
    {"lifetime": 2.0},
])
def test_fused_prediction_is_the_general_route_bit_for_bit(params):
    model, X = _learnt(**params)
    for row in np.vstack([_probes(X.shape[1]), X[:5]]):
        fused = _fused(model, row)
        assert fused is not None
        general = _general(model, row)
        assert fused.tobytes() == general.tobytes()
        assert model._proba_one(row).tobytes() == general.tobytes()
        assert model.predict_proba(row[None, :])[0].tobytes() == general.tobytes()
        one = model.predict_proba_one(row)
        assert np.array([one[c] for c in model.classes_]).tobytes() == general.tobytes()
        assert model.predict_one(row) == model.classes_[int(np.argmax(general))]


def test_fused_prediction_reads_strided_rows_dicts_and_single_trees():
    model, X = _learnt()
    wide = np.repeat(_probes(X.shape[1]), 2, axis=1)
    for row in wide:
        strided = row[::2]  # a view with a stride of two floats
        assert not strided.flags.c_contiguous
        assert _fused(model, strided).tobytes() == _general(model, strided.copy()).tobytes()
    names = [f"f{i}" for i in range(X.shape[1])]
    named = MondrianForestClassifier(n_estimators=3, random_state=0)
    rng = np.random.RandomState(3)
    for _ in range(200):
        row = rng.rand(X.shape[1])
        named.learn_one(dict(zip(names, row, strict=True)), int(row[0] > 0.5))
    for row in _probes(X.shape[1]):
        proba = named.predict_proba_one(dict(zip(names, row, strict=True)))
        assert np.array(list(proba.values())).tobytes() == _general(named, row).tobytes()
    tree, _ = _learnt(model=MondrianTreeClassifier(random_state=0))
    for row in _probes(X.shape[1]):
        assert tree._proba_one(row).tobytes() == _general(tree, row).tobytes()


def test_fused_prediction_refuses_what_the_general_route_must_decide():
    model, X = _learnt()
    fm = model._ensemble.feature_map
    row = X[0]
    args = (fm.offset, fm.scale, fm.weights, MAX_SCALED, 1.0, False, len(model.classes_))
    refused = [
        list(row), row.astype(np.float32), row[None, :], row[:-1], np.r_[row, 0.0],
        np.where(np.arange(len(row)) == 2, np.nan, row), np.r_[np.inf, row[1:]],
    ]
    for bad in refused:
        assert predict_proba_row(model._trees, bad, *args) is None
    assert predict_proba_row([], row, *args) is None
    wrong_k = (*args[:-1], len(model.classes_) + 1)
    assert predict_proba_row(model._trees, row, *wrong_k) is None
    # the estimator then takes the general route: its errors, its conversions
    with pytest.raises(ValueError, match="NaN or infinity"):
        model.predict_one(np.r_[np.nan, row[1:]])
    with pytest.raises(ValueError, match="features"):
        model.predict_one(row[:-1])
    assert model._proba_one(list(row)).tobytes() == _general(model, row).tobytes()


def test_prefetched_one_row_batch_is_the_unprefetched_route():
    """predict_proba_trees warms the paths of a one-row call only: a row predicted alone and
    inside a batch (no prefetch) has the same bits."""
    model, X = _learnt(n_estimators=20)
    probes = model._scaler.transform(_probes(X.shape[1]), clip=True)
    K = len(model.classes_)
    batch = np.zeros((len(probes), K))
    predict_proba_trees(model._trees, probes, batch, 1.0, False, None, plain_walk=True)
    pruned = np.zeros((len(probes), K))  # read at a lifetime that prunes the trees
    predict_proba_trees(model._trees, probes, pruned, 1.0, False, 0.5, plain_walk=True)
    for i, row in enumerate(probes):
        one = np.zeros((1, K))
        predict_proba_trees(model._trees, np.ascontiguousarray(row[None, :]), one, 1.0, False)
        assert one[0].tobytes() == batch[i].tobytes()
        one = np.zeros((1, K))
        predict_proba_trees(model._trees, np.ascontiguousarray(row[None, :]), one, 1.0, False,
                            0.5)
        assert one[0].tobytes() == pruned[i].tobytes()
