"""Adapters that make the online Mondrian models river estimators.

``RiverClassifier``, ``RiverRegressor`` and ``RiverAnomalyDetector`` wrap a mondrian model
(any model with ``learn_one`` or ``partial_fit``) in :class:`river.base.Classifier`,
:class:`river.base.Regressor` and :class:`river.base.AnomalyDetector`, so that river's
pipelines (``preprocessing.StandardScaler() | model``), metrics and
``evaluate.progressive_val_score`` take them like any river model.

Conventions (river's, where river has one):

- ``x`` is a ``{feature: value}`` dict. The keys of the first dict learnt from fix the features;
  they are read in sorted order, so the key order of a dict never matters. A Mondrian tree's
  cuts live in that fixed feature space, which cannot grow or shrink. A feature missing later
  raises a ``ValueError`` naming it, or is filled with ``fill_value`` when one is given (``0.0``
  is the running mean after a ``StandardScaler``). A feature never seen before raises a
  ``ValueError`` naming it (``unknown_features="raise"``), or is dropped
  (``unknown_features="ignore"``). With ``fill_value=0.0, unknown_features="ignore"`` the
  adapters pass river's own estimator checks on emerging and disappearing features.
- ``learn_one(x, y, w=1.0)`` takes river's sample weight. A weight counts samples: ``w=0`` leaves
  the model unchanged and an integer ``w=k`` is the same as learning ``x`` ``k`` times (in one
  atomic update). When the wrapped model's ``partial_fit`` accepts ``sample_weight`` any
  non-negative weight is passed on; otherwise a fractional weight raises a ``ValueError``.
- Before anything is learnt, ``predict_one`` returns ``None``, ``predict_proba_one`` an empty
  dict and ``score_one`` 0.0, which river's evaluation skips.
- Each call is atomic like the wrapped model's: a rejected sample leaves adapter and model as
  they were.

The adapter trains a clone of ``model`` (``model`` itself is the unfitted template, as river's
``clone`` expects); the trained estimator is ``adapter.model_``. ``seed`` sets the clone's
``random_state`` (river's checks set ``seed`` to compare runs); without a ``model`` the default
forest has ``random_state=0``, so a default adapter is deterministic. ``window`` sets the
clone's ``window`` in the same way: the model then keeps only the most recent ``window``
samples, exactly (the model learnt on them; docs/forgetting.md), for streams that drift or
must run in bounded memory.

``MondrianClassifier``, ``MondrianRegressor`` and ``MondrianAnomalyDetector`` are the same
adapters with river-style constructors (``n_estimators``, ``lifetime``, ``seed``... directly,
as ``river.forest.AMFClassifier``), deterministic by default (``seed=0``).

A bare ``MondrianForestClassifier`` or ``MondrianForestRegressor`` is a scikit-learn estimator,
not a river one: river's type checks on it (a metric's, a pipeline's) raise a ``TypeError``
that names these adapters.
"""

import functools
import inspect
import math
import numbers

import numpy as np
from sklearn.base import clone

try:
    from river import base as _river_base
except ImportError as exc:  # pragma: no cover - exercised only without river
    raise ImportError(
        "mondrian.river needs the river package (pip install river); the Mondrian models "
        "themselves offer learn_one/predict_one without it"
    ) from exc

# river >= 0.22 exports the anomaly base in river.base; older versions in river.anomaly.base.
_AnomalyDetector = getattr(_river_base, "AnomalyDetector", None)
if _AnomalyDetector is None:  # pragma: no cover - old river
    from river.anomaly.base import AnomalyDetector as _AnomalyDetector

__all__ = ["RiverClassifier", "RiverRegressor", "RiverAnomalyDetector", "MondrianClassifier",
           "MondrianRegressor", "MondrianAnomalyDetector"]


def _adapter_doc_tail(model_type):
    """The parameters and attributes every adapter shares, for its docstring."""
    return f"""\
    fill_value : float, default=None
        Value of a feature missing from ``x``; ``None`` raises a ``ValueError`` naming it.
    unknown_features : {{"raise", "ignore"}}, default="raise"
        What a feature absent from the first sample learnt from does: raise a ``ValueError``
        naming it, or be dropped.
    seed : int or None, default=None
        ``random_state`` of the trained clone; ``None`` keeps the model's own (``0`` for the
        default model).
    window : int or None, default=None
        ``window`` of the trained clone: it keeps only the most recent ``window`` samples
        (forgetting the older ones exactly, see the model's ``window``); ``None`` keeps the
        model's own (every sample for the default model). A model without a ``window``
        parameter raises a ``ValueError``.

    Attributes
    ----------
    model_ : {model_type}
        The trained clone of ``model``.
    feature_names_ : list or None
        The features of the first dict learnt from, sorted.
"""


def _default(name):
    # Imported here: mondrian's estimators need not be loaded to import the module's names.
    import mondrian

    return getattr(mondrian, name)(n_estimators=10, random_state=0)


@functools.lru_cache(maxsize=64)
def _takes_sample_weight(model_class):
    """Whether ``model_class.partial_fit`` takes ``sample_weight`` (cached: ``inspect`` would
    otherwise cost more than the rest of a ``learn_one``)."""
    partial_fit = getattr(model_class, "partial_fit", None)
    return partial_fit is not None and "sample_weight" in inspect.signature(partial_fit).parameters


class _MondrianAdapter:
    """Dict handling, weights and the trained clone shared by the three adapters."""

    _default_model = None
    # Adapters pickled before ``window`` existed load with the class default.
    window = None

    def __init__(self, model=None, fill_value=None, unknown_features="raise", seed=None,
                 window=None):
        self.model = model
        self.fill_value = fill_value
        self.unknown_features = unknown_features
        self.seed = seed
        self.window = window
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)):
            raise ValueError(f"seed must be None or an integer, got {seed!r}")
        if window is not None and (isinstance(window, bool)
                                   or not isinstance(window, numbers.Integral) or window < 1):
            raise ValueError(f"window must be None or an integer >= 1, got {window!r}")
        if unknown_features not in ("raise", "ignore"):
            raise ValueError(
                f'unknown_features must be "raise" or "ignore", got {unknown_features!r}'
            )
        if fill_value is not None and not (
            isinstance(fill_value, numbers.Real) and math.isfinite(fill_value)
        ):
            raise ValueError(f"fill_value must be None or a finite number, got {fill_value!r}")
        template = _default(self._default_model) if model is None else model
        if not (hasattr(template, "learn_one") or hasattr(template, "partial_fit")):
            raise TypeError(
                f"{type(template).__name__} learns neither with learn_one nor with partial_fit"
            )
        if window is not None and "window" not in getattr(template, "get_params", dict)():
            raise ValueError(f"{type(template).__name__} has no window parameter: it cannot "
                             "keep a window of recent samples")
        self.model_ = clone(template)
        if seed is not None:
            self.model_.set_params(random_state=seed)
        if window is not None:
            self.model_.set_params(window=window)
        self.feature_names_ = None
        self._known = frozenset()

    # ----------------------------------------------------------------- inputs

    def _row(self, x):
        """``x`` as a (1, n_features) float array, features in sorted order."""
        if not isinstance(x, dict):
            raise TypeError(f"x must be a dict of features, got {type(x).__name__}")
        names = self.feature_names_
        if names is not None and len(x) == len(names):
            # The usual sample: every feature present, so no key is unknown (as many keys as
            # names). A missing one (KeyError) or a value that is not a number takes the
            # checks below, which fill, drop or raise as usual.
            try:
                return np.array([x[name] for name in names], dtype=np.float64)[None, :], names
            except (KeyError, TypeError, ValueError):
                pass
        if names is None:
            try:
                names = sorted(x)
            except TypeError:  # keys of several types: order them by their text
                names = sorted(x, key=repr)
        elif len(x) != len(names) or any(key not in self._known for key in x):
            unknown = [key for key in x if key not in self._known]
            if unknown and self.unknown_features == "raise":
                raise ValueError(
                    f"x has features {unknown} not seen in the first sample (the model reads "
                    f"{names}); a Mondrian tree cannot grow its feature space (pass "
                    'unknown_features="ignore" to drop them)'
                )
        missing = [name for name in names if name not in x]
        if missing and self.fill_value is None:
            raise ValueError(
                f"features {missing} are missing from x; pass fill_value= to the adapter to "
                "fill missing features with a constant"
            )
        values = [x.get(name, self.fill_value) for name in names]
        try:
            row = np.asarray(values, dtype=np.float64).reshape(1, -1)
        except (TypeError, ValueError):
            raise TypeError("every feature value of x must be a real number") from None
        return row, names

    @staticmethod
    def _count(w, weighted):
        """A river weight as a number of repeats (or, for weighted models, itself)."""
        if isinstance(w, bool) or not isinstance(w, numbers.Real) or not math.isfinite(w) \
                or w < 0:
            raise ValueError(f"w must be a finite non-negative number, got {w!r}")
        if weighted:
            return float(w)
        if w != int(w):
            raise ValueError(
                f"w={w!r}: this model counts weights as repeated samples, so w must be a whole "
                "number (its partial_fit takes no sample_weight)"
            )
        return int(w)

    def _learn(self, x, y, w):
        model = self.model_
        if type(w) is float and w == 1.0 and hasattr(model, "learn_one"):
            row, names = self._row(x)  # the default weight: one sample, learn_one
            model.learn_one(row[0], y)
            if self.feature_names_ is None:
                self.feature_names_, self._known = names, frozenset(names)
            return
        weighted = _takes_sample_weight(type(model))
        count = self._count(w, weighted)
        row, names = self._row(x)
        if count == 0:
            return  # a weight of 0 is the same as leaving the sample out
        targets = None if y is None else [y]
        if weighted and count != 1.0:
            args = (row,) if y is None else (row, targets)
            model.partial_fit(*args, sample_weight=[count])
        elif count == 1 and hasattr(model, "learn_one"):
            model.learn_one(row[0], y)
        else:
            rows = np.repeat(row, int(count), axis=0)
            model.partial_fit(rows) if y is None else model.partial_fit(rows, targets * len(rows))
        # Only a successful update fixes the features (the model's update is atomic).
        if self.feature_names_ is None:
            self.feature_names_, self._known = names, frozenset(names)

    @classmethod
    def _unit_test_params(cls):
        # river's estimator checks: a small forest that accepts emerging and missing features.
        model = _default(cls._default_model).set_params(n_estimators=3, random_state=0)
        yield {"model": model, "fill_value": 0.0, "unknown_features": "ignore"}

    def _fitted(self):
        return self.feature_names_ is not None


class RiverClassifier(_MondrianAdapter, _river_base.Classifier):
    __doc__ = f"""A mondrian classifier as a :class:`river.base.Classifier`.

    Parameters
    ----------
    model : estimator, default=None
        An unfitted mondrian classifier (``MondrianForestClassifier``, ``MondrianTreeClassifier``);
        ``None`` means ``MondrianForestClassifier(n_estimators=10)``. It is cloned, never fitted.
{_adapter_doc_tail("estimator")}
    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from mondrian import MondrianForestClassifier
    >>> from mondrian.river import RiverClassifier
    >>> model = preprocessing.StandardScaler() | RiverClassifier(
    ...     MondrianForestClassifier(n_estimators=5, random_state=0))
    >>> stream = list(datasets.Phishing())[:200]
    >>> metric = evaluate.progressive_val_score(stream, model, metrics.Accuracy())
    >>> metric.get() > 0.7
    True
    """

    _default_model = "MondrianForestClassifier"

    @property
    def _multiclass(self):
        return True

    def learn_one(self, x, y, *, w=1.0):
        """Learn from one sample, with weight ``w`` (a count; see the module's notes).

        Parameters
        ----------
        x : dict
        y : label
        w : float, default=1.0
        """
        self._learn(x, y, w)

    def predict_proba_one(self, x):
        """``{class: probability}`` (empty before any training).

        Parameters
        ----------
        x : dict

        Returns
        -------
        dict
        """
        if not self._fitted():
            return {}
        row, _ = self._row(x)
        if hasattr(self.model_, "predict_proba_one"):
            return self.model_.predict_proba_one(row[0])
        proba = self.model_.predict_proba(row)[0]
        return dict(zip(self.model_.classes_.tolist(), proba.tolist(), strict=True))

    def predict_one(self, x):
        """Most probable class (``None`` before any training).

        Parameters
        ----------
        x : dict
        """
        if not self._fitted():
            return None
        row, _ = self._row(x)
        if hasattr(self.model_, "predict_one"):
            return self.model_.predict_one(row[0])
        return self.model_.predict(row)[0]


class RiverRegressor(_MondrianAdapter, _river_base.Regressor):
    __doc__ = f"""A mondrian regressor as a :class:`river.base.Regressor`.

    Parameters
    ----------
    model : estimator, default=None
        An unfitted mondrian regressor with ``learn_one`` or ``partial_fit``
        (``MondrianForestRegressor``, ``MondrianTreeRegressor``, ``MondrianKernelRidge``);
        ``None`` means ``MondrianForestRegressor(n_estimators=10)``.
{_adapter_doc_tail("estimator")}
    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from mondrian import MondrianForestRegressor
    >>> from mondrian.river import RiverRegressor
    >>> model = preprocessing.StandardScaler() | RiverRegressor(
    ...     MondrianForestRegressor(n_estimators=5, noise_variance=10.0, random_state=0))
    >>> stream = list(datasets.TrumpApproval())[:100]
    >>> metric = evaluate.progressive_val_score(stream, model, metrics.MAE())
    >>> metric.get() < 5
    True
    """

    _default_model = "MondrianForestRegressor"

    def learn_one(self, x, y, *, w=1.0):
        """Learn from one sample, with weight ``w`` (a count; see the module's notes).

        Parameters
        ----------
        x : dict
        y : float
        w : float, default=1.0
        """
        self._learn(x, y, w)

    def predict_one(self, x, *, return_std=False):
        """Predictive mean (and standard deviation, when the model has one).

        Parameters
        ----------
        x : dict
        return_std : bool, default=False
            Also return the predictive standard deviation (forest regressors only).

        Returns
        -------
        float or None, or a pair of them with ``return_std``
        """
        if not self._fitted():
            return (None, None) if return_std else None
        row, _ = self._row(x)
        if hasattr(self.model_, "predict_one"):
            return self.model_.predict_one(row[0], return_std=return_std)
        if return_std:
            raise TypeError(f"{type(self.model_).__name__} has no predictive standard deviation")
        return float(self.model_.predict(row)[0])


class RiverAnomalyDetector(_MondrianAdapter, _AnomalyDetector):
    __doc__ = f"""A Mondrian forest density as a river anomaly detector.

    ``score_one`` is the negative log density of ``x`` under the density learnt so far, so a
    high score is a sample in a region of low density (river's convention).

    Parameters
    ----------
    model : estimator, default=None
        An unfitted ``MondrianForestDensity``; ``None`` means
        ``MondrianForestDensity(n_estimators=10)``.
{_adapter_doc_tail("MondrianForestDensity")}
    Examples
    --------
    >>> from mondrian.river import RiverAnomalyDetector
    >>> detector = RiverAnomalyDetector()
    >>> for k in range(50):
    ...     detector.learn_one({{"a": (k % 10) / 10, "b": (k % 7) / 7}})
    >>> detector.score_one({{"a": 5.0, "b": 5.0}}) > detector.score_one({{"a": 0.5, "b": 0.5}})
    True
    """

    _default_model = "MondrianForestDensity"

    def learn_one(self, x, *, w=1.0):
        """Learn from one sample, with weight ``w`` (a count; see the module's notes).

        Parameters
        ----------
        x : dict
        w : float, default=1.0
        """
        self._learn(x, None, w)

    def score_one(self, x):
        """Negative log density of ``x`` (0.0 before any training).

        Parameters
        ----------
        x : dict

        Returns
        -------
        float
        """
        if not self._fitted():
            return 0.0
        row, _ = self._row(x)
        return -float(self.model_.score_samples(row)[0])


# ----------------------------------------------------------------- river-style constructors

_STYLE_DOC = """\
    fill_value : float, default=None
        Value of a feature missing from ``x``; ``None`` raises a ``ValueError`` naming it.
    unknown_features : {"raise", "ignore"}, default="raise"
        What a feature absent from the first sample learnt from does: raise a ``ValueError``
        naming it, or be dropped.

    Attributes
    ----------
    model_ : estimator
        The trained mondrian model.
    feature_names_ : list or None
        The features of the first dict learnt from, sorted.
"""


def _style_params_doc(defaults, middle=""):
    """The Parameters and Attributes of a river-style constructor (``middle``: its own)."""
    lifetime = "float or \"auto\"" if isinstance(defaults["lifetime"], str) else "float"
    return f"""\
    Parameters
    ----------
    n_estimators : int, default=10
        Number of trees.
    lifetime : {lifetime}, default={defaults["lifetime"]!r}
        Lifetime of the Mondrian process.
{middle}    feature_weights : None, array or "auto", default={defaults["feature_weights"]!r}
        Weights of the features in the cuts.
    seed : int or None, default=0
        Seed of the trees (``None``: a fresh random stream).
    window : int or None, default=None
        Keep only the most recent ``window`` samples: the model is, exactly, the one learnt
        on them (docs/forgetting.md); ``None`` keeps every sample.
{_STYLE_DOC}"""


def _style_example(name, data, metric, check):
    """The Examples of a river-style constructor: a pipeline through a progressive validation."""
    return f"""\
    Examples
    --------
    >>> from river import datasets, evaluate, metrics, preprocessing
    >>> from mondrian.river import {name}
    >>> model = preprocessing.StandardScaler() | {name}(n_estimators=5)
    >>> stream = list(datasets.{data}())[:200]
    >>> evaluate.progressive_val_score(stream, model, metrics.{metric}()).get() {check}
    True
"""


class _RiverStyle:
    """River-style constructor: the model's main parameters directly, ``seed`` for its
    ``random_state`` (subclasses name them in ``_model_params``)."""

    _model_params = ()

    def _build(self, params):
        import mondrian

        params = {name: value for name, value in params.items() if name != "self"}
        for name, value in params.items():
            setattr(self, name, value)
        model = getattr(mondrian, self._default_model)(
            **{name: params[name] for name in self._model_params})
        _MondrianAdapter.__init__(self, model, params["fill_value"], params["unknown_features"],
                                  seed=params["seed"], window=params["window"])
        self.seed = params["seed"]

    @classmethod
    def _unit_test_params(cls):
        yield {"n_estimators": 3, "fill_value": 0.0, "unknown_features": "ignore"}


def _defaults(name):
    """The defaults of a mondrian model's constructor (the river-style ones follow them)."""
    import mondrian

    return {key: p.default for key, p in
            inspect.signature(getattr(mondrian, name)).parameters.items()}


_CLF, _REG, _DEN = (_defaults(name) for name in (
    "MondrianForestClassifier", "MondrianForestRegressor", "MondrianForestDensity"))
_SPLIT_DOC = """\
    min_samples_split : int, default=2
        Leaves holding fewer points pause.
"""
_CLF_PARAMS_DOC = """\
    smoothing : {"hnsp", "dirichlet"}, default="hnsp"
        Leaf posterior.
""" + _SPLIT_DOC
_REG_PARAMS_DOC = _SPLIT_DOC + """\
    noise_variance : float or None, default=None
        Observation noise variance (``None``: chosen by empirical Bayes).
"""


class MondrianClassifier(_RiverStyle, RiverClassifier):
    __doc__ = f"""Online Mondrian forest classifier with a river-style constructor.

    :class:`RiverClassifier` around a :class:`~mondrian.MondrianForestClassifier` built from
    the parameters below (see that class for their meaning).

{_style_params_doc(_CLF, _CLF_PARAMS_DOC)}
{_style_example("MondrianClassifier", "Phishing", "Accuracy", "> 0.7")}    """

    _model_params = ("n_estimators", "lifetime", "smoothing", "min_samples_split",
                     "feature_weights")

    def __init__(self, n_estimators=10, lifetime=_CLF["lifetime"], smoothing=_CLF["smoothing"],
                 min_samples_split=_CLF["min_samples_split"],
                 feature_weights=_CLF["feature_weights"], seed=0, window=None,
                 fill_value=None, unknown_features="raise"):
        self._build(locals())


class MondrianRegressor(_RiverStyle, RiverRegressor):
    __doc__ = f"""Online Mondrian forest regressor with a river-style constructor.

    :class:`RiverRegressor` around a :class:`~mondrian.MondrianForestRegressor` built from the
    parameters below (see that class for their meaning); ``predict_one(x, return_std=True)``
    also gives the predictive standard deviation.

{_style_params_doc(_REG, _REG_PARAMS_DOC)}
{_style_example("MondrianRegressor", "TrumpApproval", "MAE", "< 5")}    """

    _model_params = ("n_estimators", "lifetime", "min_samples_split", "noise_variance",
                     "feature_weights")

    def __init__(self, n_estimators=10, lifetime=_REG["lifetime"],
                 min_samples_split=_REG["min_samples_split"],
                 noise_variance=_REG["noise_variance"],
                 feature_weights=_REG["feature_weights"], seed=0, window=None,
                 fill_value=None, unknown_features="raise"):
        self._build(locals())


class MondrianAnomalyDetector(_RiverStyle, RiverAnomalyDetector):
    __doc__ = f"""Mondrian forest density anomaly detector with a river-style constructor.

    :class:`RiverAnomalyDetector` around a :class:`~mondrian.MondrianForestDensity` built from
    the parameters below (see that class for their meaning).

{_style_params_doc(_DEN)}
    Examples
    --------
    >>> from mondrian.river import MondrianAnomalyDetector
    >>> detector = MondrianAnomalyDetector(n_estimators=5, seed=1)
    >>> points = [{{"u": k / 40, "v": (k * 7 % 40) / 40}} for k in range(40)]
    >>> for x in points:
    ...     detector.learn_one(x)
    >>> detector.score_one({{"u": 3.0, "v": -2.0}}) > max(map(detector.score_one, points))
    True
    """

    _model_params = ("n_estimators", "lifetime", "feature_weights")

    def __init__(self, n_estimators=10, lifetime=_DEN["lifetime"],
                 feature_weights=_DEN["feature_weights"], seed=0, window=None,
                 fill_value=None, unknown_features="raise"):
        self._build(locals())
