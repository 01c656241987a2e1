# Online extension of a MondrianTree (the builder of sections 2 and 3), on the tree's storage.
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t


cdef int extend_tree(MondrianTree tree, intp_t* idx, intp_t n, const float64_t* X,
                     const float64_t* rows) except -1 nogil
