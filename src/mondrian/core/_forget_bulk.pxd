from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t

# Points per call from which a forget walks them together (level by level) rather than one
# path at a time (set_bulk_min_points; measured: benchmarks/results/forget.md).
cdef intp_t bulk_min_points


cdef int nonzero_columns(const float64_t* delta, intp_t n, intp_t S, intp_t* start,
                         intp_t* columns) noexcept nogil
cdef intp_t route_batch(MondrianTree t, const intp_t* idx, const float64_t* delta,
                        const intp_t* nz_start, const intp_t* nz_columns,
                        const unsigned char* drop, intp_t n, const float64_t* X,
                        unsigned char* mark, unsigned char bit, intp_t* leaves,
                        intp_t* n_marked) except -1 nogil
cdef intp_t relocate_batch(MondrianTree t, const intp_t* movers, const intp_t* holes,
                           intp_t n, intp_t n_kept, const float64_t* X) except -1 nogil
cdef void warm_tree(MondrianTree t) noexcept nogil
