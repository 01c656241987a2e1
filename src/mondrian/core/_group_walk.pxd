# The grouped walk of prediction (the classifier's forest/_hnsp.pyx, the regressor's
# forest/_gaussian_predict.pyx), for rows of few features in trees whose every box is at hand:
# the paths and leaf-first etas of ``walk_etas`` (_walk.pxd), a group of rows at a time. A
# reader runs three stages a group apart (a group's descents, ``group_descend``; the previous
# group's etas, ``group_etas``; its own walks of the group before), so that what a stage reads
# was requested a stage or two earlier. The rows' box distances run side by side (_group_walk.h),
# each row's sum in its own order: the bits of box_distance.
from libc.stdint cimport int32_t

from mondrian.core._box_loops cimport MONDRIAN_TREE_PREFETCH, mf_prefetch_span
from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.core._walk cimport WALK_DEPTH_MAX, is_leaf_at, reserve


# _group_walk.h includes _box_kernels.h (mf_gap); naming it here makes a change to it rebuild
# every module that cimports this one (cythonize does not follow a header's own includes).
cdef extern from "mondrian/core/_box_kernels.h":
    pass


cdef extern from "mondrian/core/_group_walk.h":
    int mf_group_walk_portable
    void mf_group_distances(intp_t n, intp_t D, const float64_t* const* boxes,
                            const float64_t* const* xs, float64_t* out) noexcept nogil


cdef enum:
    # Rows walked side by side (more descents' node loads in flight, more distance chains),
    # and the boxes of a path requested when its row reaches its leaf (a row measures about
    # 3 from the leaf up on letter and pendigits).
    GROUP_ROWS = 16
    GROUP_BOXES_AHEAD = 3


cdef struct GroupRows:
    # One group's rows (``rows`` of them from row ``start``): their paths (``length``
    # nodes; 0 when deeper than WALK_DEPTH_MAX), then their etas from ``top`` (-1: walk it
    # the plain way), both indexed by depth (row r's at ``r WALK_DEPTH_MAX``): the values of
    # ``walk_etas``, the same path and etas from the leaf up until one is 0.
    intp_t start
    intp_t rows
    intp_t length[GROUP_ROWS]
    intp_t top[GROUP_ROWS]
    intp_t path[GROUP_ROWS * WALK_DEPTH_MAX]
    float64_t etas[GROUP_ROWS * WALK_DEPTH_MAX]


cdef inline void group_walk_portable(bint portable) noexcept nogil:
    """Force (True) or release the one-row reference loop of the distances of the calling
    module (each module including _group_walk.h has its switch: call this from its setter
    of ``add_portable_switch``, mondrian.core._batch_walk, or, in the test view
    _group_walk.pyx, around the call)."""
    global mf_group_walk_portable
    mf_group_walk_portable = 1 if portable else 0


cdef inline const float64_t* group_box(const float64_t* boxes, const int32_t* slots,
                                       intp_t D, intp_t node) noexcept nogil:
    """Node ``node``'s box among ``boxes`` (at row ``slots[node]``, or ``node``)."""
    return boxes + 2 * D * (slots[node] if slots != NULL else node)


cdef inline GroupRows* group_stages_begin(GroupRows** scratch,
                                          size_t* scratch_size) except NULL nogil:
    """The three groups of a reader's stages, empty (``reserve``'d in ``scratch``)."""
    cdef intp_t i
    reserve(<void**> scratch, scratch_size, 3 * sizeof(GroupRows))
    for i in range(3):
        scratch[0][i].rows = 0
    return scratch[0]


cdef inline bint group_stage(GroupRows* groups, intp_t step, intp_t n, GroupRows** walked,
                             GroupRows** measured) noexcept nogil:
    """Stage ``step`` of a reader of ``n`` rows over the three ``groups``: ``walked[0]``, the
    group whose rows it walks now (``group_next`` then descends the next rows into it), and
    ``measured[0]``, the group whose etas it measures now (``group_etas``); False when every
    row is walked."""
    walked[0] = groups + step % 3
    measured[0] = groups + (step + 2) % 3
    return (step * <intp_t> GROUP_ROWS < n
            or groups[0].rows + groups[1].rows + groups[2].rows > 0)


cdef inline void group_next(MondrianTree tree, const float64_t* X, intp_t x_step, intp_t step,
                            intp_t n, float64_t lifetime, const float64_t* boxes,
                            const int32_t* slots, GroupRows* group) noexcept nogil:
    """The descents of stage ``step``'s rows of the ``n`` (the ``GROUP_ROWS`` from row ``step
    GROUP_ROWS``, fewer at the end, none past ``n``) into ``group`` (``group_descend``)."""
    cdef intp_t start = step * GROUP_ROWS
    group_descend(tree, X, x_step, start, max(min(<intp_t>GROUP_ROWS, n - start), 0), lifetime,
                  boxes, slots, group)


cdef inline void group_descend(MondrianTree tree, const float64_t* X, intp_t x_step,
                               intp_t start, intp_t rows, float64_t lifetime,
                               const float64_t* boxes, const int32_t* slots,
                               GroupRows* group) noexcept nogil:
    """The paths of ``rows`` (at most ``GROUP_ROWS``) rows of ``X`` from row ``start`` (row
    ``i`` at ``X + i x_step``) into ``group``, a step of every row still descending at a
    time; ``boxes`` holds every node's box (node ``j``'s at row ``slots[j]``, or ``j`` if
    ``slots`` is NULL): the last ``GROUP_BOXES_AHEAD`` of each path are requested as its row
    reaches its leaf (hints: ``group_etas`` measures them)."""
    cdef intp_t D = tree.n_features, r, a, i, j, n_live = rows, kept
    cdef intp_t node[GROUP_ROWS]
    cdef intp_t live[GROUP_ROWS]
    cdef intp_t* length = group.length
    cdef intp_t* path
    if rows > 0:  # (past the end, start may lie beyond X: no pointer is formed there)
        X = X + start * x_step
    group.start = start
    group.rows = rows
    for r in range(rows):
        length[r] = 0
        node[r] = 0
        live[r] = r
    # A step of every row still descending, those that reach their leaf (or the depth
    # walk_etas records) leaving the list.
    while n_live > 0:
        kept = 0
        for a in range(n_live):
            r = live[a]
            if length[r] == WALK_DEPTH_MAX:
                length[r] = 0
                continue
            j = node[r]
            path = group.path + r * WALK_DEPTH_MAX
            path[length[r]] = j
            length[r] += 1
            if is_leaf_at(tree, j, lifetime):
                for i in range(max(length[r] - <intp_t>GROUP_BOXES_AHEAD, 0), length[r]):
                    mf_prefetch_span(group_box(boxes, slots, D, path[i]),
                                     2 * D * sizeof(float64_t))
                continue
            # child_toward as an index, not a branch (the side of a row is a coin toss: a
            # mispredicted branch also drops the other rows' loads in flight; right_child is
            # the int32 after left_child; NaN goes right either way)
            node[r] = (&tree.nodes[j].left_child)[
                <int>(not (X[r * x_step + tree.nodes[j].feature] <= tree.nodes[j].threshold))]
            # (the child's record, read at this row's next step, after the other rows':
            # asked for now, a step ahead; a record may span two lines; a hint)
            MONDRIAN_TREE_PREFETCH(&tree.nodes[node[r]])
            MONDRIAN_TREE_PREFETCH(<const char*> &tree.nodes[node[r] + 1] - 1)
            live[kept] = r
            kept += 1
        n_live = kept


cdef inline void group_etas(MondrianTree tree, const float64_t* X, intp_t x_step,
                            const float64_t* boxes, const int32_t* slots,
                            GroupRows* group) noexcept nogil:
    """The etas of ``group``'s rows (``group_descend``'s paths; ``X``, ``boxes`` and ``slots``
    as there) from their leaves up, a node of every row still measuring at a time, the rows'
    distances side by side (``mf_group_distances``: each row's sum in its own order, the
    bits of ``box_distance``), each row stopping at its first eta of 0 or at the root, as
    ``walk_etas``; the box ``GROUP_BOXES_AHEAD`` above a row's next is requested as it
    moves up (a hint)."""
    cdef intp_t D = tree.n_features, r, a, i, n_live = 0, kept
    cdef intp_t depth[GROUP_ROWS]
    cdef intp_t live[GROUP_ROWS]
    cdef const float64_t* at[GROUP_ROWS]
    cdef const float64_t* xs[GROUP_ROWS]
    cdef float64_t dist[GROUP_ROWS]
    X = X + group.start * x_step
    for r in range(group.rows):
        group.top[r] = -1
        depth[r] = group.length[r] - 1  # (the depth of the row's next eta)
        if group.length[r] > 0:
            live[n_live] = r
            n_live += 1
    while n_live > 0:
        for a in range(n_live):
            r = live[a]
            at[a] = group_box(boxes, slots, D, group.path[r * WALK_DEPTH_MAX + depth[r]])
            xs[a] = X + r * x_step
        mf_group_distances(n_live, D, at, xs, dist)
        kept = 0
        for a in range(n_live):
            r = live[a]
            i = depth[r]
            group.etas[r * WALK_DEPTH_MAX + i] = dist[a]
            if dist[a] == 0.0 or i == 0:
                group.top[r] = i
                continue
            if i >= GROUP_BOXES_AHEAD:
                mf_prefetch_span(group_box(boxes, slots, D, group.path[
                    r * WALK_DEPTH_MAX + i - GROUP_BOXES_AHEAD]), 2 * D * sizeof(float64_t))
            depth[r] = i - 1
            live[kept] = r
            kept += 1
        n_live = kept
