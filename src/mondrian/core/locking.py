"""A reader-writer lock per estimator: concurrent reads, exclusive writes.

The Cython cores release the GIL and online training may reallocate a tree's node buffers, so a
``predict`` running while another thread calls ``partial_fit`` on the same model could read
freed memory. Every Mondrian estimator therefore holds one :class:`ReadWriteLock`: its reading
methods (``predict``, ``transform``, ``score``, pickling...) share it, its mutating methods
(``fit``, ``partial_fit``, ``learn_one``...) take it alone. A read that arrives during a write
waits for the write to finish (it sees the old or the new model, never a half-written one).

The lock is not part of the model: it is dropped from pickles and copies and created afresh on
first use, so ``pickle``, ``copy`` and ``sklearn.base.clone`` work as before.
"""

import functools
import threading

__all__ = ["ReadWriteLock", "LockedMethodsMixin", "model_lock"]

# Guards the lazy creation of the per-estimator locks (two threads must not create two).
_CREATION = threading.Lock()

# Attribute holding an estimator's lock (excluded from its pickled state).
LOCK_ATTRIBUTE = "_rw_lock"


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

    def release_read(self):
        """Give back a shared hold."""
        me = threading.get_ident()
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

    def release_write(self):
        """Give back the exclusive hold."""
        with self._mutex:
            self._write_depth -= 1
            if self._write_depth == 0:
                self._writer = None
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
            lock = self.__dict__.get(LOCK_ATTRIBUTE)
            if lock is None:
                lock = model_lock(self)
            lock.acquire_read()
            try:
                return method(self, *args, **kwargs)
            finally:
                lock.release_read()

    wrapper._mondrian_locked = True
    return wrapper


class LockedMethodsMixin:
    """Wrap the public methods of every subclass in its instance's :class:`ReadWriteLock`.

    Methods named in ``_write_methods`` take the lock exclusively, those in ``_read_methods``
    share it; each class's methods (its own and those inherited from plain mixins) are wrapped
    when the class is created, so overrides in subclasses are covered too. ``__getstate__``
    reads (a model is never pickled half-updated) and leaves the lock out.
    """

    _write_methods = frozenset({"fit", "partial_fit", "learn_one", "forget"})
    _read_methods = frozenset({
        "predict", "predict_proba", "predict_log_proba", "predict_one", "predict_proba_one",
        "decision_function", "transform", "score", "score_samples", "sample", "apply", "prune",
        "lifetime_path", "predict_lifetime_mixture", "__getstate__",
    })

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # Inherited methods too: a plain mixin (not a subclass of this one) may define them.
        for name in cls._write_methods | cls._read_methods:
            value = getattr(cls, name, None)
            if value is None or not callable(value) or getattr(value, "_mondrian_locked", False):
                continue
            setattr(cls, name, _locked(value, write=name in cls._write_methods))

    def __getstate__(self):
        # The read hold comes from the wrapper __init_subclass__ puts on every subclass.
        state = dict(super().__getstate__())
        state.pop(LOCK_ATTRIBUTE, None)
        return state
