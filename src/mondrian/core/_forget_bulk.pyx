"""Forgetting many points at once (:mod:`mondrian.core._forget`, docs/algorithms.md §13).

Forgetting walks the path of every removed point (statistics and counts lower on it) and
moves the store's last points into the freed places (each found from its leaf). One walk
per point and tree reads the upper nodes again and again and waits for one cache miss after
another; for many points the walks are done together here, level by level:

* the points of a node (in the order of the call) are split by its cut into those of its
  children, so every node on a path is read once, however many points pass through it;
* a level's nodes are known before they are read: their records, box slots and statistics
  rows are prefetched together, and the misses overlap.

Each node's statistics row loses the contributions of its points in the order of the call,
and counts, marks and leaves end as the point-by-point walks leave them: the result, and
everything after it, is the same bit for bit.
"""

from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from libc.stdint cimport int32_t

from mondrian.core._tree cimport TREE_LEAF, MondrianTree, Node, stored_row
from mondrian.core._box_loops cimport mf_prefetch_span
from mondrian.core._typedefs cimport float64_t, intp_t

__all__ = ["set_bulk_min_points"]

bulk_min_points = 8


def set_bulk_min_points(intp_t n):
    """Walk the points of a forget (and of the store's moves after it) together from ``n``
    points per call on, one path at a time below (tests compare the two); returns the
    previous value."""
    global bulk_min_points
    cdef intp_t old = bulk_min_points
    bulk_min_points = max(n, 1)
    return old


cdef extern from *:
    void __builtin_prefetch(const void* address) noexcept nogil


cdef struct Entry:
    # A node of the current level and its points: order[start:end] of the level's buffer.
    intp_t node
    intp_t start
    intp_t end


cdef struct Levels:
    # Scratch of one walk (n points): two levels of entries and of point orders.
    Entry* here
    Entry* below
    intp_t* order
    intp_t* next_order
    intp_t* spill          # a node's right points, while its left ones are written


cdef int _oom() except -1 nogil:
    with gil:
        raise MemoryError("out of memory while forgetting points")


cdef void* take(Arena* arena, size_t n_bytes) noexcept nogil:
    """``n_bytes`` of scratch: from ``arena`` (64-byte aligned; NULL once it is full, which
    its sizing rules out), or ``malloc`` without one."""
    cdef size_t start
    if arena == NULL:
        return malloc(n_bytes)
    start = (arena.used + 63) & ~(<size_t>63)
    if start + n_bytes > arena.cap:
        return NULL
    arena.used = start + n_bytes
    return arena.base + start


cdef void give(Arena* arena, void* p) noexcept nogil:
    """Give back scratch from :func:`take` (freed only without an arena)."""
    if arena == NULL:
        free(p)


cdef int _levels_alloc(Levels* lv, intp_t n, Arena* arena) except -1 nogil:
    lv.here = <Entry*>take(arena, n * sizeof(Entry))
    lv.below = <Entry*>take(arena, n * sizeof(Entry))
    lv.order = <intp_t*>take(arena, n * sizeof(intp_t))
    lv.next_order = <intp_t*>take(arena, n * sizeof(intp_t))
    lv.spill = <intp_t*>take(arena, n * sizeof(intp_t))
    if lv.here == NULL or lv.below == NULL or lv.order == NULL or lv.next_order == NULL \
            or lv.spill == NULL:
        _levels_free(lv, arena)
        _oom()
    return 0


cdef void _levels_free(Levels* lv, Arena* arena) noexcept nogil:
    give(arena, lv.here)
    give(arena, lv.below)
    give(arena, lv.order)
    give(arena, lv.next_order)
    give(arena, lv.spill)
    lv.here = lv.below = NULL
    lv.order = lv.next_order = lv.spill = NULL


cdef intp_t _split_level(MondrianTree t, Levels* lv, intp_t n_here, const float64_t* xt,
                         intp_t n) noexcept nogil:
    """Split the points of every internal node of the level between its children (stably:
    each keeps the order of the call), into the next level; prefetch the children's records
    and box slots. ``xt``: the ``n`` points' coordinates by feature (``xt[d * n + k]``: a
    cut reads one feature of its points, contiguous). Returns the number of entries of the
    next level."""
    cdef intp_t e, p, k, feature, n_below = 0, out = 0, right_start
    cdef const float64_t* column
    cdef intp_t j, left, right, n_left, n_right, go_left
    cdef float64_t threshold
    cdef Entry* entry
    for e in range(n_here):
        entry = &lv.here[e]
        j = entry.node
        if t.nodes[j].left_child == TREE_LEAF:
            continue
        feature = t.nodes[j].feature
        threshold = t.nodes[j].threshold
        left = t.nodes[j].left_child
        right = t.nodes[j].right_child
        column = xt + feature * n
        # Left points at `out` on, right ones in `spill` then after them; branch-free (the
        # side of a point is unpredictable): both places are written, one count advances.
        n_left = 0
        n_right = 0
        for p in range(entry.start, entry.end):
            k = lv.order[p]
            go_left = column[k] <= threshold
            lv.next_order[out + n_left] = k
            lv.spill[n_right] = k
            n_left += go_left
            n_right += 1 - go_left
        memcpy(lv.next_order + out + n_left, lv.spill, n_right * sizeof(intp_t))
        right_start = out + n_left + n_right
        if n_left > 0:
            lv.below[n_below].node = left
            lv.below[n_below].start = out
            lv.below[n_below].end = out + n_left
            n_below += 1
            __builtin_prefetch(&t.nodes[left])
            __builtin_prefetch(&t.box_slot[left])
        if right_start > out + n_left:
            lv.below[n_below].node = right
            lv.below[n_below].start = out + n_left
            lv.below[n_below].end = right_start
            n_below += 1
            __builtin_prefetch(&t.nodes[right])
            __builtin_prefetch(&t.box_slot[right])
        out = right_start
    return n_below


cdef intp_t _start_levels(Levels* lv, intp_t n) noexcept nogil:
    """The first level: the root with every point, in the order of the call. Returns 1."""
    cdef intp_t k
    for k in range(n):
        lv.order[k] = k
    lv.here[0].node = 0
    lv.here[0].start = 0
    lv.here[0].end = n
    return 1


cdef inline void _swap_levels(Levels* lv) noexcept nogil:
    cdef Entry* entries = lv.here
    cdef intp_t* order = lv.order
    lv.here = lv.below
    lv.below = entries
    lv.order = lv.next_order
    lv.next_order = order


cdef void warm_tree(MondrianTree t) noexcept nogil:
    """Prefetch the whole of ``t`` (node records, box slots, boxes, statistics rows, leaf
    lists) in one streaming pass: a forget of many points reads a large share of it, and
    streamed lines arrive much faster than the scattered misses of the walks."""
    cdef intp_t D = t.n_features, S = t.value_stride
    mf_prefetch_span(t.nodes, t.node_count * sizeof(Node))
    mf_prefetch_span(t.box_slot, t.node_count * sizeof(int32_t))
    mf_prefetch_span(t.bounds, t.box_count * 2 * D * sizeof(float64_t))
    if S > 0:
        mf_prefetch_span(t.value, (t.box_count if t.lean_values else t.node_count) * S
                         * sizeof(float64_t))
    mf_prefetch_span(t.sample_next, t.n_samples_seen * sizeof(intp_t))


cdef int gather_columns(const float64_t* X, intp_t D, const intp_t* idx, intp_t n,
                        float64_t* xt) noexcept nogil:
    """The rows ``X[idx[k]]`` by feature: ``xt[d * n + k]`` (for :func:`_split_level`)."""
    cdef intp_t k, d
    for k in range(n):
        for d in range(D):
            xt[d * n + k] = X[idx[k] * D + d]
    return 0


cdef int nonzero_columns(const float64_t* delta, intp_t n, intp_t S, intp_t* start,
                         intp_t* columns, float64_t* values) noexcept nogil:
    """The non-zero entries of each row ``delta[k]`` (``S`` floats): their columns
    ``columns[start[k]:start[k + 1]]`` and values ``values[...]`` (``start``: ``n + 1``
    entries, ``columns`` and ``values``: up to ``n S``). A one-hot row has one: the rows of
    the forest's trees are updated from this list (a few small arrays, where the rows of
    ``delta`` would be a scattered read of ``S`` floats per point and node)."""
    cdef intp_t k, c, m = 0
    for k in range(n):
        start[k] = m
        for c in range(S):
            if delta[k * S + c] != 0.0:
                columns[m] = c
                values[m] = delta[k * S + c]
                m += 1
    start[n] = m
    return 0


cdef intp_t route_batch(MondrianTree t, const intp_t* idx, const float64_t* delta,
                        const BulkCall* bulk,
                        const unsigned char* drop, intp_t n, const float64_t* X,
                        unsigned char* mark, unsigned char bit, intp_t* leaves,
                        intp_t* n_marked, Arena* arena) except -1 nogil:
    """Step 1 of a forget for ``n`` points at once: every node on the path of a point
    ``idx[k]`` is logged (undo log) and marked with ``bit`` (``n_marked`` counts them), its
    count lowers by the dropped points (``drop[k]``) through it and its stored statistics
    row by their rows ``delta[k]`` (``value_stride`` floats; its non-zero entries, listed by
    :func:`nonzero_columns` in ``bulk``), in the order of ``k``;
    ``leaves[k]`` is the leaf of point ``k``. The same writes as one walk per point, in the
    order of the points, but each node is read once. Returns the number of nodes visited."""
    cdef intp_t S = t.value_stride, e, p, k, c, j, n_here, n_gone, visited = 0
    cdef bint leaf, logged = t.undo.on  # (the log calls are virtual: skipped without a log)
    cdef float64_t* row
    cdef const intp_t* nz_columns = bulk.nz_columns
    cdef const float64_t* nz_values = bulk.nz_values
    cdef Levels lv
    lv.here = lv.below = NULL
    lv.order = lv.next_order = lv.spill = NULL
    if n == 0:
        return 0
    _levels_alloc(&lv, n, arena)
    try:
        n_here = _start_levels(&lv, n)
        while n_here > 0:
            # The level's statistics rows (their box slots were prefetched with the records).
            if S > 0:
                for e in range(n_here):
                    row = <float64_t*>stored_row(t, lv.here[e].node)
                    if row != NULL:
                        for c in range(0, S, 8):
                            __builtin_prefetch(row + c)
            for e in range(n_here):
                j = lv.here[e].node
                visited += 1
                if logged:
                    t._log_node(j)
                mark[j] |= bit
                n_marked[0] += 1
                row = <float64_t*>stored_row(t, j)
                leaf = t.nodes[j].left_child == TREE_LEAF
                n_gone = 0
                for p in range(lv.here[e].start, lv.here[e].end):
                    k = lv.order[p]
                    n_gone += drop[k] != 0
                    if row != NULL:
                        for c in range(bulk.nz_start[k], bulk.nz_start[k + 1]):
                            row[nz_columns[c]] -= nz_values[c]
                    if leaf:
                        leaves[k] = j
                if leaf and t.nodes[j].first_sample != TREE_LEAF:
                    __builtin_prefetch(&t.sample_next[t.nodes[j].first_sample])
                t.nodes[j].n_node_samples -= n_gone
            n_here = _split_level(t, &lv, n_here, bulk.xt, n)
            _swap_levels(&lv)
    finally:
        _levels_free(&lv, arena)
    return visited


cdef intp_t relocate_batch(MondrianTree t, const intp_t* movers, const intp_t* holes,
                           intp_t n, intp_t n_kept, const float64_t* xt,
                           Arena* arena) except -1 nogil:
    """Move the stored points ``movers[k]`` (all at or past ``n_kept``) to the free store
    indices ``holes[k]`` in ``t``: the movers are routed together to their leaves, and each
    leaf's list is walked once, every mover renamed where it stands (the list and the undo
    log as :func:`mondrian.core._forget_store.relocate_trees` leaves them for one point at a
    time). ``xt``: the movers' coordinates by feature (:func:`gather_columns`). Returns the
    number of nodes and list entries visited."""
    cdef intp_t e, p, k, j, i, prev, nxt, new, found = 0, steps = 0
    cdef intp_t n_here, span = 0, n_leaves = 0
    cdef intp_t* slot_of = NULL
    cdef intp_t* leaf_list = NULL
    cdef Levels lv
    lv.here = lv.below = NULL
    lv.order = lv.next_order = lv.spill = NULL
    if n == 0:
        return 0
    if t.node_count == 0:
        with gil:
            raise ValueError(f"store index {movers[0]} is not held by the tree")
    for k in range(n):
        if movers[k] - n_kept + 1 > span:
            span = movers[k] - n_kept + 1
    try:
        _levels_alloc(&lv, n, arena)
        slot_of = <intp_t*>take(arena, span * sizeof(intp_t))
        leaf_list = <intp_t*>take(arena, n * sizeof(intp_t))
        if slot_of == NULL or leaf_list == NULL:
            _oom()
        if n * WARM_SHARE >= t.n_samples_seen:  # (most lists are walked: stream them in)
            mf_prefetch_span(t.sample_next, t.n_samples_seen * sizeof(intp_t))
        for p in range(span):
            slot_of[p] = -1
        for k in range(n):
            if movers[k] < n_kept:
                with gil:
                    raise ValueError(f"store index {movers[k]} does not move past {n_kept}")
            slot_of[movers[k] - n_kept] = k
        n_here = _start_levels(&lv, n)
        while n_here > 0:
            for e in range(n_here):
                j = lv.here[e].node
                steps += 1
                if t.nodes[j].left_child == TREE_LEAF:
                    leaf_list[n_leaves] = j
                    n_leaves += 1
                    if t.nodes[j].first_sample != TREE_LEAF:
                        __builtin_prefetch(&t.sample_next[t.nodes[j].first_sample])
            n_here = _split_level(t, &lv, n_here, xt, n)
            _swap_levels(&lv)
        # Each reached leaf's list once: a listed mover takes its new name where it stands.
        for e in range(n_leaves):
            j = leaf_list[e]
            prev = TREE_LEAF
            i = t.nodes[j].first_sample
            while i != TREE_LEAF:
                steps += 1
                nxt = t.sample_next[i]
                k = slot_of[i - n_kept] if n_kept <= i < n_kept + span else -1
                if k >= 0:
                    new = holes[k]
                    rename_listed(t, j, prev, i, new, nxt)
                    found += 1
                    i = new
                prev = i
                i = nxt
        if found != n:
            with gil:
                raise ValueError(f"{n - found} of the store indices to move are not in the "
                                 "leaves they route to")
    finally:
        _levels_free(&lv, arena)
        give(arena, slot_of)
        give(arena, leaf_list)
    return steps


cdef intp_t relocate_scan(MondrianTree t, const intp_t* movers, const intp_t* holes,
                          intp_t n, intp_t n_kept, intp_t* slot_of) except -1 nogil:
    """:func:`relocate_batch` without routing the movers, for a call moving a large share of
    the stored points (``commit_forget``: ``n * SCAN_SHARE >= n_stored``): every link to a
    mover (a leaf's head, or a ``sample_next`` entry) is found by one pass over the leaves
    and one over the lists' links, and renamed where it stands; the mover's own link moves to
    its new place.
    The lists end as :func:`relocate_batch` leaves them (same order, same names), and the
    undo log saves the same entries before they are written. ``slot_of``: scratch of
    ``n_samples_seen - n_kept`` entries. Returns the number of node records and list
    entries read."""
    cdef intp_t span = t.n_samples_seen - n_kept, k, j, i, v, found = 0
    cdef intp_t* nxt = t.sample_next
    cdef bint logged = t.undo.on
    if n == 0:
        return 0
    for k in range(span):
        slot_of[k] = -1
    for k in range(n):
        if not n_kept <= movers[k] < t.n_samples_seen:
            with gil:
                raise ValueError(f"store index {movers[k]} does not move past {n_kept}")
        slot_of[movers[k] - n_kept] = k
    # (Only movers are still listed at or past n_kept: the forgotten points are unlinked.)
    for j in range(t.node_count):
        v = t.nodes[j].first_sample
        if v >= n_kept and t.nodes[j].left_child == TREE_LEAF and slot_of[v - n_kept] >= 0:
            if logged:
                t._log_node(j)
            t.nodes[j].first_sample = holes[slot_of[v - n_kept]]
            found += 1
    for i in range(t.n_samples_seen):
        v = nxt[i]
        if v >= n_kept and slot_of[v - n_kept] >= 0:
            if logged:
                t._log_sample(i)
            nxt[i] = holes[slot_of[v - n_kept]]
            found += 1
    for k in range(n):
        if logged:
            t._log_sample(holes[k])
            t._log_sample(movers[k])
        nxt[holes[k]] = nxt[movers[k]]
        nxt[movers[k]] = TREE_LEAF
    if found != n:
        with gil:
            raise ValueError(f"{n - found} of the store indices to move are not listed once "
                             "in the tree")
    return t.node_count + t.n_samples_seen


cdef bint _contains(const intp_t* sorted_idx, intp_t n, intp_t i) noexcept nogil:
    """Whether ``i`` is in the sorted array ``sorted_idx[:n]`` (binary search)."""
    cdef intp_t lo = 0, hi = n, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if sorted_idx[mid] < i:
            lo = mid + 1
        else:
            hi = mid
    return lo < n and sorted_idx[lo] == i


cdef int walk_paths(MondrianTree t, const intp_t* idx, const float64_t* delta,
                    const unsigned char* drop, intp_t n, const float64_t* X,
                    unsigned char* mark, unsigned char bit, intp_t* leaves, intp_t* n_marked,
                    intp_t* nonzero) except -1 nogil:
    """:func:`route_batch` for a few points, one path at a time (``nonzero``:
    ``value_stride`` scratch entries)."""
    cdef intp_t D = t.n_features, S = t.value_stride, k, c, j, n_nonzero
    cdef const float64_t* x
    cdef float64_t* row
    for k in range(n):
        x = X + idx[k] * D
        # Only the non-zero entries of the delta (one class of a one-hot row): a statistics
        # row spans several cache lines, and the paths are cache misses.
        n_nonzero = 0
        for c in range(S):
            if delta[k * S + c] != 0.0:
                nonzero[n_nonzero] = c
                n_nonzero += 1
        j = 0
        while True:
            if not mark[j] & bit:
                t._log_node(j)
                mark[j] |= bit
                n_marked[0] += 1
            row = <float64_t*>stored_row(t, j)
            if row != NULL:
                for c in range(n_nonzero):
                    row[nonzero[c]] -= delta[k * S + nonzero[c]]
            if drop[k]:
                t.nodes[j].n_node_samples -= 1
            if t.nodes[j].left_child == TREE_LEAF:
                break
            if x[t.nodes[j].feature] <= t.nodes[j].threshold:
                j = t.nodes[j].left_child
            else:
                j = t.nodes[j].right_child
        leaves[k] = j
    return 0


cdef intp_t unlink_by_links(MondrianTree t, const intp_t* idx, const intp_t* leaves,
                            const unsigned char* drop, intp_t n, const int32_t* call_of,
                            intp_t* pred, intp_t* removed) noexcept nogil:
    """:func:`unlink_dropped` without walking the lists, for a large call without an undo
    log: one pass over the links finds the predecessor of each dropped point in its list
    (``pred[k]`` for ``idx[k]``, TREE_LEAF for a list's head; ``call_of``: each dropped
    store index's ``k``, -1 elsewhere and at ``n_samples_seen``; ``pred``: scratch of
    ``n + 1``), then each is taken out where it stands (its predecessor, or its leaf's head,
    skips it). Every list loses the same points and keeps the others in their order, as the
    walks leave it. A dropped point that heads no list but that of another leaf, or comes
    twice, is not counted in ``removed`` (the caller raises). Returns the number of links
    read."""
    cdef intp_t N = t.n_samples_seen, i, k, p, q, c
    cdef intp_t* nxt = t.sample_next
    for k in range(n + 1):
        pred[k] = TREE_LEAF
    for i in range(N):
        q = nxt[i]
        c = call_of[q if q >= 0 else N]
        pred[c if c >= 0 else n] = i  # (branch-free: links to others write the spare entry)
    for k in range(n):
        if not drop[k]:
            continue
        i = idx[k]
        p = pred[k]
        q = nxt[i]
        if p == TREE_LEAF:
            if t.nodes[leaves[k]].first_sample != i:
                continue  # (not in the list of the leaf it routes to, or given twice)
            t.nodes[leaves[k]].first_sample = q
        else:
            nxt[p] = q
        if q != TREE_LEAF and call_of[q] >= 0:
            pred[call_of[q]] = p
        nxt[i] = TREE_LEAF
        removed[0] += 1
    return N


cdef intp_t unlink_dropped(MondrianTree t, unsigned char* mark, unsigned char bit,
                           const intp_t* leaves, const unsigned char* drop, intp_t n,
                           const intp_t* dropped, intp_t n_drop, const unsigned char* gone,
                           intp_t* removed) except -1 nogil:
    """Step 2 of a forget: unlink the dropped points (``dropped``, sorted; ``gone``: their
    flags by store index, or NULL) from the lists of their leaves (``leaves[k]`` for
    ``drop[k]``), each list once (``bit`` of ``mark``, clear on entry, borrowed to say so),
    stopping once all are found; count them in ``removed``. Returns the number of list
    entries visited."""
    cdef intp_t k, j, i, prev, nxt, steps = 0
    cdef bint leaves_it, logged = t.undo.on
    for k in range(n):
        j = leaves[k]
        if not drop[k] or mark[j] & bit:
            continue
        mark[j] |= bit
        prev = TREE_LEAF
        i = t.nodes[j].first_sample
        while i != TREE_LEAF:
            steps += 1
            nxt = t.sample_next[i]
            if gone != NULL:
                leaves_it = gone[i] != 0
            else:
                leaves_it = _contains(dropped, n_drop, i)
            if leaves_it:
                if prev == TREE_LEAF:
                    t.nodes[j].first_sample = nxt
                else:
                    if logged:
                        t._log_sample(prev)
                    t.sample_next[prev] = nxt
                if logged:
                    t._log_sample(i)
                t.sample_next[i] = TREE_LEAF
                removed[0] += 1
                if removed[0] == n_drop:
                    break  # (every dropped point found)
            else:
                prev = i
            i = nxt
    for k in range(n):
        mark[leaves[k]] &= ~bit
    return steps
