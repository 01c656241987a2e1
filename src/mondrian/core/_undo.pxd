# The undo log of a MondrianTree (its UndoLog struct is declared with the tree, in _tree.pxd):
# one online update can be rolled back bit for bit.
from mondrian.core._tree cimport MondrianTree, UndoLog
from mondrian.core._typedefs cimport intp_t


cdef int undo_log_node(MondrianTree tree, intp_t node, bint with_box) except -1 nogil
cdef int undo_log_sample(MondrianTree tree, intp_t i) except -1 nogil
cdef void undo_fence(UndoLog* log) noexcept nogil
cdef void undo_free(UndoLog* log) noexcept nogil
cdef bint undo_begin(MondrianTree tree) noexcept
cdef int undo_rollback(MondrianTree tree) except -1
cdef int undo_commit(MondrianTree tree) except -1
cdef int undo_save_columns(MondrianTree tree) except -1
cdef bint undo_keep_values(MondrianTree tree, intp_t old_stride, intp_t old_capacity) noexcept
