"""Label-aware feature weights: the relevance estimators behind ``feature_weights="auto"``.

A Mondrian process of lifetime λ run on features multiplied by ``w_d`` cuts dimension ``d`` at
rate ``λ w_d`` per unit of its min-max-scaled extent (:class:`~mondrian.core.feature_map.
FeatureScaler`). The weights are a fixed map chosen once, so every Mondrian property survives;
this module only chooses them.

The choice (:func:`choose_weights`) has two steps, both on a hold-out split of the first batch:

1. a *relevance method* (a name in :data:`WEIGHT_METHODS`) scores every feature on the fit part
   (non-negative, larger = more relevant);
2. the weights ``w_d ∝ r_d ** p`` (normalised to mean 1, so the total cut rate of the process
   is unchanged) are tried for every power ``p`` in :data:`POWERS` by a small probe model of
   the caller, scored on the validation part; ``p = 0`` is the uniform map, so the search
   keeps uniform weights when relevance does not help.

Methods are pluggable: :func:`register_weight_method` adds one, and the package that owns a
method registers it (the grid registers ``"laplace_ard"`` in :mod:`mondrian.grid.ard`);
``feature_weights="<name>"`` then selects it on any model; ``"auto"`` is :data:`DEFAULT_METHOD`.

**Sample weights** are counts (a row of weight ``k`` stands for ``k`` copies), and the search
reads them as such (:func:`choose_weights` with ``sample_weight``): integer weights split the
batch as its repeated rows would be split (copies of one row may fall on both sides), the
probes are fitted with the fit part's counts and the validation scores are averaged with the
validation part's counts. Methods that take a ``sample_weight`` argument (``extra_trees``,
``permutation``) get the counts; the others (``mutual_info``, ``gp_ard``, registered methods
without that argument) run on a sample of copies drawn from the counts (for integer weights the
rows they would see in the repeated batch, in law). Not exactly equivalent to repeated rows:
``extra_trees`` (the counts give the same trees in law, but scikit-learn's splitter spends its
random stream differently on a node of identical copies than on one weighted row),
``permutation`` (a row's copies stay on one side of its internal split) and the quantile map of
fractional weights (computed on the rows, unweighted). Fractional weights are counts too: the
validation noise of :func:`beats` uses ``sum(weights)`` rows.
"""

import inspect

import numpy as np
from sklearn.utils import check_random_state

from mondrian.core.feature_map import QuantileMap
from mondrian.estimator.holdout import holdout_split

__all__ = [
    "ACCEPT_MARGIN",
    "AUTO_WARM_UP",
    "DEFAULT_METHOD",
    "MIN_SAMPLES",
    "POWERS",
    "WEIGHT_METHODS",
    "beats",
    "choose_weights",
    "SEARCH_ROWS",
    "power_weights",
    "register_weight_method",
    "relevance",
    "resolve_method",
    "search_sample",
    "search_size",
]

# Powers tried on validation (0: uniform weights).
POWERS = (0.0, 0.5, 1.0, 2.0)

# Paired standard errors by which weights (or the quantile map) must beat uniform weights (the
# min-max map) on the validation rows to be kept: a larger margin than the validation noise
# protects sets where relevance weights hurt slightly (usps, satimage in bench_weights).
ACCEPT_MARGIN = 1.0

# The smallest first batch (or stream window) on which the weights are searched; smaller ones
# keep uniform weights.
MIN_SAMPLES = 50

# Rows of the stream window of feature_weights="auto": online models keep uniform weights until
# they have seen this many rows, then choose the weights on them and re-sample their trees.
AUTO_WARM_UP = 256

# Rows the whole weight search reads (relevance, probes, validation and the quantile map):
# a quarter of the batch's rows, at least SEARCH_MIN_ROWS and at most SEARCH_ROWS (all of them
# below SEARCH_MIN_ROWS); the rest of a larger batch is left out by a random subsample, so the
# search costs a fixed price however large the data and the frozen weights then shape the fit
# on every row. Measured (benchmarks/results/defaults.md, 100 trees): on make_classification
# (20 features, 5 classes, 75k training rows) a search on 2000 / 8000 / 16000 rows gave 0.849 /
# 0.856 / 0.858 of accuracy (extra trees 0.861); on usps (7291 rows, 256 features) the search on
# every row cost 2.1 times the label-blind fit (total 3.5 times the extra trees' fit), on 2000
# rows 0.16 times (accuracy 0.931 -> 0.924), on letter 3750 of 15000 rows kept 0.963 (0.969 on
# 8000) at 1.4 instead of 1.7 times the extra trees' fit.
SEARCH_ROWS = 8000
SEARCH_MIN_ROWS = 2000
SEARCH_SHARE = 0.25

# Rows given to the relevance methods at most (a random subsample beyond).
MAX_ROWS = {"extra_trees": 10000, "permutation": 5000, "mutual_info": 3000, "gp_ard": 300}


# Largest number of copies the searches expand integer sample weights into (one index per copy);
# beyond it the counts are drawn with replacement in proportion to the weights.
MAX_COPIES = 10_000_000


def _integer_counts(sample_weight):
    """The weights as int64 counts when they are integers of a manageable total, else None."""
    w = np.asarray(sample_weight, dtype=np.float64)
    if np.array_equal(w, np.round(w)) and w.sum() <= MAX_COPIES:
        return w.astype(np.int64)
    return None


def draw_copies(sample_weight, size, rng):
    """Counts per row of ``size`` copies drawn from the weighted rows.

    Integer weights: ``size`` of their ``sum(weights)`` copies drawn without replacement (the
    copies a subsample of the repeated rows would hold); other weights: ``size`` draws with
    replacement in proportion to the weights.
    """
    counts = _integer_counts(sample_weight)
    n = len(sample_weight)
    if counts is not None:
        size = min(int(size), int(counts.sum()))
        picked = rng.choice(np.repeat(np.arange(n), counts), size, replace=False)
    else:
        p = np.asarray(sample_weight, dtype=np.float64)
        picked = rng.choice(n, int(size), replace=True, p=p / p.sum())
    return np.bincount(picked, minlength=n)


def search_size(n_rows):
    """Rows the weight search reads out of a batch of ``n_rows`` (counted with their weights):
    ``SEARCH_SHARE`` of them, clipped to ``[SEARCH_MIN_ROWS, SEARCH_ROWS]``, and all of them
    below ``SEARCH_MIN_ROWS``."""
    share = int(np.ceil(SEARCH_SHARE * n_rows))
    return int(min(n_rows, max(SEARCH_MIN_ROWS, min(SEARCH_ROWS, share))))


def search_sample(X, y, sample_weight, random_state, limit=None):
    """The rows the weight search reads: all of them up to ``limit`` rows (default
    :func:`search_size` of the batch), counted with their weights, else a random subsample of
    ``limit`` rows (weighted rows: ``limit`` copies drawn from their counts, :func:`draw_copies`,
    kept as rows with their drawn counts).

    Returns ``X, y, sample_weight, random_state``: unchanged when nothing is dropped (the search
    is then the search of the whole batch, bit for bit); otherwise the subsample and the
    ``RandomState`` that drew it, which the search goes on drawing from (deterministic under an
    integer ``random_state``, and independent of ``n_jobs``).
    """
    n_rows = len(y) if sample_weight is None else float(np.sum(sample_weight))
    limit = search_size(n_rows) if limit is None else int(limit)
    if n_rows <= limit:
        return X, y, sample_weight, random_state
    rng = check_random_state(random_state)
    if sample_weight is None:
        keep = np.sort(rng.choice(len(y), limit, replace=False))
        return X[keep], np.asarray(y)[keep], None, rng
    counts = draw_copies(sample_weight, limit, rng)
    keep = np.flatnonzero(counts)
    return X[keep], np.asarray(y)[keep], counts[keep].astype(np.float64), rng


def _takes_weights(function):
    try:
        return "sample_weight" in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def _subsample(U, y, method, rng, sample_weight=None):
    """At most ``MAX_ROWS[method]`` rows (copies, with weights), and the weights to pass on
    (None for a method that does not take them: it gets copies repeated as rows)."""
    limit = MAX_ROWS.get(method, 10000)
    if sample_weight is None:
        if len(y) <= limit:
            return U, y, None
        keep = rng.choice(len(y), limit, replace=False)
        return U[keep], y[keep], None
    native = _takes_weights(WEIGHT_METHODS[method])
    counts = _integer_counts(sample_weight)
    total = counts.sum() if counts is not None else len(y)
    if native and len(y) <= limit:
        return U, y, np.asarray(sample_weight, dtype=np.float64)
    if counts is not None and total <= limit:
        picked = counts  # every copy
    else:
        picked = draw_copies(sample_weight, min(total, limit), rng)
    keep = np.flatnonzero(picked)
    if native:
        return U[keep], y[keep], picked[keep].astype(np.float64)
    rows = np.repeat(keep, picked[keep])
    return U[rows], y[rows], None


def _leaf_rule(sample_weight):
    """Leaves of at least two points: two rows, or a weight of 2 with counts (a row of
    weight ``k`` is ``k`` points)."""
    if sample_weight is None:
        return {"min_samples_leaf": 2}
    return {"min_weight_fraction_leaf": min(0.5, 2.0 / np.sum(sample_weight))}


def _extra_trees(U, y, classification, rng, sample_weight=None):
    """Impurity importances of 50 extremely randomised trees (cost: about a third of a
    100-tree random forest)."""
    from sklearn.ensemble import ExtraTreesClassifier, ExtraTreesRegressor

    cls = ExtraTreesClassifier if classification else ExtraTreesRegressor
    model = cls(n_estimators=50, random_state=rng.randint(2**31 - 1), **_leaf_rule(sample_weight))
    return model.fit(U, y, sample_weight=sample_weight).feature_importances_


def _permutation(U, y, classification, rng, sample_weight=None):
    """Permutation importances (3 repeats) of 50 extremely randomised trees on a quarter held
    out of the rows (cost: about one extra-trees fit plus 3 * n_features predictions). With
    counts, the trees are fitted and the importances scored with them."""
    from sklearn.ensemble import ExtraTreesClassifier, ExtraTreesRegressor
    from sklearn.inspection import permutation_importance
    from sklearn.model_selection import train_test_split

    cls = ExtraTreesClassifier if classification else ExtraTreesRegressor
    seed = rng.randint(2**31 - 1)
    w = np.ones(len(y)) if sample_weight is None else sample_weight
    U_fit, U_val, y_fit, y_val, w_fit, w_val = train_test_split(U, y, w, test_size=0.25,
                                                                random_state=seed)
    if sample_weight is None:
        w_fit = w_val = None
    model = cls(n_estimators=50, random_state=seed, **_leaf_rule(w_fit))
    model.fit(U_fit, y_fit, sample_weight=w_fit)
    result = permutation_importance(model, U_val, y_val, n_repeats=3, random_state=seed,
                                    sample_weight=w_val)
    return np.maximum(result.importances_mean, 0.0)


def _mutual_info(U, y, classification, rng):
    """Mutual information of each feature with the target (k-nearest-neighbour estimate on
    at most 3000 rows; blind to interactions)."""
    from sklearn.feature_selection import mutual_info_classif, mutual_info_regression

    function = mutual_info_classif if classification else mutual_info_regression
    return function(U, y, random_state=rng.randint(2**31 - 1))


def _gp_ard(U, y, classification, rng):
    """Inverse ARD length-scales of a Gaussian process with an exponential (Matérn 1/2)
    kernel fitted on at most 300 rows (classes: regression on the one-hot labels)."""
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

    target = y
    if classification:
        target = (y[:, None] == np.unique(y)[None, :]).astype(np.float64)
    else:
        target = (y - y.mean()) / (y.std() or 1.0)
    kernel = ConstantKernel() * Matern(length_scale=np.ones(U.shape[1]), nu=0.5,
                                       length_scale_bounds=(1e-2, 1e4)) + WhiteKernel()
    model = GaussianProcessRegressor(kernel, random_state=rng.randint(2**31 - 1))
    model.fit(U, target)
    return 1.0 / np.asarray(model.kernel_.k1.k2.length_scale, dtype=np.float64)



# name -> function(U, y, classification, rng) returning non-negative relevances.
WEIGHT_METHODS = {
    "extra_trees": _extra_trees,
    "permutation": _permutation,
    "mutual_info": _mutual_info,
    "gp_ard": _gp_ard,
}

# What feature_weights="auto" uses (chosen from benchmarks/results/weights.md).
DEFAULT_METHOD = "extra_trees"


def register_weight_method(name, function):
    """Make ``feature_weights=name`` available on every model.

    Parameters
    ----------
    name : str
        New method name (not ``"auto"``).
    function : callable
        ``function(U, y, classification, rng)`` with ``U`` the min-max-scaled inputs (ndarray
        of shape (n, n_features)), ``y`` the targets (class codes when ``classification``),
        ``rng`` a ``RandomState``; returns ``n_features`` non-negative relevances. With a
        ``sample_weight`` keyword argument it receives the rows' counts (None when the batch
        is unweighted); without one, a weighted batch reaches it as a sample of copies.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian.estimator.relevance import WEIGHT_METHODS, register_weight_method
    >>> register_weight_method("variance", lambda U, y, c, rng: U.var(axis=0))
    >>> "variance" in WEIGHT_METHODS
    True
    >>> del WEIGHT_METHODS["variance"]
    """
    if not isinstance(name, str) or name == "auto":
        raise ValueError(f"a weight method needs a string name other than 'auto', got {name!r}")
    if not callable(function):
        raise TypeError("function must be callable")
    WEIGHT_METHODS[name] = function


def resolve_method(feature_weights):
    """The relevance method named by a ``feature_weights`` string (ValueError if unknown)."""
    name = DEFAULT_METHOD if feature_weights == "auto" else feature_weights
    if name not in WEIGHT_METHODS:
        raise ValueError(
            f"feature_weights={feature_weights!r} is not a known weight method; use None, an "
            f"array of weights, 'auto' or one of {sorted(WEIGHT_METHODS)}"
        )
    return name


def minmax(X, reference=None):
    """``X`` min-max scaled by the range of ``reference`` (default ``X``); constant: 0."""
    reference = X if reference is None else reference
    low = reference.min(axis=0)
    span = reference.max(axis=0) - low
    return (X - low) / np.where(span > 0, span, 1.0)


def relevance(method, X, y, classification, random_state=None, sample_weight=None):
    """Non-negative relevance of every feature of ``X`` (original units) for ``y``; positive
    ``sample_weight`` are counts (see the module notes)."""
    rng = check_random_state(random_state)
    U, y, w = _subsample(minmax(X), np.asarray(y), method, rng, sample_weight)
    function = WEIGHT_METHODS[method]
    if w is None:
        r = function(U, y, classification, rng)
    else:
        r = function(U, y, classification, rng, sample_weight=w)
    r = np.asarray(r, dtype=np.float64)
    if r.shape != (X.shape[1],):
        raise ValueError(f"weight method {method!r} returned shape {r.shape}, expected "
                         f"({X.shape[1]},)")
    r = np.where(np.isfinite(r), np.maximum(r, 0.0), 0.0)
    # Features that never vary carry no information (their scaled values are all 0 anyway).
    r[np.ptp(X, axis=0) == 0] = 0.0
    return r


def power_weights(r, power):
    """Weights ``∝ r ** power`` with mean 1 (``power = 0`` or no relevance at all: ones)."""
    r = np.asarray(r, dtype=np.float64)
    if power == 0 or not np.any(r > 0):
        return np.ones_like(r)
    w = np.where(r > 0, r, 0.0) ** power
    return w * (len(w) / w.sum())


def beats(challenger, incumbent, margin=None, sample_weight=None):
    """Whether per-row validation scores ``challenger`` beat ``incumbent`` (larger is better)
    by more than the noise: the mean paired difference must exceed ``margin`` standard
    errors of it (:data:`ACCEPT_MARGIN` by default). One score each (no rows): a plain
    comparison. ``sample_weight`` (counts of the rows) gives the mean and the standard error
    of the repeated rows: ``sum(weights)`` of them."""
    margin = ACCEPT_MARGIN if margin is None else margin
    d = np.asarray(challenger, dtype=np.float64) - np.asarray(incumbent, dtype=np.float64)
    if sample_weight is None or d.size < 2:
        if d.size < 2:
            return bool(d.mean() > 0)
        return bool(d.mean() > margin * d.std(ddof=1) / np.sqrt(d.size))
    w = np.asarray(sample_weight, dtype=np.float64)
    n = w.sum()
    mean = np.average(d, weights=w)
    if not n > 1:
        return bool(mean > 0)
    variance = np.sum(w * (d - mean) ** 2) / (n - 1)
    return bool(mean > margin * np.sqrt(variance / n))


def _mean(scores, sample_weight):
    return float(scores.mean() if sample_weight is None or scores.size < 2
                 else np.average(scores, weights=sample_weight))


def _rows(score, weights, X_fit, y_fit, X_val, y_val, w_fit=None):
    """The probe's validation scores as a float vector (one per row, or a single score);
    ``w_fit`` (the fit part's counts) is passed on as ``sample_weight`` when given."""
    if w_fit is None:
        out = score(weights, X_fit, y_fit, X_val, y_val)
    else:
        out = score(weights, X_fit, y_fit, X_val, y_val, sample_weight=w_fit)
    return np.atleast_1d(np.asarray(out, dtype=np.float64))


def _weighted_split(X, y, sample_weight, fraction, rng, stratify):
    """The hold-out split of weighted rows, as counts: integer weights split their copies (as
    the repeated rows would be split; copies of a row may land on both sides), other weights
    split the rows. Returns ``X_fit, X_val, y_fit, y_val, w_fit, w_val``."""

    counts = _integer_counts(sample_weight)
    if counts is None:
        return _row_split(X, y, sample_weight, fraction, rng, stratify)
    copies = np.repeat(np.arange(len(y)), counts)
    fit, val, _, _ = holdout_split(copies, y[copies], fraction, rng, stratify=stratify,
                                   min_fit=2)
    out = []
    for part in (fit, val):
        _, first = np.unique(part, return_index=True)
        rows = part[np.sort(first)]  # in the order the split put their first copies
        out.append((rows, np.bincount(part, minlength=len(y))[rows].astype(np.float64)))
    (fit_rows, w_fit), (val_rows, w_val) = out
    return X[fit_rows], X[val_rows], y[fit_rows], y[val_rows], w_fit, w_val


def _row_split(X, y, sample_weight, fraction, rng, stratify):
    """The rows split as without weights, each keeping its weight."""

    index = np.arange(len(y))
    fit, val, y_fit, y_val = holdout_split(index, y, fraction, rng, stratify=stratify,
                                           min_fit=2)
    w = np.asarray(sample_weight, dtype=np.float64)
    return X[fit], X[val], y_fit, y_val, w[fit], w[val]


def _quantile_sample(X, sample_weight):
    """The rows a quantile map of weighted rows is computed on: integer weights repeat them."""
    if sample_weight is None:
        return X
    counts = _integer_counts(sample_weight)
    return X if counts is None else np.repeat(X, counts, axis=0)


def _refine(weights, current, n_dims, rows_of, steps, w_val=None):
    """Greedy doubling/halving of the ``n_dims`` largest weights (see :func:`choose_weights`)."""
    for d in np.argsort(-weights, kind="stable")[:n_dims]:
        for factor in (2.0, 0.5):
            trial = weights.copy()
            trial[d] *= factor
            trial *= len(trial) / trial.sum()
            s = rows_of(trial)
            if _mean(s, w_val) > _mean(current, w_val):
                weights, current = trial, s
                steps.append((int(d), factor))
                break
        else:
            break  # neither step helped on the most important remaining dimension: stop
    return weights, current


def choose_weights(X, y, classification, score, method, random_state=None,
                   validation_fraction=0.2, powers=POWERS, quantile=True, margin=None,
                   refine=0, sample_weight=None, joint_map=False, simplest=False):
    """Relevance on a fit part, power on a validation part.

    Parameters
    ----------
    X : ndarray of shape (n, n_features)
        First batch, original units.
    y : ndarray of shape (n,)
        Its targets (class labels or numbers).
    classification : bool
    score : callable
        ``score(weights, X_fit, y_fit, X_val, y_val)``: validation scores of a probe model
        fitted with the fixed ``weights``, one per validation row (larger is better; a
        single number is accepted too).
    method : str or sequence of str
        Name in :data:`WEIGHT_METHODS`, or several: the non-zero powers of every method's
        relevances compete on the same validation rows (uniform weights once).
    random_state : int, RandomState instance or None
    validation_fraction : float
    powers : sequence of float

    quantile : bool, default=True
        Also try, at the best power, the per-feature quantile map (:class:`~mondrian.core.
        feature_map.QuantileMap` of the fit part) in front of the min-max map; it is kept when
        its probe scores better (by the rule of :func:`beats`).
    margin : float or None
        Standard errors by which a challenger must beat the incumbent on the paired
        validation rows (:func:`beats`): a non-uniform power beats uniform weights, the
        quantile map beats the min-max map. None: :data:`ACCEPT_MARGIN`.
    refine : int, default=0
        When a non-uniform power won: greedy steps on the ``refine`` largest weights, one at a
        time, largest first: the weight doubled, else halved (weights renormalised to mean
        1), each kept when its probe's mean validation score is better; the refinement stops
        at the first dimension where neither step helps (at most ``2 * refine`` probes). A
        cheap version of the doubling/halving search of issue 12 (about 20 probes there).
    sample_weight : ndarray of shape (n,), default=None
        Positive counts of the rows (see the module notes): they shape the split, the
        relevance, the probes (``score`` then receives ``sample_weight=`` the fit part's
        counts) and the averages of the validation scores. With integer weights the search
        follows the one on the repeated rows, in law.
    joint_map : bool, default=False
        With ``quantile``: every power is probed under both maps (the min-max map, and the
        quantile map of the fit part in front of it) and the best pair is chosen at once;
        by default the power is chosen under the min-max map and the quantile map is then
        tried at that power only (powers chosen under min-max were too large for the quantile
        map on concrete: 1.29 -> 1.10 of RF's RMSE with the joint choice). Twice the probes.
    simplest : bool, default=False
        After the best candidate: take the simplest one (smallest power, then the min-max
        map, then the first method) whose paired validation scores the best one does not
        beat (:func:`beats`), a one-standard-error rule against the noise of small validation
        parts that prefers the milder map (yacht: p = 1 over 2).

    Returns
    -------
    weights : ndarray of shape (n_features,)
    knots : QuantileMap or None
        The quantile map of the whole batch when it won, else None.
    info : dict
        ``method`` (the chosen one), ``relevance`` (its relevances), ``power``, ``powers``,
        ``scores`` (one per power; with several methods or ``joint_map``, one per
        ``candidates`` entry, a ``(map, method, power)`` triple), ``map`` ("minmax" or
        "quantile"), ``quantile_score`` and
        ``steps`` (the refinement's accepted ``(dimension, factor)`` pairs).
    """

    rng = check_random_state(random_state)
    if sample_weight is None:
        X_fit, X_val, y_fit, y_val = holdout_split(X, y, validation_fraction, rng,
                                                   stratify=classification, min_fit=2)
        w_fit = w_val = None
    else:
        X_fit, X_val, y_fit, y_val, w_fit, w_val = _weighted_split(
            X, np.asarray(y), sample_weight, validation_fraction, rng, classification)
    codes = np.unique(y_fit, return_inverse=True)[1] if classification else y_fit
    names = (method,) if isinstance(method, str) else tuple(method)
    rel = {name: relevance(name, X_fit, codes, classification, rng, w_fit) for name in names}

    # Candidates (map, method, power): every power of the first method's relevances, then the
    # non-zero powers of the other methods' (p = 0, uniform weights, is one map for all); under
    # the min-max map, and with joint_map under the quantile map of the fit part too.
    maps = {"minmax": (X_fit, X_val)}
    if quantile and joint_map:
        fit_map = QuantileMap(_quantile_sample(X_fit, w_fit))
        maps["quantile"] = (fit_map.forward(X_fit), fit_map.forward(X_val))
    candidates = []
    for kind in maps:
        candidates += [(kind, names[0], p) for p in powers]
        candidates += [(kind, name, p) for name in names[1:] for p in powers if p != 0]

    def rows_of(weights, X_fit=X_fit, X_val=X_val):
        return _rows(score, weights, X_fit, y_fit, X_val, y_val, w_fit)

    rows = [rows_of(power_weights(rel[name], p), *maps[kind]) for kind, name, p in candidates]
    scores = np.array([_mean(s, w_val) for s in rows])
    best = int(np.argmax(scores))  # ties keep the first (min-max, smaller power, first method)
    # Uniform weights under the min-max map stay unless the best candidate beats them by more
    # than the validation noise.
    if 0.0 in powers:
        uniform = candidates.index(("minmax", names[0], 0.0))
        if best != uniform and not beats(rows[best], rows[uniform], margin, w_val):
            best = uniform
    if simplest:
        # The simplest candidate that the best does not beat by more than the noise: the
        # smallest power, then the min-max map, then the first method.
        order = sorted(range(len(candidates)),
                       key=lambda i: (candidates[i][2], candidates[i][0] != "minmax",
                                      names.index(candidates[i][1])))
        for i in order:
            if i == best or not beats(rows[best], rows[i], margin, w_val):
                best = i
                break
    kind, name, power = candidates[best]
    weights = power_weights(rel[name], power)
    current = rows[best]
    info = {"method": name, "relevance": rel[name], "power": power, "powers": tuple(powers),
            "scores": scores, "map": kind, "quantile_score": None, "steps": []}
    if len(candidates) > len(powers):
        info["candidates"] = candidates
    if refine and power != 0:
        weights, current = _refine(weights, current, refine,
                                   lambda w: rows_of(w, *maps[kind]), info["steps"], w_val)
    knots = None
    if "quantile" in maps:
        info["quantile_score"] = float(max(scores[i] for i, c in enumerate(candidates)
                                           if c[0] == "quantile"))
        if kind == "quantile":
            knots = QuantileMap(_quantile_sample(X, sample_weight))
    elif quantile:
        fit_map = QuantileMap(_quantile_sample(X_fit, w_fit))
        s = rows_of(weights, fit_map.forward(X_fit), fit_map.forward(X_val))
        info["quantile_score"] = _mean(s, w_val)
        if beats(s, current, margin, w_val):
            info["map"] = "quantile"
            knots = QuantileMap(_quantile_sample(X, sample_weight))
    return weights, knots, info
