"""Kernels of the one-row online paths (``learn_one``, ``predict_one``, one-row ``predict``).

A streaming call spends most of its time outside the trees when every step is a NumPy call
on a row of a few features; these kernels do the per-row steps in one call each:

* :func:`scale_row`: one row through the frozen min-max map and weights of
  :class:`~mondrian.core.feature_map.FeatureScaler` (the same IEEE operations, in the same
  order, as ``FeatureScaler.transform``, so the same bits), with its checks;
* :func:`begin_undo_trees`, :func:`commit_undo_trees`, :func:`rollback_undo_trees`: the trees'
  undo logs (:meth:`MondrianTree.begin_undo`) opened, closed or rolled back for a whole list
  in one call, which no ``KeyboardInterrupt`` can split between two trees (Python delivers
  signals between bytecodes, never inside a compiled loop that calls no Python code).
"""

from libc.math cimport fabs, isfinite

from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t

import numpy as np


def scale_row(const float64_t[:] x, const float64_t[::1] offset, const float64_t[::1] scale,
              weights, float64_t limit, bint clip):
    """``x`` mapped to the trees' coordinates, ``(x - offset) / scale * weights``, as a
    ``(1, n_features)`` float64 array; None when the caller's full path must decide.

    Parameters
    ----------
    x : ndarray of shape (n_features,)
        One row in original units.
    offset, scale : ndarray of shape (n_features,)
        The min-max map.
    weights : ndarray of shape (n_features,) or None
        Feature weights applied after the map.
    limit : float
        Largest magnitude of a scaled value (``feature_map.MAX_SCALED``).
    clip : bool
        Clip scaled values to ``[-limit, limit]`` (prediction) instead of refusing them.

    Returns
    -------
    ndarray of shape (1, n_features) or None
        None when ``x`` holds NaN or infinity, or (``clip=False``) a scaled value of
        magnitude ``limit`` or more: the full validation then raises its usual error.
    """
    cdef intp_t D = x.shape[0], d
    cdef const float64_t[::1] w
    cdef bint weighted = weights is not None
    cdef float64_t v
    if offset.shape[0] != D or scale.shape[0] != D:
        raise ValueError("x, offset and scale must have the same length")
    if weighted:
        w = weights
        if w.shape[0] != D:
            raise ValueError("weights must have the length of x")
    out = np.empty((1, D), dtype=np.float64)
    cdef float64_t[:, ::1] o = out
    for d in range(D):
        if not isfinite(x[d]):
            return None
        # FeatureScaler._scaled: subtract, divide, then multiply by the weight (each step
        # rounded to float64, as NumPy's elementwise operations do).
        v = (x[d] - offset[d]) / scale[d]
        if weighted:
            v = v * w[d]
        if clip:
            # np.clip(v, -limit, limit): NaN stays NaN.
            if v < -limit:
                v = -limit
            elif v > limit:
                v = limit
        elif not fabs(v) < limit:
            return None
        o[0, d] = v
    return out


def begin_undo_trees(list trees, list opened):
    """Open an undo log in every tree of ``trees`` and append to ``opened`` those whose log
    this call opened (a tree whose log was open already is left to its opener).

    ``opened`` is filled in place, so a caller that is interrupted as soon as this returns
    still knows which logs to close.
    """
    cdef MondrianTree tree
    for tree in trees:
        if tree.begin_undo():
            opened.append(tree)


def commit_undo_trees(list trees):
    """Keep the changes made since :func:`begin_undo_trees` and close the logs."""
    cdef MondrianTree tree
    for tree in trees:
        tree.commit_undo()


def rollback_undo_trees(list trees):
    """Put every tree back as it was at :func:`begin_undo_trees` and close the logs."""
    cdef MondrianTree tree
    for tree in trees:
        tree.rollback_undo()
