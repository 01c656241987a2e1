"""Online refresh of a regression tree's upward messages (the Gaussian model of _gaussian).

A node's likelihood message is a function of its own subtree only (its statistics, its cuts'
times and its descendants' messages; the edge above it enters at its parent). An online update
that adds points changes the subtrees of the nodes on the new points' paths and of the new
nodes' ancestors only: the nodes it creates get ids from the tree's previous node count on, a
cut above an old node leaves that node's subtree as it was, and a paused leaf that regrows is
on a new point's path. Recomputing those nodes, children first, under unchanged
hyperparameters gives every message the bits of a full pass (:func:`upward_messages`): each
node runs the same operations on the same inputs. The work is O(path length) per new point
plus O(1) per new node, whatever the size of the tree.
"""

cimport cython
from libc.stdlib cimport free, realloc

from mondrian.core._tree cimport TREE_LEAF, MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.core._walk cimport is_leaf_at, leaf_at
from mondrian.forest._gaussian cimport GaussianPrior, node_messages
from mondrian.forest._gaussian_model cimport Hyper

import numpy as np


cdef int _push(intp_t** buf, intp_t* size, intp_t* cap, intp_t value) except -1 nogil:
    """Append ``value`` to the growable array ``buf``."""
    cdef intp_t new_cap
    cdef intp_t* grown
    if size[0] == cap[0]:
        new_cap = 2 * cap[0] + 64
        grown = <intp_t*> realloc(buf[0], new_cap * sizeof(intp_t))
        if grown == NULL:
            with gil:
                raise MemoryError()
        buf[0] = grown
        cap[0] = new_cap
    buf[0][size[0]] = value
    size[0] += 1
    return 0


cdef int _mark_up(MondrianTree tree, intp_t j, unsigned char* flags, intp_t** marked,
                  intp_t* n_marked, intp_t* cap) except -1 nogil:
    """Flag ``j`` and its ancestors, stopping at the first flagged one (each node once)."""
    while j != TREE_LEAF and not flags[j]:
        flags[j] = 1
        _push(marked, n_marked, cap, j)
        j = tree.nodes[j].parent
    return 0


cdef intp_t _refresh_tree(MondrianTree tree, const Hyper* h, intp_t old_count,
                          const float64_t* X, intp_t n_new, float64_t* mm, float64_t* mv,
                          unsigned char* flags) except -1 nogil:
    """Recompute the messages of the changed nodes of ``tree`` (see the module docstring);
    return their number. ``flags`` are all 0 on entry and on return."""
    cdef intp_t* marked = NULL
    cdef intp_t* order = NULL
    cdef intp_t n_marked = 0, cap = 0, order_cap = 0, top = 0, count = 0, i, j, child, side
    cdef intp_t D = tree.n_features
    try:
        for j in range(old_count, tree.node_count):
            _mark_up(tree, j, flags, &marked, &n_marked, &cap)
        for i in range(n_new):
            _mark_up(tree, leaf_at(tree, X + i * D, h.lifetime), flags, &marked, &n_marked,
                     &cap)
        # The flagged nodes form a subtree holding the root: pre-order, then children first.
        if n_marked > 0 and flags[0]:
            _push(&order, &top, &order_cap, 0)
            while count < top:
                j = order[count]
                count += 1
                if is_leaf_at(tree, j, h.lifetime):
                    continue
                for side in range(2):
                    child = tree.nodes[j].left_child if side == 0 else tree.nodes[j].right_child
                    if flags[child]:
                        _push(&order, &top, &order_cap, child)
            for i in range(count - 1, -1, -1):
                j = order[i]
                if not h.hierarchical and not is_leaf_at(tree, j, h.lifetime):
                    mm[j] = 0.0  # what a full pass leaves at an internal node
                    mv[j] = 1.0
                else:
                    node_messages(tree, j, h, 1, mm, mv, 0, NULL)
        return n_marked
    finally:
        for i in range(n_marked):
            flags[marked[i]] = 0
        free(marked)
        free(order)


@cython.boundscheck(False)
def refresh_messages(list trees, list buffers, GaussianPrior params not None, list old_counts,
                     const float64_t[:, ::1] X_new, lifetime=None):
    """Bring the upward messages of ``trees`` up to date after an online update.

    Parameters
    ----------
    trees : list of MondrianTree
        Regression trees (statistics ``(1, y, y**2)``).
    buffers : list of (msg_mean, msg_var, flags)
        Per tree, the messages of its nodes before the update (the first ``old_counts[m]``
        entries; arrays of any larger length) and a ``uint8`` scratch of zeros as long.
    params : GaussianPrior
        The hyperparameters the messages were computed under (unchanged by the update).
    old_counts : list of int
        Node count of each tree before the update.
    X_new : ndarray of shape (n_new, n_features)
        The points the update added, in the trees' coordinates.
    lifetime : float, default=None
        The lifetime the messages were computed at (the trees pruned there: the shorter
        reading of the debiased regressor); None, each tree's own. A node that an update
        pushed below a pruned leaf keeps its old message, which no reading at ``lifetime``
        uses (a full pass leaves it at its initial value).

    Returns
    -------
    buffers : list of (msg_mean, msg_var, flags)
        The same arrays, or longer copies when a tree outgrew them (doubling: amortised O(1)
        per node).
    messages : list of (msg_mean, msg_var)
        Views of length ``node_count``, the bits of :func:`upward_messages` (at
        ``lifetime``: on every node of the pruned trees).
    work : int
        The number of nodes recomputed, over all trees.
    """
    cdef MondrianTree tree
    cdef Hyper h
    cdef intp_t m, nc, old, work = 0, n_new = X_new.shape[0]
    cdef float64_t[::1] mm
    cdef float64_t[::1] mv
    cdef unsigned char[::1] fl
    cdef const float64_t* rows = &X_new[0, 0] if n_new > 0 else NULL
    if not (len(trees) == len(buffers) == len(old_counts)):
        raise ValueError("one buffer and one node count per tree are needed")
    out_buffers, messages = [], []
    for m in range(len(trees)):
        tree = trees[m]
        if tree.value_stride != 3:
            raise ValueError("regression trees carry (1, y, y**2) statistics")
        if n_new > 0 and X_new.shape[1] != tree.n_features:
            raise ValueError("X_new has another number of features than the trees")
        nc, old = tree.node_count, old_counts[m]
        msg_mean, msg_var, flags = buffers[m]
        if not 0 < old <= nc or msg_mean.shape[0] < old:
            raise ValueError("stale buffers: the tree was not extended from them")
        if msg_mean.shape[0] < nc:
            size = max(2 * msg_mean.shape[0], nc)
            msg_mean = np.concatenate([msg_mean[:old], np.zeros(size - old)])
            msg_var = np.concatenate([msg_var[:old], np.ones(size - old)])
            flags = np.zeros(size, dtype=np.uint8)
        mm, mv, fl = msg_mean, msg_var, flags
        h = params.at(tree.lifetime if lifetime is None
                      else min(float(lifetime), tree.lifetime))
        with nogil:
            work += _refresh_tree(tree, &h, old, rows, n_new, &mm[0], &mv[0], &fl[0])
        out_buffers.append((msg_mean, msg_var, flags))
        messages.append((msg_mean[:nc], msg_var[:nc]))
    return out_buffers, messages, work
