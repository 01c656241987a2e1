"""Estimator machinery shared by every Mondrian model: the ensemble it holds, validation,
warm-start rules, tree views, pruning and versioned pickles."""

import copy
import functools
import numbers
from contextlib import contextmanager

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from mondrian.core._tree import NODE_DTYPE
from mondrian.core.ensemble import TREES_PER_CHUNK, TreeEnsemble, draw_seeds  # noqa: F401
from mondrian.core.locking import LockedMethodsMixin
from mondrian.core.structure import TREE_LEAF, TREE_UNDEFINED, MondrianTreeStructure  # noqa: F401

__all__ = [
    "BaseMondrianEnsemble",
    "EnsembleMixin",
    "VersionedStateMixin",
    "pruned_copy",
    "unchanged_on_error",
    "check_strict_params",
    "StrictParamsMixin",
    "atomic_fit",
    "atomic_update",
    "online_update",
    "PruneMixin",
    "TreeEnsemble",
    "SingleTreeMixin",
]

# Version of the pickled estimator state (the ensemble and the trees carry their own too).
STATE_VERSION = 3

# Constraints of the parameters every forest (many trees, built in parallel) adds to its base.
FOREST_PARAMETER_CONSTRAINTS = {
    "n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
    "n_jobs": [numbers.Integral, None],
    "verbose": ["verbose"],
}


@contextmanager
def unchanged_on_error(estimator, deep=False):
    """Restore the estimator if the block raises (any exception: a rejected input, a
    ``MemoryError``, a ``KeyboardInterrupt``): a failed call leaves the model as it was.

    The attributes are always restored. With ``deep=True`` (online updates, which change the
    fitted model in place) the tree ensemble is snapshotted (:meth:`TreeEnsemble.snapshot`:
    time linear in the size of the trees) and so are the containers and the attributes named
    in ``_mutable_state``, which the update may change in place.
    """
    saved = dict(estimator.__dict__)
    snapshot = None
    if deep:
        ensemble = saved.get("_ensemble")
        if ensemble is not None and not ensemble.read_only:
            snapshot = ensemble.snapshot()
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
    tree on every ``learn_one`` would make a stream quadratic, so a small update of a large
    model is not rolled back after such a failure; an undo log of the nodes it changes is the
    remedy (not implemented yet).
    """
    ensemble = estimator.__dict__.get("_ensemble")
    stored = ensemble.store.n_samples if ensemble is not None else 0
    shape = () if isinstance(X, dict) else np.shape(X)
    rows = shape[0] if len(shape) == 2 else 1
    return unchanged_on_error(estimator, deep=rows * SNAPSHOT_RATIO >= stored)


def atomic_update(method):
    """Decorator: run an online update under :func:`unchanged_on_error` with ``deep=True``."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with unchanged_on_error(self, deep=True):
            return method(self, *args, **kwargs)

    return wrapper


def check_strict_params(estimator):
    """Reject what scikit-learn's constraints let through: booleans given for numbers
    (``n_estimators=True``, ``lifetime=True``) and ``n_jobs=0``.

    Raises an ``InvalidParameterError`` (a ``ValueError`` and a ``TypeError``).
    """
    constraints = getattr(estimator, "_parameter_constraints", {})
    for name, value in estimator.get_params(deep=False).items():
        allowed = constraints.get(name, [])
        if isinstance(value, (bool, np.bool_)) and "boolean" not in allowed \
                and bool not in allowed:
            raise InvalidParameterError(
                f"The {name!r} parameter of {type(estimator).__name__} must be a number, not a "
                f"bool; got {value!r}."
            )
        if name == "n_jobs" and value is not None and not isinstance(value, bool) and value == 0:
            raise InvalidParameterError(
                f"The 'n_jobs' parameter of {type(estimator).__name__} must be None, a positive "
                "number of threads or a negative count from the number of cores; got 0."
            )


class StrictParamsMixin:
    """``_validate_params`` that also applies :func:`check_strict_params`."""

    def _validate_params(self):
        super()._validate_params()
        check_strict_params(self)


class VersionedStateMixin:
    """Pickled estimators carry ``_mondrian_state_version`` (``_state_version``) and refuse to
    load a state written by another version."""

    _state_version = STATE_VERSION

    def __getstate__(self):
        state = dict(super().__getstate__())  # a copy: never write into the live __dict__
        state["_mondrian_state_version"] = self._state_version
        return state

    def __setstate__(self, state):
        version = state.pop("_mondrian_state_version", self._state_version)
        if version != self._state_version:
            raise ValueError(
                f"this model was saved with mondrian state version {version}; this version of "
                f"the package reads version {self._state_version}"
            )
        super().__setstate__(state)


def _same_param(a, b):
    if a is b:
        return True
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        return a == b or (a != a and b != b)  # NaN equals NaN here
    return type(a) is type(b) and a == b


class EnsembleMixin(StrictParamsMixin, LockedMethodsMixin):
    """The estimator side of a :class:`TreeEnsemble` held in ``self._ensemble``.

    Thread safety (:class:`~mondrian.core.locking.LockedMethodsMixin`): any number of threads
    may read the model at once (``predict``, ``transform``, ``score``, pickling...); ``fit``,
    ``partial_fit`` and ``learn_one`` run alone, and reads arriving meanwhile wait for them.

    Read-only ``_trees``, ``_store``, ``_scaler`` and ``_seeds``; scikit-learn's warm-start
    rules for ``partial_fit`` (:meth:`_warm_start`); and ``estimators_``, read-only single-tree
    views built by one factory from ``_tree_view_class`` and the fitted attributes named in
    ``_tree_view_attributes``.
    """

    # Attributes an online update may change in place (copied by unchanged_on_error(deep=True)).
    _mutable_state = ()
    # Parameters that shape the fitted trees: changing one after fit asks for a new fit.
    _refit_params = ()
    # Whether partial_fit may add trees when n_estimators grows (else it asks for a new fit).
    _can_add_trees = True
    # The single-tree estimator of a forest, and the fitted attributes its views share.
    _tree_view_class = None
    _tree_view_attributes = ("lifetime_", "n_features_in_", "feature_names_in_", "_fit_params")

    # Views of the ensemble's parts (AttributeError, so "not fitted", before the first fit).
    _trees = property(lambda self: self._ensemble.trees)
    _store = property(lambda self: self._ensemble.store)
    _scaler = property(lambda self: self._ensemble.feature_map)
    _seeds = property(lambda self: self._ensemble.seeds)

    @property
    def memory_usage_(self):
        """Bytes held by the fitted model, by buffer: ``nodes``, ``bounds``, ``value``,
        ``sample_next`` (summed over the trees), ``store_X``, ``store_rows``, ``total``
        and ``reserved`` (see :meth:`TreeEnsemble.memory_usage`)."""
        return self._ensemble.memory_usage()

    def _n_trees(self):
        return self.n_estimators

    def _n_jobs(self):
        # Single-tree estimators have no ``n_jobs``: they run in the calling thread.
        return getattr(self, "n_jobs", None)

    def _remember_params(self):
        """Record the tree-shaping parameters of a fit (checked by :meth:`_warm_start`)."""
        self._fit_params = {name: getattr(self, name) for name in self._refit_params}
        self.__dict__.pop("_read_only_view", None)  # a fit replaces a view's state

    def _check_writable(self):
        if getattr(self, "_read_only_view", False):
            raise ValueError(
                "estimators_[i] is a read-only view of the forest; it shares the forest's trees "
                "and stored points, so online updates are refused. Train the forest instead, "
                "or call fit on the view to make it an independent model."
            )

    def _warm_start_check(self):
        """Check the parameter changes made since fit before an online update (scikit-learn's
        warm-start rules); return the number of trees to add.

        A larger ``n_estimators`` asks for new trees, grown on the stored points by
        :meth:`_grow_new_trees` (which gives the law of a forest that had them from the start);
        a smaller one, or a change of a tree-shaping parameter, raises a ``ValueError``.
        """
        self._check_writable()
        fitted = getattr(self, "_fit_params", {})
        for name, before in fitted.items():
            now = getattr(self, name)
            if _same_param(now, before):
                continue
            hint = "call fit to refit the model"
            smaller = (name == "lifetime" and isinstance(now, numbers.Real)
                       and isinstance(before, numbers.Real) and now < before)
            if smaller and hasattr(self, "prune"):
                hint += f", or use prune({now!r}) for a smaller lifetime"
            raise ValueError(
                f"{name} was set to {now!r} after the model was fitted with {before!r}; "
                f"online updates cannot change the fitted trees: {hint}"
            )
        wanted, have = int(self._n_trees()), len(self._trees)
        if wanted < have:
            raise ValueError(
                f"n_estimators={wanted} is smaller than the {have} fitted trees; online updates "
                "never remove trees: call fit to refit with fewer"
            )
        if wanted > have and not self._can_add_trees:
            raise ValueError(
                f"n_estimators={wanted} is larger than the {have} fitted trees; "
                f"{type(self).__name__} cannot add trees online: call fit to refit"
            )
        return wanted - have

    def _grow_new_trees(self, n_trees, n_jobs=None):
        """Add ``n_trees`` trees sampled on the stored points (seeds continue the sequence)."""
        if n_trees <= 0:
            return
        have = len(self._trees)
        seeds = draw_seeds(self.random_state, have + n_trees, start=have)
        self._ensemble.grow_trees(seeds, n_jobs, getattr(self, "verbose", 0))
        self._after_growth(seeds)

    def _after_growth(self, seeds):
        """Update what depends on the set of trees after ``seeds`` were added (subclasses)."""

    # ----------------------------------------------------------------- tree views

    @property
    def estimators_(self):
        """The fitted trees, as single-tree estimators on the forest's data (read-only views:
        ``partial_fit`` and ``learn_one`` on them raise; ``fit`` makes one independent)."""
        if self._tree_view_class is None:
            raise AttributeError(f"{type(self).__name__} has no estimators_")
        check_is_fitted(self, "_trees")
        cls = self._tree_view_class
        params = {name: getattr(self, name) for name in cls().get_params()
                  if name != "random_state"}
        views = []
        for k in range(len(self._trees)):
            # The tree's own seed makes a later view.fit reproducible.
            view = cls(**params, random_state=int(self._seeds[k] % 2**32))
            view._ensemble = self._ensemble.single_tree(k)
            for name in self._tree_view_attributes:
                if name in self.__dict__:
                    view.__dict__[name] = self.__dict__[name]
            view._read_only_view = True
            view._init_view()
            views.append(view)
        return views

    def _init_view(self):
        """Fresh caches of a single-tree view (subclasses)."""


class BaseMondrianEnsemble(EnsembleMixin, VersionedStateMixin, BaseEstimator):
    """Common machinery of the Mondrian estimators (not for direct use).

    Subclasses set the width of the statistics rows, turn targets into rows and choose the
    pause rule (``_pause_pure``). The trees live in a :class:`TreeEnsemble`
    (``self._ensemble``) with one :class:`DataStore` and one :class:`FeatureScaler`.
    """

    _parameter_constraints = {
        "lifetime": [Interval(numbers.Real, 0, None, closed="both")],
        "min_samples_split": [Interval(numbers.Integral, 1, None, closed="left")],
        "feature_scaling": [StrOptions({"minmax"}), None],
        "random_state": ["random_state"],
    }

    _pause_pure = False
    _refit_params = ("lifetime", "min_samples_split", "feature_scaling")

    # ----------------------------------------------------------------- validation

    def _validate_X_predict(self, X):
        check_is_fitted(self, "_trees")
        X = validate_data(self, X, reset=False, dtype=np.float64, order="C")
        return self._scaler.transform(X, clip=True)

    def _validate_lifetime(self):
        if isinstance(self.lifetime, str):
            return  # "auto", for the estimators whose constraints allow it
        if np.isnan(self.lifetime):
            raise ValueError("lifetime must be a number in [0, inf], got nan")

    # ----------------------------------------------------------------- growing

    def _tree_seeds(self, n_trees):
        return draw_seeds(self.random_state, n_trees)

    def _init_trees(self, X, n_trees, width, lifetime=None):
        """A fresh ensemble (feature map, store, trees) for the first batch ``X`` (original
        units; checked, not stored).

        ``lifetime`` (default: the parameter) becomes the fitted ``lifetime_``.
        """
        self._validate_lifetime()
        self.lifetime_ = float(self.lifetime if lifetime is None else lifetime)
        self._ensemble = TreeEnsemble.start(
            X, self._tree_seeds(n_trees), width=width, lifetime=self.lifetime_,
            feature_scaling=self.feature_scaling == "minmax",
            min_samples_split=int(self.min_samples_split), pause_pure=self._pause_pure,
        )
        self._remember_params()

    def _add_points(self, X, rows, n_jobs=None):
        """Store the new points (original units) and extend every tree with them."""
        self._ensemble.add_points(X, rows, n_jobs, getattr(self, "verbose", 0))

    def _accumulate(self, function, X, n_outputs, n_jobs=None):
        """Sum ``function(trees, X, out)`` over fixed chunks of trees, run in threads
        (:meth:`TreeEnsemble.accumulate`: bit-identical for any number of threads)."""
        return self._ensemble.accumulate(
            lambda trees, out: function(trees, X, out), (X.shape[0], n_outputs), n_jobs,
            whole=X.shape[0] == 1,
        )

    # ----------------------------------------------------------------- public helpers

    def apply(self, X):
        """Leaf reached by every sample in every tree.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_trees)
            Node ids of the leaves, one column per tree.
        """
        X = self._validate_X_predict(X)
        return np.column_stack([tree.apply(X) for tree in self._trees])

    @property
    def feature_offset_(self):
        """Offset of the min-max feature map (first value seen of each feature)."""
        check_is_fitted(self, "_trees")
        return self._scaler.offset.copy()

    @property
    def feature_scale_(self):
        """Scale of the min-max feature map (1 for features that never varied)."""
        check_is_fitted(self, "_trees")
        return self._scaler.scale.copy()

    @property
    def n_samples_seen_(self):
        """Number of training points the model has learnt from."""
        check_is_fitted(self, "_trees")
        return self._store.n_samples


__all__ += ["NODE_DTYPE"]


class PruneMixin:
    """``prune(lifetime)`` for the forests: the same estimator restricted to a smaller lifetime."""

    def _after_prune(self):
        """Reset caches that depend on the trees (subclasses)."""

    def prune(self, lifetime):
        """The fitted model restricted to ``lifetime`` (at most the fitted lifetime).

        Every cut born at or after ``lifetime`` is dropped. By the Markov property of the
        Mondrian process the result has the law of the same estimator fitted with that lifetime
        on the same data; it is an ordinary fitted estimator (it predicts, learns online and
        pickles on its own). The pruned classifier predicts exactly what this one predicts when
        read at ``lifetime``; the pruned regressor does too when its hyperparameters are fixed
        (by default it re-estimates them on the pruned trees).

        Parameters
        ----------
        lifetime : float

        Returns
        -------
        estimator
            A new estimator of the same class, with ``lifetime`` set.
        """
        pruned = pruned_copy(self, lifetime, allow_zero=True)
        pruned._after_prune()
        return pruned


def pruned_copy(estimator, lifetime, allow_zero):
    """A shallow copy of a fitted estimator whose ensemble (trees, stored points, feature map)
    is its own, restricted to ``lifetime`` (validated against the fitted ``lifetime_``)."""
    check_is_fitted(estimator, "_trees")
    number = isinstance(lifetime, numbers.Real) and not isinstance(lifetime, bool)
    if not (number and (0 <= lifetime if allow_zero else 0 < lifetime)
            and lifetime <= estimator.lifetime_):
        bracket = "[" if allow_zero else "("
        raise ValueError(
            f"lifetime must be a number in {bracket}0, {estimator.lifetime_}] (the fitted "
            f"lifetime), got {lifetime!r}"
        )
    pruned = copy.copy(estimator)
    pruned.__dict__.pop("lifetime_path_", None)  # it described the unpruned model
    pruned.__dict__.pop("_read_only_view", None)  # its trees and store are its own
    pruned.lifetime = float(lifetime)
    pruned.lifetime_ = float(lifetime)
    pruned._ensemble = estimator._ensemble.pruned(float(lifetime))
    pruned._fit_params = {**getattr(estimator, "_fit_params", {}), "lifetime": pruned.lifetime}
    return pruned


class SingleTreeMixin:
    """The single-tree form of an ensemble estimator (its ``apply`` returns one column)."""

    def _n_trees(self):
        return 1

    def apply(self, X):
        """Leaf id reached by every sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return super().apply(X)[:, 0]
