"""Readers and writers on one model in several threads.

Before the reader-writer lock, ``predict`` concurrent with ``partial_fit`` read node buffers
that the writer had just reallocated: the process died with a segmentation fault. Each case runs
in a subprocess so that a crash fails the test instead of ending the test run.
"""

import pickle
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from sklearn.base import clone

from mondrian import MondrianForestClassifier, MondrianForestRegressor
from mondrian.estimator.locking import LOCK_ATTRIBUTE, ReadWriteLock

SCRIPT = textwrap.dedent("""
    import sys, threading, time
    import numpy as np
    from mondrian import (MondrianForestClassifier, MondrianForestRegressor,
                          MondrianForestDensity)
    from mondrian.kernel import MondrianKernelRidge
    name = sys.argv[1]
    rng = np.random.RandomState(0)
    X = rng.rand(6000, 3)
    if name == "classifier":
        model, y = MondrianForestClassifier(8, random_state=0), X[:, 0] > .5
        read = "predict_proba"
    elif name == "regressor":
        model, y, read = MondrianForestRegressor(8, random_state=0), X[:, 1], "predict"
    elif name == "density":
        model, y = MondrianForestDensity(8, lifetime=5.0, random_state=0), None
        read = "score_samples"
    else:
        model, y, read = MondrianKernelRidge(8, lifetime=3.0, random_state=0), X[:, 1], "predict"
    first = 200
    if y is None:
        model.fit(X[:first])
    else:
        model.fit(X[:first], y[:first])
    stop = threading.Event()
    errors = []

    def reader():
        Q = rng.rand(200, 3)
        while not stop.is_set():
            try:
                out = getattr(model, read)(Q)
                assert np.all(np.isfinite(out))
            except Exception as exc:  # noqa: BLE001
                errors.append(repr(exc))
                return

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        step = int(sys.argv[2])
        for start in range(first, len(X), step):
            batch = X[start:start + step]
            if y is None:
                model.partial_fit(batch)
            else:
                model.partial_fit(batch, y[start:start + step])
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[:3]
    print("ok", model.n_samples_seen_ if hasattr(model, "n_samples_seen_") else "")
""")


def run_case(name, step=5):
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, name, str(step)], capture_output=True, text=True,
        timeout=600,
    )


@pytest.mark.parametrize("name", ["classifier", "regressor", "density", "kernel_ridge"])
def test_readers_and_writer_together(name):
    result = run_case(name, step=50 if name == "kernel_ridge" else 5)
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    assert result.stdout.startswith("ok")


def test_lock_shares_reads_and_excludes_writes():
    lock = ReadWriteLock()
    lock.acquire_read()
    got = []
    other = threading.Thread(target=lambda: (lock.acquire_read(), got.append("read"),
                                             lock.release_read()))
    other.start()
    other.join(5)
    assert got == ["read"]  # two readers at once
    writer = threading.Thread(target=lambda: (lock.acquire_write(), got.append("write"),
                                              lock.release_write()))
    writer.start()
    writer.join(0.2)
    assert got == ["read"]  # the writer waits for the reader
    lock.acquire_read()  # a nested read does not wait for the waiting writer
    lock.release_read()
    with pytest.raises(RuntimeError):
        lock.acquire_write()  # upgrading a read would deadlock
    lock.release_read()
    writer.join(5)
    assert got == ["read", "write"]
    lock.acquire_write()
    lock.acquire_write()  # re-entrant for the writing thread
    lock.acquire_read()
    lock.release_read()
    lock.release_write()
    lock.release_write()


def test_lock_is_not_pickled_and_clone_works():
    rng = np.random.RandomState(0)
    X = rng.rand(50, 2)
    for model, y in ((MondrianForestClassifier(3, random_state=0), X[:, 0] > .5),
                     (MondrianForestRegressor(3, random_state=0), X[:, 0])):
        model.fit(X, y)
        assert LOCK_ATTRIBUTE in model.__dict__
        loaded = pickle.loads(pickle.dumps(model))
        assert LOCK_ATTRIBUTE not in loaded.__dict__
        np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
        assert loaded.__dict__[LOCK_ATTRIBUTE] is not model.__dict__[LOCK_ATTRIBUTE]
        clone(model).fit(X, y)
        pruned = model.prune(model.lifetime_ / 2 if np.isfinite(model.lifetime_) else 1.0)
        assert pruned.__dict__.get(LOCK_ATTRIBUTE) is not model.__dict__[LOCK_ATTRIBUTE]


def test_every_public_method_of_every_online_estimator_is_locked():
    from mondrian import MondrianForestDensity
    from mondrian.kernel import (
        MondrianKernelFeatures,
        MondrianKernelRidge,
        MondrianKernelSGDClassifier,
        MondrianKernelSGDRegressor,
    )

    for cls in (MondrianForestClassifier, MondrianForestRegressor, MondrianForestDensity,
                MondrianKernelFeatures, MondrianKernelRidge, MondrianKernelSGDRegressor,
                MondrianKernelSGDClassifier):
        for name in ("fit", "partial_fit", "learn_one", "predict", "predict_proba",
                     "transform", "score_samples", "lifetime_path", "__getstate__"):
            method = getattr(cls, name, None)
            if method is not None:
                assert getattr(method, "_mondrian_locked", False), (cls.__name__, name)
