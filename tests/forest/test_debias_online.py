"""The debiased regressor online: the shorter reading's messages (kept beside the posterior cache,
out of pickles) are refreshed along the updated paths after each update, with the bits of a full
pass at the shorter lifetime on every node that reading uses; the work per update does not grow
with the stored points; a failed update leaves the model and its predictions as they were."""

import pickle

import numpy as np
import pytest

from mondrian import MondrianForestRegressor
from mondrian.forest import _online_posterior as online
from mondrian.forest import debias
from mondrian.forest._gaussian import upward_messages


def _smooth(n, seed=0, d=4):
    rng = np.random.RandomState(seed)
    X = rng.uniform(size=(n, d))
    return X, np.sin(3 * X.sum(1)) + 0.05 * rng.normal(size=n)


def _pruned_nodes(tree, lifetime):
    """The nodes of ``tree`` pruned at ``lifetime`` (the ones a reading there uses)."""
    nodes = tree.nodes_array
    keep, stack = [], [0]
    while stack:
        j = stack.pop()
        keep.append(j)
        if nodes["left_child"][j] != -1 and nodes["split_time"][j] < lifetime:
            stack += [nodes["left_child"][j], nodes["right_child"][j]]
    return np.array(keep)


def _entry(model):
    cache = model.__dict__.get("_posterior_cache")
    return None if cache is None else debias._SHORT_MESSAGES.get(cache)


def _streamed(n, seed=0, trees=4):
    """A model fed ``n`` points one at a time with a prediction before each (the prequential
    loop), with a debiased combination at the end."""
    X, y = _smooth(n + 200, seed)
    model = MondrianForestRegressor(trees, random_state=seed)
    for i in range(n):
        if i:
            model.predict_one(X[i])
        model.learn_one(X[i], y[i])
    assert model.debias_ is not None
    return model, X[n:], y[n:]


def test_refreshed_short_messages_are_a_full_pass():
    model, X, y = _streamed(400)
    Xt = np.random.RandomState(1).uniform(size=(30, 4))
    refreshed = 0
    for i in range(120):
        model.predict_one(X[i])
        before = _entry(model)
        model.learn_one(X[i], y[i])
        entry = _entry(model)
        if entry is None or entry is before:
            continue  # a derivation of the hyperparameters: a full pass at the next read
        refreshed += 1
        lifetime = model._debias_choice[0]
        assert entry[0] == (model._version, lifetime,
                            tuple(t.node_count for t in model._trees))
        cache = model._posterior_cache
        for tree, (mean, var) in zip(model._trees, entry[1], strict=True):
            full_mean, full_var, _ = upward_messages(tree, cache.smoothing, lifetime)
            nodes = _pruned_nodes(tree, lifetime)
            np.testing.assert_array_equal(mean[nodes], full_mean[nodes])
            np.testing.assert_array_equal(var[nodes], full_var[nodes])
        if i % 10 == 0:  # the predictions of a full pass, bit for bit
            refreshed_pred = model.predict(Xt, return_std=True)
            del debias._SHORT_MESSAGES[cache]
            for a, b in zip(model.predict(Xt, return_std=True), refreshed_pred, strict=True):
                np.testing.assert_array_equal(a, b)
    assert refreshed > 80


def test_short_refresh_work_does_not_grow_with_the_stream():
    """Nodes recomputed per one-point update in the shorter reading: about the path length
    above ``l``, so the mean late in the stream stays within a small factor of an early one
    (a full pass per update, as before, grows with the trees)."""
    X, y = _smooth(2600, seed=3)
    model = MondrianForestRegressor(3, random_state=0)
    work = {}
    for i in range(len(y)):
        if i:
            model.predict_one(X[i])
        before = _entry(model)
        model.learn_one(X[i], y[i])
        entry = _entry(model)
        if entry is not None and before is not None and entry is not before:
            work[i] = entry[4]
    early = [work[i] for i in range(300, 600) if i in work]
    late = [work[i] for i in range(2300, 2600) if i in work]
    assert len(early) > 200 and len(late) > 200
    nodes = sum(t.node_count for t in model._trees)
    assert np.mean(late) < 2.0 * np.mean(early)
    assert np.mean(late) < 0.02 * nodes


def test_failure_during_the_short_refresh_leaves_the_model(monkeypatch):
    model, X, y = _streamed(300, seed=3, trees=3)  # (a stream that keeps a combination)
    i = 0
    while i + 1 >= online.HYPER_PARAMS_GROWTH * model._hyper_params[-1]:
        model.predict_one(X[i])
        model.learn_one(X[i], y[i])  # up to an update that refreshes in place
        i += 1
    Xt = np.random.RandomState(6).uniform(size=(20, 4))
    before = model.predict(Xt, return_std=True)
    assert _entry(model) is not None
    saved = pickle.dumps(model)
    real = debias.refresh_messages

    def refresh_then_fail(*args):
        real(*args)  # the short buffers are written in place...
        raise KeyboardInterrupt  # ...and the update fails after that

    monkeypatch.setattr(debias, "refresh_messages", refresh_then_fail)
    with pytest.raises(KeyboardInterrupt):
        model.learn_one(X[i], y[i])
    assert _entry(model) is None  # the restored cache: a full pass at the next read
    for a, b in zip(model.predict(Xt, return_std=True), before, strict=True):
        np.testing.assert_array_equal(a, b)
    # (the restored posterior cache is marked stale until read: the same bytes once read)
    assert pickle.dumps(model) == saved
    monkeypatch.setattr(debias, "refresh_messages", real)
    model.learn_one(X[i], y[i])
    refreshed = model.predict(Xt, return_std=True)
    # The short messages stay out of the pickle: a loaded model predicts the same bits.
    loaded = pickle.loads(pickle.dumps(model))
    assert _entry(loaded) is None
    for a, b in zip(loaded.predict(Xt, return_std=True), refreshed, strict=True):
        np.testing.assert_array_equal(a, b)
