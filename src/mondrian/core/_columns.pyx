"""The statistics columns of a Mondrian tree: their width and the order the models read them.

A classifier keeps its classes' columns in arrival order with spare zero columns; a new class
takes a spare column and is inserted among the read columns at its sorted place
(:func:`set_trees_column_order`, O(classes) per tree); a classifier that outgrows its spare
columns rewrites every row wider (:func:`tree_set_value_columns`). Both are logged by an
open undo log (the old buffers are kept for a rollback).
"""

from libc.stdlib cimport free
from libc.string cimport memset

import numpy as np

from mondrian.core._tree cimport _realloc
from mondrian.core._typedefs cimport float64_t
from mondrian.core._undo cimport undo_keep_values, undo_save_columns


cdef int tree_set_value_columns(MondrianTree tree, intp_t new_stride,
                                const intp_t[::1] column_map) except -1:
    """``MondrianTree.set_value_columns`` (its docstring says what it does)."""
    cdef intp_t old = tree.value_stride, j, c, k
    if column_map.shape[0] != old:
        raise ValueError("column_map must have one entry per current column")
    if new_stride < 0:
        raise ValueError("new_stride must be non-negative")
    kept = np.asarray(column_map)
    kept = kept[kept >= 0]
    if (kept >= new_stride).any() or np.unique(kept).size != kept.size:
        raise ValueError("column_map must send the columns to distinct new columns")
    for k in range(tree.n_columns):
        if column_map[tree.columns[k]] < 0:
            raise ValueError("column_map drops a column that is read")
    cdef float64_t* new_value = NULL
    if tree.undo.on and tree.undo.n:
        # The logged statistics rows have the old width: the log cannot mix widths.
        raise RuntimeError("set_value_columns after changes under an open undo log")
    moved = np.asarray(column_map)[tree.column_order].astype(np.intp)
    # Lean values: the rows stored by box slot (the store's rows are rewritten too, and
    # attached again, by the caller: until then the rebuilt rows cannot be read).
    cdef intp_t capacity = tree.box_capacity if tree.lean_values else tree.capacity
    cdef intp_t used = tree.box_count if tree.lean_values else tree.node_count
    if new_stride > 0 and capacity > 0:
        _realloc(<void**>&new_value, capacity * new_stride, sizeof(float64_t))
        memset(new_value, 0, capacity * new_stride * sizeof(float64_t))
        for j in range(used):
            for c in range(old):
                if column_map[c] >= 0:
                    new_value[j * new_stride + column_map[c]] = tree.value[j * old + c]
    try:
        _realloc(<void**>&tree.row_scratch, max(new_stride, old, 1), sizeof(float64_t))
        undo_save_columns(tree)
    except MemoryError:
        free(new_value)
        raise
    if not undo_keep_values(tree, old, capacity):
        free(tree.value)
    tree.value = new_value
    tree.value_stride = new_stride
    cdef intp_t[::1] cols = moved
    tree._set_columns(&cols[0] if moved.shape[0] else NULL, moved.shape[0])
    return 0


cdef int set_trees_column_order(list trees, object order) except -1:
    """``set_column_order_trees``: the read columns ``order`` on every tree of ``trees``,
    the order checked once."""
    cdef MondrianTree tree
    cdef intp_t[::1] cols
    cdef intp_t stride
    if not trees:
        return 0
    order = np.ascontiguousarray(order, dtype=np.intp)
    stride = (<MondrianTree>trees[0]).value_stride
    for tree in trees:
        if tree.value_stride != stride:
            raise ValueError("the trees' statistics rows differ in width")
    if order.ndim != 1 or ((order < 0) | (order >= stride)).any() or (
            np.unique(order).size != order.size):
        raise ValueError(f"order must hold distinct columns below value_stride={stride}")
    cols = order
    for tree in trees:
        undo_save_columns(tree)
        tree._set_columns(&cols[0] if order.shape[0] else NULL, order.shape[0])
    return 0


cdef bint trivial_columns(MondrianTree tree) noexcept:
    """Whether the read columns of ``tree`` are its stored ones (identity over
    ``value_stride``)."""
    cdef intp_t k
    if tree.n_columns != tree.value_stride:
        return False
    for k in range(tree.n_columns):
        if tree.columns[k] != k:
            return False
    return True
