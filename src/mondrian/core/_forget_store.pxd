from mondrian.core._forget_bulk cimport Arena
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t

# Trees whose paths warm_trees walks at once (their reads fit in a core's cache).
cdef enum:
    WARM_CHUNK = 16


cdef int cmp_intp(const void* a, const void* b) noexcept nogil
cdef int fill_node_holes(MondrianTree t, intp_t* dead, intp_t n_dead, const unsigned char* mark,
                         unsigned char dead_bit, Arena* arena) except -1 nogil
cdef intp_t fill_slot_holes(MondrianTree t, intp_t* free_slots, intp_t n_free,
                            Arena* arena) except -1 nogil
cdef int warm_trees(list trees, intp_t start, const float64_t* x, const float64_t* X,
                    intp_t D, bint log) except -1
cdef intp_t _relocate(MondrianTree t, intp_t old, intp_t new,
                      const float64_t* X) except -1 nogil
