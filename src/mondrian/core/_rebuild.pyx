"""Derived data of a Mondrian tree: what a lean tree does not store, rebuilt from its points,
and the other per-node arrays its storage implies (depths, the leaf of each point, bytes).

A tree keeps the boxes (and, with lean values, the statistics rows) of the nodes holding at
least ``box_min_samples`` points only; the others are the min/max (the sums of the contribution
rows) of the stored points below them. These functions rebuild them: one node's (the
builders), or every node's at once, leaves from their lists and then children before parents
(the readers of many rows, :func:`all_values` and :func:`all_boxes`, and
``derived_arrays``, which also recounts the points and the parent links).
"""

from libc.math cimport INFINITY
from libc.stdint cimport int32_t
from libc.string cimport memcpy

import numpy as np

cimport numpy as cnp

from mondrian.core._box_loops cimport MONDRIAN_TREE_PREFETCH, mf_add_rows, mf_prefetch_span
from mondrian.core._tree cimport (
    TREE_LEAF,
    TREE_UNDEFINED,
    _add_row,
    Node,
    _include,
    check_points,
    points_row,
    subtree_points,
)
from mondrian.core._typedefs cimport BOX_POINTS_MAX

cnp.import_array()

# How many nodes ahead all_values asks the cache for a leaf's first contribution row.
cdef intp_t ROW_PREFETCH_AHEAD = 16


cdef enum:
    # Points of a leaf list gathered at once by leaf_box / rebuild_row: the list is walked
    # first (its links are the only serial reads), then every gathered point's row is
    # requested from memory before the first is read, so the scattered reads overlap.
    LIST_CHUNK = 64


cdef inline intp_t _gather(MondrianTree tree, intp_t* i, intp_t* points, const float64_t* base,
                           intp_t width) noexcept nogil:
    """Up to ``LIST_CHUNK`` points of a leaf list from ``i[0]`` on into ``points`` (``i[0]``
    left at the next one, -1 at the end), their rows of ``width`` floats in ``base``
    prefetched (a hint: no effect on any value; fewer points for wide rows, about 16 KiB at
    most, so that they stay in the first-level cache); returns their number."""
    cdef intp_t n = 0, k, cap = min(<intp_t>LIST_CHUNK, max(4, 2048 // max(width, 1)))
    while i[0] != TREE_LEAF and n < cap:
        points[n] = i[0]
        i[0] = tree.sample_next[i[0]]
        n += 1
    for k in range(n):
        mf_prefetch_span(base + points[k] * width, width * sizeof(float64_t))
    return n


cdef void leaf_box(MondrianTree tree, intp_t node, const float64_t* X,
                   float64_t* lo) noexcept nogil:
    """The box of the leaf ``node`` rebuilt from its whole list into ``lo`` (lower row) and
    ``lo + D`` (upper): the points in list order, the bits of a box grown point by point."""
    cdef intp_t D = tree.n_features
    cdef intp_t points[LIST_CHUNK]
    cdef intp_t i = tree.nodes[node].first_sample, n, k
    memcpy(lo, X + i * D, D * sizeof(float64_t))
    memcpy(lo + D, X + i * D, D * sizeof(float64_t))
    i = tree.sample_next[i]
    while i != TREE_LEAF:
        n = _gather(tree, &i, points, X, D)
        for k in range(n):
            _include(lo, lo + D, X + points[k] * D, D)


cdef void rebuild_row(MondrianTree tree, intp_t node, const float64_t* rows,
                      float64_t* out) noexcept nogil:
    """The statistics row of ``node`` summed into ``out`` from the rows ``rows`` of the
    points below it: a leaf's whole list (any length, in list order), else the subtree of a
    node holding fewer than ``box_min_samples`` points."""
    cdef intp_t points[BOX_POINTS_MAX]
    cdef intp_t n, i, c, S = tree.value_stride
    if tree.nodes[node].left_child == TREE_LEAF:
        for c in range(S):
            out[c] = 0.0
        i = tree.nodes[node].first_sample
        while i != TREE_LEAF:
            n = _gather(tree, &i, points, rows, S)
            mf_add_rows(out, rows, S, points, n)  # (vectorised: the same chain per column)
        return
    n = subtree_points(tree, node, points, BOX_POINTS_MAX)
    points_row(rows, S, points, n, out)


cdef intp_t breadth_first(MondrianTree tree, intp_t* queue) noexcept nogil:
    """Write every node id to ``queue`` (``node_count`` entries) breadth first from the
    root, so that each parent comes before its children; return their number."""
    cdef intp_t head = 0, tail = 1, j
    queue[0] = 0
    while head < tail:
        j = queue[head]
        head += 1
        if tree.nodes[j].left_child != TREE_LEAF:
            queue[tail] = tree.nodes[j].left_child
            queue[tail + 1] = tree.nodes[j].right_child
            tail += 2
    return tail


cdef int all_values(MondrianTree tree, float64_t* out, intp_t* queue) except -1 nogil:
    """``MondrianTree._all_values``: every node's statistics row into ``out``."""
    cdef intp_t S = tree.value_stride, n = tree.node_count, tail, j, k, c
    cdef intp_t lc, i
    cdef bint ordered = True
    cdef float64_t* val
    cdef const float64_t* left
    cdef const float64_t* right
    cdef const float64_t* row
    if n == 0 or S == 0:
        return 0
    if not tree.lean_values:
        memcpy(out, tree.value, n * S * sizeof(float64_t))
        return 0
    # Children after their parent in id order (a batch-grown tree; an online one until a
    # parent is inserted above a node): the nodes in reverse id order, sequential reads;
    # else breadth first (parents before children), reversed.
    for j in range(n):
        if tree.nodes[j].left_child != TREE_LEAF and (
                tree.nodes[j].left_child <= j or tree.nodes[j].right_child <= j):
            ordered = False
            break
    tail = n if ordered else breadth_first(tree, queue)
    for k in range(tail - 1, -1, -1):
        j = k if ordered else queue[k]
        if ordered and j >= ROW_PREFETCH_AHEAD:
            # The rows of the leaves' points are scattered in the store: request the
            # first one a few nodes early (a hint: no effect on any value).
            i = tree.nodes[j - ROW_PREFETCH_AHEAD].first_sample
            if i != TREE_LEAF:
                mf_prefetch_span(tree.rows_ptr + i * S, S * sizeof(float64_t))
                MONDRIAN_TREE_PREFETCH(tree.sample_next + i)
        val = out + S * j
        if tree.box_slot[j] >= 0:
            memcpy(val, tree.value + S * tree.box_slot[j], S * sizeof(float64_t))
            continue
        lc = tree.nodes[j].left_child
        if lc == TREE_LEAF:
            for c in range(S):
                val[c] = 0.0
            i = tree.nodes[j].first_sample
            while i != TREE_LEAF:
                row = tree.rows_ptr + i * S
                for c in range(S):
                    val[c] += row[c]
                i = tree.sample_next[i]
            continue
        left = out + S * lc
        right = out + S * tree.nodes[j].right_child
        for c in range(S):
            val[c] = left[c] + right[c]
    return 0


cdef int all_boxes(MondrianTree tree, float64_t* out, intp_t* queue) except -1 nogil:
    """``MondrianTree._all_boxes``: every node's box into ``out``."""
    cdef intp_t D = tree.n_features, n = tree.node_count, tail, j, k, d
    cdef intp_t lc, i
    cdef float64_t* lo
    cdef float64_t* hi
    cdef const float64_t* left
    cdef const float64_t* right
    if n == 0:
        return 0
    tail = breadth_first(tree, queue)
    for k in range(tail - 1, -1, -1):
        j = queue[k]
        lo = out + 2 * D * j
        hi = lo + D
        if tree.box_slot[j] >= 0:
            memcpy(lo, tree.bounds + 2 * D * tree.box_slot[j], 2 * D * sizeof(float64_t))
            continue
        lc = tree.nodes[j].left_child
        if lc == TREE_LEAF:
            i = tree.nodes[j].first_sample
            if i == TREE_LEAF:
                for d in range(D):
                    lo[d] = INFINITY
                    hi[d] = -INFINITY
                continue
            memcpy(lo, tree.points_ptr + i * D, D * sizeof(float64_t))
            memcpy(hi, tree.points_ptr + i * D, D * sizeof(float64_t))
            i = tree.sample_next[i]
            while i != TREE_LEAF:
                _include(lo, hi, tree.points_ptr + i * D, D)
                i = tree.sample_next[i]
            continue
        # A small internal node: the union of its children's boxes (min/max of the same
        # points, so the same values).
        left = out + 2 * D * lc
        right = out + 2 * D * tree.nodes[j].right_child
        for d in range(D):
            lo[d] = left[d] if left[d] < right[d] else right[d]
            hi[d] = left[D + d] if left[D + d] > right[D + d] else right[D + d]
    return 0


cdef tuple derived(MondrianTree tree, const float64_t* xp, intp_t n_stored,
                   object rows_object):
    """``MondrianTree.derived_arrays`` on the store ``xp`` (``n_stored`` rows); without
    statistics (a ``(node_count, 0)`` value array) when ``rows_object`` is None."""
    if tree.n_samples_seen > n_stored:
        raise ValueError("the store holds fewer points than the tree refers to")
    cdef intp_t n = tree.node_count, D = tree.n_features
    cdef intp_t S = 0 if rows_object is None else tree.value_stride
    cdef const float64_t[:, ::1] rows = (np.zeros((0, 0)) if rows_object is None
                                         else rows_object)
    bounds = np.empty((n, 2, D), dtype=np.float64)
    value = np.zeros((n, S), dtype=np.float64)
    counts = np.full(n, TREE_UNDEFINED, dtype=np.intp)
    parent = np.full(n, TREE_UNDEFINED, dtype=np.intp)
    order = np.empty(n, dtype=np.intp)
    cdef float64_t[:, :, ::1] b = bounds
    cdef float64_t[:, ::1] v = value
    cdef intp_t[::1] cnt = counts
    cdef intp_t[::1] par = parent
    cdef intp_t[::1] queue = order
    cdef const float64_t* rp = &rows[0, 0] if S and rows.shape[0] else NULL
    cdef intp_t head = 0, tail = 0, j, i, lc, r, d, k
    cdef float64_t* lo
    cdef float64_t* hi
    if n == 0:
        return bounds, value, counts, parent
    with nogil:
        # Breadth-first order: every parent comes before its children.
        queue[0] = 0
        par[0] = TREE_LEAF
        tail = 1
        while head < tail:
            j = queue[head]
            head += 1
            lc = tree.nodes[j].left_child
            if lc != TREE_LEAF:
                r = tree.nodes[j].right_child
                if not (0 <= lc < n and 0 <= r < n and tail + 2 <= n):
                    break  # not a tree: the caller sees unreached nodes
                par[lc] = j
                par[r] = j
                queue[tail] = lc
                queue[tail + 1] = r
                tail += 2
        for k in range(tail - 1, -1, -1):
            j = queue[k]
            lo = &b[j, 0, 0]
            hi = &b[j, 1, 0]
            lc = tree.nodes[j].left_child
            if lc == TREE_LEAF:
                cnt[j] = 0
                for d in range(D):
                    lo[d] = INFINITY
                    hi[d] = -INFINITY
                i = tree.nodes[j].first_sample
                while i != TREE_LEAF and cnt[j] < tree.n_samples_seen:
                    if cnt[j] == 0:
                        memcpy(lo, xp + i * D, D * sizeof(float64_t))
                        memcpy(hi, xp + i * D, D * sizeof(float64_t))
                        if S:
                            memcpy(&v[j, 0], rp + i * S, S * sizeof(float64_t))
                    else:
                        _include(lo, hi, xp + i * D, D)
                        _add_row(&v[j, 0], rp + i * S, S)
                    cnt[j] += 1
                    i = tree.sample_next[i]
                continue
            r = tree.nodes[j].right_child
            cnt[j] = cnt[lc] + cnt[r]
            for d in range(D):
                lo[d] = b[lc, 0, d] if b[lc, 0, d] < b[r, 0, d] else b[r, 0, d]
                hi[d] = b[lc, 1, d] if b[lc, 1, d] > b[r, 1, d] else b[r, 1, d]
            for d in range(S):
                v[j, d] = v[lc, d] + v[r, d]
    return bounds, value, counts, parent


# ---------------------------------------------------------------------------- views


cdef object leaf_assignment(MondrianTree tree):
    """``MondrianTree.leaf_sample_assignment``."""
    out = np.full(tree.n_samples_seen, TREE_LEAF, dtype=np.intp)
    cdef intp_t[::1] assign = out
    cdef intp_t j, i
    for j in range(tree.node_count):
        if tree.nodes[j].left_child == TREE_LEAF:
            i = tree.nodes[j].first_sample
            while i != TREE_LEAF:
                assign[i] = j
                i = tree.sample_next[i]
    return out


cdef object node_depths(MondrianTree tree):
    """``MondrianTree.node_depths``."""
    out = np.zeros(tree.node_count, dtype=np.intp)
    cdef intp_t[::1] depth = out
    cdef intp_t top = 0, j
    if tree.node_count == 0:
        return out
    stack = np.empty(tree.node_count, dtype=np.intp)
    cdef intp_t[::1] st = stack
    st[0] = 0
    top = 1
    while top > 0:
        top -= 1
        j = st[top]
        if tree.nodes[j].left_child != TREE_LEAF:
            depth[tree.nodes[j].left_child] = depth[j] + 1
            depth[tree.nodes[j].right_child] = depth[j] + 1
            st[top] = tree.nodes[j].left_child
            st[top + 1] = tree.nodes[j].right_child
            top += 2
    return out


cdef object every_value(MondrianTree tree):
    """``MondrianTree._full_value_array``."""
    out = np.zeros((tree.node_count, tree.value_stride), dtype=np.float64)
    if not (tree.node_count and tree.value_stride):
        return out
    if tree.lean_values:
        check_points(tree)
    queue = np.empty(tree.node_count, dtype=np.intp)
    cdef intp_t[::1] q = queue
    cdef float64_t* o = <float64_t*>cnp.PyArray_DATA(out)
    with nogil:
        all_values(tree, o, &q[0])
    return out


cdef object every_box(MondrianTree tree):
    """``MondrianTree.bounds_array``."""
    cdef intp_t n = tree.node_count, D = tree.n_features, j
    if tree.box_min_samples > 0 and n:
        check_points(tree)
        out = derived(tree, tree.points_ptr, tree.points_rows, None)[0]
    else:
        out = np.empty((n, 2, D), dtype=np.float64)
    cdef float64_t[:, :, ::1] b = out
    for j in range(n):
        if tree.box_slot[j] >= 0:
            memcpy(&b[j, 0, 0], tree.bounds + 2 * D * tree.box_slot[j],
                   2 * D * sizeof(float64_t))
    return out


cdef dict memory_usage(MondrianTree tree):
    """``MondrianTree.memory_usage``: bytes held by ``tree``, by buffer."""
    cdef intp_t n = tree.node_count
    cdef intp_t spare = tree.capacity - n
    cdef intp_t row = tree.value_stride * sizeof(float64_t)
    cdef intp_t box = 2 * tree.n_features * sizeof(float64_t)
    # Lean values: rows only for the nodes with a stored box, in their slots.
    if tree.lean_values:
        box += row
    out = {
        "nodes": n * sizeof(Node),
        "box_slots": n * sizeof(int32_t),
        "bounds": tree.box_count * 2 * tree.n_features * sizeof(float64_t),
        "value": (tree.box_count if tree.lean_values else n) * row,
        "sample_next": tree.n_samples_seen * sizeof(intp_t),
    }
    out["total"] = sum(out.values())
    out["reserved"] = (
        spare * (sizeof(Node) + sizeof(int32_t) + (0 if tree.lean_values else row))
        + (tree.box_capacity - tree.box_count) * box
        + (tree.sample_capacity - tree.n_samples_seen) * sizeof(intp_t)
    )
    return out
