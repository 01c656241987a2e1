"""The store's side of exact forgetting (:mod:`mondrian.core._forget`): finding the stored
copies of a row in the leaf it routes to, moving the store's last points into the places of
forgotten ones in every tree, attaching the trees to the store in one call, warming the
paths of a row before it is forgotten, and keeping a tree's box slots dense.
"""

from libc.stdint cimport int32_t
from libc.stdlib cimport qsort
from libc.string cimport memcpy

import numpy as np

from mondrian.core._forget_bulk cimport (
    Arena,
    bulk_min_points,
    gather_columns,
    give,
    relocate_batch,
    rename_listed,
    take,
)
from mondrian.core._tree cimport TREE_LEAF, MondrianTree, Node, UndoLog
from mondrian.core._box_loops cimport mf_prefetch_span
from mondrian.core._typedefs cimport float64_t, intp_t

__all__ = ["attach_trees", "leaf_matches", "relocate_trees", "warm_paths"]


cdef int cmp_intp(const void* a, const void* b) noexcept nogil:
    cdef intp_t x = (<const intp_t*>a)[0], y = (<const intp_t*>b)[0]
    return (x > y) - (x < y)


cdef intp_t fill_slot_holes(MondrianTree t, intp_t* free_slots, intp_t n_free,
                            Arena* arena) except -1 nogil:
    """Lean boxes: move the boxes (and lean rows) of the highest slots into the freed ones, so
    that slots stay dense (``box_count`` shrinks; ``free_slots``: the ``n_free`` freed slots,
    sorted here). Returns the node slots read to find the owners of the highest slots: from
    the highest node down, stopping once all are found (the newest slots mostly belong to
    the newest nodes: a few reads, not a pass over the tree)."""
    cdef intp_t D = t.n_features, S = t.value_stride
    cdef intp_t used = t.box_count - n_free, j, s, k = 0, to_find = n_free, steps = 0
    cdef intp_t* owner
    if t.box_min_samples == 0 or n_free == 0:
        return 0
    owner = <intp_t*>take(arena, n_free * sizeof(intp_t))
    if owner == NULL:
        with gil:
            raise MemoryError("out of memory while forgetting points")
    for s in range(n_free):
        owner[s] = -1
    for k in range(n_free):
        if free_slots[k] >= used:
            to_find -= 1  # (a freed slot among the highest: nothing to move from it)
    k = 0
    j = t.node_count - 1
    while to_find > 0 and j >= 0:  # (each slot has one owner: the same owners as a full pass)
        steps += 1
        s = t.box_slot[j]
        if s >= used:
            owner[s - used] = j
            to_find -= 1
        j -= 1
    qsort(free_slots, n_free, sizeof(intp_t), cmp_intp)
    for s in range(used, t.box_count):
        j = owner[s - used]
        if j < 0:
            continue  # a freed slot itself
        while free_slots[k] >= used:
            k += 1  # (sorted: never past the end while a survivor is left above `used`)
        t._log_node(j)
        memcpy(t.bounds + 2 * D * free_slots[k], t.bounds + 2 * D * s,
               2 * D * sizeof(float64_t))
        if S > 0 and t.lean_values:
            memcpy(t.value + S * free_slots[k], t.value + S * s, S * sizeof(float64_t))
        t.box_slot[j] = <int32_t>free_slots[k]
        k += 1
    give(arena, owner)
    t.box_count = used
    return steps


cdef inline intp_t _remap(const intp_t* where, intp_t alive, intp_t j) noexcept nogil:
    """New id of node ``j`` after the holes are filled (``where``: new ids of the moved)."""
    if j >= alive:
        return where[j - alive]
    return j


cdef int fill_node_holes(MondrianTree t, intp_t* dead, intp_t n_dead, const unsigned char* mark,
                         unsigned char dead_bit, Arena* arena) except -1 nogil:
    """Move the surviving nodes of the highest ids into the holes left by the removed nodes
    ``dead[:n_dead]`` (flagged ``dead_bit`` in ``mark``; sorted here), so that ids stay dense
    (``node_count`` shrinks): O(holes log holes + moves)."""
    cdef intp_t D = t.n_features, S = t.value_stride
    cdef intp_t n = t.node_count, alive = n - n_dead, h = 0, m, k, c, p, next_hole = 0
    cdef intp_t* where
    cdef intp_t* moved_to
    cdef intp_t n_moves = 0
    if n_dead == 0:
        return 0
    if alive == 0:
        t.node_count = 0
        if t.box_min_samples == 0:
            t.box_count = 0
        return 0
    where = <intp_t*>take(arena, (n - alive) * sizeof(intp_t))
    moved_to = <intp_t*>take(arena, (n - alive) * sizeof(intp_t))
    if where == NULL or moved_to == NULL:
        give(arena, where)
        give(arena, moved_to)
        with gil:
            raise MemoryError("out of memory while forgetting points")
    # Pair every hole below `alive` (the sorted dead ids) with a surviving node above it.
    qsort(dead, n_dead, sizeof(intp_t), cmp_intp)
    for m in range(alive, n):
        where[m - alive] = -1
        if mark[m] & dead_bit:
            continue
        h = dead[next_hole]
        next_hole += 1
        where[m - alive] = h
        moved_to[n_moves] = h
        n_moves += 1
        t._log_node(h)
        t.nodes[h] = t.nodes[m]
        if t.box_min_samples > 0:
            t.box_slot[h] = t.box_slot[m]
        else:
            memcpy(t.bounds + 2 * D * h, t.bounds + 2 * D * m, 2 * D * sizeof(float64_t))
        if S > 0 and (not t.lean_values or t.box_min_samples == 0):
            memcpy(t.value + S * h, t.value + S * m, S * sizeof(float64_t))
    # Links: every moved node's own links, its parent's child link and its children's parent.
    for k in range(n_moves):
        h = moved_to[k]
        if t.nodes[h].parent != TREE_LEAF:
            t.nodes[h].parent = <int32_t>_remap(where, alive, t.nodes[h].parent)
        if t.nodes[h].left_child != TREE_LEAF:
            t.nodes[h].left_child = <int32_t>_remap(where, alive, t.nodes[h].left_child)
            t.nodes[h].right_child = <int32_t>_remap(where, alive, t.nodes[h].right_child)
    for m in range(alive, n):
        h = where[m - alive]
        if h < 0:
            continue
        p = t.nodes[h].parent
        if p != TREE_LEAF:
            t._log_node(p)
            if t.nodes[p].left_child == m:
                t.nodes[p].left_child = <int32_t>h
            elif t.nodes[p].right_child == m:
                t.nodes[p].right_child = <int32_t>h
        if t.nodes[h].left_child != TREE_LEAF:
            c = t.nodes[h].left_child
            t._log_node(c)
            t.nodes[c].parent = <int32_t>h
            c = t.nodes[h].right_child
            t._log_node(c)
            t.nodes[c].parent = <int32_t>h
    give(arena, where)
    give(arena, moved_to)
    t.node_count = alive
    if t.box_min_samples == 0:
        t.box_count = alive
    return 0


cdef extern from *:
    void __builtin_prefetch(const void* address) noexcept nogil
    void _prefetch_write "__builtin_prefetch"(const void* address, int rw) noexcept nogil


cdef struct Cursor:
    # One tree's view for :func:`warm_paths` (raw pointers: the walk runs without the GIL).
    const Node* nodes
    const int32_t* box_slot
    const float64_t* bounds
    const float64_t* value
    const intp_t* sample_next
    intp_t row_width        # value_stride floats, 0: no rows
    bint lean_values
    intp_t at               # current node or list entry (TREE_LEAF: done)


cdef void _prefetch_stored(Cursor* c, intp_t j, intp_t D) noexcept nogil:
    """Prefetch node ``j``'s stored box and statistics row (its slot read now: it was
    prefetched one step before)."""
    cdef intp_t s = c.box_slot[j]
    if s >= 0:
        mf_prefetch_span(c.bounds + 2 * D * s, 2 * D * sizeof(float64_t))
    if c.row_width > 0 and (s >= 0 or not c.lean_values):
        mf_prefetch_span(c.value + c.row_width * (s if c.lean_values else j),
                         c.row_width * sizeof(float64_t))


cdef void _prefetch_log(MondrianTree t) noexcept nogil:
    """Prefetch for writing the first entries of ``t``'s open undo log (kept from the last
    call, cold by now): a one-row forget logs its path's nodes there, the boxes and rows of
    the upper ones (those keeping a box) first."""
    cdef UndoLog* log = &t.undo
    cdef intp_t e, D = t.n_features, S = t.value_stride
    if not log.on:
        return
    for e in range(min(log.cap, 32)):
        _prefetch_write(&log.nodes[e], 1)
        if e % 8 == 0:
            _prefetch_write(&log.ids[e], 1)
            _prefetch_write(&log.slots[e], 1)
            if e < log.scap:
                _prefetch_write(&log.samples[2 * e], 1)
        if e < 8:
            _prefetch_write_span(log.bounds + 2 * D * e, 2 * D * sizeof(float64_t))
            if S > 0 and (e + 1) * S <= log.vcap:
                _prefetch_write_span(log.values + S * e, S * sizeof(float64_t))


cdef void _prefetch_write_span(void* start, intp_t n_bytes) noexcept nogil:
    cdef intp_t b
    for b in range(0, n_bytes, 64):
        _prefetch_write(<char*>start + b, 1)


cdef void _warm(Cursor* cursors, intp_t n_trees, const float64_t* x, const float64_t* X,
                intp_t D) noexcept nogil:
    """Walk every tree's path of ``x`` and its leaf's list one step per tree in turn: the
    cache misses of different trees overlap instead of following one another."""
    cdef intp_t k, j, active = n_trees
    cdef Cursor* c
    for k in range(n_trees):
        cursors[k].at = 0
    while active > 0:  # down the paths
        active = 0
        for k in range(n_trees):
            c = &cursors[k]
            j = c.at
            if j < 0:
                continue  # (at its leaf)
            __builtin_prefetch(&c.box_slot[j])
            if c.nodes[j].left_child == TREE_LEAF:
                c.at = -2 - j  # (its leaf, encoded below 0)
                continue
            c.at = c.nodes[j].left_child if x[c.nodes[j].feature] <= c.nodes[j].threshold \
                else c.nodes[j].right_child
            _prefetch_stored(c, j, D)
            active += 1
    for k in range(n_trees):
        c = &cursors[k]
        j = -2 - c.at
        _prefetch_stored(c, j, D)
        c.at = c.nodes[j].first_sample
    active = n_trees
    while active > 0:  # along the leaves' lists
        active = 0
        for k in range(n_trees):
            c = &cursors[k]
            if c.at == TREE_LEAF:
                continue
            mf_prefetch_span(X + c.at * D, D * sizeof(float64_t))
            c.at = c.sample_next[c.at]
            active += 1


cdef int warm_trees(list trees, intp_t start, const float64_t* x, const float64_t* X,
                    intp_t D, bint log) except -1:
    """Bring what forgetting (or moving) the stored point ``x`` reads in the trees
    ``trees[start:start + WARM_CHUNK]`` into the cache: its path, the stored boxes and rows
    on it, its leaf's list and the listed points, walked in those trees at once (a tree is
    cold, its reads cache misses: overlapping those of several trees cuts the wait; a chunk's
    reads fit in the core's cache until it is used). ``log``: prefetch the first entries of
    the trees' open undo logs too. Reads only."""
    cdef Cursor cursors[WARM_CHUNK]
    cdef MondrianTree tree
    cdef intp_t n_trees = 0, k
    for k in range(start, min(start + WARM_CHUNK, len(trees))):
        tree = trees[k]
        if tree.node_count == 0 or tree.n_features != D:
            continue
        cursors[n_trees].nodes = tree.nodes
        cursors[n_trees].box_slot = tree.box_slot
        cursors[n_trees].bounds = tree.bounds
        cursors[n_trees].value = tree.value
        cursors[n_trees].sample_next = tree.sample_next
        cursors[n_trees].row_width = tree.value_stride if tree.value != NULL else 0
        cursors[n_trees].lean_values = tree.lean_values
        n_trees += 1
        if log:
            _prefetch_log(tree)
    if n_trees:
        with nogil:
            _warm(cursors, n_trees, x, X, D)
    return 0


def warm_paths(list trees, const float64_t[:, ::1] X, const intp_t[::1] points):
    """:func:`warm_trees` for the stored points ``points`` in every tree (points the trees
    do not hold are skipped). Reads only: the trees are unchanged."""
    cdef intp_t k, start
    for k in range(points.shape[0]):
        if 0 <= points[k] < X.shape[0]:
            for start in range(0, len(trees), WARM_CHUNK):
                warm_trees(trees, start, &X[points[k], 0], &X[0, 0], X.shape[1], True)


cdef intp_t _relocate(MondrianTree t, intp_t old, intp_t new,
                      const float64_t* X) except -1 nogil:
    """The stored point ``old`` moves to the free store index ``new``: its leaf's list now
    refers to it as ``new`` (route to its leaf, find it in the list, relink; logged).
    Returns the number of nodes and leaf-list entries visited."""
    cdef intp_t D = t.n_features, j = 0, i, prev = TREE_LEAF, steps = 1
    cdef const float64_t* x = X + old * D
    if t.node_count == 0:
        with gil:
            raise ValueError(f"store index {old} is not held by the tree")
    while t.nodes[j].left_child != TREE_LEAF:
        steps += 1
        if x[t.nodes[j].feature] <= t.nodes[j].threshold:
            j = t.nodes[j].left_child
        else:
            j = t.nodes[j].right_child
    i = t.nodes[j].first_sample
    while i != TREE_LEAF and i != old:
        steps += 1
        prev = i
        i = t.sample_next[i]
    if i == TREE_LEAF:
        with gil:
            raise ValueError(f"store index {old} is not in the leaf it routes to")
    rename_listed(t, j, prev, old, new, t.sample_next[old])
    return steps


def relocate_trees(list trees, const float64_t[:, ::1] X, const intp_t[::1] movers,
                   const intp_t[::1] holes, intp_t n_kept):
    """Move the stored points ``movers[k]`` to the free store indices ``holes[k]`` in every
    tree (the store's last points into the places of forgotten ones, so that the store stays
    dense: O(depth + leaf size) per point and tree), and make ``n_kept`` the trees' number of
    store indices. Logged in the trees' undo logs when they are open.

    ``X`` is the store before the move (the movers' rows at their old indices). Returns the
    number of nodes and leaf-list entries visited, over all trees."""
    cdef MondrianTree tree
    cdef intp_t n = movers.shape[0], k, steps = 0
    if holes.shape[0] != n:
        raise ValueError("movers and holes must have the same length")
    for tree in trees:
        if tree.n_features != X.shape[1]:
            raise ValueError("the store does not match the trees")
    cdef bint warm = n == 1 and 0 <= movers[0] < X.shape[0]
    cdef bint bulk = n >= bulk_min_points
    cdef float64_t[::1] xt
    if bulk:  # (many points: routed together, each list walked once)
        for k in range(n):
            if not 0 <= movers[k] < X.shape[0]:
                raise ValueError(f"store index {movers[k]} is not held by the tree")
        xt = np.empty(n * X.shape[1] + 1)
        gather_columns(&X[0, 0], X.shape[1], &movers[0], n, &xt[0])
    for t_index, tree in enumerate(trees):
        if warm and t_index % WARM_CHUNK == 0:  # (one point moves: its paths, a chunk at once)
            warm_trees(trees, t_index, &X[movers[0], 0], &X[0, 0], X.shape[1], False)
        with nogil:
            if bulk:
                steps += relocate_batch(tree, &movers[0], &holes[0], n, n_kept, &xt[0], NULL)
            else:
                for k in range(n):
                    steps += _relocate(tree, movers[k], holes[k], &X[0, 0])
            if tree.n_samples_seen > n_kept:
                tree.n_samples_seen = n_kept
    return steps


def leaf_matches(MondrianTree tree, const float64_t[:, ::1] X, const float64_t[:, ::1] U):
    """Store indices of the points of ``X`` equal to each row of ``U`` (``==`` on every
    feature, sorted), found in the leaf each row routes to: O(depth + leaf size) per row
    instead of a scan of the store. Equal points route alike, so a tree that holds every
    stored point (each in the list of the leaf it routes to, the invariant of the trees)
    holds all the copies of a row in one leaf.

    Returns
    -------
    list of ndarray of intp
    """
    cdef intp_t D = X.shape[1], r, i, j, d, count
    cdef const float64_t* u
    cdef const float64_t* x
    if U.shape[1] != D or D != tree.n_features:
        raise ValueError("the rows do not match the tree")
    if tree.node_count == 0 or tree.n_samples_seen > X.shape[0]:
        raise ValueError("the tree does not hold these points")
    cdef intp_t[::1] found
    cdef list out = []
    buffer = np.empty(16, dtype=np.intp)
    found = buffer
    for r in range(U.shape[0]):
        u = &U[r, 0]
        count = 0
        with nogil:
            j = 0
            while tree.nodes[j].left_child != TREE_LEAF:
                if u[tree.nodes[j].feature] <= tree.nodes[j].threshold:
                    j = tree.nodes[j].left_child
                else:
                    j = tree.nodes[j].right_child
            i = tree.nodes[j].first_sample
            while i != TREE_LEAF:
                x = &X[i, 0]
                for d in range(D):
                    if x[d] != u[d]:
                        break
                else:
                    if count == found.shape[0]:
                        with gil:
                            buffer = np.resize(buffer, 2 * count)
                            found = buffer
                    found[count] = i
                    count += 1
                i = tree.sample_next[i]
        out.append(np.sort(buffer[:count]))
    return out


def attach_trees(list trees, X, rows):
    """``tree.attach_points(X, rows)`` for every tree of ``trees``, with one check of the
    arrays (after a forget: one call per tree would cost more than the forget of a row)."""
    cdef const float64_t[:, ::1] view = X
    cdef const float64_t[:, ::1] rview = rows
    cdef MondrianTree tree
    if rview.shape[0] != view.shape[0]:
        raise ValueError("rows must have one row per stored point")
    for tree in trees:
        if view.shape[1] != tree.n_features:
            raise ValueError(f"X has {view.shape[1]} features, the tree expects "
                             f"{tree.n_features}")
        tree._attach_rows(rview.base, &rview[0, 0] if rview.shape[0] and rview.shape[1]
                          else NULL, rview.shape[0], rview.shape[1])
        tree._attach(view.base, &view[0, 0] if view.shape[0] else NULL, view.shape[0])
