# Online extension of a MondrianTree (the builder of sections 2 and 3) and its node operations,
# on the tree's storage.
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t


cdef int extend_tree(MondrianTree tree, intp_t* idx, intp_t n, const float64_t* X,
                     const float64_t* rows) except -1 nogil
cdef int prepend_to_leaf(MondrianTree tree, intp_t node, const intp_t* idx, intp_t start,
                         intp_t end) except -1 nogil
cdef intp_t descend(MondrianTree tree, intp_t top, intp_t node, intp_t start, intp_t mid,
                    intp_t end) except -1 nogil
cdef int extend_checked(MondrianTree tree, const float64_t[:, ::1] X,
                        const float64_t[:, ::1] rows, const intp_t[::1] indices) except -1
cdef int extend_tree_list(list trees, const float64_t[:, ::1] X, const float64_t[:, ::1] rows,
                          const intp_t[::1] indices) except -1
