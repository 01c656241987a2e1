# The predictive kernel of the Gaussian tree model (_gaussian_predict.pyx), called by the
# prediction entry points of _gaussian.pyx once per tree and call.
from libc.stdint cimport int32_t

from mondrian.core._batch_walk cimport BatchEtas
from mondrian.core._group_walk cimport GroupRows
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.forest._gaussian_model cimport Hyper


cdef struct Outer:
    # What the predictive of a tree needs at a node besides the test point's walk, for the P
    # priors of a call: the same for every row, so found once per node per call (lazily, on the
    # paths of the rows) instead of once per row on every node of its path. A call of one row
    # keeps (``memo`` False) only the records of the node and its parent, in two slots by depth.
    bint memo              # records by node (many rows) or by depth parity (one row)
    unsigned char* known   # node_count flags; all 0 between trees (memo)
    intp_t* filled         # the nodes flagged so far (to clear them for the next tree)
    intp_t n_filled
    float64_t* rec         # slot s, prior k: the OUTER_FIELDS floats at rec[OUTER_FIELDS (s P + k)]
    float64_t* psi_end     # P floats: psi at the lifetime (a branch-off node's leaf time)
    float64_t* u           # n_quadrature floats: the quadrature's points in (0, 1)
    BatchEtas batch        # the etas of a batch of rows (_batched)
    GroupRows* groups      # three groups of rows walked over every box (_predict_groups)
    size_t groups_size
    # A shorter Reading of the same rows that follows this one (NULL otherwise): filling a
    # node of its tree, this one asks for what the other will read there (hints).
    const float64_t* hint_means
    const float64_t* hint_vars
    float64_t* hint_rec
    float64_t hint_lifetime
    # A row's branch-off nodes waiting for their clocks (found together, in vector lanes):
    # per node its record and weight, per quadrature point the argument of log1p, the
    # parent's time and eta, then the clock denominator.
    intp_t n_pend
    const float64_t** pend_rec
    float64_t* pend_w
    intp_t* pend_j
    float64_t* pend_pts    # 4 arrays of PENDING_NODES n_quadrature floats: a, tau, eta, d
    size_t known_size, filled_size, rec_size, psi_end_size, u_size
    size_t pend_rec_size, pend_w_size, pend_j_size, pend_pts_size


cdef struct Reading:
    # A second reading of the rows of a predict_rows call: the same tree read pruned at a
    # lifetime no longer than the first's (the debiased combination's shorter forest), under
    # its own prior (one), messages and records; row i adds its moments at ``moments + i
    # row_step`` (the call's row_step; two columns: mean, second moment).
    const Hyper* hs
    float64_t** msg_means
    float64_t** msg_vars
    Outer* o
    float64_t* moments


# One tree's predictive at the n rows of X under the P priors hs (see the .pyx), and under a
# second Reading if ``shorter`` is not NULL; o (and shorter.o) zeroed before its first use,
# outer_free(o) when done.
cdef int predict_rows(MondrianTree tree, const Hyper* hs, intp_t P, const float64_t* X,
                      intp_t n, intp_t x_step, float64_t** msg_means, float64_t** msg_vars,
                      intp_t n_quadrature, float64_t* box, bint plain, Outer* o,
                      float64_t* sums, float64_t* moments, intp_t row_step, intp_t stride,
                      bint squared_mean, const float64_t* boxes=*,
                      const int32_t* slots=*, const Reading* shorter=*) except -1 nogil
cdef void outer_free(Outer* o) noexcept nogil
