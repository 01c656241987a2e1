# What a lean MondrianTree does not store (boxes, statistics rows), rebuilt from its points.
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t


cdef void leaf_box(MondrianTree tree, intp_t node, const float64_t* X,
                   float64_t* lo) noexcept nogil
cdef void rebuild_row(MondrianTree tree, intp_t node, const float64_t* rows,
                      float64_t* out) noexcept nogil
cdef intp_t breadth_first(MondrianTree tree, intp_t* queue) noexcept nogil
cdef int all_values(MondrianTree tree, float64_t* out, intp_t* queue) except -1 nogil
cdef int all_boxes(MondrianTree tree, float64_t* out, intp_t* queue) except -1 nogil
cdef tuple derived(MondrianTree tree, const float64_t* xp, intp_t n_stored,
                   object rows_object)
cdef object leaf_assignment(MondrianTree tree)
cdef object node_depths(MondrianTree tree)
cdef object every_value(MondrianTree tree)
cdef object every_box(MondrianTree tree)
cdef dict memory_usage(MondrianTree tree)
