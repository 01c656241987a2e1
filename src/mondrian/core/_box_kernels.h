/* Box-distance kernels of prediction (mondrian.core._batch_walk), included by
   `cdef extern from "mondrian/core/_box_kernels.h"`.

   The L1 distance from a row x to a box is sum_d gap(lo[d], hi[d], x[d]), summed in the
   order d = 0, 1, ..., D - 1 from +0.0 (box_distance in _tree.pxd): a chain of D dependent
   additions, which one row cannot shorten without changing the bits. A node-major batch
   measures one box against many rows, so these kernels run the chains of several rows side
   by side: each row's own sum keeps its order (the same bits as box_distance), the rows'
   chains overlap in the pipeline, and the gaps are computed a block of dims at a time with
   vector instructions. On x86-64 glibc GCC also builds AVX2 and AVX-512 clones, chosen at
   load time; mf_box_kernels_portable forces the plain one-row loop (the reference). */
#ifndef MONDRIAN_CORE_BOX_KERNELS_H
#define MONDRIAN_CORE_BOX_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define MF_KERNEL_UNUSED __attribute__((unused))
#else
#define MF_KERNEL_UNUSED
#endif

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
#define MF_KERNEL_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define MF_KERNEL_CLONES
#endif

/* Rows measured side by side, and dims per block of gaps (kept in L1). */
#define MF_ROWS 4
#define MF_GAP_BLOCK 32
/* 32-bit words of a row's marks of the dims outside (mf_rows_eta_masked): a block of gaps
   is one word. */
#define MF_MASK_WORDS(D) (((D) + 31) / 32)
#if MF_GAP_BLOCK != 32
#error "mf_rows_eta_fast writes a block of gaps as one 32-bit word of marks"
#endif

/* Nonzero: every distance by the one-row reference loop (the switch of the tests). */
static int mf_box_kernels_portable = 0;
/* mf_rows_eta_fast sums a last row alone when it is one of fewer than this many rows past
   the groups of MF_ROWS (2: a lone row; 0: never; the tests run both). Only the marking
   distances (mf_rows_eta_marked) reach it: mf_rows_eta passes whole groups and measures
   its last rows one chain each. Most of the leaves a small call measures meet one row
   (benchmarks/results/predict.md has the figures). */
static int mf_sparse_rows = 2;

static inline double mf_gap(double lo, double hi, double v) {
    /* side_gap of _tree.pxd: the same operations in the same order. */
    double below = lo - v;
    double above = v - hi;
    below = below > 0.0 ? below : 0.0;
    above = above > 0.0 ? above : 0.0;
    return below + above;
}

static double mf_row_eta(const double *lo, Py_ssize_t D, const double *x) {
    /* box_distance: the reference (one chain). */
    const double *hi = lo + D;
    double eta = 0.0;
    Py_ssize_t d;
    for (d = 0; d < D; d++) eta += mf_gap(lo[d], hi[d], x[d]);
    return eta;
}

MF_KERNEL_CLONES MF_KERNEL_UNUSED
static void mf_rows_eta_fast(const double *restrict lo, Py_ssize_t D,
                             const double *restrict X, Py_ssize_t x_step,
                             const Py_ssize_t *restrict idx, Py_ssize_t m,
                             double *restrict out, uint32_t *restrict masks) {
    /* out[k] = distance from row idx[k] of X (at X + idx[k] x_step) to the box (lo, lo + D),
       MF_ROWS rows at a time: their gaps over a block of dims into g (vector loops over d),
       then each row's sum over the block in order d (MF_ROWS independent chains). With
       masks (not NULL), each row's dims outside (gap > 0) are also marked in its mask, one
       word per block (see mf_rows_eta_masked below). */
    const double *restrict hi = lo + D;
    const Py_ssize_t words = MF_MASK_WORDS(D);
    double g[MF_ROWS][MF_GAP_BLOCK];
    Py_ssize_t k0 = 0, k, b, w, d;
    /* A last row past the groups (mf_sparse_rows): alone, summing only its gaps > 0 (a
       row lies inside most of a box's dims: usps, outside 73 of 256 at its leaf), as
       mf_rows_eta_masked does: +0.0 added to a sum of non-negative terms from +0.0 leaves
       it as it is, so the same bits with a chain about a third as long (a group's
       side-by-side chains cost one row as much as four; most leaves meet one row). */
    Py_ssize_t sparse = m % MF_ROWS < mf_sparse_rows ? m - m % MF_ROWS : m;
    for (k = sparse; k < m; k++) {
        const Py_ssize_t row = idx[k];
        const double *restrict x = X + row * x_step;
        double acc = 0.0;
        for (b = 0; b < D; b += MF_GAP_BLOCK) {
            uint32_t bits = 0;
            w = D - b < MF_GAP_BLOCK ? D - b : MF_GAP_BLOCK;
            for (d = 0; d < w; d++) g[0][d] = mf_gap(lo[b + d], hi[b + d], x[b + d]);
            for (d = 0; d < w; d++) bits |= (uint32_t)(g[0][d] > 0.0) << d;
            if (masks != NULL) masks[row * words + b / MF_GAP_BLOCK] = bits;
            while (bits) {
                acc += g[0][__builtin_ctz(bits)];
                bits &= bits - 1;
            }
        }
        out[k] = acc;
    }
    m = sparse;
    for (; k0 < m; k0 += MF_ROWS) {
        /* (a last group of fewer rows repeats its last row: each lane's sum is its own, and
           it writes its own mask again, the same bits) */
        const double *xs[MF_ROWS];
        uint32_t *ms[MF_ROWS];
        double acc[MF_ROWS];
        for (k = 0; k < MF_ROWS; k++) {
            Py_ssize_t row = idx[k0 + k < m ? k0 + k : m - 1];
            xs[k] = X + row * x_step;
            ms[k] = masks != NULL ? masks + row * words : NULL;
            acc[k] = 0.0;
        }
        for (b = 0; b < D; b += MF_GAP_BLOCK) {
            w = D - b < MF_GAP_BLOCK ? D - b : MF_GAP_BLOCK;
            for (k = 0; k < MF_ROWS; k++) {
                const double *restrict x = xs[k] + b;
                double *restrict gk = g[k];
                for (d = 0; d < w; d++) gk[d] = mf_gap(lo[b + d], hi[b + d], x[d]);
                if (masks != NULL) {
                    uint32_t bits = 0;
                    for (d = 0; d < w; d++) bits |= (uint32_t)(gk[d] > 0.0) << d;
                    ms[k][b / MF_GAP_BLOCK] = bits;
                }
            }
            for (d = 0; d < w; d++) {
                acc[0] += g[0][d];
                acc[1] += g[1][d];
                acc[2] += g[2][d];
                acc[3] += g[3][d];
            }
        }
        for (k = 0; k < MF_ROWS && k0 + k < m; k++) out[k0 + k] = acc[k];
    }
}

MF_KERNEL_UNUSED
static void mf_rows_eta(const double *lo, Py_ssize_t D, const double *X, Py_ssize_t x_step,
                        const Py_ssize_t *idx, Py_ssize_t m, double *out) {
    /* The distance from each row idx[0..m) of X to one box: the same bits either way. Rows
       MF_ROWS side by side by mf_rows_eta_fast, the last m % MF_ROWS one chain each rather
       than a group repeating its last row: those chains overlap the next work (a node's
       rows are few: satimage's boxes meet 5.2 rows on average, a quarter of its rows are
       measured at boxes of at most 4; 5-7% faster a call). */
    Py_ssize_t tail = m % MF_ROWS, k;
    if (mf_box_kernels_portable) tail = m;
    else if (m > tail) mf_rows_eta_fast(lo, D, X, x_step, idx, m - tail, out, NULL);
    for (k = m - tail; k < m; k++) out[k] = mf_row_eta(lo, D, X + idx[k] * x_step);
}

/* Distances that mark the dims outside. Boxes nest (a node's box holds its children's), so a
   row inside a child's box on dim d is inside every ancestor's on d: its gap there is +0.0,
   and adding +0.0 to a sum of non-negative terms from +0.0 leaves the sum as it is. Once a
   row's distance to one box is summed over every dim, its distance to an enclosing box is
   the sum, in order d, of the gaps of the dims it was outside of: the bits of mf_row_eta. A
   row's dims outside are bits (dim d: bit d % 32 of word d / 32, MF_MASK_WORDS(D) words at
   `masks + row MF_MASK_WORDS(D)`), set by mf_rows_eta_marked and read, then cleared where
   the row has come inside, by mf_rows_eta_masked. The caller sees that the boxes nest;
   mf_box_kernels_portable leaves the masks aside (every distance by mf_row_eta: the
   reference of the tests). */

MF_KERNEL_UNUSED
static void mf_rows_eta_marked(const double *lo, Py_ssize_t D, const double *X,
                               Py_ssize_t x_step, const Py_ssize_t *idx, Py_ssize_t m,
                               double *out, uint32_t *masks) {
    /* mf_rows_eta_fast, each row's dims outside (gap > 0) also marked in its mask (each
       block of MF_GAP_BLOCK = 32 dims is one word). */
    mf_rows_eta_fast(lo, D, X, x_step, idx, m, out, masks);
}

MF_KERNEL_CLONES MF_KERNEL_UNUSED
static void mf_rows_eta_masked(const double *restrict lo, Py_ssize_t D,
                               const double *restrict X, Py_ssize_t x_step,
                               const Py_ssize_t *restrict idx, Py_ssize_t m,
                               double *restrict out, uint32_t *restrict masks) {
    /* out[k]: the distance from row idx[k] to a box enclosing the one its mask was set at,
       from the gaps of its marked dims only; its mask keeps the dims still outside. */
    const double *restrict hi = lo + D;
    const Py_ssize_t words = MF_MASK_WORDS(D);
    Py_ssize_t k, v;
    for (k = 0; k < m; k++) {
        Py_ssize_t row = idx[k];
        const double *restrict x = X + row * x_step;
        uint32_t *restrict mask = masks + row * words;
        double eta = 0.0;
        for (v = 0; v < words; v++) {
            uint32_t bits = mask[v], kept = 0;
            while (bits) {
                int j = __builtin_ctz(bits);
                Py_ssize_t d = v * 32 + j;
                double gap = mf_gap(lo[d], hi[d], x[d]);
                eta += gap;
                kept |= (uint32_t)(gap > 0.0) << j;
                bits &= bits - 1;
            }
            mask[v] = kept;
        }
        out[k] = eta;
    }
}

MF_KERNEL_CLONES MF_KERNEL_UNUSED
static void mf_union_box(const double *restrict first, const double *restrict second,
                         Py_ssize_t D, double *restrict out) {
    /* The box `first` grown to hold the box `second` (each 2 D), into out: include_box
       (_walk.pxd) on a copy of first, in one pass (a bound of second replaces first's only
       when strictly beyond it, so the same values). */
    Py_ssize_t d;
    for (d = 0; d < D; d++) {
        out[d] = second[d] < first[d] ? second[d] : first[d];
        out[D + d] = second[D + d] > first[D + d] ? second[D + d] : first[D + d];
    }
}

MF_KERNEL_CLONES MF_KERNEL_UNUSED
static void mf_grow_box(const double *restrict X, Py_ssize_t D, const Py_ssize_t *restrict idx,
                        Py_ssize_t n, double *restrict lo) {
    /* Grow the box (lo, lo + D) over the rows idx[0..n) of X, in that order, with the rule
       of include_subtree (_walk.pxd): a point replaces a bound only when strictly beyond it,
       so the same values at any vector width. The next row is requested while one is read
       (the rows are scattered in the store). */
    double *restrict hi = lo + D;
    Py_ssize_t k, d;
    for (k = 0; k < n; k++) {
        const double *restrict row = X + idx[k] * D;
#if defined(__GNUC__) || defined(__clang__)
        if (k + 1 < n) {
            const char *next = (const char *)(X + idx[k + 1] * D);
            for (d = 0; d < D; d += 8) __builtin_prefetch(next + d * sizeof(double));
        }
#endif
        for (d = 0; d < D; d++) {
            double v = row[d];
            lo[d] = v < lo[d] ? v : lo[d];
            hi[d] = v > hi[d] ? v : hi[d];
        }
    }
}

#endif
