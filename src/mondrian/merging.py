"""Forests fitted in several places, put together: parts of one forest, and their merge.

Two cases, told apart by the stored points of the parts:

* **Tree-parallel** (every part saw the same data): :func:`forest_parts` splits a forest into
  parts holding trees ``[i, j)`` with the seeds those trees have in the whole forest
  (``numpy.random.SeedSequence`` children, see :func:`~mondrian.core.ensemble.draw_seeds`).
  Fitted anywhere and merged, they give the forest fitted in one process, tree for tree; the
  merged forest keeps learning online with the law of one forest of the total size.
* **Data-parallel** (the parts saw different shards): the merged forest holds every part's
  trees over the concatenated store. Each tree was sampled on its own shard only, so the merged
  model is a mixture of forests on the shards, *not* a forest on all the data; it keeps
  learning online from there (every new point extends every tree).
"""

import copy
import numbers

import numpy as np
from sklearn.base import clone
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from mondrian.estimator.locking import LockedMethodsMixin, read_locked
from mondrian.estimator.params import same_param

__all__ = ["feature_range", "forest_parts", "merge_forests"]

# Parameters that do not shape the fitted model (parts may differ in them).
_FREE_PARAMS = ("n_estimators", "n_jobs", "verbose", "random_state")


def _kinds():
    # Imported here: the estimators import the core.
    from mondrian.density import MondrianForestDensity
    from mondrian.forest import MondrianForestClassifier, MondrianForestRegressor

    return MondrianForestClassifier, MondrianForestRegressor, MondrianForestDensity


def feature_range(X):
    """Per-feature ``(min, max)`` of ``X``: a feature map to fix up front.

    Pass it as ``feature_scaling=feature_range(X)`` to every part so that parts fitted on
    different shards share one feature map and can be merged. For a dask array use
    :func:`mondrian.dask.feature_range` (one distributed pass).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)

    Returns
    -------
    (lower, upper) : tuple of ndarray of shape (n_features,)

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian.merging import feature_range
    >>> feature_range(np.array([[0.0, 5.0], [2.0, 1.0]]))
    (array([0., 1.]), array([2., 5.]))
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"X must be a non-empty 2-D array, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("X contains NaN or infinity")
    return X.min(axis=0), X.max(axis=0)


def forest_parts(estimator, n_parts):
    """Split an (unfitted) forest into ``n_parts`` forests holding consecutive trees.

    Part ``p`` is a copy of ``estimator`` with ``n_estimators`` set to its share and the seeds
    of trees ``[i, j)`` of the whole forest. Fitted on the same data (anywhere) and merged by
    :func:`merge_forests`, the parts give exactly the forest ``estimator.fit`` gives. A
    ``random_state`` that is not an integer is replaced by one integer drawn from it, shared by
    every part. Regressors get at least two trees per part (a single-tree regressor chooses its
    hyperparameters per tree).

    Parameters
    ----------
    estimator : MondrianForestClassifier, MondrianForestRegressor or MondrianForestDensity
    n_parts : int
        Number of parts (fewer if the forest has fewer trees).

    Returns
    -------
    list of estimators

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import MondrianForestClassifier, merge_forests
    >>> from mondrian.merging import forest_parts
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(60, 2)), np.arange(60) % 2
    >>> forest = MondrianForestClassifier(n_estimators=6, random_state=1)
    >>> parts = [part.fit(X, y) for part in forest_parts(forest, 3)]
    >>> merged = merge_forests(parts)
    >>> bool(np.array_equal(merged.predict_proba(X), forest.fit(X, y).predict_proba(X)))
    True
    """
    if not isinstance(estimator, _kinds()):
        raise TypeError("forest_parts splits a MondrianForestClassifier, MondrianForestRegressor "
                        f"or MondrianForestDensity, not {type(estimator).__name__}")
    if not isinstance(n_parts, numbers.Integral) or isinstance(n_parts, bool) or n_parts < 1:
        raise ValueError(f"n_parts must be a positive integer, got {n_parts!r}")
    for name in ("lifetime", "concentration"):
        if getattr(estimator, name, None) == "auto":
            raise ValueError(
                f"{name}='auto' is chosen on the fitted trees, so each part would choose its "
                f"own: fix {name} (e.g. to the {name}_ of a forest fitted on a sample) before "
                "fitting the forest in parts"
            )
    n_trees = int(estimator.n_estimators)
    smallest = 2 if isinstance(estimator, _kinds()[1]) and n_trees > 1 else 1
    n_parts = max(1, min(int(n_parts), n_trees // smallest))
    random_state = estimator.random_state
    if not (isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool)):
        random_state = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    first = estimator._first_tree
    bounds = np.linspace(0, n_trees, n_parts + 1).astype(int)
    parts = []
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        part = clone(estimator)
        part.set_params(n_estimators=int(stop - start), random_state=random_state)
        part._first_tree = int(first + start)
        part._whole_n_trees = n_trees  # what the regressor's debiased combination is chosen for
        parts.append(part)
    return parts


def _check_compatible(parts):
    kinds = _kinds()
    first = parts[0]
    for part in parts:
        if not isinstance(part, kinds):
            raise TypeError(
                "merge_forests merges MondrianForestClassifier, MondrianForestRegressor or "
                f"MondrianForestDensity models, not {type(part).__name__}"
            )
        check_is_fitted(part, "_trees")
        if type(part) is not type(first):
            raise TypeError(f"cannot merge a {type(first).__name__} with a "
                            f"{type(part).__name__}: every part must be the same model type")
    params = first.get_params(deep=False)
    for k, part in enumerate(parts[1:], 1):
        other = part.get_params(deep=False)
        for name, value in params.items():
            if name in _FREE_PARAMS:
                continue
            if not same_param(value, other[name]):
                raise ValueError(f"cannot merge forests with different parameters: {name}="
                                 f"{value!r} in part 0 but {other[name]!r} in part {k}")
        for name in ("n_features_in_", "lifetime_", "concentration_"):
            a, b = getattr(first, name, None), getattr(part, name, None)
            if a != b:
                raise ValueError(
                    f"cannot merge forests with different {name}: {a!r} in part 0 but {b!r} in "
                    f"part {k} (fix the lifetime and concentration instead of choosing them per "
                    "part with 'auto')"
                )
        names = [getattr(p, "feature_names_in_", None) for p in (first, part)]
        if (names[0] is None) != (names[1] is None) or (
                names[0] is not None and not np.array_equal(*names)):
            raise ValueError(f"cannot merge forests fitted on different feature names (part 0 "
                             f"and part {k})")
    seeds = np.concatenate([part._seeds for part in parts])
    if np.unique(seeds).size != seeds.size:
        raise ValueError(
            "the parts share tree seeds (fitted with the same random_state and overlapping "
            "trees), so their trees are copies or correlated: build the parts with "
            "forest_parts, or give them different random_state"
        )


def _map_difference(a, b):
    """A sentence naming the first difference between two feature maps, or None."""
    if a.enabled != b.enabled:
        return "feature scaling is on in one part and off in the other"
    for name in ("warm_up", "offset", "scale", "frozen", "weights"):
        x, y = getattr(a, name), getattr(b, name)
        if (x is None) != (y is None) or (x is not None and not np.array_equal(x, y)):
            where = ""
            if x is not None and y is not None and np.ndim(x) == 1 and np.shape(x) == np.shape(y):
                where = f" (features {np.flatnonzero(x != y).tolist()[:10]})"
            return f"feature map {name} differs{where}"
    return None


def _same_points(a, b):
    return (a.n_samples == b.n_samples and np.array_equal(a.X, b.X)
            and np.array_equal(a.rows, b.rows))


def merge_forests(forests):
    """One forest holding the trees of every part; its predictions are their tree-weighted
    average.

    Parts must be fitted models of the same type (``MondrianForestClassifier``,
    ``MondrianForestRegressor`` or ``MondrianForestDensity``) with the same parameters (apart
    from ``n_estimators``, ``n_jobs``, ``verbose`` and ``random_state``), the same feature map
    and distinct tree seeds. The inputs are left unchanged.

    * Parts fitted on the **same data** (tree-parallel, e.g. :func:`forest_parts`): the merged
      forest has exactly the law of one forest of the total size, is that forest tree for tree
      when the parts came from :func:`forest_parts`, and keeps learning online.
    * Parts fitted on **different shards** (data-parallel): the stores are concatenated and
      every tree keeps the points of its shard. Each tree is a Mondrian tree of its own shard,
      so the merged model is the tree-weighted mixture of the shard forests (predictions: the
      tree-weighted average of the parts), not the law of a forest fitted on all the data. It
      needs a feature map fixed up front (``feature_scaling=(lower, upper)``; the density: the
      same domain); online updates then extend every tree with the new points.

    Classifiers: the class sets are united. A class unknown to a part is a zero column of its
    trees' counts, which is exactly what the part would hold had it been told about the class
    (``partial_fit(..., classes=...)``); its probability in that part comes from the prior
    alone. Regressors: the parts must share the target map (same data, or equal first targets
    and ranges) and, when they chose them on held-out data, their hyperparameters; the merged
    forest re-estimates the rest on its own trees. Density: the outside-of-domain counts add up.

    Parameters
    ----------
    forests : sequence of fitted estimators
        At least one.

    Returns
    -------
    estimator
        A new fitted estimator of the parts' type with ``n_estimators`` trees in total.

    Raises
    ------
    TypeError
        Mixed or unsupported model types.
    ValueError
        Naming the first difference that prevents the merge (parameter, feature map, lifetime,
        feature names, target map, shared seeds).

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import MondrianForestClassifier, merge_forests
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(80, 2)), np.arange(80) % 2
    >>> a = MondrianForestClassifier(n_estimators=4, random_state=1).fit(X, y)
    >>> b = MondrianForestClassifier(n_estimators=6, random_state=2).fit(X, y)
    >>> merged = merge_forests([a, b])
    >>> expected = (4 * a.predict_proba(X) + 6 * b.predict_proba(X)) / 10
    >>> bool(np.allclose(merged.predict_proba(X), expected))
    True
    """
    forests = list(forests)
    models = [f for f in forests if isinstance(f, LockedMethodsMixin)]  # others: refused below
    with read_locked(*models):  # every part read whole, none half-updated
        return _merge(forests, copy_parts=True)


def _merge(forests, copy_parts):
    """:func:`merge_forests`; ``copy_parts=False`` lets it change the parts (fresh ones)."""
    parts = list(forests)
    if not parts:
        raise ValueError("merge_forests needs at least one forest")
    _check_compatible(parts)
    classifier, regressor, density = _kinds()
    for k, part in enumerate(parts[1:], 1):
        difference = _map_difference(parts[0]._scaler, part._scaler)
        if difference is not None:
            raise ValueError(
                f"cannot merge forests with different feature maps: {difference} between part 0 "
                f"and part {k}. Parts fitted on different data need a feature map fixed up "
                "front: feature_scaling=(lower, upper), e.g. mondrian.dask.feature_range(X), "
                "and fixed feature_weights (None or an array: the default 'auto' searches "
                "them on each part's rows)"
                + (" (the density: the same first batch domain)" if isinstance(
                    part, density) else "")
            )
    if copy_parts:
        parts = [copy.deepcopy(part) for part in parts]
    merged = parts[0]
    if isinstance(merged, classifier):
        classes = parts[0].classes_
        for part in parts[1:]:
            if (part.classes_.dtype.kind in "OUS") != (classes.dtype.kind in "OUS"):
                raise TypeError("cannot merge classifiers with string and numeric classes")
            classes = np.union1d(classes, part.classes_)
        fixed = [part._classes_fixed for part in parts]
        for part in parts:
            if part._classes_fixed and len(part.classes_) != len(classes):
                raise ValueError(
                    f"a part fixed its classes to {part.classes_.tolist()} (classes=) but the "
                    f"parts hold {classes.tolist()}"
                )
            extra = np.setdiff1d(classes, part.classes_)
            if extra.size:
                part._add_classes(extra)  # zero counts for the classes it never saw
            part._sort_columns()  # one layout for every part's trees and store
        merged._classes_fixed = all(fixed)
    if isinstance(merged, regressor):
        for k, part in enumerate(parts[1:], 1):
            a, b = merged._y_scaler, part._y_scaler
            if (a.offset, a.scale, a.frozen) != (b.offset, b.scale, b.frozen):
                raise ValueError(
                    f"cannot merge regressors with different target maps (offset {a.offset!r}, "
                    f"scale {a.scale!r} in part 0; {b.offset!r}, {b.scale!r} in part {k}): the "
                    "map is fixed by the first targets, so fit the parts on the same data"
                )
            if getattr(merged, "_hyper_choice", None) != getattr(part, "_hyper_choice", None):
                raise ValueError(
                    "cannot merge regressors whose held-out hyperparameter choices differ (part "
                    f"0 and part {k}): set noise_variance, prior_variance and sigmoid_rate"
                )

    ensemble = merged._ensemble
    for part in parts[1:]:
        same = _same_points(ensemble.store, part._ensemble.store)
        ensemble = ensemble.merge(part._ensemble)
        if same:
            continue
        # Different shards: the model-level counts add up.
        if isinstance(merged, regressor):
            merged._y_sums = merged._y_sums + part._y_sums
        if isinstance(merged, density):
            merged.n_samples_seen_ += part.n_samples_seen_
            merged._n_outside += part._n_outside
    merged._ensemble = ensemble
    merged.n_estimators = len(ensemble.trees)
    for name in ("lifetime_path_", "_codes_cache", "_read_only_view"):
        merged.__dict__.pop(name, None)
    if isinstance(merged, density):
        merged.outside_weight_ = (merged._n_outside + 0.5) / (merged.n_samples_seen_ + 1.0)
    if isinstance(merged, regressor):
        # The parts of one forest choose its combination of lifetimes alike (forest_parts);
        # parts that chose differently leave the merged forest plain.
        choices = {part.__dict__.get("_debias_choice") for part in parts}
        if len(choices) > 1:
            merged.__dict__.pop("_debias_choice", None)
        merged._init_view()  # a fresh posterior cache, computed from the merged trees
    return merged
