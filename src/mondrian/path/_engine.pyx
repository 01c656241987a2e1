"""Regularisation paths of Mondrian forests over the lifetime (section 7).

A forest sampled to a terminal lifetime is, restricted to any smaller lifetime, exactly a forest
of that lifetime. Walking its cuts in order of birth time (forward) or death order (backward),
and moving the evaluation points of the split node to the child that holds them, visits the
model at every lifetime at which it changes for O(points x trees x depth) work in all: the cost
of one fit rather than one fit per lifetime.

The traversal is shared; what a model keeps per point and which losses it records live in a
:class:`PathReader` (Gaussian leaves, Dirichlet leaves here; the density model in its module).
"""

from libc.math cimport INFINITY, M_PI, exp, log

from mondrian.core._tree cimport TREE_LEAF, MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t

import numpy as np

from mondrian.kernel._features import subtree_order


cdef class PathReader:
    """Base class of the statistics readers of a lifetime path (not for direct use)."""

    cdef void move(self, intp_t tree, intp_t point, intp_t src, intp_t dst,
                   bint descend) noexcept nogil:
        pass

    cdef void record(self, float64_t* row) noexcept nogil:
        pass


def cut_events(list trees):
    """Every cut of the forest, in order of birth time.

    Returns
    -------
    times : ndarray of float
    tree, node, left, right : ndarray of intp
        Tree index, split node and its children.
    """
    times, tree_ids, nodes, lefts, rights = [], [], [], [], []
    for m, tree in enumerate(trees):
        arr = tree.nodes_array
        internal = np.flatnonzero(arr["left_child"] != TREE_LEAF)
        times.append(arr["split_time"][internal])
        tree_ids.append(np.full(internal.size, m, dtype=np.intp))
        nodes.append(internal.astype(np.intp))
        lefts.append(arr["left_child"][internal].astype(np.intp))
        rights.append(arr["right_child"][internal].astype(np.intp))
    times = np.concatenate(times) if times else np.empty(0)
    order = np.argsort(times, kind="stable")
    columns = [np.concatenate(a)[order] if a else np.empty(0, np.intp)
               for a in (tree_ids, nodes, lefts, rights)]
    return (times[order], *columns)


def plan_path(list trees, const intp_t[:, ::1] leaf_of_point, float64_t stop=INFINITY):
    """The cuts of ``trees`` in birth order and, per tree, the points of every node.

    Parameters
    ----------
    trees : list of MondrianTree
    leaf_of_point : ndarray of intp, shape (n_trees, n_points)
        Leaf of every evaluation point in every tree at the trees' lifetime; -1 for a point a
        tree does not hold (it never moves in that tree).
    stop : float, default=inf
        Keep only the cuts born before ``stop``.

    Returns
    -------
    tuple
        ``(times, events, offsets, starts, ends, orders)``, to pass to :func:`run_path`
        (several readers of the same points can share one plan).
    """
    cdef intp_t n_trees = len(trees), n_points = leaf_of_point.shape[1], m
    if leaf_of_point.shape[0] != n_trees:
        raise ValueError("leaf_of_point needs one row per tree")
    times, ev_tree, ev_node, ev_left, ev_right = cut_events(trees)
    if stop < INFINITY:
        keep = np.searchsorted(times, stop, side="left")
        times, ev_tree, ev_node, ev_left, ev_right = (
            a[:keep] for a in (times, ev_tree, ev_node, ev_left, ev_right)
        )
    # Per tree, an order of the points in which every node's points are contiguous.
    offsets = np.zeros(n_trees + 1, dtype=np.intp)
    for m in range(n_trees):
        offsets[m + 1] = offsets[m] + (<MondrianTree>trees[m]).node_count
    starts = np.empty(offsets[n_trees], dtype=np.intp)
    ends = np.empty(offsets[n_trees], dtype=np.intp)
    orders = np.empty((n_trees, n_points), dtype=np.intp)
    for m in range(n_trees):
        order, start, end = subtree_order(trees[m], np.ascontiguousarray(leaf_of_point[m]))
        orders[m, : order.shape[0]] = order
        starts[offsets[m]: offsets[m + 1]] = start
        ends[offsets[m]: offsets[m + 1]] = end
    events = np.ascontiguousarray(np.column_stack([ev_tree, ev_node, ev_left, ev_right]),
                                  dtype=np.intp)
    return times, events, offsets, starts, ends, orders


def run_path(list trees, const intp_t[:, ::1] leaf_of_point, PathReader reader,
             bint forward=True, float64_t stop=INFINITY, tuple plan=None):
    """Walk the cuts of ``trees`` and record ``reader``'s metrics after each one.

    Parameters
    ----------
    trees : list of MondrianTree
    leaf_of_point : ndarray of intp, shape (n_trees, n_points)
        Leaf of every evaluation point in every tree (see :func:`plan_path`).
    reader : PathReader
        Model state with every point at the root of every tree.
    forward : bool, default=True
        Add cuts from the root down (True), or start from the terminal lifetime and remove
        them in decreasing birth time (False).
    stop : float, default=inf
        Forward only: stop before the first cut born at or after ``stop``, leaving ``reader``
        in the state of the forest pruned at ``stop``.
    plan : tuple, default=None
        From :func:`plan_path` on the same trees and points (with the same ``stop``).

    Returns
    -------
    times : ndarray of shape (n_events,)
        Birth times of the cuts processed.
    metrics : ndarray of shape (n_events + 1, reader.n_metrics)
        Row 0 is the forest of root cells (lifetime 0); row ``e + 1`` holds after the first
        ``e + 1`` cuts, for lifetimes in ``(times[e], times[e + 1]]``.
    """
    if stop < INFINITY and not forward:
        raise ValueError("stop applies to forward paths")
    if plan is None:
        plan = plan_path(trees, leaf_of_point, stop)
    times, events, offsets, starts, ends, orders = plan
    if orders.shape[1] != leaf_of_point.shape[1] or offsets.shape[0] != len(trees) + 1:
        raise ValueError("the plan does not match the trees and points")
    metrics = np.empty((times.shape[0] + 1, reader.n_metrics))
    cdef const intp_t[::1] off = offsets, st = starts, en = ends
    cdef const intp_t[:, ::1] od = orders
    cdef const intp_t[:, ::1] ev = events
    cdef float64_t[:, ::1] out = metrics
    cdef intp_t n_events = times.shape[0], e
    with nogil:
        reader.record(&out[0, 0])
        for e in range(n_events):
            _apply_cut(reader, ev[e, 0], ev[e, 1], ev[e, 2], ev[e, 3], off, st, en, od, True)
            if forward:
                reader.record(&out[e + 1, 0])
        if not forward:
            # The reader now holds the terminal forest: undo the cuts from the last born.
            reader.record(&out[n_events, 0])
            for e in range(n_events - 1, -1, -1):
                _apply_cut(reader, ev[e, 0], ev[e, 1], ev[e, 2], ev[e, 3], off, st, en, od,
                           False)
                reader.record(&out[e, 0])
    return times, metrics


cdef inline void _apply_cut(PathReader reader, intp_t m, intp_t j, intp_t left, intp_t right,
                            const intp_t[::1] off, const intp_t[::1] st, const intp_t[::1] en,
                            const intp_t[:, ::1] od, bint descend) noexcept nogil:
    """Move the points of node ``j`` of tree ``m`` into its children (``descend``) or back."""
    cdef intp_t base = off[m], k, child
    for k in range(st[base + j], en[base + j]):
        child = left if st[base + left] <= k < en[base + left] else right
        if descend:
            reader.move(m, od[m, k], j, child, True)
        else:
            reader.move(m, od[m, k], child, j, False)


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
        offsets = np.concatenate([[0], np.cumsum([len(a) for a in node_mean])]).astype(np.intp)
        self.offsets = offsets
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

    cdef void record(self, float64_t* row) noexcept nogil:
        row[0] = self.total_sq / self.n_points
        row[1] = self.total_nll / self.n_points

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

    cdef void record(self, float64_t* row) noexcept nogil:
        row[0] = self.total_loss / self.n_points
        row[1] = <float64_t>self.n_correct / self.n_points

    def predictions(self):
        """Current forest class probabilities of every point."""
        return np.asarray(self.proba) / self.n_trees


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
        offsets = np.concatenate([[0], np.cumsum([len(e) for e in edges])]).astype(np.intp)
        self.offsets = offsets
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

    cdef void record(self, float64_t* row) noexcept nogil:
        row[0] = -INFINITY if self.n_infinite > 0 else self.total / self.n_points

    def log_likelihoods(self):
        """Current log density of every point (in the trees' units)."""
        return np.asarray(self.loglik).copy()

    def tree_log_densities(self):
        """Current log density of every point in every tree, shape (n_trees, n_points)."""
        return np.asarray(self.log_density).copy()


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
