"""The online regressor's hyperparameter step: the hyperparameters follow their documented
schedule (re-derived when the stored points grew by ``HYPER_PARAMS_GROWTH`` or the held-out
choice was renewed, kept in between), the messages refreshed after each update are the bits of
a full upward pass, the refresh touches O(path length) nodes per point whatever the size of the
model, and an update that fails during the refresh leaves the predictions as they were."""

import pickle

import numpy as np
import pytest

from mondrian import MondrianForestRegressor
from mondrian.forest import _hyperparameters as hyper
from mondrian.forest import _online_posterior as online
from mondrian.forest._gaussian import upward_messages


def _stream(n, seed=0, d=3):
    rng = np.random.RandomState(seed)
    X = rng.uniform(size=(n, d))
    y = np.sin(6 * X[:, 0]) + X[:, 1] + 0.1 * rng.normal(size=n)
    return X, y


def _assert_full_pass(model):
    """The cached messages equal a full upward pass under the cached hyperparameters."""
    cache = model._posterior_cache
    assert cache.current(model._version)
    for tree, (mean, var) in zip(model._trees, cache.messages, strict=True):
        full_mean, full_var, _ = upward_messages(tree, cache.smoothing)
        np.testing.assert_array_equal(mean, full_mean)
        np.testing.assert_array_equal(var, full_var)


@pytest.mark.exact
@pytest.mark.parametrize("smoothing", ["hierarchical", "independent"])
def test_refreshed_messages_are_the_bits_of_a_full_pass(smoothing):
    X, y = _stream(260, seed=1)
    model = MondrianForestRegressor(n_estimators=3, smoothing=smoothing, min_samples_split=3,
                                    random_state=0)
    refreshed = 0
    for i in range(200):
        model.learn_one(X[i], y[i])
        refreshed += model._posterior_cache.work > 0
        _assert_full_pass(model)
    for start in range(200, 260, 20):  # mini-batches take the same path
        model.partial_fit(X[start:start + 20], y[start:start + 20])
        _assert_full_pass(model)
    assert refreshed > 100  # most updates refreshed in place (the others re-derived)
    # The log marginal likelihood, computed when asked after a refresh, is a full pass's.
    cache = model._posterior_cache
    expected = np.mean([upward_messages(t, cache.smoothing)[2] for t in model._trees])
    assert model.log_marginal_likelihood() == expected


def _derivation_points(n_total, first_choice, growth, choice_growth):
    """The stored counts after which the documented schedule re-derives, for a stream of one
    point per update: the first update, every held-out choice (from ``first_choice`` points,
    then each time the store grew by ``choice_growth``), and every update that grew the store
    by ``growth`` since the last derivation."""
    points, last, last_choice = [], None, 0
    for n in range(1, n_total + 1):
        chose = n >= first_choice and (not last_choice or n >= choice_growth * last_choice)
        if chose:
            last_choice = n
        if last is None or chose or n >= growth * last:
            points.append(n)
            last = n
    return points


def test_online_choice_follows_its_documented_schedule():
    X, y = _stream(400, seed=2)
    # Label-blind: the default weight search re-samples the trees at the end of its stream
    # window, which derives the hyperparameters again off this schedule.
    model = MondrianForestRegressor(n_estimators=4, random_state=0, feature_weights=None)
    derived, smoothing = [], None
    for i in range(len(y)):
        model.learn_one(X[i], y[i])
        n = i + 1
        state = model._hyper_params
        params = model._posterior().smoothing
        if state[-1] == n:  # derived now: the batch law on the points stored now
            derived.append(n)
            fresh = model._empirical_bayes(*model._hyper_statistics(n)[:4])
            assert params == fresh
        else:  # kept: exactly the previous hyperparameters
            assert params == smoothing
        smoothing = params
    assert derived == _derivation_points(len(y), hyper.MIN_SAMPLES_HELD_OUT,
                                         online.HYPER_PARAMS_GROWTH,
                                         hyper.HYPER_REFRESH_GROWTH)
    # A batch fit derives at its end, on all its points.
    batch = MondrianForestRegressor(n_estimators=4, random_state=0).fit(X, y)
    assert batch._hyper_params[-1] == len(y)


def test_changed_settings_derive_again():
    X, y = _stream(120, seed=3)
    model = MondrianForestRegressor(n_estimators=2, random_state=0).fit(X[:100], y[:100])
    model.set_params(sigmoid_rate=3.0)
    model.learn_one(X[100], y[100])
    assert model._hyper_params[-1] == 101
    assert model.hyperparameters_["sigmoid_rate"] == 3.0


def test_refresh_work_does_not_grow_with_the_stream():
    """Nodes recomputed per one-point update (the refresh's counter): about the path length,
    so its mean over a window late in the stream stays within a small factor of an early one
    (a refresh of every node would grow tenfold)."""
    X, y = _stream(3300, seed=4, d=4)
    model = MondrianForestRegressor(n_estimators=2, noise_variance=0.01, sigmoid_rate=1.0,
                                    random_state=0)
    work = {}
    for i in range(len(y)):
        before = model.__dict__.get("_hyper_params")
        model.learn_one(X[i], y[i])
        if model._hyper_params is before:  # refreshed in place (not a derivation)
            work[i] = model._posterior_cache.work
    early = np.mean([work[i] for i in range(200, 400) if i in work])
    late = np.mean([work[i] for i in range(3000, 3300) if i in work])
    nodes = sum(t.node_count for t in model._trees)
    assert late < 2.0 * early
    assert late < 0.02 * nodes


def test_failure_during_the_refresh_leaves_the_predictions(monkeypatch):
    X, y = _stream(200, seed=5)
    model = MondrianForestRegressor(n_estimators=3, random_state=0)
    i = 0
    while i < 140 or i + 1 >= online.HYPER_PARAMS_GROWTH * model._hyper_params[-1]:
        model.learn_one(X[i], y[i])  # up to an update that refreshes in place
        i += 1
    Xt = np.random.RandomState(6).uniform(size=(20, 3))
    before = model.predict(Xt, return_std=True)

    def state():
        return {k: pickle.dumps(v) for k, v in model.__dict__.items()
                if k not in ("_posterior_cache", "_rw_lock")}

    saved = state()
    real = online.refresh_messages

    def refresh_then_fail(*args):
        real(*args)  # the buffers are written in place...
        raise KeyboardInterrupt  # ...and the update fails after that

    monkeypatch.setattr(online, "refresh_messages", refresh_then_fail)
    with pytest.raises(KeyboardInterrupt):
        model.learn_one(X[i], y[i])
    assert state() == saved
    assert not model._posterior_cache.current(model._version)  # stale: recomputed
    for a, b in zip(model.predict(Xt, return_std=True), before, strict=True):
        np.testing.assert_array_equal(a, b)
    _assert_full_pass(model)
    monkeypatch.setattr(online, "refresh_messages", real)
    model.learn_one(X[i], y[i])
    _assert_full_pass(model)
