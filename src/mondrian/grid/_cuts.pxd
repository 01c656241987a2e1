# The Mondrian grid's sample and cut source (_cuts.pyx), cimported by its greedy lifetime
# search (_search.pyx).
from mondrian.core._typedefs cimport float64_t, intp_t, uint64_t
from mondrian.path._engine cimport CutSource, CutVisitor


cdef class GridSample:
    cdef readonly intp_t n_grids, n_dims, n_points
    cdef readonly object uniques, offsets, times, ranks
    cdef readonly uint64_t seed
    cdef const float64_t[::1] flat_uniques
    cdef const intp_t[::1] off
    cdef const float64_t[:, ::1] t

    cdef intp_t _segment(self, float64_t x, intp_t m, intp_t d, float64_t lam,
                         const intp_t[:, ::1] seg) noexcept nogil


cdef class GridCuts(CutSource):
    cdef readonly GridSample sample
    cdef readonly intp_t n_dims, capacity
    cdef const intp_t[:, ::1] rank
    cdef const intp_t[::1] by_rank        # flat (n_dims * n_points): points by rank, per dim
    cdef const intp_t[::1] rank_start     # flat over distinct values (+1 per dim)
    cdef const intp_t[::1] off            # the sample's offsets
    cdef const float64_t[:, ::1] t
    cdef readonly object event_times      # list per dim: birth times in order
    cdef const intp_t[::1] ev_off         # (n_dims + 1,)
    cdef const intp_t[::1] ev_grid
    cdef const intp_t[::1] ev_gap
    cdef const float64_t[::1] ev_time
    # State.
    cdef intp_t[::1] n_active
    cdef unsigned char[:, ::1] active
    cdef intp_t[:, ::1] seg
    cdef intp_t[:, ::1] order
    cdef intp_t[:, ::1] cell_of
    cdef intp_t[:, ::1] start
    cdef intp_t[:, ::1] end
    cdef intp_t[:, ::1] free_ids
    cdef intp_t[::1] n_free
    cdef readonly intp_t n_live_cells
    # The current event: (cell, left, right, group) per split or merge.
    cdef intp_t[:, ::1] buf
    cdef intp_t n_buf
    cdef intp_t[::1] count_left, count_right, touched, scratch

    # (and CutSource's hooks, declared in path/_engine.pxd)
    cdef inline intp_t _rank_begin(self, intp_t d, intp_t r) noexcept nogil
    cdef void _segment_ranks(self, intp_t m, intp_t d, intp_t i, intp_t* a,
                             intp_t* b) noexcept nogil
    cdef intp_t _alloc(self, intp_t m) noexcept nogil
    cdef void _release(self, intp_t m, intp_t c) noexcept nogil
    cdef void _shift_segments(self, intp_t m, intp_t d, intp_t i, intp_t step) noexcept nogil
    cdef intp_t _crossed(self, intp_t m, intp_t d, intp_t i) noexcept nogil
    cdef void _clear_counts(self) noexcept nogil
    cdef int _add(self, CutVisitor visitor, intp_t d) except -1
    cdef uint64_t _key_without(self, intp_t m, intp_t c, intp_t d) noexcept nogil
    cdef bint _same_cell_key(self, intp_t m, intp_t c1, intp_t c2, intp_t d) noexcept nogil
    cdef void _adjoin(self, intp_t m, intp_t first, intp_t second) noexcept nogil
    cdef int _remove(self, CutVisitor visitor, intp_t d) except -1
    cdef list _state(self)
