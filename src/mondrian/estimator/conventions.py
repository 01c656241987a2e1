"""scikit-learn's forest conventions on the Mondrian forests: ``len(forest)``, ``forest[i]``
and iteration over the trees, ``min_samples_split`` as a share of the training set, and
clear errors for the parameters of scikit-learn's trees that have no Mondrian meaning."""

import math
import numbers

from sklearn.base import is_classifier
from sklearn.utils._param_validation import Interval, InvalidParameterError, RealNotInt
from sklearn.utils.validation import check_is_fitted

__all__ = [
    "FOREIGN_PARAMETERS",
    "MIN_SAMPLES_SPLIT_CONSTRAINT",
    "ConventionsMixin",
    "TreeSequenceMixin",
    "resolve_min_samples_split",
]

# min_samples_split: a count (at least 1), or scikit-learn's share of the training set.
MIN_SAMPLES_SPLIT_CONSTRAINT = [
    Interval(numbers.Integral, 1, None, closed="left"),
    Interval(RealNotInt, 0.0, 1.0, closed="right"),
]

_DEPTH = (
    "the depth of a Mondrian tree is set by `lifetime` (a smaller lifetime gives fewer cuts and "
    "shallower trees; lifetime='auto' chooses it on held-out data, and prune(lifetime) cuts a "
    "fitted forest back). A depth cap is not offered: an online point may insert a cut above "
    "any node, so a cap would break the equality in law of fit and partial_fit"
)
_NO_BOOTSTRAP = (
    "every Mondrian tree is grown on all the training points (no bootstrap), so there is no "
    "out-of-bag set: score a held-out set with lifetime_path(X_val, y_val) or use "
    "cross-validation"
)

# scikit-learn tree and forest parameters without a Mondrian meaning, with what to use instead.
FOREIGN_PARAMETERS = {
    "max_depth": _DEPTH,
    "max_leaf_nodes": _DEPTH,
    "ccp_alpha": _DEPTH,
    "min_samples_leaf": (
        "Mondrian cuts fall uniformly inside the data's box, not between training points, so a "
        "floor on the leaf size would condition the process on the data (and break online "
        "learning); leaves holding fewer than `min_samples_split` points stop splitting, and a "
        "smaller `lifetime` gives larger leaves"
    ),
    "min_weight_fraction_leaf": (
        "use `min_samples_split` (a count, or a share of the training set in (0, 1]) or a "
        "smaller `lifetime` for larger leaves"
    ),
    "max_features": (
        "a Mondrian cut picks its feature with probability proportional to the feature's range "
        "times its weight: use `feature_weights` (an array, 0 to drop a feature, or 'auto' to "
        "learn them from the labels)"
    ),
    "criterion": (
        "Mondrian cuts are random and do not minimise an impurity; the labels shape the cuts "
        "through `feature_weights='auto'`, and the leaves through the posterior (`smoothing`)"
    ),
    "splitter": "Mondrian cuts are always random (the Mondrian process); see `lifetime`",
    "min_impurity_decrease": "Mondrian cuts do not minimise an impurity; see `lifetime`",
    "oob_score": _NO_BOOTSTRAP,
    "bootstrap": _NO_BOOTSTRAP,
    "max_samples": _NO_BOOTSTRAP,
    "warm_start": (
        "a fitted Mondrian forest always learns online: partial_fit adds points, and adds trees "
        "when `n_estimators` was raised"
    ),
}


def _foreign_error(estimator_name, names):
    name = sorted(names)[0]
    return InvalidParameterError(
        f"{estimator_name} has no parameter {name!r} (a scikit-learn tree parameter without "
        f"a Mondrian meaning): {FOREIGN_PARAMETERS[name]}."
    )


class ConventionsMixin:
    """What users of other libraries try on a forest, answered in the Mondrian terms.

    Constructors and ``set_params`` name the Mondrian equivalent of scikit-learn's tree
    parameters (``max_depth``, ``min_samples_leaf``, ``max_features``, ``criterion``,
    ``oob_score``...) instead of Python's bare "unexpected keyword argument". The check runs
    in ``__new__``, before ``__init__`` sees the arguments, so the constructors' signatures
    (and ``get_params``) stay those of the model. The error is an ``InvalidParameterError``
    (a ``ValueError`` and a ``TypeError``).

    A model put in a river pipeline or given to a river metric as it is (a scikit-learn
    estimator, not a river one) raises a ``TypeError`` naming the river adapters, instead of
    river's "metric is not compatible". River's type checks unwrap pipelines by reading
    ``_last_step`` from every object they test (``river.base.estimator.EstimatorMeta``); only
    those checks read that name here.
    """

    @property
    def _last_step(self):
        kind = "Classifier" if is_classifier(self) else "Regressor"
        raise TypeError(
            f"{type(self).__name__} is a scikit-learn estimator, not a river one: in a river "
            f"pipeline or with river's metrics use mondrian.river.Mondrian{kind}(...) (river-style "
            f"parameters) or mondrian.river.River{kind}({type(self).__name__}(...))"
        )

    def __new__(cls, *args, **kwargs):
        foreign = FOREIGN_PARAMETERS.keys() & kwargs.keys()
        if foreign and not (set(cls._get_param_names()) & foreign):
            raise _foreign_error(cls.__name__, foreign)
        return super().__new__(cls)

    def set_params(self, **params):
        foreign = {name.split("__")[0] for name in params} & FOREIGN_PARAMETERS.keys()
        foreign -= set(self._get_param_names())
        if foreign:
            raise _foreign_error(type(self).__name__, foreign)
        return super().set_params(**params)


def resolve_min_samples_split(value, n_samples):
    """The count of points below which a leaf pauses, for the parameter ``value``.

    An integer is the count itself; a float in ``(0, 1]`` is scikit-learn's share of the
    training set, ``max(2, ceil(value * n_samples))`` with ``n_samples`` the rows of the
    first batch (of positive weight), fixed from then on.
    """
    if isinstance(value, numbers.Integral):
        return int(value)
    return max(2, int(math.ceil(float(value) * n_samples)))


class TreeSequenceMixin:
    """A fitted forest as the sequence of its trees, as scikit-learn's forests: ``len(forest)``,
    ``forest[i]`` (a read-only single-tree view, as in ``estimators_``; a slice gives a list)
    and ``for tree in forest``. An unfitted forest raises ``NotFittedError`` for all three; its
    truth value is always True (as any estimator's without a length)."""

    def __len__(self):
        check_is_fitted(self, "_trees")
        return len(self._trees)

    def __getitem__(self, index):
        n = len(self)
        if isinstance(index, slice):
            return [self._tree_view(k) for k in range(*index.indices(n))]
        if not isinstance(index, numbers.Integral) or isinstance(index, bool):
            raise TypeError(
                f"forest indices must be integers or slices, not {type(index).__name__}"
            )
        if not -n <= index < n:
            raise IndexError(f"tree index {index} is out of range for a forest of {n} trees")
        return self._tree_view(int(index) % n)

    def __iter__(self):
        return (self._tree_view(k) for k in range(len(self)))

    def __bool__(self):
        return True
