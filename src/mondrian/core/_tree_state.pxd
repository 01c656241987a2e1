# Versioned state of a MondrianTree (pickles, compact states): the tree's methods call these.
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t


cdef dict tree_getstate(MondrianTree tree)
cdef int tree_setstate(MondrianTree tree, object state) except -1
cdef object tree_compact_state(MondrianTree tree, const float64_t[:, ::1] X,
                               const float64_t[:, ::1] rows)
cdef MondrianTree tree_from_compact_state(object state, const float64_t[:, ::1] X,
                                          const float64_t[:, ::1] rows)
