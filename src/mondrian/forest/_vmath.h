/* exp and log1p in vector lanes, for the branch-off quadrature of the regressor's predictive
   (mondrian.forest._gaussian_predict), included by
   `cdef extern from "mondrian/forest/_vmath.h"`.

   glibc's exp and log1p are scalar calls; these are written as straight-line IEEE operations
   (products, sums, quotients, selections and integer operations on the bits) with no branch,
   so that GCC runs a loop of them in vector lanes. Every clone (AVX-512, AVX2, SSE2) and the
   portable loop perform the same operations in the same order without fused products
   (fp-contract off), so they give the same bits; the results are within about one ulp of the
   correctly rounded values (checked against glibc by tests/forest/test_vmath.py).

   exp: x = n ln2 + r with |r| <= ln2 / 2 (ln2 split in two so that n ln2_hi is exact), exp(r)
   by its Taylor series to r**13 (the remainder below 1e-17 relative), then scaled by 2**n in
   two exact power-of-two factors (so that subnormal results round once).
   log1p: y = 1 + a rounded, c = (a - (y - 1)) / y its rounding error relative to y, y = 2**e m
   with m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s) for s = f / (2 + f), f = m - 1, by its
   series in s**2 to s**21 (the remainder below 1e-18 relative).
   expm1 (the classifier's branch-off terms, mondrian.forest._hnsp): see mf_vm_expm1. */
#ifndef MONDRIAN_FOREST_VMATH_H
#define MONDRIAN_FOREST_VMATH_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
/* No fused products (the same bits in every clone); no trapping math, so that GCC may
   compute both sides of a selection (if-conversion: the loops in vector lanes). Neither
   changes a value. */
#define MF_VMATH_FLAGS optimize("fp-contract=off", "no-trapping-math")
#define MF_VMATH_OPT __attribute__((MF_VMATH_FLAGS))
#define MF_VMATH_CLONES __attribute__((target_clones("avx512f", "avx2", "default"), \
                                       MF_VMATH_FLAGS))
#define MF_VMATH_INLINE __attribute__((always_inline, MF_VMATH_FLAGS)) inline
#else
#define MF_VMATH_OPT
#define MF_VMATH_CLONES
#define MF_VMATH_INLINE inline
#endif
#if defined(__GNUC__) || defined(__clang__)
#define MF_VMATH_UNUSED __attribute__((unused))
#else
#define MF_VMATH_UNUSED
#endif

/* Nonzero: the plain loops, compiled for the baseline target only (the switch of the tests,
   set with mondrian.core._batch_walk.set_portable_kernels). */
static int mf_vmath_portable = 0;

/* 1.5 * 2**52: x + MF_VM_ROUND - MF_VM_ROUND rounds x to an integer (|x| < 2**51), and the
   low bits of x + MF_VM_ROUND hold that integer. */
#define MF_VM_ROUND 0x1.8p52
#define MF_VM_LN2_HI 0x1.62e42fee00000p-1 /* ln 2 to 32 bits: n MF_VM_LN2_HI exact */
#define MF_VM_LN2_LO 0x1.a39ef35793c76p-33 /* ln 2 - MF_VM_LN2_HI */
#define MF_VM_INV_LN2 0x1.71547652b82fep+0
#define MF_VM_EXP_BIAS 0x4330000000000000ULL /* the bits of 2**52 */
#define MF_VM_SQRT_HALF_MANT 0x6a09e667f3bcdULL /* the mantissa bits of sqrt(1/2) */

static MF_VMATH_INLINE uint64_t mf_vm_bits(double x) {
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static MF_VMATH_INLINE double mf_vm_double(uint64_t b) {
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

static MF_VMATH_INLINE double mf_vm_pow2(double k) {
    /* 2**n for k = n + MF_VM_ROUND, -1022 <= n <= 1023: n + 1023 into the exponent field. */
    return mf_vm_double((mf_vm_bits(k) + 1023ULL) << 52);
}

static MF_VMATH_INLINE void mf_vm_series(double r, double r2, double *s0, double *s1,
                                          double *s2) {
    /* The coefficients 1/2! .. 1/13! of exp's Taylor series (after 1 + r) by fours, in
       powers of r and r**2 (Estrin's scheme), for mf_vm_exp and mf_vm_expm1. */
    *s0 = (0.5 + r * (1.0 / 6.0)) + r2 * (1.0 / 24.0 + r * (1.0 / 120.0));
    *s1 = (1.0 / 720.0 + r * (1.0 / 5040.0)) + r2 * (1.0 / 40320.0 + r * (1.0 / 362880.0));
    *s2 = (1.0 / 3628800.0 + r * (1.0 / 39916800.0))
          + r2 * (1.0 / 479001600.0 + r * (1.0 / 6227020800.0));
}

static MF_VMATH_INLINE double mf_vm_exp(double x) {
    /* exp(x) within about one ulp (0 below -745.2, inf above 709.8, NaN for NaN). */
    double xc = x < -1400.0 ? -1400.0 : x;
    double k, n, r, r2, r4, s0, s1, s2, y, k1, n1, k2;
    xc = xc > 1400.0 ? 1400.0 : xc;
    k = xc * MF_VM_INV_LN2 + MF_VM_ROUND;
    n = k - MF_VM_ROUND; /* |n| <= 2020 */
    r = (xc - n * MF_VM_LN2_HI) - n * MF_VM_LN2_LO;
    /* expm1(r) = r + r**2 (1/2! + r/3! + ... + r**11/13!), the sum in powers of r**2 and
       r**4 (Estrin's scheme: a short chain of dependent operations) */
    r2 = r * r;
    r4 = r2 * r2;
    mf_vm_series(r, r2, &s0, &s1, &s2);
    y = 1.0 + (r + r2 * (s0 + r4 * (s1 + r4 * s2)));
    /* y 2**n as (y 2**n1) 2**n2, n1 = round(n / 2), both in the normal range */
    k1 = n * 0.5 + MF_VM_ROUND;
    n1 = k1 - MF_VM_ROUND;
    k2 = (n - n1) + MF_VM_ROUND;
    return (y * mf_vm_pow2(k1)) * mf_vm_pow2(k2);
}

static MF_VMATH_INLINE double mf_vm_expm1(double x) {
    /* exp(x) - 1 within one ulp for x <= 0, the terms' arguments (two ulps near x = ln2 / 2
       above) (x itself for |x| < 2**-54, zeros with their sign
       and subnormals; -1 below -45 and at -inf, inf above 709.8, NaN for NaN): the
       classifier's branch-off terms (mondrian.forest._hnsp). x = n ln2 + r as in mf_vm_exp,
       c the rounding error of r = hi - lo, expm1(r) by its Taylor series to r**14 (Estrin's
       scheme) plus c (1 + expm1(r)), then 2 ((2**(n-1) - 1/2) + 2**(n-1) expm1(r)): one
       rounding of the sum, the doubling exact (inf past the double range), so no 2**n and
       no cancellation left to 1 - 2**n; n = 0 takes expm1(r) itself. */
    double xc = x < -45.0 ? -45.0 : x; /* expm1(-45) rounds to -1 */
    double k, n, hi, lo, r, c, r2, r4, r8, s0, s1, s2, s3, e, h, res;
    xc = xc > 710.0 ? 710.0 : xc;
    k = xc * MF_VM_INV_LN2 + MF_VM_ROUND;
    n = k - MF_VM_ROUND; /* -65 <= n <= 1024 */
    hi = xc - n * MF_VM_LN2_HI;
    lo = n * MF_VM_LN2_LO;
    r = hi - lo;
    c = (hi - r) - lo;
    r2 = r * r;
    r4 = r2 * r2;
    r8 = r4 * r4;
    /* expm1(r) = r + r**2 (1/2! + r/3! + ... + r**12/14!) */
    mf_vm_series(r, r2, &s0, &s1, &s2);
    s3 = 1.0 / 87178291200.0;
    e = r + (r2 * ((s0 + r4 * s1) + r8 * (s2 + r4 * s3)) + c * (1.0 + r));
    h = mf_vm_pow2(k - 1.0); /* 2**(n-1) */
    res = 2.0 * ((h - 0.5) + h * e);
    res = n == 0.0 ? e : res;
    res = (x < 0x1p-54 && x > -0x1p-54) ? x : res;
    return x != x ? x : res;
}

static MF_VMATH_INLINE double mf_vm_log1p(double a) {
    /* log(1 + a) within about one ulp (a itself for a = +-0 and subnormal a, -inf at -1,
       NaN below -1 or for NaN, inf at inf). */
    double y = 1.0 + a;
    double c = (a - (y - 1.0)) / y;
    double yc = (y > 0.0 && y < INFINITY) ? y : 1.0;
    uint64_t ib = mf_vm_bits(yc);
    uint64_t top = (ib - MF_VM_SQRT_HALF_MANT) >> 52; /* the biased exponent of yc / m, less 1 */
    double e = mf_vm_double(top | MF_VM_EXP_BIAS) - (0x1p52 + 1022.0);
    double m = mf_vm_double(ib - ((top << 52) - (1022ULL << 52)));
    double f = m - 1.0;
    double s = f / (2.0 + f);
    double z = s * s;
    double hfsq = 0.5 * (f * f);
    double z2 = z * z, z4 = z2 * z2, R, res;
    /* R = 2 z / 3 + 2 z**2 / 5 + ... + 2 z**10 / 21 (log m = 2 s + s R), in powers of z**2
       and z**4 (Estrin's scheme) */
    R = ((2.0 / 3.0 + z * (2.0 / 5.0)) + z2 * (2.0 / 7.0 + z * (2.0 / 9.0)))
        + z4 * ((2.0 / 11.0 + z * (2.0 / 13.0)) + z2 * (2.0 / 15.0 + z * (2.0 / 17.0))
                + z4 * (2.0 / 19.0 + z * (2.0 / 21.0)));
    R = R * z;
    /* 2 s = f - hfsq + s hfsq: log(1 + a) = e ln2 + f - (hfsq - s (hfsq + R)) + c */
    res = e * MF_VM_LN2_HI - ((hfsq - (s * (hfsq + R) + (e * MF_VM_LN2_LO + c))) - f);
    res = a == 0.0 ? a : res;
    res = y == INFINITY ? y : res;
    res = a == -1.0 ? -INFINITY : res;
    res = a < -1.0 ? (double)NAN : res;
    return a != a ? a : res;
}

static MF_VMATH_INLINE double mf_vm_clock(double rate, double a, double tau, double eta) {
    /* _clock_denominator(rate, t) at the branching time t = tau - log1p(a) / eta. */
    double t = tau - mf_vm_log1p(a) / eta;
    double d = 1.0 + mf_vm_exp(-rate * t);
    return t == INFINITY ? 1.0 : d;
}

MF_VMATH_CLONES MF_VMATH_UNUSED
static void mf_vm_clocks_fast(Py_ssize_t n, double rate, const double *restrict a,
                              const double *restrict tau, const double *restrict eta,
                              double *restrict d) {
    Py_ssize_t i;
    for (i = 0; i < n; i++) d[i] = mf_vm_clock(rate, a[i], tau[i], eta[i]);
}

MF_VMATH_OPT MF_VMATH_UNUSED
static void mf_vm_clocks_plain(Py_ssize_t n, double rate, const double *a, const double *tau,
                               const double *eta, double *d) {
    Py_ssize_t i;
    for (i = 0; i < n; i++) d[i] = mf_vm_clock(rate, a[i], tau[i], eta[i]);
}

MF_VMATH_UNUSED
static void mf_vm_clocks(Py_ssize_t n, double rate, const double *a, const double *tau,
                         const double *eta, double *d) {
    /* d[i] = the clock denominator 1 + exp(-rate t) (1 at t = inf) at the time
       t = tau[i] - log1p(a[i]) / eta[i], for i < n (d distinct from the inputs). */
    if (mf_vmath_portable)
        mf_vm_clocks_plain(n, rate, a, tau, eta, d);
    else
        mf_vm_clocks_fast(n, rate, a, tau, eta, d);
}

static MF_VMATH_INLINE void mf_vm_term(double sigma2, double psi_end, double noise, double d,
                                       double out_mean, double out_var, double psi_parent,
                                       double psi_node, double mean_j, double var_j,
                                       double *m, double *v) {
    /* The Gaussian a prior predicts at one point of a branch-off node j (the operations of
       _product in _gaussian_model.pxd, in the same order): the outside message carried to
       the time of clock denominator d times node j's message (a flat factor, infinite
       variance, as a selection), then the time's leaf variance and the noise. */
    double psi_t = sigma2 / d;
    double va = out_var + (psi_t - psi_parent);
    double vb = var_j + (psi_node - psi_t);
    double total = va + vb;
    double vp = (va * vb) / total;
    double mp = (out_mean * vb + mean_j * va) / total;
    vp = va == INFINITY ? vb : (vb == INFINITY ? va : vp);
    mp = va == INFINITY ? mean_j : (vb == INFINITY ? out_mean : mp);
    *m = mp;
    *v = vp + ((psi_end - psi_t) + noise);
}

/* The arrays of mf_vm_terms: the points' clock denominators, then their nodes' outside
   message (mean, variance), psi at the parent's time and the node's, and the node's message
   (mean, variance), one entry per point. */
#define MF_VM_TERM_LOOP                                                                   \
    for (i = 0; i < n; i++)                                                               \
        mf_vm_term(sigma2, psi_end, noise, in[i], in[n + i], in[2 * n + i], in[3 * n + i], \
                   in[4 * n + i], in[5 * n + i], in[6 * n + i], &m[i], &v[i])

MF_VMATH_CLONES MF_VMATH_UNUSED
static void mf_vm_terms_fast(Py_ssize_t n, double sigma2, double psi_end, double noise,
                             const double *restrict in, double *restrict m,
                             double *restrict v) {
    Py_ssize_t i;
    MF_VM_TERM_LOOP;
}

MF_VMATH_OPT MF_VMATH_UNUSED
static void mf_vm_terms_plain(Py_ssize_t n, double sigma2, double psi_end, double noise,
                              const double *in, double *m, double *v) {
    Py_ssize_t i;
    MF_VM_TERM_LOOP;
}

MF_VMATH_UNUSED
static void mf_vm_terms(Py_ssize_t n, double sigma2, double psi_end, double noise,
                        const double *in, double *m, double *v) {
    /* The mean m[i] and variance v[i] a prior (sigma2, psi_end, noise) predicts at point
       i < n, from the 7 arrays of n floats at in (MF_VM_TERM_LOOP; m, v distinct from in). */
    if (mf_vmath_portable)
        mf_vm_terms_plain(n, sigma2, psi_end, noise, in, m, v);
    else
        mf_vm_terms_fast(n, sigma2, psi_end, noise, in, m, v);
}

MF_VMATH_CLONES MF_VMATH_UNUSED
static void mf_vm_apply_fast(int which, Py_ssize_t n, const double *restrict x,
                             double *restrict out) {
    Py_ssize_t i;
    if (which == 0)
        for (i = 0; i < n; i++) out[i] = mf_vm_exp(x[i]);
    else
        for (i = 0; i < n; i++) out[i] = mf_vm_log1p(x[i]);
}

MF_VMATH_OPT MF_VMATH_UNUSED
static void mf_vm_apply_plain(int which, Py_ssize_t n, const double *x, double *out) {
    Py_ssize_t i;
    if (which == 0)
        for (i = 0; i < n; i++) out[i] = mf_vm_exp(x[i]);
    else
        for (i = 0; i < n; i++) out[i] = mf_vm_log1p(x[i]);
}

MF_VMATH_UNUSED
static void mf_vm_apply(int which, Py_ssize_t n, const double *x, double *out) {
    /* out[i] = exp(x[i]) (which 0) or log1p(x[i]) (which 1), for i < n: the tests'. */
    if (mf_vmath_portable)
        mf_vm_apply_plain(which, n, x, out);
    else
        mf_vm_apply_fast(which, n, x, out);
}

MF_VMATH_CLONES MF_VMATH_UNUSED
static void mf_vm_expm1s_fast(Py_ssize_t n, const double *restrict x, double *restrict out) {
    Py_ssize_t i;
    for (i = 0; i < n; i++) out[i] = mf_vm_expm1(x[i]);
}

MF_VMATH_OPT MF_VMATH_UNUSED
static void mf_vm_expm1s_plain(Py_ssize_t n, const double *x, double *out) {
    Py_ssize_t i;
    for (i = 0; i < n; i++) out[i] = mf_vm_expm1(x[i]);
}

MF_VMATH_UNUSED
static void mf_vm_expm1s(Py_ssize_t n, const double *x, double *out) {
    /* out[i] = expm1(x[i]) for i < n (out distinct from x): the tests'. */
    if (mf_vmath_portable)
        mf_vm_expm1s_plain(n, x, out);
    else
        mf_vm_expm1s_fast(n, x, out);
}

#endif
