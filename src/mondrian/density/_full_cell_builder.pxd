# The builder of the density's full-cell trees (a Builder of mondrian.core._tree: FullCellTree
# sets it as its tree's builder).
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t


cdef int extend_cells(MondrianTree tree, intp_t* idx, intp_t n, const float64_t* X,
                      const float64_t* rows) except -1 nogil
