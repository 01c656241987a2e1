# The C box loops of the tree core (_box_loops.h: vectorised, with the tie rule of the Cython
# code, so the same bits), for the storage module and the builders.
from mondrian.core._typedefs cimport float64_t, intp_t


cdef extern from "mondrian/core/_box_loops.h":
    void mf_rows_box(const float64_t* X, intp_t D, const intp_t* idx, intp_t n,
                     float64_t* lo) noexcept nogil
    intp_t mf_partition_boxes(intp_t* idx, intp_t start, intp_t end, const float64_t* X,
                              intp_t D, intp_t feature, float64_t threshold,
                              float64_t* left, float64_t* right) noexcept nogil
    void mf_rows_grow(const float64_t* X, intp_t D, const intp_t* idx, intp_t n,
                      float64_t* lo) noexcept nogil
    void mf_add_rows(float64_t* val, const float64_t* rows, intp_t S, const intp_t* idx,
                     intp_t n) noexcept nogil
    void MONDRIAN_TREE_PREFETCH(const void* p) noexcept nogil
    void mf_prefetch_span(const void* start, intp_t n_bytes) noexcept nogil
    void mf_include(float64_t* lo, float64_t* hi, const float64_t* x, intp_t D) noexcept nogil
    void mf_join(float64_t* lo, float64_t* hi, const float64_t* bmin, const float64_t* bmax,
                 intp_t D) noexcept nogil
    float64_t mf_extent(const float64_t* box, const float64_t* bmin, const float64_t* bmax,
                        float64_t* extent, intp_t D) noexcept nogil
