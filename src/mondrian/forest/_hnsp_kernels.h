/* Kernels of the classifier's predictive (mondrian.forest._hnsp), included by
   `cdef extern from "mondrian/forest/_hnsp_kernels.h"`.

   The branch-off term adds, for each class k, one expression of IEEE operations (products,
   differences, a sum and a quotient) to out[k]: the classes are independent, so vector
   lanes over k give the bits of the scalar loop provided that no product and sum are fused
   (fp-contract off: GCC would otherwise fuse them in the AVX-512 clone, whose target
   implies FMA). On x86-64 glibc GCC builds AVX2 and AVX-512 clones, chosen at load time;
   mf_hnsp_kernels_portable forces the plain scalar loop (the reference, switched with
   mondrian.core._batch_walk.set_portable_kernels). */
#ifndef MONDRIAN_FOREST_HNSP_KERNELS_H
#define MONDRIAN_FOREST_HNSP_KERNELS_H

#include <stddef.h>

#include "mondrian/forest/_vmath.h"

/* (not every module including this header calls every function) */
#if defined(__GNUC__) || defined(__clang__)
#define MF_HNSP_UNUSED __attribute__((unused))
#else
#define MF_HNSP_UNUSED
#endif

/* (the arithmetic kernels of the posteriors, SSE2 where there is one) */
#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#endif
/* Whether every a[c], c < S, is an integer of magnitude below 2**52: t = |a[c]| passes
   when t < 2**52 and (t + 2**52) - 2**52 == t (the sum rounds t to an integer, so the
   difference is t exactly when t is one; NaN and infinity fail t < 2**52). Two entries
   per instruction with SSE2 (GCC does not vectorize the scalar form); the same answer
   either way. */
MF_HNSP_UNUSED static int mf_integers(const double *a, Py_ssize_t S) {
    const double big = 4503599627370496.0;
    Py_ssize_t c = 0;
    int ok = 1;
#if defined(__SSE2__) || defined(_M_X64)
    const __m128d vbig = _mm_set1_pd(big);
    const __m128d sign = _mm_set1_pd(-0.0);
    __m128d all = _mm_cmpeq_pd(vbig, vbig);
    for (; c + 2 <= S; c += 2) {
        __m128d t = _mm_andnot_pd(sign, _mm_loadu_pd(a + c));
        __m128d r = _mm_sub_pd(_mm_add_pd(t, vbig), vbig);
        all = _mm_and_pd(all, _mm_and_pd(_mm_cmplt_pd(t, vbig), _mm_cmpeq_pd(r, t)));
    }
    ok = _mm_movemask_pd(all) == 3;
#endif
    for (; c < S; c++) {
        double t = a[c] < 0.0 ? -a[c] : a[c];
        ok &= (t < big) & ((t + big) - big == t);
    }
    return ok;
}

/* g[k] = (a c[k] - b min(c[k], 1)) + e p[k] for k < K (the posterior of _posterior):
   the same IEEE operations in the same order per entry, two entries per instruction
   with SSE2 (min_pd(c, 1) is c < 1 ? c : 1, like _table); GCC leaves the scalar loop
   unvectorized. */
MF_HNSP_UNUSED static void mf_posterior(Py_ssize_t K, double a, double b, double e, const double *c,
                         const double *p, double *g) {
    Py_ssize_t k = 0;
#if defined(__SSE2__) || defined(_M_X64)
    const __m128d va = _mm_set1_pd(a), vb = _mm_set1_pd(b), ve = _mm_set1_pd(e);
    const __m128d one = _mm_set1_pd(1.0);
    for (; k + 2 <= K; k += 2) {
        __m128d ck = _mm_loadu_pd(c + k);
        __m128d t = _mm_min_pd(ck, one);
        __m128d v = _mm_sub_pd(_mm_mul_pd(va, ck), _mm_mul_pd(vb, t));
        _mm_storeu_pd(g + k, _mm_add_pd(v, _mm_mul_pd(ve, _mm_loadu_pd(p + k))));
    }
#endif
    for (; k < K; k++) {
        double t = c[k] < 1.0 ? c[k] : 1.0;
        g[k] = a * c[k] - b * t + e * p[k];
    }
}

/* count < 1 ? count : 1 (the tables of _table) without a branch: MINSD returns its first
   operand when it is below the second, else the second, which is that expression for
   every input (NaN gives 1, -0.0 gives -0.0). A compiler may turn the scalar form into
   a compare and a jump, which class counts of 0 and 1 mispredict. */
static inline double mf_table(double count) {
#if defined(__SSE2__) || defined(_M_X64)
    return _mm_cvtsd_f64(_mm_min_sd(_mm_set_sd(count), _mm_set_sd(1.0)));
#else
    return count < 1.0 ? count : 1.0;
#endif
}

/* The node tables of a tabulated call (forest/_hnsp.pyx, _node_tables): a record of
   mf_record_floats(K) doubles per node, node j's at tables + j * mf_record_floats(K), with
   what the branch-off term at j reads of j side by side, then j's posterior (a child's
   term, the leaf's): its IKN counts (K, from 0), customers, tables and posterior g (K).
   Record node_count is the root's parent (g uniform, the rest 0). A branch-off at j reads
   two adjacent spans, j's first K + 2 and its parent's g, where four arrays took four to
   six lines. (Padding a record to whole lines, and a delta and leaf flag in it for the path
   walk, were slower on satimage: more bytes, and a cold line read before the tree's hot
   nodes.) */
#define MF_REC_CUST(K) (K)
#define MF_REC_TAB(K) ((K) + 1)
#define MF_REC_G(K) ((K) + 2)

static inline Py_ssize_t mf_record_floats(Py_ssize_t K) {
    return 2 * K + 2;
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
#define MF_HNSP_CLONES __attribute__((target_clones("avx512f", "avx2", "default"), \
                                      optimize("fp-contract=off")))
#else
#define MF_HNSP_CLONES
#endif

/* Nonzero: the plain scalar loop (the switch of the tests). */
static int mf_hnsp_kernels_portable = 0;

static void mf_branch_off_plain(Py_ssize_t K, double weight, double d_bar, double n_tab,
                                double n_cust, int strict, const double *counts,
                                const double *g_parent, double *out) {
    /* The reference: one class after another, in the order of _add_branch_off. */
    Py_ssize_t k;
    for (k = 0; k < K; k++) {
        double tab = counts[k] < 1.0 ? counts[k] : 1.0;
        if (strict)
            out[k] = out[k] + (weight * (((1.0 - d_bar) * tab) + ((d_bar * n_tab) * g_parent[k])))
                     / n_tab;
        else
            out[k] = out[k] + (weight * ((counts[k] - (d_bar * tab))
                                         + ((d_bar * n_tab) * g_parent[k]))) / n_cust;
    }
}

MF_HNSP_CLONES
static void mf_branch_off_fast(Py_ssize_t K, double weight, double d_bar, double n_tab,
                               double n_cust, int strict, const double *restrict counts,
                               const double *restrict g_parent, double *restrict out) {
    /* The same expressions with the loop-invariant factors computed once (the same values)
       and out distinct from the inputs, so that the loops run in vector lanes. */
    const double a = 1.0 - d_bar, b = d_bar * n_tab;
    Py_ssize_t k;
    if (strict) {
        for (k = 0; k < K; k++) {
            double tab = counts[k] < 1.0 ? counts[k] : 1.0;
            out[k] = out[k] + (weight * ((a * tab) + (b * g_parent[k]))) / n_tab;
        }
    } else {
        for (k = 0; k < K; k++) {
            double c = counts[k];
            double tab = c < 1.0 ? c : 1.0;
            out[k] = out[k] + (weight * ((c - (d_bar * tab)) + (b * g_parent[k]))) / n_cust;
        }
    }
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
#define MF_HNSP_X86 1
#include <immintrin.h>

/* One node's branch-off term added to the block of classes o (lanes live) of out: counts c
   and g_parent from k, the rest as in mf_branch_off_plain (the same operations per lane,
   unfused, in the same order). */
__attribute__((target("avx512f"), optimize("fp-contract=off"))) MF_HNSP_UNUSED
static inline __m512d mf_term_512(__m512d o, __mmask8 live, int strict, double weight,
                                  double d_bar, double n_tab, double n_cust, const double *c_k,
                                  const double *g_k) {
    const __m512d one = _mm512_set1_pd(1.0);
    __m512d c = _mm512_maskz_loadu_pd(live, c_k);
    __m512d bg = _mm512_mul_pd(_mm512_set1_pd(d_bar * n_tab), _mm512_maskz_loadu_pd(live, g_k));
    __m512d tab = _mm512_min_pd(c, one), t;
    if (strict)
        t = _mm512_add_pd(_mm512_mul_pd(_mm512_set1_pd(1.0 - d_bar), tab), bg);
    else
        t = _mm512_add_pd(_mm512_sub_pd(c, _mm512_mul_pd(_mm512_set1_pd(d_bar), tab)), bg);
    t = _mm512_div_pd(_mm512_mul_pd(_mm512_set1_pd(weight), t),
                      _mm512_set1_pd(strict ? n_tab : n_cust));
    return _mm512_add_pd(o, t);
}

/* mf_row_terms in lanes: a block of classes of out in registers while every queued node's
   term (mf_term_512 of its record), then the leaf's, is added to it (the sums of
   mf_branch_off_512 one node after another and of the leaf loop, in that order: out is
   stored once, not read back after each node's store). */
__attribute__((target("avx512f"), optimize("fp-contract=off"))) MF_HNSP_UNUSED
static void mf_row_terms_512(Py_ssize_t K, int strict, Py_ssize_t n, const double *weight,
                             const double *d_bar, const double *const *rec,
                             const double *const *g_parent, double survival,
                             const double *g_leaf, double *out) {
    const __m512d s = _mm512_set1_pd(survival);
    Py_ssize_t k, q;
    for (k = 0; k < K; k += 8) {
        __mmask8 live = K - k >= 8 ? 0xFF : (__mmask8)((1u << (K - k)) - 1);
        __m512d o = _mm512_maskz_loadu_pd(live, out + k);
        for (q = 0; q < n; q++)
            o = mf_term_512(o, live, strict, weight[q], d_bar[q], rec[q][MF_REC_TAB(K)],
                            rec[q][MF_REC_CUST(K)], rec[q] + k, g_parent[q] + k);
        if (g_leaf != NULL)
            o = _mm512_add_pd(o, _mm512_mul_pd(s, _mm512_maskz_loadu_pd(live, g_leaf + k)));
        _mm512_mask_storeu_pd(out + k, live, o);
    }
}

/* The expressions of mf_branch_off_plain in explicit lanes, a masked remainder instead of
   a scalar tail: GCC's clones run a K below the vector width (satimage's 6 classes) and
   every remainder as scalar code whose min(c, 1) became a mispredicted branch. MIN(c, 1)
   is c < 1 ? c : 1 (MINPD returns its second operand unless the first is below it), the
   operations per lane are those of the scalar loop, unfused, in the same order: one node
   of mf_row_terms_512, no leaf. */
__attribute__((target("avx512f"), optimize("fp-contract=off"))) MF_HNSP_UNUSED
static void mf_branch_off_512(Py_ssize_t K, double weight, double d_bar, double n_tab,
                              double n_cust, int strict, const double *counts,
                              const double *g_parent, double *out) {
    Py_ssize_t k;
    for (k = 0; k < K; k += 8) {
        __mmask8 live = K - k >= 8 ? 0xFF : (__mmask8)((1u << (K - k)) - 1);
        __m512d o = _mm512_maskz_loadu_pd(live, out + k);
        o = mf_term_512(o, live, strict, weight, d_bar, n_tab, n_cust, counts + k,
                        g_parent + k);
        _mm512_mask_storeu_pd(out + k, live, o);
    }
}

__attribute__((target("avx2"), optimize("fp-contract=off"))) MF_HNSP_UNUSED
static void mf_branch_off_256(Py_ssize_t K, double weight, double d_bar, double n_tab,
                              double n_cust, int strict, const double *counts,
                              const double *g_parent, double *out) {
    const __m256d one = _mm256_set1_pd(1.0), w = _mm256_set1_pd(weight);
    const __m256d a = _mm256_set1_pd(1.0 - d_bar), d = _mm256_set1_pd(d_bar);
    const __m256d b = _mm256_set1_pd(d_bar * n_tab);
    const __m256d n = _mm256_set1_pd(strict ? n_tab : n_cust);
    const __m256i lane = _mm256_set_epi64x(3, 2, 1, 0);
    Py_ssize_t k;
    for (k = 0; k < K; k += 4) {
        __m256i live = _mm256_cmpgt_epi64(_mm256_set1_epi64x(K - k), lane);
        __m256d c = _mm256_maskload_pd(counts + k, live);
        __m256d bg = _mm256_mul_pd(b, _mm256_maskload_pd(g_parent + k, live));
        __m256d tab = _mm256_min_pd(c, one);
        __m256d t = strict ? _mm256_add_pd(_mm256_mul_pd(a, tab), bg)
                           : _mm256_add_pd(_mm256_sub_pd(c, _mm256_mul_pd(d, tab)), bg);
        t = _mm256_div_pd(_mm256_mul_pd(w, t), n);
        _mm256_maskstore_pd(out + k, live, _mm256_add_pd(_mm256_maskload_pd(out + k, live), t));
    }
}
#endif

/* The kernel of mf_branch_off: 0 not chosen yet, 1 the clones of mf_branch_off_fast, 2 AVX2
   lanes, 3 AVX-512 lanes (chosen once from the CPU; _set_branch_kernel forces one, tests). */
static int mf_hnsp_kernel = 0;

static int mf_hnsp_choose(void) {
    int kernel = 1;
#ifdef MF_HNSP_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) kernel = 3;
    else if (__builtin_cpu_supports("avx2")) kernel = 2;
#endif
    return kernel;
}

static inline void mf_branch_off(Py_ssize_t K, double weight, double d_bar, double n_tab,
                                 double n_cust, int strict, const double *counts,
                                 const double *g_parent, double *out) {
    /* out[k] += the branch-off term of class k (out distinct from counts and g_parent). */
    int kernel = mf_hnsp_kernel;
    if (mf_hnsp_kernels_portable) {
        mf_branch_off_plain(K, weight, d_bar, n_tab, n_cust, strict, counts, g_parent, out);
        return;
    }
    if (kernel == 0) kernel = mf_hnsp_kernel = mf_hnsp_choose();
#ifdef MF_HNSP_X86
    if (kernel == 3) {
        mf_branch_off_512(K, weight, d_bar, n_tab, n_cust, strict, counts, g_parent, out);
        return;
    }
    if (kernel == 2) {
        mf_branch_off_256(K, weight, d_bar, n_tab, n_cust, strict, counts, g_parent, out);
        return;
    }
#endif
    mf_branch_off_fast(K, weight, d_bar, n_tab, n_cust, strict, counts, g_parent, out);
}

/* out[k] += the branch-off term of each of the n queued nodes (node q: weight[q], d_bar[q],
   its record rec[q] of the node tables, its parent's posterior g_parent[q]), in that order,
   then, when g_leaf is not NULL, survival * g_leaf[k]: the sums of mf_branch_off node after
   node and of the leaf's loop, so the same bits. */
static void mf_row_terms(Py_ssize_t K, int strict, Py_ssize_t n, const double *weight,
                         const double *d_bar, const double *const *rec,
                         const double *const *g_parent, double survival, const double *g_leaf,
                         double *out) {
    Py_ssize_t k, q;
    if (!mf_hnsp_kernels_portable && mf_hnsp_kernel == 0) mf_hnsp_kernel = mf_hnsp_choose();
#ifdef MF_HNSP_X86
    if (!mf_hnsp_kernels_portable && mf_hnsp_kernel == 3) {
        mf_row_terms_512(K, strict, n, weight, d_bar, rec, g_parent, survival, g_leaf, out);
        return;
    }
#endif
    for (q = 0; q < n; q++)
        mf_branch_off(K, weight[q], d_bar[q], rec[q][MF_REC_TAB(K)], rec[q][MF_REC_CUST(K)],
                      strict, rec[q], g_parent[q], out);
    if (g_leaf != NULL)
        for (k = 0; k < K; k++) out[k] += survival * g_leaf[k];
}

/* The branch-off probability p = -expm1(-eta delta) of a node (1 at delta = inf) and its
   averaged discount d_bar = eta / (eta + gamma) expm1(-(eta + gamma) delta) / -p (eta /
   (eta + gamma) at delta = inf: expm1(-inf) is -1 exactly), for eta > 0, delta > 0, with
   mf_vm_expm1: the one expm1 of every path of the classifier (the one-row walk's _branch_off
   and its p, the grouped walk's lanes), so that they give each other's bits. */
static MF_VMATH_INLINE double mf_hnsp_p(double eta, double delta) {
    return -mf_vm_expm1(-eta * delta);
}

static MF_VMATH_INLINE double mf_hnsp_d_bar(double eta, double delta, double gamma, double p) {
    return eta / (eta + gamma) * mf_vm_expm1(-(eta + gamma) * delta) / -p;
}

#define MF_HNSP_P_LOOP                                                    \
    for (q = 0; q < n; q++) {                                             \
        p[q] = mf_hnsp_p(eta[q], delta[q]);                               \
        d_bar[q] = mf_hnsp_d_bar(eta[q], delta[q], gamma, p[q]);          \
    }

MF_VMATH_CLONES MF_HNSP_UNUSED
static void mf_hnsp_terms_fast(Py_ssize_t n, double gamma, const double *restrict eta,
                               const double *restrict delta, double *restrict p,
                               double *restrict d_bar) {
    Py_ssize_t q;
    MF_HNSP_P_LOOP
}

MF_VMATH_OPT MF_HNSP_UNUSED
static void mf_hnsp_terms_plain(Py_ssize_t n, double gamma, const double *eta,
                                const double *delta, double *p, double *d_bar) {
    Py_ssize_t q;
    MF_HNSP_P_LOOP
}

static void mf_hnsp_terms(Py_ssize_t n, double gamma, const double *eta, const double *delta,
                          double *p, double *d_bar) {
    /* p[q] and d_bar[q] of the n nodes (eta[q] > 0, delta[q] > 0) in vector lanes (the
       clones of mf_vmath.h; the plain loop under the tests' switch): both expm1 of a row's
       branch-off nodes in one pass. */
    if (mf_hnsp_kernels_portable)
        mf_hnsp_terms_plain(n, gamma, eta, delta, p, d_bar);
    else
        mf_hnsp_terms_fast(n, gamma, eta, delta, p, d_bar);
}

#endif
