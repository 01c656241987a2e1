# Batch growth of a MondrianTree (the builder of section 1.2), on the tree's storage.
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t


cdef int grow_tree(MondrianTree tree, intp_t node, intp_t* idx, intp_t start, intp_t end,
                   float64_t tau_parent, const float64_t* X,
                   const float64_t* rows) except -1 nogil
