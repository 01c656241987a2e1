# The classifier's entries of the prediction cache (_hnsp_cache.pyx).
from libc.stdint cimport uint16_t

from mondrian.core._batch_walk cimport BoxSource
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.forest._node_cache cimport BoxCoder, NodeTables


cdef NodeTables tree_entry(object cache, MondrianTree tree, intp_t n, float64_t gamma,
                           float64_t lam, bint batched, intp_t forest_trees, bint* tabled,
                           bint* fresh)
cdef int fill_codes(MondrianTree tree, NodeTables kept, intp_t** queue,
                    size_t* queue_size) except -1 nogil


# Features from which a batch measures coded boxes from its rows' half-ranks rather than
# from each box decoded (``core._batch_walk.BoxSource``).
cdef intp_t RANK_MIN_FEATURES


cdef class CallCodes:
    # The rows' ranks of one call among a coder's values (``_node_cache.row_ranks``), for
    # the trees whose boxes the call reads as codes; computed once per call and coder.
    cdef uint16_t* ranks
    cdef size_t ranks_size
    cdef BoxCoder ranked     # the coder of ``ranks`` (None: none yet)
    cdef bint have_ranks     # False: no ranks (too few features, a NaN): boxes decoded
    cdef intp_t n_features

    cdef int point(self, NodeTables kept, const float64_t* X, intp_t n, intp_t x_step,
                   BoxSource* source) except -1
    cdef const uint16_t* rows(self, intp_t start) noexcept nogil
