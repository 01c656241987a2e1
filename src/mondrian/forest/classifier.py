"""Mondrian forest classifier (Lakshminarayanan, Roy & Teh, 2014) and its single-tree form."""

import numbers

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from mondrian._docstrings import FOREST_FEATURE_WEIGHTS, WINDOW, fill_doc
from mondrian.core.feature_map import MAX_SCALED
from mondrian.core.state_checks import refuse
from mondrian.estimator.atomic import online_update, unchanged_on_error
from mondrian.estimator.conventions import ConventionsMixin, TreeSequenceMixin
from mondrian.estimator.ensemble import BaseMondrianEnsemble
from mondrian.estimator.inputs import drop_zero_weights
from mondrian.estimator.params import FOREST_PARAMETER_CONSTRAINTS, WINDOW_CONSTRAINT
from mondrian.estimator.state_checks import check_classes
from mondrian.estimator.structure import MondrianTreeStructure
from mondrian.estimator.tree_mixins import FeatureImportanceMixin, PruneMixin, SingleTreeMixin
from mondrian.forest._dirichlet import predict_proba_dirichlet_trees
from mondrian.forest._hnsp import predict_proba_trees
from mondrian.forest._hnsp_one import predict_proba_row
from mondrian.forest._ingest import IngestMixin
from mondrian.forest._labels import (
    ClassLabelsMixin,
    _check_one_label,
    _or_none,
    _refuse_unseen,
    _reject_mixed_labels,
    _search_counts,
)
from mondrian.forest._node_cache import predict_cache
from mondrian.forest._path_readers import DirichletLeafReader, inherit_unlabelled
from mondrian.forest.forgetting import ClassifierForgetMixin
from mondrian.forest.lifetime_path import LifetimePathMixin

__all__ = ["MondrianForestClassifier", "MondrianTreeClassifier"]


class _BaseMondrianClassifier(
    ConventionsMixin, ClassifierMixin, LifetimePathMixin, PruneMixin, FeatureImportanceMixin,
    ClassifierForgetMixin, ClassLabelsMixin, IngestMixin, BaseMondrianEnsemble
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
        "window": WINDOW_CONSTRAINT,
    }

    _pause_pure = True
    _count_columns = -1  # min_samples_split counts the summed (weighted) class counts
    _lean_values = True  # class counts: rebuilt rows have the bits of stored ones
    _classification = True

    def _after_prune(self):
        self.__dict__.pop("_codes_cache", None)

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

    def _node_losses(self, value):
        # Training log-loss of each node's Dirichlet leaf posterior (feature_importances_).
        n_classes = value.shape[1]
        a = float(self.concentration)
        mean = (value + a / n_classes) / (value.sum(axis=1, keepdims=True) + a)
        return -np.sum(value * np.log(mean), axis=1)

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_codes_cache", None)  # a cache, rebuilt on demand
        state.pop("_classes_argument", None)  # likewise (see _classes_already)
        return state

    # ----------------------------------------------------------------- training

    def _check_raw_targets(self, y):
        _reject_mixed_labels(y)

    def _check_targets(self, y):
        check_classification_targets(y)

    @staticmethod
    def _fast_targets(y, n_rows):
        """Whether ``y`` is a 1-D integer ndarray of ``n_rows`` labels: ``validate_data`` and
        ``check_classification_targets`` accept it unchanged, and it mixes no strings."""
        return (type(y) is np.ndarray and y.ndim == 1 and y.dtype.kind in "iu"
                and y.shape[0] == n_rows)

    def _check_stream_start(self):
        if isinstance(self.class_weight, str):
            raise ValueError(
                'class_weight="balanced" is computed on the whole training set: use fit, '
                "or a dict of class weights"
            )

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
            X, y = self._validated(X, y, first=True)
            weights = self._sample_weights(sample_weight, X, y, online=False)
            counts = _search_counts(sample_weight, X, weights)
            X, y, counts, weights = drop_zero_weights(weights, X, y, counts)
            return self._learn(X, y, True, weights, _or_none(counts, sample_weight),
                               stream=False)

    @fill_doc
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Extend the forest with new training points (online Mondrian, sections 2-3).

        The forest after any sequence of ``partial_fit`` calls has the same law as a forest
        fitted on all the points at once.

        {ONLINE_UPDATE}

        {ONLINE_PARAMETER_CHANGES}

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
                and self._fast_batch(X, y)):
            return self
        with online_update(self, X):
            return self._partial_fit(X, y, classes, sample_weight)

    def _partial_fit(self, X, y, classes, sample_weight=None, allow_empty=False):
        """``allow_empty``: rows of class weight 0 only may leave nothing to learn (then only
        ``classes`` is applied), as ``learn_one`` skips such a row; a first call refuses."""
        X, y, first = self._prepare_batch(X, y)
        weights = self._sample_weights(sample_weight, X, y, online=True,
                                       allow_empty=allow_empty and not first)
        if classes is not None:
            _reject_mixed_labels(classes)
            classes = np.unique(np.asarray(classes))
            if allow_empty and not first and weights is not None and not np.any(weights > 0):
                # The labels left out are still checked against `classes`.
                _refuse_unseen(y, classes, "`classes`")
        counts = _search_counts(sample_weight, X, weights)
        X, y, counts, weights = drop_zero_weights(weights, X, y, counts)
        n_new_trees = 0
        if first:
            self._validate_lifetime()
            # Validate every label before any state is created.
            _refuse_unseen(y, classes if classes is not None else np.unique(y), "`classes`")
        else:
            # Parameter changes since fit are refused before anything changes.
            n_new_trees = self._warm_start_check()
            self._scaler.check(X)  # may reject X: before any class is added
            self._check_label_kind(y)
            self._apply_classes(y, classes)
        return self._learn(X, y, first, weights, _or_none(counts, sample_weight),
                           classes=classes, n_new_trees=n_new_trees)

    def _start(self, X, y, weights, counts, classes, stream):
        """The start step (first call of any route): the feature map, the lifetime, the
        classes (``classes``, else those of ``y``) and the empty trees."""
        self._validate_lifetime()
        start = classes if classes is not None else np.unique(y)
        self._choose_feature_weights(X, y, stream=stream, sample_weight=counts)
        lifetime = self._fit_lifetime(X, y, weights)
        self.classes_ = start
        self._classes_fixed = classes is not None
        self._init_trees(X, self._n_trees(), len(start), lifetime)

    def _learn(self, X, y, first, weights=None, counts=None, classes=None, n_new_trees=0,
               stream=True, n_jobs=None):
        """The route after the prepare step: start on the first call, encode the labels
        (adding new classes), add the points (rows of positive ``weights``, None: 1 each;
        ``counts``: the sample weights alone, for the weight search)."""
        if first:
            self._start(X, y, weights, counts, classes, stream)
        codes = self._encode(y)
        self._grow_new_trees(n_new_trees, self._n_jobs())
        if weights is not None and len(weights) == 1 and weights[0] == 0.0:
            return self  # learn_one of a row of class weight 0: its class only
        self._add_points(X, self._rows(codes, weights), n_jobs or self._n_jobs())
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
                                self.branch_off_counts == "tables", lifetime,
                                cache=predict_cache(self) if X.shape[0] > 1 else None,
                                forest_trees=len(self._trees))

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

    @fill_doc
    def learn_one(self, x, y, classes=None):
        """Learn from one sample (river-style online API; same model as ``partial_fit``).

        {ONLINE_UPDATE}

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
        if classes is None and self._fast_one(x, y):
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
            row, first, n_new_trees = self._prepare_one(x)
            if not first and self._class_codes().get(y) is None:  # a new class
                self._scaler.check(row)
                self._check_label_kind([y])
            weights = None
            if isinstance(self.class_weight, dict):
                weights = np.array([self._class_factor(y)])
                if first and weights[0] == 0.0:
                    raise ValueError(
                        f"class_weight[{y!r}] is 0: the first sample learnt cannot be left out"
                    )
            return self._learn(row, np.asarray([y]), first, weights, n_new_trees=n_new_trees,
                               n_jobs=1)

    def _fast_one(self, x, y):
        """Learn one sample of a class seen before by a fitted model in its steady state
        (:meth:`_frozen_stream`), without class weights, through
        :meth:`TreeEnsemble.add_scaled_logged`; return False, having changed nothing, when
        the full route must run (first sample, new class, anything to validate further).

        Exactly what the route does in that state: the row of the sample's class is the
        one-hot row of its code, the feature map only counts the point, and nothing else of
        the model changes; the undo logs keep the update atomic.
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
        """Class probabilities of one sample (1-D), by the one-row fast paths when they apply:
        one compiled call (:func:`~mondrian.forest._hnsp_one.predict_proba_row`, the bits of
        :meth:`_proba_scaled`) for the HNSP predictive of this class, else the scaled row."""
        cls = type(self)
        if (self.smoothing == "hnsp" and cls._proba_scaled is _PROBA_SCALED
                and cls._proba_trees is _PROBA_TREES):
            values = self._fast_values(x)
            feature_map = None if values is None else self._fast_map()
            if feature_map is not None:
                proba = predict_proba_row(
                    self._trees, values, feature_map.offset, feature_map.scale,
                    feature_map.weights, MAX_SCALED, float(self.discount_factor),
                    self.branch_off_counts == "tables", len(self.classes_),
                )
                if proba is not None:
                    return proba
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


# The one-row fast path of _proba_one computes these methods' result (not an override's).
_PROBA_SCALED = _BaseMondrianClassifier._proba_scaled
_PROBA_TREES = _BaseMondrianClassifier._proba_trees


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
{FOREST_FEATURE_WEIGHTS}    branch_off_counts : {{"node", "tables"}}, default="node"
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
    {WINDOW}
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
{FOREST_FEATURE_WEIGHTS}    branch_off_counts : {{"node", "tables"}}, default="node"
        Counts of the node created when a test point branches off.
    validation_fraction : float, default=0.2
        Share of the data held out by ``lifetime="auto"``.
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, as in the forest.
    {WINDOW}
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
