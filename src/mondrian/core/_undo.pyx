"""The undo log of a Mondrian tree: one online update rolled back bit for bit.

While a log is open (:meth:`~mondrian.core._tree.MondrianTree.begin_undo`), the builders log
the old contents of every node and leaf-list entry that existed at its beginning before they
write it (``MondrianTree._log_node`` / ``_log_sample``, which call the functions here only
when a log is open); nodes, boxes and store indices added since are dropped by truncation. A
widening of the statistics or a new order of the read columns keeps the old buffers instead.
The log's state is one struct, ``UndoLog`` (``tree.undo``).
"""

from libc.stdint cimport int32_t
from libc.stdlib cimport free
from libc.string cimport memcpy, memset

from mondrian.core._tree cimport Node, _realloc, stored_row
from mondrian.core._typedefs cimport float64_t, intp_t


cdef extern from *:
    """
    #include <string.h>
    #if defined(__x86_64__) || defined(_M_X64)
    #include <emmintrin.h>
    #define MF_STREAMING 1
    #else
    #define MF_STREAMING 0
    #endif
    /* Copy n doubles to the log, with streaming (non-temporal) stores if stream: they write
       around the cache, so the log's lines are neither read first nor kept (the caller
       fences them: mf_log_fence). The same bytes either way. */
    static inline void mf_log_copy(double *dst, const double *src, Py_ssize_t n, int stream) {
    #if MF_STREAMING
        if (stream && ((size_t)dst & 15) == 0) {
            Py_ssize_t k = 0;
            for (; k + 2 <= n; k += 2) _mm_stream_pd(dst + k, _mm_loadu_pd(src + k));
            if (k < n) dst[k] = src[k];
            return;
        }
    #endif
        (void)stream;
        memcpy(dst, src, (size_t)n * sizeof(double));
    }
    /* A log entry's id, slot code and node record (size bytes), streamed if stream. */
    static inline void mf_log_entry(Py_ssize_t *id, Py_ssize_t node, int32_t *slot,
                                    int32_t code, void *dst, const void *src, size_t size,
                                    int stream) {
    #if MF_STREAMING
        if (stream && ((size_t)dst & 15) == 0 && size % 16 == 0) {
            size_t b;
            _mm_stream_si64((long long *)id, (long long)node);
            _mm_stream_si32((int *)slot, code);
            for (b = 0; b < size; b += 16)
                _mm_stream_si128((__m128i *)((char *)dst + b),
                                 _mm_loadu_si128((const __m128i *)((const char *)src + b)));
            return;
        }
    #endif
        (void)stream;
        *id = node;
        *slot = code;
        memcpy(dst, src, size);
    }
    static inline void mf_log_fence(void) {
    #if MF_STREAMING
        _mm_sfence();
    #endif
    }
    """
    void mf_log_copy(float64_t* dst, const float64_t* src, intp_t n, bint stream) noexcept nogil
    void mf_log_entry(intp_t* id, intp_t node, int32_t* slot, int32_t code, Node* dst,
                      const Node* src, size_t size, bint stream) noexcept nogil
    void mf_log_fence() noexcept nogil


cdef enum:
    # Entries of a log written through the cache before it streams the others (when asked:
    # UndoLog.stream): a short log (a row's path) is read back soon, while it is in cache.
    UNDO_STREAM_ENTRIES = 64


cdef int undo_log_node(MondrianTree tree, intp_t node, bint with_box) except -1 nogil:
    """Save node ``node`` (struct, box slot, statistics, and its stored box if ``with_box``)
    in the open log of ``tree`` (the caller checked that one is open and that the node
    existed when it began).

    Without its box (the online extension: most visited nodes keep their box as it is), the
    entry keeps the slot encoded as ``-2 - slot`` and the rollback leaves the box alone; a
    writer of that box logs the node again, with it, before the write (the later entry is
    undone first, then the earlier one puts back the rest)."""
    cdef UndoLog* log = &tree.undo
    cdef intp_t D = tree.n_features, S = tree.value_stride, n = log.n, cap
    cdef intp_t slot = tree.box_slot[node]
    cdef int32_t code
    cdef bint stream
    if n >= log.cap:
        cap = max(16, 2 * n)
        _realloc(<void**>&log.ids, cap, sizeof(intp_t))
        _realloc(<void**>&log.nodes, cap, sizeof(Node))
        _realloc(<void**>&log.bounds, cap * 2 * D, sizeof(float64_t))
        _realloc(<void**>&log.slots, cap, sizeof(int32_t))
        log.cap = cap
    if (n + 1) * S > log.vcap:
        cap = max(16, 2 * (n + 1)) * S
        _realloc(<void**>&log.values, cap, sizeof(float64_t))
        log.vcap = cap
    stream = log.stream and n >= UNDO_STREAM_ENTRIES
    code = <int32_t>(-2 - slot) if slot >= 0 and not with_box else <int32_t>slot
    mf_log_entry(&log.ids[n], node, &log.slots[n], code, &log.nodes[n], &tree.nodes[node],
                 sizeof(Node), stream)
    if code >= 0:
        mf_log_copy(log.bounds + 2 * D * n, tree.bounds + 2 * D * slot, 2 * D, stream)
    if S > 0 and stored_row(tree, node) != NULL:
        mf_log_copy(log.values + S * n, stored_row(tree, node), S, stream)
    log.n = n + 1
    return 0


cdef int undo_log_sample(MondrianTree tree, intp_t i) except -1 nogil:
    """Save ``sample_next[i]`` in the open log of ``tree`` (the caller checked that one is
    open and that ``i`` was below ``n_samples_seen`` when it began: the entries past it are
    always -1, and the rollback resets them without a log)."""
    cdef UndoLog* log = &tree.undo
    cdef intp_t n = log.sn
    if n >= log.scap:
        _realloc(<void**>&log.samples, 2 * max(16, 2 * n), sizeof(intp_t))
        log.scap = max(16, 2 * n)
    log.samples[2 * n] = i
    log.samples[2 * n + 1] = tree.sample_next[i]
    log.sn = n + 1
    return 0


cdef void undo_fence(UndoLog* log) noexcept nogil:
    """End the streaming of ``log``'s entries (``UndoLog.stream``): the streamed writes are
    ordered before every later one (a rollback may run on another thread)."""
    if log.stream:
        mf_log_fence()
        log.stream = False


cdef void undo_free(UndoLog* log) noexcept nogil:
    """Free the entry buffers of ``log`` (not the kept statistics or columns)."""
    free(log.ids)
    free(log.nodes)
    free(log.bounds)
    free(log.slots)
    free(log.values)
    free(log.samples)
    log.ids = NULL
    log.nodes = NULL
    log.bounds = NULL
    log.slots = NULL
    log.values = NULL
    log.samples = NULL
    log.cap = log.vcap = log.scap = 0


cdef bint undo_begin(MondrianTree tree) noexcept:
    """``MondrianTree.begin_undo``: open a log on ``tree``; False if one is open already."""
    cdef UndoLog* log = &tree.undo
    if log.on:
        return False
    log.on = True
    log.node_count = tree.node_count
    log.box_count = tree.box_count
    log.samples_seen = tree.n_samples_seen
    log.rng = tree.rng
    log.n = 0
    log.sn = 0
    log.widened = False
    log.reordered = False
    log.stream = False
    return True


cdef int undo_rollback(MondrianTree tree) except -1:
    """``MondrianTree.rollback_undo``: undo every change since the log opened; close it."""
    cdef UndoLog* log = &tree.undo
    cdef intp_t D = tree.n_features, S = tree.value_stride, e, j, slot
    if not log.on:
        return 0
    for e in range(log.n - 1, -1, -1):
        j = log.ids[e]
        tree.nodes[j] = log.nodes[e]
        slot = log.slots[e]
        if slot >= 0:
            memcpy(tree.bounds + 2 * D * slot, log.bounds + 2 * D * e,
                   2 * D * sizeof(float64_t))
        elif slot <= -2:  # (logged without its box: unchanged by the update)
            slot = -2 - slot
        tree.box_slot[j] = <int32_t>slot
        if S > 0 and stored_row(tree, j) != NULL:  # (the slot restored just above)
            memcpy(<float64_t*>stored_row(tree, j), log.values + S * e, S * sizeof(float64_t))
    for e in range(log.sn - 1, -1, -1):
        tree.sample_next[log.samples[2 * e]] = log.samples[2 * e + 1]
    if tree.n_samples_seen > log.samples_seen:
        memset(tree.sample_next + log.samples_seen, 0xFF,
               (tree.n_samples_seen - log.samples_seen) * sizeof(intp_t))
    tree.n_samples_seen = log.samples_seen
    tree.node_count = log.node_count
    tree.box_count = log.box_count  # boxes given since are dropped with their nodes
    tree.rng = log.rng
    if log.widened:
        free(tree.value)
        tree.value = log.old_value
        tree.value_stride = log.old_stride
        # The old buffer holds the capacity it had then (the other buffers may be larger).
        if tree.lean_values:
            tree.box_capacity = min(tree.box_capacity, log.old_capacity)
        else:
            tree.capacity = min(tree.capacity, log.old_capacity)
        log.old_value = NULL
    if log.reordered:
        free(tree.columns)
        tree.columns = log.old_columns
        tree.n_columns = log.old_n_columns
        tree.columns_capacity = log.old_columns_capacity
        log.old_columns = NULL
    _close(log)
    return 0


cdef int undo_commit(MondrianTree tree) except -1:
    """``MondrianTree.commit_undo``: keep the changes since the log opened; close it."""
    cdef UndoLog* log = &tree.undo
    if not log.on:
        return 0
    if log.widened:
        free(log.old_value)
        log.old_value = NULL
    if log.reordered:
        free(log.old_columns)
        log.old_columns = NULL
    _close(log)
    return 0


cdef void _close(UndoLog* log) noexcept nogil:
    undo_fence(log)
    log.on = False
    log.widened = False
    log.reordered = False
    log.n = 0
    log.sn = 0
    if log.cap > 4096 or log.scap > 4096:
        undo_free(log)  # a large batch's log: do not keep its memory


cdef int undo_save_columns(MondrianTree tree) except -1:
    """Keep the read columns of ``tree`` for a rollback, once per open log."""
    cdef UndoLog* log = &tree.undo
    if not log.on or log.reordered:
        return 0
    log.old_columns = tree.columns
    log.old_n_columns = tree.n_columns
    log.old_columns_capacity = tree.columns_capacity
    tree.columns = NULL
    tree.columns_capacity = 0
    try:
        tree._set_columns(log.old_columns, log.old_n_columns)
    except MemoryError:
        tree.columns = log.old_columns
        tree.columns_capacity = log.old_columns_capacity
        log.old_columns = NULL
        raise
    log.reordered = True
    return 0


cdef bint undo_keep_values(MondrianTree tree, intp_t old_stride,
                           intp_t old_capacity) noexcept:
    """Before the statistics buffer of ``tree`` is replaced (``set_value_columns``): keep it
    for a rollback, once per open log (the widening copies it anyway). False when the caller
    frees it (no log open, or the first buffer of this log is kept already)."""
    cdef UndoLog* log = &tree.undo
    if not log.on or log.widened:
        return False
    log.old_value = tree.value
    log.old_stride = old_stride
    log.old_capacity = old_capacity
    log.widened = True
    return True
