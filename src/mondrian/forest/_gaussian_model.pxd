# The Gaussian tree model's C arithmetic, shared by the upward messages (_gaussian.pyx), their
# online refresh (_gaussian_online.pyx) and the predictive kernel (_gaussian_predict.pyx): the
# hyperparameters as a struct and the inline formulas (compiled into each module that uses them,
# so no call crosses a module in the hot loops).
from libc.math cimport INFINITY, exp

from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t


cdef struct Hyper:
    # GaussianPrior as a C struct, plus the lifetime at which the tree is read.
    float64_t mean0       # value of the virtual node above the root
    float64_t sigma2      # scale of the variance clock psi (hierarchical model)
    float64_t rate        # rate of the sigmoid in psi
    float64_t noise       # observation noise variance
    float64_t prior_var   # leaf prior variance (independent model)
    float64_t lifetime    # lifetime at which the tree is read
    bint hierarchical     # hierarchical (True) or independent leaves (False)


cdef inline float64_t _clock_denominator(float64_t rate, float64_t t) noexcept nogil:
    # ``1 + exp(-rate t)`` (1 at ``t = inf``): ``psi(t) = sigma2 / _clock_denominator(rate, t)``,
    # so every prior of one rate shares it.
    if t == INFINITY:
        return 1.0
    return 1.0 + exp(-rate * t)


cdef inline void _product(float64_t ma, float64_t va, float64_t mb, float64_t vb,
                          float64_t* m, float64_t* v) noexcept nogil:
    # Mean and variance of the normalised product of two Gaussian densities in one variable.
    # An infinite variance is a flat factor (a message from a node without labels).
    cdef float64_t total = va + vb
    if va == INFINITY or vb == INFINITY:
        m[0] = mb if va == INFINITY else ma
        v[0] = vb if va == INFINITY else va
        return
    v[0] = va * vb / total
    m[0] = (ma * vb + mb * va) / total


cdef inline void _leaf_message(MondrianTree tree, intp_t j, const Hyper* h,
                               float64_t* mean, float64_t* var) noexcept nogil:
    # Likelihood message of a leaf's data about its mean (flat without labels).
    cdef float64_t n = tree.value[3 * j]
    if n <= 0.0:
        mean[0] = 0.0
        var[0] = INFINITY
        return
    mean[0] = tree.value[3 * j + 1] / n
    var[0] = h.noise / n
