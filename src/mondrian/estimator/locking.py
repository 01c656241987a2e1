"""A reader-writer lock per estimator: concurrent reads, exclusive writes, by rule.

The Cython cores release the GIL and online training may reallocate a tree's node buffers, so a
``predict`` running while another thread calls ``partial_fit`` on the same model could read
freed memory. Every Mondrian estimator therefore holds one :class:`ReadWriteLock`, and
:class:`LockedMethodsMixin` applies one rule to every class that inherits it, when the class is
created (so a method added later is covered without any list to keep):

* every public method (a plain function whose name does not start with ``_``) and every public
  property, its own or inherited, runs under the lock, and so does ``__getstate__``;
* the *mutating* ones take it alone: the names in ``_write_methods`` (``fit``,
  ``partial_fit``, ``learn_one``, ``fit_transform``, ``set_params``...) and any method
  decorated with :func:`mutating`; a property's setter and deleter are mutating;
* every other one shares it (a read). A read that arrives during a write waits for the write
  to finish: it sees the old or the new model, never a half-written one.

A new writer joins by decorating it::

    class MyForest(MondrianForestRegressor):
        @mutating
        def forget(self, n):
            ...

(or by naming it in the class's ``_write_methods``). A writing thread may read and write again
(``score`` inside ``fit``); a reading thread may read again, but asking to write while it
reads raises a ``RuntimeError`` (an upgrade could deadlock). Private helpers (``_name``) are
not wrapped: they run inside a public call that holds the lock. Descriptors other than plain
functions and properties (scikit-learn's ``set_output`` and ``set_*_request``) configure the
estimator and are left alone.

Views share their owner's lock (:func:`share_lock`): the single-tree estimators of
``estimators_`` and the ``tree_`` structures read the forest's buffers, so they read under the
forest's lock, and a view of a forest that learnt since refreshes what it derives from the
forest before reading (``_refresh_view``, run when the lock's count of writes moved).

Pickling and copying hold the read lock until the whole state (the ensemble, its
trees and store included) has been serialised, not only while ``__getstate__`` runs: a pickle
taken beside a writer is the model before or after the write.

The lock is not part of the model: it is dropped from pickles and copies and created afresh on
first use, so ``pickle``, ``copy`` and ``sklearn.base.clone`` work as before.
"""

import functools
import threading
import types
from contextlib import ExitStack, contextmanager

__all__ = ["ReadWriteLock", "LockedMethodsMixin", "model_lock", "mutating", "own_lock",
           "share_lock", "read_locked"]

# Guards the lazy creation of the per-estimator locks (two threads must not create two).
_CREATION = threading.Lock()

# Attribute holding an estimator's lock (excluded from its pickled state).
LOCK_ATTRIBUTE = "_rw_lock"
# Attribute of a view naming what it views (excluded too): a read first calls the view's
# ``_refresh_view()`` so that it follows its owner's updates.
VIEW_ATTRIBUTE = "_view_source"


class ReadWriteLock:
    """Many readers or one writer, re-entrant per thread.

    Writers have priority: once a writer waits, new readers wait too (so a stream of reads
    cannot starve ``partial_fit``), except threads that already hold a read, which may nest.
    The writing thread may also read and write again (nested calls such as ``score`` inside
    ``fit``). A thread that holds only a read and asks to write gets a ``RuntimeError``
    (upgrading would deadlock with another upgrading reader).
    """

    def __init__(self):
        # The condition waits on the same mutex the methods take with a plain ``with``
        # (a C-level context manager: cheaper than the condition's own, on every call).
        self._mutex = threading.Lock()
        self._cond = threading.Condition(self._mutex)
        self._readers = 0  # read holds, nested ones included
        self._writer = None  # ident of the writing thread
        self._write_depth = 0
        self._waiting_writers = 0
        self._waiting_readers = 0
        self._depths = {}  # ident -> read holds, for the threads that hold at least one
        # Completed writes (outermost holds): a view compares it with the one it was made at.
        self.generation = 0
        # What readers derived from the model as it stands (the prediction cache of
        # mondrian.forest._node_cache), dropped when a write begins.
        self.derived = None

    def _read_depth(self):
        return self._depths.get(threading.get_ident(), 0)

    def acquire_read(self):
        """Take a shared hold (waits while another thread writes or waits to write)."""
        me = threading.get_ident()
        with self._mutex:
            depth = self._depths.get(me, 0)
            if depth == 0 and self._writer != me:
                if self._writer is not None or self._waiting_writers:
                    self._waiting_readers += 1
                    try:
                        while self._writer is not None or self._waiting_writers:
                            self._cond.wait()
                    finally:
                        self._waiting_readers -= 1
            self._readers += 1
            self._depths[me] = depth + 1

    def release_read(self, ident=None):
        """Give back a shared hold (of the thread ``ident``, default: the calling one)."""
        me = threading.get_ident() if ident is None else ident
        with self._mutex:
            depth = self._depths.pop(me) - 1
            if depth:
                self._depths[me] = depth
            self._readers -= 1
            if self._readers == 0 and self._waiting_writers:
                self._cond.notify_all()

    def acquire_write(self):
        """Take the exclusive hold (waits for every other reader and writer)."""
        me = threading.get_ident()
        with self._mutex:
            if self._writer == me:
                self._write_depth += 1
                return
            if self._depths.get(me, 0):
                raise RuntimeError(
                    "a thread reading a Mondrian model cannot update it in the same call"
                )
            if self._writer is not None or self._readers:
                self._waiting_writers += 1
                try:
                    while self._writer is not None or self._readers:
                        self._cond.wait()
                except BaseException:
                    # Interrupted while waiting: the readers this writer held back may go on.
                    self._waiting_writers -= 1
                    self._cond.notify_all()
                    raise
                self._waiting_writers -= 1
            self._writer = me
            self._write_depth = 1
            self.derived = None

    def release_write(self):
        """Give back the exclusive hold."""
        with self._mutex:
            self._write_depth -= 1
            if self._write_depth == 0:
                self._writer = None
                self.generation += 1
                if self._waiting_writers or self._waiting_readers:
                    self._cond.notify_all()


def model_lock(estimator):
    """The estimator's :class:`ReadWriteLock`, created on first use."""
    lock = estimator.__dict__.get(LOCK_ATTRIBUTE)
    if lock is None:
        with _CREATION:
            lock = estimator.__dict__.get(LOCK_ATTRIBUTE)
            if lock is None:
                lock = estimator.__dict__[LOCK_ATTRIBUTE] = ReadWriteLock()
    return lock


def share_lock(view, owner):
    """Make ``view`` (an object reading ``owner``'s buffers) read and write under ``owner``'s
    lock. A copy or pickle of the view gets a lock of its own, like any estimator."""
    view.__dict__[LOCK_ATTRIBUTE] = model_lock(owner)
    return view


def own_lock(copied):
    """Give ``copied`` (a shallow copy whose trees were just replaced by its own) a lock of its
    own: it no longer shares the original's buffers, so it need not wait for its writers."""
    copied.__dict__.pop(LOCK_ATTRIBUTE, None)
    return copied


@contextmanager
def read_locked(*models):
    """Hold the read lock of every model in ``models`` (in one global order, so that two
    threads holding several never wait on each other in a cycle)."""
    locks = {id(lock): lock for lock in map(model_lock, models)}
    with ExitStack() as stack:
        for key in sorted(locks):
            locks[key].acquire_read()
            stack.callback(locks[key].release_read)
        yield


def mutating(method):
    """Mark a public method as a writer: :class:`LockedMethodsMixin` runs it under the
    exclusive lock (every other public method shares the lock)."""
    method._mondrian_writes = True
    return method


def _locked(method, write):
    if getattr(method, "_mondrian_locked", False):
        return method

    if write:
        @functools.wraps(method)
        def wrapper(self, *args, **kwargs):
            lock = self.__dict__.get(LOCK_ATTRIBUTE)
            if lock is None:
                lock = model_lock(self)
            lock.acquire_write()
            try:
                return method(self, *args, **kwargs)
            finally:
                lock.release_write()
    else:
        @functools.wraps(method)
        def wrapper(self, *args, **kwargs):
            d = self.__dict__
            lock = d.get(LOCK_ATTRIBUTE)
            if lock is None:
                lock = model_lock(self)
            lock.acquire_read()
            try:
                if VIEW_ATTRIBUTE in d:
                    self._refresh_view()
                return method(self, *args, **kwargs)
            finally:
                lock.release_read()

    wrapper._mondrian_locked = True
    wrapper._mondrian_writes = write
    return wrapper


def _locked_property(prop):
    if getattr(prop.fget, "_mondrian_locked", False) or prop.fget is None:
        return prop
    return property(
        _locked(prop.fget, write=False),
        None if prop.fset is None else _locked(prop.fset, write=True),
        None if prop.fdel is None else _locked(prop.fdel, write=True),
        prop.__doc__,
    )


def locked_members(cls):
    """``{name: (raw class attribute, write)}`` for the members :class:`LockedMethodsMixin`
    locks on ``cls``: its public plain functions and properties, own or inherited, and
    ``__getstate__`` (``write`` is None for a property, whose getter reads)."""
    members = {}
    for klass in reversed(cls.__mro__[:-1]):  # the nearest definition wins
        for name, value in vars(klass).items():
            if name.startswith("_") and name != "__getstate__":
                continue
            if isinstance(value, property):
                members[name] = (value, None)
            elif isinstance(value, types.FunctionType):
                members[name] = (value, name in cls._write_methods
                                 or getattr(value, "_mondrian_writes", False))
            else:
                members.pop(name, None)  # a nearer non-function (a descriptor, a value)
    return members


class _HeldReduce(tuple):
    """The reduce tuple of a locked object, holding the object's read lock until the pickler
    (or ``copy``) drops it: the state is serialised under the lock, not only computed."""

    def __del__(self):
        lock = self.__dict__.pop("_lock", None)
        if lock is not None:
            lock.release_read(self.__dict__["_ident"])


class LockedMethodsMixin:
    """Run every public method and property of every subclass under its instance's
    :class:`ReadWriteLock` (the rule is in the module docstring).

    Members are wrapped when each class is created (plain mixins earlier in the MRO included),
    so overrides in subclasses are covered too; mutating methods are the names in
    ``_write_methods`` and those marked with :func:`mutating`.
    """

    # Writers by name (scikit-learn's mixins define some, e.g. fit_transform calls fit).
    _write_methods = frozenset({"fit", "partial_fit", "learn_one", "forget", "fit_transform",
                                "fit_predict", "set_params"})

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name, (value, write) in locked_members(cls).items():
            if isinstance(value, property):
                locked = _locked_property(value)
            else:
                locked = _locked(value, write=write)
            if locked is not value:
                setattr(cls, name, locked)

    def __reduce_ex__(self, protocol):
        lock = model_lock(self)
        lock.acquire_read()
        try:
            reduced = _HeldReduce(super().__reduce_ex__(protocol))
        except BaseException:
            lock.release_read()
            raise
        reduced.__dict__.update(_lock=lock, _ident=threading.get_ident())
        return reduced

    def __getstate__(self):
        # The read hold comes from the wrapper __init_subclass__ puts on every subclass.
        state = dict(super().__getstate__())
        state.pop(LOCK_ATTRIBUTE, None)
        state.pop(VIEW_ATTRIBUTE, None)  # a link to the live owner, not part of the model
        return state
