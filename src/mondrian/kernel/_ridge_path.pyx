"""Lifetime paths of Mondrian kernel ridge regression (section 8.3-8.4).

All the Mondrian trees are sampled once up to a terminal lifetime. Sweeping the lifetime from 0
up adds their cuts in birth-time order (forward path); sweeping down removes them (backward
path). Each cut replaces one feature (a cell) by two, or merges two back into one, and the
inverse of ``A = Z'Z + delta2 I`` follows with O(C^2) low-rank updates: forward, a product with
the inverse (sparse when the new cell meets few features) and a rank-3 correction, gathered
over 32 cuts into one BLAS-3 product; the weights follow in O(C) per cut. The whole forward
path costs about as much as one solve at the terminal lifetime (1.1x on cpu_act). The merges
of one Mondrian-grid cut removal (many cell pairs of one grid) are one Woodbury update of size
2 x pairs that needs only the pairs' columns of the inverse (:meth:`RidgeInverse.merge_pairs`).

The cuts are walked by the path engine (:mod:`mondrian.path._engine`); the inverse is kept by
:class:`~mondrian.kernel._ridge_inverse.RidgeInverse`; this module holds the model read along
the path (:class:`RidgePathVisitor`) and the unpickling of the inverse (``_rebuild_ridge``,
named here by every pickle).
Targets are centred by the caller. Predictions of training and validation points are
``sum_m w[col[m, i]] / sqrt(M)``.
"""

from libc.math cimport M_PI, NAN, log, sqrt

from scipy.linalg.cython_blas cimport ddot

from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.kernel._ridge_inverse cimport PENDING_CUTS, RidgeInverse
from mondrian.path._engine cimport CellColumns, CutSource, TreeCuts

import numpy as np
from scipy import sparse

from mondrian.core.state_checks import loaded_array, refuse


def _rebuild_ridge(float64_t delta2, inverse, zty, weights, float64_t logdet):
    """Unpickle a :class:`RidgeInverse` (only its live block is saved)."""
    inverse = loaded_array("RidgeInverse", "inverse", inverse, np.float64, 2)
    cdef intp_t C = inverse.shape[0]
    if inverse.shape != (C, C):
        refuse("RidgeInverse", "the inverse is not square")
    zty = loaded_array("RidgeInverse", "zty", zty, np.float64, 1, (C,))
    weights = loaded_array("RidgeInverse", "weights", weights, np.float64, 1, (C,))
    if not delta2 > 0:
        refuse("RidgeInverse", "delta2 must be positive")
    ridge = RidgeInverse(max(C, 1), delta2)
    np.asarray(ridge.inv)[:C, :C] = inverse
    np.asarray(ridge.zty)[:C] = zty
    np.asarray(ridge.weights)[:C] = weights
    ridge.n_features = C
    ridge.logdet = logdet
    return ridge


cdef class RidgePathVisitor(CellColumns):
    """Kernel ridge regression read along the path: one feature per cell, the inverse of
    ``A = Z'Z + delta2 I`` updated per cut (a split forward, a merge backward).

    Metrics: training MSE, validation MSE, log marginal likelihood, number of features.

    Parameters
    ----------
    y : ndarray of float64
        Centred targets of every point (validation targets are only used for errors).
    is_train : ndarray of uint8
        1 for training points.
    delta2 : float
        Ridge constant.
    capacity : int, default=None
        Largest number of features held at once; by default the source's trees plus one per
        event (a source whose events are chosen one at a time, the Mondrian grid, sets it).
    pending_cuts : int, default=32
        See :class:`RidgeInverse`.

    Notes
    -----
    A backward walk starts from the cells of the source's terminal model
    (:meth:`~mondrian.path._engine.TreeCuts.terminal_cells`).
    """

    cdef RidgeInverse ridge
    cdef const float64_t[::1] y
    cdef const unsigned char[::1] is_train
    cdef float64_t[::1] pred, b_left, b_right
    cdef float64_t delta2, scale, inv_m, yty
    cdef intp_t n_train, n_trees, n_records, capacity, pending_cuts
    cdef bint stale  # merges left the weights to be solved again
    # Grid sources (not TreeCuts): the merges of one event are queued and applied together
    # (RidgeInverse.merge_pairs), the decoupled columns they leave are dropped lazily.
    cdef bint batch
    cdef intp_t[::1] q_first, q_second, dead
    cdef unsigned char[::1] queued
    cdef intp_t n_queued, q_group, n_dead

    def __init__(self, const float64_t[::1] y, const unsigned char[::1] is_train,
                 float64_t delta2, capacity=None, intp_t pending_cuts=PENDING_CUTS):
        cdef intp_t i
        self.capacity = -1 if capacity is None else capacity
        self.pending_cuts = pending_cuts
        self.n_metrics = 4
        self.y = y
        self.is_train = is_train
        self.delta2 = delta2
        self.yty = 0.0
        self.n_train = 0
        for i in range(y.shape[0]):
            if is_train[i]:
                self.n_train += 1
                self.yty += y[i] * y[i]

    cdef int begin(self, bint forward) except -1:
        cdef CutSource source = self.source
        cdef intp_t m, capacity = source.n_groups + source.n_events + 1
        if self.capacity >= 0:
            capacity = max(self.capacity, source.n_groups) + 1
        if source.n_points != self.y.shape[0]:
            raise ValueError("one target per point is needed")
        self.n_trees = source.n_groups
        self.scale = 1.0 / sqrt(self.n_trees)
        self.inv_m = 1.0 / self.n_trees
        self.n_records = 0
        self.init_columns(capacity)
        self.ridge = RidgeInverse(capacity, self.delta2, self.pending_cuts)
        self.batch = type(source) is not TreeCuts
        self.q_first = np.zeros(capacity, dtype=np.intp)
        self.q_second = np.zeros(capacity, dtype=np.intp)
        self.dead = np.zeros(capacity, dtype=np.intp)
        self.queued = np.zeros(capacity, dtype=np.uint8)
        self.n_queued = self.n_dead = 0
        self.q_group = -1
        self.pred = np.zeros(source.n_points)
        self.b_left = np.zeros(capacity)
        self.b_right = np.zeros(capacity)
        if not forward:
            self._start_at_terminal(source.terminal_cells())
            return 1
        # Lifetime 0: one root cell per tree, A = (N/M) 11' + delta2 I.
        A = (np.full((self.n_trees, self.n_trees), self.n_train * self.inv_m)
             + self.delta2 * np.eye(self.n_trees))
        train = np.asarray(self.is_train, dtype=bool)
        zty = np.full(self.n_trees, self.scale * np.asarray(self.y)[train].sum())
        self.ridge.start(A, zty)
        for m in range(self.n_trees):
            self.relabel(m, 0, m)
        return 0

    cdef int _start_at_terminal(self, list cells) except -1:
        """Dense start of the backward path: every cell of the terminal model is a feature."""
        cdef intp_t m, j, col = 0
        for m in range(self.n_trees):
            for j in cells[m]:
                self.relabel(m, j, col)
                col += 1
        train = np.asarray(self.is_train, dtype=bool)
        cols = np.asarray(self.cols)[:, train]
        Z = sparse.csr_matrix(
            (np.full(cols.size, self.scale),
             (np.repeat(np.arange(cols.shape[1]), self.n_trees), cols.T.ravel())),
            shape=(cols.shape[1], col),
        )
        A = (Z.T @ Z).toarray() + self.delta2 * np.eye(col)
        self.ridge.start(A, Z.T @ np.asarray(self.y)[train])
        return 0

    def snapshot(self):
        """Checkpoint the model (inverse, weights, columns), to :meth:`restore` after trial
        moves. Only the latest snapshot can be restored; the inverse is copied only if a move
        is about to change it in place (see :meth:`RidgeInverse.checkpoint`)."""
        self.ridge.armed = False  # the new checkpoint replaces the old: nothing to copy
        self._compact()
        cdef intp_t C = self.ridge.n_features
        self._fresh_weights()
        self.ridge.checkpoint()
        return (np.array(self.cols), np.array(self.col_group[:C]), np.array(self.col_cell[:C]),
                np.array(self.cell_col), self.n_records)

    def restore(self, tuple state):
        """Return to the latest :meth:`snapshot` of this visitor."""
        cols, col_group, col_cell, cell_col, n_records = state
        cdef intp_t C = col_group.shape[0], k
        for k in range(self.n_queued):
            self.queued[self.q_first[k]] = 0
            self.queued[self.q_second[k]] = 0
        self.n_queued = self.n_dead = 0
        self.ridge.rollback()
        np.asarray(self.cols)[...] = cols
        np.asarray(self.col_group)[:C] = col_group
        np.asarray(self.col_cell)[:C] = col_cell
        np.asarray(self.cell_col)[...] = cell_col
        self.n_records = n_records
        self.stale = False

    @property
    def inverse(self):
        """Copy of the live inverse of ``A = Z'Z + delta2 I`` (columns as in :attr:`columns`)."""
        self._compact()
        return self.ridge.inverse

    @property
    def coef(self):
        """Copy of the weights ``A^{-1} Z'y`` (solved afresh)."""
        self._compact()
        self.ridge.solve()
        return self.ridge.coef

    @property
    def columns(self):
        """Copy of the column of every point in every group, shape (n_groups, n_points)."""
        self._compact()
        return np.array(self.cols)

    @property
    def n_features(self):
        """Number of live features."""
        return self.ridge.n_features - self.n_dead - self.n_queued

    cdef int _apply_merges(self) except -1:
        """Apply the queued merges (one grid, disjoint pairs) as one batched update."""
        cdef intp_t k, n = self.n_queued
        if n == 0:
            return 0
        self.ridge.merge_pairs(self.q_first[:n], self.q_second[:n])
        for k in range(n):
            self.queued[self.q_first[k]] = 0
            self.queued[self.q_second[k]] = 0
            self.dead[self.n_dead] = self.q_second[k]
            self.n_dead += 1
        self.n_queued = 0
        return 0

    cdef int _compact(self) except -1:
        """Apply the queued merges and drop the columns they left decoupled."""
        cdef intp_t j, last
        self._apply_merges()
        if self.n_dead == 0:
            return 0
        for j, last in self.ridge.drop_dead(self.dead[:self.n_dead]):
            self.relabel(self.col_group[last], self.col_cell[last], j)
        self.n_dead = 0
        return 0

    cdef inline void _fresh_weights(self) noexcept nogil:
        if self.stale:
            self.ridge.solve()
            self.stale = False

    cdef intp_t _cross(self, float64_t[::1] b, intp_t m, const intp_t* points, intp_t n,
                       float64_t* ysum) noexcept nogil:
        """Cross products ``b`` of a cell of tree ``m`` holding ``points`` with the current
        features. Returns the number of training points in the cell; ``ysum`` receives their
        target sum."""
        cdef intp_t k, p, mm, n_in = 0
        ysum[0] = 0.0
        for k in range(self.ridge.n_features):
            b[k] = 0.0
        for k in range(n):
            p = points[k]
            if not self.is_train[p]:
                continue
            n_in += 1
            ysum[0] += self.y[p]
            for mm in range(self.n_trees):
                if mm != m:
                    b[self.cols[mm, p]] += self.inv_m
        return n_in

    cdef int split(self, intp_t group, intp_t cell, intp_t left, intp_t right,
                   const intp_t* left_points, intp_t n_left,
                   const intp_t* right_points, intp_t n_right) except -1 nogil:
        cdef intp_t c = self.cell_col[self.cell_base[group] + cell], in_left, in_right
        cdef float64_t y_left, y_right
        if self.n_queued or self.n_dead:
            with gil:
                self._compact()
                c = self.cell_col[self.cell_base[group] + cell]
        self._fresh_weights()  # split() updates the weights incrementally
        in_left = self._cross(self.b_left, group, left_points, n_left, &y_left)
        in_right = self._cross(self.b_right, group, right_points, n_right, &y_right)
        self.ridge.split(c, &self.b_left[0], in_left * self.inv_m + self.delta2,
                         self.scale * y_left, &self.b_right[0],
                         in_right * self.inv_m + self.delta2, self.scale * y_right)
        self.relabel_points(group, left, c, left_points, n_left)
        self.relabel_points(group, right, self.ridge.n_features - 1, right_points, n_right)
        return 0

    cdef int merge(self, intp_t group, intp_t cell, intp_t left, intp_t right,
                   const intp_t* left_points, intp_t n_left,
                   const intp_t* right_points, intp_t n_right) except -1 nogil:
        cdef intp_t i = self.cell_col[self.cell_base[group] + left]
        cdef intp_t col = self.cell_col[self.cell_base[group] + right]
        cdef intp_t last = self.ridge.n_features - 1
        if self.batch:
            if self.n_queued and (group != self.q_group or self.queued[i] or self.queued[col]):
                with gil:
                    self._apply_merges()
            self.q_first[self.n_queued] = i
            self.q_second[self.n_queued] = col
            self.n_queued += 1
            self.queued[i] = 1
            self.queued[col] = 1
            self.q_group = group
            self.relabel_points(group, cell, i, left_points, n_left)
            self.relabel_points(group, cell, i, right_points, n_right)
            return 0
        self.ridge.merge(i, col)
        self.stale = True
        # merge() moved the last column into `col` (and `i` too if it was last).
        if i == last:
            i = col
        elif col != last:
            self.relabel(self.col_group[last], self.col_cell[last], col)
        self.relabel_points(group, cell, i, left_points, n_left)
        self.relabel_points(group, cell, i, right_points, n_right)
        return 0

    cdef int record(self, intp_t n_cuts, float64_t* row) except -1 nogil:
        """Training MSE, validation MSE and log marginal likelihood of the current model."""
        cdef intp_t i, n_val = self.pred.shape[0] - self.n_train
        cdef float64_t r, train_sse = 0.0, val_sse = 0.0, fit_term, sigma2
        cdef int C = <int>self.ridge.n_features, one = 1
        cdef intp_t live
        if self.n_queued:
            with gil:
                self._apply_merges()
        live = self.ridge.n_features - self.n_dead
        if self.n_records % 256 == 255:
            self.stale = True  # the incremental weight updates drift slowly: refresh them
        self._fresh_weights()
        self.n_records += 1
        _predict_points(self.cols, self.ridge.weights, self.scale, self.pred)
        for i in range(self.pred.shape[0]):
            r = self.pred[i] - self.y[i]
            if self.is_train[i]:
                train_sse += r * r
            else:
                val_sse += r * r
        # Profile likelihood: sigma_n^2 = (y'y - y'Z w) / N with sigma_w^2 = sigma_n^2 / delta2.
        fit_term = self.yty - ddot(&C, &self.ridge.zty[0], &one, &self.ridge.weights[0], &one)
        sigma2 = fit_term / self.n_train if fit_term > 0 else 1e-300
        row[0] = train_sse / self.n_train
        row[1] = val_sse / n_val if n_val > 0 else NAN
        row[2] = (-0.5 * self.n_train * (log(2.0 * M_PI * sigma2) + 1.0)
                  - 0.5 * (self.ridge.logdet - live * log(self.ridge.delta2)))
        row[3] = live
        return 0


cdef void _predict_points(intp_t[:, ::1] cols, float64_t[::1] weights, float64_t scale,
                          float64_t[::1] out) noexcept nogil:
    cdef intp_t n_trees = cols.shape[0], n = cols.shape[1], m, i
    for i in range(n):
        out[i] = 0.0
    for m in range(n_trees):
        for i in range(n):
            out[i] += weights[cols[m, i]]
    for i in range(n):
        out[i] *= scale
