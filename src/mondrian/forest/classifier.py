"""Mondrian forest classifier (Lakshminarayanan, Roy & Teh, 2014) and its single-tree form."""

import numbers

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from mondrian.core.base import (
    FAST_ROWS,
    FOREST_PARAMETER_CONSTRAINTS,
    BaseMondrianEnsemble,
    FeatureImportanceMixin,
    MondrianTreeStructure,
    PruneMixin,
    SingleTreeMixin,
    check_sample_weight,
    drop_zero_weights,
    online_update,
    unchanged_on_error,
)
from mondrian.core.conventions import ConventionsMixin, TreeSequenceMixin
from mondrian.core.forgetting import WINDOW_DOC
from mondrian.core.relevance import FOREST_FEATURE_WEIGHTS_DOC
from mondrian.core.state_checks import check_classes, refuse
from mondrian.forest._hnsp import predict_proba_dirichlet_trees, predict_proba_trees
from mondrian.forest._path_readers import DirichletLeafReader, inherit_unlabelled
from mondrian.forest.forgetting import ClassifierForgetMixin
from mondrian.forest.lifetime_path import LifetimePathMixin

__all__ = ["MondrianForestClassifier", "MondrianTreeClassifier"]


def _reject_mixed_labels(y):
    """Raise a TypeError when a label sequence mixes strings with numbers.

    NumPy would silently turn such a list into strings, so the check runs on the raw input.
    """
    if y is None:
        return
    if isinstance(y, (list, tuple)):
        flat = np.ravel(np.asarray(y, dtype=object))
    else:
        flat = np.asarray(y)
        if flat.dtype != object:
            return
        flat = flat.ravel()
    is_str = [isinstance(v, (str, bytes)) for v in flat]
    if any(is_str) and not all(is_str):
        raise TypeError("y mixes strings and numbers; labels must be all strings or all numbers")


def _check_one_label(y):
    """Raise a clear error for a single label that could not be a class (before any change)."""
    if y is None:
        raise ValueError("y is None: learn_one needs the sample's class label")
    if np.ndim(y) != 0:
        raise ValueError(f"y must be a single label (a number or a string), got {y!r}")
    try:
        hash(y)
    except TypeError:
        raise TypeError(f"a label must be hashable, got {type(y).__name__}") from None
    if isinstance(y, (float, np.floating)) and not np.isfinite(y):
        raise ValueError(f"a label must be finite, got {y!r}")
    check_classification_targets(np.asarray([y]))



def _search_counts(sample_weight, X, weights):
    """The sample weights alone (without the class factors, which the weight search's probes
    apply themselves), aligned with ``weights`` for ``drop_zero_weights``."""
    if weights is None:
        return np.ones(len(X))
    return np.ones(len(weights)) if sample_weight is None else check_sample_weight(
        sample_weight, X)


def _or_none(counts, sample_weight):
    return None if sample_weight is None else counts

class _BaseMondrianClassifier(
    ConventionsMixin, ClassifierMixin, LifetimePathMixin, PruneMixin, FeatureImportanceMixin,
    ClassifierForgetMixin,
    BaseMondrianEnsemble
):
    """Classification on Mondrian trees: HNSP/IKN smoothing and analytic extension."""

    _parameter_constraints = {
        **BaseMondrianEnsemble._parameter_constraints,
        "lifetime": [Interval(numbers.Real, 0, None, closed="both"), StrOptions({"auto"})],
        "smoothing": [StrOptions({"hnsp", "dirichlet"})],
        "discount_factor": [Interval(numbers.Real, 0, None, closed="neither")],
        "concentration": [Interval(numbers.Real, 0, None, closed="neither")],
        "branch_off_counts": [StrOptions({"node", "tables"})],
        "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "class_weight": [StrOptions({"balanced"}), dict, None],
        "window": [Interval(numbers.Integral, 1, None, closed="left"), None],
    }

    _pause_pure = True
    _count_columns = -1  # min_samples_split counts the summed (weighted) class counts
    _lean_values = True  # class counts: rebuilt rows have the bits of stored ones
    _classification = True

    def _after_prune(self):
        self.__dict__.pop("_codes_cache", None)

    # ----------------------------------------------------------------- labels

    def _rows(self, codes, weights=None):
        """Contribution rows of labels with codes ``codes`` (positions in ``classes_``): the
        (weighted) one-hot rows, in the stored columns (:meth:`_class_columns`)."""
        rows = np.zeros((codes.shape[0], self._ensemble.width), dtype=np.float64)
        rows[np.arange(codes.shape[0]), self._class_columns()[codes]] = (
            1.0 if weights is None else weights)
        return rows

    def _check_loaded_state(self):
        super()._check_loaded_state()
        if "_ensemble" not in self.__dict__:
            return
        trees = self._ensemble.trees
        n_columns = trees[0].n_columns if trees else 0
        if any(tree.n_columns != n_columns for tree in trees) or (
                self._ensemble.column_order is not None
                and len(self._ensemble.column_order) != n_columns):
            refuse(type(self).__name__, "the trees' class columns differ")
        check_classes(self, n_columns)

    def _class_columns(self):
        """Stored column of each class of ``classes_`` in the rows and the trees' statistics.

        Classes keep the column they got on arrival (new ones take the next spare column), so
        a new class costs O(n_classes) per tree, not a rewrite of every node: the width
        doubles when the spare columns run out (O(log n_classes) rewrites in all). The
        readers take the columns in this order, so every output follows ``classes_``.
        """
        order = self._ensemble.column_order
        return np.arange(len(self.classes_)) if order is None else np.array(order, dtype=np.intp)

    def _node_losses(self, value):
        # Training log-loss of each node's Dirichlet leaf posterior (feature_importances_).
        n_classes = value.shape[1]
        a = float(self.concentration)
        mean = (value + a / n_classes) / (value.sum(axis=1, keepdims=True) + a)
        return -np.sum(value * np.log(mean), axis=1)

    def _class_factor(self, label):
        """Weight of the class ``label`` under a dict ``class_weight`` (1 when absent)."""
        factor = self.class_weight.get(label, 1.0)
        if (not isinstance(factor, numbers.Real) or isinstance(factor, bool)
                or not np.isfinite(factor) or factor < 0):
            raise ValueError(
                f"class_weight[{label!r}] must be a finite non-negative number, got {factor!r}"
            )
        return float(factor)

    def _sample_weights(self, sample_weight, X, y, online, allow_empty=False):
        """Row weights: ``sample_weight`` times the class weights (None: all ones).

        ``class_weight="balanced"`` gives class ``k`` the factor ``W / (K * W_k)`` (``W_k``
        the weight of class ``k``, ``W`` the total, ``K`` the classes of positive weight):
        scikit-learn's rule, computed on weighted counts so that integer weights still equal
        repeated rows. It needs the whole training set, so only ``fit`` takes it.
        """
        weights = check_sample_weight(sample_weight, X)
        if self.class_weight is None:
            return weights
        if isinstance(self.class_weight, str) and online:
            raise ValueError(
                'class_weight="balanced" is computed on the whole training set: use fit, or '
                "give partial_fit a dict of class weights"
            )
        base = np.ones(len(y)) if weights is None else weights
        labels, inverse = np.unique(y, return_inverse=True)
        if isinstance(self.class_weight, str):
            totals = np.bincount(inverse, weights=base, minlength=len(labels))
            factors = np.zeros(len(labels))
            positive = totals > 0
            factors[positive] = base.sum() / (positive.sum() * totals[positive])
        else:
            factors = np.array([self._class_factor(label) for label in labels.tolist()])
        weights = base * factors[inverse]
        if not allow_empty and not np.any(weights > 0):
            raise ValueError(
                "every sample has zero weight after class_weight: nothing to learn from"
            )
        return weights

    def _class_codes(self):
        """``{label: column}`` lookup for the one-sample path, rebuilt when classes change."""
        cache = getattr(self, "_codes_cache", None)
        if cache is None or cache[0] is not self.classes_:
            labels = self.classes_.tolist()
            codes = {label: k for k, label in enumerate(labels)}
            # One-hot rows by code, made on first use: a table of every class would cost
            # O(n_classes * width) per new class, quadratic when classes arrive one by one.
            self._codes_cache = cache = (self.classes_, codes, labels, {})
        return cache[1]

    def _one_hot_row(self, code):
        """The (1, width) statistics row of one sample of class ``code`` (read-only)."""
        self._class_codes()
        rows = self._codes_cache[3]
        row = rows.get(code)
        if row is None:
            row = np.zeros((1, self._ensemble.width))
            row[0, self._class_columns()[code]] = 1.0
            row.flags.writeable = False
            rows[code] = row
        return row

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_codes_cache", None)  # a cache, rebuilt on demand
        state.pop("_classes_argument", None)  # likewise (see _classes_already)
        return state

    def _check_label_kind(self, y):
        if not hasattr(self, "classes_") or len(y) == 0:
            return
        old_str = self.classes_.dtype.kind in "OUS"
        new_str = np.asarray(y).dtype.kind in "OUS"
        if old_str != new_str:
            raise TypeError(
                f"labels of dtype {np.asarray(y).dtype} cannot be mixed with the classes "
                f"seen so far ({self.classes_.dtype})"
            )

    def _add_classes(self, new_classes):
        """Grow ``classes_`` (kept sorted): each new class takes the next spare stored column
        and its place in the trees' read columns; the rows are rewritten (to twice the width)
        only when no spare column is left."""
        merged = np.union1d(self.classes_, new_classes)
        ensemble = self._ensemble
        n_old, n_new = len(self.classes_), len(merged)
        new = ~np.isin(merged, self.classes_)
        order = np.empty(n_new, dtype=np.intp)
        order[~new] = self._class_columns()  # both sorted: classes_ in merged order
        order[new] = n_old + np.arange(n_new - n_old)  # stored columns 0..n_old-1 are in use
        width = ensemble.width
        ensemble.set_columns(order, max(n_new, 2 * width) if n_new > width else width)
        self.classes_ = merged

    def _sort_columns(self):
        """Store the classes in the order of ``classes_``, without spare columns (one rewrite
        unless they are so already): the layout of a forest told its classes up front, on
        which forests are merged."""
        ensemble, n_classes = self._ensemble, len(self.classes_)
        if ensemble.column_order is None and ensemble.width == n_classes:
            return
        column_map = np.full(ensemble.width, -1, dtype=np.intp)
        column_map[self._class_columns()] = np.arange(n_classes)
        ensemble.set_columns(np.arange(n_classes), n_classes, column_map)
        self.__dict__.pop("_codes_cache", None)

    @staticmethod
    def _fast_labels(y, n_rows):
        """Whether ``y`` is a 1-D integer ndarray of ``n_rows`` labels: ``validate_data`` and
        ``check_classification_targets`` accept it unchanged, and it mixes no strings."""
        return (type(y) is np.ndarray and y.ndim == 1 and y.dtype.kind in "iu"
                and y.shape[0] == n_rows)

    def _encode_known(self, y):
        """Codes of a small integer ``y`` whose labels are all in ``classes_`` (what
        :meth:`_encode` gives, from the cached ``{label: column}`` lookup, without np.unique
        and setdiff1d), else None."""
        if y.shape[0] > FAST_ROWS or y.dtype.kind not in "iu":
            return None
        lookup = self._class_codes()
        codes = [lookup.get(label) for label in y.tolist()]
        if None in codes:
            return None
        return np.array(codes, dtype=np.intp)

    def _encode(self, y):
        """Codes of ``y`` in ``classes_``, adding unseen classes unless they were fixed."""
        codes = self._encode_known(y)
        if codes is not None:
            return codes
        unseen = np.setdiff1d(np.unique(y), self.classes_)
        if unseen.size:
            if self._classes_fixed:
                raise ValueError(
                    f"y contains labels {unseen.tolist()} that are not in the classes "
                    f"fixed by `classes=` ({self.classes_.tolist()})"
                )
            self._add_classes(unseen)
        return np.searchsorted(self.classes_, y).astype(np.intp)

    # ----------------------------------------------------------------- training

    def fit(self, X, y, sample_weight=None):
        """Sample the forest on the training data (batch Mondrian process, section 1).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs; NaN and infinite values are rejected.
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights, read as counts: a weight of 0 leaves the row out (it does
            not shape the partition either, and a class seen only with weight 0 is not in
            ``classes_``), an integer weight ``k`` gives the forest of the row repeated ``k``
            times. Fractional weights scale the class counts (see the user guide, "Sample
            weights"). Multiplied by ``class_weight``.

        Returns
        -------
        self : object
        """
        with unchanged_on_error(self):
            self._validate_params()
            _reject_mixed_labels(y)
            X, y = validate_data(self, X, y, dtype=np.float64, order="C")
            check_classification_targets(y)
            weights = self._sample_weights(sample_weight, X, y, online=False)
            counts = _search_counts(sample_weight, X, weights)
            X, y, counts, weights = drop_zero_weights(weights, X, y, counts)
            self._validate_lifetime()
            self._choose_feature_weights(X, y, sample_weight=_or_none(counts, sample_weight))
            lifetime = self._fit_lifetime(X, y, weights)
            classes, codes = np.unique(y, return_inverse=True)
            self.classes_ = classes
            self._classes_fixed = False
            self._init_trees(X, self._n_trees(), len(classes), lifetime)
            self._add_points(X, self._rows(codes, weights), self._n_jobs())
        return self

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Extend the forest with new training points (online Mondrian, sections 2-3).

        The forest after any sequence of ``partial_fit`` calls has the same law as a forest
        fitted on all the points at once.

        The update is thread-safe and validated before any change: a rejected input leaves the
        model exactly as before, and so does a ``MemoryError`` or ``KeyboardInterrupt`` raised
        inside the update (large updates copy the trees first, small ones keep an undo log of
        the nodes they change; see the user guide, "Threads and failed calls"); reads from
        other threads wait for it to finish.

        A larger ``n_estimators`` set after fit adds trees sampled on the stored points (the law
        of a forest that had them from the start); a smaller one, or a changed ``lifetime``,
        ``min_samples_split`` or ``feature_scaling``, raises a ``ValueError`` (call ``fit``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            New training inputs.
        y : array-like of shape (n_samples,)
            Their labels. New classes may appear at any call (``classes_`` stays sorted and
            ``predict_proba`` gains columns) unless ``classes`` fixed the set.
        classes : array-like, default=None
            All the classes the stream may contain. When given, labels outside it raise a
            ``ValueError`` and the HNSP prior is uniform over all of them from the start.
        sample_weight : array-like of shape (n_samples,), default=None
            Counts, as in :meth:`fit` (rows of weight 0 are left out); multiplied by a dict
            ``class_weight`` (``"balanced"`` is refused: it needs the whole training set).

        Returns
        -------
        self : object
        """
        if (sample_weight is None and (classes is None or self._classes_already(classes))
                and self._partial_fit_one(X, y)):
            return self
        with online_update(self, X):
            return self._partial_fit(X, y, classes, sample_weight)

    def _partial_fit_one(self, X, y):
        """The one-row fast path of ``partial_fit``: a (1, n_features) float64 ndarray and a
        1-D integer label array of one known class take :meth:`_learn_one_fast` (what the
        full path would do with them, with the same result); returns whether it did."""
        if not (type(X) is np.ndarray and X.ndim == 2 and X.shape[0] == 1
                and self._fast_labels(y, 1) and "feature_names_in_" not in self.__dict__):
            return False
        return self._learn_one_fast(X[0], y[0])

    def _partial_fit(self, X, y, classes, sample_weight=None, allow_empty=False):
        """``allow_empty``: rows of class weight 0 only may leave nothing to learn (then only
        ``classes`` is applied), as ``learn_one`` skips such a row; a first call refuses."""
        first = not hasattr(self, "_trees")
        self._check_writable()
        if first:
            self._validate_params()
        fast = None if first else self._fast_rows(X)
        if fast is not None and self._fast_labels(y, len(fast)):
            X = fast  # what the checks below would return unchanged (an integer y too)
        else:
            _reject_mixed_labels(y)
            X, y = validate_data(self, X, y, dtype=np.float64, order="C", reset=first)
            check_classification_targets(y)
        weights = self._sample_weights(sample_weight, X, y, online=True,
                                       allow_empty=allow_empty and not first)
        if classes is not None:
            _reject_mixed_labels(classes)
            classes = np.unique(np.asarray(classes))
            if allow_empty and not first and weights is not None and not np.any(weights > 0):
                # The labels left out are still checked against `classes`.
                unseen = np.setdiff1d(np.unique(y), classes)
                if unseen.size:
                    raise ValueError(f"y contains labels {unseen.tolist()} that are not in "
                                     f"`classes` ({classes.tolist()})")
        counts = _search_counts(sample_weight, X, weights)
        X, y, counts, weights = drop_zero_weights(weights, X, y, counts)
        counts = _or_none(counts, sample_weight)
        if first:
            self._validate_lifetime()
            start = classes if classes is not None else np.unique(y)
            # Validate every label before any state is created.
            unseen = np.setdiff1d(np.unique(y), start)
            if unseen.size:
                raise ValueError(
                    f"y contains labels {unseen.tolist()} that are not in `classes` "
                    f"({start.tolist()})"
                )
            self._choose_feature_weights(X, y, stream=True, sample_weight=counts)
            lifetime = self._fit_lifetime(X, y, weights)
            self.classes_ = start
            self._classes_fixed = classes is not None
            self._init_trees(X, self._n_trees(), len(start), lifetime)
        else:
            # Parameter changes since fit are refused before anything changes.
            n_new_trees = self._warm_start_check()
            self._scaler.check(X)  # may reject X: before any class is added
            self._check_label_kind(y)
            if classes is not None:
                if self._classes_fixed and not np.array_equal(classes, self.classes_):
                    raise ValueError(
                        f"`classes`={classes.tolist()} differs from the classes fixed on the "
                        f"first call ({self.classes_.tolist()})"
                    )
                missing = np.setdiff1d(self.classes_, classes)
                if missing.size:
                    raise ValueError(f"`classes` lacks classes already seen: {missing.tolist()}")
            if (self._classes_fixed or classes is not None) and not (
                classes is None and self._encode_known(y) is not None
            ):
                allowed = classes if classes is not None else self.classes_
                unseen = np.setdiff1d(np.unique(y), allowed)
                if unseen.size:
                    raise ValueError(
                        f"y contains labels {unseen.tolist()} that are not in the classes "
                        f"fixed by `classes=` ({allowed.tolist()})"
                    )
            if classes is not None:
                extra = np.setdiff1d(classes, self.classes_)
                if extra.size:
                    self._add_classes(extra)
                self._classes_fixed = True
        codes = self._encode(y)
        if not first:
            self._grow_new_trees(n_new_trees, self._n_jobs())
        self._add_points(X, self._rows(codes, weights), self._n_jobs())
        if not first:
            self._feed_weights_window(X, y, counts)
        return self

    # ----------------------------------------------------------------- prediction

    def _proba_trees(self, trees, X, out, lifetime=None):
        """Add the predictive of every tree in ``trees`` at the scaled rows ``X`` to ``out``."""
        if self.smoothing == "dirichlet":
            predict_proba_dirichlet_trees(trees, X, out, float(self.concentration), lifetime)
        else:
            predict_proba_trees(trees, X, out, float(self.discount_factor),
                                self.branch_off_counts == "tables", lifetime)

    def _proba_scaled(self, X_scaled, lifetime=None):
        n_classes = len(self.classes_)
        trees = self._trees
        if X_scaled.shape[0] == 1:
            # One sample (streaming): skip the thread machinery.
            out = np.zeros((1, n_classes))
            self._proba_trees(trees, X_scaled, out, lifetime)
            out /= len(trees)
            return out

        def run(chunk, X, out):
            self._proba_trees(chunk, X, out, lifetime)

        out = self._accumulate(run, X_scaled, n_classes, self._n_jobs())
        out /= len(self._trees)
        return out

    def predict_proba(self, X):
        """Class probabilities, integrating over every extension of each tree to ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Columns follow ``classes_``; rows sum to one.
        """
        return self._proba_scaled(self._validate_X_predict(X))

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        """Most probable class of each sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    # ----------------------------------------------------------------- lifetime paths

    def _path_metrics(self):
        return ("log_loss", "accuracy"), "log_loss", False

    def _path_copy_params(self):
        return {"smoothing": "dirichlet"}

    def _path_targets(self, X, y):
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
        self._check_label_kind(y)
        unseen = np.setdiff1d(np.unique(y), self.classes_)
        if unseen.size:
            raise ValueError(
                f"y contains labels {unseen.tolist()} that the model never saw in training"
            )
        return np.searchsorted(self.classes_, y).astype(np.intp)

    def _path_reader(self, codes):
        counts = []
        for tree in self._trees:
            value = tree.value_array
            inherit_unlabelled(tree, value, (value.sum(axis=1) > 0).astype(np.uint8))
            counts.append(value)
        return DirichletLeafReader(counts, codes, float(self.concentration))

    def _path_units(self, metrics):
        return metrics

    _auto_stratified = True

    def _auto_validation(self, X, y):
        known = np.isin(y, self.classes_)
        return X[known], y[known]

    # ----------------------------------------------------------------- river-style API

    def learn_one(self, x, y, classes=None):
        """Learn from one sample (river-style online API; same model as ``partial_fit``).

        The update is thread-safe and validated before any change: a rejected input leaves the
        model exactly as before, and so does a ``MemoryError`` or ``KeyboardInterrupt`` raised
        inside the update (large updates copy the trees first, small ones keep an undo log of
        the nodes they change; see the user guide, "Threads and failed calls"); reads from
        other threads wait for it to finish.

        Parameters
        ----------
        x : dict or 1-D array-like
            One sample. Dicts are read in the order of ``feature_names_in_`` when the model was
            trained on named features, else in the key order of the first dict seen; a key
            outside those features raises a ``ValueError``.
        y : label
            Its class.
        classes : array-like, default=None
            All the classes the stream may contain, as in :meth:`partial_fit`. Without it a
            new class takes a spare column of the statistics, and when none is left every
            node of every tree is rewritten to twice the width (about ``log2(n_classes)``
            rewrites in all); with it the columns exist from the start.

        Returns
        -------
        self : object
        """
        if classes is not None and self._classes_already(classes):
            classes = None  # the set is fixed already: the one-sample path below applies
        if classes is None and self._learn_one_fast(x, y):
            return self
        self._check_writable()
        if classes is not None:
            _check_one_label(y)
            with online_update(self, x):
                row = self._one_row(x, learn=True)
                if not hasattr(self, "_trees"):
                    self._check_learn_one_lifetime()
                return self._partial_fit(row, np.asarray([y]), classes, allow_empty=True)
        if not self._is_known_class(y):  # a class seen before needs no check (the common case)
            _check_one_label(y)
        with online_update(self, x):
            return self._learn_one(x, y)

    def _learn_one_fast(self, x, y):
        """Learn one sample of a class seen before by a fitted model in its steady state
        (:meth:`_frozen_stream`), without class weights, through
        :meth:`TreeEnsemble.add_scaled_logged`; return False, having changed nothing, when
        the full path must run (first sample, new class, anything to validate further).

        Exactly what :meth:`_learn_one` does in that state: the row of the sample's class is
        the one-hot row of its code, the feature map only counts the point, and nothing else
        of the model changes; the undo logs keep the update atomic.
        """
        if self.class_weight is not None or "classes_" not in self.__dict__:
            return False
        lookup = self._class_codes()
        try:
            code = lookup.get(y)
        except TypeError:  # unhashable: the full path says so
            return False
        if code is None or not self._frozen_stream():
            return False
        row = self._fast_scaled_row(x, clip=False)
        if row is None:
            return False
        self._ensemble.add_scaled_logged(row, self._one_hot_row(code))
        return True

    def _classes_already(self, classes):
        """Whether ``classes`` is the class set this model has already fixed (cheap when the
        same object is passed on every call, as a stream does)."""
        if not self.__dict__.get("_classes_fixed", False):
            return False
        if classes is self.__dict__.get("_classes_argument"):
            return True
        try:
            same = np.array_equal(np.unique(np.asarray(classes)), self.classes_)
        except TypeError:  # labels of mixed types: the full check reports it
            return False
        if same:
            self._classes_argument = classes
        return same

    def _check_learn_one_lifetime(self):
        if isinstance(self.lifetime, str):
            raise ValueError(
                'lifetime="auto" chooses the lifetime on a batch: call fit or partial_fit '
                "before learn_one"
            )

    def _is_known_class(self, y):
        if "classes_" not in self.__dict__ or np.ndim(y) != 0:
            return False
        try:
            return y in self._class_codes()
        except TypeError:  # unhashable: _check_one_label says so
            return False

    def _learn_one(self, x, y):
        row = self._one_row(x, learn=True)  # may remember the key order of a first dict
        first = not hasattr(self, "_trees")
        if first:
            self._validate_params()
            self._validate_lifetime()
            self._check_learn_one_lifetime()
            if isinstance(self.class_weight, str):
                raise ValueError(
                    'class_weight="balanced" is computed on the whole training set: use fit, '
                    "or a dict of class weights"
                )
            self.n_features_in_ = row.shape[1]
            self.classes_ = np.asarray([y])
            self._classes_fixed = False
            self._choose_feature_weights(row, np.asarray([y]), stream=True)
            self._init_trees(row, self._n_trees(), 1)
        else:
            n_new_trees = self._warm_start_check()
        code = self._class_codes().get(y)
        if code is None:
            self._scaler.check(row)
            self._check_label_kind([y])
            self._encode(np.asarray([y]))
            code = self._class_codes()[y]
        if not first and n_new_trees:
            self._grow_new_trees(n_new_trees, self._n_jobs())
        row_stats = self._one_hot_row(code)
        if isinstance(self.class_weight, dict):
            factor = self._class_factor(y)
            if factor == 0.0:
                if first:
                    raise ValueError(
                        f"class_weight[{y!r}] is 0: the first sample learnt cannot be left out"
                    )
                return self  # a row of weight 0 is left out
            row_stats = row_stats * factor
        self._add_points(row, row_stats, 1)
        if not first:
            self._feed_weights_window(row, np.asarray([y]))
        return self

    def predict_proba_one(self, x):
        """Class probabilities of one sample as a dict (empty before any training).

        Parameters
        ----------
        x : dict or 1-D array-like

        Returns
        -------
        dict
            ``{class: probability}``.
        """
        if not hasattr(self, "_trees"):
            return {}
        proba = self._proba_one(x)
        self._class_codes()
        return dict(zip(self._codes_cache[2], proba.tolist(), strict=True))

    def _proba_one(self, x):
        """Class probabilities of one sample (1-D), by the one-row fast path when it applies."""
        row = self._fast_scaled_row(x, clip=True)
        if row is None:
            row = self._scaler.transform(self._one_row(x), clip=True)
        return self._proba_scaled(row)[0]

    def predict_one(self, x):
        """Most probable class of one sample (``None`` before any training).

        Parameters
        ----------
        x : dict or 1-D array-like

        Returns
        -------
        label or None
        """
        if not hasattr(self, "_trees"):
            return None
        proba = self._proba_one(x)
        self._class_codes()
        return self._codes_cache[2][int(proba.argmax())]

    @property
    def n_classes_(self):
        """Number of classes seen (or fixed by ``classes=``)."""
        check_is_fitted(self, "_trees")
        return len(self.classes_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = False
        return tags


class MondrianForestClassifier(TreeSequenceMixin, _BaseMondrianClassifier):
    __doc__ = f"""Online random forest of Mondrian trees (Lakshminarayanan, Roy & Teh, 2014).

    Each tree is a Mondrian process restricted to the training data. Trees can be grown in one
    batch (:meth:`fit`) or online (:meth:`partial_fit`, :meth:`learn_one`) and both give the
    same distribution over forests. Leaves whose points all share one label pause and regrow
    when a point of another label arrives. Class probabilities use a hierarchical normalized
    stable process prior smoothed by interpolated Kneser-Ney, and prediction integrates
    analytically over every way a tree could be extended to the test point.

    Parameters
    ----------
    n_estimators : int, default=100
        Number of trees.
    lifetime : float or "auto", default=np.inf
        Lifetime λ of the Mondrian process, in units of the scaled features. Larger lifetimes
        give finer partitions; with ``inf`` leaves split until pure (or paused). ``"auto"``
        holds out ``validation_fraction`` of the first batch, fits a forest of lifetime
        ``inf`` on the rest, walks its :meth:`lifetime_path` on the held-out part (log-loss of
        independent Dirichlet leaves) and refits on the whole batch at the best lifetime,
        stored in ``lifetime_`` (with the path in ``lifetime_path_``). Later online updates
        keep that lifetime.
    smoothing : {{"hnsp", "dirichlet"}}, default="hnsp"
        Leaf posterior: the hierarchical normalized stable process with interpolated
        Kneser-Ney smoothing, or independent symmetric Dirichlet leaves (the model read by the
        lifetime paths), ``(n_k + concentration / K) / (n + concentration)``.
    discount_factor : float, default=10.0
        The HNSP discount of a node is ``exp(-γ Δ)`` with ``γ = discount_factor * n_features``
        and ``Δ`` the time between the node's cut and its parent's.
    concentration : float, default=1.0
        Concentration of the Dirichlet leaves (``smoothing="dirichlet"`` and lifetime paths).
    validation_fraction : float, default=0.2
        Share of the data held out to choose the lifetime when ``lifetime="auto"``.
    min_samples_split : int or float, default=2
        Leaves holding fewer training points (a total sample weight below it, with weights)
        pause. A float in (0, 1] is a share of the first batch's rows (scikit-learn's rule,
        ``max(2, ceil(min_samples_split * n_samples))``), fixed at the first fit.
    feature_scaling : {{"minmax"}} or None, default="minmax"
        The Mondrian process is not scale invariant. ``"minmax"`` divides each feature by its
        observed range, frozen the first time the range is positive, so that rescaling a
        feature does not change the model and online learning stays exact. ``None`` uses the
        features as given.
{FOREST_FEATURE_WEIGHTS_DOC}    branch_off_counts : {{"node", "tables"}}, default="node"
        Counts given to the node created when a test point branches off above node ``j``:
        ``"node"`` reuses ``j``'s IKN counts (as the reference implementation), ``"tables"``
        uses the strict IKN counts (``j``'s tables).
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, multiplied into the sample weights (``{{label: weight}}``,
        absent labels weigh 1). ``"balanced"`` weighs class ``k`` by
        ``n_samples / (n_classes * n_k)`` (with weighted counts), in ``fit`` only; a dict also
        applies to ``partial_fit`` and ``learn_one``.
    n_jobs : int, default=None
        Number of threads over trees for training and prediction (the Cython core releases the
        GIL). ``None`` means 1, ``-1`` all cores. Results do not depend on it.
    {WINDOW_DOC}
    random_state : int, RandomState instance or None, default=None
        Seeds the trees' independent random streams.
    verbose : int, default=0
        Verbosity of the threaded training.

    Attributes
    ----------
    estimators_ : list of MondrianTreeClassifier
        The trees (views sharing the forest's stored points).
    lifetime_ : float
        The lifetime of the fitted trees (the parameter, or the one chosen by ``"auto"``).
    feature_weights_ : ndarray of shape (n_features,)
        The weights of the feature map (ones without weights). With a learned map,
        ``feature_weights_info_`` holds the search (method, relevances, power, scores, map).
    classes_ : ndarray of shape (n_classes,)
        Sorted class labels.
    n_classes_ : int
        Number of classes.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of str
        Feature names, when ``X`` had them.
    feature_offset_, feature_scale_ : ndarray of shape (n_features,)
        The min-max map ``(x - offset) / scale`` applied before the trees.
    feature_importances_ : ndarray of shape (n_features,)
        Share of each feature in the decrease of the training log-loss of the Dirichlet leaf
        posteriors at the trees' cuts (see the user guide, "Feature importances").

    Notes
    -----
    The model keeps every training point once per forest (paused leaves regrow from them), so
    memory grows with ``n_samples * n_features``. Training one tree costs
    ``O(n log n * n_features)`` on average; one online point costs ``O(depth * n_features)`` per
    tree, and prediction ``O(depth * (n_features + n_classes))`` per tree and sample.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from mondrian import MondrianForestClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = MondrianForestClassifier(n_estimators=20, random_state=0).fit(X, y)
    >>> clf.predict_proba(X[:1]).shape
    (1, 3)

    Sample weights are counts (2 = the row twice), and the petal features carry the labels:

    >>> weights = [2] * 50 + [1] * 100
    >>> clf = MondrianForestClassifier(n_estimators=20, random_state=0)
    >>> clf.fit(X, y, sample_weight=weights).feature_importances_.argmax() in (2, 3)
    True
    """

    _parameter_constraints = {
        **_BaseMondrianClassifier._parameter_constraints,
        **FOREST_PARAMETER_CONSTRAINTS,
    }

    def __init__(
        self,
        n_estimators=100,
        *,
        lifetime=np.inf,
        smoothing="hnsp",
        discount_factor=10.0,
        concentration=1.0,
        min_samples_split=2,
        feature_scaling="minmax",
        feature_weights="auto",
        branch_off_counts="node",
        validation_fraction=0.2,
        class_weight=None,
        window=None,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.n_estimators = n_estimators
        self.lifetime = lifetime
        self.smoothing = smoothing
        self.discount_factor = discount_factor
        self.concentration = concentration
        self.validation_fraction = validation_fraction
        self.class_weight = class_weight
        self.min_samples_split = min_samples_split
        self.feature_scaling = feature_scaling
        self.feature_weights = feature_weights
        self.branch_off_counts = branch_off_counts
        self.n_jobs = n_jobs
        self.window = window
        self.random_state = random_state
        self.verbose = verbose

    _tree_view_attributes = (
        *_BaseMondrianClassifier._tree_view_attributes, "classes_", "_classes_fixed"
    )


class MondrianTreeClassifier(SingleTreeMixin, _BaseMondrianClassifier):
    __doc__ = f"""A single Mondrian tree classifier; see :class:`MondrianForestClassifier`.

    Parameters
    ----------
    lifetime : float or "auto", default=np.inf
        Lifetime λ of the Mondrian process (scaled feature units), or ``"auto"`` (see the
        forest).
    smoothing : {{"hnsp", "dirichlet"}}, default="hnsp"
        Leaf posterior, as in the forest.
    discount_factor : float, default=10.0
        HNSP discount rate per feature (``γ = discount_factor * n_features``).
    concentration : float, default=1.0
        Concentration of the Dirichlet leaves.
    min_samples_split : int or float, default=2
        Leaves holding fewer training points pause (a float: a share of the first batch, as
        in the forest).
    feature_scaling : {{"minmax"}} or None, default="minmax"
        Min-max feature map, as in the forest.
{FOREST_FEATURE_WEIGHTS_DOC}    branch_off_counts : {{"node", "tables"}}, default="node"
        Counts of the node created when a test point branches off.
    validation_fraction : float, default=0.2
        Share of the data held out by ``lifetime="auto"``.
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, as in the forest.
    {WINDOW_DOC}
    random_state : int, RandomState instance or None, default=None
        Seed of the tree's random stream.

    Attributes
    ----------
    tree_ : MondrianTreeStructure
        Read-only arrays describing the tree (scikit-learn style).
    classes_ : ndarray of shape (n_classes,)
        Sorted class labels.
    n_classes_ : int
        Number of classes.
    n_features_in_ : int
        Number of features seen during fit.
    feature_importances_ : ndarray of shape (n_features,)
        Share of each feature in the decrease of the training log-loss at the cuts.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from mondrian import MondrianTreeClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> tree = MondrianTreeClassifier(random_state=0).fit(X, y)
    >>> tree.predict(X[:2]).tolist(), tree.apply(X[:2]).shape
    ([0, 0], (2,))
    >>> tree.decision_path(X[:2]).shape[1] == tree.tree_.node_count
    True
    """

    def __init__(
        self,
        *,
        lifetime=np.inf,
        smoothing="hnsp",
        discount_factor=10.0,
        concentration=1.0,
        min_samples_split=2,
        feature_scaling="minmax",
        feature_weights="auto",
        branch_off_counts="node",
        validation_fraction=0.2,
        class_weight=None,
        window=None,
        random_state=None,
    ):
        self.lifetime = lifetime
        self.smoothing = smoothing
        self.discount_factor = discount_factor
        self.concentration = concentration
        self.min_samples_split = min_samples_split
        self.feature_scaling = feature_scaling
        self.feature_weights = feature_weights
        self.branch_off_counts = branch_off_counts
        self.validation_fraction = validation_fraction
        self.class_weight = class_weight
        self.window = window
        self.random_state = random_state

    @property
    def tree_(self):
        """Read-only description of the fitted tree (:class:`MondrianTreeStructure`)."""
        check_is_fitted(self, "_trees")
        return MondrianTreeStructure(self._trees[0], self._scaler, owner=self)


MondrianForestClassifier._tree_view_class = MondrianTreeClassifier
# The weight search of a single tree probes a small forest (one tree scores too noisily).
MondrianTreeClassifier._weights_probe_class = MondrianForestClassifier
