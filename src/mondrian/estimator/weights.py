"""The feature weights of an estimator's map: fixed, or chosen from the labels of the first
batch or of the first rows of a stream (:mod:`mondrian.estimator.relevance`)."""

import numpy as np

from mondrian.core.feature_map import check_weights
from mondrian.estimator import relevance
from mondrian.estimator.inputs import weighted_rows
from mondrian.estimator.relevance import MIN_SAMPLES, choose_weights, resolve_method, search_sample

__all__ = ["FeatureWeightsMixin"]

# Whether the classifiers' search also probes the quantile map at the best power (the
# regressors always do, jointly with every power). Off: in every recorded search of the
# classification benchmarks (satimage, usps, dna, letter, pendigits, make_classification 20k,
# 100k and 400k; 34 searches over forest seeds 0-4, benchmarks/results/weights.md and
# defaults.md) the min-max map won, and the probe is a fifth of the search's probes (usps: about
# 0.1 s of CPU, 6% of the extra trees' fit). The forests are unchanged (the probe draws no random
# number), only cheaper.
CLASSIFIER_QUANTILE_PROBE = False


class FeatureWeightsMixin:
    """``feature_weights`` of a :class:`~mondrian.estimator.ensemble.BaseMondrianEnsemble`:
    the search, its probes and the stream window of ``feature_weights="auto"``."""

    def _choose_feature_weights(self, X, y, stream=False, sample_weight=None):
        """Set the weights of the feature map for a first batch ``(X, y)`` (original units).

        ``None``: no weights. An array: checked and used. A method name (``"auto"``): chosen
        by :func:`~mondrian.estimator.relevance.choose_weights` with probes of this model; with
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
            n_rows = weighted_rows(y, sample_weight)
            if stream and n_rows < self._auto_warm_up():
                self._weights_window = (X.copy(), np.asarray(y).copy(),
                                        None if sample_weight is None
                                        else np.asarray(sample_weight, np.float64).copy())
            elif n_rows >= MIN_SAMPLES:
                weights, knots, self.feature_weights_info_ = self._search_weights(
                    X, y, method, quantile=self._quantile_probe(), sample_weight=sample_weight)
        elif fw is not None:
            weights = check_weights(fw, n_features)
        self._map_weights, self._map_knots = weights, knots
        self.feature_weights_ = np.ones(n_features) if weights is None else weights.copy()

    def _quantile_probe(self):
        """Whether the search may put a quantile map in front of the min-max map: not with a
        fixed ``feature_scaling`` range, nor for classes (:data:`CLASSIFIER_QUANTILE_PROBE`)."""
        if isinstance(self.feature_scaling, (tuple, list)):
            return False
        return CLASSIFIER_QUANTILE_PROBE or not self._classification

    @staticmethod
    def _auto_warm_up():
        return relevance.AUTO_WARM_UP  # read at call time (tests may lower it)

    def _search_weights(self, X, y, method, quantile=False, sample_weight=None, **options):
        """:func:`~mondrian.estimator.relevance.choose_weights` on the rows of
        :func:`~mondrian.estimator.relevance.search_sample` (a quarter of the batch, 2000 to 8000
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
        :func:`~mondrian.estimator.relevance.beats`. ``sample_weight``: counts of the fit rows."""
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
        if weighted_rows(y_all, w_all) < self._auto_warm_up():
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
