from mondrian.core._forget_bulk cimport BulkCall, Lead
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t


cdef BulkCall* prepare_call(list trees, const float64_t[:, ::1] X,
                            const float64_t[:, ::1] rows, const intp_t[::1] indices,
                            const float64_t[:, ::1] deltas, const unsigned char[::1] drop,
                            BulkCall* bulk, unsigned char** mark) except? NULL
cdef void release_call(BulkCall* bulk, unsigned char* mark) noexcept
cdef const Lead* tree_leads(MondrianTree t, const BulkCall* bulk) noexcept nogil
cdef bint fails_pause_surely(MondrianTree t, intp_t j, const float64_t* rows,
                             const Lead* leads) noexcept nogil
