"""Lifetime paths of linear models on Mondrian features trained by SGD (section 8.6).

The cuts of the trees are walked in birth order by the path engine
(:mod:`mondrian.path._engine`). When a cut splits a cell, both new cells inherit its weights,
which leaves every prediction unchanged; then a few SGD steps on random training points follow.
No C x C matrix is ever formed: a step costs O(M K).
"""

from libc.math cimport NAN, exp, log, sqrt

from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.path._engine cimport CellColumns, CutSource

import numpy as np


# Random training points drawn at once (the stream of draws does not depend on it).
cdef intp_t PICK_CHUNK = 4096


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


cdef class SGDPathVisitor(CellColumns):
    """A linear model on the features of the live cells, trained by SGD along a forward path.

    Before the first cut, ``initial_steps`` SGD steps; after every cut (both halves inherit the
    weights of the cell), ``steps_per_cut`` steps. A step picks a random training point ``i``
    (``numpy.random.RandomState(seed).randint(0, n_train)`` in sequence, indexing the training
    points in increasing order) and does
    ``W[col] -= learning_rate * (g / sqrt(M) + alpha * W[col])`` for the ``M`` columns of the
    point, with ``g`` the gradient of the loss at its scores.

    Metrics, every ``eval_every`` cuts and after the last: number of cuts, training loss,
    validation loss (mean squared error, or mean cross-entropy), training and validation
    misclassification rates (``logistic``; else NaN).

    Parameters
    ----------
    targets : ndarray of shape (n_points, K)
        Regression targets, or one-hot classes for ``logistic``.
    is_train : ndarray of uint8
    alpha, learning_rate : float
    steps_per_cut, initial_steps, eval_every : int
    logistic : bool
        Softmax cross-entropy instead of squared error.
    seed : int or None
        Seed of the random picks.
    """

    cdef const float64_t[:, ::1] targets
    cdef const unsigned char[::1] is_train
    cdef float64_t[:, ::1] W
    cdef float64_t[::1] g
    cdef intp_t[::1] train, picks
    cdef float64_t alpha, learning_rate, scale
    cdef intp_t steps_per_cut, initial_steps, eval_every, n_cols, n_picks, next_pick
    cdef bint logistic
    cdef object seed, rng

    def __init__(self, const float64_t[:, ::1] targets, const unsigned char[::1] is_train,
                 float64_t alpha, float64_t learning_rate, intp_t steps_per_cut,
                 intp_t initial_steps, intp_t eval_every, bint logistic, object seed):
        if eval_every < 1:
            raise ValueError("eval_every must be at least 1")
        self.n_metrics = 5
        self.targets = targets
        self.is_train = is_train
        self.alpha = alpha
        self.learning_rate = learning_rate
        self.steps_per_cut = steps_per_cut
        self.initial_steps = initial_steps
        self.eval_every = eval_every
        self.logistic = logistic
        self.seed = seed
        self.train = np.flatnonzero(np.asarray(is_train, dtype=bool)).astype(np.intp)
        self.g = np.zeros(targets.shape[1])

    cdef int begin(self, bint forward) except -1:
        cdef CutSource source = self.source
        cdef intp_t m, capacity = source.n_groups + source.n_events + 1
        if not forward:
            raise ValueError("the SGD path runs forward only")
        if source.n_points != self.targets.shape[0]:
            raise ValueError("one target row per point is needed")
        self.init_columns(capacity)
        self.W = np.zeros((capacity, self.targets.shape[1]))
        self.scale = 1.0 / sqrt(source.n_groups)
        self.rng = np.random.RandomState(self.seed)
        self.picks = np.empty(0, dtype=np.intp)
        self.n_picks = 0
        self.next_pick = 0
        for m in range(source.n_groups):
            self.relabel(m, 0, m)
        self.n_cols = source.n_groups
        self._steps(self.initial_steps)
        return 0

    cdef int _draw(self, intp_t n) except -1:
        """Draw the next ``max(n, PICK_CHUNK)`` random training points."""
        cdef intp_t size = max(n, PICK_CHUNK)
        self.picks = np.asarray(self.train)[self.rng.randint(0, self.train.shape[0], size=size)]
        self.n_picks = size
        self.next_pick = 0
        return 0

    cdef int _steps(self, intp_t n_steps) except -1 nogil:
        cdef intp_t s, i, m, k, col, K = self.W.shape[1]
        cdef float64_t* g = &self.g[0]
        for s in range(n_steps):
            if self.next_pick == self.n_picks:
                with gil:
                    self._draw(n_steps - s)
            i = self.picks[self.next_pick]
            self.next_pick += 1
            _scores(self.cols, self.W, i, self.scale, g)
            _gradient(g, &self.targets[i, 0], K, self.logistic)
            for m in range(self.cols.shape[0]):
                col = self.cols[m, i]
                for k in range(K):
                    self.W[col, k] -= self.learning_rate * (g[k] * self.scale
                                                            + self.alpha * self.W[col, k])
        return 0

    cdef int split(self, intp_t group, intp_t cell, intp_t left, intp_t right,
                   const intp_t* left_points, intp_t n_left,
                   const intp_t* right_points, intp_t n_right) except -1 nogil:
        cdef intp_t c = self.cell_col[self.cell_base[group] + cell], k
        # The left child keeps the column, the right one copies its weights.
        for k in range(self.W.shape[1]):
            self.W[self.n_cols, k] = self.W[c, k]
        self.relabel_points(group, left, c, left_points, n_left)
        self.relabel_points(group, right, self.n_cols, right_points, n_right)
        self.n_cols += 1
        return self._steps(self.steps_per_cut)

    cdef int record(self, intp_t n_cuts, float64_t* row) except -1 nogil:
        """Mean loss and error rate over training and validation points."""
        cdef intp_t i, k, K = self.W.shape[1], best, side
        cdef float64_t loss, top, total
        cdef float64_t sums[4]
        cdef float64_t counts[2]
        cdef float64_t* sc = &self.g[0]
        if n_cuts % self.eval_every != 0 and n_cuts != self.source.n_events:
            return 0
        for k in range(4):
            sums[k] = 0.0
        counts[0] = 0.0
        counts[1] = 0.0
        for i in range(self.targets.shape[0]):
            side = 0 if self.is_train[i] else 1
            _scores(self.cols, self.W, i, self.scale, sc)
            loss = 0.0
            if self.logistic:
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
                    if self.targets[i, k] > 0:
                        loss = -(sc[k] - top - log(total))
                        sums[2 + side] += 1.0 if k != best else 0.0
            else:
                for k in range(K):
                    loss += (sc[k] - self.targets[i, k]) ** 2
            sums[side] += loss
            counts[side] += 1.0
        row[0] = n_cuts
        row[1] = sums[0] / counts[0]
        row[2] = sums[1] / counts[1]
        row[3] = sums[2] / counts[0] if self.logistic else NAN
        row[4] = sums[3] / counts[1] if self.logistic else NAN
        return 0

    def weights(self):
        """Weights of the columns created so far, shape (n_columns, K)."""
        return np.asarray(self.W)[: self.n_cols]

    def columns(self):
        """Column of every point in every tree, shape (n_trees, n_points)."""
        return np.asarray(self.cols)
