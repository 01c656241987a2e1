"""An online update that fails part-way leaves the model bit-identical to before.

Failures are injected from inside the update: ``fail_after_trees`` raises a ``MemoryError`` or
a ``KeyboardInterrupt`` after some trees were extended, and a timer thread delivers a real
``KeyboardInterrupt`` (``_thread.interrupt_main``) at random moments of the call.
"""

import pickle

import numpy as np
import pytest

from mondrian import MondrianForestClassifier, MondrianForestDensity, MondrianForestRegressor
from mondrian.core.ensemble import fail_after_trees
from mondrian.kernel import MondrianKernelFeatures, MondrianKernelRidge

from _checks import run_interrupted

rng = np.random.RandomState(0)
X = rng.rand(300, 3)
Y_REG = X[:, 0] + 0.1 * rng.randn(300)
Y_CLF = (X[:, 0] > 0.5).astype(int)
N_TREES = 4


def _classifier_batch(model, a, b):
    return model.partial_fit(X[a:b], Y_CLF[a:b])


def _classifier_new_class(model, a, b):
    return model.partial_fit(X[a:b], np.full(b - a, 2))


def _classifier_one(model, a, b):
    return model.learn_one(X[a], Y_CLF[a])


def _classifier_one_new_class(model, a, b):
    return model.learn_one(X[a], 5)


# name -> (make model, first call, update): the update is tried on a model fitted on X[:n_first].
CASES = {
    "classifier-batch": (lambda: MondrianForestClassifier(N_TREES, random_state=0),
                         lambda m, n: m.fit(X[:n], Y_CLF[:n]), _classifier_batch),
    "classifier-new-class": (lambda: MondrianForestClassifier(N_TREES, random_state=0),
                             lambda m, n: m.fit(X[:n], Y_CLF[:n]), _classifier_new_class),
    # n_estimators raised after fit: the update first grows two trees on the stored points.
    "classifier-more-trees": (
        lambda: MondrianForestClassifier(N_TREES, random_state=0),
        lambda m, n: m.fit(X[:n], Y_CLF[:n]).set_params(n_estimators=N_TREES + 2),
        _classifier_batch),
    "classifier-learn_one": (lambda: MondrianForestClassifier(N_TREES, random_state=0),
                             lambda m, n: m.fit(X[:n], Y_CLF[:n]), _classifier_one),
    "classifier-learn_one-new-class": (
        lambda: MondrianForestClassifier(N_TREES, random_state=0),
        lambda m, n: m.fit(X[:n], Y_CLF[:n]), _classifier_one_new_class),
    "classifier-threads": (lambda: MondrianForestClassifier(N_TREES, n_jobs=2, random_state=0),
                           lambda m, n: m.fit(X[:n], Y_CLF[:n]), _classifier_batch),
    "regressor": (lambda: MondrianForestRegressor(N_TREES, random_state=0),
                  lambda m, n: m.fit(X[:n], Y_REG[:n]),
                  lambda m, a, b: m.partial_fit(X[a:b], Y_REG[a:b])),
    "regressor-learn_one": (lambda: MondrianForestRegressor(N_TREES, random_state=0),
                            lambda m, n: m.fit(X[:n], Y_REG[:n]),
                            lambda m, a, b: m.learn_one(X[a], Y_REG[a])),
    # One row on 150 stored: a small update, rolled back by the undo logs.
    "classifier-small-batch": (lambda: MondrianForestClassifier(N_TREES, random_state=0),
                               lambda m, n: m.fit(X[:n], Y_CLF[:n]),
                               lambda m, a, b: m.partial_fit(X[a:a + 2], Y_CLF[a:a + 2])),
    "density": (lambda: MondrianForestDensity(N_TREES, lifetime=4.0, random_state=0),
                lambda m, n: m.fit(X[:n]), lambda m, a, b: m.partial_fit(X[a:b])),
    "kernel-features": (lambda: MondrianKernelFeatures(N_TREES, lifetime=2.0, random_state=0),
                        lambda m, n: m.fit(X[:n]), lambda m, a, b: m.partial_fit(X[a:b])),
    "kernel-ridge": (lambda: MondrianKernelRidge(N_TREES, lifetime=2.0, random_state=0),
                     lambda m, n: m.fit(X[:n], Y_REG[:n]),
                     lambda m, a, b: m.partial_fit(X[a:b], Y_REG[a:b])),
}

# During the warm-up of the feature map (fewer than 64 points) an update re-samples the trees;
# afterwards it extends them.
PHASES = {"warm-up": (20, 20, 30), "frozen": (150, 150, 170)}


def _fitted(case, phase):
    make, first, _ = CASES[case]
    model = make()
    first(model, PHASES[phase][0])
    return model


@pytest.fixture(autouse=True)
def _disarm():
    yield
    fail_after_trees(None)


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("exception", [MemoryError, KeyboardInterrupt])
@pytest.mark.parametrize("after", [0, 1, N_TREES - 1])
def test_failure_inside_the_core_leaves_model_unchanged(case, phase, exception, after):
    model = _fitted(case, phase)
    _, a, b = PHASES[phase]
    update = CASES[case][2]
    before = pickle.dumps(model)
    predictions = _predict(model)
    fail_after_trees(after, exception)
    with pytest.raises(exception):
        update(model, a, b)
    fail_after_trees(None)
    assert pickle.dumps(model) == before
    for got, want in zip(_predict(model), predictions, strict=True):
        np.testing.assert_array_equal(got, want)
    # The model still learns, exactly as one that never failed.
    reference = pickle.loads(before)
    update(reference, a, b)
    update(model, a, b)
    assert _canonical(model) == _canonical(reference)


def _canonical(model):
    """Pickle bytes of every attribute after a round trip (how objects are shared inside one
    pickle may differ between a model and a loaded copy of it; the values may not)."""
    state = pickle.loads(pickle.dumps(model)).__dict__
    return {name: pickle.dumps(value) for name, value in state.items()}


def _predict(model):
    out = []
    for name in ("predict_proba", "predict", "score_samples", "transform"):
        if hasattr(model, name):
            value = getattr(model, name)(X[:20])
            out.append(value.toarray() if hasattr(value, "toarray") else np.asarray(value))
    return out


@pytest.mark.parametrize("case", ["classifier-batch", "classifier-learn_one", "regressor",
                                  "density", "kernel-ridge", "classifier-threads"])
def test_keyboard_interrupt_from_a_timer_gives_before_or_after(case):
    model = _fitted(case, "frozen")
    _, a, b = PHASES["frozen"]
    update = CASES[case][2]
    before = pickle.dumps(model)
    after_model = pickle.loads(before)
    update(after_model, a, b)
    after = _canonical(after_model)
    unchanged = _canonical(pickle.loads(before))
    delays = np.random.RandomState(1).uniform(0, 0.004, size=25)
    interrupted = 0
    for delay in delays:
        trial = pickle.loads(before)
        interrupted += run_interrupted(lambda trial=trial: update(trial, a, b), delay)
        assert _canonical(trial) in (unchanged, after)
    assert interrupted > 0


REFITS = {
    "classifier": (lambda: MondrianForestClassifier(N_TREES, random_state=0),
                   lambda m, n: m.fit(X[:n], Y_CLF[:n])),
    "regressor": (lambda: MondrianForestRegressor(N_TREES, random_state=0),
                  lambda m, n: m.fit(X[:n], Y_REG[:n])),
    "density": (lambda: MondrianForestDensity(N_TREES, lifetime=4.0, random_state=0),
                lambda m, n: m.fit(X[:n])),
    "kernel-features": (lambda: MondrianKernelFeatures(N_TREES, lifetime=2.0, random_state=0),
                        lambda m, n: m.fit(X[:n])),
    "kernel-ridge": (lambda: MondrianKernelRidge(N_TREES, lifetime=2.0, random_state=0),
                     lambda m, n: m.fit(X[:n], Y_REG[:n])),
}


@pytest.mark.parametrize("case", REFITS)
@pytest.mark.parametrize("exception", [MemoryError, KeyboardInterrupt])
def test_failed_refit_keeps_the_previous_model(case, exception):
    make, fit = REFITS[case]
    model = make()
    fit(model, 100)
    before = pickle.dumps(model)
    fail_after_trees(1, exception)
    with pytest.raises(exception):
        fit(model, 200)
    assert pickle.dumps(model) == before
