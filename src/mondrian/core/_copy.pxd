# New trees from a MondrianTree (copy, pruned copy, shifted store); the tree's methods call these.
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t


cdef MondrianTree tree_copy(MondrianTree tree)
cdef MondrianTree tree_pruned(MondrianTree tree, float64_t lifetime)
cdef int tree_shift_samples(MondrianTree tree, intp_t offset) except -1
cdef list subtree_samples(MondrianTree tree, intp_t node)
