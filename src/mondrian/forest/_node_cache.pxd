# Per-tree quantities of prediction kept between calls (_node_cache.pyx).
from mondrian.core._typedefs cimport float64_t, intp_t


cdef class NodeTables:
    # The test-point-independent rows of every node of one tree read at one lifetime and
    # discount (the classifier's IKN tables: counts (node_count, K), n_cust, n_tab, then the
    # posteriors (node_count + 1, K)) and, when ``boxes`` is not NULL, every node's box
    # (node_count rows of 2 D). Written once by the call that builds them, read-only after.
    cdef float64_t* tables
    cdef float64_t* boxes
    cdef readonly intp_t node_count
    cdef readonly intp_t nbytes
