"""Estimator machinery shared by every Mondrian model: the ensemble it holds, validation,
warm-start rules, tree views, pruning and versioned pickles."""

import contextlib
import copy
import functools
import numbers
from contextlib import contextmanager

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from mondrian.core import relevance
from mondrian.core._online import all_true, scale_row
from mondrian.core._tree import NODE_DTYPE, MondrianTree
from mondrian.core.conventions import MIN_SAMPLES_SPLIT_CONSTRAINT, resolve_min_samples_split
from mondrian.core.ensemble import TREES_PER_CHUNK, TreeEnsemble, draw_seeds  # noqa: F401
from mondrian.core.feature_map import (
    MAX_SCALED,
    FeatureScaler,
    check_feature_range,
    check_weights,
)
from mondrian.core.locking import (
    VIEW_ATTRIBUTE,
    LockedMethodsMixin,
    model_lock,
    read_locked,
    share_lock,
)
from mondrian.core.pickling import canonical_reduce
from mondrian.core.relevance import MIN_SAMPLES, choose_weights, resolve_method, search_sample
from mondrian.core.state_checks import check_state_class, class_name, refuse
from mondrian.core.structure import TREE_LEAF, TREE_UNDEFINED, MondrianTreeStructure  # noqa: F401
from mondrian.core.targets import MAX_TOTAL_WEIGHT

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
    "FeatureImportanceMixin",
    "check_sample_weight",
    "drop_zero_weights",
    "sparse_output",
    "dense_blocks",
    "SPARSE_CHUNK",
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

# Largest batch taking the direct validation of BaseMondrianEnsemble._fast_rows (one-row streams).
FAST_ROWS = 64

# The float64 dtype, compared by identity on the one-row paths (another byte order is another
# object, and takes the full validation).
_FLOAT64 = np.dtype(np.float64)


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


def check_sample_weight(sample_weight, X):
    """Validated sample weights (float64, finite, non-negative, not all zero), or None.

    A weight is a count: 0 leaves its row out, an integer ``k`` stands for ``k`` copies of it.

    Raises
    ------
    ValueError
        For a negative, NaN or infinite weight, a wrong shape, weights that are all zero or
        that sum to more than :data:`~mondrian.core.targets.MAX_TOTAL_WEIGHT`.
    """
    if sample_weight is None:
        return None
    weights = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
    if not np.all(np.isfinite(weights)):
        raise ValueError("sample_weight contains NaN or infinity")
    if not np.any(weights > 0):
        raise ValueError(
            "Sample weights must contain at least one non-zero number: a weight of zero leaves "
            "its row out, so all-zero weights leave nothing to learn from"
        )
    with np.errstate(over="ignore"):
        total = float(np.sum(weights))
    if not total <= MAX_TOTAL_WEIGHT:
        raise ValueError(
            "sample_weight sums to more than 2**1000 (about 1.07e301): the sums of counts "
            "the model forms would come too close to the float64 overflow; rescale "
            "sample_weight"
        )
    return weights


def _n_rows(y, sample_weight):
    """Rows of a batch, counted with their weights (a row of weight ``k`` is ``k`` rows)."""
    return len(y) if sample_weight is None else float(np.sum(sample_weight))


def drop_zero_weights(weights, *arrays):
    """``arrays`` without the rows of weight 0, then the remaining weights (None: unchanged).

    Rows of weight 0 never reach the store, so they do not shape the partition either.
    """
    if weights is None:
        return (*arrays, None)
    keep = weights > 0
    if keep.all():
        return (*arrays, weights)
    return (*(np.ascontiguousarray(a[keep]) for a in arrays), weights[keep])


# Rows of a sparse input densified at a time by the transformers that take sparse rows.
SPARSE_CHUNK = 4096


def dense_blocks(X):
    """The rows of a validated ``X`` as dense C-contiguous float64 blocks: ``[X]`` when it is
    dense, else consecutive blocks of ``SPARSE_CHUNK`` densified rows (the trees and grids
    place dense points; densifying by blocks bounds the memory of a sparse input)."""
    if not sparse.issparse(X):
        return [X]
    return [np.ascontiguousarray(X[i : i + SPARSE_CHUNK].toarray(), dtype=np.float64)
            for i in range(0, X.shape[0], SPARSE_CHUNK)]


def sparse_output(estimator, Z, X):
    """The sparse features ``Z`` of the input ``X`` in the container chosen by
    ``estimator.set_output``.

    scikit-learn refuses sparse data under ``set_output(transform="pandas")``; these
    transformers then return a pandas DataFrame of sparse columns (``pd.SparseDtype``, no
    densification) named by ``get_feature_names_out``, with the index of ``X`` when it is a
    DataFrame. Any other configuration gets ``Z``.
    """
    from sklearn.utils._set_output import _get_output_config

    if _get_output_config("transform", estimator)["dense"] != "pandas":
        return Z
    import pandas as pd

    names = estimator.get_feature_names_out()
    columns = names if len(names) == Z.shape[1] else None  # e.g. a smaller lifetime
    return pd.DataFrame.sparse.from_spmatrix(Z, index=getattr(X, "index", None),
                                             columns=columns)


def check_strict_params(estimator):
    """Reject what scikit-learn's constraints let through: booleans given for numbers
    (``n_estimators=True``, ``lifetime=True``) and ``n_jobs=0``.

    Raises an ``InvalidParameterError`` (a ``ValueError`` and a ``TypeError``).
    """
    constraints = getattr(estimator, "_parameter_constraints", {})
    for name, value in estimator.get_params(deep=False).items():
        allowed = constraints.get(name, [])
        if isinstance(value, (bool, np.bool_)) and "boolean" not in allowed \
                and bool not in allowed and "verbose" not in allowed:
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


def _same_param(a, b):
    if a is b:
        return True
    if isinstance(a, (np.ndarray, list, tuple)) or isinstance(b, (np.ndarray, list, tuple)):
        if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
            return False
        return np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object))
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
    _state_types = {"_ensemble": TreeEnsemble}
    # Parameters that shape the fitted trees: changing one after fit asks for a new fit.
    _refit_params = ()
    # Whether partial_fit may add trees when n_estimators grows (else it asks for a new fit).
    _can_add_trees = True
    # Position of the first tree in the forest whose seeds this one follows: a part built by
    # mondrian.core.merging.forest_parts holds trees [_first_tree, _first_tree + n_estimators).
    _first_tree = 0
    # The single-tree estimator of a forest, and the fitted attributes its views share.
    _tree_view_class = None
    _tree_view_attributes = ("lifetime_", "n_features_in_", "feature_names_in_", "_fit_params",
                             "feature_weights_")

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
        self.__dict__.pop(VIEW_ATTRIBUTE, None)

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

    def _tree_seeds(self, n_trees):
        """Seeds of the first ``n_trees`` trees (they follow ``_first_tree``)."""
        start = self._first_tree
        return draw_seeds(self.random_state, start + n_trees, start=start)

    def _grow_new_trees(self, n_trees, n_jobs=None):
        """Add ``n_trees`` trees sampled on the stored points (seeds continue the sequence)."""
        if n_trees <= 0:
            return
        start = self._first_tree + len(self._trees)
        seeds = draw_seeds(self.random_state, start + n_trees, start=start)
        self._ensemble.grow_trees(seeds, n_jobs, getattr(self, "verbose", 0))
        self._after_growth(seeds)

    def _after_growth(self, seeds):
        """Update what depends on the set of trees after ``seeds`` were added (subclasses)."""

    # ----------------------------------------------------------------- tree views

    @property
    def estimators_(self):
        """The fitted trees, as single-tree estimators on the forest's data (read-only views:
        ``partial_fit`` and ``learn_one`` on them raise; ``fit`` makes one independent). A
        view reads under the forest's lock and follows the forest's later updates."""
        if self._tree_view_class is None:
            raise AttributeError(f"{type(self).__name__} has no estimators_")
        check_is_fitted(self, "_trees")
        return [self._tree_view(k) for k in range(len(self._trees))]

    def _tree_view(self, k):
        """The read-only single-tree view of tree ``k`` (``estimators_[k]``)."""
        cls = self._tree_view_class
        params = {name: getattr(self, name) for name in cls._get_param_names()
                  if name != "random_state"}
        # The tree's own seed makes a later view.fit reproducible.
        view = cls(**params, random_state=int(self._seeds[k] % 2**32))
        view._ensemble = self._ensemble.single_tree(k)
        for name in self._tree_view_attributes:
            if name in self.__dict__:
                view.__dict__[name] = self.__dict__[name]
        view._read_only_view = True
        share_lock(view, self)  # it reads the forest's buffers: under the forest's lock
        view.__dict__[VIEW_ATTRIBUTE] = (self, k, model_lock(self).generation)
        view._init_view()
        return view

    def _refresh_view(self):
        """Follow the forest after it learnt (its trees changed in place): take the state of a
        fresh view of the same tree (run under the forest's lock, before every read)."""
        owner, k, generation = self.__dict__[VIEW_ATTRIBUTE]
        if model_lock(owner).generation == generation:
            return
        if k < len(owner.__dict__.get("_ensemble", ())):
            self.__dict__.update(owner._tree_view(k).__dict__)
        else:  # a refit with fewer trees: this tree no longer changes
            self.__dict__[VIEW_ATTRIBUTE] = (owner, k, model_lock(owner).generation)

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
        "min_samples_split": MIN_SAMPLES_SPLIT_CONSTRAINT,
        "feature_scaling": [StrOptions({"minmax"}), tuple, list, None],
        "feature_weights": [None, "array-like", str],
        "random_state": ["random_state"],
    }

    _pause_pure = False
    # What the trees' min_samples_split rule counts (MondrianTree.count_columns): 0 the stored
    # points; the models whose rows carry sample weights count weights instead.
    _count_columns = 0
    # Whether the trees rebuild small nodes' statistics rows from the store's rows
    # (TreeEnsemble lean_values): for rows whose sums are exact in any order.
    _lean_values = False
    _refit_params = ("lifetime", "min_samples_split", "feature_scaling", "feature_weights")
    # Whether the targets are class labels (the relevance methods and the weights probe).
    _classification = False
    # Trees of the probe models that choose the power of feature_weights="auto".
    _weights_probe_trees = 20
    # Largest weights refined by doubling/halving probes after the power search
    # (relevance.choose_weights; 0: none). Off: 2 on the regressor gave mean RMSE / RF 1.116
    # against 1.119 without, for +0.14 of RF's fit (bench_weights notes, 2026-11-23).
    _weights_refine = 0
    # Class of those probes (the forest for a single-tree estimator; None: this class).
    _weights_probe_class = None

    # ----------------------------------------------------------------- validation

    def _validate_X_predict(self, X):
        if "_trees" not in self.__dict__:
            check_is_fitted(self, "_trees")
        fast = self._fast_rows(X)
        if fast is not None and fast.shape[0] == 1:
            scaled = self._fast_scaled_row(fast[0], clip=True)
            if scaled is not None:
                return scaled
        X = fast if fast is not None else validate_data(
            self, X, reset=False, dtype=np.float64, order="C"
        )
        return self._scaler.transform(X, clip=True)

    def _fast_rows(self, X):
        """``X`` itself when full validation would return it unchanged, else None.

        A small C-contiguous float64 ndarray of the fitted width with finite values, given to a
        model fitted without feature names, is exactly what ``validate_data(reset=False,
        dtype=np.float64, order="C")`` returns (the same object, no warning); checking that
        directly skips most of the per-call cost of one-row streaming calls. Anything else
        (lists, other dtypes, DataFrames, sparse input, NaN, a wrong width) returns None and
        takes the full validation, which raises or warns exactly as before.
        """
        if (
            type(X) is np.ndarray
            and X.dtype == np.float64
            and X.ndim == 2
            and 0 < X.shape[0] <= FAST_ROWS
            and X.shape[1] == self.__dict__.get("n_features_in_", -1)
            and X.flags.c_contiguous
            and "feature_names_in_" not in self.__dict__
            and np.isfinite(X).all()
        ):
            return X
        return None

    def _validate_lifetime(self):
        if isinstance(self.lifetime, str):
            return  # "auto", for the estimators whose constraints allow it
        if np.isnan(self.lifetime):
            raise ValueError("lifetime must be a number in [0, inf], got nan")

    # ----------------------------------------------------------------- one sample

    def _fast_scaled_row(self, x, clip):
        """One sample in the trees' coordinates, ``(1, n_features)``, when the full path
        (:meth:`_one_row`, then the feature map's ``transform``) would accept it; else None.

        Taken by a plain 1-D float64 ndarray of the fitted width, or a dict whose keys are
        exactly the features the model reads (``feature_names_in_``, else the key order of the
        first dict learnt), with finite values, under a feature map without a quantile part.
        :func:`~mondrian.core._online.scale_row` computes what ``transform`` computes, bit for
        bit, in one call. Anything else (lists, other dtypes, NaN, a wrong width or key set,
        values too large to store when ``clip`` is False) returns None and the caller takes
        the full path, which raises or converts exactly as before.
        """
        d = self.__dict__
        ensemble = d.get("_ensemble")
        if ensemble is None:
            return None
        if type(x) is dict:
            names = d.get("feature_names_in_")
            if names is None:
                names = d.get("_dict_keys")
            if names is None or len(x) != len(names):
                return None
            try:  # every name found and as many keys as names: the same key set
                x = np.array([x[name] for name in names], dtype=np.float64)
            except (KeyError, TypeError, ValueError):
                return None
        elif not (type(x) is np.ndarray and x.dtype is _FLOAT64 and x.ndim == 1):
            return None
        if x.shape[0] != d.get("n_features_in_", -1):
            return None
        feature_map = ensemble.feature_map
        if feature_map.knots is not None or feature_map.offset is None:
            return None
        return scale_row(x, feature_map.offset, feature_map.scale, feature_map.weights,
                         MAX_SCALED, clip)

    def _frozen_stream(self):
        """Whether an online update of this fitted model may take the one-row fast path
        (:meth:`TreeEnsemble.add_scaled_logged`): its trees log their changes, the feature map
        is frozen, no stream window of ``feature_weights="auto"`` is open, and no parameter
        changed since fit (the checks of :meth:`_warm_start_check` that would refuse the
        update or add trees). Otherwise the full path runs (and raises what it raises)."""
        d = self.__dict__
        ensemble = d.get("_ensemble")
        if (ensemble is None or ensemble.read_only or ensemble.tree_class is not MondrianTree
                or d.get("_read_only_view") or "_weights_window" in d):
            return False
        feature_map = ensemble.feature_map
        if (feature_map.n_seen < feature_map.warm_up or feature_map.frozen is None
                or feature_map.knots is not None or not all_true(feature_map.frozen)):
            return False
        if self._n_trees() != len(ensemble.trees):
            return False
        for name, before in d.get("_fit_params", {}).items():
            now = getattr(self, name)
            if now is not before and not _same_param(now, before):
                return False
        return True

    def _one_row(self, x, learn=False):
        """A single sample (1-D array-like or dict) as a (1, n_features) float64 array.

        Only ``learn=True`` (``learn_one``) records the key order of a first dict: predicting
        never changes the model.
        """
        if isinstance(x, dict):
            names = getattr(self, "feature_names_in_", None)
            if names is None:
                names = getattr(self, "_dict_keys", None)
                if names is None:
                    names = list(x)
                    if learn:
                        self._dict_keys = names
            try:
                values = [x[name] for name in names]
            except KeyError as exc:
                raise ValueError(f"feature {exc.args[0]!r} is missing from x") from None
            if len(x) > len(values):
                known = set(names)
                unknown = [key for key in x if key not in known]
                raise ValueError(
                    f"x has features {unknown} that the model never saw (it reads "
                    f"{list(names)}); growing the feature set is not supported"
                )
            x = values
        row = np.asarray(x, dtype=np.float64).reshape(1, -1)
        if hasattr(self, "n_features_in_") and row.shape[1] != self.n_features_in_:
            raise ValueError(
                f"x has {row.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input"
            )
        if not np.isfinite(row).all():
            raise ValueError(
                "x contains NaN or infinity: the Mondrian models take no missing values; "
                "impute them first (e.g. sklearn.impute.SimpleImputer)"
            )
        return row

    # ----------------------------------------------------------------- growing

    def _init_trees(self, X, n_trees, width, lifetime=None):
        """A fresh ensemble (feature map, store, trees) for the first batch ``X`` (original
        units; checked, not stored).

        ``lifetime`` (default: the parameter) becomes the fitted ``lifetime_``. The feature
        weights are those of :meth:`_choose_feature_weights` (run it first), else none.
        """
        self._validate_lifetime()
        self.lifetime_ = float(self.lifetime if lifetime is None else lifetime)
        tree_params = {"min_samples_split": resolve_min_samples_split(self.min_samples_split,
                                                                      X.shape[0]),
                       "pause_pure": self._pause_pure,
                       "count_columns": self._count_columns,
                       "lean_values": self._lean_values}
        weights = self.__dict__.get("_map_weights")
        if isinstance(self.feature_scaling, (tuple, list)):  # a range fixed up front
            feature_map = FeatureScaler.fixed(*check_feature_range(self.feature_scaling,
                                                                   X.shape[1]), weights=weights)
            feature_map.check(X)
            self._ensemble = TreeEnsemble(X.shape[1], width, self.lifetime_, feature_map,
                                          self._tree_seeds(n_trees), **tree_params)
        else:
            self._ensemble = TreeEnsemble.start(
                X, self._tree_seeds(n_trees), width=width, lifetime=self.lifetime_,
                feature_scaling=self.feature_scaling == "minmax", weights=weights,
                knots=self.__dict__.get("_map_knots"), **tree_params,
            )
        self._remember_params()

    # ----------------------------------------------------------------- feature weights

    def _choose_feature_weights(self, X, y, stream=False, sample_weight=None):
        """Set the weights of the feature map for a first batch ``(X, y)`` (original units).

        ``None``: no weights. An array: checked and used. A method name (``"auto"``): chosen
        by :func:`~mondrian.core.relevance.choose_weights` with probes of this model; with
        ``stream=True`` and fewer than ``auto_warm_up`` rows the weights stay uniform and the
        rows open the stream window (:meth:`_feed_weights_window`). Sets ``_map_weights``
        (None or an array), ``feature_weights_`` and, for a search, ``feature_weights_info_``.
        ``sample_weight`` (positive counts of the rows, or None) reaches every step of the
        search: a row of integer weight ``k`` counts as ``k`` rows, also for the thresholds
        ``MIN_SAMPLES`` and ``auto_warm_up``.
        """
        n_features = X.shape[1]
        for name in ("feature_weights_", "feature_weights_info_", "_weights_window"):
            self.__dict__.pop(name, None)
        inherited = self.__dict__.pop("_inherit_map", None)
        if inherited is not None:  # a probe of the lifetime search: the parent's map
            self._map_weights, self._map_knots = inherited
            self.feature_weights_ = (np.ones(n_features) if inherited[0] is None
                                     else inherited[0].copy())
            return
        fw = self.feature_weights
        weights = knots = None
        if isinstance(fw, str):
            method = resolve_method(fw)
            if y is None:
                raise ValueError(
                    f"feature_weights={fw!r} learns the weights from the labels, which "
                    f"{type(self).__name__} does not have here: pass an array of weights (for "
                    "instance a fitted model's feature_weights_)"
                )
            n_rows = _n_rows(y, sample_weight)
            if stream and n_rows < self._auto_warm_up():
                self._weights_window = (X.copy(), np.asarray(y).copy(),
                                        None if sample_weight is None
                                        else np.asarray(sample_weight, np.float64).copy())
            elif n_rows >= MIN_SAMPLES:
                weights, knots, self.feature_weights_info_ = self._search_weights(
                    X, y, method, quantile=not isinstance(self.feature_scaling, (tuple, list)),
                    sample_weight=sample_weight)
        elif fw is not None:
            weights = check_weights(fw, n_features)
        self._map_weights, self._map_knots = weights, knots
        self.feature_weights_ = np.ones(n_features) if weights is None else weights.copy()

    @staticmethod
    def _auto_warm_up():
        return relevance.AUTO_WARM_UP  # read at call time (tests may lower it)

    def _search_weights(self, X, y, method, quantile=False, sample_weight=None, **options):
        """:func:`~mondrian.core.relevance.choose_weights` on the rows of
        :func:`~mondrian.core.relevance.search_sample` (a quarter of the batch, 2000 to 8000
        rows): a bounded price however large the batch; ``options`` go to ``choose_weights``."""
        X, y, sample_weight, random_state = search_sample(X, y, sample_weight,
                                                          self.random_state)
        fraction = getattr(self, "validation_fraction", 0.2)
        return choose_weights(X, y, self._classification, self._weights_score, method,
                              random_state, fraction, quantile=quantile,
                              refine=self._weights_refine, sample_weight=sample_weight,
                              **options)

    def _weights_probe(self, weights):
        """An unfitted model like this one with the fixed ``weights`` (the power search)."""
        cls = self._weights_probe_class or type(self)
        names = cls._get_param_names()
        params = {k: v for k, v in self.get_params(deep=False).items() if k in names}
        params["feature_weights"] = weights
        if isinstance(params.get("lifetime"), str) and self._weights_probe_trees:
            params["lifetime"] = np.inf  # forests: the lifetime search is not repeated
        if "n_estimators" in names and self._weights_probe_trees:
            # Whatever n_estimators: forests fitted in parts on the same rows choose alike.
            params["n_estimators"] = self._weights_probe_trees
        return cls(**params)

    def _weights_score(self, weights, X_fit, y_fit, X_val, y_val, sample_weight=None):
        """Per-row validation scores of a probe with ``weights`` (larger is better): 1 for a
        right class, the negative squared error of a number; paired across probes by
        :func:`~mondrian.core.relevance.beats`. ``sample_weight``: counts of the fit rows."""
        probe = self._weights_probe(weights)
        if sample_weight is None:
            probe.fit(X_fit, y_fit)
        else:
            probe.fit(X_fit, y_fit, sample_weight=sample_weight)
        pred = probe.predict(X_val)
        if self._classification:
            return (pred == y_val).astype(np.float64)
        loss = np.square(np.asarray(pred, dtype=np.float64) - y_val)
        return -(loss.sum(axis=1) if loss.ndim == 2 else loss)

    def _feed_weights_window(self, X, y, sample_weight=None):
        """Add online rows (with their positive counts ``sample_weight``, None: 1 each) to an
        open stream window of ``feature_weights="auto"``; once it holds ``auto_warm_up`` rows
        (counted with their weights), choose the weights on it, re-map the stored points and
        re-sample the trees (the same law as growing them online under the new map). After
        that the weights never change."""
        window = self.__dict__.get("_weights_window")
        if window is None:
            return
        X_all = np.vstack([window[0], X])
        y_all = np.concatenate([window[1], np.asarray(y)])
        old_w = window[2] if len(window) > 2 else None  # windows pickled without weights
        w_all = None
        if old_w is not None or sample_weight is not None:
            w_all = np.concatenate([
                np.ones(len(window[1])) if old_w is None else old_w,
                np.ones(len(y_all) - len(window[1])) if sample_weight is None
                else np.asarray(sample_weight, dtype=np.float64)])
        if _n_rows(y_all, w_all) < self._auto_warm_up():
            self._weights_window = (X_all, y_all, w_all)
            return
        del self._weights_window
        method = resolve_method(self.feature_weights)
        # The window chooses weights only: the min-max map is frozen by now.
        weights, _, self.feature_weights_info_ = self._search_weights(X_all, y_all, method,
                                                                      sample_weight=w_all)
        self.feature_weights_ = weights.copy()
        if np.all(weights == 1.0):
            return  # uniform won: the trees already have the law of this map
        self._map_weights = weights
        self._ensemble.reweight(weights, X_all, self._n_jobs(), getattr(self, "verbose", 0))
        self._after_reweight()

    def _after_reweight(self):
        """Reset what depends on the trees after the window re-sampled them (subclasses)."""

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

    def decision_path(self, X):
        """Nodes each sample goes through, root to leaf, in every tree (scikit-learn style).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        indicator : sparse matrix of shape (n_samples, n_nodes)
            CSR matrix whose non-zero ``(i, j)`` entries mark node ``j`` on the path of sample
            ``i``; the nodes of tree ``k`` are columns ``n_nodes_ptr[k]:n_nodes_ptr[k + 1]``
            (in the order of ``tree_.children_left``). The leaves are those of :meth:`apply`.
        n_nodes_ptr : ndarray of shape (n_trees + 1,)
            Column offsets of the trees.
        """
        X = self._validate_X_predict(X)
        n = X.shape[0]
        rows, cols, ptr = [], [], [0]
        for tree in self._trees:
            parent = tree.nodes_array["parent"]
            node, sample = tree.apply(X), np.arange(n)
            while node.size:  # one step up per level, over all samples at once
                rows.append(sample)
                cols.append(node + ptr[-1])
                up = parent[node]
                keep = up >= 0
                node, sample = up[keep], sample[keep]
            ptr.append(ptr[-1] + tree.node_count)
        rows = np.concatenate(rows) if rows else np.zeros(0, np.intp)
        cols = np.concatenate(cols) if cols else np.zeros(0, np.intp)
        indicator = sparse.csr_matrix((np.ones(rows.size, dtype=np.int64), (rows, cols)),
                                      shape=(n, ptr[-1]))
        indicator.sort_indices()
        return indicator, np.asarray(ptr, dtype=np.intp)

    @property
    def feature_offset_(self):
        """Offset of the min-max feature map (first value seen of each feature)."""
        check_is_fitted(self, "_trees")
        return self._scaler.offset.copy()

    @property
    def feature_scale_(self):
        """Scale of the min-max feature map (for a feature constant during the warm-up: the
        magnitude of its value, 1 for 0; see :class:`~mondrian.core.feature_map.FeatureScaler`)."""
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


class FeatureImportanceMixin:
    """``feature_importances_``: the decrease of the leaf posterior's training loss at the
    cuts of each feature (subclasses define ``_node_losses``)."""

    def _node_losses(self, value):
        """Training loss of every node read as a leaf, from its statistics rows."""
        raise NotImplementedError

    def _learned_importances(self):
        """Learned per-feature weights to report instead, when the model has them (None).

        This is the one place a model with learned per-dimension weights (the relevance
        issue's ``feature_weights_``) returns their normalised values.
        """
        return None

    @property
    def feature_importances_(self):
        """Share of each feature in the decrease of the training loss at the trees' cuts.

        At every cut, the loss of the node read as a leaf minus the losses of its two
        children (a cut that does not lower it counts 0) is credited to the cut's feature.
        The loss of a node is its training loss under the leaf posterior the lifetime paths
        read, computed from its (weighted) statistics: for a classifier the log-loss
        ``-sum_k n_k log((n_k + a / K) / (n + a))`` of a Dirichlet leaf with the
        ``concentration`` ``a``; for a regressor the squared error about the node's mean
        (``sum y**2 - (sum y)**2 / n``). Each tree's credits are normalised to sum to one
        (a tree without cuts gives zeros), then averaged over the trees and normalised again,
        as scikit-learn's forests do. Unlike scikit-learn's trees the cuts are not chosen to
        lower the loss: a feature the labels do not depend on gets cuts but little credit.

        Returns
        -------
        ndarray of shape (n_features,)
            Non-negative, summing to one unless no cut lowers the loss (then all zero).
        """
        check_is_fitted(self, "_trees")
        learned = self._learned_importances()
        if learned is not None:
            return learned
        total = np.zeros(self.n_features_in_)
        for tree in self._trees:
            nodes = tree.nodes_array
            internal = nodes["left_child"] != TREE_LEAF
            losses = self._node_losses(tree.value_array)
            gain = (losses[internal] - losses[nodes["left_child"][internal]]
                    - losses[nodes["right_child"][internal]])
            credit = np.bincount(nodes["feature"][internal], weights=np.maximum(gain, 0.0),
                                 minlength=self.n_features_in_)
            if credit.sum() > 0:
                total += credit / credit.sum()
        return total / total.sum() if total.sum() > 0 else total


class SingleTreeMixin:
    """The single-tree form of an ensemble estimator (its ``apply`` returns one column)."""

    def _n_trees(self):
        return 1

    def decision_path(self, X):
        """Nodes each sample goes through, root to leaf (scikit-learn style).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        indicator : sparse matrix of shape (n_samples, n_nodes)
            CSR matrix whose non-zero ``(i, j)`` entries mark node ``j`` on the path of
            sample ``i``.
        """
        return super().decision_path(X)[0]

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
