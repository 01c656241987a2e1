"""The builder of the density's full-cell trees: growth and online extension (section 10).

A builder in the sense of :mod:`mondrian.core._extend`: functions that write a tree through the
storage primitives of :class:`~mondrian.core._tree.MondrianTree`. ``FullCellTree`` (in
:mod:`mondrian.density._full_cell`) names :func:`extend_cells` as its builder in ``__cinit__``,
and the core's entry points (``extend``, ``extend_trees``, so ``fit``) call it through the
tree's ``builder`` field. The ``bounds`` row of every node holds its full cell, not the box of
its points.
"""

from libc.string cimport memcpy

from mondrian.core._extend cimport descend, prepend_to_leaf
from mondrian.core._grow cimport make_leaf_list, push_children, split_node, start_stack
from mondrian.core._random cimport rng_exponential
from mondrian.core._tree cimport (TREE_LEAF, StackRecord, _draw_cut, _partition, _side_lengths,
                                  reset_leaf)


cdef int _grow_cells(MondrianTree tree, intp_t node, intp_t* idx, intp_t start, intp_t end,
                     float64_t tau_parent, const float64_t* X) except -1 nogil:
    """Sample the Mondrian of the cell of ``node`` (already in ``bounds``) from ``tau_parent``
    to the lifetime, refining the cells that hold ``idx[start:end]``.

    ``idx[start:end]`` is partitioned in place.
    """
    cdef intp_t D = tree.n_features
    cdef intp_t top = 1
    cdef intp_t j, d, mid, left, right, count
    cdef float64_t* lo
    cdef float64_t* hi
    cdef float64_t* sides = tree.scratch
    cdef float64_t linear_dim, t, threshold
    cdef StackRecord rec

    start_stack(&tree.grow_stack, &tree.grow_stack_capacity, node, start, end, tau_parent)
    while top > 0:
        top -= 1
        rec = tree.grow_stack[top]
        j = rec.node
        count = rec.end - rec.start
        reset_leaf(tree, j, count)
        if count == 0:
            continue  # an empty cell: its density is already uniform
        lo = tree.bounds + 2 * D * j
        hi = lo + D
        linear_dim = _side_lengths(lo, hi, sides, D)
        t = rec.tau_parent + rng_exponential(&tree.rng, linear_dim)
        if not t < tree.lifetime:
            make_leaf_list(tree, j, idx, rec.start, rec.end)
            continue
        d = _draw_cut(&tree.rng, lo, hi, sides, D, linear_dim, &threshold)
        if not lo[d] < threshold < hi[d]:
            # No representable interior point: a cut would leave a child of zero volume.
            make_leaf_list(tree, j, idx, rec.start, rec.end)
            continue
        mid = _partition(idx, rec.start, rec.end, X, D, d, threshold)
        left = split_node(tree, j, d, threshold, t)
        right = left + 1
        # split_node may have moved the buffers.
        lo = tree.bounds + 2 * D * j
        memcpy(tree.bounds + 2 * D * left, lo, 2 * D * sizeof(float64_t))
        memcpy(tree.bounds + 2 * D * right, lo, 2 * D * sizeof(float64_t))
        tree.bounds[2 * D * left + D + d] = threshold
        tree.bounds[2 * D * right + d] = threshold
        top = push_children(tree, top, left, rec.start, mid, rec.end, t)
    return 0


cdef int extend_cells(MondrianTree tree, intp_t* idx, intp_t n, const float64_t* X,
                      const float64_t* rows) except -1 nogil:
    """Add the points ``idx[:n]`` (in the root cell) to the full-cell ``tree``; ``rows`` is
    unused. A ``Builder`` (``mondrian.core._tree``): ``n > 0``, leaf-list room made.

    An empty tree gets the root cell ``[0, 1]^D``, sampled on all the points. Otherwise the
    points go down through every cut; a leaf that held no point is sampled from its birth
    time with the points reaching it, and a leaf that held points (already refined to the
    lifetime) just records them. Under an open undo log (``MondrianTree.begin_undo``) every
    pre-existing node and leaf-list entry is logged before it is written.
    """
    cdef intp_t D = tree.n_features
    cdef intp_t top = 1
    cdef intp_t j, d, mid, count, root
    cdef StackRecord rec

    if tree.node_count == 0:
        root = tree._new_node()
        for d in range(D):
            tree.bounds[d] = 0.0
            tree.bounds[D + d] = 1.0
        return _grow_cells(tree, root, idx, 0, n, 0.0, X)

    start_stack(&tree.extend_stack, &tree.extend_stack_capacity, 0, 0, n, 0.0)
    while top > 0:
        top -= 1
        rec = tree.extend_stack[top]
        j = rec.node
        count = rec.end - rec.start
        # Every write below to a node that existed (its struct: counts, a regrown empty
        # cell) goes through the undo log, as in mondrian.core._extend.
        tree._log_node(j)
        if tree.nodes[j].left_child == TREE_LEAF:
            if tree.nodes[j].n_node_samples == 0:
                _grow_cells(tree, j, idx, rec.start, rec.end, rec.tau_parent, X)
            else:
                prepend_to_leaf(tree, j, idx, rec.start, rec.end)
                tree.nodes[j].n_node_samples += count
            continue
        tree.nodes[j].n_node_samples += count
        mid = _partition(idx, rec.start, rec.end, X, D, tree.nodes[j].feature,
                         tree.nodes[j].threshold)
        top = descend(tree, top, j, rec.start, mid, rec.end)
    return 0
