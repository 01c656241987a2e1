"""Deterministic pickles: a model's bytes depend on its values, not on its history.

For every estimator of ``mondrian.__all__``: pickling twice gives the same bytes, and so does
pickling a reloaded copy (``dumps(loads(dumps(m))) == dumps(m)``); for every estimator that learns
online, learning the same points on a reloaded copy gives the bytes of learning them on the
original (``partial_fit`` and ``learn_one``). Copies (``copy.copy``, ``copy.deepcopy``) keep the
model's predictions and bytes. ``BYTE_STABLE`` records the estimators checked.
"""

import copy
import pickle

import pytest
from test_fuzz_estimators import ESTIMATORS
from test_state_fuzzing import _data

pytestmark = pytest.mark.exact

BYTE_STABLE = set()


def _fit(name, n=60):
    factory, kind = ESTIMATORS[name]
    X, y = _data(kind, n=90)
    model = factory()
    return (model.fit(X[:n]) if y is None else model.fit(X[:n], y[:n])), X, y


def _learn(model, X, y, how):
    if how == "partial_fit":
        model.partial_fit(X) if y is None else model.partial_fit(X, y)
        return
    for i in range(X.shape[0]):
        x = dict(enumerate(X[i]))
        model.learn_one(x) if y is None else model.learn_one(x, y[i])


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_same_bytes_reloaded_or_not(name):
    model, _, _ = _fit(name)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        data = pickle.dumps(model, protocol=protocol)
        assert pickle.dumps(pickle.loads(data), protocol=protocol) == data, protocol
    data = pickle.dumps(model)
    assert pickle.dumps(model) == data
    reloaded = pickle.loads(data)
    assert pickle.dumps(reloaded) == data
    assert pickle.dumps(pickle.loads(pickle.dumps(reloaded))) == data
    assert pickle.dumps(copy.deepcopy(model)) == data
    assert pickle.dumps(copy.copy(model)) == data
    BYTE_STABLE.add(name)


@pytest.mark.parametrize("how", ["partial_fit", "learn_one"])
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_learning_after_a_reload_gives_the_same_bytes(name, how):
    if not hasattr(ESTIMATORS[name][0](), how):
        pytest.skip(f"{name} has no {how}")
    model, X, y = _fit(name)
    reloaded = pickle.loads(pickle.dumps(model))
    new_X, new_y = X[60:], None if y is None else y[60:]
    _learn(model, new_X, new_y, how)
    _learn(reloaded, new_X, new_y, how)
    assert pickle.dumps(reloaded) == pickle.dumps(model)


def test_canonical_states_load_as_before():
    """A pickle still names the same classes and states: a reloaded model predicts the same
    bits, and its state (``__getstate__``) holds the same values as the original's."""
    model, X, y = _fit("MondrianForestRegressor")
    reloaded = pickle.loads(pickle.dumps(model))
    assert reloaded.predict(X).tobytes() == model.predict(X).tobytes()
    a, b = model.__getstate__(), reloaded.__getstate__()
    assert sorted(a) == sorted(b)


def test_every_public_estimator_is_covered():
    """(After the tests above: the estimators whose bytes were checked.)"""
    if not BYTE_STABLE:
        pytest.skip("run with the byte-stability tests above")
    assert BYTE_STABLE == set(ESTIMATORS)
