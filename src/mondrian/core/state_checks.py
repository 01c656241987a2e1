"""Checks of loaded states (pickles) before compiled code reads them.

Every object whose arrays the compiled loops index without bounds checks (the stored points of
a forest, a grid's cut sample, a ridge inverse, the partition labels)
checks its state on load with these helpers and refuses a state it cannot use with a
``ValueError`` naming the object and the problem; the trees' node records have their own
compiled check (:mod:`mondrian.core._state_checks`).
"""

import numpy as np

__all__ = ["refuse", "loaded_array", "check_index_array"]


def refuse(owner, message):
    """Raise the ``ValueError`` of an inconsistent saved ``owner`` (a name)."""
    raise ValueError(f"inconsistent {owner} state: {message}")


def loaded_array(owner, name, value, dtype, ndim, shape=None):
    """``value`` as a C-contiguous array of ``dtype`` with ``ndim`` dimensions (and ``shape``,
    None entries free), converted without wrapping; else :func:`refuse`.

    Examples
    --------
    >>> from mondrian.core.state_checks import loaded_array
    >>> loaded_array("X", "a", [[1, 2]], float, 2, (None, 2)).shape
    (1, 2)
    >>> loaded_array("X", "a", [1, 2], float, 2)
    Traceback (most recent call last):
    ...
    ValueError: inconsistent X state: a must have 2 dimensions, got shape (2,)
    """
    target = np.dtype(dtype)
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        array = np.asarray(None)
    if array.dtype.kind not in ("biu" if target.kind in "iu" else "biuf") or (
            target.kind in "iu" and array.size and not (
                np.iinfo(target).min <= array.min() and array.max() <= np.iinfo(target).max)):
        refuse(owner, f"{name} is not an array of {target.name} values")
    # (the array itself when it fits: a loaded array may be shared with another attribute)
    fits = array.dtype == target and array.flags.c_contiguous
    out = array if fits else np.ascontiguousarray(array, dtype=target)
    if out.ndim != ndim:
        refuse(owner, f"{name} must have {ndim} dimensions, got shape {out.shape}")
    if shape is not None and any(
            s is not None and s != t for s, t in zip(shape, out.shape, strict=True)):
        refuse(owner, f"{name} has shape {out.shape}, expected {shape}")
    return out


def check_index_array(owner, name, array, low, high):
    """Refuse ``array`` unless every entry lies in ``[low, high)``."""
    if array.size and not (low <= array.min() and array.max() < high):
        refuse(owner, f"{name} holds entries outside [{low}, {high})")
