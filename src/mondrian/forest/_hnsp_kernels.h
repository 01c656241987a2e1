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
    /* The reference: _add_branch_off's loop as it was written, one class after another. */
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

static inline void mf_branch_off(Py_ssize_t K, double weight, double d_bar, double n_tab,
                                 double n_cust, int strict, const double *counts,
                                 const double *g_parent, double *out) {
    /* out[k] += the branch-off term of class k (out distinct from counts and g_parent). */
    if (mf_hnsp_kernels_portable)
        mf_branch_off_plain(K, weight, d_bar, n_tab, n_cust, strict, counts, g_parent, out);
    else
        mf_branch_off_fast(K, weight, d_bar, n_tab, n_cust, strict, counts, g_parent, out);
}

#endif
