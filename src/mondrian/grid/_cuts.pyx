"""The Mondrian grid (section 9): first-cut times of the gaps, cells, and the grid's cut source.

``M`` grids; each grid runs one 1-D Mondrian process (a Poisson process of cuts) per input
dimension. The points are grouped only by whether each gap between consecutive distinct
coordinates of a dimension holds a cut, so each grid needs one first-cut time per gap,
``t ~ Exp(gap length)``; the gap is cut at lifetime ``λ_d`` iff ``t <= λ_d``.

- :class:`GridSample` holds those times and maps any point to its cell key in every grid (the
  vector of its per-dimension segment indices), new points by the rule of section 9;
- :class:`GridCuts` is the path engine's cut source of the grid: cells of every grid as
  contiguous ranges of a permutation of the points; adding the next cut of a dimension splits
  every cell it crosses (one engine event with many splits), removing the last one merges the
  cell pairs it separated (one event; the ridge visitor applies all its merges as one
  Woodbury update, :meth:`~mondrian.kernel._ridge_inverse.RidgeInverse.merge_pairs`);
- the greedy search over their lifetime configurations (section 5.2 of the report) lives in
  :mod:`mondrian.grid._search`.
"""

from libc.math cimport INFINITY, log
from libc.stdlib cimport free, malloc, qsort
from libc.string cimport memcpy

from mondrian.core._random cimport RandomState, _splitmix64, rng_exponential, rng_seed
from mondrian.core._typedefs cimport float64_t, intp_t, uint64_t
from mondrian.path._engine cimport CutSource, CutVisitor, visit_event

import numpy as np

from mondrian.core.state_checks import check_index_array, loaded_array, refuse

# Segment of a new coordinate cut off from both neighbours (its cell holds no fitted point).
cdef enum:
    ALONE = -1


cdef inline uint64_t _mix(uint64_t x) noexcept nogil:
    return _splitmix64(&x)


cdef inline float64_t _uniform(uint64_t h) noexcept nogil:
    """A uniform number on (0, 1) from 64 random bits."""
    return ((h >> 11) + 0.5) * (1.0 / 9007199254740992.0)


cdef inline uint64_t _point_hash(float64_t x, uint64_t key) noexcept nogil:
    """Random bits that depend only on the value ``x`` and ``key`` (grid and dimension)."""
    cdef uint64_t bits
    cdef float64_t v = x + 0.0  # -0.0 and 0.0 hash alike
    memcpy(&bits, &v, sizeof(uint64_t))
    return _mix(_mix(key) ^ bits)


cdef class GridSample:
    """First-cut times of every gap of every dimension in ``n_grids`` Mondrian grids.

    Parameters
    ----------
    X : ndarray of float64, shape (n_points, n_dims)
        The points the grids are sampled on (scaled units).
    n_grids : int
    seed : int
        Seeds the first-cut times (one generator per grid) and the hashed draws of new points.

    Attributes
    ----------
    uniques : list of ndarray
        Sorted distinct coordinates of every dimension.
    offsets : ndarray of intp, shape (n_dims + 1,)
        Flat index of dimension ``d``'s first distinct value in ``times`` and segment tables.
    times : ndarray of float64, shape (n_grids, offsets[-1])
        ``times[m, offsets[d] + i]``: first-cut time of the gap below the ``i``-th distinct value
        of dimension ``d`` in grid ``m`` (``inf`` for ``i = 0``, which has no gap below).
    ranks : ndarray of intp, shape (n_dims, n_points)
        Index of every point's coordinate among ``uniques[d]``.
    """

    def __init__(self, const float64_t[:, ::1] X, intp_t n_grids, uint64_t seed):
        cdef intp_t d, m, i, o
        cdef RandomState st
        self.n_grids = n_grids
        self.n_points = X.shape[0]
        self.n_dims = X.shape[1]
        self.seed = seed
        Xa = np.asarray(X)
        self.uniques = [np.unique(Xa[:, d]) for d in range(self.n_dims)]
        self.ranks = np.vstack([np.searchsorted(self.uniques[d], Xa[:, d])
                                for d in range(self.n_dims)]
                               ).astype(np.intp).reshape(self.n_dims, self.n_points)
        self.offsets = np.zeros(self.n_dims + 1, dtype=np.intp)
        self.offsets[1:] = np.cumsum([len(u) for u in self.uniques])
        flat = (np.concatenate(self.uniques) if self.n_dims else np.zeros(0))
        self.flat_uniques = np.ascontiguousarray(flat, dtype=np.float64)
        self.off = self.offsets
        times = np.full((n_grids, self.offsets[self.n_dims]), INFINITY)
        cdef float64_t[:, ::1] tv = times
        cdef const float64_t[::1] u = self.flat_uniques
        with nogil:
            for m in range(n_grids):
                rng_seed(&st, _mix(seed ^ (<uint64_t>m * <uint64_t>0xD1B54A32D192ED03)))
                for d in range(self.n_dims):
                    o = self.off[d]
                    for i in range(1, self.off[d + 1] - o):
                        tv[m, o + i] = rng_exponential(&st, u[o + i] - u[o + i - 1])
        self.times = times
        self.t = times

    def __reduce__(self):
        return (_rebuild_sample, (self.n_grids, self.n_dims, self.n_points, self.seed,
                                  self.uniques, self.offsets, self.times, self.ranks))

    def segments(self, const float64_t[::1] lifetimes):
        """Segment index of every distinct value in every grid at ``lifetimes``.

        Returns
        -------
        ndarray of intp, shape (n_grids, offsets[-1])
            ``seg[m, offsets[d] + i]``: number of cut gaps at or below value ``i`` of ``d``.
        """
        if lifetimes.shape[0] != self.n_dims:
            raise ValueError(f"one lifetime per dimension ({self.n_dims}) is needed")
        seg = np.zeros((self.n_grids, self.offsets[self.n_dims]), dtype=np.intp)
        cdef intp_t[:, ::1] s = seg
        cdef intp_t m, d, i, o, count
        with nogil:
            for m in range(self.n_grids):
                for d in range(self.n_dims):
                    o = self.off[d]
                    count = 0
                    for i in range(self.off[d + 1] - o):
                        if i > 0 and self.t[m, o + i] <= lifetimes[d]:
                            count += 1
                        s[m, o + i] = count
        return seg

    def keys(self, const float64_t[:, ::1] X, intp_t m, const float64_t[::1] lifetimes,
             const intp_t[:, ::1] seg):
        """Cell key of every point of ``X`` in grid ``m``: its segment in every dimension.

        A coordinate equal to a sampled one takes its segment. A new coordinate inside a gap
        ``(a, b)`` with first-cut time ``t`` splits it in two: the first cut falls in ``(a, x)``
        with probability ``(x - a) / (b - a)`` and that part gets ``t``; the other part gets
        ``t + Exp(its length)`` (memorylessness). Beyond the extreme values the new gap gets
        ``Exp(its length)``. The point joins a neighbour's segment when the part between them
        is not cut at ``λ_d``, else it is alone (``ALONE``). The draws are hashes of the
        coordinate, grid and dimension, so a point always gets the same key.

        Returns
        -------
        ndarray of intp, shape (n_points, n_dims)
        """
        if (X.shape[1] != self.n_dims or lifetimes.shape[0] != self.n_dims
                or not 0 <= m < self.n_grids
                or (seg.shape[0], seg.shape[1]) != (self.n_grids, self.off[self.n_dims])):
            raise ValueError("X, the grid, lifetimes and segments do not match the sample")
        out = np.empty((X.shape[0], self.n_dims), dtype=np.intp)
        cdef intp_t[:, ::1] keys = out
        cdef intp_t p, d
        with nogil:
            for p in range(X.shape[0]):
                for d in range(self.n_dims):
                    keys[p, d] = self._segment(X[p, d], m, d, lifetimes[d], seg)
        return out

    cdef intp_t _segment(self, float64_t x, intp_t m, intp_t d, float64_t lam,
                         const intp_t[:, ::1] seg) noexcept nogil:
        cdef intp_t o = self.off[d], n = self.off[d + 1] - o, lo = 0, hi = n, mid
        cdef float64_t a, b, t, t_left, t_right
        cdef uint64_t h
        # First distinct value >= x.
        while lo < hi:
            mid = (lo + hi) // 2
            if self.flat_uniques[o + mid] < x:
                lo = mid + 1
            else:
                hi = mid
        if lo < n and self.flat_uniques[o + lo] == x:
            return seg[m, o + lo]
        h = _point_hash(x, self.seed ^ _mix(<uint64_t>(m * self.n_dims + d) + 1))
        if lo == 0 or lo == n:
            # A fresh gap beyond the extreme values.
            b = self.flat_uniques[o] - x if lo == 0 else x - self.flat_uniques[o + n - 1]
            if rng_exponential_u(_uniform(h), b) > lam:
                return seg[m, o] if lo == 0 else seg[m, o + n - 1]
            return ALONE
        a = self.flat_uniques[o + lo - 1]
        b = self.flat_uniques[o + lo]
        t = self.t[m, o + lo]
        if _uniform(h) * (b - a) < x - a:
            t_left = t
            t_right = t + rng_exponential_u(_uniform(_mix(h)), b - x)
        else:
            t_right = t
            t_left = t + rng_exponential_u(_uniform(_mix(h)), x - a)
        if t_left > lam:
            return seg[m, o + lo - 1]
        if t_right > lam:
            return seg[m, o + lo]
        return ALONE


cdef inline float64_t rng_exponential_u(float64_t u, float64_t rate) noexcept nogil:
    """Exponential draw of the given rate from a uniform ``u`` on (0, 1)."""
    if rate <= 0.0:
        return INFINITY
    return -log(u) / rate


def _rebuild_sample(n_grids, n_dims, n_points, seed, uniques, offsets, times, ranks):
    n_grids, n_dims, n_points, seed, uniques, offsets, times, ranks = _checked_sample(
        n_grids, n_dims, n_points, seed, uniques, offsets, times, ranks)
    cdef GridSample s = GridSample.__new__(GridSample)
    s.n_grids, s.n_dims, s.n_points, s.seed = n_grids, n_dims, n_points, seed
    s.uniques, s.offsets, s.times, s.ranks = uniques, offsets, times, ranks
    flat = np.concatenate(uniques) if n_dims else np.zeros(0)
    s.flat_uniques = np.ascontiguousarray(flat, dtype=np.float64)
    s.off = offsets
    s.t = times
    return s


def _checked_sample(n_grids, n_dims, n_points, seed, uniques, offsets, times, ranks):
    """The parts of a saved :class:`GridSample`, refused (``ValueError``) unless every index
    the nogil loops take from them stays in range: ``offsets`` the running lengths of the
    ``n_dims`` non-empty sorted ``uniques``, ``times`` one row per grid, ``ranks`` indices into
    ``uniques``."""
    name = "GridSample"
    n_grids, n_dims, n_points, seed = int(n_grids), int(n_dims), int(n_points), int(seed)
    if min(n_grids, n_dims, n_points) < 0 or not 0 <= seed < 2**64:
        refuse(name, "negative sizes or a seed outside 64 bits")
    if not isinstance(uniques, list) or len(uniques) != n_dims:
        refuse(name, "uniques must be a list of one array per dimension")
    uniques = [loaded_array(name, "uniques", u, np.float64, 1) for u in uniques]
    if any(u.shape[0] == 0 or not (u[1:] > u[:-1]).all() for u in uniques):
        refuse(name, "each dimension needs its distinct values, sorted")
    offsets = loaded_array(name, "offsets", offsets, np.intp, 1)
    if not np.array_equal(offsets, np.cumsum([0] + [u.shape[0] for u in uniques])):
        refuse(name, "offsets are not the running lengths of uniques")
    times = loaded_array(name, "times", times, np.float64, 2, (n_grids, offsets[-1]))
    ranks = loaded_array(name, "ranks", ranks, np.intp, 2, (n_dims, n_points))
    for d in range(n_dims):
        check_index_array(name, "ranks", ranks[d], 0, uniques[d].shape[0])
    return n_grids, n_dims, n_points, seed, uniques, offsets, times, ranks


def key_hashes(const intp_t[:, ::1] keys):
    """A 64-bit hash of every row of ``keys`` (as int64), for looking cells up by key."""
    out = np.empty(keys.shape[0], dtype=np.int64)
    cdef long long[::1] o = out
    cdef intp_t p, d
    cdef uint64_t h
    with nogil:
        for p in range(keys.shape[0]):
            h = <uint64_t>0x243F6A8885A308D3
            for d in range(keys.shape[1]):
                h = _mix(h ^ <uint64_t>(keys[p, d] + 2))
            o[p] = <long long>h
    return out


# ---------------------------------------------------------------------------- the cut source

cdef struct Keyed:
    uint64_t key
    intp_t side
    intp_t cell


cdef int _compare_keyed(const void* a, const void* b) noexcept nogil:
    cdef const Keyed* x = <const Keyed*>a
    cdef const Keyed* y = <const Keyed*>b
    if x.key != y.key:
        return -1 if x.key < y.key else 1
    if x.side != y.side:
        return -1 if x.side < y.side else 1
    return 0


cdef class GridCuts(CutSource):
    """The path engine's cut source of a Mondrian grid, moved one cut at a time.

    The cuts of dimension ``d`` over all grids are taken in birth order: the configuration is
    the number of them held per dimension (``n_active``), and ``λ_d`` is the birth time of the
    last one held (0 if none). :meth:`add` and :meth:`remove` hold the next cut / drop the last
    one of a dimension and replay the change on a visitor as one engine event.

    Parameters
    ----------
    sample : GridSample
        First-cut times of the points every model reads (training, then validation).

    Notes
    -----
    Cells of grid ``m`` are named by ids below ``n_cells(m) = 2 n_points + 2`` (recycled); each
    holds a contiguous range of ``order[m]``. A split partitions its cell's range in place; a
    merge first moves the two cells next to each other.
    """

    def __init__(self, GridSample sample):
        cdef intp_t d, n = sample.n_points
        self.sample = sample
        self.n_groups = sample.n_grids
        self.n_points = n
        self.n_dims = sample.n_dims
        self.n_events = 0
        self.capacity = 2 * n + 2
        self.rank = sample.ranks
        self.off = sample.offsets
        self.t = sample.times
        by_rank = np.zeros(self.n_dims * n, dtype=np.intp)
        rank_start = np.zeros(sample.offsets[sample.n_dims] + self.n_dims, dtype=np.intp)
        for d in range(self.n_dims):
            r = sample.ranks[d]
            by_rank[d * n:(d + 1) * n] = np.argsort(r, kind="stable")
            counts = np.bincount(r, minlength=len(sample.uniques[d]))
            a = sample.offsets[d] + d
            rank_start[a + 1:a + 1 + len(counts)] = np.cumsum(counts)
        self.by_rank = by_rank
        self.rank_start = rank_start
        # The cuts of every dimension over all grids, by birth time (finite ones only).
        grids, gaps, times, ev_off = [], [], [], [0]
        self.event_times = []
        for d in range(self.n_dims):
            block = sample.times[:, sample.offsets[d]:sample.offsets[d + 1]]
            m_idx, g_idx = np.nonzero(np.isfinite(block))
            tt = block[m_idx, g_idx]
            o = np.argsort(tt, kind="stable")
            grids.append(m_idx[o])
            gaps.append(g_idx[o])
            times.append(tt[o])
            self.event_times.append(tt[o])
            ev_off.append(ev_off[len(ev_off) - 1] + len(o))  # no wraparound here
        self.ev_off = np.asarray(ev_off, dtype=np.intp)
        self.ev_grid = np.concatenate(grids).astype(np.intp) if grids else np.zeros(0, np.intp)
        self.ev_gap = np.concatenate(gaps).astype(np.intp) if gaps else np.zeros(0, np.intp)
        self.ev_time = np.concatenate(times) if times else np.zeros(0)
        M = self.n_groups
        self.n_active = np.zeros(self.n_dims, dtype=np.intp)
        self.active = np.zeros((M, sample.offsets[sample.n_dims]), dtype=np.uint8)
        self.seg = np.zeros((M, sample.offsets[sample.n_dims]), dtype=np.intp)
        self.order = np.tile(np.arange(n, dtype=np.intp), (M, 1))
        self.cell_of = np.zeros((M, n), dtype=np.intp)
        self.start = np.zeros((M, self.capacity), dtype=np.intp)
        self.end = np.zeros((M, self.capacity), dtype=np.intp)
        np.asarray(self.end)[:, 0] = n
        # Cell 0 (the root, every point) is live; ids 1.. are free, smallest on top.
        self.free_ids = np.tile(np.arange(self.capacity - 1, 0, -1, dtype=np.intp), (M, 1))
        self.n_free = np.full(M, self.capacity - 1, dtype=np.intp)
        self.n_live_cells = M
        self.buf = np.zeros((max(n, 1), 4), dtype=np.intp)
        self.n_buf = 0
        self.count_left = np.zeros(self.capacity, dtype=np.intp)
        self.count_right = np.zeros(self.capacity, dtype=np.intp)
        self.touched = np.zeros(max(n, 1), dtype=np.intp)
        self.scratch = np.zeros(max(n, 1), dtype=np.intp)

    # ------------------------------------------------------------------ CutSource

    cdef intp_t n_splits(self, intp_t e) noexcept nogil:
        return self.n_buf

    cdef void split_of(self, intp_t e, intp_t s, intp_t* group, intp_t* cell, intp_t* left,
                       intp_t* right) noexcept nogil:
        cell[0] = self.buf[s, 0]
        left[0] = self.buf[s, 1]
        right[0] = self.buf[s, 2]
        group[0] = self.buf[s, 3]

    cdef intp_t cell_points(self, intp_t group, intp_t cell,
                            const intp_t** points) noexcept nogil:
        points[0] = &self.order[group, 0] + self.start[group, cell]
        return self.end[group, cell] - self.start[group, cell]

    cdef intp_t n_cells(self, intp_t group) noexcept nogil:
        return self.capacity

    # ------------------------------------------------------------------ configuration

    @property
    def active_counts(self):
        """Number of cuts held per dimension (in birth order over all grids)."""
        return np.array(self.n_active)

    def n_available(self, intp_t d):
        """Number of cuts of dimension ``d`` not yet held."""
        return self.ev_off[d + 1] - self.ev_off[d] - self.n_active[d]

    def lifetimes(self):
        """``λ``: per dimension, the birth time of the last cut held (0 if none)."""
        out = np.zeros(self.n_dims)
        for d in range(self.n_dims):
            if self.n_active[d] > 0:
                out[d] = self.ev_time[self.ev_off[d] + self.n_active[d] - 1]
        return out

    def cells(self):
        """Cell id of every point in every grid, shape (n_grids, n_points) (a copy)."""
        return np.array(self.cell_of)

    cdef inline intp_t _rank_begin(self, intp_t d, intp_t r) noexcept nogil:
        return d * self.n_points + self.rank_start[self.off[d] + d + r]

    cdef void _segment_ranks(self, intp_t m, intp_t d, intp_t i, intp_t* a,
                             intp_t* b) noexcept nogil:
        """Positions ``[a, b)`` in ``by_rank`` of the points whose distinct value of dimension
        ``d`` lies on either side of gap ``i``, up to the nearest other cut gaps of grid ``m``
        (the points of the cells that gap ``i`` splits or merges)."""
        cdef intp_t o = self.off[d], n = self.off[d + 1] - o, r
        r = i - 1
        while r > 0 and not self.active[m, o + r]:
            r -= 1
        a[0] = self._rank_begin(d, r)
        r = i + 1
        while r < n and not self.active[m, o + r]:
            r += 1
        b[0] = self._rank_begin(d, r)

    cdef intp_t _alloc(self, intp_t m) noexcept nogil:
        self.n_free[m] -= 1
        return self.free_ids[m, self.n_free[m]]

    cdef void _release(self, intp_t m, intp_t c) noexcept nogil:
        self.free_ids[m, self.n_free[m]] = c
        self.n_free[m] += 1

    cdef void _shift_segments(self, intp_t m, intp_t d, intp_t i, intp_t step) noexcept nogil:
        cdef intp_t o = self.off[d], r
        for r in range(i, self.off[d + 1] - o):
            self.seg[m, o + r] += step

    # ------------------------------------------------------------------ adding a cut

    cdef intp_t _crossed(self, intp_t m, intp_t d, intp_t i) noexcept nogil:
        """Count, per cell of grid ``m`` meeting gap ``i`` of ``d``, its points on each side;
        the cells are listed in ``touched``; returns how many cells have both sides."""
        cdef intp_t a, b, k, p, c, n_touched = 0, n_split = 0
        self._segment_ranks(m, d, i, &a, &b)
        for k in range(a, b):
            p = self.by_rank[k]
            c = self.cell_of[m, p]
            if self.count_left[c] == 0 and self.count_right[c] == 0:
                self.touched[n_touched] = c
                n_touched += 1
            if self.rank[d, p] < i:
                self.count_left[c] += 1
            else:
                self.count_right[c] += 1
        for k in range(n_touched):
            c = self.touched[k]
            if self.count_left[c] > 0 and self.count_right[c] > 0:
                n_split += 1
        self.scratch[0] = n_touched
        return n_split

    cdef void _clear_counts(self) noexcept nogil:
        cdef intp_t k, c
        for k in range(self.scratch[0]):
            c = self.touched[k]
            self.count_left[c] = 0
            self.count_right[c] = 0

    def splits_of_next(self, intp_t d):
        """Number of cells the next cut of dimension ``d`` would split (0 if none is left)."""
        cdef intp_t e, K
        if self.n_active[d] >= self.ev_off[d + 1] - self.ev_off[d]:
            return 0
        e = self.ev_off[d] + self.n_active[d]
        K = self._crossed(self.ev_grid[e], d, self.ev_gap[e])
        self._clear_counts()
        return K

    cdef int _add(self, CutVisitor visitor, intp_t d) except -1:
        cdef intp_t e = self.ev_off[d] + self.n_active[d]
        cdef intp_t m = self.ev_grid[e], i = self.ev_gap[e], o = self.off[d]
        cdef intp_t k, c, left, right, a, b, q, w, p, n_touched
        with nogil:
            self._crossed(m, d, i)
            n_touched = self.scratch[0]
            self.n_buf = 0
            for k in range(n_touched):
                c = self.touched[k]
                if self.count_left[c] == 0 or self.count_right[c] == 0:
                    continue
                left = self._alloc(m)
                right = self._alloc(m)
                # Partition the cell's range: points left of the gap first.
                a = self.start[m, c]
                b = self.end[m, c]
                w = a
                for q in range(a, b):
                    p = self.order[m, q]
                    if self.rank[d, p] < i:
                        self.order[m, q] = self.order[m, w]
                        self.order[m, w] = p
                        w += 1
                self.start[m, left] = a
                self.end[m, left] = w
                self.start[m, right] = w
                self.end[m, right] = b
                for q in range(a, w):
                    self.cell_of[m, self.order[m, q]] = left
                for q in range(w, b):
                    self.cell_of[m, self.order[m, q]] = right
                self.buf[self.n_buf, 0] = c
                self.buf[self.n_buf, 1] = left
                self.buf[self.n_buf, 2] = right
                self.buf[self.n_buf, 3] = m
                self.n_buf += 1
            self._clear_counts()
            self.active[m, o + i] = 1
            self._shift_segments(m, d, i, 1)
            self.n_active[d] += 1
            self.n_live_cells += self.n_buf
        if visitor is not None:
            visit_event(self, visitor, 0, True)
        for k in range(self.n_buf):
            self._release(m, self.buf[k, 0])
        return 0

    # ------------------------------------------------------------------ removing a cut

    cdef uint64_t _key_without(self, intp_t m, intp_t c, intp_t d) noexcept nogil:
        """Hash of the segments of cell ``c`` of grid ``m`` in every dimension but ``d``."""
        cdef intp_t p = self.order[m, self.start[m, c]], e
        cdef uint64_t h = <uint64_t>0x13198A2E03707344
        for e in range(self.n_dims):
            if e != d:
                h = _mix(h ^ <uint64_t>(self.seg[m, self.off[e] + self.rank[e, p]] + 1))
        return h

    cdef bint _same_cell_key(self, intp_t m, intp_t c1, intp_t c2, intp_t d) noexcept nogil:
        cdef intp_t p = self.order[m, self.start[m, c1]], q = self.order[m, self.start[m, c2]], e
        for e in range(self.n_dims):
            if e != d and (self.seg[m, self.off[e] + self.rank[e, p]]
                           != self.seg[m, self.off[e] + self.rank[e, q]]):
                return False
        return True

    cdef void _adjoin(self, intp_t m, intp_t first, intp_t second) noexcept nogil:
        """Move cell ``second`` (after ``first`` in the order) right behind ``first``: the
        cells in between shift right by the size of ``second``."""
        cdef intp_t b1 = self.end[m, first], a2 = self.start[m, second]
        cdef intp_t b2 = self.end[m, second], n2 = b2 - a2, q, c, nxt
        if b1 == a2:
            return
        q = b1
        while q < a2:
            c = self.cell_of[m, self.order[m, q]]
            nxt = self.end[m, c]
            self.start[m, c] += n2
            self.end[m, c] += n2
            q = nxt
        for q in range(n2):
            self.scratch[q] = self.order[m, a2 + q]
        for q in range(a2 - 1, b1 - 1, -1):
            self.order[m, q + n2] = self.order[m, q]
        for q in range(n2):
            self.order[m, b1 + q] = self.scratch[q]
        self.start[m, second] = b1
        self.end[m, second] = b1 + n2

    cdef int _remove(self, CutVisitor visitor, intp_t d) except -1:
        cdef intp_t e = self.ev_off[d] + self.n_active[d] - 1
        cdef intp_t m = self.ev_grid[e], i = self.ev_gap[e], o = self.off[d]
        cdef intp_t a, b, k, p, c, n_keyed = 0, first, second, merged, q
        cdef Keyed* keyed = <Keyed*>malloc((self.n_points + 1) * sizeof(Keyed))
        if keyed == NULL:
            raise MemoryError()
        try:
            with nogil:
                # The cells on each side of the gap (none straddles it: it is cut).
                self._segment_ranks(m, d, i, &a, &b)
                for k in range(a, b):
                    p = self.by_rank[k]
                    c = self.cell_of[m, p]
                    if self.count_left[c] != 0:
                        continue
                    self.count_left[c] = 1
                    self.touched[n_keyed] = c
                    keyed[n_keyed].cell = c
                    keyed[n_keyed].side = 0 if self.rank[d, p] < i else 1
                    keyed[n_keyed].key = self._key_without(m, c, d)
                    n_keyed += 1
                for k in range(n_keyed):
                    self.count_left[self.touched[k]] = 0
                qsort(keyed, n_keyed, sizeof(Keyed), _compare_keyed)
                # Pairs: equal keys, one cell per side. Move each pair next to each other.
                self.n_buf = 0
                k = 0
                while k + 1 < n_keyed:
                    if (keyed[k].key == keyed[k + 1].key and keyed[k].side == 0
                            and keyed[k + 1].side == 1
                            and self._same_cell_key(m, keyed[k].cell, keyed[k + 1].cell, d)):
                        first = keyed[k].cell
                        second = keyed[k + 1].cell
                        if self.start[m, second] < self.start[m, first]:
                            first, second = second, first
                        self._adjoin(m, first, second)
                        self.buf[self.n_buf, 1] = keyed[k].cell
                        self.buf[self.n_buf, 2] = keyed[k + 1].cell
                        self.buf[self.n_buf, 3] = m
                        self.n_buf += 1
                        k += 2
                    else:
                        k += 1
                # The merged cells span their (now adjacent) pieces.
                for k in range(self.n_buf):
                    merged = self._alloc(m)
                    first = self.buf[k, 1]
                    second = self.buf[k, 2]
                    self.start[m, merged] = min(self.start[m, first], self.start[m, second])
                    self.end[m, merged] = max(self.end[m, first], self.end[m, second])
                    self.buf[k, 0] = merged
                self.active[m, o + i] = 0
                self._shift_segments(m, d, i, -1)
                self.n_active[d] -= 1
                self.n_live_cells -= self.n_buf
        finally:
            free(keyed)
        if visitor is not None:
            visit_event(self, visitor, 0, False)
        for k in range(self.n_buf):
            merged = self.buf[k, 0]
            for q in range(self.start[m, merged], self.end[m, merged]):
                self.cell_of[m, self.order[m, q]] = merged
            self._release(m, self.buf[k, 1])
            self._release(m, self.buf[k, 2])
        return 0

    # ------------------------------------------------------------------ moves

    def add(self, intp_t d, CutVisitor visitor=None):
        """Hold the next cut of dimension ``d``; replay it on ``visitor`` (if given, begun).

        Returns
        -------
        int
            Number of cells split.
        """
        if not 0 <= d < self.n_dims:
            raise ValueError(f"no dimension {d}")
        if self.n_active[d] >= self.ev_off[d + 1] - self.ev_off[d]:
            raise ValueError(f"dimension {d} has no cut left")
        self._add(visitor, d)
        return self.n_buf

    def remove(self, intp_t d, CutVisitor visitor=None):
        """Drop the last cut held in dimension ``d``; replay it on ``visitor`` (if given).

        Returns
        -------
        int
            Number of cell pairs merged.
        """
        if not 0 <= d < self.n_dims:
            raise ValueError(f"no dimension {d}")
        if self.n_active[d] == 0:
            raise ValueError(f"dimension {d} holds no cut")
        self._remove(visitor, d)
        return self.n_buf

    cdef list _state(self):
        return [np.asarray(self.n_active), np.asarray(self.active), np.asarray(self.seg),
                np.asarray(self.order), np.asarray(self.cell_of), np.asarray(self.start),
                np.asarray(self.end), np.asarray(self.free_ids), np.asarray(self.n_free)]

    def snapshot(self):
        """The configuration and cells, to :meth:`restore` after a trial move."""
        return tuple([a.copy() for a in self._state()]) + (self.n_live_cells,)

    def restore(self, tuple state):
        """Return to a :meth:`snapshot` of this source."""
        cdef list arrays = self._state()
        cdef intp_t k
        for k in range(len(arrays)):
            arrays[k][...] = state[k]
        self.n_live_cells = state[len(arrays)]
