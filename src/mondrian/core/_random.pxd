# A small nogil pseudo-random generator (xoshiro256**), seeded by splitmix64.
#
# Every tree owns one RandomState, so its draws do not depend on how trees are
# spread over threads, and the state is saved with the model so that training can
# resume exactly after unpickling.
from libc.math cimport INFINITY, log
from mondrian.core._typedefs cimport float64_t, intp_t, uint64_t

cdef struct RandomState:
    uint64_t s0  # the four words of xoshiro256** state
    uint64_t s1
    uint64_t s2
    uint64_t s3


cdef inline uint64_t _rotl(uint64_t x, int k) noexcept nogil:
    return (x << k) | (x >> (64 - k))


cdef inline uint64_t _splitmix64(uint64_t* x) noexcept nogil:
    x[0] += <uint64_t>0x9E3779B97F4A7C15
    cdef uint64_t z = x[0]
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


cdef inline void rng_seed(RandomState* st, uint64_t seed) noexcept nogil:
    cdef uint64_t x = seed
    st.s0 = _splitmix64(&x)
    st.s1 = _splitmix64(&x)
    st.s2 = _splitmix64(&x)
    st.s3 = _splitmix64(&x)


cdef inline uint64_t rng_next(RandomState* st) noexcept nogil:
    cdef uint64_t result = _rotl(st.s1 * 5, 7) * 9
    cdef uint64_t t = st.s1 << 17
    st.s2 ^= st.s0
    st.s3 ^= st.s1
    st.s1 ^= st.s2
    st.s0 ^= st.s3
    st.s2 ^= t
    st.s3 = _rotl(st.s3, 45)
    return result


cdef inline float64_t rng_uniform(RandomState* st) noexcept nogil:
    """Uniform draw on the open interval (0, 1)."""
    return ((rng_next(st) >> 11) + 0.5) * (1.0 / 9007199254740992.0)


cdef inline float64_t rng_exponential(RandomState* st, float64_t rate) noexcept nogil:
    """Exponential draw with the given rate; +inf when the rate is 0."""
    if rate <= 0.0:
        return INFINITY
    return -log(rng_uniform(st)) / rate


cdef inline intp_t rng_weighted(RandomState* st, const float64_t* weights, intp_t n,
                                float64_t total) noexcept nogil:
    """Index i drawn with probability weights[i] / total (weights >= 0, total > 0)."""
    cdef float64_t target = rng_uniform(st) * total
    cdef float64_t acc = 0.0
    cdef intp_t i, last = -1
    for i in range(n):
        if weights[i] > 0.0:
            acc += weights[i]
            last = i
            if target < acc:
                return i
    # Rounding can leave target just above the running sum: take the last positive weight.
    return last


cdef inline float64_t rng_uniform_open(RandomState* st, float64_t low,
                                       float64_t high) noexcept nogil:
    """Uniform draw on the open interval (low, high), for low < high.

    Rounding can return an endpoint when the interval is narrow; such draws are redrawn so that
    cuts never leave a side empty.
    """
    cdef float64_t v
    cdef int tries = 0
    while True:
        v = low + rng_uniform(st) * (high - low)
        if low < v < high:
            return v
        tries += 1
        if tries > 64:
            # No representable interior point: `low` still separates low from high under the
            # routing rule (go left iff x <= threshold).
            return low
