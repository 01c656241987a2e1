"""Atomic fits and online updates: a call that raises leaves the model as it was."""

import copy
import functools
from contextlib import contextmanager

import numpy as np

__all__ = ["unchanged_on_error", "atomic_fit", "online_update", "atomic_update", "SNAPSHOT_RATIO"]


@contextmanager
def unchanged_on_error(estimator, deep=False):
    """Restore the estimator if the block raises (any exception: a rejected input, a
    ``MemoryError``, a ``KeyboardInterrupt``): a failed call leaves the model as it was.

    The attributes are always restored. With ``deep=True`` (online updates, which change the
    fitted model in place) the tree ensemble is snapshotted (:meth:`TreeEnsemble.snapshot`:
    time linear in the size of the trees) and so are the containers and the attributes named
    in ``_mutable_state``, which the update may change in place. ``deep="undo"`` (small
    online updates) does the same but opens an undo log in each tree instead of copying it
    (:meth:`TreeEnsemble.undo_snapshot`: time linear in what the update writes).
    """
    saved = dict(estimator.__dict__)
    snapshot = None
    if deep:
        ensemble = saved.get("_ensemble")
        if ensemble is not None and not ensemble.read_only:
            # A small update logs what it writes instead of copying every tree: a copy per
            # call would make a stream quadratic.
            snapshot = ensemble.undo_snapshot() if deep == "undo" else ensemble.snapshot()
        mutable = getattr(estimator, "_mutable_state", ())
        for name, value in saved.items():
            if isinstance(value, (list, dict, set)) or name in mutable:
                saved[name] = copy.copy(value)
    try:
        yield
    except BaseException:
        if snapshot is not None:
            saved["_ensemble"].restore(snapshot)
        estimator.__dict__.clear()
        estimator.__dict__.update(saved)
        raise
    if snapshot is not None:
        saved["_ensemble"].commit(snapshot)


def atomic_fit(method):
    """Decorator: run a fitting method under :func:`unchanged_on_error`."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with unchanged_on_error(self):
            return method(self, *args, **kwargs)

    return wrapper


# A forest's online update snapshots its trees only when it adds at least 1/SNAPSHOT_RATIO of the
# points already stored: the copy then costs a bounded share of the update (amortised linear).
SNAPSHOT_RATIO = 32



def online_update(estimator, X):
    """:func:`unchanged_on_error` for an online update of a forest or density with rows ``X``.

    Every input is validated before the model changes, so a rejected update always leaves it
    as it was. Failures raised inside the tree core (``MemoryError``, ``KeyboardInterrupt``)
    are rolled back by a snapshot of the trees when the update is large enough for the copy to
    be cheap next to it (at least 1/``SNAPSHOT_RATIO`` of the stored points). Copying every
    tree on every ``learn_one`` would make a stream quadratic, so a smaller update is rolled
    back by an undo log in each tree of the nodes and leaf lists it writes
    (:meth:`MondrianTree.begin_undo`: O(depth) entries per point), for the forests and the
    density's full-cell trees alike.
    """
    ensemble = estimator.__dict__.get("_ensemble")
    stored = ensemble.store.n_samples if ensemble is not None else 0
    shape = () if isinstance(X, dict) else np.shape(X)
    rows = shape[0] if len(shape) == 2 else 1
    return unchanged_on_error(estimator, deep=True if rows * SNAPSHOT_RATIO >= stored else "undo")


def atomic_update(method):
    """Decorator: run an online update under :func:`unchanged_on_error` with ``deep=True``."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with unchanged_on_error(self, deep=True):
            return method(self, *args, **kwargs)

    return wrapper

