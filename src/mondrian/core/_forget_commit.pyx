"""A forget committed in one step: nothing can fail once the first tree is written.

:func:`commit_forget` does what :meth:`TreeEnsemble.forget` does (the trees forget the points,
the store's last points move into the freed places, the trees follow them, the store shrinks)
in one call of the core, staged so that the model needs no copy and no undo log to stay
atomic (docs/algorithms.md §13):

1. every input is checked and every buffer is allocated, the scratch of the trees' updates
   included (an arena sized for the largest tree: :class:`mondrian.core._forget_bulk.Arena`),
   and the objects the store will hold are made; a failure here leaves everything as it was;
2. then the trees are updated one after the other, each forgetting the points and moving the
   store's last points while it is in the cache, the store's arrays are moved in place (or
   replaced by the new ones, already filled) and its attributes set. This step allocates
   nothing and runs no Python code (the core releases the GIL and only C runs between the
   trees), so neither a ``MemoryError`` nor a ``KeyboardInterrupt`` can stop it part-way.

The checks the core makes while it writes (a point that is not in the leaf it routes to) only
fail on trees that do not hold the store's points, which the first step rules out.
"""

from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from mondrian.core._forget cimport _forget
from mondrian.core._forget_call cimport prepare_call, release_call
from mondrian.core._forget_bulk cimport (
    Arena,
    BulkCall,
    bulk_min_points,
    gather_columns,
    relocate_batch,
    relocate_scan,
    take,
)
from mondrian.core._forget_store cimport WARM_CHUNK, _relocate, warm_trees
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t

__all__ = ["commit_forget"]

# Movers of at least 1/SCAN_SHARE of the stored points are found by relocate_scan, not routed
# (letter, 100 trees, the oldest 10% forgotten: the moves took a quarter of the routed time;
# a scan's reads are a few stored points' worth of routing each, so not for a small share).
cdef enum:
    SCAN_SHARE = 16


cdef size_t _round(size_t n_bytes) noexcept nogil:
    return (n_bytes + 63) & ~(<size_t>63)


cdef size_t _arena_bytes(list trees, intp_t n, intp_t n_movers, intp_t n_stored,
                         intp_t S) except? 0:
    """The scratch one tree's forget of ``n`` points (``_forget``) or its moves of
    ``n_movers`` points (``relocate_batch``) takes at most, for the largest of ``trees``
    (each buffer's bound: one entry per node, box slot, stored point or point of the call;
    the arena is emptied between the two)."""
    cdef MondrianTree tree
    cdef intp_t N = 0, B = 0, D = 0, k = sizeof(intp_t)
    cdef size_t forget_bytes, move_bytes, levels
    for tree in trees:
        N = max(N, tree.node_count)
        B = max(B, tree.box_count)
        D = tree.n_features
    levels = 2 * _round(n * 3 * k) + 3 * _round(n * k)  # (route_batch: two levels of entries)
    forget_bytes = (3 * _round((n + 1) * k) + _round((S + 1) * k) + _round((B + 1) * k)
                    + 5 * _round((N + 1) * k) + _round((n_stored + 1) * k)
                    + 2 * _round(2 * D * k) + 2 * _round(N * k) + _round(B * k) + levels)
    levels = 2 * _round(n_movers * 3 * k) + 3 * _round(n_movers * k)
    move_bytes = levels + _round((n_stored + 1) * k) + _round(n_movers * k)
    return max(forget_bytes, move_bytes) + 64 * 64


cdef int _move_rows(float64_t[:, ::1] A, const intp_t[::1] movers,
                    const intp_t[::1] holes) noexcept nogil:
    """``A[holes[k]] = A[movers[k]]`` for every ``k`` (rows of a store buffer, in place)."""
    cdef intp_t k
    if A.shape[1] == 0:
        return 0
    for k in range(movers.shape[0]):
        memcpy(&A[holes[k], 0], &A[movers[k], 0], A.shape[1] * sizeof(float64_t))
    return 0


def commit_forget(list trees, object store, dict attributes,
                  const float64_t[:, ::1] X, const float64_t[:, ::1] rows,
                  const intp_t[::1] indices, const float64_t[:, ::1] deltas,
                  const unsigned char[::1] drop, const intp_t[::1] movers,
                  const intp_t[::1] holes, intp_t n_kept, float64_t[:, ::1] X_buf,
                  float64_t[:, ::1] rows_buf, int64_t[::1] stamps_buf,
                  const float64_t[:, ::1] X_view, const float64_t[:, ::1] rows_view,
                  intp_t[::1] work=None):
    """Forget the stored points ``indices`` in every tree and in the store, atomically
    without a snapshot (module docstring).

    Parameters
    ----------
    trees : list of MondrianTree
        Every tree of the ensemble (each holds every stored point).
    store : DataStore
        Its attributes ``attributes`` are set once the trees are updated (objects made by the
        caller: setting them allocates nothing).
    X, rows : ndarray
        The store's points (``n_stored`` rows) and their contribution rows, already lowered
        for the points that keep a smaller weight.
    indices, deltas, drop
        As for :func:`mondrian.core._forget.forget_trees`.
    movers, holes : ndarray of intp
        The store's last points that stay, and the freed places below ``n_kept`` they move to
        (:meth:`TreeEnsemble.forget`).
    n_kept : int
        Stored points left.
    X_buf, rows_buf, stamps_buf : ndarray or None
        The store's buffers, where the movers' rows move in place; None when the store takes
        new buffers (already filled, in ``attributes``).
    X_view, rows_view : ndarray
        The store's points and rows after the call (``n_kept`` rows): the trees attach them.
    work : ndarray of intp, shape (1,), default=None
        Receives the nodes, leaf-list entries and node slots visited (as the returns of
        ``forget_trees`` and ``relocate_trees`` count them; a return value would be an
        allocation after the writes).
    """
    cdef MondrianTree tree
    cdef intp_t n = indices.shape[0], m = movers.shape[0], k, t_index, D = X.shape[1]
    cdef intp_t S = rows.shape[1], steps = 0
    cdef const float64_t* rows_ptr = &rows[0, 0] if S > 0 else NULL
    cdef const float64_t* delta_ptr = &deltas[0, 0] if S > 0 and n > 0 else NULL
    cdef unsigned char* mark = NULL
    cdef BulkCall bulk
    cdef BulkCall* shared = NULL
    cdef Arena arena
    cdef float64_t* xt = NULL
    cdef bytearray full_cells = bytearray(len(trees))
    cdef bint one = n == 1, one_mover = m == 1, in_place = X_buf is not None
    # Many movers: found by a pass over each tree's leaves and links (O(nodes + stored
    # points)), not routed (O(movers x depth)).
    cdef bint scan = m > 1 and m * SCAN_SHARE >= X.shape[0]
    cdef intp_t* slot_of
    # 1. Checks and allocations: nothing is written before all of them passed.
    if deltas.shape[0] != n or drop.shape[0] != n or holes.shape[0] != m:
        raise ValueError("indices, deltas and drop (movers and holes) must have the same "
                         "length")
    if rows.shape[0] != X.shape[0] or X_view.shape[0] != n_kept \
            or rows_view.shape[0] != n_kept or n_kept > X.shape[0]:
        raise ValueError("the store's arrays do not match the forget")
    for k in range(n):
        if not 0 <= indices[k] < X.shape[0]:
            raise ValueError(f"store index {indices[k]} is not held by the tree")
    for k in range(m):
        if not n_kept <= movers[k] < X.shape[0] or not 0 <= holes[k] < n_kept:
            raise ValueError(f"store index {movers[k]} cannot move to {holes[k]}")
    for t_index, tree in enumerate(trees):
        if tree.node_count == 0 or tree.n_samples_seen != X.shape[0]:
            raise ValueError("every tree must hold every stored point")
        # The density's full-cell trees (a class flag: this module cannot import them).
        full_cells[t_index] = bool(getattr(tree, "_full_cells", False))
    if in_place and (rows_buf is None or stamps_buf is None or X_buf.shape[1] != D
                     or X_buf.shape[0] < X.shape[0] or rows_buf.shape[1] != S
                     or rows_buf.shape[0] < X.shape[0] or stamps_buf.shape[0] < X.shape[0]):
        raise ValueError("the store's buffers do not match the forget")
    if n == 0:
        return None
    # The arrays' owners as objects now: ``.base`` of a typed memoryview makes a new object,
    # which may fail or start the collector, so none is made between the writes.
    cdef object X_owner = X.base, rows_owner = rows.base
    cdef object kept_X_owner = X_view.base, kept_rows_owner = rows_view.base
    shared = prepare_call(trees, X, rows, indices, deltas, drop, &bulk, &mark)
    arena.used = 0
    arena.cap = _arena_bytes(trees, n, m, X.shape[0], S)
    arena.base = <char*>malloc(arena.cap)
    if m >= bulk_min_points and not scan:
        xt = <float64_t*>malloc((m * D + 1) * sizeof(float64_t))
    if arena.base == NULL or (m >= bulk_min_points and not scan and xt == NULL):
        release_call(&bulk, mark)
        free(arena.base)
        free(xt)
        raise MemoryError("out of memory while forgetting points")
    if xt != NULL:
        gather_columns(&X[0, 0], D, &movers[0], m, xt)
    # 2. The writes: C only from here on (no allocation, no Python code between the trees).
    try:
        for t_index, tree in enumerate(trees):
            if t_index % WARM_CHUNK == 0:  # (one point: its paths, a chunk of trees at once)
                if one:
                    warm_trees(trees, t_index, &X[indices[0], 0], &X[0, 0], D, False)
                if one_mover:
                    warm_trees(trees, t_index, &X[movers[0], 0], &X[0, 0], D, False)
            tree._attach(X_owner, &X[0, 0], X.shape[0])
            tree._attach_rows(rows_owner, rows_ptr, rows.shape[0], S)
            with nogil:
                arena.used = 0
                steps += _forget(tree, &indices[0], delta_ptr, shared, &drop[0], n, &X[0, 0],
                                 full_cells[t_index], mark, &arena)
                arena.used = 0
                if scan:
                    slot_of = <intp_t*>take(&arena, (X.shape[0] - n_kept + 1) * sizeof(intp_t))
                    steps += relocate_scan(tree, &movers[0], &holes[0], m, n_kept, slot_of)
                elif xt != NULL:
                    steps += relocate_batch(tree, &movers[0], &holes[0], m, n_kept, xt, &arena)
                else:
                    for k in range(m):
                        steps += _relocate(tree, movers[k], holes[k], &X[0, 0])
                if tree.n_samples_seen > n_kept:
                    tree.n_samples_seen = n_kept
        if in_place and m > 0:
            with nogil:
                _move_rows(X_buf, movers, holes)
                _move_rows(rows_buf, movers, holes)
                for k in range(m):
                    stamps_buf[holes[k]] = stamps_buf[movers[k]]
        for name, value in attributes.items():
            setattr(store, name, value)
        for tree in trees:
            tree._attach_rows(kept_rows_owner, &rows_view[0, 0] if S > 0 and n_kept > 0
                              else NULL, n_kept, S)
            tree._attach(kept_X_owner, &X_view[0, 0] if n_kept > 0 else NULL, n_kept)
        if work is not None:
            work[0] = steps
    finally:
        release_call(&bulk, mark)
        free(arena.base)
        free(xt)
    return None
