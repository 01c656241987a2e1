"""Estimator machinery shared by every Mondrian forest: validation, scaling, seeding, threads."""

import copy
import numbers
from contextlib import contextmanager

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from mondrian.core._tree import NODE_DTYPE, MondrianTree, extend_trees
from mondrian.core.feature_map import FeatureScaler
from mondrian.core.store import DataStore
from mondrian.core.structure import TREE_LEAF, TREE_UNDEFINED, MondrianTreeStructure  # noqa: F401

__all__ = [
    "BaseMondrianEnsemble",
    "VersionedStateMixin",
    "pruned_copy",
    "unchanged_on_error",
    "PruneMixin",
    "SingleTreeMixin",
]

# Version of the pickled estimator state (the trees carry their own version too).
STATE_VERSION = 2

# Trees per unit of threaded prediction work (fixed, so results do not depend on n_jobs).
TREES_PER_CHUNK = 16



def _n_jobs(n_jobs, n_tasks):
    if n_jobs is None:
        return 1
    if n_jobs < 0:
        from joblib import cpu_count

        n_jobs = max(cpu_count() + 1 + n_jobs, 1)
    return max(1, min(n_jobs, n_tasks))


def _chunks(items, n_chunks):
    bounds = np.linspace(0, len(items), n_chunks + 1).astype(int)
    return [items[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]


@contextmanager
def unchanged_on_error(estimator):
    """Restore the estimator's attributes if the block raises: a failed (re)fit leaves the
    previous model (or the unfitted estimator) as it was, though validation sets some
    attributes early."""
    saved = dict(estimator.__dict__)
    try:
        yield
    except BaseException:
        estimator.__dict__.clear()
        estimator.__dict__.update(saved)
        raise


class VersionedStateMixin:
    """Pickled estimators carry ``_mondrian_state_version`` (``_state_version``) and refuse to
    load a state written by another version."""

    _state_version = STATE_VERSION

    def __getstate__(self):
        state = super().__getstate__()
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


class BaseMondrianEnsemble(VersionedStateMixin, BaseEstimator):
    """Common machinery of the Mondrian estimators (not for direct use).

    Subclasses set the width of the statistics rows (``_row_width``), turn targets into rows
    (``_make_rows``) and choose the pause rule (``_pause_pure``). The trees live in
    ``self._trees`` and share one :class:`DataStore` and one :class:`FeatureScaler`.
    """

    _parameter_constraints = {
        "lifetime": [Interval(numbers.Real, 0, None, closed="both")],
        "min_samples_split": [Interval(numbers.Integral, 1, None, closed="left")],
        "feature_scaling": [StrOptions({"minmax"}), None],
        "random_state": ["random_state"],
    }

    _pause_pure = False

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
        rng = check_random_state(self.random_state)
        return rng.randint(0, np.iinfo(np.int64).max, size=n_trees, dtype=np.int64)

    def _init_trees(self, X, n_trees, width, lifetime=None):
        """Fresh scaler, store and trees for the first batch ``X`` (original units).

        ``lifetime`` (default: the parameter) becomes the fitted ``lifetime_``.
        """
        self._validate_lifetime()
        self.lifetime_ = float(self.lifetime if lifetime is None else lifetime)
        self._scaler = FeatureScaler(self.feature_scaling == "minmax")
        self._scaler.check(X)
        self._store = DataStore(X.shape[1], width)
        self._seeds = self._tree_seeds(n_trees)
        self._trees = self._new_trees(X.shape[1], width)

    def _new_trees(self, n_features, width):
        return [
            MondrianTree(
                n_features,
                width,
                self.lifetime_,
                int(self.min_samples_split),
                self._pause_pure,
                int(seed),
            )
            for seed in self._seeds
        ]

    def _add_points(self, X, rows, n_jobs=None):
        """Store the new points (original units) and extend every tree with them."""
        seen = self._scaler.update(X)
        indices = self._store.append(self._scaler.transform(X), rows)
        if seen is not None:
            # The feature map changed during its warm-up: re-sample the trees from scratch on
            # the few points stored, under the new map (same law as growing them online).
            self._store.replace_X(self._scaler.transform(seen))
            self._trees = self._new_trees(X.shape[1], self._store.rows.shape[1])
            indices = np.arange(self._store.n_samples, dtype=np.intp)
        X_store, rows_store = self._store.X, self._store.rows
        n_jobs = _n_jobs(n_jobs, len(self._trees))
        if n_jobs == 1:
            extend_trees(self._trees, X_store, rows_store, indices)
        else:
            Parallel(n_jobs=n_jobs, prefer="threads", verbose=getattr(self, "verbose", 0))(
                delayed(extend_trees)(chunk, X_store, rows_store, indices)
                for chunk in _chunks(self._trees, n_jobs)
            )

    def _accumulate(self, function, X, n_outputs, n_jobs=None):
        """Sum ``function(trees, X, out)`` over fixed chunks of trees, run in threads.

        The chunks do not depend on ``n_jobs`` and their results are added in order, so the
        output is bit-identical for any number of threads.
        """
        out = np.zeros((X.shape[0], n_outputs), dtype=np.float64)
        if X.shape[0] == 1 or len(self._trees) <= TREES_PER_CHUNK:
            function(self._trees, X, out)
            return out
        chunks = [self._trees[i : i + TREES_PER_CHUNK]
                  for i in range(0, len(self._trees), TREES_PER_CHUNK)]

        def run(chunk):
            partial = np.zeros_like(out)
            function(chunk, X, partial)
            return partial

        n_jobs = _n_jobs(n_jobs, len(chunks))
        for partial in Parallel(n_jobs=n_jobs, prefer="threads")(
            delayed(run)(chunk) for chunk in chunks
        ):
            out += partial
        return out

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
        pruned._scaler = copy.deepcopy(self._scaler)
        pruned._after_prune()
        return pruned


def pruned_copy(estimator, lifetime, allow_zero):
    """A shallow copy of a fitted estimator whose trees (and stored points) are its own,
    restricted to ``lifetime`` (validated against the fitted ``lifetime_``)."""
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
    pruned.lifetime = float(lifetime)
    pruned.lifetime_ = float(lifetime)
    pruned._trees = [tree.pruned(float(lifetime)) for tree in estimator._trees]
    pruned._store = copy.deepcopy(estimator._store)
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
