"""Exact forgetting: remove stored points from Mondrian trees (docs/algorithms.md, §13).

A tree fitted on a set of points ``D`` is the restriction of one Mondrian process to the
bounding boxes of ``D``. Restricting the same process to ``D' ⊂ D`` gives the tree of ``D'``:

* every box on the path of a removed point shrinks to the bounding box of what remains;
* a cut that no longer separates remaining points (one side of it is now empty) disappears,
  its node replaced by the child that keeps the points, which keeps its own split time;
* a node whose remaining points satisfy the pause rule becomes a paused leaf holding them all
  (its subtree is dropped: a fresh fit would pause there, and dropping a subtree to resample it
  later from its conditional law keeps the law);
* statistics rows lose the removed points' contribution rows.

:func:`forget_trees` does this in place for a batch of store indices (with the GIL released),
every write going through the tree's undo log when one is open, so an update that fails
part-way rolls back bit for bit. :func:`relocate_trees` (:mod:`mondrian.core._forget_store`,
re-exported here) then moves the store's last points into the places of the forgotten ones
(O(depth) per point and tree), so that the store stays dense. For one point, both first walk
its paths in a chunk of trees at once (:func:`mondrian.core._forget_store.warm_trees`): the
trees are cold, and the cache misses of several trees overlap. For many points (a call of
``bulk_min_points`` or more), their paths are walked together, level by level, and so are
the moves (:mod:`mondrian.core._forget_bulk`): the same writes, each node read once.
"""

from libc.math cimport INFINITY, isfinite, signbit
from libc.stdint cimport int32_t
from libc.stdlib cimport free, malloc, qsort
from libc.string cimport memcpy, memset

from mondrian.core._forget_store import relocate_trees  # noqa: F401 (re-exported)

from mondrian.core._forget_bulk cimport (
    WARM_SHARE,
    Arena,
    BulkCall,
    give,
    route_batch,
    unlink_by_links,
    unlink_dropped,
    take,
    walk_paths,
    warm_tree,
)
from mondrian.core._forget_call cimport (
    Lead,
    fails_pause_surely,
    prepare_call,
    release_call,
    tree_leads,
)
from mondrian.core._forget_store cimport (
    WARM_CHUNK,
    cmp_intp,
    fill_node_holes,
    fill_slot_holes,
    warm_trees,
)

from mondrian.core._box_loops cimport mf_rows_box
from mondrian.core._grow cimport make_leaf_list, should_pause
from mondrian.core._tree cimport (
    TREE_LEAF,
    TREE_PAUSED,
    TREE_UNDEFINED,
    MondrianTree,
    check_points,
    node_paused,
    node_row,
    points_box,
    stored_row,
    subtree_points,
)
from mondrian.core._typedefs cimport BOX_POINTS_MAX, float64_t, intp_t


cdef extern from *:
    void __builtin_prefetch(const void* address) noexcept nogil

__all__ = ["forget_trees", "relocate_trees"]

# Bits of the per-node marks of one call.
cdef enum:
    ON_PATH = 1  # logged, and on the path of a point whose contribution changed
    DEAD = 2     # removed from the tree (its record and box slot are free)
    CHANGED = 4  # its box may have changed (its parent's stored box is recomputed)
    FAILED = 8   # its points fail the pause rule (so do its ancestors': it is monotone)


cdef struct Work:
    # Scratch of one call on one tree.
    unsigned char* mark    # (node_count,) ON_PATH / DEAD bits (shared by the trees of a call)
    intp_t* order          # (node_count,) marked nodes in pre-order
    intp_t* stack          # (node_count,) scratch of the pre-order walk
    intp_t* free_slots     # box slots given back
    intp_t n_free
    intp_t free_cap
    intp_t n_dead
    intp_t* dead           # the removed nodes (n_dead of them)
    intp_t dead_cap
    intp_t n_marked        # nodes on the paths (ON_PATH)
    intp_t* points         # gather buffer of a subtree's points
    intp_t points_cap
    const float64_t* single  # the one point dropped by the call (its row of X), or NULL
    intp_t* open_bounds    # (2 D,) scratch of _shrink_box: bounds not attained yet
    float64_t* extreme     # (2 D,) scratch of _shrink_box: extremes of what remains
    bint nonneg            # every contribution row is non-negative (fails_pause_surely)
    const Lead* leads      # the rows' leads for fails_pause_surely, or NULL
    Arena* arena           # where the scratch comes from (NULL: malloc), with bounds for
    intp_t* kill_stack     # the growable buffers (and a stack for _kill_subtree) then


cdef void _free_work(Work* w) noexcept nogil:
    give(w.arena, w.order)
    give(w.arena, w.stack)
    give(w.arena, w.free_slots)
    give(w.arena, w.points)
    give(w.arena, w.dead)
    give(w.arena, w.open_bounds)
    give(w.arena, w.extreme)
    give(w.arena, w.kill_stack)


cdef int _oom() except -1 nogil:
    with gil:
        raise MemoryError("out of memory while forgetting points")


cdef int _push(intp_t** items, intp_t* n, intp_t* cap, intp_t value,
               const Arena* arena) except -1 nogil:
    """Append ``value`` to the growable array ``items[0][:n[0]]`` (from an arena: sized for
    every push already)."""
    cdef intp_t* grown
    if n[0] >= cap[0]:
        if arena != NULL:
            _oom()
        grown = <intp_t*>malloc(max(16, 2 * cap[0]) * sizeof(intp_t))
        if grown == NULL:
            _oom()
        if n[0]:
            memcpy(grown, items[0], n[0] * sizeof(intp_t))
        free(items[0])
        items[0] = grown
        cap[0] = max(16, 2 * cap[0])
    items[0][n[0]] = value
    n[0] += 1
    return 0


cdef int _give_slot(MondrianTree t, Work* w, intp_t slot) except -1 nogil:
    """Record ``slot`` as free (lean boxes: compacted at the end)."""
    return _push(&w.free_slots, &w.n_free, &w.free_cap, slot, w.arena)


cdef int _mark_dead(Work* w, intp_t j) except -1 nogil:
    w.mark[j] |= DEAD
    return _push(&w.dead, &w.n_dead, &w.dead_cap, j, w.arena)


cdef int _kill(MondrianTree t, Work* w, intp_t j) except -1 nogil:
    """Mark node ``j`` removed. Its record is not written (it becomes a hole); its box slot,
    if it has its own, is given back, its box and row logged first (the slot is reused)."""
    if w.mark[j] & DEAD:
        return 0
    t._log_node(j)
    _mark_dead(w, j)
    if t.box_min_samples > 0 and t.box_slot[j] >= 0:
        _give_slot(t, w, t.box_slot[j])
    return 0


cdef int _drop_small_slot(MondrianTree t, Work* w, intp_t j) except -1 nogil:
    """A node left with fewer than ``box_min_samples`` points stores no box (the invariant of
    lean boxes): give its slot back (``j`` is logged, being on a path)."""
    if t.box_min_samples > 0 and t.box_slot[j] >= 0 and \
            t.nodes[j].n_node_samples < t.box_min_samples:
        _give_slot(t, w, t.box_slot[j])
        t.box_slot[j] = -1
    return 0


cdef float64_t _linear_dim(const float64_t* box, intp_t D) noexcept nogil:
    cdef intp_t d
    cdef float64_t total = 0.0
    for d in range(D):
        total += box[D + d] - box[d]
    return total


cdef inline bint _same_bits(float64_t a, float64_t b) noexcept nogil:
    """Whether ``a`` and ``b`` are the same float (``==`` and the same sign: -0.0 is not 0.0)."""
    return a == b and signbit(a) == signbit(b)


cdef intp_t _close_bounds(const float64_t* lo, const float64_t* hi, intp_t D,
                          const float64_t* box, intp_t* open_bounds, intp_t n_open,
                          float64_t* extreme) noexcept nogil:
    """Close the open bounds of ``box`` (entry ``e``: its lower bound ``e < D`` or its upper
    ``e - D``) that the box ``[lo, hi]`` (a point: ``lo == hi``) attains; track the extremes of
    the others in ``extreme``. Returns how many stay open."""
    cdef intp_t k = 0, e
    cdef float64_t v
    while k < n_open:
        e = open_bounds[k]
        v = lo[e] if e < D else hi[e - D]
        if _same_bits(v, box[e]):
            n_open -= 1
            open_bounds[k] = open_bounds[n_open]
            continue
        if e < D:
            if v < extreme[e]:
                extreme[e] = v
        elif v > extreme[e]:
            extreme[e] = v
        k += 1
    return n_open


cdef intp_t _close_by_points(MondrianTree t, intp_t node, const float64_t* X,
                             const float64_t* box, Work* w, intp_t n_open) noexcept nogil:
    """:func:`_close_bounds` with the stored points below ``node`` (a leaf, or a node holding
    fewer than ``box_min_samples`` points: a shallow recursion), stopping as soon as no bound
    is open."""
    cdef intp_t i
    if t.nodes[node].left_child != TREE_LEAF:
        n_open = _close_by_points(t, t.nodes[node].left_child, X, box, w, n_open)
        if n_open > 0:
            n_open = _close_by_points(t, t.nodes[node].right_child, X, box, w, n_open)
        return n_open
    i = t.nodes[node].first_sample
    while i != TREE_LEAF and n_open > 0:
        n_open = _close_bounds(X + i * t.n_features, X + i * t.n_features, t.n_features, box,
                               w.open_bounds, n_open, w.extreme)
        i = t.sample_next[i]
    return n_open


cdef bint _shrink_box(MondrianTree t, Work* w, intp_t j, const float64_t* X) except -1 nogil:
    """The stored box of ``j`` after the call's one dropped point (``w.single``) left: only the
    bounds it attained can move, and one stays while a remaining point below ``j`` attains it
    (read in the children's stored boxes, or the few points of a child without one, stopping
    at the first): a few reads, not a pass over the subtree. A bound no point attains becomes
    the extreme of what remains, exact like a recount. Marks ``j`` CHANGED if the box changed;
    returns False (nothing written) when a new bound would be a zero, whose sign a recount
    takes from the order of the points (the caller recomputes the box then)."""
    cdef intp_t D = t.n_features, d, n_open = 0, k, e, c
    cdef float64_t* box = t.bounds + 2 * D * t.box_slot[j]
    cdef const float64_t* x = w.single
    cdef const float64_t* cb
    cdef bint stored
    for d in range(D):
        if _same_bits(x[d], box[d]):
            w.open_bounds[n_open] = d
            w.extreme[d] = INFINITY
            n_open += 1
        if _same_bits(x[d], box[D + d]):
            w.open_bounds[n_open] = D + d
            w.extreme[D + d] = -INFINITY
            n_open += 1
    if n_open == 0:
        return True
    if t.nodes[j].left_child == TREE_LEAF:
        n_open = _close_by_points(t, j, X, box, w, n_open)
    else:
        # The children's stored boxes first, then the points of the one on the path (just
        # read: in the cache), then those of the other.
        for k in range(6):
            c = t.nodes[j].left_child if k % 2 == 0 else t.nodes[j].right_child
            stored = t.box_min_samples == 0 or t.box_slot[c] >= 0
            if k < 2 and stored:
                cb = t.bounds + 2 * D * (t.box_slot[c] if t.box_min_samples > 0 else c)
                n_open = _close_bounds(cb, cb + D, D, box, w.open_bounds, n_open, w.extreme)
            elif k >= 2 and not stored and (w.mark[c] & ON_PATH != 0) == (k < 4):
                n_open = _close_by_points(t, c, X, box, w, n_open)
            if n_open == 0:
                break
    if n_open == 0:
        return True
    for k in range(n_open):
        e = w.open_bounds[k]
        if w.extreme[e] == 0.0 or not isfinite(w.extreme[e]):
            return False
    for k in range(n_open):
        e = w.open_bounds[k]
        box[e] = w.extreme[e]
    w.mark[j] |= CHANGED
    return True


cdef inline intp_t _gather_list(MondrianTree t, intp_t i, const float64_t* X, intp_t* out,
                                intp_t n, intp_t cap) noexcept nogil:
    """Append the list from ``i`` to ``out[n..cap)`` and return the new count, each point's
    row prefetched as it is met (the rows' misses overlap the walk of the links)."""
    cdef intp_t D = t.n_features, c
    while i != TREE_LEAF and n < cap:
        for c in range(0, D, 8):
            __builtin_prefetch(X + i * D + c)
        out[n] = i
        n += 1
        i = t.sample_next[i]
    return n


cdef inline intp_t _leftmost_leaf(MondrianTree t, intp_t j) noexcept nogil:
    while t.nodes[j].left_child != TREE_LEAF:
        j = t.nodes[j].left_child
    return j


cdef const float64_t* _box_of(MondrianTree t, intp_t node, const float64_t* X,
                              float64_t* scratch) noexcept nogil:
    """``t._node_box``'s box: the same points in the same order (leaves left to right), so
    the same bits, their rows prefetched during the walk of the lists."""
    cdef intp_t points[BOX_POINTS_MAX]
    cdef intp_t D = t.n_features, n = 0, j, up
    if t.box_slot[node] >= 0:
        return t.bounds + 2 * D * t.box_slot[node]
    j = _leftmost_leaf(t, node)
    while True:
        n = _gather_list(t, t.nodes[j].first_sample, X, points, n, BOX_POINTS_MAX)
        # The next leaf: up to the first ancestor entered from its left, then its right
        # subtree's leftmost leaf (none when ``node`` is reached first).
        while j != node and t.nodes[t.nodes[j].parent].left_child != j:
            j = t.nodes[j].parent
        if j == node:
            break
        up = t.nodes[j].parent
        j = _leftmost_leaf(t, t.nodes[up].right_child)
    if n > 0:
        mf_rows_box(X, D, points, n, scratch)
    else:
        points_box(X, D, points, n, scratch)
    return scratch


cdef int _fix_leaf(MondrianTree t, Work* w, intp_t j, const float64_t* X) except -1 nogil:
    """A leaf that lost points: its stored box recomputed from its list, and paused if its
    remaining points satisfy the pause rule (or all coincide), as a fresh fit would."""
    cdef intp_t D = t.n_features, i, d, n
    cdef float64_t* lo
    cdef const float64_t* box
    cdef const float64_t* row
    cdef const float64_t* x
    cdef float64_t* scratch = t.scratch + 5 * D
    cdef float64_t* old = t.scratch + 3 * D
    _drop_small_slot(t, w, j)
    if t.box_slot[j] >= 0 and w.single != NULL and _shrink_box(t, w, j, X):
        pass
    elif t.box_slot[j] >= 0:
        lo = t.bounds + 2 * D * t.box_slot[j]
        memcpy(old, lo, 2 * D * sizeof(float64_t))
        i = t.nodes[j].first_sample
        if t.nodes[j].n_node_samples > w.points_cap and w.arena == NULL:
            free(w.points)  # (an arena holds room for every point already)
            w.points_cap = 0
            w.points = <intp_t*>malloc(t.n_samples_seen * sizeof(intp_t))
            if w.points == NULL:
                _oom()
            w.points_cap = t.n_samples_seen
        if t.nodes[j].n_node_samples <= w.points_cap:
            # The list's rows by the vectorised loop (same order, same tie rule: same bits;
            # the rows are gathered by index, prefetched a chunk ahead).
            n = _gather_list(t, i, X, w.points, 0, w.points_cap)
            mf_rows_box(X, D, w.points, n, lo)
        else:
            x = X + i * D
            memcpy(lo, x, D * sizeof(float64_t))
            memcpy(lo + D, x, D * sizeof(float64_t))
            i = t.sample_next[i]
            while i != TREE_LEAF:
                x = X + i * D
                for d in range(D):
                    if x[d] < lo[d]:
                        lo[d] = x[d]
                    if x[d] > lo[D + d]:
                        lo[D + d] = x[d]
                i = t.sample_next[i]
        for d in range(2 * D):
            if lo[d] != old[d]:
                w.mark[j] |= CHANGED
                break
    else:
        w.mark[j] |= CHANGED  # (not stored: rebuilt when read, so its parent recomputes)
    if node_paused(&t.nodes[j]):
        return 0  # the pause rule is monotone: fewer points keep it
    box = _box_of(t, j, X, scratch)
    row = node_row(t, j, t.row_scratch)
    if _linear_dim(box, D) <= 0.0 or should_pause(t, j, row):
        t.nodes[j].feature = TREE_PAUSED
    elif not should_pause(t, j, row):
        w.mark[j] |= FAILED
    return 0


cdef int _kill_subtree(MondrianTree t, Work* w, intp_t j) except -1 nogil:
    """Remove every node below ``j`` (their records become holes)."""
    cdef intp_t* stack = w.kill_stack
    cdef intp_t top = 0, cap = t.node_count + 1 if stack != NULL else 0, c
    if t.nodes[j].left_child == TREE_LEAF:
        return 0
    try:
        _push(&stack, &top, &cap, t.nodes[j].left_child, w.arena)
        _push(&stack, &top, &cap, t.nodes[j].right_child, w.arena)
        while top > 0:
            top -= 1
            c = stack[top]
            if t.nodes[c].left_child != TREE_LEAF:
                _push(&stack, &top, &cap, t.nodes[c].left_child, w.arena)
                _push(&stack, &top, &cap, t.nodes[c].right_child, w.arena)
            _kill(t, w, c)
    finally:
        if stack != w.kill_stack:
            free(stack)
    return 0


cdef int _make_leaf(MondrianTree t, Work* w, intp_t j, int32_t feature) except -1 nogil:
    """Drop the subtree below ``j``, which becomes a leaf with an empty list (``feature``:
    TREE_UNDEFINED, or TREE_PAUSED for a paused leaf)."""
    _kill_subtree(t, w, j)
    t.nodes[j].left_child = TREE_LEAF
    t.nodes[j].right_child = TREE_LEAF
    t.nodes[j].feature = feature
    t.nodes[j].threshold = TREE_UNDEFINED
    t.nodes[j].split_time = t.lifetime
    t.nodes[j].first_sample = TREE_LEAF
    return 0


cdef int _empty_cell(MondrianTree t, Work* w, intp_t j) except -1 nogil:
    """Full cells: a cell left without points becomes an unexpanded leaf (its subtree is
    dropped), as a fit on the remaining points leaves it; its cell is unchanged."""
    return _make_leaf(t, w, j, TREE_UNDEFINED)


cdef int _to_paused_leaf(MondrianTree t, Work* w, intp_t j) except -1 nogil:
    """Make the internal node ``j`` a paused leaf holding every point below it; its subtree's
    nodes are removed."""
    cdef intp_t count = t.nodes[j].n_node_samples, n
    if count > w.points_cap:
        give(w.arena, w.points)
        w.points = <intp_t*>take(w.arena, count * sizeof(intp_t))
        if w.points == NULL:
            w.points_cap = 0
            _oom()
        w.points_cap = count
    n = subtree_points(t, j, w.points, count)
    _make_leaf(t, w, j, TREE_PAUSED)
    make_leaf_list(t, j, w.points, 0, n)
    return 0


cdef int _splice(MondrianTree t, Work* w, intp_t j, intp_t c) except -1 nogil:
    """Node ``j``'s cut no longer separates remaining points (its other child is empty):
    ``j`` takes the content of its child ``c`` (keeping its id and parent link), as the tree
    of the remaining points has ``c``'s cut, with ``c``'s split time, in ``j``'s place."""
    cdef intp_t D = t.n_features, S = t.value_stride
    cdef intp_t parent = t.nodes[j].parent, child
    t._log_node(c)
    if t.box_min_samples > 0:
        if t.box_slot[j] >= 0:
            _give_slot(t, w, t.box_slot[j])
        t.box_slot[j] = t.box_slot[c]  # (lean values: the row moves with the slot)
    else:  # every node stores its box in slot == id: copy it (and a row kept by slot)
        memcpy(t.bounds + 2 * D * j, t.bounds + 2 * D * c, 2 * D * sizeof(float64_t))
    if S > 0 and (not t.lean_values or t.box_min_samples == 0):
        memcpy(t.value + S * j, t.value + S * c, S * sizeof(float64_t))
    t.nodes[j] = t.nodes[c]
    t.nodes[j].parent = <int32_t>parent
    child = t.nodes[j].left_child
    if child != TREE_LEAF:
        t._log_node(child)
        t._log_node(t.nodes[j].right_child)
        t.nodes[child].parent = <int32_t>j
        t.nodes[t.nodes[j].right_child].parent = <int32_t>j
    # c's record and slot now belong to j: c is a hole, without a slot to give back. j's box
    # is c's (smaller than j's was), and j fails the pause rule iff c did.
    if t.box_min_samples > 0:
        t.box_slot[c] = -1
    w.mark[j] |= CHANGED | (w.mark[c] & FAILED)
    _mark_dead(w, c)
    return 0


cdef inline bint _unchanged_cut(MondrianTree t, Work* w, intp_t c) noexcept nogil:
    """Whether ``c`` is an internal node off every path of the call: it keeps its points, which
    fail the pause rule (it was cut), so its parent's fail it too (the rule is monotone) and
    its statistics row need not be rebuilt to know it."""
    return t.nodes[c].left_child != TREE_LEAF and not w.mark[c] & ON_PATH


cdef int _fix_internal(MondrianTree t, Work* w, intp_t j, const float64_t* X) except -1 nogil:
    """An internal node whose children both keep points: its stored box is the union of
    theirs (recomputed when one of them may have changed); it pauses, dropping its subtree,
    if its remaining points satisfy the rule (checked only when no child fails it)."""
    cdef intp_t D = t.n_features, d, left = t.nodes[j].left_child
    cdef intp_t right = t.nodes[j].right_child
    cdef float64_t* lo
    cdef const float64_t* a
    cdef const float64_t* b
    cdef const float64_t* row
    cdef float64_t v
    _drop_small_slot(t, w, j)
    if (w.mark[left] | w.mark[right]) & CHANGED:
        if t.box_slot[j] >= 0 and w.single != NULL and _shrink_box(t, w, j, X):
            pass
        elif t.box_slot[j] >= 0:
            lo = t.bounds + 2 * D * t.box_slot[j]
            for d in range(0, 2 * D, 8):  # (read after the walks below: loaded meanwhile)
                __builtin_prefetch(lo + d)
            __builtin_prefetch(lo + 2 * D - 1)
            a = _box_of(t, left, X, t.scratch + 3 * D)
            b = _box_of(t, right, X, t.scratch + 5 * D)
            for d in range(D):
                v = a[d] if a[d] < b[d] else b[d]
                if v != lo[d]:
                    lo[d] = v
                    w.mark[j] |= CHANGED
                v = a[D + d] if a[D + d] > b[D + d] else b[D + d]
                if v != lo[D + d]:
                    lo[D + d] = v
                    w.mark[j] |= CHANGED
        else:
            w.mark[j] |= CHANGED
    if (w.mark[left] | w.mark[right]) & FAILED or _unchanged_cut(t, w, left) \
            or _unchanged_cut(t, w, right):
        w.mark[j] |= FAILED
        return 0
    if w.nonneg and stored_row(t, j) == NULL \
            and fails_pause_surely(t, j, t.rows_ptr, w.leads):
        w.mark[j] |= FAILED  # (two of its points prove it: no sum of every row)
        return 0
    row = node_row(t, j, t.row_scratch)
    if should_pause(t, j, row):
        _to_paused_leaf(t, w, j)
    else:
        w.mark[j] |= FAILED
    return 0


cdef int _reserve(MondrianTree t, Work* w, Arena* arena) except -1 nogil:
    """Every growable buffer of ``w`` at its bound for ``t``, from ``arena`` (a call of
    :func:`mondrian.core._forget_commit.commit_forget`: nothing is allocated once ``t`` is
    written): one entry per box slot, node or stored point."""
    cdef intp_t D = t.n_features
    w.free_cap = t.box_count + 1
    w.dead_cap = t.node_count + 1
    w.points_cap = t.n_samples_seen + 1
    w.free_slots = <intp_t*>take(arena, w.free_cap * sizeof(intp_t))
    w.dead = <intp_t*>take(arena, w.dead_cap * sizeof(intp_t))
    w.points = <intp_t*>take(arena, w.points_cap * sizeof(intp_t))
    w.kill_stack = <intp_t*>take(arena, (t.node_count + 1) * sizeof(intp_t))
    w.order = <intp_t*>take(arena, (t.node_count + 1) * sizeof(intp_t))
    w.stack = <intp_t*>take(arena, (t.node_count + 1) * sizeof(intp_t))
    w.open_bounds = <intp_t*>take(arena, 2 * D * sizeof(intp_t))
    w.extreme = <float64_t*>take(arena, 2 * D * sizeof(float64_t))
    if w.free_slots == NULL or w.dead == NULL or w.points == NULL or w.kill_stack == NULL \
            or w.order == NULL or w.stack == NULL or w.open_bounds == NULL \
            or w.extreme == NULL:
        _oom()
    return 0


cdef intp_t _forget(MondrianTree t, const intp_t* idx, const float64_t* delta,
                    const BulkCall* bulk, const unsigned char* drop, intp_t n,
                    const float64_t* X, bint full_cells, unsigned char* mark,
                    Arena* arena) except -1 nogil:
    """Remove from ``t`` the stored points ``idx[k]`` with ``drop[k]``, and subtract the row
    ``delta[k]`` (``value_stride`` floats) from the statistics above every ``idx[k]``
    (``bulk``: what a call of ``bulk_min_points`` points or more shares between the trees,
    else NULL). Returns the number of path nodes, leaf-list entries and node slots visited (a
    measure of the work). ``mark``: ``node_count + 1`` zero bytes, zero again on return.
    ``arena``: the scratch (sized by :func:`mondrian.core._forget_commit.commit_forget`: no
    allocation can fail once the tree is written), or NULL for malloc."""
    cdef intp_t D = t.n_features, S = t.value_stride, steps = 0
    cdef intp_t k, j, c, top, n_order = 0, n_drop = 0, removed = 0, n_path = -1
    cdef intp_t* leaves = NULL
    cdef intp_t* dropped = NULL
    cdef intp_t* nonzero = NULL
    cdef intp_t* pred = NULL
    cdef Work w
    w.mark = mark
    w.order = NULL
    w.stack = NULL
    w.free_slots = NULL
    w.points = NULL
    w.dead = NULL
    w.single = NULL
    w.open_bounds = NULL
    w.extreme = NULL
    w.n_free = w.free_cap = w.n_dead = w.dead_cap = w.points_cap = w.n_marked = 0
    w.nonneg = bulk != NULL and bulk.nonneg_rows
    w.leads = tree_leads(t, bulk)
    w.arena = arena
    w.kill_stack = NULL
    if n == 0:
        return 0
    try:
        leaves = <intp_t*>take(arena, n * sizeof(intp_t))
        dropped = <intp_t*>take(arena, n * sizeof(intp_t))
        nonzero = <intp_t*>take(arena, (S + 1) * sizeof(intp_t))
        pred = <intp_t*>take(arena, (n + 1) * sizeof(intp_t))  # (for unlink_by_links)
        if leaves == NULL or dropped == NULL or nonzero == NULL or pred == NULL:
            _oom()
        if arena != NULL:  # (every buffer at its bound now: nothing grows after a write)
            _reserve(t, &w, arena)
        # 1. Down every path: counts and stored rows lose the points' contributions (many
        # points: walked together, level by level, each node read once).
        for k in range(n):
            if t.node_count == 0 or idx[k] >= t.n_samples_seen:
                with gil:
                    raise ValueError(f"store index {idx[k]} is not held by the tree")
            if drop[k]:
                dropped[n_drop] = idx[k]
                n_drop += 1
        if bulk != NULL:
            if n * WARM_SHARE >= t.n_samples_seen:  # (a large share of the tree is read)
                warm_tree(t)
            route_batch(t, idx, delta, bulk, drop, n, X, w.mark, ON_PATH, leaves, &w.n_marked,
                        arena)
        else:
            walk_paths(t, idx, delta, drop, n, X, w.mark, ON_PATH, leaves, &w.n_marked,
                       nonzero)
        # 2. The leaves' lists lose the dropped points.
        for k in range(1, n_drop):
            if dropped[k - 1] > dropped[k]:  # (the callers' indices come sorted)
                qsort(dropped, n_drop, sizeof(intp_t), cmp_intp)
                break
        if bulk != NULL and bulk.call_of != NULL and arena != NULL and not t.undo.on:
            # (A large share of the points: found by their predecessors, no list walked.)
            steps += unlink_by_links(t, idx, leaves, drop, n, bulk.call_of, pred, &removed)
        else:
            steps += unlink_dropped(t, w.mark, DEAD, leaves, drop, n, dropped, n_drop,
                                    bulk.gone if bulk != NULL else NULL, &removed)
        if removed != n_drop:
            with gil:
                raise ValueError(
                    f"{n_drop - removed} of the points to forget are not in the leaves they "
                    "route to: the tree does not hold them"
                )
        if n_drop == 1 and t.box_min_samples != 0 and not full_cells:
            # One point leaves: stored boxes shrink by a few reads each (_shrink_box).
            w.single = X + dropped[0] * D
            if arena == NULL:
                w.open_bounds = <intp_t*>malloc(2 * D * sizeof(intp_t))
                w.extreme = <float64_t*>malloc(2 * D * sizeof(float64_t))
                if w.open_bounds == NULL or w.extreme == NULL:
                    _oom()
        # 3. Bottom-up over the marked nodes (reverse pre-order: children before parents).
        if arena == NULL:
            w.order = <intp_t*>malloc((w.n_marked + 1) * sizeof(intp_t))
            w.stack = <intp_t*>malloc((w.n_marked + 1) * sizeof(intp_t))
            if w.order == NULL or w.stack == NULL:
                _oom()
        w.stack[0] = 0
        top = 1
        while top > 0:
            top -= 1
            j = w.stack[top]
            w.order[n_order] = j
            n_order += 1
            if t.nodes[j].left_child != TREE_LEAF:
                c = t.nodes[j].right_child
                if w.mark[c] & ON_PATH:
                    w.stack[top] = c
                    top += 1
                c = t.nodes[j].left_child
                if w.mark[c] & ON_PATH:
                    w.stack[top] = c
                    top += 1
        n_path = n_order
        if full_cells:
            # Cells do not shrink: only a cell left empty changes, top-down (its subtree goes).
            for k in range(n_order):
                j = w.order[k]
                if not w.mark[j] & DEAD and t.nodes[j].n_node_samples == 0:
                    _empty_cell(t, &w, j)
            n_order = 0
        for k in range(n_order - 1, -1, -1):
            j = w.order[k]
            if w.mark[j] & DEAD:
                continue
            if t.nodes[j].n_node_samples == 0:
                _kill(t, &w, j)
                continue
            if t.nodes[j].left_child == TREE_LEAF:
                _fix_leaf(t, &w, j, X)
            elif w.mark[t.nodes[j].left_child] & DEAD:
                _splice(t, &w, j, t.nodes[j].right_child)
            elif w.mark[t.nodes[j].right_child] & DEAD:
                _splice(t, &w, j, t.nodes[j].left_child)
            else:
                _fix_internal(t, &w, j, X)
        # 4. Dense ids and slots again.
        fill_node_holes(t, w.dead, w.n_dead, w.mark, DEAD, arena)
        steps += fill_slot_holes(t, w.free_slots, w.n_free, arena)
        steps += w.n_marked
    finally:
        # Marks were set on the paths' nodes and the removed ones only: clear those (not a
        # pass over every node), or everything if the call stopped before listing them.
        if n_path < 0:
            memset(mark, 0, t.node_count + 1)
        else:
            for k in range(n_path):
                mark[w.order[k]] = 0
            for k in range(w.n_dead):
                mark[w.dead[k]] = 0
        _free_work(&w)
        give(arena, leaves)
        give(arena, dropped)
        give(arena, nonzero)
        give(arena, pred)
    return steps


def forget_trees(list trees, const float64_t[:, ::1] X, const float64_t[:, ::1] rows,
                 const intp_t[::1] indices, const float64_t[:, ::1] deltas,
                 const unsigned char[::1] drop):
    """Forget stored points in every tree of ``trees`` (module docstring).

    Parameters
    ----------
    trees : list of MondrianTree
    X : ndarray of shape (n_stored, n_features)
        The point store (still holding the points to forget).
    rows : ndarray of shape (n_stored, value_stride)
        Contribution rows of the stored points, already lowered for the points that stay
        with a smaller weight (``drop`` false): the trees rebuild unstored rows from them.
    indices : ndarray of intp, shape (n,)
        Store indices, each at most once.
    deltas : ndarray of shape (n, value_stride)
        The contribution each point loses: its whole row when it is dropped.
    drop : ndarray of uint8, shape (n,)
        Whether each point leaves the trees (else only its statistics lower).

    Returns
    -------
    int
        The path nodes, leaf-list entries and node slots visited, over all trees (the
        work: for one point, O(depth + leaf size) per tree, whatever the number of stored
        points).

    Notes
    -----
    Every write goes through the trees' undo logs when they are open
    (:meth:`MondrianTree.begin_undo`), so a failure part-way can be rolled back.
    """
    cdef MondrianTree tree
    cdef intp_t n = indices.shape[0], steps = 0
    cdef const float64_t* rows_ptr = NULL
    cdef const float64_t* delta_ptr = NULL
    cdef bint full_cells
    cdef unsigned char* mark = NULL
    cdef BulkCall bulk
    cdef BulkCall* shared
    if deltas.shape[0] != n or drop.shape[0] != n:
        raise ValueError("indices, deltas and drop must have the same length")
    if n == 0:
        return 0
    shared = prepare_call(trees, X, rows, indices, deltas, drop, &bulk, &mark)
    if rows.shape[1] > 0:
        rows_ptr = &rows[0, 0]
        delta_ptr = &deltas[0, 0]
    cdef bint warm = n == 1 and 0 <= indices[0] < X.shape[0]
    try:
        for t_index, tree in enumerate(trees):
            if warm and t_index % WARM_CHUNK == 0:  # (one point: its paths, a chunk at once)
                warm_trees(trees, t_index, &X[indices[0], 0], &X[0, 0], X.shape[1], True)
            # The density's full-cell trees (a class flag: this module cannot import them).
            full_cells = getattr(tree, "_full_cells", False)
            tree._attach(X.base, &X[0, 0], X.shape[0])
            tree._attach_rows(rows.base, rows_ptr, rows.shape[0], rows.shape[1])
            check_points(tree)
            with nogil:
                steps += _forget(tree, &indices[0], delta_ptr, shared, &drop[0], n, &X[0, 0],
                                 full_cells, mark, NULL)
    finally:
        release_call(&bulk, mark)
    return steps
