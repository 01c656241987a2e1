# The lifetime-path engine: cut sources (which cells split, in which order, holding which points)
# feed cut visitors (what a model keeps per cell or point, and what it records), one walker.
from mondrian.core._typedefs cimport float64_t, intp_t


cdef class CutSource:
    # Events in birth order; an event splits one or more cells, each into two children.
    # Cells are named (group, cell): group = a tree (a grid for the Mondrian grid), cell = a node.
    cdef readonly intp_t n_events     # number of events walked
    cdef readonly intp_t n_groups     # trees (or grids)
    cdef readonly intp_t n_points     # evaluation points, numbered 0..n_points-1

    # Number of cells event e splits (1 for a tree cut; one per cell crossed for a grid cut).
    cdef intp_t n_splits(self, intp_t e) noexcept nogil
    # The s-th split of event e: the group, the cell split, and its two children.
    cdef void split_of(self, intp_t e, intp_t s, intp_t* group, intp_t* cell, intp_t* left,
                       intp_t* right) noexcept nogil
    # Points of a cell: sets points[0] to a contiguous array of point indices, returns its size.
    cdef intp_t cell_points(self, intp_t group, intp_t cell,
                            const intp_t** points) noexcept nogil
    # Number of cells of a group (node ids run over 0..n_cells-1).
    cdef intp_t n_cells(self, intp_t group) noexcept nogil


cdef class TreeCuts(CutSource):
    # The cut source of a list of trees: every internal node is one event (one split), sorted by
    # birth time; per tree, a depth-first order of the points in which every node's points are
    # contiguous (orders[m, starts[offsets[m] + j]:ends[offsets[m] + j]] are node j's points).
    cdef readonly object times            # ndarray (n_events,): birth time of every event
    cdef readonly float64_t terminal      # lifetime up to which the walked model holds (or inf)
    cdef const intp_t[:, ::1] events      # (n_events, 4): tree, node, left child, right child
    cdef const intp_t[::1] offsets        # (n_groups + 1,): first flat node id of every tree
    cdef const intp_t[::1] starts         # flat over nodes: start of the node's points in orders
    cdef const intp_t[::1] ends           # flat over nodes: end of the node's points in orders
    cdef const intp_t[:, ::1] orders      # (n_groups, n_points): subtree order of every tree


cdef class CutVisitor:
    # A model read along the path. The walker calls begin() once (with the GIL), then per event
    # split() (forward) or merge() (backward) for each cell of the event, then record() once.
    cdef readonly intp_t n_metrics        # width of the row record() fills
    cdef CutSource source                 # set by the walker before begin()

    # Set up the state of the model at lifetime 0 (forward) or the terminal one (backward).
    # Return 1 if the visitor placed itself at the terminal model; 0 to have the walker replay
    # every split first (backward only).
    cdef int begin(self, bint forward) except -1
    # Forward: cell `cell` of group `group` splits into `left` and `right` holding those points.
    cdef int split(self, intp_t group, intp_t cell, intp_t left, intp_t right,
                   const intp_t* left_points, intp_t n_left,
                   const intp_t* right_points, intp_t n_right) except -1 nogil
    # Backward: `left` and `right` merge back into `cell` (the points they hold join it).
    cdef int merge(self, intp_t group, intp_t cell, intp_t left, intp_t right,
                   const intp_t* left_points, intp_t n_left,
                   const intp_t* right_points, intp_t n_right) except -1 nogil
    # The model now holds the first n_cuts events: write its metrics into row (n_metrics wide,
    # pre-filled with NaN; NULL when n_metrics is 0).
    cdef int record(self, intp_t n_cuts, float64_t* row) except -1 nogil


cdef class PathReader(CutVisitor):
    # A visitor of per-point state (the forest readers): a split or merge moves each point of the
    # cell between the cell and the child that holds it, one move() per point.
    cdef void move(self, intp_t tree, intp_t point, intp_t src, intp_t dst,
                   bint descend) noexcept nogil


cdef class CellColumns(CutVisitor):
    # A visitor of models with one feature column per live cell (the kernel paths): which column
    # every cell and every point holds, per group.
    cdef intp_t[:, ::1] cols              # (n_groups, n_points): column of every point
    cdef intp_t[::1] col_group            # group of the cell holding every column
    cdef intp_t[::1] col_cell             # that cell
    cdef intp_t[::1] cell_base            # (n_groups + 1,): first flat cell index of each group
    cdef intp_t[::1] cell_col             # flat over cells: column of every live cell

    # Size the tables for `capacity` columns (call from begin(), once the source is set).
    cdef int init_columns(self, intp_t capacity) except -1
    # Give column `col` to cell `cell` of `group` and to the points it holds.
    cdef void relabel(self, intp_t group, intp_t cell, intp_t col) noexcept nogil
    # Same, with the cell's points given.
    cdef void relabel_points(self, intp_t group, intp_t cell, intp_t col,
                             const intp_t* points, intp_t n) noexcept nogil


# Walk `source` with `visitor` forward (from lifetime 0) or backward (from the terminal model),
# recording one row of `metrics` (n_events + 1, visitor.n_metrics) per number of events held.
# A TreeCuts source (exact type) is read in place; any other source through its cdef methods.
cdef int walk(CutSource source, CutVisitor visitor, bint forward,
              float64_t[:, ::1] metrics) except -1


# Apply event e of `source` to `visitor`: its splits in order (forward) or its merges in reverse
# order (backward), without recording. For sources whose events are chosen one at a time (the
# Mondrian grid's greedy lifetime search); the visitor must have been begun.
cdef int visit_event(CutSource source, CutVisitor visitor, intp_t e, bint forward) except -1 nogil
