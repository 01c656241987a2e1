"""No public read can skip the model's lock: every public method and property of every estimator
of ``mondrian.__all__``, found by introspection (a method added later is covered without any list
to update), of the forests' ``estimators_`` views and of the ``tree_`` structures.

* While another thread holds the write lock of the model, every public member waits (a view
  waits for its forest's writer): checked for all of them at once.
* Readers beside a writer: every read member is called with real arguments from reader threads
  while a writer thread updates the model (``partial_fit``/``learn_one``, or ``fit`` for the batch
  models), in a subprocess (a use-after-free would kill it): no crash, no error.
* Pickling serialises the ensemble, store and ridge objects under the lock too (torn pickles).
"""

import inspect
import pickle
import re
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from _catalog import estimator_classes, fitted
from mondrian.estimator.locking import LockedMethodsMixin, model_lock, mutating

# scikit-learn's configuration descriptors (not plain functions): they set how the estimator is
# called or what it returns (metadata routing, output container) and never read the model.
_CONFIGURATION = re.compile(r"^set_output$|^set_\w+_request$")


def public_members(obj):
    """``[(name, kind)]`` of the public members of ``obj``'s class: ``"method"`` (plain
    functions, ``__getstate__`` included) or ``"property"``. Class constants, static and class
    methods and scikit-learn's configuration descriptors hold no model state and are left out;
    any other kind of member fails (it would need a rule)."""
    cls = type(obj)
    out = []
    for name in [*dir(cls), "__getstate__"]:
        if name.startswith("_") and name != "__getstate__":
            continue
        raw = inspect.getattr_static(cls, name)
        if isinstance(raw, property):
            out.append((name, "property"))
        elif inspect.isfunction(raw):
            out.append((name, "method"))
        elif isinstance(raw, (staticmethod, classmethod)) or _CONFIGURATION.match(name):
            continue
        elif not callable(raw) and not hasattr(raw, "__get__"):
            continue  # a class constant
        else:
            raise AssertionError(f"{cls.__name__}.{name}: a {type(raw).__name__} member needs a "
                                 "locking rule")
    return out


def arguments(owner, method, X, y):
    """Arguments for ``method`` of a model fitted on ``(X, y)`` (``owner``: the model, or the
    forest of a view): ``X`` and ``y`` whenever it takes them (a writer gets the training data
    again, a reader the first rows), else its required parameters; an unknown one fails."""
    args = {}
    parameters = inspect.signature(method).parameters
    rows = X.shape[0] if getattr(method, "_mondrian_writes", False) else 15
    for p in parameters.values():
        required = p.default is inspect.Parameter.empty and p.kind not in (
            p.VAR_POSITIONAL, p.VAR_KEYWORD)
        if p.name == "X":
            args["X"] = X[:rows]
        elif p.name == "y":
            args["y"] = None if y is None else y[0] if "x" in parameters else y[:rows]
        elif p.name == "self" or not required:
            continue
        elif p.name == "x":
            args["x"] = X[0]
        elif p.name == "lifetime":
            life = getattr(owner, "lifetime_", 1.0)
            args["lifetime"] = life / 2 if np.isfinite(life) else 0.5
        elif p.name == "sigma":
            args["sigma"] = 1.0
        elif p.name == "V":
            args["V"] = np.ones((X.shape[0], 2))
        else:
            raise AssertionError(f"no argument recipe for {method.__qualname__}({p.name})")
    return args


def _objects():
    """``[(label, object, owner, X, y)]``: a small fitted model of every exported estimator
    class, plus the views that read a model's buffers (``estimators_[0]``, ``tree_``)."""
    out = []
    for cls in estimator_classes():
        model, X, y = fitted(cls)
        out.append((cls.__name__, model, model, X, y))
        if getattr(model, "_tree_view_class", None) is not None:
            view = model.estimators_[0]
            out.append((f"{cls.__name__}.estimators_[0]", view, model, X, y))
            out.append((f"{cls.__name__}.estimators_[0].tree_", view.tree_, model, X, y))
        if "tree_" in dir(cls):
            out.append((f"{cls.__name__}.tree_", model.tree_, model, X, y))
    return out


def _touch(obj, name, kind, kwargs, finished, failed):
    try:
        value = getattr(obj, name)
        if kind == "method":
            value(**kwargs)
    except AttributeError:
        if kind != "property":  # a property may say that the attribute is absent
            raise
    except Exception as exc:  # noqa: BLE001
        # Online updates of a view are refused, and so is forgetting every training point.
        if "read-only view" not in str(exc) and "cannot forget all" not in str(exc):
            failed.append((name, repr(exc)))
    finally:
        finished.append(name)


def test_every_public_member_waits_for_a_writer():
    objects = _objects()
    owners = {id(owner): owner for _, _, owner, _, _ in objects}
    calls = [(label, obj, name, kind,
              arguments(owner, getattr(type(obj), name), X, y) if kind == "method" else {})
             for label, obj, owner, X, y in objects for name, kind in public_members(obj)]
    locks = [model_lock(owner) for owner in owners.values()]
    for lock in locks:
        lock.acquire_write()
    finished, failed, threads = [], [], []
    try:
        for label, obj, name, kind, kwargs in calls:
            thread = threading.Thread(target=_touch,
                                      args=(obj, name, kind, kwargs, finished, failed),
                                      name=f"{label}.{name}", daemon=True)
            thread.start()
            threads.append(thread)
        time.sleep(0.5)
        early = [thread.name for thread in threads if not thread.is_alive()]
    finally:
        for lock in locks:
            lock.release_write()
    for thread in threads:
        thread.join(120)
    assert not early, f"ran while a writer held the lock: {early}"
    assert len(finished) == len(calls)
    assert not failed, "\n".join(map(str, failed))
    # The known holes are covered.
    names = {f"{label}.{name}" for label, _, name, _, _ in calls}
    for hole in ("MondrianForestRegressor.decision_path",
                 "MondrianForestRegressor.log_marginal_likelihood",
                 "MondrianForestClassifier.feature_importances_",
                 "MondrianForestClassifier.estimators_[0].predict_proba",
                 "MondrianForestRegressor.estimators_[0].tree_.threshold"):
        assert hole in names
    print(f"{len(calls)} members of {len(objects)} objects "
          f"({len(estimator_classes())} estimator classes) wait for a writer")


def test_mutating_marks_a_new_writer_and_other_members_read():
    class Model(LockedMethodsMixin):
        @mutating
        def forget(self):
            return model_lock(self)._writer == threading.get_ident()

        def peek(self):
            return model_lock(self)._read_depth()

        @property
        def size_(self):
            return model_lock(self)._read_depth()

    model = Model()
    assert model.forget() is True
    assert model.peek() == 1 and model.size_ == 1
    assert Model.forget._mondrian_writes and not Model.peek._mondrian_writes


def test_pickle_serialises_the_ensemble_under_the_lock():
    """The ensemble, store and ridge objects of the state are pickled after ``__getstate__``
    returned: the read lock must still be held then."""
    model, _, _ = fitted(estimator_classes()[3])  # MondrianForestRegressor
    held = []

    class Probe:
        def __reduce__(self):
            held.append(model_lock(model)._read_depth())
            return (int, ())

    model.__dict__["_probe"] = Probe()
    try:
        pickle.dumps(model)
        pickle.dumps(model, protocol=2)
    finally:
        del model.__dict__["_probe"]
    assert held == [1, 1]
    assert model_lock(model)._read_depth() == 0 and model_lock(model)._readers == 0


def test_the_lock_mixin_comes_before_the_state_mixin():
    """``VersionedStateMixin.__reduce_ex__`` takes no lock of its own: the read hold that covers
    the whole pickle is taken by ``LockedMethodsMixin.__reduce_ex__``, so it must come first."""
    from mondrian.estimator.versioned import VersionedStateMixin

    for cls in estimator_classes():
        mro = cls.__mro__
        if VersionedStateMixin in mro:
            assert LockedMethodsMixin in mro, cls
            assert mro.index(LockedMethodsMixin) < mro.index(VersionedStateMixin), cls


def test_copies_hold_the_lock_until_the_state_is_copied():
    """``copy.copy`` and ``copy.deepcopy`` copy the ensemble and store after ``__getstate__``
    returned: the read lock must still be held then (a writer would tear the copy)."""
    import copy

    model, _, _ = fitted(estimator_classes()[3])  # MondrianForestRegressor
    held = []

    class Probe:
        def __deepcopy__(self, memo):
            held.append(model_lock(model)._read_depth())
            return self

    model.__dict__["_probe"] = Probe()
    try:
        copy.deepcopy(model)
    finally:
        del model.__dict__["_probe"]
    assert held == [1]
    assert model_lock(model)._read_depth() == 0 and model_lock(model)._readers == 0


def test_a_shallow_copy_of_a_view_stays_a_view_of_its_forest():
    """``copy.copy(estimators_[i])`` shares the forest's trees: it reads under the forest's
    lock and follows the forest's later updates, like the view it copies."""
    import copy

    from mondrian import MondrianForestRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 2))
    y = X[:, 0] + 0.1 * rng.normal(size=600)
    forest = MondrianForestRegressor(n_estimators=2, random_state=0,
                                     feature_weights=None).fit(X[:100], y[:100])
    shallow = copy.copy(forest.estimators_[0])
    assert model_lock(shallow) is model_lock(forest)
    forest.partial_fit(X[100:], y[100:])
    np.testing.assert_array_equal(shallow.predict(X[:5]), forest.estimators_[0].predict(X[:5]))
    deep = copy.deepcopy(forest.estimators_[0])  # owns its trees: a lock of its own
    assert model_lock(deep) is not model_lock(forest)



def test_a_shallow_copy_of_a_fitted_forest_shares_its_lock():
    """``copy.copy`` of a fitted forest shares its trees, so it shares its lock: a write
    through the original waits for the copy's reads and drops the copy's prediction cache
    (the copy then predicts from the updated trees, like the original)."""
    import copy

    from mondrian import MondrianForestClassifier

    rng = np.random.default_rng(1)
    X = rng.uniform(size=(400, 3))
    y = (X[:, 0] > 0.5).astype(int)
    forest = MondrianForestClassifier(n_estimators=3, random_state=0,
                                      feature_weights=None).fit(X[:300], y[:300])
    shallow = copy.copy(forest)
    assert model_lock(shallow) is model_lock(forest)
    for _ in range(3):  # the second call and later read a cache
        shallow.predict_proba(X)
    before = shallow.predict_proba(X)
    # A row inside the data's box seldom adds nodes: the cache is keyed by the trees.
    forest.learn_one(X[310], y[310])
    np.testing.assert_array_equal(shallow.predict_proba(X), forest.predict_proba(X))
    assert not np.array_equal(shallow.predict_proba(X), before)
    unfitted = copy.copy(MondrianForestClassifier())
    assert model_lock(unfitted) is not model_lock(forest)

def test_a_failed_pickle_releases_the_lock():
    model, _, _ = fitted(estimator_classes()[3])
    model.__dict__["_probe"] = lambda: None  # not picklable
    try:
        with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
            pickle.dumps(model)
    finally:
        del model.__dict__["_probe"]
    lock = model_lock(model)
    assert lock._readers == 0 and lock._depths == {}
    model.partial_fit(np.ones((2, 3)), np.zeros(2))  # a writer is not blocked


STRESS = textwrap.dedent("""
    import inspect, pickle, sys, threading, time, traceback
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    from _catalog import estimator_classes, fitted, target_kind, data
    from test_read_lock_rule import arguments, public_members

    seconds = float(sys.argv[2])

    def readers_of(label, obj, owner, X, y):
        calls = []
        for name, kind in public_members(obj):
            member = inspect.getattr_static(type(obj), name)
            if kind == "method" and getattr(member, "_mondrian_writes", False):
                continue  # a writer
            if kind == "property":
                if not hasattr(obj, name):
                    continue  # a property saying the attribute is absent (no estimators_)
                calls.append((f"{label}.{name}", lambda o=obj, n=name: getattr(o, n)))
            else:
                kw = arguments(owner, getattr(type(obj), name), X, y)
                calls.append((f"{label}.{name}",
                              lambda o=obj, n=name, kw=kw: getattr(o, n)(**kw)))
        return calls

    total = 0
    for cls in estimator_classes():
        model, X, y = fitted(cls)
        kind = target_kind(model)
        objects = [(cls.__name__, model)]
        if getattr(model, "_tree_view_class", None) is not None:
            view = model.estimators_[0]
            objects += [("estimators_[0]", view), ("estimators_[0].tree_", view.tree_)]
        if "tree_" in dir(cls):
            objects.append(("tree_", model.tree_))
        calls = [c for label, obj in objects for c in readers_of(label, obj, model, X, y)]
        calls.append(("pickle", lambda m=model: pickle.loads(pickle.dumps(m))))
        for name, call in calls:  # every call works on the model alone
            call()
        stop, errors = threading.Event(), []

        def read():
            while not stop.is_set():
                for name, call in calls:
                    try:
                        call()
                    except Exception:  # noqa: BLE001
                        errors.append((name, traceback.format_exc()))
                        return

        def write():
            rng, i = np.random.RandomState(1), 0
            Xn, yn = data(kind, 400, seed=2)
            while not stop.is_set():
                i += 1
                try:
                    if hasattr(model, "partial_fit"):
                        rows = slice(5 * i % 395, 5 * i % 395 + 5)
                        if kind is None:
                            model.partial_fit(Xn[rows])
                        else:
                            model.partial_fit(Xn[rows], yn[rows])
                        if hasattr(model, "learn_one"):
                            if kind is None:
                                model.learn_one(Xn[i % 400])
                            else:
                                model.learn_one(Xn[i % 400], yn[i % 400])
                    else:
                        Xf, yf = data(kind, 60, seed=i % 2)
                        model.fit(Xf) if kind is None else model.fit(Xf, yf)
                except Exception:  # noqa: BLE001
                    errors.append(("writer", traceback.format_exc()))
                    return

        threads = [threading.Thread(target=read) for _ in range(2)]
        threads.append(threading.Thread(target=write))
        for t in threads:
            t.start()
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join()
        assert not errors, (cls.__name__, errors[:2])
        total += len(calls)
    print("ok", total)
""")


def test_readers_beside_a_writer_on_every_read_member():
    import os

    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    result = subprocess.run(
        [sys.executable, "-c", STRESS, tests, "0.4"], capture_output=True, text=True,
        timeout=600, cwd=os.path.dirname(os.path.abspath(__file__)),
        env={**os.environ, "PYTHONPATH": os.pathsep.join(
            [os.path.dirname(os.path.abspath(__file__)), tests, *sys.path])},
    )
    assert result.returncode == 0, (result.returncode, result.stderr[-3000:])
    assert result.stdout.startswith("ok")
    print(result.stdout)


def test_views_read_under_the_forest_lock():
    model, _, _ = fitted(estimator_classes()[1])  # MondrianForestClassifier
    view = model.estimators_[1]
    assert model_lock(view) is model_lock(model)
    assert model_lock(view.tree_) is model_lock(model)
    copy = pickle.loads(pickle.dumps(view))
    assert model_lock(copy) is not model_lock(model)
    np.testing.assert_array_equal(copy.predict_proba(np.ones((2, 3))),
                                  view.predict_proba(np.ones((2, 3))))


def test_merge_forests_reads_its_parts_under_their_locks():
    from mondrian import MondrianForestClassifier, merge_forests

    scaling = (np.zeros(3), np.ones(3))
    a, b = (MondrianForestClassifier(2, random_state=s, feature_scaling=scaling)
            .fit(np.eye(3), [0, 1, 1]) for s in (1, 2))
    lock = model_lock(a)
    lock.acquire_write()
    out = []
    thread = threading.Thread(target=lambda: out.append(merge_forests([a, b])), daemon=True)
    try:
        thread.start()
        time.sleep(0.3)
        assert not out  # waits for the writer of a part
    finally:
        lock.release_write()
    thread.join(60)
    assert len(out[0].estimators_) == 4
    assert lock._readers == 0 and model_lock(b)._readers == 0
