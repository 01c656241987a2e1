"""Batch growth of a Mondrian tree: sample a Mondrian block on a set of stored points.

A builder in the sense of scikit-learn's trees: it writes a :class:`~mondrian.core._tree.
MondrianTree` through the storage primitives the tree declares (new nodes, box slots, leaf
lists, cuts) and owns none of its buffers. Online extension (``mondrian.core._extend``) calls it
to grow a new subtree or to regrow a leaf that stopped being paused.
"""

from libc.stdlib cimport free
from libc.string cimport memcpy

from mondrian.core._box_loops cimport mf_partition_boxes, mf_rows_box
from mondrian.core._random cimport rng_exponential
from mondrian.core._tree cimport (
    TREE_PAUSED,
    MondrianTree,
    StackRecord,
    _add_row,
    _draw_cut,
    _realloc,
    _side_lengths,
    _start_stack,
)


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

    _start_stack(&tree.grow_stack, &tree.grow_stack_capacity, node, start, end, tau_parent)

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
        tree._reset_leaf(j, rec.end - rec.start)

        linear_dim = _side_lengths(lo, hi, sides, D)
        if linear_dim <= 0.0 or tree._should_pause(j, val):
            tree.nodes[j].feature = TREE_PAUSED
            tree._make_leaf_list(j, idx, rec.start, rec.end)
            continue
        t = rec.tau_parent + rng_exponential(&tree.rng, linear_dim)
        if not t < tree.lifetime:
            tree._make_leaf_list(j, idx, rec.start, rec.end)
            continue
        d = _draw_cut(&tree.rng, lo, hi, sides, D, linear_dim, &threshold)
        if top + 2 > tree.grow_boxes_capacity:  # (lo is not read once the cut is drawn)
            _realloc(<void**>&tree.grow_boxes, max(8, 2 * (top + 2)) * 2 * D,
                     sizeof(float64_t))
            tree.grow_boxes_capacity = max(8, 2 * (top + 2))
        mid = mf_partition_boxes(idx, rec.start, rec.end, X, D, d, threshold,
                                 tree.grow_boxes + 2 * D * (top + 1),
                                 tree.grow_boxes + 2 * D * top)
        left = tree._split(j, d, threshold, t)
        top = tree._push_children(top, left, rec.start, mid, rec.end, t)
    # The children's boxes are scratch of this call: the tree does not keep them.
    free(tree.grow_boxes)
    tree.grow_boxes = NULL
    tree.grow_boxes_capacity = 0
    return 0
