"""The estimator side of a tree ensemble: the base class of the Mondrian forests, trees and
density (warm-start rules, single-tree views, growth, reads of every tree)."""

import numbers

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from mondrian.core.ensemble import TreeEnsemble, draw_seeds
from mondrian.core.feature_map import FeatureScaler, check_feature_range
from mondrian.estimator.conventions import (
    MIN_SAMPLES_SPLIT_CONSTRAINT,
    resolve_min_samples_split,
)
from mondrian.estimator.locking import VIEW_ATTRIBUTE, LockedMethodsMixin, model_lock, share_lock
from mondrian.estimator.params import StrictParamsMixin, same_param
from mondrian.estimator.rows import RowsMixin
from mondrian.estimator.versioned import VersionedStateMixin
from mondrian.estimator.weights import FeatureWeightsMixin

__all__ = ["EnsembleMixin", "BaseMondrianEnsemble"]


class EnsembleMixin(StrictParamsMixin, LockedMethodsMixin):
    """The estimator side of a :class:`TreeEnsemble` held in ``self._ensemble``.

    Thread safety (:class:`~mondrian.estimator.locking.LockedMethodsMixin`): any number of threads
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
    # mondrian.merging.forest_parts holds trees [_first_tree, _first_tree + n_estimators).
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
            if same_param(now, before):
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


class BaseMondrianEnsemble(EnsembleMixin, RowsMixin, FeatureWeightsMixin, VersionedStateMixin,
                           BaseEstimator):
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

    def _validate_lifetime(self):
        if isinstance(self.lifetime, str):
            return  # "auto", for the estimators whose constraints allow it
        if np.isnan(self.lifetime):
            raise ValueError("lifetime must be a number in [0, inf], got nan")

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

