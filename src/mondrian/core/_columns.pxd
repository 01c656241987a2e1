# The statistics columns of a MondrianTree (widening, read order); the tree's methods call these.
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport intp_t


cdef int tree_set_value_columns(MondrianTree tree, intp_t new_stride,
                                const intp_t[::1] column_map) except -1
cdef int set_trees_column_order(list trees, object order) except -1
cdef bint trivial_columns(MondrianTree tree) noexcept
