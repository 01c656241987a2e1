"""Checks of a loaded estimator's state as a whole: the class it was saved from and a
classifier's ``classes_`` (the array checks they use are :mod:`mondrian.core.state_checks`)."""

import numpy as np

from mondrian.core.state_checks import refuse

__all__ = ["check_classes", "check_state_class", "class_name"]


def check_classes(estimator, n_columns):
    """Refuse a loaded classifier whose ``classes_`` are not sorted and distinct or do not
    match the ``n_columns`` class columns of its model."""
    classes = estimator.__dict__.get("classes_")
    try:
        ok = (isinstance(classes, np.ndarray) and classes.ndim == 1
              and classes.size == n_columns > 0
              and np.array_equal(np.unique(classes), classes))
    except TypeError:
        ok = False
    if not ok:
        refuse(type(estimator).__name__,
               f"classes_ must be {n_columns} sorted distinct labels, one per class column")


def check_state_class(estimator, state):
    """Refuse the estimator state ``state`` when it was saved from another class.

    States carry the qualified name of their class (``_mondrian_state_class``); states saved
    before it are accepted (their other checks still run).
    """
    saved = state.get("_mondrian_state_class")
    if saved is not None and saved != class_name(type(estimator)):
        refuse(type(estimator).__name__, f"it was saved from {saved}")


def class_name(cls):
    """The qualified name of ``cls`` that estimator states record."""
    return f"{cls.__module__}.{cls.__qualname__}"
