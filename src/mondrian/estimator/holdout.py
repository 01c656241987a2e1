"""The one hold-out split of the package: every ``lifetime="auto"`` and the regressor's
held-out hyperparameter probe carve their validation part with :func:`holdout_split`."""

import math
import numbers

import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.utils import check_random_state

__all__ = ["holdout_split"]


def holdout_split(X, y, fraction, random_state, *, stratify=False, min_fit=1,
                  name="validation_fraction"):
    """Split ``(X, y)`` into a fit part and a validation part.

    The split is ``train_test_split(X, y, test_size=fraction, random_state=random_state)``
    (:func:`sklearn.model_selection.train_test_split`): the validation part has
    ``ceil(fraction * n)`` rows. With ``stratify``, the split keeps the class proportions when
    every class has at least two rows and each side can hold one row of every class;
    otherwise it is plain random.

    Parameters
    ----------
    X : ndarray of shape (n, n_features)
    y : ndarray of shape (n,)
    fraction : float
        Share of the rows held out, in ``(0, 1)``.
    random_state : int, RandomState instance or None
        Seed of the split. A ``RandomState`` instance is advanced (callers that draw more
        numbers afterwards rely on that).
    stratify : bool, default=False
        Stratify on ``y`` when possible (classifiers).
    min_fit : int, default=1
        Smallest acceptable fit part.
    name : str, default="validation_fraction"
        Name of the parameter that set ``fraction``, for error messages.

    Returns
    -------
    X_fit, X_val, y_fit, y_val : ndarray

    Raises
    ------
    ValueError
        When ``fraction`` is not in ``(0, 1)``, or when a side would be empty (smaller than
        ``min_fit`` for the fit part).
    """
    if (not isinstance(fraction, numbers.Real) or isinstance(fraction, bool)
            or not 0 < fraction < 1):
        raise ValueError(f"{name} must be a number in (0, 1), got {fraction!r}")
    n = len(y)
    n_val = int(math.ceil(fraction * n))  # train_test_split's rule for a float test_size
    if n_val < 1 or n - n_val < min_fit:
        raise ValueError(
            f"holding out {name}={fraction} of the {n} samples leaves {n_val} validation and "
            f"{n - n_val} training samples; at least 1 and {min_fit} are needed"
        )
    rng = check_random_state(random_state)
    strata = y if stratify and _can_stratify(y, n_val) else None
    return train_test_split(X, y, test_size=fraction, random_state=rng, stratify=strata)


def _can_stratify(y, n_val):
    _, counts = np.unique(y, return_counts=True)
    n_classes = len(counts)
    return counts.min() >= 2 and n_val >= n_classes and len(y) - n_val >= n_classes
