# The Gaussian tree model's C interface, shared by the batch kernels (_gaussian.pyx) and the
# online refresh of the upward messages (_gaussian_online.pyx).
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.forest._gaussian_model cimport Hyper


cdef class GaussianPrior:
    cdef readonly float64_t mean0
    cdef readonly float64_t noise
    cdef readonly float64_t prior_var
    cdef readonly float64_t sigma2
    cdef readonly float64_t rate
    cdef readonly bint hierarchical

    cdef Hyper at(self, float64_t lifetime)


cdef void node_messages(MondrianTree tree, intp_t j, const Hyper* hs, intp_t P,
                        float64_t* msg_mean, float64_t* msg_var, intp_t stride,
                        float64_t* log_ml) noexcept nogil
