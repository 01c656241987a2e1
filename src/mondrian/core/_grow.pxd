# Batch growth of a MondrianTree (the builder of section 1.2) and the node operations of every
# builder (pause rule, leaf lists, cuts, growth stack), on the tree's storage.
from mondrian.core._tree cimport MondrianTree, StackRecord
from mondrian.core._typedefs cimport float64_t, intp_t


cdef int grow_tree(MondrianTree tree, intp_t node, intp_t* idx, intp_t start, intp_t end,
                   float64_t tau_parent, const float64_t* X,
                   const float64_t* rows) except -1 nogil
cdef int start_stack(StackRecord** stack, intp_t* capacity, intp_t node, intp_t start,
                     intp_t end, float64_t tau_parent) except -1 nogil
cdef bint should_pause(MondrianTree tree, intp_t node, const float64_t* val) noexcept nogil
cdef int make_leaf_list(MondrianTree tree, intp_t node, intp_t* idx, intp_t start,
                        intp_t end) except -1 nogil
cdef intp_t split_node(MondrianTree tree, intp_t node, intp_t feature, float64_t threshold,
                       float64_t split_time) except -1 nogil
cdef intp_t push_children(MondrianTree tree, intp_t top, intp_t left, intp_t start,
                          intp_t mid, intp_t end, float64_t split_time) except -1 nogil
