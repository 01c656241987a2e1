# C types shared by every compiled module of the package.
from libc.stdint cimport int64_t, uint64_t  # noqa: F401  (re-exported)

ctypedef double float64_t
ctypedef Py_ssize_t intp_t

cdef enum:
    # Largest box_min_samples of a tree (lean boxes, _tree.pxd): a node without a stored box
    # holds fewer points than this, so a walk gathers them in a fixed array (_walk.pxd).
    BOX_POINTS_MAX = 256
    # Features per block when a box is rebuilt from points (two stack arrays of this size).
    BOX_BLOCK = 64
