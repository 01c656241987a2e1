"""Lifetime paths of Mondrian kernel ridge regression (section 8.3-8.4).

All the Mondrian trees are sampled once up to a terminal lifetime. Sweeping the lifetime from 0
up adds their cuts in birth-time order (forward path); sweeping down removes them (backward
path). Each cut replaces one feature (a cell) by two, or merges two back into one, and the
inverse of ``A = Z'Z + delta2 I`` follows with O(C^2) low-rank updates: forward, a product with
the inverse (sparse when the new cell meets few features) and a rank-3 correction, gathered
over 32 cuts into one BLAS-3 product; the weights follow in O(C) per cut. The whole forward
path costs about as much as one solve at the terminal lifetime (1.1x on cpu_act).

Targets are centred by the caller. Predictions of training and validation points are
``sum_m w[col[m, i]] / sqrt(M)``.
"""

from libc.math cimport exp, log, sqrt, M_PI
from libc.string cimport memcpy, memset

from scipy.linalg.cython_blas cimport daxpy, ddot, dgemm, dgemv, dger

from mondrian.core._typedefs cimport float64_t, intp_t

import numpy as np
from scipy import sparse


# Cuts whose rank-3 corrections are gathered before one BLAS-3 update of the inverse.
cdef intp_t PENDING_CUTS = 32


cdef class RidgeInverse:
    """The inverse of ``A = Z'Z + delta2 I`` under appended, removed and merged features.

    Parameters
    ----------
    capacity : int
        Largest number of features held at once.
    delta2 : float
        Ridge constant.
    """

    cdef float64_t[:, ::1] inv      # (capacity, capacity); the leading C x C block is live
    cdef float64_t[::1] zty         # Z'y of the live features
    cdef float64_t[::1] weights     # A^{-1} Z'y
    cdef float64_t[::1] work        # scratch vector
    # Pending low-rank corrections of split(): the true inverse is inv + P W' (columns of P
    # and W are rows of these buffers, zero past their feature count), added in one BLAS-3
    # product every PENDING_CUTS cuts instead of one rank-3 pass over the matrix per cut.
    cdef float64_t[:, ::1] pending_w
    cdef float64_t[:, ::1] pending_p
    cdef intp_t n_pending
    cdef readonly intp_t n_features
    cdef readonly intp_t capacity
    cdef readonly float64_t delta2
    cdef readonly float64_t logdet  # log |A|

    def __init__(self, intp_t capacity, float64_t delta2):
        self.inv = np.zeros((capacity, capacity))
        self.zty = np.zeros(capacity)
        self.weights = np.zeros(capacity)
        self.work = np.zeros(capacity)
        self.pending_w = np.zeros((3 * PENDING_CUTS, capacity))
        self.pending_p = np.zeros((3 * PENDING_CUTS, capacity))
        self.n_pending = 0
        self.n_features = 0
        self.capacity = capacity
        self.delta2 = delta2
        self.logdet = 0.0

    def start(self, const float64_t[:, ::1] A, const float64_t[::1] zty):
        """Set the state from a dense ``A`` (inverted here) and ``Z'y``."""
        cdef intp_t C = A.shape[0]
        if C > self.capacity:
            raise ValueError("capacity exceeded")
        sign, logdet = np.linalg.slogdet(A)
        if sign <= 0:
            raise ValueError("A must be positive definite")
        self.n_pending = 0
        np.asarray(self.inv)[:C, :C] = np.linalg.inv(A)
        np.asarray(self.zty)[:C] = zty
        self.n_features = C
        self.logdet = logdet
        self.solve()

    cdef void _flush(self) noexcept nogil:
        """Add the pending corrections to the stored inverse: ``inv += P W'``."""
        cdef int C = <int>self.n_features, K = <int>self.n_pending
        cdef int lda = <int>self.capacity
        cdef float64_t unit = 1.0
        if K == 0:
            return
        if C > 0:
            dgemm(b"N", b"T", &C, &C, &K, &unit, &self.pending_p[0, 0], &lda,
                  &self.pending_w[0, 0], &lda, &unit, &self.inv[0, 0], &lda)
        self.n_pending = 0

    cdef void _swap(self, intp_t a, intp_t b) noexcept nogil:
        """Exchange features ``a`` and ``b`` (rows and columns of the inverse)."""
        cdef intp_t C = self.n_features, k
        cdef float64_t tmp
        if a == b:
            return
        for k in range(C):
            tmp = self.inv[a, k]
            self.inv[a, k] = self.inv[b, k]
            self.inv[b, k] = tmp
        for k in range(C):
            tmp = self.inv[k, a]
            self.inv[k, a] = self.inv[k, b]
            self.inv[k, b] = tmp
        tmp = self.zty[a]
        self.zty[a] = self.zty[b]
        self.zty[b] = tmp
        tmp = self.weights[a]
        self.weights[a] = self.weights[b]
        self.weights[b] = tmp

    cdef void _drop_last(self) noexcept nogil:
        """Remove the last feature: ``inv <- E - f f' / h`` (Lemma 4.3).

        The weights follow in O(C): ``w <- w[:-1] - f w[-1] / h``.
        """
        cdef int C = <int>(self.n_features - 1)
        cdef int lda = <int>self.capacity, one = 1
        cdef float64_t h = self.inv[C, C]
        cdef float64_t alpha = -1.0 / h
        cdef float64_t w_last = self.weights[C]
        cdef intp_t k
        for k in range(C):
            self.work[k] = self.inv[C, k]
            self.weights[k] -= self.work[k] * w_last / h
        if C > 0:
            dger(&C, &C, &alpha, &self.work[0], &one, &self.work[0], &one,
                 &self.inv[0, 0], &lda)
        self.logdet += log(h)
        self.n_features -= 1

    cdef void remove(self, intp_t c) noexcept nogil:
        """Remove feature ``c``; the last feature takes its index."""
        self._flush()
        self._swap(c, self.n_features - 1)
        self._drop_last()

    cdef void append(self, float64_t* b, float64_t diagonal, float64_t zty) noexcept nogil:
        """Append a feature with cross products ``b`` (length C) and ``z'z + delta2 = diagonal``.

        Block inverse (Lemma 4.4): ``u = A^{-1} b``, ``s = d - b'u``. The weights follow in
        O(C): ``w_new = (z'y - b'w) / s`` and ``w <- w - u w_new``.
        """
        cdef int C = <int>self.n_features
        cdef int lda = <int>self.capacity, one = 1
        cdef float64_t zero = 0.0, unit = 1.0, s, alpha, w_new
        cdef intp_t k
        self._flush()
        if C > 0:
            # inv is symmetric, so the row-major block can be handed to Fortran BLAS as is.
            dgemv(b"N", &C, &C, &unit, &self.inv[0, 0], &lda, b, &one, &zero,
                  &self.work[0], &one)
            s = diagonal - ddot(&C, b, &one, &self.work[0], &one)
            alpha = 1.0 / s
            dger(&C, &C, &alpha, &self.work[0], &one, &self.work[0], &one,
                 &self.inv[0, 0], &lda)
            w_new = (zty - ddot(&C, b, &one, &self.weights[0], &one)) / s
        else:
            s = diagonal
            w_new = zty / s
        for k in range(C):
            self.inv[C, k] = -self.work[k] / s
            self.inv[k, C] = -self.work[k] / s
            self.weights[k] -= self.work[k] * w_new
        self.inv[C, C] = 1.0 / s
        self.weights[C] = w_new
        self.zty[C] = zty
        self.logdet += log(s)
        self.n_features += 1

    cdef void split(self, intp_t c, float64_t* b_left, float64_t diag_left, float64_t zty_left,
                    float64_t* b_right, float64_t diag_right,
                    float64_t zty_right) noexcept nogil:
        """Split feature ``c`` (a cell) into two: the left part keeps index ``c``, the right
        part is appended. O(C^2): one product with the inverse and a rank-3 correction.

        ``b_left``, ``b_right`` are the cross products of the parts with the current features
        (zero at ``c`` and at every feature of the same tree), ``diag_*`` their ``z'z + delta2``.
        Since ``z_c = z_left + z_right``, replacing ``c`` by the left part changes row and
        column ``c`` of ``A`` by ``d = -b_right + d_c e_c`` with ``d_c = delta2 - diag_right``:
        ``A1 = A + U S U'`` with ``U = [e_c, d]``, ``S = [[-d_c, 1], [1, 0]]`` (Woodbury, with
        ``K = S^-1 + U' A^-1 U``). The right part is then bordered on (Lemma 4.4). The rank-3
        correction ``W M W'`` is kept pending (see ``_flush``); the border is written at once.
        """
        cdef int C = <int>self.n_features, lda = <int>self.capacity, one = 1
        cdef float64_t zero = 0.0, unit = 1.0
        cdef float64_t d_c = self.delta2 - diag_right, b_cc
        cdef float64_t v_c, h_c, dh, k11, k12, k22, det, i11, i12, i22, s, t1, t2
        cdef float64_t gz, hz, e1, e2, w_new, zty_old = self.zty[c], t
        cdef float64_t* v = &self.work[0]
        cdef float64_t* g
        cdef float64_t* h
        cdef float64_t* u
        cdef intp_t k, nnz, K, tail
        if self.n_pending + 3 > self.pending_w.shape[0]:
            self._flush()
        K = self.n_pending
        g = &self.pending_w[K, 0]
        h = &self.pending_w[K + 1, 0]
        u = &self.pending_w[K + 2, 0]
        # v = A^-1 b_right; g = A^-1 e_c; h = A^-1 d, with A^-1 = inv + P W'. A small cell
        # meets few features, so b_right is sparse late in the path: add up the rows of the
        # (symmetric) stored inverse it selects instead of reading the whole matrix.
        nnz = 0
        for k in range(C):
            if b_right[k] != 0.0:
                nnz += 1
        if 4 * nnz < C:
            memset(v, 0, C * sizeof(float64_t))
            for k in range(C):
                if b_right[k] != 0.0:
                    daxpy(&C, &b_right[k], &self.inv[k, 0], &one, v, &one)
        else:
            dgemv(b"N", &C, &C, &unit, &self.inv[0, 0], &lda, b_right, &one, &zero, v, &one)
        memcpy(g, &self.inv[c, 0], C * sizeof(float64_t))
        for k in range(K):
            t = ddot(&C, &self.pending_w[k, 0], &one, b_right, &one)
            daxpy(&C, &t, &self.pending_p[k, 0], &one, v, &one)
            daxpy(&C, &self.pending_p[k, c], &self.pending_w[k, 0], &one, g, &one)
        b_cc = g[c]
        for k in range(C):
            h[k] = d_c * g[k] - v[k]
        v_c = v[c]
        h_c = h[c]
        dh = d_c * h_c - ddot(&C, b_right, &one, h, &one)
        k11 = b_cc
        k12 = 1.0 + h_c
        k22 = d_c + dh
        det = k11 * k22 - k12 * k12  # det(A1) = det(A) * det(S) * det(K) = -det(K) det(A)
        i11 = k22 / det
        i12 = -k12 / det
        i22 = k11 / det
        # u = A1^-1 b_right = v - [g h] K^-1 [g'b_right, h'b_right].
        t1 = v_c
        t2 = d_c * v_c - ddot(&C, v, &one, b_right, &one)
        e1 = i11 * t1 + i12 * t2
        e2 = i12 * t1 + i22 * t2
        for k in range(C):
            u[k] = v[k] - g[k] * e1 - h[k] * e2
        s = diag_right - ddot(&C, b_right, &one, u, &one)
        # Weights: A1^-1 zty1 with zty1 = zty + (zty_left - zty_c) e_c, then the border.
        gz = self.weights[c]
        hz = d_c * gz - ddot(&C, b_right, &one, &self.weights[0], &one)
        e1 = i11 * gz + i12 * hz
        e2 = i12 * gz + i22 * hz
        t1 = i11 * b_cc + i12 * h_c
        t2 = i12 * b_cc + i22 * h_c
        for k in range(C):
            self.weights[k] += ((zty_left - zty_old) * (g[k] - g[k] * t1 - h[k] * t2)
                                - g[k] * e1 - h[k] * e2)
        w_new = (zty_right - ddot(&C, b_right, &one, &self.weights[0], &one)) / s
        # Pending correction W M W' with W = [g, h, u], M = blockdiag(-K^-1, 1/s): P = W M.
        for k in range(C):
            self.pending_p[K, k] = -(i11 * g[k] + i12 * h[k])
            self.pending_p[K + 1, k] = -(i12 * g[k] + i22 * h[k])
            self.pending_p[K + 2, k] = u[k] / s
        # Entries of features appended before the next flush must read as zero.
        tail = min(self.capacity, C + self.pending_w.shape[0]) - C
        for k in range(K, K + 3):
            memset(&self.pending_w[k, C], 0, tail * sizeof(float64_t))
            memset(&self.pending_p[k, C], 0, tail * sizeof(float64_t))
        for k in range(C):
            self.inv[C, k] = -u[k] / s
            self.inv[k, C] = -u[k] / s
            self.weights[k] -= u[k] * w_new
        self.inv[C, C] = 1.0 / s
        self.weights[C] = w_new
        self.zty[c] = zty_left
        self.zty[C] = zty_right
        self.logdet += log(-det) + log(s)
        self.n_pending = K + 3
        self.n_features += 1

    cdef void merge(self, intp_t i, intp_t j) noexcept nogil:
        """Replace features ``i`` and ``j`` (disjoint cells) by their sum at ``i``; drop ``j``.

        The four steps of section 8.4, all O(C^2): add row j to row i, add column j to column i,
        delete j, subtract delta2 from the (i, i) entry.
        """
        cdef intp_t C = self.n_features, k, last
        cdef int n, lda = <int>self.capacity, one = 1
        cdef float64_t denom, alpha
        self._flush()
        for k in range(C):
            self.inv[k, j] -= self.inv[k, i]
        for k in range(C):
            self.inv[j, k] -= self.inv[i, k]
        self.zty[i] += self.zty[j]
        # Deleting j: move it last; if i was last, it now sits at j.
        last = C - 1
        self._swap(j, last)
        if i == last:
            i = j
        self._drop_last()
        C = self.n_features
        n = <int>C
        denom = 1.0 - self.delta2 * self.inv[i, i]
        for k in range(C):
            self.work[k] = self.inv[k, i]
        alpha = self.delta2 / denom
        dger(&n, &n, &alpha, &self.work[0], &one, &self.work[0], &one, &self.inv[0, 0], &lda)
        self.logdet += log(denom)
        self.solve()

    cdef void solve(self) noexcept nogil:
        """``weights = A^{-1} Z'y``."""
        self._flush()
        cdef int C = <int>self.n_features
        cdef int lda = <int>self.capacity, one = 1
        cdef float64_t zero = 0.0, unit = 1.0
        if C > 0:
            dgemv(b"N", &C, &C, &unit, &self.inv[0, 0], &lda, &self.zty[0], &one, &zero,
                  &self.weights[0], &one)

    cdef int _reserve(self, intp_t n) except -1:
        """Make room for ``n`` features (grows the buffers by doubling)."""
        cdef intp_t C = self.n_features, new_capacity
        if n <= self.capacity:
            return 0
        self._flush()
        new_capacity = max(n, 2 * self.capacity)
        inv = np.zeros((new_capacity, new_capacity))
        inv[:C, :C] = self.inv[:C, :C]
        self.inv = inv
        zty = np.zeros(new_capacity)
        zty[:C] = self.zty[:C]
        self.zty = zty
        weights = np.zeros(new_capacity)
        weights[:C] = self.weights[:C]
        self.weights = weights
        self.work = np.zeros(new_capacity)
        self.pending_w = np.zeros((self.pending_w.shape[0], new_capacity))
        self.pending_p = np.zeros((self.pending_p.shape[0], new_capacity))
        self.capacity = new_capacity
        return 0

    def append_empty(self):
        """Append a feature no training point has yet (diagonal delta2, no cross terms)."""
        cdef intp_t C = self.n_features, k
        self._reserve(C + 1)
        self._flush()
        for k in range(C):
            self.inv[C, k] = 0.0
            self.inv[k, C] = 0.0
        self.inv[C, C] = 1.0 / self.delta2
        self.zty[C] = 0.0
        self.weights[C] = 0.0
        self.logdet += log(self.delta2)
        self.n_features += 1

    def add_point(self, const intp_t[::1] columns, float64_t value, float64_t target):
        """Add a training point with ``value`` in each of ``columns``: ``A += z z'``.

        Sherman-Morrison on the inverse, O(C^2).
        """
        cdef intp_t C = self.n_features, k, c
        cdef int n = <int>C, lda = <int>self.capacity, one = 1
        cdef float64_t denom, alpha, quad = 0.0
        self._flush()
        for k in range(C):
            self.work[k] = 0.0
        for c in columns:
            for k in range(C):
                self.work[k] += value * self.inv[c, k]
            self.zty[c] += value * target
        for c in columns:
            quad += value * self.work[c]
        denom = 1.0 + quad
        alpha = -1.0 / denom
        dger(&n, &n, &alpha, &self.work[0], &one, &self.work[0], &one, &self.inv[0, 0], &lda)
        self.logdet += log(denom)

    def __reduce__(self):
        self._flush()
        return (_rebuild_ridge, (self.delta2, self.inverse, self.zty_vector, self.coef,
                                 self.logdet))

    def update_weights(self):
        """Recompute the weights ``A^{-1} Z'y`` after changes."""
        self.solve()

    @property
    def zty_vector(self):
        """Copy of the live ``Z'y``."""
        return np.array(self.zty[:self.n_features])

    @property
    def inverse(self):
        """Copy of the live inverse."""
        self._flush()
        return np.array(self.inv[:self.n_features, :self.n_features])

    @property
    def coef(self):
        """Copy of the live weights (after the last solve)."""
        return np.array(self.weights[:self.n_features])


def _rebuild_ridge(float64_t delta2, inverse, zty, weights, float64_t logdet):
    """Unpickle a :class:`RidgeInverse` (only its live block is saved)."""
    cdef intp_t C = inverse.shape[0]
    ridge = RidgeInverse(max(C, 1), delta2)
    np.asarray(ridge.inv)[:C, :C] = inverse
    np.asarray(ridge.zty)[:C] = zty
    np.asarray(ridge.weights)[:C] = weights
    ridge.n_features = C
    ridge.logdet = logdet
    return ridge


cdef class _PathState:
    """Bookkeeping of which feature column every point and node holds (not for direct use)."""

    cdef intp_t[:, ::1] cols         # (n_trees, n_points): column of each point in each tree
    cdef intp_t[::1] col_tree        # tree of each column
    cdef intp_t[::1] col_node        # node of each column
    cdef list orders                 # per tree: points in depth-first leaf order
    cdef list starts
    cdef list ends

    def __init__(self, intp_t n_trees, intp_t n_points, intp_t capacity, list orders,
                 list starts, list ends):
        self.cols = np.zeros((n_trees, n_points), dtype=np.intp)
        self.col_tree = np.zeros(capacity, dtype=np.intp)
        self.col_node = np.zeros(capacity, dtype=np.intp)
        self.orders = orders
        self.starts = starts
        self.ends = ends

    cdef void relabel(self, intp_t m, intp_t node, intp_t col):
        """Give column ``col`` to ``node`` of tree ``m`` and to its points."""
        cdef const intp_t[::1] order = self.orders[m]
        cdef const intp_t[::1] start = self.starts[m]
        cdef const intp_t[::1] end = self.ends[m]
        cdef intp_t k
        for k in range(start[node], end[node]):
            self.cols[m, order[k]] = col
        self.col_tree[col] = m
        self.col_node[col] = node


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


def _record(RidgeInverse ridge, _PathState state, float64_t[::1] pred, const float64_t[::1] y,
            const unsigned char[::1] is_train, float64_t yty, intp_t n_train, float64_t scale,
            float64_t[::1] out_row):
    """Training MSE, validation MSE and log marginal likelihood of the current model."""
    cdef intp_t i, n_val = pred.shape[0] - n_train
    cdef float64_t r, train_sse = 0.0, val_sse = 0.0, fit_term, sigma2
    cdef int C = <int>ridge.n_features, one = 1
    _predict_points(state.cols, ridge.weights, scale, pred)
    for i in range(pred.shape[0]):
        r = pred[i] - y[i]
        if is_train[i]:
            train_sse += r * r
        else:
            val_sse += r * r
    # Profile likelihood: sigma_n^2 = (y'y - y'Z w) / N with sigma_w^2 = sigma_n^2 / delta2.
    fit_term = yty - ddot(&C, &ridge.zty[0], &one, &ridge.weights[0], &one)
    sigma2 = fit_term / n_train if fit_term > 0 else 1e-300
    out_row[0] = train_sse / n_train
    out_row[1] = val_sse / n_val if n_val > 0 else np.nan
    out_row[2] = (-0.5 * n_train * (log(2.0 * M_PI * sigma2) + 1.0)
                  - 0.5 * (ridge.logdet - C * log(ridge.delta2)))
    out_row[3] = C


def kernel_ridge_path(list orders, list starts, list ends, list children, list cells,
                      const intp_t[::1] event_tree, const intp_t[::1] event_node,
                      const float64_t[::1] y, const unsigned char[::1] is_train,
                      float64_t delta2, bint forward):
    """Walk the lifetime path of Mondrian kernel ridge regression.

    Parameters
    ----------
    orders, starts, ends : lists of ndarray, one per tree
        From :func:`mondrian.kernel._features.subtree_order` over all points (training first).
    children : list of ndarray of shape (node_count, 2), one per tree
        Left and right child of every node.
    cells : list of ndarray, one per tree
        The cells (nodes) of the model holding every cut of the events: the start of the
        backward path.
    event_tree, event_node : ndarray of intp
        The cuts, sorted by increasing birth time.
    y : ndarray of float64
        Centred targets of every point (validation targets are only used for errors).
    is_train : ndarray of uint8
        1 for training points (they come first).
    delta2 : float
        Ridge constant.
    forward : bool
        Add cuts from lifetime 0 up (True) or remove them from the terminal lifetime down.

    Returns
    -------
    ndarray of shape (n_events + 1, 4)
        Row ``k`` describes the model holding the first ``k`` cuts: training MSE, validation
        MSE, log marginal likelihood, number of features.
    """
    cdef intp_t n_trees = len(orders), n_points = y.shape[0], n_events = event_tree.shape[0]
    cdef intp_t n_train = 0, i, k, m, node, left, right, c, col, last, step
    cdef float64_t scale = 1.0 / sqrt(n_trees), inv_m = 1.0 / n_trees, yty = 0.0
    cdef intp_t capacity = n_trees + n_events
    for i in range(n_points):
        if is_train[i]:
            n_train += 1
            yty += y[i] * y[i]
    cdef RidgeInverse ridge = RidgeInverse(capacity + 1, delta2)
    cdef _PathState state = _PathState(n_trees, n_points, capacity + 1, orders, starts, ends)
    results = np.zeros((n_events + 1, 4))
    cdef float64_t[:, ::1] res = results
    pred_arr = np.zeros(n_points)
    cdef float64_t[::1] pred = pred_arr
    b_arr = np.zeros(capacity + 1)
    cdef float64_t[::1] b = b_arr
    cdef float64_t[::1] b2 = np.zeros(capacity + 1)
    cdef float64_t y_left, y_right
    cdef intp_t n_left, n_right
    cdef const intp_t[::1] order
    cdef const intp_t[::1] start
    cdef const intp_t[:, ::1] kids

    if forward:
        # Lifetime 0: one root cell per tree, A = (N/M) 11' + delta2 I.
        A = np.full((n_trees, n_trees), n_train * inv_m) + delta2 * np.eye(n_trees)
        zty = np.full(n_trees, scale * np.asarray(y)[np.asarray(is_train, dtype=bool)].sum())
        ridge.start(A, zty)
        for m in range(n_trees):
            state.relabel(m, 0, m)
    else:
        _start_at_terminal(ridge, state, cells, y, is_train, delta2)

    for step in range(n_events + 1):
        k = step if forward else n_events - step
        if step % 256 == 255:
            ridge.solve()  # the incremental weight updates drift slowly: refresh them
        _record(ridge, state, pred, y, is_train, yty, n_train, scale, res[k])
        if step == n_events:
            break
        m = event_tree[k] if forward else event_tree[k - 1]
        node = event_node[k] if forward else event_node[k - 1]
        order = orders[m]
        start = starts[m]
        kids = children[m]
        left = kids[node, 0]
        right = kids[node, 1]
        if forward:
            c = state.cols[m, order[start[node]]]
            n_left = _cell_cross(state, b, ridge.n_features, m, left, y, is_train, inv_m,
                                 &y_left)
            n_right = _cell_cross(state, b2, ridge.n_features, m, right, y, is_train, inv_m,
                                  &y_right)
            ridge.split(c, &b[0], n_left * inv_m + delta2, scale * y_left,
                        &b2[0], n_right * inv_m + delta2, scale * y_right)
            state.relabel(m, left, c)
            state.relabel(m, right, ridge.n_features - 1)
        else:
            i = state.cols[m, order[start[left]]]
            col = state.cols[m, order[start[right]]]
            last = ridge.n_features - 1
            ridge.merge(i, col)
            # merge() moved the last column into `col` (and `i` too if it was last).
            if i == last:
                i = col
            elif col != last:
                state.relabel(state.col_tree[last], state.col_node[last], col)
            state.relabel(m, node, i)
    return results


cdef intp_t _cell_cross(_PathState state, float64_t[::1] b, intp_t n_features, intp_t m,
                        intp_t node, const float64_t[::1] y, const unsigned char[::1] is_train,
                        float64_t inv_m, float64_t* ysum):
    """Cross products ``b`` of the cell of ``node`` (tree ``m``) with the current features.

    Returns the number of training points in the cell; ``ysum`` receives their target sum.
    """
    cdef const intp_t[::1] order = state.orders[m]
    cdef const intp_t[::1] start = state.starts[m]
    cdef const intp_t[::1] end = state.ends[m]
    cdef intp_t k, p, mm, n_in = 0
    ysum[0] = 0.0
    for k in range(n_features):
        b[k] = 0.0
    for k in range(start[node], end[node]):
        p = order[k]
        if not is_train[p]:
            continue
        n_in += 1
        ysum[0] += y[p]
        for mm in range(state.cols.shape[0]):
            if mm != m:
                b[state.cols[mm, p]] += inv_m
    return n_in


def _start_at_terminal(RidgeInverse ridge, _PathState state, list cells,
                       const float64_t[::1] y, const unsigned char[::1] is_train,
                       float64_t delta2):
    """Dense start of the backward path: every cell of the terminal model is a feature."""
    cdef intp_t n_trees = len(cells), m, j, col = 0
    for m in range(n_trees):
        for j in cells[m]:
            state.relabel(m, j, col)
            col += 1
    train = np.asarray(is_train, dtype=bool)
    cols = np.asarray(state.cols)[:, train]
    Z = sparse.csr_matrix(
        (np.full(cols.size, 1.0 / np.sqrt(n_trees)),
         (np.repeat(np.arange(cols.shape[1]), n_trees), cols.T.ravel())),
        shape=(cols.shape[1], col),
    )
    A = (Z.T @ Z).toarray() + delta2 * np.eye(col)
    ridge.start(A, Z.T @ np.asarray(y)[train])


cdef void _scores(intp_t[:, ::1] cols, float64_t[:, ::1] W, intp_t i, float64_t scale,
                  float64_t* out) noexcept nogil:
    """Output scores of point ``i``: ``sum_m W[col[m, i]] / sqrt(M)``."""
    cdef intp_t m, k, K = W.shape[1]
    for k in range(K):
        out[k] = 0.0
    for m in range(cols.shape[0]):
        for k in range(K):
            out[k] += W[cols[m, i], k]
    for k in range(K):
        out[k] *= scale


cdef void _gradient(float64_t* scores, const float64_t* target, intp_t K,
                    bint logistic) noexcept nogil:
    """Replace ``scores`` by the gradient of the loss: squared error, or softmax cross-entropy
    with a one-hot target."""
    cdef intp_t k
    cdef float64_t top, total = 0.0
    if not logistic:
        for k in range(K):
            scores[k] = scores[k] - target[k]
        return
    top = scores[0]
    for k in range(1, K):
        if scores[k] > top:
            top = scores[k]
    for k in range(K):
        scores[k] = exp(scores[k] - top)
        total += scores[k]
    for k in range(K):
        scores[k] = scores[k] / total - target[k]


def kernel_sgd_path(list orders, list starts, list ends, list children,
                    const intp_t[::1] event_tree, const intp_t[::1] event_node,
                    const float64_t[:, ::1] targets, const unsigned char[::1] is_train,
                    float64_t alpha, float64_t learning_rate, intp_t steps_per_cut,
                    intp_t initial_steps, intp_t eval_every, bint logistic, object seed):
    """Lifetime path of a linear model on Mondrian features trained by SGD (section 8.6).

    When a cut splits a cell, both new cells inherit its weights, which leaves every prediction
    unchanged; then ``steps_per_cut`` SGD steps (each O(M K)) follow on random training points,
    with the loss ``l(y, z'W) + alpha/2 ||W||^2`` (squared error, or softmax cross-entropy when
    ``logistic``). No C x C matrix is ever formed.

    Returns
    -------
    weights : ndarray of shape (n_columns, K)
        Final weights (columns as numbered by the path).
    records : ndarray of shape (n_records, 3)
        ``(number of cuts, training loss, validation loss)`` every ``eval_every`` cuts (losses
        are mean squared error, or mean cross-entropy).
    errors : ndarray of shape (n_records, 2)
        Misclassification rates (training, validation) for ``logistic``, else NaN.
    columns : ndarray of shape (n_trees, n_points)
        Final column of every point in every tree.
    """
    cdef intp_t n_trees = len(orders), n_points = targets.shape[0], K = targets.shape[1]
    cdef intp_t n_events = event_tree.shape[0], capacity = n_trees + n_events + 1
    cdef intp_t n_train = 0, k, m, node, left, right, c, cut, n_cols, record = 0
    cdef float64_t scale = 1.0 / sqrt(n_trees)
    cdef _PathState state = _PathState(n_trees, n_points, capacity, orders, starts, ends)
    weights = np.zeros((capacity, K))
    cdef float64_t[:, ::1] W = weights
    train_idx = np.flatnonzero(np.asarray(is_train, dtype=bool)).astype(np.intp)
    cdef intp_t[::1] train = train_idx
    n_train = train.shape[0]
    buffer = np.zeros(K)
    cdef float64_t[::1] g = buffer
    cdef const intp_t[::1] order
    cdef const intp_t[::1] start
    cdef const intp_t[:, ::1] kids
    n_records = n_events // eval_every + 2
    records = np.full((n_records, 3), np.nan)
    errors = np.full((n_records, 2), np.nan)
    rng = np.random.RandomState(seed)
    for m in range(n_trees):
        state.relabel(m, 0, m)
    n_cols = n_trees

    def sgd(intp_t n_steps):
        picks = train_idx[rng.randint(0, n_train, size=n_steps)] if n_steps else train_idx[:0]
        _sgd_steps(state.cols, W, targets, picks, scale, alpha, learning_rate, logistic, g)

    def evaluate(intp_t cuts):
        nonlocal record
        records[record, 0] = cuts
        losses = _losses(state.cols, W, targets, is_train, scale, logistic)
        records[record, 1:] = losses[:2]
        errors[record] = losses[2:] if logistic else (np.nan, np.nan)
        record += 1

    sgd(initial_steps)
    evaluate(0)
    for cut in range(n_events):
        m = event_tree[cut]
        node = event_node[cut]
        order = orders[m]
        start = starts[m]
        kids = children[m]
        left = kids[node, 0]
        right = kids[node, 1]
        c = state.cols[m, order[start[node]]]
        # Split the weights: the left child keeps the column, the right one copies it.
        for k in range(K):
            W[n_cols, k] = W[c, k]
        state.relabel(m, left, c)
        state.relabel(m, right, n_cols)
        n_cols += 1
        sgd(steps_per_cut)
        if (cut + 1) % eval_every == 0 or cut == n_events - 1:
            evaluate(cut + 1)
    return weights[:n_cols], records[:record], errors[:record], np.asarray(state.cols)


def _sgd_steps(intp_t[:, ::1] cols, float64_t[:, ::1] W, const float64_t[:, ::1] targets,
               const intp_t[::1] picks, float64_t scale, float64_t alpha,
               float64_t learning_rate, bint logistic, float64_t[::1] g):
    cdef intp_t s, i, m, k, col, K = W.shape[1]
    with nogil:
        for s in range(picks.shape[0]):
            i = picks[s]
            _scores(cols, W, i, scale, &g[0])
            _gradient(&g[0], &targets[i, 0], K, logistic)
            for m in range(cols.shape[0]):
                col = cols[m, i]
                for k in range(K):
                    W[col, k] -= learning_rate * (g[k] * scale + alpha * W[col, k])


def _losses(intp_t[:, ::1] cols, float64_t[:, ::1] W, const float64_t[:, ::1] targets,
            const unsigned char[::1] is_train, float64_t scale, bint logistic):
    """Mean loss and error rate over training and validation points."""
    cdef intp_t i, k, K = W.shape[1], best, n = targets.shape[0]
    cdef float64_t loss, top, total
    sums = np.zeros(4)
    counts = np.zeros(2)
    scores = np.zeros(K)
    cdef float64_t[::1] sc = scores
    cdef float64_t[::1] acc = sums
    cdef float64_t[::1] cnt = counts
    with nogil:
        for i in range(n):
            _scores(cols, W, i, scale, &sc[0])
            loss = 0.0
            if logistic:
                top = sc[0]
                best = 0
                for k in range(1, K):
                    if sc[k] > top:
                        top = sc[k]
                        best = k
                total = 0.0
                for k in range(K):
                    total += exp(sc[k] - top)
                for k in range(K):
                    if targets[i, k] > 0:
                        loss = -(sc[k] - top - log(total))
                        acc[2 + (0 if is_train[i] else 1)] += 1.0 if k != best else 0.0
            else:
                for k in range(K):
                    loss += (sc[k] - targets[i, k]) ** 2
            acc[0 if is_train[i] else 1] += loss
            cnt[0 if is_train[i] else 1] += 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.r_[sums[:2] / counts, sums[2:] / counts]
