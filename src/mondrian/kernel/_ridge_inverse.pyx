"""The inverse of a ridge system under appended, removed, split and merged features.

``A = Z'Z + delta2 I`` for a design ``Z`` of one column per cell of a Mondrian model: a cut
replaces a column by two (a split: a bordered update whose rank-3 correction is gathered over
``pending_cuts`` splits into one BLAS-3 product), removing it merges two back, and the merges of
one Mondrian-grid cut removal are one Woodbury update of size 2 x pairs
(:meth:`RidgeInverse.merge_pairs`). The weights ``A^{-1} Z'y`` and ``log |A|`` follow. Read
along a lifetime path by :class:`~mondrian.kernel._ridge_path.RidgePathVisitor`, and by the
fitted kernel ridge and grid models for their weights.
"""

from libc.math cimport log
from libc.string cimport memcpy, memset

from scipy.linalg.cython_blas cimport daxpy, ddot, dgemm, dgemv, dger

from mondrian.core._typedefs cimport float64_t, intp_t

import numpy as np


cdef class RidgeInverse:
    """The inverse of ``A = Z'Z + delta2 I`` under appended, removed and merged features.

    Parameters
    ----------
    capacity : int
        Largest number of features held at once.
    delta2 : float
        Ridge constant.
    pending_cuts : int, default=32
        Splits whose corrections are gathered before one BLAS-3 update of the stored inverse.
        More make each split read more pending rows (O(pending x C)) but let a trial of that
        many splits leave the stored inverse untouched (the grid's searches).
    """

    def __init__(self, intp_t capacity, float64_t delta2, intp_t pending_cuts=PENDING_CUTS):
        self.inv = np.zeros((capacity, capacity))
        self.zty = np.zeros(capacity)
        self.weights = np.zeros(capacity)
        self.work = np.zeros(capacity)
        self.pending_w = np.zeros((3 * pending_cuts, capacity))
        self.pending_p = np.zeros((3 * pending_cuts, capacity))
        self.n_pending = 0
        self.n_features = 0
        self.capacity = capacity
        self.delta2 = delta2
        self.logdet = 0.0
        self.armed = False
        self.block_saved = False

    def checkpoint(self):
        """Save the state, to :meth:`rollback` to (any number of times) after trial moves.

        The pending corrections are flushed first, so that a trial has room for
        ``pending_cuts`` splits before it changes the stored block (and makes the rollback
        copy it back)."""
        self.armed = False
        self._flush()
        cdef intp_t C = self.n_features, K = self.n_pending
        if self.saved_block is None or self.saved_block.shape[0] < self.capacity:
            self.saved_block = np.empty((self.capacity, self.capacity))
        self.saved_c, self.saved_k = C, K
        self.saved_logdet = self.logdet
        self.saved_small = (np.array(self.pending_w[:K, :C]), np.array(self.pending_p[:K, :C]),
                            np.array(self.weights[:C]), np.array(self.zty[:C]))
        self.armed = True
        self.block_saved = False

    def rollback(self):
        """Return to the last :meth:`checkpoint` (bit for bit)."""
        cdef intp_t C = self.saved_c, K = self.saved_k, k, tail
        if not self.armed:
            raise ValueError("no checkpoint to roll back to")
        if self.capacity > self.saved_block.shape[0]:
            raise ValueError("the inverse grew past its checkpoint's capacity")
        if self.block_saved:
            for k in range(C):
                memcpy(&self.inv[k, 0], &self.saved_block[k, 0], C * sizeof(float64_t))
        pw, pp, weights, zty = self.saved_small
        tail = min(self.capacity, C + self.pending_w.shape[0]) - C
        np.asarray(self.pending_w)[:K, :C] = pw
        np.asarray(self.pending_p)[:K, :C] = pp
        np.asarray(self.pending_w)[:K, C:C + tail] = 0.0
        np.asarray(self.pending_p)[:K, C:C + tail] = 0.0
        np.asarray(self.weights)[:C] = weights
        np.asarray(self.zty)[:C] = zty
        self.n_features, self.n_pending, self.logdet = C, K, self.saved_logdet
        self.block_saved = False

    cdef void _touch(self) noexcept nogil:
        """Called before the leading block changes: copy it first if a checkpoint needs it."""
        cdef intp_t k, C = self.saved_c
        if self.armed and not self.block_saved:
            for k in range(C):
                memcpy(&self.saved_block[k, 0], &self.inv[k, 0], C * sizeof(float64_t))
            self.block_saved = True

    def start(self, const float64_t[:, ::1] A, const float64_t[::1] zty):
        """Set the state from a dense ``A`` (inverted here) and ``Z'y``."""
        cdef intp_t C = A.shape[0]
        if C > self.capacity:
            raise ValueError("capacity exceeded")
        sign, logdet = np.linalg.slogdet(A)
        if sign <= 0:
            raise ValueError("A must be positive definite")
        self.n_pending = 0
        self.armed = False
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
        self._touch()
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
        self._touch()
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
        self._touch()
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
        self._touch()
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
        delete j, subtract delta2 from the (i, i) entry. The weights are left stale: call
        :meth:`solve` after the last merge of an event (a grid cut merges many pairs at once).
        """
        cdef intp_t C = self.n_features, k, last
        cdef int n, lda = <int>self.capacity, one = 1
        cdef float64_t denom, alpha
        self._flush()
        self._touch()
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

    def merge_pairs(self, const intp_t[::1] first, const intp_t[::1] second):
        """Merge the feature pairs ``(first[p], second[p])`` of one grid at once, in O(C P).

        Feature ``second[p]`` (a cell disjoint from every other cell of the batch) joins
        ``first[p]``: ``Z' = Z + sum_p z_j v_p'`` with ``v_p = e_i - e_j``, so
        ``A' = A + U S U'`` with ``U = [a_1..a_P, v_1..v_P]``, ``a_p = Z'z_j = A e_j -
        delta2 e_j`` and ``S = [[0, I], [I, diag(c)]]``, ``c_p = z_j'z_j`` (the cross terms
        ``z_j'z_k`` vanish within one grid). ``A^-1 U`` needs only columns ``i`` and ``j`` of
        the inverse (``A^-1 a_p = e_j - delta2 g_j``), and so does ``K = S^-1 + U' A^-1 U``
        (where ``c`` cancels): one Woodbury update of size 2P, held as pending rows like the
        splits' (no pass over the matrix). Feature ``second[p]`` stays in place, decoupled
        (its row of ``A'`` is ``delta2 e_j``, weight 0): :meth:`drop_dead` removes such
        features later. ``logdet`` counts the live features only.
        """
        cdef intp_t P = first.shape[0], rows = self.pending_w.shape[0], s, K, C, tail
        if P == 0:
            return
        if 2 * P > rows:  # more pairs than pending rows: in batches (still one grid)
            for s in range(0, P, rows // 2):
                self.merge_pairs(first[s:s + rows // 2], second[s:s + rows // 2])
            return
        if self.n_pending + 2 * P > rows:
            self._flush()
        C, K = self.n_features, self.n_pending
        fi, se = np.asarray(first), np.asarray(second)
        inv = np.asarray(self.inv)
        pw, pp = np.asarray(self.pending_w), np.asarray(self.pending_p)
        idx = np.concatenate([fi, se])
        # Rows i_p, j_p of the true inverse inv + P W' (symmetric: rows are columns).
        R = inv[idx, :C]
        if K:
            R += pp[:K, idx].T @ pw[:K, :C]
        Gi, Gj = R[:P], R[P:]
        d2 = self.delta2
        eye = np.eye(P)
        Wa = -d2 * Gj
        Wa[np.arange(P), se] += 1.0
        W = np.vstack([Wa, Gi - Gj])  # rows: A^-1 a_p, then A^-1 v_p
        Iii, Iij, Iji, Ijj = Gi[:, fi], Gi[:, se], Gj[:, fi], Gj[:, se]
        av = -eye - d2 * (Iji - Ijj)  # a_p' A^-1 v_q
        Kmat = np.block([[-d2 * eye + d2 * d2 * Ijj, eye + av],  # S^-1 + U' A^-1 U
                         [eye + av.T, Iii - Iij - Iji + Ijj]])
        sign, logdet_k = np.linalg.slogdet(Kmat)
        # det A' = det A det S det K with det S = (-1)^P; each decoupled feature adds delta2.
        if sign == 0 or not np.isfinite(logdet_k):
            raise np.linalg.LinAlgError("singular merge update")
        zty = np.asarray(self.zty)
        weights = np.asarray(self.weights)
        # A'^-1 zty' with zty' = zty + sum_p zty_j v_p: (A^-1 zty') - W' K^-1 W zty'.
        y0 = weights[:C] + zty[se] @ W[P:]
        zty[fi] += zty[se]
        zty[se] = 0.0
        KinvW = np.linalg.solve(Kmat, W)
        weights[:C] = y0 - (W @ zty[:C]) @ KinvW
        weights[se] = 0.0
        pw[K:K + 2 * P, :C] = W
        pp[K:K + 2 * P, :C] = -KinvW
        tail = min(self.capacity, C + rows) - C
        pw[K:K + 2 * P, C:C + tail] = 0.0
        pp[K:K + 2 * P, C:C + tail] = 0.0
        self.n_pending = K + 2 * P
        self.logdet += logdet_k - P * log(d2)

    def drop_dead(self, const intp_t[::1] dead):
        """Remove features left decoupled by :meth:`merge_pairs` (rows ``delta2 e_j`` of
        ``A``): each in decreasing order moves the last feature into its place (O(C) each
        after one flush). Returns the ``(slot, moved)`` pairs of the features moved."""
        cdef intp_t j, last
        moves = []
        if dead.shape[0] == 0:
            return moves
        self._flush()
        for j in sorted(np.asarray(dead).tolist(), reverse=True):
            last = self.n_features - 1
            if j != last:
                self._swap(j, last)
                moves.append((j, last))
            self.n_features -= 1
        return moves

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
        self.armed = False  # a checkpoint does not survive a reallocation
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
        self._touch()
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
        # Pickles name the rebuild function in _ridge_path, where it has always lived.
        from mondrian.kernel._ridge_path import _rebuild_ridge

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
