"""New trees from a Mondrian tree: an exact copy, a copy pruned at a lower lifetime, and the
same tree over a store shifted by an offset (merging the stores of two shards).

Each writes the copy's storage directly (``memcpy`` of the node structs, boxes, statistics and
leaf lists), through the declarations of :mod:`mondrian.core._tree`.
"""

from libc.stdint cimport int32_t
from libc.string cimport memcpy, memset

import numpy as np

from mondrian.core._tree cimport TREE_LEAF, TREE_UNDEFINED, Node, _realloc, stored_row
from mondrian.core._typedefs cimport float64_t


cdef MondrianTree tree_pruned(MondrianTree tree, float64_t lifetime):
    """``MondrianTree.pruned``: a new tree, ``tree`` restricted to ``lifetime``."""
    if not 0 <= lifetime <= tree.lifetime:
        raise ValueError(f"lifetime must be in [0, {tree.lifetime}], got {lifetime}")
    # type(tree): subclasses (e.g. the density's full-cell trees) prune into their own kind.
    cdef MondrianTree out = type(tree)(tree.n_features, tree.value_stride, lifetime,
                                       tree.min_samples_split, tree.pause_pure, 0,
                                       tree.box_min_samples, tree.lean_values)
    out.rng = tree.rng
    out.count_columns = tree.count_columns
    out._set_columns(tree.columns, tree.n_columns)
    out._attach(tree.points_owner, tree.points_ptr, tree.points_rows)
    out._attach_rows(tree.rows_owner, tree.rows_ptr, tree.rows_rows, tree.rows_stride)
    if tree.node_count == 0:
        return out
    cdef intp_t D = tree.n_features, S = tree.value_stride
    cdef intp_t j, new, k, top, last, i
    cdef bint cut
    new_id = np.full(tree.node_count, TREE_LEAF, dtype=np.intp)
    cdef intp_t[::1] ids = new_id
    order = np.empty(tree.node_count, dtype=np.intp)
    cdef intp_t[::1] queue = order
    out._resize(tree.node_count)
    out._ensure_samples(tree.n_samples_seen)
    # Breadth-first copy of the kept nodes.
    queue[0] = 0
    top = 1
    k = 0
    while k < top:
        j = queue[k]
        k += 1
        new = out._new_node()
        ids[j] = new
        memcpy(&out.nodes[new], &tree.nodes[j], sizeof(Node))
        # A kept node holds the same points (a new leaf: all those below it), so the
        # same box; it keeps it where this tree does.
        if tree.box_slot[j] >= 0:
            if out.box_slot[new] < 0:
                out._new_box(new)
            memcpy(out.bounds + 2 * D * out.box_slot[new],
                   tree.bounds + 2 * D * tree.box_slot[j], 2 * D * sizeof(float64_t))
        # (the same statistics: stored where this tree stores them)
        if S > 0 and stored_row(tree, j) != NULL:
            memcpy(<float64_t*>stored_row(out, new), stored_row(tree, j),
                   S * sizeof(float64_t))
        if tree.nodes[j].parent != TREE_LEAF:
            out.nodes[new].parent = ids[tree.nodes[j].parent]
        cut = tree.nodes[j].left_child != TREE_LEAF and tree.nodes[j].split_time < lifetime
        if cut:
            queue[top] = tree.nodes[j].left_child
            queue[top + 1] = tree.nodes[j].right_child
            top += 2
            continue
        # A leaf of the pruned tree: every stored point below j, in one list.
        out.nodes[new].left_child = TREE_LEAF
        out.nodes[new].right_child = TREE_LEAF
        out.nodes[new].threshold = TREE_UNDEFINED
        out.nodes[new].split_time = lifetime
        if tree.nodes[j].left_child != TREE_LEAF:
            # A dropped cut: the leaf expired at `lifetime`, not paused (a kept leaf
            # keeps its feature, TREE_PAUSED if it is paused).
            out.nodes[new].feature = TREE_UNDEFINED
        out.nodes[new].first_sample = TREE_LEAF
        last = TREE_LEAF
        for i in subtree_samples(tree, j):
            if last == TREE_LEAF:
                out.nodes[new].first_sample = i
            else:
                out.sample_next[last] = i
            last = i
        if last != TREE_LEAF:
            out.sample_next[last] = TREE_LEAF
    # Children ids, now that every kept node has its new id.
    for k in range(top):
        j = queue[k]
        new = ids[j]
        if out.nodes[new].left_child != TREE_LEAF:
            out.nodes[new].left_child = ids[tree.nodes[j].left_child]
            out.nodes[new].right_child = ids[tree.nodes[j].right_child]
    return out


cdef int tree_shift_samples(MondrianTree tree, intp_t offset) except -1:
    """``MondrianTree.shift_samples``: add ``offset`` to every store index of ``tree``."""
    if offset < 0:
        raise ValueError(f"offset must be non-negative, got {offset}")
    cdef intp_t n = tree.n_samples_seen, i, j
    old = np.empty(n, dtype=np.intp)
    cdef intp_t[::1] nxt = old
    for i in range(n):
        nxt[i] = tree.sample_next[i]
    tree._ensure_samples(n + offset)
    memset(tree.sample_next, 0xFF, (n + offset) * sizeof(intp_t))
    for i in range(n):
        if nxt[i] != TREE_LEAF:
            tree.sample_next[i + offset] = nxt[i] + offset
    for j in range(tree.node_count):
        if tree.nodes[j].first_sample != TREE_LEAF:
            tree.nodes[j].first_sample += offset
    tree._attach(None, NULL, 0)  # its points moved: the new store must be attached
    tree._attach_rows(None, NULL, 0, 0)
    return 0


cdef list subtree_samples(MondrianTree tree, intp_t node):
    """Stored points below ``node`` (leaf lists of its subtree)."""
    out = []
    stack = [node]
    cdef intp_t j, i
    while stack:
        j = stack.pop()
        if tree.nodes[j].left_child == TREE_LEAF:
            i = tree.nodes[j].first_sample
            while i != TREE_LEAF:
                out.append(i)
                i = tree.sample_next[i]
        else:
            stack.append(tree.nodes[j].right_child)
            stack.append(tree.nodes[j].left_child)
    return out


cdef MondrianTree tree_copy(MondrianTree tree):
    """``MondrianTree._copy``: an independent copy of ``tree``, by ``memcpy``."""
    cdef MondrianTree out = type(tree).__new__(
        type(tree), tree.n_features, tree.value_stride, tree.lifetime,
        tree.min_samples_split, tree.pause_pure, 0, tree.box_min_samples, tree.lean_values)
    cdef intp_t n = tree.node_count, m = tree.n_samples_seen, b = tree.box_count
    cdef intp_t S = tree.value_stride
    out.count_columns = tree.count_columns
    out._set_columns(tree.columns, tree.n_columns)
    out._attach(tree.points_owner, tree.points_ptr, tree.points_rows)
    out._attach_rows(tree.rows_owner, tree.rows_ptr, tree.rows_rows, tree.rows_stride)
    if b:
        _realloc(<void**>&out.bounds, b * 2 * tree.n_features, sizeof(float64_t))
        memcpy(out.bounds, tree.bounds, b * 2 * tree.n_features * sizeof(float64_t))
        if tree.lean_values and S:
            _realloc(<void**>&out.value, b * S, sizeof(float64_t))
            memcpy(out.value, tree.value, b * S * sizeof(float64_t))
        out.box_capacity = out.box_count = b
    if n == 0:
        out._resize(1)
    else:
        # Exactly n nodes, every byte written by memcpy (no zeroing pass).
        _realloc(<void**>&out.nodes, n, sizeof(Node))
        _realloc(<void**>&out.box_slot, n, sizeof(int32_t))
        memcpy(out.nodes, tree.nodes, n * sizeof(Node))
        memcpy(out.box_slot, tree.box_slot, n * sizeof(int32_t))
        if S and not tree.lean_values:
            _realloc(<void**>&out.value, n * S, sizeof(float64_t))
            memcpy(out.value, tree.value, n * S * sizeof(float64_t))
        out.capacity = n
    out.node_count = n
    if m:
        _realloc(<void**>&out.sample_next, m, sizeof(intp_t))
        memcpy(out.sample_next, tree.sample_next, m * sizeof(intp_t))
        out.sample_capacity = m
        out.n_samples_seen = m
    out.rng = tree.rng
    return out
