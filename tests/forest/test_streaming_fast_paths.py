"""The one-row fast paths of the streaming API give exactly what the full paths give.

``learn_one``, ``predict_one``, ``predict_proba_one`` and the one-row ``predict`` /
``partial_fit`` of a fitted classifier in its steady state skip the general validation and
transaction machinery (``BaseMondrianEnsemble._fast_scaled_row``, ``_frozen_stream``,
``TreeEnsemble.add_scaled_logged``). Each stream runs with the fast paths and with them switched
off, and the models must be bit-identical; failures inside a fast update must leave the model
bit-identical too. Behaviour only: no timing here.
"""

import pickle

import numpy as np
import pytest

from mondrian import MondrianForestClassifier
from mondrian.core._online import begin_undo_trees, rollback_undo_trees, scale_row
from mondrian.core.ensemble import TreeEnsemble, fail_after_trees
from mondrian.core.feature_map import MAX_SCALED, FeatureScaler
from mondrian.core.store import DataStore
from mondrian.estimator.ensemble import BaseMondrianEnsemble
from mondrian.forest.classifier import _BaseMondrianClassifier

rng = np.random.default_rng(3)
X = rng.normal(size=(260, 4)) * np.array([1.0, 10.0, 0.01, 3.0])
Y = (X[:, 0] > 0).astype(int) + 2 * (X[:, 1] > 0)
N_TREES = 4


def _no_fast(monkeypatch):
    monkeypatch.setattr(BaseMondrianEnsemble, "_fast_scaled_row", lambda self, x, clip: None)
    monkeypatch.setattr(_BaseMondrianClassifier, "_fast_one", lambda self, x, y: False)


def _spy(monkeypatch):
    """Count the updates that go through the fast transaction."""
    calls = []
    original = TreeEnsemble.add_scaled_logged

    def spy(self, U, rows):
        calls.append(U.shape)
        return original(self, U, rows)

    monkeypatch.setattr(TreeEnsemble, "add_scaled_logged", spy)
    return calls


def _canonical(model):
    state = pickle.loads(pickle.dumps(model)).__dict__
    return {name: pickle.dumps(value) for name, value in state.items()
            if name not in ("_codes_cache", "_classes_argument")}


def _stream(model, rows, style):
    """Test-then-train over ``rows``; return the predictions."""
    out = []
    for i in rows:
        if style == "array":
            if i:
                out.append(model.predict_proba_one(X[i]))
                out.append(model.predict_one(X[i]))
            model.learn_one(X[i], int(Y[i]))
        elif style == "dict":
            x = {f"f{d}": float(v) for d, v in enumerate(X[i])}
            if i:
                out.append(model.predict_proba_one(x))
            model.learn_one(x, int(Y[i]))
        else:  # scikit-learn style, one-row arrays
            if i:
                out.append(model.predict_proba(X[i : i + 1]).tolist())
                out.append(model.predict(X[i : i + 1]).tolist())
            model.partial_fit(X[i : i + 1], Y[i : i + 1], classes=[0, 1, 2, 3])
    return out


PARAMS = {
    "default": {},
    "dirichlet": {"smoothing": "dirichlet"},
    "weights": {"feature_weights": [1.0, 0.5, 2.0, 0.0]},
    "no-scaling": {"feature_scaling": None},
    "fixed-range": {"feature_scaling": ([-3.0, -30.0, -0.03, -9.0], [3.0, 30.0, 0.03, 9.0])},
    "tables": {"branch_off_counts": "tables", "min_samples_split": 3},
}


@pytest.mark.parametrize("style", ["array", "dict", "sklearn"])
@pytest.mark.parametrize("params", PARAMS)
def test_fast_stream_equals_full_stream(monkeypatch, style, params):
    def run():
        # Label-blind: the default's stream window (256 rows) would keep the full path open.
        model = MondrianForestClassifier(N_TREES, random_state=0,
                                         **{"feature_weights": None, **PARAMS[params]})
        return model, _stream(model, range(200), style)

    fast_calls = _spy(monkeypatch)
    fast, fast_out = run()
    # The fast path carries the stream once the feature map has frozen (64 points).
    assert len(fast_calls) >= 200 - 64 - 5
    with monkeypatch.context() as patch:
        _no_fast(patch)
        full, full_out = run()
    assert fast_out == full_out
    assert _canonical(fast) == _canonical(full)


def test_fast_path_skipped_where_the_full_path_must_decide(monkeypatch):
    # Label-blind: the default's search may choose a quantile map, which the fast path skips.
    model = MondrianForestClassifier(N_TREES, feature_weights=None, random_state=0).fit(
        X[:100], Y[:100])
    calls = _spy(monkeypatch)
    model.learn_one(X[100], 1)
    assert len(calls) == 1
    model.learn_one(X[101], 7)  # a new class widens every tree: full path
    model.learn_one(X[102].tolist(), 1)  # a list: full validation
    model.learn_one(X[103].astype(np.float32), 1)
    model.learn_one(X[104].astype(">f8"), 1)  # another byte order
    model.set_params(n_estimators=N_TREES + 1).learn_one(X[105], 1)  # grows a tree
    assert len(calls) == 1
    assert len(model._trees) == N_TREES + 1
    model.learn_one(X[106], 1)
    assert len(calls) == 2
    with pytest.raises(ValueError, match="NaN"):
        model.learn_one(np.array([0.0, np.nan, 0.0, 0.0]), 1)
    with pytest.raises(ValueError, match="4 features"):
        model.learn_one(X[107, :3].copy(), 1)
    with pytest.raises(ValueError, match="too large"):
        model.learn_one(X[107] * 1e200, 1)
    with pytest.raises(ValueError, match="min_samples_split"):
        model.set_params(min_samples_split=5).learn_one(X[107], 1)
    view = model.set_params(min_samples_split=2).estimators_[0]
    with pytest.raises(ValueError, match="read-only view"):
        view.learn_one(X[107], 1)
    weighted = MondrianForestClassifier(N_TREES, feature_weights=None, random_state=0,
                                        class_weight={1: 2.0})
    weighted.fit(X[:100], Y[:100]).learn_one(X[100], 1)
    assert len(calls) == 2


def test_rejected_fast_input_leaves_model_unchanged():
    model = MondrianForestClassifier(N_TREES, random_state=0).fit(X[:100], Y[:100])
    before = pickle.dumps(model)
    for bad in (np.array([1e300, 0.0, 0.0, 0.0]), np.array([np.inf, 0.0, 0.0, 0.0])):
        with pytest.raises(ValueError):
            model.learn_one(bad, 1)
    assert pickle.dumps(model) == before


@pytest.mark.parametrize("exception", [MemoryError, KeyboardInterrupt])
@pytest.mark.parametrize("after", [0, 2])
def test_failure_inside_a_fast_update_leaves_model_unchanged(monkeypatch, exception, after):
    model = MondrianForestClassifier(N_TREES, random_state=0).fit(X[:150], Y[:150])
    calls = _spy(monkeypatch)
    before = pickle.dumps(model)
    fail_after_trees(after, exception)
    try:
        with pytest.raises(exception):
            model.learn_one(X[150], int(Y[150]))
    finally:
        fail_after_trees(None)
    assert calls and pickle.dumps(model) == before
    assert not any(tree.undo_open for tree in model._trees)
    reference = pickle.loads(before)
    model.learn_one(X[150], int(Y[150]))
    reference.learn_one(X[150], int(Y[150]))
    assert _canonical(model) == _canonical(reference)


def test_failure_while_the_store_grows_leaves_model_unchanged(monkeypatch):
    model = MondrianForestClassifier(N_TREES, random_state=0).fit(X[:128], Y[:128])
    store = model._store
    assert store.n_samples == store._X.shape[0]  # the next point reallocates the store

    def failing_grow(self, array, capacity):
        raise KeyboardInterrupt

    before = pickle.dumps(model)
    monkeypatch.setattr(DataStore, "_grow", failing_grow)
    with pytest.raises(KeyboardInterrupt):
        model.learn_one(X[128], int(Y[128]))
    monkeypatch.undo()
    assert pickle.dumps(model) == before
    assert model._ensemble.feature_map.n_seen == 128


def test_scale_row_is_the_feature_map_bit_for_bit():
    gen = np.random.default_rng(1)
    fit = gen.normal(size=(70, 6)) * np.logspace(-3, 3, 6)
    for weights in (None, np.array([1.0, 0.3, 0.0, 2.5, 1e-3, 7.0])):
        feature_map = FeatureScaler(True, weights=weights)
        feature_map.update(fit)
        rows = gen.normal(size=(50, 6)) * np.logspace(-3, 3, 6) * 3
        for row in rows:
            for clip in (False, True):
                got = scale_row(row, feature_map.offset, feature_map.scale, feature_map.weights,
                                MAX_SCALED, clip)
                want = feature_map.transform(row[None, :], clip=clip)
                assert got.tobytes() == want.tobytes()
    huge = np.full(6, 1e200)
    args = (feature_map.offset, feature_map.scale, feature_map.weights, MAX_SCALED)
    assert scale_row(huge, *args, False) is None
    assert scale_row(huge, *args, True).tobytes() == feature_map.transform(
        huge[None, :], clip=True).tobytes()
    assert scale_row(np.array([0, 0, np.nan, 0, 0, 0.0]), *args, True) is None
    strided = np.repeat(rows[0], 2)[::2]  # a non-contiguous row reads the same values
    assert scale_row(strided, *args, True).tobytes() == scale_row(rows[0], *args, True).tobytes()


def test_begin_undo_trees_leaves_open_logs_to_their_opener():
    model = MondrianForestClassifier(3, random_state=0).fit(X[:100], Y[:100])
    trees = model._trees
    assert trees[1].begin_undo()
    opened = []
    begin_undo_trees(trees, opened)
    assert opened == [trees[0], trees[2]]
    rollback_undo_trees(opened)
    assert [tree.undo_open for tree in trees] == [False, True, False]
    trees[1].commit_undo()


def test_regressor_predict_one_fast_row_equals_full_row(monkeypatch):
    from mondrian import MondrianForestRegressor

    model = MondrianForestRegressor(3, random_state=0).fit(X[:120], X[:120, 0])
    model.learn_one(X[120], 0.5)
    rows = [X[i] for i in range(121, 141)]
    fast = [model.predict_one(row, return_std=True) for row in rows]
    with monkeypatch.context() as patch:
        _no_fast(patch)
        full = [model.predict_one(row, return_std=True) for row in rows]
    assert fast == full


def test_one_point_appends_equal_one_batch_append():
    """The store's one-point append (the streaming case, no slices) leaves the arrays, the
    arrival numbers and the counts of one append of the same rows, across capacity growths."""
    rows = np.column_stack([np.ones(len(X)), X[:, 0]])
    one, batch = DataStore(4, 2), DataStore(4, 2)
    got = [one.append(X[i : i + 1], rows[i : i + 1]) for i in range(len(X))]
    want = batch.append(X, rows)
    np.testing.assert_array_equal(np.concatenate(got), want)
    for a, b in ((one.X, batch.X), (one.rows, batch.rows), (one.stamps, batch.stamps)):
        np.testing.assert_array_equal(a, b)
    assert (one.n_samples, one.n_arrived) == (batch.n_samples, batch.n_arrived)
    assert one.arrival_state()[1] == batch.arrival_state()[1]
