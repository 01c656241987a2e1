"""Batched merges of a grid cut removal (one Woodbury update per cut, decoupled columns dropped
later), the metrics recorded along the way, and the grid estimators' locking and atomicity."""

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mondrian import MondrianGridFeatures, MondrianGridRidge
from mondrian.grid._cuts import GridCuts, GridSample
from mondrian.grid._search import begin, record
from mondrian.kernel._ridge_path import RidgePathVisitor

from _checks import reads_beside_writes
from _data import sine_regression
from _reference import grid_ridge_system

N_POINTS, N_TRAIN, N_DIMS, N_GRIDS, ALPHA = 70, 50, 3, 4, 0.3


def _fresh_metrics(visitor, y):
    """Validation MSE, feature count and log marginal likelihood solved from scratch."""
    cols = visitor.columns
    C = visitor.n_features
    Z, A = grid_ridge_system(cols, C, N_TRAIN, N_GRIDS, ALPHA)
    inverse = np.linalg.inv(A)
    w = inverse @ (Z.T @ y[:N_TRAIN])
    pred = w[cols].sum(axis=0) / np.sqrt(N_GRIDS)
    fit = y[:N_TRAIN] @ y[:N_TRAIN] - (Z.T @ y[:N_TRAIN]) @ w
    loglik = (-0.5 * N_TRAIN * (np.log(2 * np.pi * fit / N_TRAIN) + 1)
              - 0.5 * (np.linalg.slogdet(A)[1] - C * np.log(ALPHA)))
    return inverse, np.mean((pred[N_TRAIN:] - y[N_TRAIN:]) ** 2), C, loglik


@pytest.mark.exact
@settings(deadline=None, max_examples=25)
@given(seed=st.integers(0, 10**6), pending=st.sampled_from([1, 2, 128]),
       moves=st.lists(st.tuples(st.integers(0, N_DIMS - 1), st.booleans()), max_size=40),
       record_every=st.integers(1, 4))
def test_batched_merges_record_the_fresh_metrics(seed, pending, moves, record_every):
    """Records taken between moves (merges queued, applied, columns left decoupled) give the
    fresh solve's validation error, feature count and log marginal likelihood. A pending
    buffer of 3 rows (pending=1) forces a cut's pairs into several batches."""
    rng = np.random.RandomState(seed)
    X = np.round(rng.uniform(size=(N_POINTS, N_DIMS)), 2)
    y = rng.normal(size=N_POINTS)
    y = np.ascontiguousarray(y - y[:N_TRAIN].mean())
    is_train = (np.arange(N_POINTS) < N_TRAIN).astype(np.uint8)
    source = GridCuts(GridSample(X, N_GRIDS, seed))
    visitor = RidgePathVisitor(y, is_train, ALPHA, capacity=400, pending_cuts=pending)
    begin(source, visitor)
    for k, (d, add) in enumerate(moves):
        if add and source.n_available(d) > 0:
            source.add(d, visitor)
        elif not add and source.active_counts[d] > 0:
            source.remove(d, visitor)
        if k % record_every == 0:
            row = record(visitor)  # before any compaction of the decoupled columns
            inverse, val_mse, C, loglik = _fresh_metrics(visitor, y)
            assert row[3] == C
            assert abs(row[1] - val_mse) <= 1e-8 * max(1.0, val_mse)
            assert abs(row[2] - loglik) <= 1e-7 * max(1.0, abs(loglik))
            assert np.abs(visitor.inverse - inverse).max() <= 1e-8


@pytest.mark.exact
def test_a_removal_merging_many_pairs_equals_a_fresh_solve():
    """Fine cuts in two dimensions, then removing the last cut of one: many pairs merge in
    one event (one batched update)."""
    rng = np.random.RandomState(3)
    X = rng.uniform(size=(N_POINTS, 2))
    y = np.ascontiguousarray(rng.normal(size=N_POINTS))
    is_train = (np.arange(N_POINTS) < N_TRAIN).astype(np.uint8)
    source = GridCuts(GridSample(X, N_GRIDS, 5))
    visitor = RidgePathVisitor(y, is_train, ALPHA, capacity=400)
    begin(source, visitor)
    for _ in range(12):
        source.add(0, visitor)
        source.add(1, visitor)
    merged = [source.remove(1, visitor) for _ in range(3)]
    assert max(merged) >= 3
    inverse = _fresh_metrics(visitor, y)[0]
    assert np.abs(visitor.inverse - inverse).max() <= 1e-8


# ---------------------------------------------------------------------------- conventions

def test_public_methods_of_the_grid_estimators_are_locked():
    for cls in (MondrianGridRidge, MondrianGridFeatures):
        for name in ("fit", "predict", "transform", "score", "__getstate__"):
            method = getattr(cls, name, None)
            if method is not None:
                assert getattr(method, "_mondrian_locked", False), (cls.__name__, name)


def test_reads_during_refits_see_a_whole_model():
    """Predictions made while other threads refit are those of one of the fitted models."""
    X, y = sine_regression(80, 2)
    models = [MondrianGridRidge(4, alpha=0.1, max_features=40, random_state=s).fit(X, y)
              for s in (0, 1)]
    expected = [m.predict(X) for m in models]
    model = models[0]

    def read():
        out = model.predict(X)
        assert any(np.array_equal(out, e) for e in expected), "a prediction of no fitted model"

    def write():
        for k in range(6):
            model.set_params(random_state=k % 2).fit(X, y)

    errors = reads_beside_writes(read, write)
    assert not errors


def test_a_fit_failing_after_the_search_leaves_the_model_intact(monkeypatch):
    X, y = sine_regression(80, 2)
    model = MondrianGridRidge(4, alpha=0.1, max_features=40, random_state=0).fit(X, y)
    state = pickle.dumps(model)
    import mondrian.grid.ridge as grid_ridge

    class Broken(grid_ridge.GridMap):
        def transform(self, X):
            raise MemoryError("simulated")

    monkeypatch.setattr(grid_ridge, "GridMap", Broken)
    with pytest.raises(MemoryError):
        model.set_params(random_state=1).fit(X, y)
    monkeypatch.undo()
    model.set_params(random_state=0)
    assert pickle.dumps(model) == state
