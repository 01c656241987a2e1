"""``window``: after every update only the most recent ``window`` points are kept, exactly
(forgotten as by ``forget``), in bounded memory, with the law of a fit on the last points."""

import pickle

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from scipy import stats

from _forget_checks import check_model
from mondrian import MondrianForestClassifier, MondrianForestRegressor

P_MIN = 1e-4


def _leaf_counts(forest):
    return np.array([int((t.nodes_array["left_child"] == -1).sum()) for t in forest._trees])



def _stream(seed, n=1200, d=3):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = (X[:, 0] + 0.2 * rng.normal(size=n) > 0.5).astype(int)
    return X, y


@pytest.mark.exact
@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_window_keeps_exactly_the_last_points(kind, global_random_seed):
    X, y = _stream(global_random_seed)
    target = y if kind == "classifier" else X[:, 1] + y
    cls = MondrianForestClassifier if kind == "classifier" else MondrianForestRegressor
    model = cls(n_estimators=3, window=150, random_state=global_random_seed)
    model.fit(X[:100], target[:100])
    for start in range(100, 900, 80):
        model.partial_fit(X[start:start + 80], target[start:start + 80])
    for i in range(900, 960):
        model.learn_one(X[i], target[i])
    assert model.n_samples_seen_ == 150
    arrival = np.argsort(model._store.stamps)
    assert_array_equal(model._store.X[arrival], model._scaler.transform(X[810:960]))
    check_model(model, exact_values=kind == "classifier")
    if kind == "regressor":
        assert_array_equal(model._y_sums, model._store.rows.sum(axis=0))


@pytest.mark.exact
def test_window_memory_is_flat():
    X, y = _stream(0, n=6000)
    model = MondrianForestClassifier(n_estimators=4, window=500, random_state=0)
    usage = []
    for start in range(0, 6000, 250):
        model.partial_fit(X[start:start + 250], y[start:start + 250])
        usage.append(model.memory_usage_["total"] + model.memory_usage_["reserved"])
    steady = np.array(usage[8:])  # from 2000 rows on
    assert steady.max() <= 1.25 * steady.min()
    unbounded = MondrianForestClassifier(n_estimators=4, random_state=0).fit(X, y)
    assert unbounded.memory_usage_["total"] > 4 * model.memory_usage_["total"]


@pytest.mark.statistical
def test_windowed_stream_has_the_law_of_a_fit_on_the_window(global_random_seed):
    """Leaf counts of a windowed stream (batches of 40, window 60) and of a fit on its last
    60 points (1500 trees each): two-sample chi-square at p > 1e-4."""
    X, y = _stream(global_random_seed, n=200, d=2)
    a = MondrianForestClassifier(n_estimators=1500, window=60, lifetime=4.0, feature_scaling=None,
                                 feature_weights=None, random_state=global_random_seed)
    for start in range(0, 200, 40):
        a.partial_fit(X[start:start + 40], y[start:start + 40])
    b = MondrianForestClassifier(n_estimators=1500, lifetime=4.0, feature_scaling=None,
                                 feature_weights=None, random_state=global_random_seed + 100)
    b.fit(X[140:], y[140:])
    assert a.n_samples_seen_ == 60
    assert stats.mannwhitneyu(_leaf_counts(a), _leaf_counts(b)).pvalue > P_MIN
    counts = np.union1d(_leaf_counts(a), _leaf_counts(b))
    table = np.array([[np.sum(_leaf_counts(f) == c) for c in counts] for f in (a, b)])
    table = table[:, table.sum(axis=0) >= 20]  # cells with enough trees for the chi-square
    assert stats.chi2_contingency(table).pvalue > P_MIN


def test_window_is_validated():
    X, y = _stream(0, n=50)
    with pytest.raises(ValueError, match="window"):
        MondrianForestClassifier(n_estimators=2, window=0).fit(X, y)


def test_river_adapter_takes_a_windowed_model():
    pytest.importorskip("river")
    from mondrian.river import RiverClassifier

    X, y = _stream(1, n=300)
    # (feature_weights=None: with the default search a window waits for the search's stream
    # window of 256 rows to close, see docs/forgetting.md)
    adapter = RiverClassifier(MondrianForestClassifier(n_estimators=2, window=100,
                                                       random_state=0, feature_weights=None))
    for row, label in zip(X, y, strict=True):
        adapter.learn_one({"a": row[0], "b": row[1], "c": row[2]}, int(label))
    assert adapter.model_.n_samples_seen_ == 100


def test_set_params_window_applies_to_the_one_row_path():
    X, y = _stream(2, n=400)
    model = MondrianForestClassifier(n_estimators=2, window=300, random_state=0)
    model.fit(X[:200], y[:200])
    model.set_params(window=120)
    for i in range(200, 260):
        model.learn_one(X[i], y[i])
    assert model.n_samples_seen_ == 120
    check_model(model)


def test_windowed_regressor_updates_when_the_trim_removes_nodes():
    """Trimming the window can remove nodes: the messages are then recomputed in full (the
    refresh along the new paths assumed the node counts from before the update)."""
    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(400, 1)), 1)  # ties: cuts often vanish with old points
    y = rng.normal(size=400)
    model = MondrianForestRegressor(n_estimators=2, random_state=0, window=20,
                                    feature_weights=None).fit(X[:60], y[:60])
    for start in range(60, 400, 4):
        model.partial_fit(X[start:start + 4], y[start:start + 4])
    for i in range(20):
        model.learn_one(X[i], y[i])
    assert model._store.n_samples == 20
    check_model(model, exact_values=False)
    fresh = pickle.loads(pickle.dumps(model))  # recomputes every message on load
    assert_array_equal(model.predict(X[:50]), fresh.predict(X[:50]))


@pytest.mark.parametrize("Model", [MondrianForestClassifier, MondrianForestRegressor])
def test_an_invalid_window_set_later_is_refused_at_the_next_update(Model):
    """``set_params`` does not validate (scikit-learn's convention); the next update refuses
    a window of 0, which would forget every point, and changes nothing."""
    X, y = _stream(0, n=100)
    target = y if Model is MondrianForestClassifier else X[:, 0].copy()
    model = Model(n_estimators=2, random_state=0, window=50).fit(X, target)
    model.set_params(window=0)
    with pytest.raises(ValueError, match="window"):
        model.partial_fit(X[:10], target[:10])
    with pytest.raises(ValueError, match="window"):
        model.learn_one(X[0], target[0])
    assert model._store.n_samples == 50
    model.set_params(window=50)
    model.partial_fit(X[:10], target[:10])
    model.learn_one(X[0], target[0])
    assert model._store.n_samples == 50


@pytest.mark.parametrize("Model", [MondrianForestClassifier, MondrianForestRegressor])
def test_window_applies_on_the_one_row_path_after_the_weight_search(Model):
    """With the default feature_weights="auto" a stream's window applies once the search's
    stream window closes, also when every row comes through learn_one (the one-row path
    reads the window from the ensemble)."""
    X, y = _stream(3, n=700)
    target = y if Model is MondrianForestClassifier else X[:, 0] + y
    model = Model(n_estimators=2, window=100, random_state=0)
    for i in range(700):
        model.learn_one(X[i], target[i])
    assert "_weights_window" not in model.__dict__
    assert model.n_samples_seen_ == 100
    arrival = np.argsort(model._store.stamps)
    assert_array_equal(model._store.X[arrival], model._scaler.transform(X[600:]))
    check_model(model, exact_values=Model is MondrianForestClassifier)
