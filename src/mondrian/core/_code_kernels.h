/* Distances from rows to boxes kept as rank codes (mondrian.core._batch_walk), included by
   `cdef extern from "mondrian/core/_code_kernels.h"` after _box_kernels.h.

   A coded box holds, for each dim d, the codes lo_c[d] and hi_c[d] of its bounds among the
   sorted distinct values T_d of the feature (mondrian.forest._node_cache.BoxCoder). A row
   comes with two ranks per dim among the same values: up[d], the number of values <= x[d],
   and down[d], the number of values < x[d]. Then x[d] < T_d[lo_c] exactly when up[d] <= lo_c
   and x[d] > T_d[hi_c] exactly when down[d] > hi_c: the comparisons of the gap, read from
   integers. The distance of box_distance sums gap(lo[d], hi[d], x[d]) over d from +0.0, and
   a gap is +0.0 unless x lies outside on d (adding +0.0 to a sum of non-negative terms
   from +0.0 leaves it as it is): so the sum of the gaps of the dims outside, in order d,
   each computed from the very bounds (T_d[code]), has the bits of the distance. The dims
   outside are found 32 at a time with AVX-512BW compares (16 with AVX2), chosen at run
   time; mf_box_kernels_portable forces the plain loop over every dim. */
#ifndef MONDRIAN_CORE_CODE_KERNELS_H
#define MONDRIAN_CORE_CODE_KERNELS_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
#define MF_CODE_X86 1
#include <immintrin.h>
#endif

static inline double mf_code_gap(const double *values, const Py_ssize_t *starts,
                                 const uint16_t *c, Py_ssize_t D, Py_ssize_t d, double x) {
    return mf_gap(values[starts[d] + c[d]], values[starts[d] + c[D + d]], x);
}

static double mf_row_eta_codes(const uint16_t *c, Py_ssize_t D, const double *values,
                               const Py_ssize_t *starts, const uint16_t *r, const double *x) {
    /* The reference: every dim, in order. */
    double eta = 0.0;
    Py_ssize_t d;
    for (d = 0; d < D; d++)
        if (r[d] <= c[d] || r[D + d] > c[D + d]) eta += mf_code_gap(values, starts, c, D, d, x[d]);
    return eta;
}

#ifdef MF_CODE_X86
__attribute__((target("avx512f,avx512bw"))) MF_KERNEL_UNUSED
static double mf_row_eta_codes_512(const uint16_t *c, Py_ssize_t D, const double *values,
                                   const Py_ssize_t *starts, const uint16_t *r,
                                   const double *x) {
    double eta = 0.0;
    Py_ssize_t b;
    for (b = 0; b < D; b += 32) {
        __mmask32 live = D - b >= 32 ? 0xFFFFFFFFu : (((__mmask32)1 << (D - b)) - 1);
        __m512i lo = _mm512_maskz_loadu_epi16(live, c + b);
        __m512i hi = _mm512_maskz_loadu_epi16(live, c + D + b);
        __m512i up = _mm512_maskz_loadu_epi16(live, r + b);
        __m512i down = _mm512_maskz_loadu_epi16(live, r + D + b);
        uint32_t out = _mm512_mask_cmple_epu16_mask(live, up, lo)
                       | _mm512_mask_cmpgt_epu16_mask(live, down, hi);
        while (out) {
            Py_ssize_t d = b + __builtin_ctz(out);
            eta += mf_code_gap(values, starts, c, D, d, x[d]);
            out &= out - 1;
        }
    }
    return eta;
}

__attribute__((target("avx2"))) MF_KERNEL_UNUSED
static double mf_row_eta_codes_256(const uint16_t *c, Py_ssize_t D, const double *values,
                                   const Py_ssize_t *starts, const uint16_t *r,
                                   const double *x) {
    /* up <= lo: max(up, lo) == lo; down > hi: max(down, hi) != hi (unsigned 16-bit). */
    double eta = 0.0;
    Py_ssize_t b = 0, d;
    for (; b + 16 <= D; b += 16) {
        __m256i lo = _mm256_loadu_si256((const __m256i *)(c + b));
        __m256i hi = _mm256_loadu_si256((const __m256i *)(c + D + b));
        __m256i up = _mm256_loadu_si256((const __m256i *)(r + b));
        __m256i down = _mm256_loadu_si256((const __m256i *)(r + D + b));
        __m256i below = _mm256_cmpeq_epi16(_mm256_max_epu16(up, lo), lo);
        __m256i inside = _mm256_cmpeq_epi16(_mm256_max_epu16(down, hi), hi);
        uint32_t out = (uint32_t)_mm256_movemask_epi8(_mm256_andnot_si256(inside, _mm256_set1_epi8(-1)) | below)
                       & 0x55555555u;
        while (out) {
            d = b + (__builtin_ctz(out) >> 1);
            eta += mf_code_gap(values, starts, c, D, d, x[d]);
            out &= out - 1;
        }
    }
    for (d = b; d < D; d++)
        if (r[d] <= c[d] || r[D + d] > c[D + d]) eta += mf_code_gap(values, starts, c, D, d, x[d]);
    return eta;
}
#endif

MF_KERNEL_UNUSED
static void mf_box_from_codes8(const uint8_t *c, Py_ssize_t D, const double *values,
                               const Py_ssize_t *starts, double *box) {
    /* The box of the 1-byte codes c (2 D: the lower bounds' codes, then the upper ones')
       into box: bound e is values[starts[e] + c[e]], where a feature's two bounds share
       its table (starts[D + d] == starts[d], BoxCoder): one read of starts per dim, and the
       codes read 8 at a time (fewer loads than a read per code; the same doubles). */
    Py_ssize_t d = 0, j;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; d + 8 <= D; d += 8) {
        uint64_t lo, hi;
        memcpy(&lo, c + d, 8);
        memcpy(&hi, c + D + d, 8);
        for (j = 0; j < 8; j++) {
            const double *t = values + starts[d + j];
            box[d + j] = t[(lo >> (8 * j)) & 0xFF];
            box[D + d + j] = t[(hi >> (8 * j)) & 0xFF];
        }
    }
#endif
    for (; d < D; d++) {
        const double *t = values + starts[d];
        box[d] = t[c[d]];
        box[D + d] = t[c[D + d]];
    }
}

/* 0: not chosen yet, 1: portable, 2: AVX2, 3: AVX-512BW. */
static int mf_code_kernel = 0;

MF_KERNEL_UNUSED
static void mf_rows_eta_codes(const uint16_t *c, Py_ssize_t D, const double *values,
                              const Py_ssize_t *starts, const uint16_t *ranks,
                              const double *X, Py_ssize_t x_step, const Py_ssize_t *idx,
                              Py_ssize_t m, double *out) {
    /* out[k]: the distance from row idx[k] (its ranks at ranks + idx[k] 2 D, its values at
       X + idx[k] x_step) to the box of codes c (2 D, widened to 16 bits). */
    Py_ssize_t k;
    int kernel = mf_code_kernel;
    if (kernel == 0) {
        kernel = 1;
#ifdef MF_CODE_X86
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512bw")) kernel = 3;
        else if (__builtin_cpu_supports("avx2")) kernel = 2;
#endif
        mf_code_kernel = kernel;
    }
    if (mf_box_kernels_portable) kernel = 1;
    for (k = 0; k < m; k++) {
        const uint16_t *r = ranks + idx[k] * 2 * D;
        const double *x = X + idx[k] * x_step;
#ifdef MF_CODE_X86
        if (kernel == 3) { out[k] = mf_row_eta_codes_512(c, D, values, starts, r, x); continue; }
        if (kernel == 2) { out[k] = mf_row_eta_codes_256(c, D, values, starts, r, x); continue; }
#endif
        out[k] = mf_row_eta_codes(c, D, values, starts, r, x);
    }
}

#endif
