/* Box distances of several rows at once for the grouped walk of prediction
   (mondrian.core._group_walk: the classifier's and the regressor's), included by
   `cdef extern from "mondrian/core/_group_walk.h"`.

   A row's distance to a box sums gap(lo[d], hi[d], x[d]) over d = 0 .. D - 1 from +0.0
   (box_distance in core/_tree.pxd): one chain of D dependent additions. A group's rows each
   measure their own box (the nodes of their paths, from the leaf up), so the chains of
   MF_GROUP_LANES rows run side by side here: each row's gaps in vector lanes over d, then
   its sum in order d, the rows' additions interleaved (independent chains overlapping in
   the pipeline instead of one waiting on the latency of the other). Every row's sum keeps
   its terms and their order, so the bits of box_distance; mf_group_walk_portable (set by
   each including module's portable switch, or by the `portable` argument of
   core/_group_walk.pyx's view: a static copy per module) forces the one-chain reference. */
#ifndef MONDRIAN_CORE_GROUP_WALK_H
#define MONDRIAN_CORE_GROUP_WALK_H

#include <stddef.h>

#include "mondrian/core/_box_kernels.h"      /* (mf_gap: side_gap of core/_tree.pxd) */

/* Nonzero: every distance by the one-row reference loop (the switch of the tests). */
static int mf_group_walk_portable = 0;

#define MF_GROUP_LANES 4
#define MF_GROUP_BLOCK 32

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
#define MF_GROUP_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define MF_GROUP_CLONES
#endif

MF_KERNEL_UNUSED
static void mf_group_distances_plain(Py_ssize_t n, Py_ssize_t D, const double *const *boxes,
                                     const double *const *xs, double *out) {
    /* The reference: box_distance, one row after another. */
    Py_ssize_t r, d;
    for (r = 0; r < n; r++) {
        double eta = 0.0;
        for (d = 0; d < D; d++) eta += mf_gap(boxes[r][d], boxes[r][D + d], xs[r][d]);
        out[r] = eta;
    }
}

MF_GROUP_CLONES MF_KERNEL_UNUSED
static void mf_group_distances_fast(Py_ssize_t n, Py_ssize_t D, const double *const *boxes,
                                    const double *const *xs, double *out) {
    /* out[r] = distance from xs[r] to the box boxes[r] (2 D), MF_GROUP_LANES rows at a time
       (a last group of fewer rows repeats its last row: each lane's sum is its own). */
    double g[MF_GROUP_LANES][MF_GROUP_BLOCK];
    Py_ssize_t r0, k, b, w, d;
    for (r0 = 0; r0 < n; r0 += MF_GROUP_LANES) {
        const double *lo[MF_GROUP_LANES];
        const double *x[MF_GROUP_LANES];
        double acc[MF_GROUP_LANES];
        for (k = 0; k < MF_GROUP_LANES; k++) {
            Py_ssize_t r = r0 + k < n ? r0 + k : n - 1;
            lo[k] = boxes[r];
            x[k] = xs[r];
            acc[k] = 0.0;
        }
        for (b = 0; b < D; b += MF_GROUP_BLOCK) {
            w = D - b < MF_GROUP_BLOCK ? D - b : MF_GROUP_BLOCK;
            for (k = 0; k < MF_GROUP_LANES; k++) {
                /* (the gaps of a block of dims in vector lanes: inline, no branch) */
                const double *restrict l = lo[k] + b, *restrict h = lo[k] + D + b;
                const double *restrict v = x[k] + b;
                for (d = 0; d < w; d++) g[k][d] = mf_gap(l[d], h[d], v[d]);
            }
            /* (dim by dim, a term of every row's chain: MF_GROUP_LANES sums interleaved) */
            for (d = 0; d < w; d++)
                for (k = 0; k < MF_GROUP_LANES; k++) acc[k] += g[k][d];
        }
        for (k = 0; k < MF_GROUP_LANES && r0 + k < n; k++) out[r0 + k] = acc[k];
    }
}

static inline void mf_group_distances(Py_ssize_t n, Py_ssize_t D, const double *const *boxes,
                                      const double *const *xs, double *out) {
    if (mf_group_walk_portable)
        mf_group_distances_plain(n, D, boxes, xs, out);
    else
        mf_group_distances_fast(n, D, boxes, xs, out);
}

#endif
