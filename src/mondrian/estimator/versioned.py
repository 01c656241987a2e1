"""Versioned pickles and copies of an estimator: canonical bytes, the state version and class
recorded and checked on load, copies taken under the read lock."""

import contextlib
import copy

from mondrian.core.ensemble import TreeEnsemble
from mondrian.core.state_checks import refuse
from mondrian.estimator.locking import (
    VIEW_ATTRIBUTE,
    LockedMethodsMixin,
    read_locked,
    share_lock,
)
from mondrian.estimator.pickling import canonical_reduce
from mondrian.estimator.state_checks import check_state_class, class_name

__all__ = ["STATE_VERSION", "VersionedStateMixin"]

# Version of the pickled estimator state (the ensemble and the trees carry their own too).
STATE_VERSION = 3


def _held_for_copy(model):
    """The read lock of a locked model (a no-op context for the others)."""
    if isinstance(model, LockedMethodsMixin):
        return read_locked(model)
    return contextlib.nullcontext()


class VersionedStateMixin:
    """Pickled estimators carry ``_mondrian_state_version`` (``_state_version``) and refuse to
    load a state written by another version."""

    _state_version = STATE_VERSION

    def __getstate__(self):
        state = dict(super().__getstate__())  # a copy: never write into the live __dict__
        state["_mondrian_state_version"] = self._state_version
        state["_mondrian_state_class"] = class_name(type(self))
        return state

    # Copies as before (the state of __getstate__, not the canonical one of pickles), under
    # the read lock until the whole state is copied (a writer may not run half-way through).
    def __copy__(self):
        with _held_for_copy(self):
            func, args, state = object.__reduce_ex__(self, 4)[:3]
            out = func(*args)
            out._restore_state(state)  # (a copy of a live model, maybe mid-fit: no checks)
            if VIEW_ATTRIBUTE in self.__dict__:
                # A shallow copy of a view reads the same forest's buffers: it stays a view of
                # that forest, under its lock (a deep copy owns its data and its lock).
                out.__dict__[VIEW_ATTRIBUTE] = self.__dict__[VIEW_ATTRIBUTE]
                share_lock(out, self.__dict__[VIEW_ATTRIBUTE][0])
            elif self.__dict__.get("_ensemble") is not None:
                # A shallow copy of a fitted model shares its trees: it reads and writes them
                # under the same lock, so a write through either waits for the other's reads
                # and drops what readers derived from the trees (the prediction cache).
                share_lock(out, self)
        return out

    def __deepcopy__(self, memo):
        with _held_for_copy(self):
            func, args, state = object.__reduce_ex__(self, 4)[:3]
            out = memo[id(self)] = func(*args)
            out._restore_state(copy.deepcopy(state, memo))
        return out

    def __reduce_ex__(self, protocol):
        # A locked model reaches this through LockedMethodsMixin.__reduce_ex__ (earlier in every
        # MRO), whose read hold lasts until the pickler has written the whole state.
        return canonical_reduce(self, protocol)

    def __setstate__(self, state):
        self._restore_state(state)
        self._check_loaded_state()

    def _restore_state(self, state):
        state = dict(state)
        version = state.pop("_mondrian_state_version", self._state_version)
        if version != self._state_version:
            raise ValueError(
                f"this model was saved with mondrian state version {version}; this version of "
                f"the package reads version {self._state_version}"
            )
        check_state_class(self, state)
        state.pop("_mondrian_state_class", None)
        super().__setstate__(state)

    # Attribute -> type that a fitted state must hold there (the parts compiled code reads).
    _state_types = {}

    def _check_loaded_state(self):
        """Refuse (``ValueError``) a loaded state whose parts do not fit together: the types
        of ``_state_types``, the trees' input width; classes add their own checks."""
        found = self.__dict__
        fitted = "n_features_in_" in found
        for name, kind in self._state_types.items():
            if (fitted or name in found) and not isinstance(found.get(name), kind):
                refuse(type(self).__name__, f"{name} is not a {kind.__name__}")
        ensemble = found.get("_ensemble")
        if isinstance(ensemble, TreeEnsemble) and fitted and (
                found["n_features_in_"] != ensemble.n_features):
            refuse(type(self).__name__, "n_features_in_ is not the trees' number of features")
