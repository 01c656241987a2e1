from mondrian.core._batch_walk cimport BatchEtas
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t


cdef void _predict_row(MondrianTree tree, const float64_t* x, float64_t gamma,
                       bint strict, float64_t lifetime, bint plain, float64_t* g_parent,
                       float64_t* g, float64_t* counts, float64_t* rows, float64_t* box,
                       const BatchEtas* batch, intp_t r, float64_t* out) noexcept nogil
