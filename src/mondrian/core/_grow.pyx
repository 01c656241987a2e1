"""Batch growth of a Mondrian tree: sample a Mondrian block on a set of stored points.

A builder in the sense of scikit-learn's trees: it writes a :class:`~mondrian.core._tree.
MondrianTree` through the storage primitives the tree declares (new nodes, box slots, leaf
lists, cuts) and owns none of its buffers. Online extension (``mondrian.core._extend``) calls it
to grow a new subtree or to regrow a leaf that stopped being paused; the node operations of
growth below (the pause rule, leaf lists, cuts, the growth stack) serve every builder, the
density's full-cell trees and the forgetting of points too.
"""

from libc.stdlib cimport free
from libc.string cimport memcpy

from mondrian.core._box_loops cimport mf_partition_boxes, mf_rows_box
from mondrian.core._random cimport rng_exponential
from mondrian.core._tree cimport (
    TREE_LEAF,
    TREE_PAUSED,
    Node,
    _add_row,
    _draw_cut,
    _realloc,
    _side_lengths,
    reset_leaf,
)

cdef enum:
    # Floats of the growth stack's box buffer kept between calls (32 KiB).
    GROW_BOXES_KEPT = 4096


cdef int grow_tree(MondrianTree tree, intp_t node, intp_t* idx, intp_t start, intp_t end,
                   float64_t tau_parent, const float64_t* X,
                   const float64_t* rows) except -1 nogil:
    """Sample a Mondrian block on ``idx[start:end]`` into the slot ``node`` (section 1.2).

    The slot's parent link is left as the caller set it. ``idx[start:end]`` is partitioned
    in place. Cuts are born after ``tau_parent`` and before the lifetime. Each node's box
    is computed from its points, and kept only if it holds ``box_min_samples`` or more.
    """
    cdef intp_t D = tree.n_features
    cdef intp_t S = tree.value_stride
    cdef intp_t top = 1
    cdef intp_t j, k, d, i, mid, left, first
    cdef float64_t* lo
    cdef float64_t* hi
    cdef float64_t* val
    cdef float64_t* sides = tree.scratch
    cdef float64_t* box_scratch = tree.scratch + 3 * D
    cdef float64_t linear_dim, t, threshold
    cdef StackRecord rec
    cdef bint fresh = True

    start_stack(&tree.grow_stack, &tree.grow_stack_capacity, node, start, end, tau_parent)

    while top > 0:
        top -= 1
        rec = tree.grow_stack[top]
        j = rec.node
        lo = tree._box_target(j, rec.end - rec.start, box_scratch)
        hi = lo + D
        val = tree._value_target(j, tree.row_scratch)
        first = idx[rec.start]
        if fresh:  # the first record: its box from its points
            mf_rows_box(X, D, idx + rec.start, rec.end - rec.start, lo)
            fresh = False
        elif lo == box_scratch:  # not kept: read where the parent's partition wrote it
            lo = tree.grow_boxes + 2 * D * top
            hi = lo + D
        else:
            memcpy(lo, tree.grow_boxes + 2 * D * top, 2 * D * sizeof(float64_t))
        if S > 0:
            memcpy(val, rows + first * S, S * sizeof(float64_t))
        for k in range(rec.start + 1, rec.end):
            i = idx[k]
            _add_row(val, rows + i * S, S)
        reset_leaf(tree, j, rec.end - rec.start)

        linear_dim = _side_lengths(lo, hi, sides, D)
        if linear_dim <= 0.0 or should_pause(tree, j, val):
            tree.nodes[j].feature = TREE_PAUSED
            make_leaf_list(tree, j, idx, rec.start, rec.end)
            continue
        t = rec.tau_parent + rng_exponential(&tree.rng, linear_dim)
        if not t < tree.lifetime:
            make_leaf_list(tree, j, idx, rec.start, rec.end)
            continue
        d = _draw_cut(&tree.rng, lo, hi, sides, D, linear_dim, &threshold)
        if top + 2 > tree.grow_boxes_capacity:  # (lo is not read once the cut is drawn)
            _realloc(<void**>&tree.grow_boxes, max(8, 2 * (top + 2)) * 2 * D,
                     sizeof(float64_t))
            tree.grow_boxes_capacity = max(8, 2 * (top + 2))
        mid = mf_partition_boxes(idx, rec.start, rec.end, X, D, d, threshold,
                                 tree.grow_boxes + 2 * D * (top + 1),
                                 tree.grow_boxes + 2 * D * top)
        left = split_node(tree, j, d, threshold, t)
        top = push_children(tree, top, left, rec.start, mid, rec.end, t)
    # The children's boxes are scratch of this call. The online extension grows a few small
    # subtrees per call: a small buffer is kept for the next one (freed with the tree), a
    # large one (a batch fit's) is freed now.
    if tree.grow_boxes_capacity * 2 * D > GROW_BOXES_KEPT:
        free(tree.grow_boxes)
        tree.grow_boxes = NULL
        tree.grow_boxes_capacity = 0
    return 0


# ---------------------------------------------------------------------------- node operations


cdef int start_stack(StackRecord** stack, intp_t* capacity, intp_t node, intp_t start,
                     intp_t end, float64_t tau_parent) except -1 nogil:
    """Make ``stack`` hold one record: ``node`` with the points ``[start, end)``."""
    if capacity[0] < 8:
        _realloc(<void**>stack, 8, sizeof(StackRecord))
        capacity[0] = 8
    stack[0][0].node = node
    stack[0][0].start = start
    stack[0][0].end = end
    stack[0][0].tau_parent = tau_parent
    return 0


cdef bint should_pause(MondrianTree tree, intp_t node, const float64_t* val) noexcept nogil:
    """Pause rule of section 3.1: too few points, or pure statistics when asked (``val``:
    the leaf's statistics row, stored or rebuilt).

    Sums run over the read columns in their order (the sorted classes), so that a
    weighted count has the same bits whatever order the classes arrived in.
    """
    cdef intp_t k, nonzero = 0
    cdef float64_t count = 0.0
    if tree.count_columns == 0:
        count = tree.nodes[node].n_node_samples
    else:
        for k in range(tree.n_columns if tree.count_columns < 0 else tree.count_columns):
            count += val[tree.columns[k]]
    if count < tree.min_samples_split:
        return True
    if tree.pause_pure:
        for k in range(tree.n_columns):
            if val[tree.columns[k]] != 0.0:
                nonzero += 1
                if nonzero > 1:
                    return False
        return True
    return False


cdef int make_leaf_list(MondrianTree tree, intp_t node, intp_t* idx, intp_t start,
                        intp_t end) except -1 nogil:
    """Record the points ``idx[start:end]`` as the content of leaf ``node``."""
    cdef intp_t k
    tree.nodes[node].first_sample = idx[start]
    if tree.undo.on:
        for k in range(start, end):
            tree._log_sample(idx[k])
    for k in range(start, end - 1):
        tree.sample_next[idx[k]] = idx[k + 1]
    tree.sample_next[idx[end - 1]] = TREE_LEAF
    return 0


cdef intp_t split_node(MondrianTree tree, intp_t node, intp_t feature, float64_t threshold,
                       float64_t split_time) except -1 nogil:
    """Cut ``node`` and append its two children; returns the left one (the right one
    follows it). Buffers may move."""
    cdef intp_t left = tree._new_node()
    cdef intp_t right = tree._new_node()
    cdef Node* nd = &tree.nodes[node]
    nd.feature = feature
    nd.threshold = threshold
    nd.split_time = split_time
    nd.left_child = left
    nd.right_child = right
    tree.nodes[left].parent = node
    tree.nodes[right].parent = node
    return left


cdef intp_t push_children(MondrianTree tree, intp_t top, intp_t left, intp_t start,
                          intp_t mid, intp_t end, float64_t split_time) except -1 nogil:
    """Push the children ``left`` (points ``[start, mid)``) and ``left + 1`` (``[mid,
    end)``) on the growth stack, left on top; returns the new stack size."""
    cdef StackRecord* rec
    if top + 2 > tree.grow_stack_capacity:
        _realloc(<void**>&tree.grow_stack, max(8, 2 * (top + 2)), sizeof(StackRecord))
        tree.grow_stack_capacity = max(8, 2 * (top + 2))
    rec = tree.grow_stack + top
    rec[0].node = left + 1
    rec[0].start = mid
    rec[0].end = end
    rec[0].tau_parent = split_time
    rec[1].node = left
    rec[1].start = start
    rec[1].end = mid
    rec[1].tau_parent = split_time
    return top + 2
