"""The streaming classifier's one-row loop (issue 25): the inlined one-row prediction and the
builders' store checks on acquired views give the bits and the errors of the general routes."""

import pickle

import numpy as np
import pytest

from mondrian import MondrianForestClassifier
from mondrian.core._tree import extend_trees
from mondrian.core.ensemble import fail_after_trees


def _stream(n=300, d=5, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.rand(n, d)
    y = (X[:, 0] + 0.3 * X[:, 1] > 0.6).astype(int) + (X[:, 2] > 0.7)
    return X, y


def _learnt(n=300, **params):
    X, y = _stream(n)
    model = MondrianForestClassifier(n_estimators=4, random_state=0, **params)
    for row, label in zip(X, y, strict=True):
        model.learn_one(row, int(label))
    return model, X, y


@pytest.mark.parametrize("smoothing", ["hnsp", "dirichlet"])
def test_one_row_prediction_is_the_batch_route_bit_for_bit(smoothing):
    model, X, _ = _learnt(smoothing=smoothing)
    rng = np.random.RandomState(1)
    tests = np.vstack([rng.rand(20, X.shape[1]), X[:5], rng.rand(3, X.shape[1]) * 4 - 2])
    assert model._fast_scaled_row(tests[0], clip=True) is not None  # the fast path is on
    for row in tests:
        one = model.predict_proba_one(row)
        batch = model.predict_proba(row[None, :])[0]
        # the general one-row route (the scaled row through _proba_scaled)
        general = model._proba_scaled(model._scaler.transform(row[None, :], clip=True))[0]
        got = np.array([one[c] for c in model.classes_])
        assert got.tobytes() == batch.tobytes() == general.tobytes()
        assert model.predict_one(row) == model.classes_[int(np.argmax(batch))]
        # a list takes the full validation route: the same bits
        assert model._proba_one(list(row)).tobytes() == batch.tobytes()


def test_streamed_model_matches_partial_fit_and_pickles_alike():
    model, X, y = _learnt()
    other = MondrianForestClassifier(n_estimators=4, random_state=0)
    for i in range(len(y)):
        other.partial_fit(X[i : i + 1], y[i : i + 1], classes=None if i else [0, 1, 2])
    probe = np.random.RandomState(2).rand(50, X.shape[1])
    assert model.predict_proba(probe).tobytes() == other.predict_proba(probe).tobytes()
    assert pickle.loads(pickle.dumps(model)).predict_proba(probe).tobytes() == (
        model.predict_proba(probe).tobytes())


@pytest.mark.parametrize("after", [0, 2])
def test_failed_one_row_update_leaves_the_model_unchanged(after):
    model, X, y = _learnt()
    assert model._frozen_stream()  # the one-row update path (add_scaled_logged)
    before = pickle.dumps(model)
    fail_after_trees(after, MemoryError)
    try:
        with pytest.raises(MemoryError):
            model.learn_one(X[3] * 0.5, int(y[3]))
    finally:
        fail_after_trees(None)
    assert pickle.dumps(model) == before
    model.learn_one(X[3] * 0.5, int(y[3]))  # and it still learns
    assert pickle.dumps(model) != before


def test_builder_store_checks_raise_as_before_and_change_nothing():
    model, _, _ = _learnt()
    ensemble = model._ensemble
    X, rows, trees = ensemble.store.X, ensemble.store.rows, ensemble.trees
    before = [t.node_count for t in trees]
    n = X.shape[0]
    cases = [
        (np.zeros((n, X.shape[1] + 1)), rows, np.array([0], dtype=np.intp),
         f"store has {X.shape[1] + 1} features"),
        (X, np.zeros((n, rows.shape[1] + 1)), np.array([0], dtype=np.intp),
         "rows must have shape"),
        (X, rows[:-1], np.array([0], dtype=np.intp), "rows must have shape"),
        (X, rows, np.array([n], dtype=np.intp), "indices out of the store's range"),
        (X, rows, np.array([-1], dtype=np.intp), "indices out of the store's range"),
    ]
    for X_bad, rows_bad, indices, message in cases:
        with pytest.raises(ValueError, match=message):
            extend_trees(trees, X_bad, rows_bad, indices)
        with pytest.raises(ValueError, match=message):
            trees[0].extend(X_bad, rows_bad, indices)
        with pytest.raises(ValueError, match=message):
            trees[0]._check_store(X_bad, rows_bad, indices)
    assert [t.node_count for t in trees] == before
    trees[0]._check_store(X, rows, np.arange(n, dtype=np.intp))  # a valid store passes
