/* Box loops of the Mondrian tree core (mondrian.core._tree and its builders), included by
   `cdef extern from "mondrian/core/_box_loops.h"`. Plain C, so that the vector code is
   written once, where a C reader expects it, and shipped with the sources (MANIFEST.in). */
#ifndef MONDRIAN_CORE_BOX_LOOPS_H
#define MONDRIAN_CORE_BOX_LOOPS_H

#include <math.h>
#include <string.h>

/* Every module including this header gets its own copy of the static functions below; a
   module that does not call one of them is not warned about it. */
#if defined(__GNUC__) || defined(__clang__)
#define MF_MAYBE_UNUSED __attribute__((unused))
#else
#define MF_MAYBE_UNUSED
#endif

/* A cache hint for scattered reads (no effect on any value). */
#if defined(__GNUC__) || defined(__clang__)
#define MONDRIAN_TREE_PREFETCH(p) __builtin_prefetch(p)
#else
#define MONDRIAN_TREE_PREFETCH(p) ((void)0)
#endif

/* Cache hints for the n_bytes from start, a 64-byte line at a time, and the last byte (the
   last line of a span that does not start on a line); no effect on any value. */
static inline MF_MAYBE_UNUSED void mf_prefetch_span(const void *start, Py_ssize_t n_bytes) {
    Py_ssize_t b;
    for (b = 0; b < n_bytes; b += 64) MONDRIAN_TREE_PREFETCH((const char *)start + b);
    if (n_bytes > 0) MONDRIAN_TREE_PREFETCH((const char *)start + n_bytes - 1);
}

/* Box loops of batch growth (mondrian.core._grow). The bounds are min/max chains with the
   tie rule of _include (a point replaces a bound only when strictly beyond it), so they
   have the same bits at any vector width; on x86-64 glibc GCC builds an AVX2 clone,
   chosen at load time when the CPU has it (twice the doubles per instruction of the
   SSE2 baseline). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
#define MF_BOX_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MF_BOX_CLONES
#endif

/* The box loop keeps the box of a block of 4 MF_LANES dims in registers (2 x 4 ymm
   with AVX2) while a chunk of rows streams by: a load, a min and a max per 4 doubles. A
   point replaces a bound only when strictly beyond it (the select below is v < mn ? v
   : mn lane-wise: a compare and a blend on x86), so each bound is the first of its
   ties in the order of idx (-0.0 vs 0.0). GCC and clang's vector types lower to the
   widest vectors of the clone; other compilers get lanes of one double, the same
   arithmetic. */
#if defined(__GNUC__)
typedef double mf_v4 __attribute__((vector_size(32)));
typedef long long mf_m4 __attribute__((vector_size(32)));
/* (memcpy: rows need not be 32-byte aligned; macros, not functions, so no vector
   crosses a call boundary of the default clone) */
#define mf_load4(p) ({ mf_v4 v_; memcpy(&v_, (p), sizeof v_); v_; })
#define mf_store4(p, v) do { mf_v4 w_ = (v); memcpy((p), &w_, sizeof w_); } while (0)
#define MF_LANES 4
#define MF_INLINE static inline __attribute__((always_inline))
#define MF_PREFETCH(p) __builtin_prefetch(p)
#define MF_MIN(v, m) ((mf_v4)(((mf_m4)(v) & ((v) < (m))) | ((mf_m4)(m) & ~((v) < (m)))))
#define MF_MAX(v, m) ((mf_v4)(((mf_m4)(v) & ((v) > (m))) | ((mf_m4)(m) & ~((v) > (m)))))
#else
typedef double mf_v4;
#define mf_load4(p) (*(p))
#define mf_store4(p, v) (*(p) = (v))
#define MF_LANES 1
#define MF_INLINE static inline
#define MF_PREFETCH(p) ((void)0)
#define MF_MIN(v, m) ((v) < (m) ? (v) : (m))
#define MF_MAX(v, m) ((v) > (m) ? (v) : (m))
#endif
/* Rows are gathered by idx, out of the reach of the hardware prefetcher: the box loop
   takes them in chunks of MF_CHUNK (in L1 while every block of dims streams them) and
   prefetches the next chunk whole; the partition prefetches MF_AHEAD rows ahead. */
#define MF_CHUNK 16
#define MF_AHEAD 8

/* Grow the box (lo, hi) over dims [b, b + MF_LANES Q) of the rows idx[0..n). */
#define MF_BOX_BLOCK(Q)                                                             \
    MF_INLINE void mf_box_block_##Q(                                                \
            const double *restrict X, Py_ssize_t D, const Py_ssize_t *restrict idx, \
            Py_ssize_t n, Py_ssize_t b, double *restrict lo, double *restrict hi) { \
        mf_v4 mn[Q], mx[Q];                                                         \
        Py_ssize_t q, k;                                                            \
        for (q = 0; q < Q; q++) {                                                   \
            mn[q] = mf_load4(lo + b + MF_LANES * q);                                \
            mx[q] = mf_load4(hi + b + MF_LANES * q);                                \
        }                                                                           \
        for (k = 0; k < n; k++) {                                                   \
            const double *row = X + idx[k] * D + b;                                 \
            for (q = 0; q < Q; q++) {                                               \
                mf_v4 v = mf_load4(row + MF_LANES * q);                             \
                mn[q] = MF_MIN(v, mn[q]);                                           \
                mx[q] = MF_MAX(v, mx[q]);                                           \
            }                                                                       \
        }                                                                           \
        for (q = 0; q < Q; q++) {                                                   \
            mf_store4(lo + b + MF_LANES * q, mn[q]);                                \
            mf_store4(hi + b + MF_LANES * q, mx[q]);                                \
        }                                                                           \
    }
MF_BOX_BLOCK(4)
MF_BOX_BLOCK(1)

MF_INLINE void mf_box_dim(
        const double *restrict X, Py_ssize_t D, const Py_ssize_t *restrict idx,
        Py_ssize_t n, Py_ssize_t d, double *restrict lo, double *restrict hi) {
    /* One dim (the last D mod MF_LANES), the same rule one double at a time. */
    double mn = lo[d], mx = hi[d];
    Py_ssize_t k;
    for (k = 0; k < n; k++) {
        double v = X[idx[k] * D + d];
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
    }
    lo[d] = mn;
    hi[d] = mx;
}

MF_INLINE void mf_grow_chunks(
        const double *restrict X, Py_ssize_t D, const Py_ssize_t *restrict idx,
        Py_ssize_t n, double *restrict lo) {
    /* Grow the box (lo, lo + D) over the rows idx[0..n) in chunks of MF_CHUNK (in L1
       while every block of dims streams them; the next chunk's rows are prefetched). */
    double *restrict hi = lo + D;
    Py_ssize_t b, k0, k1, k, c;
    for (k0 = 0; k0 < n; k0 = k1) {
        k1 = n - k0 > MF_CHUNK ? k0 + MF_CHUNK : n;
        for (k = k1; k < n && k < k1 + MF_CHUNK; k++)
            for (c = 0; c < D; c += 8) MF_PREFETCH(X + idx[k] * D + c);
        for (b = 0; b + 4 * MF_LANES <= D; b += 4 * MF_LANES)
            mf_box_block_4(X, D, idx + k0, k1 - k0, b, lo, hi);
        for (; b + MF_LANES <= D; b += MF_LANES)
            mf_box_block_1(X, D, idx + k0, k1 - k0, b, lo, hi);
        for (; b < D; b++) mf_box_dim(X, D, idx + k0, k1 - k0, b, lo, hi);
    }
}

MF_BOX_CLONES MF_MAYBE_UNUSED
static void mf_rows_box(const double *restrict X, Py_ssize_t D,
                        const Py_ssize_t *restrict idx, Py_ssize_t n, double *restrict lo) {
    /* The box of the rows idx[0..n) of X, grown in that order, into lo (lower row) and
       lo + D (upper row); an empty set of rows gets the empty box (+inf, -inf). The box
       does not overlap X or idx. The rows come in chunks of MF_CHUNK, which stay in L1
       while each block of dims streams them (rows are gathered by idx, out of the reach
       of the hardware prefetcher: the next chunk's rows are prefetched whole). */
    double *restrict hi = lo + D;
    Py_ssize_t b;
    if (n <= 0) {
        for (b = 0; b < D; b++) {
            lo[b] = INFINITY;
            hi[b] = -INFINITY;
        }
        return;
    }
    memcpy(lo, X + idx[0] * D, D * sizeof(double));
    memcpy(hi, X + idx[0] * D, D * sizeof(double));
    mf_grow_chunks(X, D, idx + 1, n - 1, lo);
}

MF_BOX_CLONES MF_MAYBE_UNUSED
static void mf_rows_grow(const double *restrict X, Py_ssize_t D,
                         const Py_ssize_t *restrict idx, Py_ssize_t n, double *restrict lo) {
    /* Grow the box (lo, lo + D) to contain the rows idx[0..n) of X, in that order: the
       loop of mf_rows_box (mf_include's tie rule, so the bits of the rows included one at
       a time), wide on wide rows (the online extension's partial boxes of small nodes). */
    mf_grow_chunks(X, D, idx, n, lo);
}

MF_MAYBE_UNUSED
static Py_ssize_t mf_partition_boxes(Py_ssize_t *restrict idx, Py_ssize_t start,
                                     Py_ssize_t end, const double *restrict X,
                                     Py_ssize_t D, Py_ssize_t feature, double threshold,
                                     double *restrict left, double *restrict right) {
    /* Move the rows with x[feature] <= threshold to the front of idx[start..end) (the
       same swaps as _partition) and return the boundary; then write the box of each side,
       grown in the final order of its rows. The four buffers do not overlap. */
    Py_ssize_t i = start, j = end - 1, tmp;
    while (i <= j) {
        /* (the rows met next: from the front, and swapped in from the back) */
        MF_PREFETCH(X + idx[i + MF_AHEAD < end ? i + MF_AHEAD : i] * D + feature);
        MF_PREFETCH(X + idx[j - MF_AHEAD > start ? j - MF_AHEAD : j] * D + feature);
        if (X[idx[i] * D + feature] <= threshold) {
            i++;
        } else {
            tmp = idx[i];
            idx[i] = idx[j];
            idx[j] = tmp;
            j--;
        }
    }
    mf_rows_box(X, D, idx + start, i - start, left);
    mf_rows_box(X, D, idx + i, end - i, right);
    return i;
}

MF_BOX_CLONES MF_MAYBE_UNUSED
static void mf_add_rows(double *restrict val, const double *restrict rows, Py_ssize_t S,
                        const Py_ssize_t *restrict idx, Py_ssize_t n) {
    /* Add the rows idx[0..n) of rows (width S) to val, in that order: each column is the
       same chain of additions as one row at a time (so the same bits at any vector
       width). val does not overlap rows or idx. */
    Py_ssize_t k, c;
    for (k = 0; k < n; k++) {
        const double *row = rows + idx[k] * S;
        if (k + MF_AHEAD < n) MF_PREFETCH(rows + idx[k + MF_AHEAD] * S);
        for (c = 0; c < S; c++) val[c] += row[c];
    }
}

/* Box loops of the online extension (mondrian.core._extend), branch-free (scalar selects
   mispredict when the side that wins changes from one feature to the next) and inline on
   2-double vectors, the baseline x86-64 width (a call per node for a wider clone would
   cost more than it saves on a few dozen features). */
#if defined(__GNUC__)
typedef double mf_v2 __attribute__((vector_size(16)));
typedef long long mf_m2 __attribute__((vector_size(16)));
#define mf_load2(p) ({ mf_v2 v_; memcpy(&v_, (p), sizeof v_); v_; })
#define mf_store2(p, v) do { mf_v2 w_ = (v); memcpy((p), &w_, sizeof w_); } while (0)
#define MF_SEL2(c, a, b) ((mf_v2)(((mf_m2)(a) & (c)) | ((mf_m2)(b) & ~(c))))
/* (a where a lies outside past the bound b, else +0.0) */
#define MF_GAP2(a, b) ((mf_v2)((mf_m2)((a) - (b)) & ((a) > (b))))
#endif

MF_INLINE void mf_join(double *restrict lo, double *restrict hi,
                       const double *restrict bmin, const double *restrict bmax,
                       Py_ssize_t D) {
    /* Grow the box (lo, hi) to contain the box (bmin, bmax), with _include's tie rule (a
       bound is replaced only by one strictly beyond it), so the same bits. */
    Py_ssize_t d = 0;
#if defined(__GNUC__)
    for (; d + 2 <= D; d += 2) {
        mf_v2 a = mf_load2(bmin + d), b = mf_load2(bmax + d);
        mf_v2 mn = mf_load2(lo + d), mx = mf_load2(hi + d);
        mf_store2(lo + d, MF_SEL2(a < mn, a, mn));
        mf_store2(hi + d, MF_SEL2(b > mx, b, mx));
    }
#endif
    for (; d < D; d++) {
        lo[d] = bmin[d] < lo[d] ? bmin[d] : lo[d];
        hi[d] = bmax[d] > hi[d] ? bmax[d] : hi[d];
    }
}

MF_INLINE void mf_include(double *restrict lo, double *restrict hi,
                          const double *restrict x, Py_ssize_t D) {
    /* Grow the box (lo, hi) to contain the point x (x read as both rows of a box). */
    mf_join(lo, hi, x, x, D);
}

MF_INLINE double mf_extent(const double *restrict box, const double *restrict bmin,
                           const double *restrict bmax, double *restrict extent,
                           Py_ssize_t D) {
    /* The extent of the batch box [bmin, bmax] outside box (lower row box, upper box + D)
       per feature into extent: below + above, each +0.0 unless the batch sticks out on
       that side. Returns their sum in 4 lanes (lane k: the features d = k mod 4 in order,
       the last D mod 4 added to lane 0), then (l0 + l1) + (l2 + l3): _extent's sums, so
       the same bits. */
    double s[4] = {0.0, 0.0, 0.0, 0.0}, below, above;
    Py_ssize_t d = 0;
#if defined(__GNUC__)
    mf_v2 a01 = {0.0, 0.0}, a23 = {0.0, 0.0}, e;
    for (; d + 4 <= D; d += 4) {
        e = MF_GAP2(mf_load2(box + d), mf_load2(bmin + d))
            + MF_GAP2(mf_load2(bmax + d), mf_load2(box + D + d));
        mf_store2(extent + d, e);
        a01 += e;
        e = MF_GAP2(mf_load2(box + d + 2), mf_load2(bmin + d + 2))
            + MF_GAP2(mf_load2(bmax + d + 2), mf_load2(box + D + d + 2));
        mf_store2(extent + d + 2, e);
        a23 += e;
    }
    memcpy(s, &a01, sizeof a01);
    memcpy(s + 2, &a23, sizeof a23);
#endif
    for (; d < D; d++) {
        below = bmin[d] < box[d] ? box[d] - bmin[d] : 0.0;
        above = bmax[d] > box[D + d] ? bmax[d] - box[D + d] : 0.0;
        extent[d] = below + above;
        s[d < D - D % 4 ? d % 4 : 0] += extent[d];
    }
    return (s[0] + s[1]) + (s[2] + s[3]);
}

#endif /* MONDRIAN_CORE_BOX_LOOPS_H */
