# The classifier's entries of the prediction cache (_hnsp_cache.pyx).
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.forest._node_cache cimport NodeTables


cdef NodeTables tree_entry(object cache, MondrianTree tree, intp_t n, float64_t gamma,
                           float64_t lam, bint batched, intp_t forest_trees, bint* tabled,
                           bint* fresh)
cdef int fill_codes(MondrianTree tree, NodeTables kept, intp_t** queue,
                    size_t* queue_size) except -1 nogil


# Features from which a batch measures coded boxes from its rows' half-ranks rather than
# from each box decoded (``core._batch_walk.BoxSource``).
cdef intp_t RANK_MIN_FEATURES
