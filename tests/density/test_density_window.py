"""``MondrianForestDensity(window=W)``: after every update only the most recent ``W`` points
are kept (inside and outside ``B_0``, in arrival order), forgotten exactly as by ``forget``,
with the law of a fit on the last points."""

import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_array_equal

import mondrian.core.ensemble as ensemble_module
from mondrian import MondrianForestDensity
from mondrian.core._forget import forget_trees

from _checks import reads_beside_writes, two_sample_chi2_pvalue


def _stream(seed, n=400):
    """Normal rows, with every seventh one (after the first batch) far outside ``B_0``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    far = np.arange(n) % 7 == 3
    far[:60] = False
    X[far] *= 50.0
    return X, far


def _state(model):
    """What must match bit for bit: the trees, the stored points in arrival order, the
    counts and the densities."""
    store = model._store
    arrival = np.argsort(store.stamps)
    probe = np.random.default_rng(99).normal(size=(50, 2)) * 2.0
    return (
        [(t._raw_nodes().tobytes(), t.bounds_array.tobytes()) for t in model._trees],
        store.X[arrival].tobytes(), model.n_samples_seen_, model._n_outside,
        model.outside_weight_, model.score_samples(probe).tobytes(),
    )


def _check_counts(model):
    store = model._store
    for tree in model._trees:
        _, _, counts, parent = tree.derived_arrays(store.X, store.rows)
        nodes = tree.nodes_array
        assert_array_equal(counts, nodes["n_node_samples"])
        assert_array_equal(parent, nodes["parent"])
        assert (nodes["n_node_samples"][nodes["left_child"] != -1] > 0).all()


@pytest.mark.exact
@pytest.mark.parametrize("lifetime", [4.0, "auto"])
def test_window_is_forgetting_the_oldest_rows_by_hand(lifetime, global_random_seed):
    """A windowed density and one without a window that forgets the oldest rows beyond the
    window after every call (inside and outside ``B_0``) are the same model, bit for bit."""
    X, _ = _stream(global_random_seed)
    window = 80
    kw = dict(n_estimators=3, lifetime=lifetime, random_state=global_random_seed)
    a = MondrianForestDensity(window=window, **kw).fit(X[:100])
    b = MondrianForestDensity(**kw).fit(X[:100])
    far = ~a._to_unit(X)[1]
    learnt = list(range(100))

    def by_hand():
        nonlocal learnt
        if len(learnt) > window:
            b.forget(X[learnt[:-window]])
            learnt = learnt[-window:]

    by_hand()
    assert _state(a) == _state(b)
    start = 100
    for size in (1, 13, 40, 2, 90, 7, 30):
        a.partial_fit(X[start:start + size])
        b.partial_fit(X[start:start + size])
        learnt += list(range(start, start + size))
        start += size
        by_hand()
        assert _state(a) == _state(b)
        assert a.n_samples_seen_ == window
        assert a._n_outside == int(far[learnt].sum())
    _check_counts(a)


@pytest.mark.statistical
def test_windowed_stream_has_the_law_of_a_fit_on_the_window(global_random_seed):
    """Node counts of a windowed stream (batches of 40, window 60) and of a fit on its last
    60 points with the same domain (both batches hold the corners of the unit square), 1500
    trees each: two-sample chi-square at p > 1e-4."""
    rng = np.random.default_rng(global_random_seed)
    X = rng.random((240, 2))
    X[[0, 1, -2, -1]] = [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0], [1.0, 1.0]]
    a = MondrianForestDensity(n_estimators=1500, lifetime=6.0, concentration=1.0, window=60,
                              random_state=global_random_seed).fit(X[:40])
    for start in range(40, 240, 40):
        a.partial_fit(X[start:start + 40])
    b = MondrianForestDensity(n_estimators=1500, lifetime=6.0, concentration=1.0,
                              random_state=global_random_seed + 100).fit(X[180:])
    assert a.n_samples_seen_ == 60
    assert_array_equal(a.domain_, b.domain_)
    count_a = np.array([t.node_count for t in a._trees])
    count_b = np.array([t.node_count for t in b._trees])
    assert two_sample_chi2_pvalue(count_a, count_b) > 1e-4


@pytest.mark.parametrize("window", [0, -3, 2.5, True, "10"])
def test_window_is_validated(window):
    X, _ = _stream(0, n=80)
    with pytest.raises(ValueError, match="window"):
        MondrianForestDensity(n_estimators=2, lifetime=2.0, window=window).fit(X)


def test_an_invalid_window_set_later_is_refused_at_the_next_update():
    X, _ = _stream(1, n=200)
    model = MondrianForestDensity(n_estimators=2, lifetime=3.0, window=50,
                                  random_state=0).fit(X[:100])
    model.set_params(window=0)
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="window"):
        model.partial_fit(X[100:110])
    assert pickle.dumps(model) == before
    model.set_params(window=70)  # applies at the next update
    assert model.n_samples_seen_ == 50
    model.partial_fit(X[100:130])
    assert model.n_samples_seen_ == 70
    model.set_params(window=None)
    model.partial_fit(X[130:140])
    assert model.n_samples_seen_ == 80


def test_trees_keep_their_newest_point():
    """A window holding only points outside ``B_0`` still leaves the trees one point."""
    rng = np.random.default_rng(2)
    X = rng.random((50, 2))
    model = MondrianForestDensity(n_estimators=2, lifetime=3.0, window=5,
                                  random_state=0).fit(X)
    model.partial_fit(X[:10] + 100.0)
    assert model._store.n_samples == 1
    assert model._n_outside == 5 and model.n_samples_seen_ == 6
    assert_array_equal(model._store.X, model._to_unit(X[-1:])[0])
    assert np.isfinite(model.score_samples(X)).all()


@pytest.mark.parametrize("rows", [2, 60])  # rolled back by the undo logs / by a snapshot
@pytest.mark.parametrize("exception", [MemoryError, KeyboardInterrupt])
def test_failure_inside_the_trim_changes_nothing(rows, exception, monkeypatch):
    X, _ = _stream(3)
    model = MondrianForestDensity(n_estimators=4, lifetime=4.0, window=100,
                                  random_state=0).fit(X[:100])
    before = pickle.dumps(model)
    state = _state(model)

    def failing(trees, *args):
        forget_trees(trees[:2], *args)  # half the trees changed, then the failure
        raise exception("injected")

    monkeypatch.setattr(ensemble_module, "forget_trees", failing)
    with pytest.raises(exception):
        model.partial_fit(X[100:100 + rows])
    monkeypatch.setattr(ensemble_module, "forget_trees", forget_trees)
    assert pickle.dumps(model) == before
    assert _state(model) == state
    model.partial_fit(X[100:100 + rows])
    assert model.n_samples_seen_ == 100


def test_pickle_round_trips_the_outside_points():
    X, _ = _stream(4)
    model = MondrianForestDensity(n_estimators=3, lifetime=4.0, window=90,
                                  random_state=0).fit(X[:100])
    model.partial_fit(X[100:200])
    assert model._n_outside > 0
    copy = pickle.loads(pickle.dumps(model))
    assert _state(copy) == _state(model)
    for m in (model, copy):
        m.partial_fit(X[200:260])
    assert _state(copy) == _state(model)
    broken = pickle.loads(pickle.dumps(model))
    state = broken.__getstate__()
    state["_outside_stamps"] = state["_outside_stamps"][1:]
    with pytest.raises(ValueError, match="_outside_stamps"):
        MondrianForestDensity().__setstate__(state)


def test_forget_outside_rows_removes_the_oldest_outside_points():
    X, _ = _stream(5)
    model = MondrianForestDensity(n_estimators=2, lifetime=3.0, random_state=0).fit(X[:100])
    far = ~model._to_unit(X)[1]
    model.partial_fit(X[100:200])
    n_far = int(far[100:200].sum())
    model.forget(X[100:200][far[100:200]][:2])
    assert model._n_outside == n_far - 2
    model.set_params(window=model._store.n_samples + n_far - 2)
    model.partial_fit(X[200:201])  # one more point: the oldest one goes, an inside one
    assert model._n_outside == n_far - 2 + int(far[200])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["learn", "forget", "window"]), st.integers(1, 30),
                          st.integers(0, 2**16)), min_size=1, max_size=10))
def test_learn_forget_window_sequences_keep_the_reference_points(steps):
    """Random sequences of partial_fit, forget and window changes: the model holds exactly
    the points a reference keeps (inside ``B_0`` in arrival order in the store, outside ones
    counted), and its trees are the trees of those points."""
    X, _ = _stream(6, n=600)
    X = np.round(X * 4) / 4  # duplicates: forget removes the oldest copy
    model = MondrianForestDensity(n_estimators=2, lifetime=3.0, window=50,
                                  random_state=0).fit(X[:60])
    far = ~model._to_unit(X)[1]
    reference = list(range(10, 60))
    cursor = 60
    for kind, size, seed in steps:
        if kind == "window":
            model.set_params(window=size * 4)
        elif kind == "forget" and len(reference) > size + 1:
            rng = np.random.default_rng(seed)
            pick = rng.choice(len(reference), size, replace=False)
            gone = [reference[k] for k in sorted(pick)]
            if len([i for i in reference if not far[i]]) <= len([i for i in gone if not far[i]]):
                continue  # (forgetting every point of the trees is refused)
            model.forget(X[gone])
            for i in gone:
                same = [r for r in reference if (X[r] == X[i]).all()
                        or (far[r] and far[i])]
                reference.remove(same[0])
            continue
        new = list(range(cursor, min(cursor + size, 600)))
        cursor += len(new)
        if not new:
            continue
        model.partial_fit(X[new])
        reference += new
        if len(reference) > model.window:
            drop = reference[:len(reference) - model.window]
            inside = [i for i in reference if not far[i]]
            if len([i for i in drop if not far[i]]) == len(inside):
                drop.remove(inside[-1])  # the trees keep their newest point
            reference = [i for i in reference if i not in drop]
        assert model.n_samples_seen_ == len(reference)
        assert model._n_outside == int(far[reference].sum())
        arrival = np.argsort(model._store.stamps)
        inside = [i for i in reference if not far[i]]
        assert_array_equal(model._store.X[arrival], model._to_unit(X[inside])[0])
        _check_counts(model)


def test_a_model_without_window_pickles_as_before_the_parameter():
    """A window of None is left out of pickles (the bytes of models pickled before the
    parameter existed, which load with the default); a window set is kept."""
    X, _ = _stream(7, n=100)
    model = MondrianForestDensity(n_estimators=2, lifetime=3.0, random_state=0).fit(X)
    state = model.__getstate__()
    assert "window" not in state and model.window is None
    loaded = pickle.loads(pickle.dumps(model))
    assert loaded.get_params()["window"] is None and "window" not in vars(loaded)
    assert pickle.dumps(loaded) == pickle.dumps(model)
    loaded.set_params(window=30).partial_fit(X[:5])
    again = pickle.loads(pickle.dumps(loaded))
    assert again.window == 30 and again.n_samples_seen_ == 30


def test_windowed_updates_and_reads_from_threads():
    """Reads from other threads during windowed updates see whole updates only (finite
    densities, no error), and the model ends as the same updates run alone leave it."""
    X, _ = _stream(8, n=600)
    kw = dict(n_estimators=4, lifetime=4.0, window=120, random_state=0)
    model = MondrianForestDensity(**kw).fit(X[:100])
    alone = MondrianForestDensity(**kw).fit(X[:100])
    Q = np.random.default_rng(1).normal(size=(100, 2))

    def read():
        assert np.isfinite(model.score_samples(Q)).all()
        assert model.n_samples_seen_ <= 120

    def write():
        for start in range(100, 600, 25):
            model.partial_fit(X[start:start + 25])
            alone.partial_fit(X[start:start + 25])

    errors = reads_beside_writes(read, write)
    assert not errors
    assert _state(model) == _state(alone)
