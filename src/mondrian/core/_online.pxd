from mondrian.core._typedefs cimport float64_t, intp_t


cdef const float64_t* floats_in_place(object a, intp_t n, intp_t* step) except? NULL
cdef bint scale_into(const float64_t* xp, intp_t xs, const float64_t* op, intp_t os,
                     const float64_t* sp, intp_t ss, const float64_t* wp, intp_t ws, intp_t D,
                     float64_t limit, bint clip, float64_t* outp) noexcept nogil
