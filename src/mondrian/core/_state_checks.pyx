"""Checks of a saved tree's node records and leaf lists, run before they reach native memory.

A loaded state (a pickle, a compact state) is copied into the buffers that the nogil loops of
the tree core walk without bounds checks, so a record pointing out of the node array, a cycle
of links or a leaf list running past the sample buffer would read or write out of bounds, or
loop forever. :func:`tree_records_error` checks every invariant those loops rely on, in one
linear pass with its own bounded loops (like the node checks of scikit-learn's tree loader).
"""

from libc.math cimport isnan
from libc.stdint cimport int32_t

import numpy as np

from mondrian.core._typedefs cimport float64_t, intp_t

# The sentinels of the node records (core/_tree.pxd).
cdef enum:
    LEAF = -1
    UNDEFINED = -2
    PAUSED = -3

# Error codes of _check (messages below, by code).
_MESSAGES = (
    None,
    "the root has a parent or is a child",
    "a node has one child",
    "a child id is out of the node range",
    "a split feature is out of range",
    "a leaf has a split feature",
    "a split threshold or time is NaN",
    "an internal node has a leaf list",
    "a node is the child of two nodes",
    "a parent link does not match the child links",
    "the nodes do not form one tree (a cycle or an unreachable node)",
    "a leaf list runs out of the sample range",
    "a leaf list has a cycle or shares a point with another",
    "a node's n_node_samples is not the number of points below it",
    "a box slot is out of range or used twice",
    "a node holding box_min_samples points or more has no stored box",
    "a sample link is out of the sample range",
)


cdef int _check(const int32_t[:] parent, const int32_t[:] left, const int32_t[:] right,
                const int32_t[:] feature, const float64_t[:] threshold,
                const float64_t[:] split_time, const intp_t[:] counts,
                const intp_t[:] first, const intp_t[::1] sample_next, const int32_t[::1] slots,
                intp_t n_features, intp_t n_boxes, intp_t box_min_samples, bint with_parents,
                bint with_counts, unsigned char[::1] seen, intp_t[::1] queue,
                intp_t[::1] below, unsigned char[::1] taken,
                unsigned char[::1] slot_used) noexcept nogil:
    cdef intp_t n = left.shape[0], m = sample_next.shape[0], j, lc, r, i, head, tail, total
    for i in range(m):
        if not -1 <= sample_next[i] < m:
            return 16
    for j in range(n):
        lc = left[j]
        r = right[j]
        if (lc == LEAF) != (r == LEAF):
            return 2
        if lc != LEAF:
            if not (0 < lc < n and 0 < r < n) or lc == r:
                return 3
            if not 0 <= feature[j] < n_features:
                return 4
            if isnan(threshold[j]):
                return 6
            if first[j] != LEAF:
                return 7
            if seen[lc] or seen[r]:
                return 8
            seen[lc] = 1
            seen[r] = 1
        else:
            if feature[j] != UNDEFINED and feature[j] != PAUSED:
                return 5
            if not LEAF <= first[j] < m:
                return 11
        if isnan(split_time[j]):
            return 6
    if n and seen[0]:
        return 1
    if with_parents and n:
        if parent[0] != LEAF:
            return 1
        for j in range(1, n):
            i = parent[j]
            if not (0 <= i < n and (left[i] == j or right[i] == j)):
                return 9
    # Every node but the root is the child of exactly one node: the links form one tree iff
    # the breadth-first walk from the root reaches every node (each is queued once).
    if n:
        queue[0] = 0
        head, tail = 0, 1
        while head < tail:
            j = queue[head]
            head += 1
            if left[j] != LEAF:
                queue[tail] = left[j]
                queue[tail + 1] = right[j]
                tail += 2
        if tail != n:
            return 10
    # Leaf lists: in range, acyclic and disjoint (a point is met once over all lists); then
    # the counts, children before parents.
    for head in range(n - 1, -1, -1):
        j = queue[head]
        if left[j] == LEAF:
            total = 0
            i = first[j]
            while i != LEAF:
                if taken[i]:
                    return 12
                taken[i] = 1
                total += 1
                i = sample_next[i]
        else:
            total = below[left[j]] + below[right[j]]
        below[j] = total
        if with_counts and counts[j] != total:
            return 13
    if slots.shape[0]:
        for j in range(n):
            i = slots[j]
            if i == -1:
                if below[j] >= box_min_samples:
                    return 15
                continue
            if not 0 <= i < n_boxes or slot_used[i]:
                return 14
            slot_used[i] = 1
    return 0


def tree_records_error(nodes, sample_next, slots=None, *, intp_t n_features,
                       intp_t n_boxes=0, intp_t box_min_samples=0, bint with_parents=True,
                       bint with_counts=True):
    """What is wrong with a tree's records, or None when the core may use them.

    Parameters
    ----------
    nodes : ndarray of the node record dtype (``MondrianTree`` ``NODE_DTYPE``), shape (n,)
    sample_next : ndarray of intp, shape (m,)
        The leaf-list links (``-1`` ends a list).
    slots : ndarray of int32, shape (n,), optional
        Box slot of every node (``-1``: none), checked against ``n_boxes`` and
        ``box_min_samples`` (a node holding that many points must keep its box).
    n_features : int
    with_parents, with_counts : bool
        Whether the ``parent`` and ``n_node_samples`` fields are given (else they are derived
        afterwards and not checked).

    Returns
    -------
    str or None

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import MondrianTreeClassifier
    >>> from mondrian.core._state_checks import tree_records_error
    >>> X = np.random.default_rng(0).random((30, 2))
    >>> tree = MondrianTreeClassifier(random_state=0).fit(X, X[:, 0] > 0.5)._trees[0]
    >>> nodes, links = tree._raw_nodes(), tree.__getstate__()["sample_next"]
    >>> print(tree_records_error(nodes, links, n_features=2))
    None
    >>> nodes["left_child"][0] = 0
    >>> tree_records_error(nodes, links, n_features=2)
    'a child id is out of the node range'
    """
    cdef intp_t n = nodes.shape[0], m
    sample_next = np.ascontiguousarray(sample_next, dtype=np.intp)
    m = sample_next.shape[0]
    if nodes.ndim != 1 or sample_next.ndim != 1:
        return "the node records and sample links must be 1-D"
    if n == 0:
        return None if m == 0 else "a tree without nodes has sample links"
    slot_array = np.zeros(0, dtype=np.int32) if slots is None else np.ascontiguousarray(
        slots, dtype=np.int32)
    if slots is not None and slot_array.shape != (n,):
        return "one box slot per node is needed"
    seen = np.zeros(n, dtype=np.uint8)
    queue = np.empty(n + 1, dtype=np.intp)
    below = np.zeros(n, dtype=np.intp)
    taken = np.zeros(m, dtype=np.uint8)
    used = np.zeros(max(n_boxes, 0), dtype=np.uint8)
    cdef int code
    cdef const int32_t[:] parent = nodes["parent"]
    cdef const int32_t[:] left = nodes["left_child"]
    cdef const int32_t[:] right = nodes["right_child"]
    cdef const int32_t[:] feature = nodes["feature"]
    cdef const float64_t[:] threshold = nodes["threshold"]
    cdef const float64_t[:] split_time = nodes["split_time"]
    cdef const intp_t[:] counts = nodes["n_node_samples"]
    cdef const intp_t[:] first = nodes["first_sample"]
    cdef const intp_t[::1] links = sample_next
    cdef const int32_t[::1] slot_view = slot_array
    cdef unsigned char[::1] seen_view = seen, taken_view = taken, used_view = used
    cdef intp_t[::1] queue_view = queue, below_view = below
    with nogil:
        code = _check(parent, left, right, feature, threshold, split_time, counts, first,
                      links, slot_view, n_features, n_boxes, box_min_samples, with_parents,
                      with_counts, seen_view, queue_view, below_view, taken_view, used_view)
    return _MESSAGES[code]
