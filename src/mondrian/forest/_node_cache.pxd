# Per-tree quantities of prediction kept between calls (_node_cache.pyx).
from libc.stdint cimport uint16_t

from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t


cdef class BoxCoder:
    # Every box bound of a lean tree is a coordinate of one of its stored points (or +-inf,
    # the box of a leaf without points): a box is kept exactly as 2 D rank codes into the
    # sorted distinct values of each feature of the store (``values``; feature d's from
    # ``starts[d]``, ``counts[d]`` of them, -inf first and +inf last; ``starts[D + d] ==
    # starts[d]``, so a box's 2 D codes decode with one loop), of ``code_size`` bytes (1 or 2).
    # Decoding reads the very double that was encoded (encode_boxes checks every bound's
    # bits), so distances from decoded boxes have the bits of distances from the float ones.
    cdef float64_t* values
    cdef intp_t* starts
    cdef intp_t* counts
    cdef uint16_t* point_codes  # the code of every stored point's every feature (n_points, D)
    cdef readonly intp_t n_points
    cdef readonly intp_t n_features
    cdef readonly intp_t code_size
    cdef readonly intp_t nbytes
    cdef object owner       # the store's points (the coder is found by their id)


cdef class NodeTables:
    # The test-point-independent rows of every node of one tree read at one lifetime and
    # discount (the classifier's IKN tables: a record per node and one for the root's
    # parent, forest/_hnsp_kernels.h) and, when ``boxes`` is not NULL, every node's box
    # (node_count rows of 2 D); or, when ``codes`` is not NULL, every node's box as codes
    # of ``coder`` (node_count rows of 2 D codes). Written once by the call that builds them,
    # read-only after.
    cdef float64_t* tables
    cdef float64_t* boxes
    cdef void* codes
    cdef BoxCoder coder
    cdef readonly intp_t node_count
    cdef readonly intp_t nbytes

    cdef void drop_codes(self) noexcept nogil


cdef bint row_ranks(BoxCoder coder, const float64_t* X, intp_t n, intp_t x_step,
                    uint16_t* out) noexcept nogil
cdef bint encode_boxes(BoxCoder coder, MondrianTree tree, intp_t* queue,
                       void* codes) noexcept nogil
