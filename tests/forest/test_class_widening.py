"""Classes discovered one at a time: exactness guards and the cost of widening.

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
    rewrites = _count_rewrites(monkeypatch)
    rng = np.random.default_rng(8)
    model = MondrianForestClassifier(n_estimators=2, lifetime=1.0, random_state=0)
    for label in rng.permutation(200):
        model.learn_one(rng.normal(size=2), int(label))
    assert model.classes_.shape[0] == 200
    assert len(rewrites) <= int(np.ceil(np.log2(200))) + 2


def _count_rewrites(monkeypatch):
    rewrites = []
    original = DataStore.set_row_columns

    def counting(self, width, column_map):
        rewrites.append(width)
        return original(self, width, column_map)

    monkeypatch.setattr(DataStore, "set_row_columns", counting)
    return rewrites


def test_partial_fit_batches_of_new_classes_widen_by_doubling(monkeypatch):
    """Batches that each bring a few new classes (150 in all) rewrite the rows only when the
    spare columns run out: widths at least double, and the trees keep pace with the store."""
    rewrites = _count_rewrites(monkeypatch)
    rng = np.random.default_rng(9)
    model = MondrianForestClassifier(n_estimators=2, lifetime=1.0, random_state=0)
    labels = rng.permutation(150)
    for start in range(0, 150, 3):
        batch = labels[start:start + 3]
        y = np.concatenate([batch, rng.choice(labels[: start + 3], 5)])
        model.partial_fit(rng.normal(size=(y.shape[0], 2)), y)
    assert model.classes_.shape[0] == 150
    assert len(rewrites) <= int(np.ceil(np.log2(150))) + 2
    assert all(b >= 2 * a for a, b in zip(rewrites[:-1], rewrites[1:], strict=True))
    width = model._store.rows.shape[1]
    assert width == rewrites[-1] >= 150
    for tree in model._trees:
        assert tree.value_stride == width and tree.n_columns == 150
        assert tree.value_array.shape[1] == 150
    assert model.predict_proba(rng.normal(size=(3, 2))).shape == (3, 150)


def test_regressor_and_density_never_widen(monkeypatch):
    from mondrian import MondrianForestDensity, MondrianForestRegressor

    rewrites = _count_rewrites(monkeypatch)
    rng = np.random.default_rng(10)
    X = rng.random((60, 2))
    reg = MondrianForestRegressor(n_estimators=2, random_state=0).fit(X[:30], X[:30, 0])
    dens = MondrianForestDensity(2, lifetime=3.0, random_state=0).fit(X[:30])
    for i in range(30, 60):
        reg.learn_one(X[i], X[i, 0])
        dens.partial_fit(X[i : i + 1])
    assert rewrites == []
    for model, width in ((reg, 3), (dens, 0)):
        assert model._ensemble.column_order is None
        for tree in model._trees:
            assert tree.value_stride == tree.n_columns == width
            np.testing.assert_array_equal(tree.column_order, np.arange(width))


@pytest.mark.parametrize("order", ORDERS)
def test_fractional_class_weights_match_classes_up_front(order):
    """Weighted counts are summed over the classes in sorted order, whatever the storage order:
    with fractional weights (where the order of a sum changes its bits) the pause rule, the
    HNSP posterior, the Dirichlet leaves, the importances and the tree structure views agree."""
    X, y = _stream(5, 6, 11, ORDERS[order])
    weights = {0: 0.1, 1: 0.7, 2: 0.2, 3: 1.3, 4: 0.3}
    kw = dict(class_weight=weights, min_samples_split=2)
    grown, told = _forest(**kw), _forest(**kw)
    for i in range(y.shape[0]):
        grown.learn_one(X[i], y[i])
        told.learn_one(X[i], y[i], classes=np.arange(5))
    Xt = np.random.default_rng(12).normal(size=(40, 3))
    _same(grown, told, Xt)
    np.testing.assert_array_equal(grown.feature_importances_, told.feature_importances_)
    for a, b in zip(grown._trees, told._trees, strict=True):
        np.testing.assert_array_equal(a.nodes_array, b.nodes_array)
        np.testing.assert_array_equal(a.value_array, b.value_array)
    np.testing.assert_array_equal(grown.estimators_[1].tree_.value,
                                  told.estimators_[1].tree_.value)
    dirichlet = dict(smoothing="dirichlet", **kw)
    g, t = _forest(**dirichlet), _forest(**dirichlet)
    for i in range(y.shape[0]):
        g.learn_one(X[i], y[i])
        t.learn_one(X[i], y[i], classes=np.arange(5))
    _same(g, t, Xt)


def test_lifetime_path_and_pruning_read_the_sorted_classes():
    X, y = _stream(5, 8, 13, ORDERS["new_first"])
    grown, told = _forest(), _forest()
    for i in range(y.shape[0]):
        grown.learn_one(X[i], y[i])
        told.learn_one(X[i], y[i], classes=np.arange(5))
    Xv, yv = X[::3], y[::3]
    a, b = grown.lifetime_path(Xv, yv), told.lifetime_path(Xv, yv)
    np.testing.assert_array_equal(a.lifetimes, b.lifetimes)
    np.testing.assert_array_equal(a.log_loss, b.log_loss)
    Xt = np.random.default_rng(14).normal(size=(20, 3))
    _same(grown.prune(0.5), told.prune(0.5), Xt)


def test_pickles_of_widened_trees_are_version_2_and_plain_ones_unchanged():
    """Trees whose read columns are their stored ones pickle as before (version 1, which old
    builds read); a classifier that met classes online saves its column order (version 2),
    and loads bit for bit."""
    X, y = _stream(5, 6, 15, ORDERS["new_first"])
    grown = _forest()
    for i in range(y.shape[0]):
        grown.learn_one(X[i], y[i])
    state = grown._ensemble.__getstate__()
    assert {tree["version"] for tree in state["trees"]} == {2}
    assert all(tree["columns"].tolist() == list(grown._ensemble.column_order)
               for tree in state["trees"])
    fitted = _forest().fit(X, y)
    assert {tree["version"] for tree in fitted._ensemble.__getstate__()["trees"]} == {1}
    assert "columns" not in fitted._trees[0].__getstate__()
    loaded = pickle.loads(pickle.dumps(grown))
    Xt = np.random.default_rng(16).normal(size=(20, 3))
    _same(grown, loaded, Xt)
    for a, b in zip(grown._trees, loaded._trees, strict=True):
        np.testing.assert_array_equal(a.column_order, b.column_order)
    # A version-1 ensemble state (saved before the column order existed) still loads.
    old = fitted._ensemble.__getstate__()
    old.pop("column_order")
    ensemble = type(fitted._ensemble).__new__(type(fitted._ensemble))
    ensemble.__setstate__(old)
    assert ensemble.column_order is None
    for a, b in zip(ensemble.trees, fitted._trees, strict=True):
        assert pickle.dumps(a) == pickle.dumps(b)


class _CountingNumpy:
    """NumPy for one module, counting the elements of the arrays ``eye`` and ``zeros`` make."""

    def __init__(self):
        self.elements = 0

    def __getattr__(self, name):
        return getattr(np, name)

    def eye(self, n, *args, **kwargs):
        self.elements += n * n
        return np.eye(n, *args, **kwargs)

    def zeros(self, shape, *args, **kwargs):
        self.elements += int(np.prod(shape))
        return np.zeros(shape, *args, **kwargs)


def _unique_calls(monkeypatch):
    calls = []
    original = np.unique

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(np, "unique", counting)
    return calls


def _classes_one_by_one(n_classes, n_estimators):
    rng = np.random.default_rng(10)
    model = MondrianForestClassifier(n_estimators=n_estimators, lifetime=1.0, random_state=0)
    for label in rng.permutation(n_classes):
        model.learn_one(rng.normal(size=2), int(label))
    return model


def test_learn_one_class_arrival_work_is_linear_per_class(monkeypatch):
    """The work of a new class arriving through learn_one, counted (not timed): the column
    order is checked once per class, not once per tree, and the one-hot statistics rows cost
    O(width) per class, not a table of O(n_classes * width) rebuilt at every new class
    (quadratic in the number of classes)."""
    import mondrian.forest.classifier as classifier

    calls = _unique_calls(monkeypatch)
    _classes_one_by_one(120, 1)
    one_tree = len(calls)
    calls.clear()
    _classes_one_by_one(120, 16)
    # Per tree only the O(log n_classes) rewrites of the widening check their column map (was
    # a check per tree at every new class: 15 * 119 more calls).
    assert len(calls) - one_tree <= 15 * (int(np.ceil(np.log2(120))) + 2)

    counting = _CountingNumpy()
    monkeypatch.setattr(classifier, "np", counting)
    model = _classes_one_by_one(300, 2)
    width = model._ensemble.width
    assert model.classes_.shape[0] == 300 and width == 512
    # At most a few rows of the final width per class (the table took sum(width**2) ~ 4e7).
    assert counting.elements <= 4 * 300 * width
