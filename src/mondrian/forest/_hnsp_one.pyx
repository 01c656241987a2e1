"""The classifier's one-row prediction in one call (``predict_one``, ``predict_proba_one``).

A streaming prediction of one sample went through the feature map, an output array, the
typed views of :func:`~mondrian.forest._hnsp.predict_proba_trees` and a division, each a
Python or NumPy call of its own. :func:`predict_proba_row` does the same steps in one call:
the row is scaled as :func:`~mondrian.core._online.scale_row` scales it (the same IEEE
operations), the paths of every tree are requested from memory together
(:func:`~mondrian.core._warm.warm_trees`), each tree adds its predictive with
:func:`~mondrian.forest._hnsp._predict_row` (the walk of ``predict_proba_trees`` for one row)
and the sum is divided by the number of trees: the bits of ``predict_proba(x[None])[0]``.
"""

from libc.stdlib cimport free

from mondrian.core._online cimport floats_in_place, scale_into
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.core._walk cimport read_lifetime, reserve
from mondrian.core._warm cimport WARM_TREES, warm_trees
from mondrian.forest._hnsp cimport _predict_row

cimport numpy as cnp

cnp.import_array()


def predict_proba_row(list trees, x, offset, scale, weights, float64_t limit,
                      float64_t discount_factor, bint strict, intp_t n_classes):
    """Class probabilities of one sample, averaged over ``trees``; None when the caller's
    general path must decide.

    Parameters
    ----------
    trees : list of MondrianTree
        Non-empty trees whose statistics are class histograms of ``n_classes`` columns.
    x : ndarray of shape (n_features,)
        The sample in original units: a float64 ndarray (any stride).
    offset, scale : ndarray of shape (n_features,)
        The frozen min-max map (float64 ndarrays).
    weights : ndarray of shape (n_features,) or None
        Feature weights applied after the map.
    limit : float
        Scaled values are clipped to ``[-limit, limit]`` (``feature_map.MAX_SCALED``).
    discount_factor : float
        The HNSP discount rate is ``gamma = discount_factor * n_features``.
    strict : bool
        Strict IKN counts for the branched-off node (``branch_off_counts="tables"``).
    n_classes : int

    Returns
    -------
    ndarray of shape (n_classes,) or None
        None, having computed nothing, when any input is not as described (another type,
        shape or stride, an empty or mismatched tree, NaN or infinity in ``x``).
    """
    cdef intp_t D, K = n_classes, n_trees = len(trees), S = 0, t, k
    cdef intp_t xs = 1, os = 1, ss = 1, ws = 1
    cdef const float64_t* xp
    cdef const float64_t* op
    cdef const float64_t* sp
    cdef const float64_t* wp = NULL
    cdef float64_t* buf = NULL
    cdef size_t buf_size = 0
    cdef float64_t* outp
    cdef MondrianTree tree
    cdef cnp.npy_intp dims[1]
    if type(x) is not cnp.ndarray or cnp.PyArray_NDIM(<cnp.ndarray> x) != 1 or n_trees == 0:
        return None
    D = cnp.PyArray_DIMS(<cnp.ndarray> x)[0]
    xp = floats_in_place(x, D, &xs)
    op = floats_in_place(offset, D, &os)
    sp = floats_in_place(scale, D, &ss)
    if weights is not None:
        wp = floats_in_place(weights, D, &ws)
    if xp == NULL or op == NULL or sp == NULL or (weights is not None and wp == NULL):
        return None
    for tree in trees:
        if tree.n_columns != K or tree.node_count == 0 or tree.n_features != D:
            return None
        S = max(S, tree.value_stride)
    dims[0] = K
    out = cnp.PyArray_ZEROS(1, dims, cnp.NPY_FLOAT64, 0)
    outp = <float64_t*> cnp.PyArray_DATA(<cnp.ndarray> out)
    try:
        # One scratch: the scaled row (D), the walk's rows (3 K + 3 S) and its box (2 D).
        reserve(<void**> &buf, &buf_size, (3 * D + 3 * K + 3 * S) * sizeof(float64_t))
        if not scale_into(xp, xs, op, os, sp, ss, wp, ws, D, limit, True, buf):
            return None
        t = 0
        for tree in trees:
            if t % WARM_TREES == 0:
                warm_trees(trees[t : t + WARM_TREES], buf, None)
            _predict_row(tree, buf, discount_factor * D, strict, read_lifetime(tree, None),
                         False, buf + D, buf + D + K, buf + D + 2 * K, buf + D + 3 * K,
                         buf + D + 3 * K + 3 * S, NULL, 0, outp)
            t += 1
    finally:
        free(buf)
    for k in range(K):
        outp[k] = outp[k] / <float64_t> n_trees  # out /= len(trees)
    return out
