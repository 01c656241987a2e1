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
from mondrian.core._undo cimport undo_begin, undo_commit, undo_rollback

import numpy as np

cimport numpy as cnp

cnp.import_array()


cdef const float64_t* floats_in_place(object a, intp_t n, intp_t* step) except? NULL:
    """The data of ``a``, a float64 ndarray of shape ``(n,)`` whose stride is a multiple of 8
    bytes (its step in floats goes to ``step[0]``), read in place: no memoryview object per
    call. NULL when ``a`` is anything else (the caller converts it)."""
    cdef cnp.ndarray arr
    if type(a) is not cnp.ndarray:
        return NULL
    arr = <cnp.ndarray> a
    if (cnp.PyArray_TYPE(arr) != cnp.NPY_FLOAT64 or cnp.PyArray_NDIM(arr) != 1
            or cnp.PyArray_DIMS(arr)[0] != n or not cnp.PyArray_ISALIGNED(arr)
            or cnp.PyArray_STRIDES(arr)[0] % <intp_t>sizeof(float64_t) != 0):
        return NULL
    step[0] = cnp.PyArray_STRIDES(arr)[0] // <intp_t>sizeof(float64_t)
    return <const float64_t*> cnp.PyArray_DATA(arr)


cdef object _float_vector(object a, intp_t n, const float64_t** data, intp_t* step, str error):
    """``a`` as float64 data of shape ``(n,)``: read in place when :func:`floats_in_place`
    can, else converted to a contiguous copy (``ValueError(error)`` when its shape is not
    ``(n,)``). Returns the array that ``data[0]`` points into: the caller keeps it alive."""
    data[0] = floats_in_place(a, n, step)
    if data[0] == NULL:
        a = np.ascontiguousarray(a, dtype=np.float64)
        if a.shape != (n,):
            raise ValueError(error)
        data[0] = floats_in_place(a, n, step)
    return a


def scale_row(x, offset, scale, weights, float64_t limit, bint clip):
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
    cdef intp_t D, xs = 1, os = 1, ss = 1, ws = 1
    cdef const float64_t* xp
    cdef const float64_t* op
    cdef const float64_t* sp
    cdef const float64_t* wp = NULL
    cdef cnp.npy_intp dims[2]
    # Float64 vectors are read in place (a streaming call pays no memoryview objects); any
    # other array-like is converted first, with the same checks.
    x = np.asarray(x, dtype=np.float64) if type(x) is not cnp.ndarray else x
    if cnp.PyArray_NDIM(<cnp.ndarray> x) != 1:
        raise ValueError("x must be one row (a 1-D array)")
    D = cnp.PyArray_DIMS(<cnp.ndarray> x)[0]
    xp = floats_in_place(x, D, &xs)
    if xp == NULL:
        x = np.ascontiguousarray(x, dtype=np.float64)
        xp = floats_in_place(x, D, &xs)
    offset = _float_vector(offset, D, &op, &os, "x, offset and scale must have the same length")
    scale = _float_vector(scale, D, &sp, &ss, "x, offset and scale must have the same length")
    if weights is not None:
        weights = _float_vector(weights, D, &wp, &ws, "weights must have the length of x")
    dims[0] = 1
    dims[1] = D
    out = cnp.PyArray_EMPTY(2, dims, cnp.NPY_FLOAT64, 0)
    if not scale_into(xp, xs, op, os, sp, ss, wp, ws, D, limit, clip,
                      <float64_t*> cnp.PyArray_DATA(<cnp.ndarray> out)):
        return None
    return out


cdef bint scale_into(const float64_t* xp, intp_t xs, const float64_t* op, intp_t os,
                     const float64_t* sp, intp_t ss, const float64_t* wp, intp_t ws, intp_t D,
                     float64_t limit, bint clip, float64_t* outp) noexcept nogil:
    """The loop of :func:`scale_row` (``x``, ``offset``, ``scale`` and ``weights`` read with
    steps ``xs``, ``os``, ``ss``, ``ws``; ``wp`` NULL: no weights) into ``outp``; False when
    :func:`scale_row` returns None (``outp`` then partly written)."""
    cdef intp_t d
    cdef float64_t v
    for d in range(D):
        v = xp[d * xs]
        if not isfinite(v):
            return False
        # FeatureScaler._scaled: subtract, divide, then multiply by the weight (each step
        # rounded to float64, as NumPy's elementwise operations do).
        v = (v - op[d * os]) / sp[d * ss]
        if wp != NULL:
            v = v * wp[d * ws]
        if clip:
            # np.clip(v, -limit, limit): NaN stays NaN.
            if v < -limit:
                v = -limit
            elif v > limit:
                v = limit
        elif not fabs(v) < limit:
            return False
        outp[d] = v
    return True


def all_true(flags):
    """Whether every entry of ``flags`` is true: ``bool(np.all(flags))``, read in place for a
    1-D bool ndarray (the frozen-features test of every streaming update, without the cost of
    a NumPy reduction call).

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian.core._online import all_true
    >>> all_true(np.array([True, True])), all_true(np.array([True, False]))
    (True, False)
    """
    cdef cnp.ndarray arr
    cdef const char* data
    cdef intp_t n, step, i
    if type(flags) is not cnp.ndarray:
        return bool(np.all(flags))
    arr = <cnp.ndarray> flags
    if cnp.PyArray_TYPE(arr) != cnp.NPY_BOOL or cnp.PyArray_NDIM(arr) != 1:
        return bool(np.all(flags))
    n = cnp.PyArray_DIMS(arr)[0]
    step = cnp.PyArray_STRIDES(arr)[0]
    data = <const char*> cnp.PyArray_DATA(arr)
    for i in range(n):
        if not data[i * step]:
            return False
    return True


def begin_undo_trees(list trees, list opened):
    """Open an undo log in every tree of ``trees`` and append to ``opened`` those whose log
    this call opened (a tree whose log was open already is left to its opener).

    ``opened`` is filled in place, so a caller that is interrupted as soon as this returns
    still knows which logs to close. (The three functions call the trees' C functions
    directly: what their methods ``begin_undo``, ``commit_undo`` and ``rollback_undo`` call.)
    """
    cdef MondrianTree tree
    for tree in trees:
        if undo_begin(tree):
            opened.append(tree)


def commit_undo_trees(list trees):
    """Keep the changes made since :func:`begin_undo_trees` and close the logs."""
    cdef MondrianTree tree
    for tree in trees:
        undo_commit(tree)


def rollback_undo_trees(list trees):
    """Put every tree back as it was at :func:`begin_undo_trees` and close the logs."""
    cdef MondrianTree tree
    for tree in trees:
        undo_rollback(tree)
