# Lifetime paths of Mondrian forests: one traversal of the cuts, many statistics readers.
from mondrian.core._typedefs cimport float64_t, intp_t


cdef class PathReader:
    # How a model reads the forest along the path: per-point state, updated when a point moves
    # between a node and one of its children in one tree, and the metrics it records.
    cdef readonly intp_t n_metrics

    cdef void move(self, intp_t tree, intp_t point, intp_t src, intp_t dst,
                   bint descend) noexcept nogil
    cdef void record(self, float64_t* row) noexcept nogil
