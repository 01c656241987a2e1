"""Classes discovered one at a time (issue 11): exactness guards and the cost of widening.

A stream that meets its classes one by one must give the model a stream told every class up
front (``classes=``) would give, bit for bit: ``predict``, ``predict_proba``, a pickle round trip
followed by more learning, and ``merge_forests``. The cost tests count the full rewrites of the
value rows when 200 classes arrive one at a time (``learn_one``) or a few per batch
(``partial_fit``): classes keep their arrival column, with spare zero columns, and the width
doubles when they run out, so O(log 200) rewrites instead of one per class.
"""

import pickle

import numpy as np
import pytest

from mondrian import MondrianForestClassifier, merge_forests
from mondrian.core.store import DataStore

pytestmark = pytest.mark.exact


def _stream(n_classes, per_class, seed, order):
    """Samples whose labels first appear in ``order`` (a new class every ``per_class`` rows)."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.asarray(order), per_class)
    rng.shuffle(y[per_class:])  # later rows mix all the classes seen so far and new ones
    X = rng.normal(size=(y.shape[0], 3)) + 0.3 * y[:, None]
    return X, y


def _forest(**kw):
    return MondrianForestClassifier(n_estimators=4, lifetime=2.0, random_state=7, **kw)


ORDERS = {
    "ascending": [0, 1, 2, 3, 4],
    "new_first": [3, 4, 1, 0, 2],  # 1 and 0 sort before every class seen so far
}


def _same(a, b, X):
    np.testing.assert_array_equal(a.classes_, b.classes_)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


@pytest.mark.parametrize("order", ORDERS)
def test_learn_one_stream_matches_classes_up_front(order):
    X, y = _stream(5, 6, 0, ORDERS[order])
    grown, told = _forest(), _forest()
    classes = np.arange(5)
    for i in range(y.shape[0]):
        grown.learn_one(X[i], y[i])
        told.learn_one(X[i], y[i], classes=classes)
        if i >= 6 and i % 5 == 0:
            seen = np.unique(y[: i + 1])
            np.testing.assert_array_equal(grown.classes_, seen)
            # The told model has every column; its columns of unseen classes hold the prior.
            p_told = told.predict_proba(X)
            assert p_told.shape[1] == 5
    Xt = np.random.default_rng(1).normal(size=(40, 3))
    _same(grown, told, Xt)


@pytest.mark.parametrize("order", ORDERS)
def test_partial_fit_batches_match_classes_up_front(order):
    X, y = _stream(5, 8, 2, ORDERS[order])
    grown, told = _forest(), _forest()
    for start in range(0, y.shape[0], 8):
        grown.partial_fit(X[start:start + 8], y[start:start + 8])
        told.partial_fit(X[start:start + 8], y[start:start + 8], classes=np.arange(5))
    _same(grown, told, np.random.default_rng(3).normal(size=(40, 3)))


def test_pickle_round_trip_then_more_learning():
    X, y = _stream(5, 6, 4, ORDERS["new_first"])
    grown, told = _forest(), _forest()
    half = 15
    for i in range(half):
        grown.learn_one(X[i], y[i])
    grown = pickle.loads(pickle.dumps(grown))
    for i in range(half, y.shape[0]):
        grown.learn_one(X[i], y[i])
    told.partial_fit(X[:1], y[:1], classes=np.arange(5))
    for i in range(1, y.shape[0]):
        told.learn_one(X[i], y[i])
    _same(grown, told, np.random.default_rng(5).normal(size=(40, 3)))


def test_merge_of_parts_that_met_different_classes():
    X, y = _stream(5, 6, 6, ORDERS["new_first"])
    scaling = (np.full(3, -4.0), np.full(3, 4.0))
    kw = dict(n_estimators=3, lifetime=2.0, feature_scaling=scaling)
    a = MondrianForestClassifier(random_state=1, **kw)
    b = MondrianForestClassifier(random_state=2, **kw)
    a_told = MondrianForestClassifier(random_state=1, **kw)
    b_told = MondrianForestClassifier(random_state=2, **kw)
    first, second = y < 3, y >= 3  # disjoint class sets
    for i in np.flatnonzero(first):
        a.learn_one(X[i], y[i])
        a_told.learn_one(X[i], y[i], classes=np.arange(5))
    for i in np.flatnonzero(second):
        b.learn_one(X[i], y[i])
        b_told.learn_one(X[i], y[i], classes=np.arange(5))
    Xt = np.random.default_rng(7).normal(size=(30, 3))
    _same(merge_forests([a, b]), merge_forests([a_told, b_told]), Xt)


def test_adding_200_classes_widens_logarithmically(monkeypatch):
    """Full rewrites of the point store's rows (one per widening of the value columns) while
    200 classes arrive one at a time: at most about log2(200) + 2 with doubling (8: widths
    2, 4, ..., 256), where rewriting per class took 199."""
    rewrites = []
    original = DataStore.set_row_columns

    def counting(self, width, column_map):
        rewrites.append(width)
        return original(self, width, column_map)

    monkeypatch.setattr(DataStore, "set_row_columns", counting)
    rng = np.random.default_rng(8)
    model = MondrianForestClassifier(n_estimators=2, lifetime=1.0, random_state=0)
    for label in rng.permutation(200):
        model.learn_one(rng.normal(size=2), int(label))
    assert model.classes_.shape[0] == 200
    assert len(rewrites) <= int(np.ceil(np.log2(200))) + 2
