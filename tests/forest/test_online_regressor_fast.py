"""The online regressor's one-row path and its re-choices (issue 25): ``learn_one`` in the
steady stream is the route's update bit for bit and atomic, and the held-out re-choices follow
their documented local search of the grid (:func:`grid_search`) from the last choice."""

import pickle

import numpy as np
import pytest

from mondrian import MondrianForestRegressor
from mondrian.forest import _hyperparameters as hyper
from mondrian.forest import _online_posterior as online
from mondrian.forest._hyperparameters import grid_search


def _stream(n, seed=0):
    """Three features, a smooth target of the first two and Gaussian noise."""
    X = np.random.RandomState(seed).uniform(size=(n, 4))
    return X[:, :3], np.sin(6 * X[:, 0]) + X[:, 1] + 0.2 * (X[:, 3] - 0.5)


def _state(model):
    return {k: pickle.dumps(v) for k, v in model.__dict__.items()
            if k not in ("_posterior_cache", "_rw_lock")}


# ------------------------------------------------------------------------------- the fast path

@pytest.mark.exact
def test_the_fast_path_is_the_route_bit_for_bit(monkeypatch):
    X, y = _stream(400, seed=1)
    targets = [float(v) if i % 3 else int(round(10 * v)) for i, v in enumerate(y)]

    def run():
        # (Uniform weights: no stream window, whose 512 rows this stream never reaches.)
        model = MondrianForestRegressor(4, feature_weights=None, random_state=0)
        preds = []
        for i in range(len(y)):
            if i:
                preds.append(model.predict_one(X[i]))
            model.learn_one(X[i] if i % 2 else dict(enumerate(X[i])), targets[i])
        return model, preds

    taken = []
    real = online.OnlinePosteriorMixin._fast_one
    monkeypatch.setattr(online.OnlinePosteriorMixin, "_fast_one",
                        lambda self, x, y: taken.append(real(self, x, y)) or taken[-1])
    fast, fast_preds = run()
    assert sum(taken) > 250  # most rows took it
    monkeypatch.setattr(online.OnlinePosteriorMixin, "_fast_one", lambda self, x, y: False)
    route, route_preds = run()
    assert fast_preds == route_preds
    assert pickle.dumps(fast) == pickle.dumps(route)


def test_a_failure_in_the_fast_path_leaves_the_model(monkeypatch):
    X, y = _stream(200, seed=5)
    model = MondrianForestRegressor(3, feature_weights=None, random_state=0)
    for i in range(150):
        model.learn_one(X[i], y[i])
    i = 150
    while model._hyper_choice_due(i + 1) or model._hyper_params_due(i + 1):
        model.learn_one(X[i], y[i])
        i += 1
    Xt = np.random.RandomState(6).uniform(size=(20, 3))
    before = model.predict(Xt, return_std=True)
    saved, n = _state(model), model._store.n_samples
    real = online.refresh_messages

    def refresh_then_fail(*args):
        real(*args)  # the buffers are written in place...
        raise KeyboardInterrupt  # ...and the update fails after that

    monkeypatch.setattr(online, "refresh_messages", refresh_then_fail)
    assert model._frozen_stream()  # the fast path's state
    with pytest.raises(KeyboardInterrupt):
        model.learn_one(X[i], y[i])
    assert _state(model) == saved and model._store.n_samples == n
    assert not model._posterior_cache.current(model._version)  # stale: recomputed
    for a, b in zip(model.predict(Xt, return_std=True), before, strict=True):
        np.testing.assert_array_equal(a, b)
    monkeypatch.setattr(online, "refresh_messages", real)
    model.learn_one(X[i], y[i])
    assert model._store.n_samples == n + 1


@pytest.mark.parametrize("target", [np.nan, "1.0", None, 1e300])
def test_what_the_fast_path_refuses_takes_the_route(target):
    X, y = _stream(120, seed=2)
    model = MondrianForestRegressor(2, feature_weights=None, random_state=0)
    for i in range(100):
        model.learn_one(X[i], y[i])
    saved = _state(model)
    if target == 1e300:  # a rescaled target map: the route, which rescales every tree
        model.learn_one(X[100], target)
        assert model._y_scaler.scale > 1e200
        return
    with pytest.raises((ValueError, TypeError)):
        model.learn_one(X[100], target)
    assert _state(model) == saved


# ----------------------------------------------------------------------------- the local search

def test_grid_search_whole_grid_and_local_windows():
    table = np.add.outer((np.arange(14) - 9.0) ** 2, (np.arange(9) - 2.0) ** 2)
    asked = []

    def score(cells):
        asked.extend(cells)
        return [(c, table[c]) for c in cells]

    assert grid_search(score, table.shape) == (9, 2)
    assert sorted(asked) == list(np.ndindex(table.shape))  # every cell once
    asked.clear()
    # From a far cell the windows climb to the optimum of this convex table, scoring few cells.
    assert grid_search(score, table.shape, (0, 8)) == (9, 2)
    assert len(asked) == len(set(asked)) < 14 * 9
    # The best cell's whole window is scored; nothing beyond the windows of visited cells.
    window = set(hyper._window((9, 2), table.shape))
    assert window <= set(asked)
    # Two basins: the search stays in the one it starts in (a local optimum).
    two = np.minimum(table, np.add.outer((np.arange(14) - 1.0) ** 2, (np.arange(9) - 7.0) ** 2)
                     - 0.5)
    assert grid_search(lambda cells: [(c, two[c]) for c in cells], two.shape) == (1, 7)
    assert grid_search(lambda cells: [(c, two[c]) for c in cells], two.shape, (12, 1)) == (9, 2)
    # NaN scores are scored once and never chosen.
    nan = table.copy()
    nan[8:11, 1:4] = np.nan
    seen = []
    best = grid_search(lambda cells: seen.extend(cells) or [(c, nan[c]) for c in cells],
                       nan.shape, (9, 2))
    assert np.isfinite(nan[best]) and len(seen) == len(set(seen))


def test_online_re_choices_follow_the_documented_local_search(monkeypatch):
    """A stream's first choice scores the whole grid, every re-choice the cells of the local
    search from the last choice's cell; a batch fit scores the whole grid."""
    X, y = _stream(400, seed=3)
    calls = []
    real = hyper.grid_search

    def spy(score, shape, centre=None):
        asked = []
        best = real(lambda cells: asked.extend(cells) or score(cells), shape, centre)
        calls.append((centre, len(asked), best))
        return best

    monkeypatch.setattr(hyper, "grid_search", spy)
    model = MondrianForestRegressor(4, random_state=0)
    cells, at = [], []
    for i in range(len(y)):
        before = model.__dict__.get("_hyper_choice")
        model.learn_one(X[i], y[i])
        if len(calls) > len(cells):
            cells.append((before, model._hyper_choice))
            at.append(i + 1)
    shape = (len(hyper.HELD_OUT_NOISE_SHARES), len(hyper.HELD_OUT_RATE_MULTIPLIERS))
    assert at == [50, 75, 113, 170, 255, 383]  # from 50 points, then by HYPER_REFRESH_GROWTH
    assert calls[0][0] is None and calls[0][1] == shape[0] * shape[1]
    for (centre, n_asked, best), (before, after) in zip(calls[1:], cells[1:], strict=True):
        grid_cell = (list(hyper.HELD_OUT_NOISE_SHARES).index(before[0]),
                     list(hyper.HELD_OUT_RATE_MULTIPLIERS).index(before[1]))
        assert centre == grid_cell  # from the last choice
        assert n_asked < shape[0] * shape[1]
        assert after[:2] == (hyper.HELD_OUT_NOISE_SHARES[best[0]],
                             hyper.HELD_OUT_RATE_MULTIPLIERS[best[1]])
    calls.clear()
    MondrianForestRegressor(4, random_state=0).fit(X, y)
    assert calls[0][0] is None and calls[0][1] == shape[0] * shape[1]
