from mondrian.core._forget_bulk cimport Arena, BulkCall
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t


cdef intp_t _forget(MondrianTree t, const intp_t* idx, const float64_t* delta,
                    const BulkCall* bulk, const unsigned char* drop, intp_t n,
                    const float64_t* X, bint full_cells, unsigned char* mark,
                    Arena* arena) except -1 nogil
