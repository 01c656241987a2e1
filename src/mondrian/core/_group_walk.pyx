"""Python view of the grouped walk of prediction (``_group_walk.pxd``), for tests and for
inspection: the leaf-first etas of rows walked in groups, and of the same rows walked alone
(``walk_etas`` of ``_walk.pxd``), to compare.
"""

from libc.stdint cimport int32_t
from libc.stdlib cimport free

from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.core._walk cimport WALK_DEPTH_MAX, read_lifetime, walk_etas

import numpy as np


def _check_rows(MondrianTree tree, const float64_t[:, ::1] X):
    """Refuse an empty tree and rows of another width."""
    if tree.node_count == 0:
        raise ValueError("cannot walk an empty tree")
    if X.shape[1] != tree.n_features:
        raise ValueError(f"X has {X.shape[1]} features, the tree expects {tree.n_features}")


def _etas_out(n):
    """The arrays of :func:`leaf_etas` and :func:`group_walk` for ``n`` rows."""
    return {"length": np.zeros(n, dtype=np.intp), "top": np.full(n, -1, dtype=np.intp),
            "path": np.full((n, WALK_DEPTH_MAX), -1, dtype=np.intp),
            "etas": np.full((n, WALK_DEPTH_MAX), np.nan)}


def leaf_etas(MondrianTree tree, const float64_t[:, ::1] X, lifetime=None):
    """The leaf-first etas of the one-row walk (``walk_etas``) of every row of ``X``.

    Parameters
    ----------
    tree : MondrianTree
        A non-empty tree.
    X : ndarray of shape (n_rows, n_features)
        The rows, in the tree's coordinates.
    lifetime : float, default=None
        Read the tree pruned at this lifetime (default: its own).

    Returns
    -------
    dict of ndarray
        ``length`` (the path's nodes; 0 when deeper than the walk keeps), ``top`` (the depth
        of the shallowest eta found; -1 for a path of length 0), ``path`` and ``etas`` (rows
        of ``WALK_DEPTH_MAX``, by depth; NaN and -1 where nothing was written).
    """
    _check_rows(tree, X)
    cdef float64_t lam = read_lifetime(tree, lifetime)
    out = _etas_out(X.shape[0])
    cdef intp_t[::1] length = out["length"], top = out["top"]
    cdef intp_t[:, ::1] path = out["path"]
    cdef float64_t[:, ::1] etas = out["etas"]
    cdef float64_t[::1] box = np.empty(2 * tree.n_features)
    cdef intp_t i
    for i in range(X.shape[0]):
        length[i] = walk_etas(tree, &X[i, 0], lam, NULL, &box[0], &path[i, 0], &etas[i, 0],
                              &top[i])
        if length[i] == 0:  # (a path deeper than the walk keeps: nothing of it is read)
            top[i] = -1
            path[i, :] = -1
    return out


def group_walk(MondrianTree tree, const float64_t[:, ::1] X, const float64_t[:, ::1] boxes,
               const int32_t[::1] slots=None, lifetime=None, bint portable=False):
    """The leaf-first etas of the grouped walk (``_group_walk.pxd``) of every row of ``X``,
    its stages run as a reader runs them (a group's descents, the previous group's etas, the
    group before read out).

    Parameters
    ----------
    tree : MondrianTree
        A non-empty tree (as in :func:`leaf_etas`).
    X : ndarray of shape (n_rows, n_features)
        The rows walked, in groups of ``GROUP_ROWS`` (the last one partial).
    boxes : ndarray of shape (n_boxes, 2 n_features)
        Every node's box: node ``j``'s at row ``slots[j]``, or ``j`` without ``slots``.
    slots : ndarray of int32, default=None
        The row of each node's box.
    lifetime : float, default=None
        Read the tree pruned at this lifetime (default: its own).
    portable : bool, default=False
        Measure the distances by the one-row reference loop.

    Returns
    -------
    dict of ndarray
        As :func:`leaf_etas`.
    """
    _check_rows(tree, X)
    cdef float64_t lam = read_lifetime(tree, lifetime)
    cdef intp_t n = X.shape[0], step = 0, r, i, d, D = tree.n_features
    if slots is not None:
        row_of = np.asarray(slots[:tree.node_count])
        if row_of.shape[0] < tree.node_count or np.any((row_of < 0) | (row_of >= boxes.shape[0])):
            raise ValueError("every node needs a box")
    if boxes.shape[1] != 2 * D or (slots is None and boxes.shape[0] < tree.node_count):
        raise ValueError("every node needs a box")
    out = _etas_out(n)
    cdef intp_t[::1] length = out["length"], top = out["top"]
    cdef intp_t[:, ::1] path = out["path"]
    cdef float64_t[:, ::1] etas = out["etas"]
    cdef const int32_t* slot_of = &slots[0] if slots is not None else NULL
    cdef GroupRows* scratch = NULL
    cdef size_t scratch_size = 0
    cdef GroupRows* groups
    cdef GroupRows* walked
    cdef GroupRows* measured
    cdef int old = mf_group_walk_portable
    group_walk_portable(portable)
    try:
        groups = group_stages_begin(&scratch, &scratch_size)
        while group_stage(groups, step, n, &walked, &measured):
            for r in range(walked.rows):
                i = walked.start + r
                length[i] = walked.length[r]
                top[i] = walked.top[r]
                for d in range(walked.length[r]):
                    path[i, d] = walked.path[r * WALK_DEPTH_MAX + d]
                for d in range(max(walked.top[r], 0), walked.length[r]):
                    etas[i, d] = walked.etas[r * WALK_DEPTH_MAX + d]
            if measured.rows > 0:
                group_etas(tree, &X[0, 0], D, &boxes[0, 0], slot_of, measured)
            group_next(tree, &X[0, 0], D, step, n, lam, &boxes[0, 0], slot_of, walked)
            step += 1
    finally:
        group_walk_portable(old != 0)
        free(scratch)
    return out
