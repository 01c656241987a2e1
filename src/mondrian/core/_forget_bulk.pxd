from libc.stdint cimport int32_t

from mondrian.core._tree cimport TREE_LEAF, MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t

# Points per call from which a forget walks them together (level by level) rather than one
# path at a time (set_bulk_min_points; measured: benchmarks/results/forget.md).
cdef intp_t bulk_min_points

# A bulk forget of at least 1/WARM_SHARE of the stored points streams the whole tree into the
# cache first (warm_tree) and flags the leaving points in a byte per stored point: both cost
# O(stored points), a bounded multiple of the call's own work then.
cdef enum:
    WARM_SHARE = 64


cdef struct Arena:
    # Scratch memory reserved before a forget's first write (commit_forget): take() bumps a
    # pointer and never fails while the bounds it was sized for hold; give() is a no-op. A
    # NULL arena stands for malloc and free.
    char* base
    size_t cap
    size_t used


cdef void* take(Arena* arena, size_t n_bytes) noexcept nogil
cdef void give(Arena* arena, void* p) noexcept nogil


cdef struct Lead:
    # A stored point's first two non-zero read columns (k1 < k2, -1 where there is none)
    # and its row's entries there (mondrian.core._forget_call).
    int32_t k1
    int32_t k2
    float64_t v1
    float64_t v2


cdef struct BulkCall:
    # What a forget of many points computes once for every tree.
    intp_t* nz_start       # (n + 1,) the non-zero entries of each delta row: columns of
    intp_t* nz_columns     # nz_columns[nz_start[k]:nz_start[k + 1]] (nonzero_columns)
    float64_t* nz_values   # the delta's entries there (read together: no delta row read)
    unsigned char* gone    # (n_stored,) 1 for the store indices that leave, or NULL (few)
    # (n_stored + 1,) where gone: each leaving store index's position k in the call, else
    # -1 (the last entry too), or NULL (unlink_by_links)
    int32_t* call_of
    float64_t* xt          # (D, n) the points' coordinates by feature (gather_columns)
    bint nonneg_rows       # every stored contribution row is >= 0 (checked for large calls)
    Lead* leads            # (n_stored,) the rows' leads for the read columns lead_columns,
    intp_t* lead_columns   # or NULL (tree_leads)
    intp_t lead_n_columns


cdef int gather_columns(const float64_t* X, intp_t D, const intp_t* idx, intp_t n,
                        float64_t* xt) noexcept nogil
cdef int nonzero_columns(const float64_t* delta, intp_t n, intp_t S, intp_t* start,
                         intp_t* columns, float64_t* values) noexcept nogil
cdef intp_t route_batch(MondrianTree t, const intp_t* idx, const float64_t* delta,
                        const BulkCall* bulk,
                        const unsigned char* drop, intp_t n, const float64_t* X,
                        unsigned char* mark, unsigned char bit, intp_t* leaves,
                        intp_t* n_marked, Arena* arena) except -1 nogil
cdef intp_t relocate_batch(MondrianTree t, const intp_t* movers, const intp_t* holes,
                           intp_t n, intp_t n_kept, const float64_t* xt,
                           Arena* arena) except -1 nogil
cdef intp_t relocate_scan(MondrianTree t, const intp_t* movers, const intp_t* holes,
                          intp_t n, intp_t n_kept, intp_t* slot_of) except -1 nogil
cdef void warm_tree(MondrianTree t) noexcept nogil
cdef int walk_paths(MondrianTree t, const intp_t* idx, const float64_t* delta,
                    const unsigned char* drop, intp_t n, const float64_t* X,
                    unsigned char* mark, unsigned char bit, intp_t* leaves, intp_t* n_marked,
                    intp_t* nonzero) except -1 nogil
cdef intp_t unlink_by_links(MondrianTree t, const intp_t* idx, const intp_t* leaves,
                            const unsigned char* drop, intp_t n, const int32_t* call_of,
                            intp_t* pred, intp_t* removed) noexcept nogil
cdef intp_t unlink_dropped(MondrianTree t, unsigned char* mark, unsigned char bit,
                           const intp_t* leaves, const unsigned char* drop, intp_t n,
                           const intp_t* dropped, intp_t n_drop, const unsigned char* gone,
                           intp_t* removed) except -1 nogil


cdef inline int rename_listed(MondrianTree t, intp_t leaf, intp_t prev, intp_t old, intp_t new,
                              intp_t nxt) except -1 nogil:
    """The listed point ``old`` (after ``prev`` in the list of ``leaf``, or at its head when
    ``prev`` is TREE_LEAF; followed by ``nxt``) becomes the store index ``new``; logged."""
    t._log_sample(new)
    t.sample_next[new] = nxt
    t._log_sample(old)
    t.sample_next[old] = TREE_LEAF
    if prev == TREE_LEAF:
        t._log_node(leaf)
        t.nodes[leaf].first_sample = new
    else:
        t._log_sample(prev)
        t.sample_next[prev] = new
    return 0
