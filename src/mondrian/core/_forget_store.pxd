from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport intp_t


cdef int cmp_intp(const void* a, const void* b) noexcept nogil
cdef intp_t fill_slot_holes(MondrianTree t, intp_t* free_slots, intp_t n_free) except -1 nogil
