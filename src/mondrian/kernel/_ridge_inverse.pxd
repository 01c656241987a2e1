# The inverse of A = Z'Z + delta2 I under appended, removed and merged features
# (_ridge_inverse.pyx), cimported by the ridge path visitor (_ridge_path.pyx).
from mondrian.core._typedefs cimport float64_t, intp_t

# Cuts whose rank-3 corrections are gathered before one BLAS-3 update of the inverse.
cdef enum:
    PENDING_CUTS = 32


cdef class RidgeInverse:
    cdef float64_t[:, ::1] inv      # (capacity, capacity); the leading C x C block is live
    cdef float64_t[::1] zty         # Z'y of the live features
    cdef float64_t[::1] weights     # A^{-1} Z'y
    cdef float64_t[::1] work        # scratch vector
    # Pending low-rank corrections of split(): the true inverse is inv + P W' (columns of P
    # and W are rows of these buffers, zero past their feature count), added in one BLAS-3
    # product every PENDING_CUTS cuts instead of one rank-3 pass over the matrix per cut.
    cdef float64_t[:, ::1] pending_w
    cdef float64_t[:, ::1] pending_p
    cdef intp_t n_pending
    cdef readonly intp_t n_features
    cdef readonly intp_t capacity
    cdef readonly float64_t delta2
    cdef readonly float64_t logdet  # log |A|
    # A checkpoint (checkpoint/rollback, for trial moves): the live sizes, the O(C) state and
    # the pending rows are copied at once; the C x C block only when an operation is about to
    # change it (copy on write): a trial of splits alone never does, it only appends borders.
    cdef bint armed, block_saved
    cdef intp_t saved_c, saved_k
    cdef float64_t saved_logdet
    cdef float64_t[:, ::1] saved_block
    cdef object saved_small

    cdef void _touch(self) noexcept nogil
    cdef void _flush(self) noexcept nogil
    cdef void _swap(self, intp_t a, intp_t b) noexcept nogil
    cdef void _drop_last(self) noexcept nogil
    cdef void remove(self, intp_t c) noexcept nogil
    cdef void append(self, float64_t* b, float64_t diagonal, float64_t zty) noexcept nogil
    cdef void split(self, intp_t c, float64_t* b_left, float64_t diag_left, float64_t zty_left,
                    float64_t* b_right, float64_t diag_right,
                    float64_t zty_right) noexcept nogil
    cdef void merge(self, intp_t i, intp_t j) noexcept nogil
    cdef void solve(self) noexcept nogil
    cdef int _reserve(self, intp_t n) except -1
