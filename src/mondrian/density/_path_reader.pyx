"""The density's reader of the lifetime path (section 7): a per-point visitor of the engine.

:class:`LogDensityReader` keeps the forest density of every point along the path walked by
:mod:`mondrian.path._engine`: a cut moves each point of the split node into the child that holds
it, changing its log density in that tree by a fixed amount.
"""

from libc.math cimport INFINITY, exp, log

from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.path._engine cimport PathReader

import numpy as np

from mondrian.path._engine import flat_offsets


# Log-density margin above a point's largest term at which its running sum is referenced.
cdef float64_t HEADROOM = 20.0


cdef class LogDensityReader(PathReader):
    """Forest density estimates read on the path: mean log-likelihood of the points.

    A point's log density in a tree changes by a fixed amount when it moves from a node to a
    child: ``edge[child]`` (the log of the child's share of the parent's mass minus the log of
    its share of the volume). With leave-one-out edges (the point's own count removed from the
    Beta updates) the same reader gives the leave-one-out likelihood of training points. The
    forest density is ``(1 - w) * mean over trees + w * q(x)`` (background ``q`` of weight
    ``w``); points outside the trees' domain have forest density 0.

    Each point keeps the sum over trees of ``exp(log density - ref)`` with a reference ``ref``
    of its own (``HEADROOM`` above its largest log density at its last recomputation). The sum
    is updated by difference and recomputed exactly from the per-tree log densities whenever
    rounding could start to matter: when it has fallen a million-fold below the largest value
    it held since (as when removing cuts makes the densities fall), or a term passes the
    reference.

    Parameters
    ----------
    edges : list of ndarray
        Per tree, ``edge[c]`` for every node ``c`` (0 for the root).
    log_background : ndarray of shape (n_points,)
        ``log(w * q(x))`` of every point (``-inf`` for no background).
    log_forest_weight : float
        ``log(1 - w)``.
    inside : ndarray of bool, shape (n_points,)
        Whether each point lies in the trees' domain (its density starts at 1 in every root).
    """

    cdef intp_t n_trees, n_points, n_infinite
    cdef float64_t[::1] edges, log_background, scaled_sum, reference, peak, loglik
    cdef intp_t[::1] offsets
    cdef float64_t[:, ::1] log_density
    cdef float64_t log_forest_weight, total, log_n_trees

    def __init__(self, list edges, const float64_t[::1] log_background,
                 float64_t log_forest_weight, inside):
        self.n_metrics = 1
        self.n_trees = len(edges)
        self.n_points = log_background.shape[0]
        self.offsets = offsets = flat_offsets(edges)
        self.edges = np.ascontiguousarray(np.concatenate(edges), dtype=np.float64)
        self.log_background = np.array(log_background, dtype=np.float64)
        self.log_forest_weight = log_forest_weight
        self.log_n_trees = log(<float64_t>self.n_trees)
        inside = np.asarray(inside, dtype=bool)
        self.log_density = np.where(inside, 0.0, -INFINITY) * np.ones((self.n_trees, 1))
        self.scaled_sum = np.zeros(self.n_points)
        self.reference = np.zeros(self.n_points)
        self.peak = np.zeros(self.n_points)
        self.loglik = np.zeros(self.n_points)
        self.total = 0.0
        self.n_infinite = 0
        cdef intp_t p
        for p in range(self.n_points):
            self._recompute(p)
            self._score(p)

    cdef void _recompute(self, intp_t p) noexcept nogil:
        """Exact sum over trees, relative to a reference ``HEADROOM`` above the largest log
        density of the point (so that terms may grow that much before the next one)."""
        cdef intp_t m
        cdef float64_t top = -INFINITY, acc = 0.0
        for m in range(self.n_trees):
            if self.log_density[m, p] > top:
                top = self.log_density[m, p]
        if top == -INFINITY:
            self.reference[p] = INFINITY
            self.scaled_sum[p] = 0.0
            self.peak[p] = 0.0
            return
        top += HEADROOM
        for m in range(self.n_trees):
            acc += exp(self.log_density[m, p] - top)
        self.reference[p] = top
        self.scaled_sum[p] = acc
        self.peak[p] = acc

    cdef inline void _score(self, intp_t p) noexcept nogil:
        cdef float64_t a = self.log_background[p], b = -INFINITY, value, hi
        if self.scaled_sum[p] > 0.0:
            b = (self.log_forest_weight + log(self.scaled_sum[p]) + self.reference[p]
                 - self.log_n_trees)
        hi = a if a > b else b
        # Points of zero density are counted apart, so that they never turn the total NaN.
        if self.loglik[p] == -INFINITY:
            self.n_infinite -= 1
        else:
            self.total -= self.loglik[p]
        if hi == -INFINITY:
            value = -INFINITY
            self.n_infinite += 1
        else:
            value = hi + log(exp(a - hi) + exp(b - hi))
            self.total += value
        self.loglik[p] = value

    cdef void move(self, intp_t tree, intp_t point, intp_t src, intp_t dst,
                   bint descend) noexcept nogil:
        cdef float64_t old = self.log_density[tree, point], new, updated
        cdef float64_t ref = self.reference[point]
        if descend:
            new = old + self.edges[self.offsets[tree] + dst]
        else:
            new = old - self.edges[self.offsets[tree] + src]
        self.log_density[tree, point] = new
        updated = self.scaled_sum[point] + exp(new - ref) - exp(old - ref)
        # The rounding error of the running sum is relative to the largest value it held:
        # recompute once it has fallen a million-fold below that, or a term passes the
        # reference.
        if new > ref or not updated > 1e-6 * self.peak[point]:
            self._recompute(point)
        else:
            self.scaled_sum[point] = updated
            if updated > self.peak[point]:
                self.peak[point] = updated
        self._score(point)

    cdef int record(self, intp_t n_cuts, float64_t* row) except -1 nogil:
        row[0] = -INFINITY if self.n_infinite > 0 else self.total / self.n_points
        return 0

    def log_likelihoods(self):
        """Current log density of every point (in the trees' units)."""
        return np.asarray(self.loglik).copy()

    def tree_log_densities(self):
        """Current log density of every point in every tree, shape (n_trees, n_points)."""
        return np.asarray(self.log_density).copy()
