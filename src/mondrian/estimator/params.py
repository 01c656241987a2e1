"""Parameter rules every estimator shares beyond scikit-learn's constraints."""

import numbers

import numpy as np
from sklearn.utils._param_validation import Interval, InvalidParameterError

__all__ = ["FOREST_PARAMETER_CONSTRAINTS", "WINDOW_CONSTRAINT", "check_strict_params",
           "StrictParamsMixin", "same_param"]

# Constraints of the parameters every forest (many trees, built in parallel) adds to its base.
FOREST_PARAMETER_CONSTRAINTS = {
    "n_estimators": [Interval(numbers.Integral, 1, None, closed="left")],
    "n_jobs": [numbers.Integral, None],
    "verbose": ["verbose"],
}

# ``window``: how many of the most recent points a model keeps (None: every point).
WINDOW_CONSTRAINT = [Interval(numbers.Integral, 1, None, closed="left"), None]



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


def same_param(a, b):
    """Whether two parameter values are the same setting (arrays by value, NaN equal to NaN)."""
    if a is b:
        return True
    if isinstance(a, (np.ndarray, list, tuple)) or isinstance(b, (np.ndarray, list, tuple)):
        if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
            return False
        return np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object))
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        return a == b or (a != a and b != b)  # NaN equals NaN here
    return type(a) is type(b) and a == b
