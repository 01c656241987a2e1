"""The forests' leaf readers of the lifetime path (section 7): per-point visitors of the engine.

:class:`GaussianLeafReader` (regressors) and :class:`DirichletLeafReader` (classifiers) read
the independent leaves of a forest along the path walked by :mod:`mondrian.path._engine`; a
cut moves each point of the split node into the child that holds it (:class:`PathReader`).
:func:`inherit_unlabelled` gives the leaves that hold only validation points the reading of
their deepest labelled ancestor.
"""

from libc.math cimport M_PI, log

from mondrian.core._tree cimport TREE_LEAF, MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.path._engine cimport PathReader

import numpy as np

from mondrian.path._engine import flat_offsets


cdef class GaussianLeafReader(PathReader):
    """Independent Gaussian leaves (section 6a) read on the path: squared error and Gaussian NLL.

    Each tree predicts ``N(mu_leaf, var_leaf + noise)``; the forest combines its trees by the law
    of total variance, exactly as the regressor's ``predict(return_std=True)`` does for points
    inside the leaves. Metrics: mean squared error, mean negative log-likelihood (in the
    standardised units of the targets given).

    Parameters
    ----------
    node_mean, node_var : list of ndarray
        Per tree, the posterior mean and variance of every node's mean, read as a leaf.
    y : ndarray of shape (n_points,)
    noise : float
        Observation noise variance.
    """

    cdef intp_t n_trees, n_points
    cdef float64_t[::1] mean_flat, second_flat, y
    cdef intp_t[::1] offsets
    cdef float64_t[::1] sum_mean, sum_second, sq_err, nll
    cdef float64_t total_sq, total_nll, noise

    def __init__(self, list node_mean, list node_var, const float64_t[::1] y, float64_t noise):
        self.n_metrics = 2
        self.n_trees = len(node_mean)
        self.n_points = y.shape[0]
        self.noise = noise
        self.offsets = offsets = flat_offsets(node_mean)
        mean = np.concatenate(node_mean).astype(np.float64)
        second = np.concatenate(node_var) + noise + mean * mean
        self.mean_flat = mean
        self.second_flat = second
        self.y = np.array(y, dtype=np.float64)
        # Every point starts in every root.
        roots = offsets[: self.n_trees]
        self.sum_mean = np.full(self.n_points, mean[roots].sum())
        self.sum_second = np.full(self.n_points, second[roots].sum())
        self.sq_err = np.zeros(self.n_points)
        self.nll = np.zeros(self.n_points)
        self.total_sq = 0.0
        self.total_nll = 0.0
        cdef intp_t p
        for p in range(self.n_points):
            self._score(p)

    cdef inline void _score(self, intp_t p) noexcept nogil:
        cdef float64_t mean = self.sum_mean[p] / self.n_trees
        cdef float64_t var = self.sum_second[p] / self.n_trees - mean * mean
        cdef float64_t r = self.y[p] - mean, sq = r * r, nll
        if var < 1e-300:
            var = 1e-300
        nll = 0.5 * (log(2.0 * M_PI * var) + sq / var)
        self.total_sq += sq - self.sq_err[p]
        self.total_nll += nll - self.nll[p]
        self.sq_err[p] = sq
        self.nll[p] = nll

    cdef void move(self, intp_t tree, intp_t point, intp_t src, intp_t dst,
                   bint descend) noexcept nogil:
        cdef intp_t base = self.offsets[tree]
        self.sum_mean[point] += self.mean_flat[base + dst] - self.mean_flat[base + src]
        self.sum_second[point] += self.second_flat[base + dst] - self.second_flat[base + src]
        self._score(point)

    cdef int record(self, intp_t n_cuts, float64_t* row) except -1 nogil:
        row[0] = self.total_sq / self.n_points
        row[1] = self.total_nll / self.n_points
        return 0

    def predictions(self):
        """Current forest mean and variance of every point."""
        mean = np.asarray(self.sum_mean) / self.n_trees
        return mean, np.maximum(np.asarray(self.sum_second) / self.n_trees - mean**2, 0.0)


cdef class DirichletLeafReader(PathReader):
    """Independent Dirichlet leaves read on the path: log-loss and accuracy.

    A leaf with class counts ``c`` predicts ``(c_k + alpha / K) / (n + alpha)``; the forest
    averages its trees. Metrics: mean log-loss, accuracy.

    Parameters
    ----------
    counts : list of ndarray of shape (node_count, n_classes)
        Class counts of every node, per tree.
    y : ndarray of intp, shape (n_points,)
        Class codes of the evaluation points.
    alpha : float
        Concentration of the symmetric Dirichlet prior.
    """

    cdef intp_t n_trees, n_points, n_classes
    cdef float64_t[:, ::1] counts
    cdef float64_t[::1] totals
    cdef intp_t[::1] offsets, y
    cdef float64_t[:, ::1] proba
    cdef float64_t[::1] loss
    cdef unsigned char[::1] correct
    cdef float64_t alpha, total_loss
    cdef intp_t n_correct

    def __init__(self, list counts, const intp_t[::1] y, float64_t alpha):
        self.n_metrics = 2
        self.n_trees = len(counts)
        self.n_points = y.shape[0]
        self.n_classes = counts[0].shape[1]
        self.alpha = alpha
        sizes = [len(c) for c in counts]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)
        flat = np.ascontiguousarray(np.concatenate(counts), dtype=np.float64)
        self.counts = flat
        self.totals = flat.sum(axis=1)
        self.y = np.array(y, dtype=np.intp)
        roots = np.asarray(self.offsets)[: self.n_trees]
        root_proba = ((flat[roots] + alpha / self.n_classes)
                      / (flat[roots].sum(axis=1, keepdims=True) + alpha)).sum(axis=0)
        self.proba = np.tile(root_proba, (self.n_points, 1))
        self.loss = np.zeros(self.n_points)
        self.correct = np.zeros(self.n_points, dtype=np.uint8)
        self.total_loss = 0.0
        self.n_correct = 0
        cdef intp_t p
        for p in range(self.n_points):
            self._score(p)

    cdef inline void _score(self, intp_t p) noexcept nogil:
        cdef intp_t k, best = 0
        cdef float64_t loss = -log(self.proba[p, self.y[p]] / self.n_trees)
        for k in range(1, self.n_classes):
            if self.proba[p, k] > self.proba[p, best]:
                best = k
        self.total_loss += loss - self.loss[p]
        self.loss[p] = loss
        self.n_correct += <intp_t>(best == self.y[p]) - <intp_t>self.correct[p]
        self.correct[p] = best == self.y[p]

    cdef void move(self, intp_t tree, intp_t point, intp_t src, intp_t dst,
                   bint descend) noexcept nogil:
        cdef intp_t a = self.offsets[tree] + src, b = self.offsets[tree] + dst, k
        cdef float64_t prior = self.alpha / self.n_classes
        cdef float64_t za = 1.0 / (self.totals[a] + self.alpha)
        cdef float64_t zb = 1.0 / (self.totals[b] + self.alpha)
        for k in range(self.n_classes):
            self.proba[point, k] += ((self.counts[b, k] + prior) * zb
                                     - (self.counts[a, k] + prior) * za)
        self._score(point)

    cdef int record(self, intp_t n_cuts, float64_t* row) except -1 nogil:
        row[0] = self.total_loss / self.n_points
        row[1] = <float64_t>self.n_correct / self.n_points
        return 0

    def predictions(self):
        """Current forest class probabilities of every point."""
        return np.asarray(self.proba) / self.n_trees


def inherit_unlabelled(MondrianTree tree, float64_t[:, ::1] reading,
                       const unsigned char[::1] labelled):
    """Give every node without labels the reading of its deepest labelled ancestor (in place).

    In the transductive forest of a lifetime path, a leaf that holds only validation points
    predicts as its smallest enclosing cell with labels; the independent-leaf estimators read
    leaves the same way (but a test point that branches off the tree lands in a fresh cell and
    gets the prior). The root keeps its own reading (the prior).
    """
    cdef intp_t top = 1, j, child, k, side, width = reading.shape[1]
    if reading.shape[0] != tree.node_count or labelled.shape[0] != tree.node_count:
        raise ValueError("one reading row and one flag per node are needed")
    if tree.node_count == 0:
        return
    stack = np.empty(tree.node_count, dtype=np.intp)
    cdef intp_t[::1] st = stack
    st[0] = 0
    with nogil:
        while top > 0:
            top -= 1
            j = st[top]
            if tree.nodes[j].left_child == TREE_LEAF:
                continue
            for side in range(2):
                child = tree.nodes[j].left_child if side == 0 else tree.nodes[j].right_child
                if not labelled[child]:
                    for k in range(width):
                        reading[child, k] = reading[j, k]
                st[top] = child
                top += 1
