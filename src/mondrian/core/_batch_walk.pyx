"""Node-major eta pass of prediction: the etas of ``walk_etas`` for many rows at once.

A row's predictive needs eta (its L1 distance to a node's box) at the nodes of its path from
its leaf upward until one is 0 (``walk_etas`` in ``_walk.pxd``). Row by row, every row reads
its boxes wherever they lie, and a lean tree's boxes must first be rebuilt, every one of them,
into a buffer of ``node_count * 2 D`` floats (29 MB per usps tree) that the rows then read
from memory. Here the rows of a batch are partitioned down the tree instead (depth first),
and on the way back up each node measures its box against the rows still outside the boxes
below: the box is read once per batch, against all of them (a multi-row kernel,
``_box_kernels.h``), and a lean node's box is the union of its children's, built in a small
per-depth buffer only for the nodes some row needs. The values are those of ``walk_etas``:
the same min/max of the same points, each row's distance summed in the same order. From
``MASK_MIN_FEATURES`` features a row's distance is summed over every dim only at the first
box it meets (its leaf's), which marks the dims it lies outside of; the boxes above hold
that one, so their distances sum the gaps of the marked dims alone, the others being +0.0
(``_box_kernels.h``; usps: 73 of 256 dims at the leaf, 26 above, on average).
"""

import os

from libc.math cimport INFINITY
from libc.stdint cimport uint8_t, uint16_t, uint32_t
from libc.string cimport memcpy

from mondrian.core._box_loops cimport mf_prefetch_span
from mondrian.core._tree cimport MondrianTree
from mondrian.core._tree cimport subtree_points
from mondrian.core._typedefs cimport BOX_POINTS_MAX, float64_t, intp_t
from mondrian.core._walk cimport (
    WALK_DEPTH_MAX,
    is_leaf_at,
    reserve,
)

from libc.stdlib cimport free


cdef extern from "mondrian/core/_box_kernels.h":
    int mf_box_kernels_portable
    int mf_sparse_rows
    void mf_rows_eta(const float64_t* lo, intp_t D, const float64_t* X, intp_t x_step,
                     const intp_t* idx, intp_t m, float64_t* out) noexcept nogil
    void mf_grow_box(const float64_t* X, intp_t D, const intp_t* idx, intp_t n,
                     float64_t* lo) noexcept nogil
    void mf_union_box(const float64_t* first, const float64_t* second, intp_t D,
                      float64_t* out) noexcept nogil
    void mf_rows_eta_marked(const float64_t* lo, intp_t D, const float64_t* X, intp_t x_step,
                            const intp_t* idx, intp_t m, float64_t* out,
                            uint32_t* masks) noexcept nogil
    void mf_rows_eta_masked(const float64_t* lo, intp_t D, const float64_t* X, intp_t x_step,
                            const intp_t* idx, intp_t m, float64_t* out,
                            uint32_t* masks) noexcept nogil


cdef enum:
    SPLIT_CHUNK = 256  # rows whose sides _split_rows reads before moving them


cdef extern from "mondrian/core/_code_kernels.h":
    void mf_box_from_codes8(const uint8_t* c, intp_t D, const float64_t* values,
                            const intp_t* starts, float64_t* box) noexcept nogil
    void mf_rows_eta_codes(const uint16_t* c, intp_t D, const float64_t* values,
                           const intp_t* starts, const uint16_t* ranks, const float64_t* X,
                           intp_t x_step, const intp_t* idx, intp_t m,
                           float64_t* out) noexcept nogil


def _set_sparse_rows(int rows):
    """Sum a last row alone (sparsely) when fewer than ``rows`` rows remain past the groups
    of the multi-row kernel (2 by default, 0: never; the same bits; tests); returns the
    previous value."""
    global mf_sparse_rows
    cdef int old = mf_sparse_rows
    mf_sparse_rows = rows
    return old


def set_portable_kernels(bint portable):
    """Force (True) or release (False) the one-row reference kernel of the box distances.

    Parameters
    ----------
    portable : bool
        Whether every distance of the node-major pass is summed by the plain one-row loop
        instead of the multi-row kernel (and its AVX2 / AVX-512 clones). Both give the same
        bits; the tests run both. The environment variable ``MONDRIAN_PORTABLE_KERNELS=1``
        sets it at import.

    Returns
    -------
    bool
        The previous setting.
    """
    global mf_box_kernels_portable
    cdef bint old = mf_box_kernels_portable != 0
    mf_box_kernels_portable = 1 if portable else 0
    for setter in _PORTABLE_SETTERS:
        setter(portable)
    return old


# The switches of other modules' dispatched kernels (the classifier's branch-off terms), set
# with this one: one switch forces every portable kernel.
_PORTABLE_SETTERS = []


def add_portable_switch(setter):
    """Have :func:`set_portable_kernels` also call ``setter(portable)`` (called now with the
    current setting).

    Parameters
    ----------
    setter : callable
        The switch of another module's kernels, taking a bool.
    """
    _PORTABLE_SETTERS.append(setter)
    setter(mf_box_kernels_portable != 0)


set_portable_kernels(os.environ.get("MONDRIAN_PORTABLE_KERNELS", "") not in ("", "0"))


def _box_from_codes(const uint8_t[::1] codes, const float64_t[::1] values,
                    const intp_t[::1] starts, float64_t[::1] box):
    """``mf_box_from_codes8`` (``_code_kernels.h``) of the 1-byte ``codes`` (2 D) into ``box``
    (tests: the doubles ``values[starts + codes]``)."""
    cdef intp_t D = codes.shape[0] // 2, e
    if codes.shape[0] != 2 * D or starts.shape[0] != 2 * D or box.shape[0] != 2 * D:
        raise ValueError("codes, starts and box must hold 2 D entries")
    for e in range(2 * D):
        if starts[e] != starts[e - D if e >= D else e] or not (
                0 <= starts[e] and starts[e] + codes[e] < values.shape[0]):
            raise ValueError("a feature's bounds share its start, and codes index values")
    if D > 0:
        mf_box_from_codes8(&codes[0], D, &values[0], &starts[0], &box[0])


def _rows_eta(const float64_t[::1] box, const float64_t[:, ::1] X, const intp_t[::1] idx,
              float64_t[::1] out):
    """``mf_rows_eta`` (``_box_kernels.h``) of ``box`` (2 D) against the rows ``idx`` of
    ``X`` into ``out`` (tests: the same bits under both kernels)."""
    if box.shape[0] != 2 * X.shape[1] or out.shape[0] < idx.shape[0]:
        raise ValueError("box must hold 2 D bounds and out a distance per row")
    for i in range(idx.shape[0]):
        if not 0 <= idx[i] < X.shape[0]:
            raise IndexError("row index out of range")
    if idx.shape[0] > 0:
        mf_rows_eta(&box[0], X.shape[1], &X[0, 0], X.shape[1], &idx[0], idx.shape[0],
                    &out[0])


cdef void batch_free(BatchEtas* b) noexcept nogil:
    """Free the scratch of ``b`` (zeroed before its first use)."""
    free(b.top)
    free(b.etas)
    free(b.nodes)
    free(b.leaf)
    free(b.leaf_depth)
    free(b.idx)
    free(b.order)
    free(b.slot)
    free(b.dist)
    free(b.boxes)
    free(b.outside)


cdef int batch_etas(BatchEtas* b, MondrianTree tree, const float64_t* X, intp_t n,
                    intp_t x_step, float64_t lifetime) except -1 nogil:
    """Fill ``b.top`` and ``b.etas`` for the ``n`` rows of ``X`` (row ``i`` at ``X + i
    x_step``, at most ``BATCH_ROWS``) in ``tree`` pruned at ``lifetime`` (not empty)."""
    cdef bint have = False
    cdef intp_t D = tree.n_features
    _batch_start(b, tree, n)
    b.masked = D >= MASK_MIN_FEATURES and mf_box_kernels_portable == 0
    if b.masked:
        reserve(<void**> &b.outside, &b.outside_size, n * ((D + 31) // 32) * sizeof(uint32_t))
    _visit(b, tree, X, x_step, lifetime, 0, b.idx, n, 0, b.boxes, &have)
    return 0


cdef int batch_etas_boxes(BatchEtas* b, MondrianTree tree, const float64_t* X, intp_t n,
                          intp_t x_step, float64_t lifetime,
                          const BoxSource* source) except -1 nogil:
    """:func:`batch_etas` reading every node's box from ``source`` (``boxes``:
    ``MondrianTree._all_boxes``, or their codes; for instance kept by a prediction cache)
    instead of the stored boxes and the points: the same values, no box built."""
    _batch_start(b, tree, n)
    b.masked = False
    _visit_boxes(b, tree, X, x_step, lifetime, source, 0, b.idx, n, 0)
    return 0


cdef int _batch_start(BatchEtas* b, MondrianTree tree, intp_t n) except -1 nogil:
    """Size the scratch of ``b`` for ``n`` rows and put them all at the root."""
    cdef intp_t D = tree.n_features, i
    reserve(<void**> &b.top, &b.top_size, n * sizeof(intp_t))
    reserve(<void**> &b.leaf, &b.leaf_size, n * sizeof(intp_t))
    reserve(<void**> &b.leaf_depth, &b.leaf_depth_size, n * sizeof(intp_t))
    reserve(<void**> &b.etas, &b.etas_size, n * BATCH_ETAS * sizeof(float64_t))
    reserve(<void**> &b.nodes, &b.nodes_size, n * BATCH_ETAS * sizeof(intp_t))
    reserve(<void**> &b.idx, &b.idx_size, n * sizeof(intp_t))
    reserve(<void**> &b.order, &b.order_size, n * sizeof(intp_t))
    reserve(<void**> &b.slot, &b.slot_size, n * sizeof(intp_t))
    b.n_order = 0
    reserve(<void**> &b.dist, &b.dist_size, n * sizeof(float64_t))
    reserve(<void**> &b.boxes, &b.boxes_size,
            (WALK_DEPTH_MAX + 1) * 4 * D * sizeof(float64_t))
    for i in range(n):
        b.idx[i] = i
    return 0


cdef intp_t _visit(BatchEtas* b, MondrianTree tree, const float64_t* X, intp_t x_step,
                   float64_t lifetime, intp_t node, intp_t* idx, intp_t m, intp_t depth,
                   float64_t* box_out, bint* have_box) noexcept nogil:
    """The rows ``idx[:m]`` reached ``node`` at ``depth``: find their etas from their leaves
    up to here, move those still outside this node's box (eta > 0: its parent's is needed) to
    the front of ``idx`` and return their number. A lean node that measured rows leaves its
    box in ``box_out`` (``have_box[0]`` True), for its parent's union."""
    cdef intp_t D = tree.n_features, lc, rc, n_left, k, a_left, a_right, active
    cdef const float64_t* box
    cdef float64_t* left_box
    cdef float64_t* right_box
    cdef bint have_left = False, have_right = False, nested = False
    have_box[0] = False
    if m == 0:
        return 0
    if depth >= WALK_DEPTH_MAX:
        # Deeper than walk_etas records: these rows walk the plain way (top -1).
        _take_slots(b, idx, m, node, depth)
        return 0
    if is_leaf_at(tree, node, lifetime):
        active = m
        _take_slots(b, idx, m, node, depth)
        if tree.box_slot[node] >= 0:
            box = tree.bounds + 2 * D * tree.box_slot[node]
        else:
            for k in range(D):
                box_out[k] = INFINITY
                box_out[D + k] = -INFINITY
            _include_points(tree, node, box_out)
            have_box[0] = True
            box = box_out
    else:
        n_left = _split_rows(tree, node, X, x_step, idx, m)
        lc = tree.nodes[node].left_child
        rc = tree.nodes[node].right_child
        left_box = b.boxes + 4 * D * (depth + 1)
        right_box = left_box + 2 * D
        a_left = _visit(b, tree, X, x_step, lifetime, lc, idx, n_left, depth + 1, left_box,
                        &have_left)
        a_right = _visit(b, tree, X, x_step, lifetime, rc, idx + n_left, m - n_left,
                         depth + 1, right_box, &have_right)
        active = _join_active(idx, a_left, n_left, a_right)
        if active == 0:
            # No row needs this node's eta, but its parent may: a lean node whose children
            # both have their boxes at hand leaves their union (2 D reads), which spares the
            # parent reading this subtree's points.
            if (tree.box_slot[node] < 0 and _child_box(tree, lc, left_box, have_left) != NULL
                    and _child_box(tree, rc, right_box, have_right) != NULL):
                _union_box(tree, lc, left_box, have_left, rc, right_box, have_right, box_out)
                have_box[0] = True
            return 0
        if tree.box_slot[node] >= 0:
            box = tree.bounds + 2 * D * tree.box_slot[node]
            # (a stored box is checked to enclose the children's the rows were marked at)
            nested = ((a_left == 0 or _encloses(box, _child_box(tree, lc, left_box, have_left), D))
                      and (a_right == 0
                           or _encloses(box, _child_box(tree, rc, right_box, have_right), D)))
        else:
            # (the union holds both children's boxes, bound for bound)
            _union_box(tree, lc, left_box, have_left, rc, right_box, have_right, box_out)
            have_box[0] = True
            box = box_out
            nested = True
    if not b.masked:
        mf_rows_eta(box, D, X, x_step, idx, active, b.dist)
    elif nested:
        mf_rows_eta_masked(box, D, X, x_step, idx, active, b.dist, b.outside)
    else:
        mf_rows_eta_marked(box, D, X, x_step, idx, active, b.dist, b.outside)
    return _keep_outside(b, idx, active, node, depth)


cdef inline bint _encloses(const float64_t* box, const float64_t* inner, intp_t D) noexcept nogil:
    """Whether ``box`` holds ``inner`` (both 2 D) bound for bound (not NULL)."""
    cdef intp_t d
    cdef bint inside = inner != NULL
    if inside:
        for d in range(D):
            inside &= (box[d] <= inner[d]) & (box[D + d] >= inner[D + d])
    return inside


cdef intp_t _visit_boxes(BatchEtas* b, MondrianTree tree, const float64_t* X, intp_t x_step,
                         float64_t lifetime, const BoxSource* source, intp_t node, intp_t* idx,
                         intp_t m, intp_t depth) noexcept nogil:
    """:func:`_visit` with every node's box read from ``source``."""
    cdef intp_t n_left, a_left, a_right, active, D = tree.n_features
    if m == 0:
        return 0
    if depth >= WALK_DEPTH_MAX:
        _take_slots(b, idx, m, node, depth)
        return 0
    # This node's box, read when its subtree is done (most rows are outside their leaf's
    # box): asked for now, its lines arrive while the subtree is walked (a hint).
    if source.boxes != NULL:
        mf_prefetch_span(source.boxes + 2 * D * node, 2 * D * sizeof(float64_t))
    else:
        mf_prefetch_span(<const char*> source.codes + 2 * D * source.code_size * node,
                         2 * D * source.code_size)
    if is_leaf_at(tree, node, lifetime):
        active = m
        _take_slots(b, idx, m, node, depth)
    else:
        # The children's records, read when they are entered: asked for while the rows are
        # partitioned (a hint).
        MONDRIAN_TREE_PREFETCH(&tree.nodes[tree.nodes[node].left_child])
        MONDRIAN_TREE_PREFETCH(&tree.nodes[tree.nodes[node].right_child])
        n_left = _split_rows(tree, node, X, x_step, idx, m)
        a_left = _visit_boxes(b, tree, X, x_step, lifetime, source,
                              tree.nodes[node].left_child, idx, n_left, depth + 1)
        a_right = _visit_boxes(b, tree, X, x_step, lifetime, source,
                               tree.nodes[node].right_child, idx + n_left, m - n_left,
                               depth + 1)
        active = _join_active(idx, a_left, n_left, a_right)
        if active == 0:
            return 0
    if source.boxes != NULL:
        mf_rows_eta(source.boxes + 2 * D * node, D, X, x_step, idx, active, b.dist)
    elif source.ranks != NULL:
        _rows_eta_ranks(source, D, node, X, x_step, idx, active, <uint16_t*> b.boxes, b.dist)
    else:
        mf_rows_eta(_decoded(source, D, node, b.boxes), D, X, x_step, idx, active, b.dist)
    return _keep_outside(b, idx, active, node, depth)


cdef void _rows_eta_ranks(const BoxSource* source, intp_t D, intp_t node, const float64_t* X,
                          intp_t x_step, const intp_t* idx, intp_t m, uint16_t* wide,
                          float64_t* out) noexcept nogil:
    """``mf_rows_eta`` of the coded box of ``node`` from the rows' ranks
    (``mf_rows_eta_codes``: the same terms in the same order, so the bits of the distance);
    ``wide``: scratch of 2 D codes of 16 bits."""
    cdef intp_t e
    cdef const uint8_t* c8
    cdef const uint16_t* c16 = <const uint16_t*> source.codes + 2 * D * node
    if source.code_size == 1:
        c8 = <const uint8_t*> source.codes + 2 * D * node
        for e in range(2 * D):
            wide[e] = c8[e]
        c16 = wide
    mf_rows_eta_codes(c16, D, source.values, source.starts, source.ranks, X, x_step, idx, m,
                      out)


cdef inline const float64_t* _decoded(const BoxSource* source, intp_t D, intp_t node,
                                      float64_t* box) noexcept nogil:
    """The box of ``node`` decoded from ``source.codes`` into ``box`` (2 D floats): a table
    read per bound, the very doubles encoded (1-byte codes: ``mf_box_from_codes8``, a
    feature's two bounds from one read of its start, the codes 8 at a time; satimage 1-2%
    faster a call)."""
    cdef intp_t e
    cdef const uint8_t* c8
    cdef const uint16_t* c16
    cdef const float64_t* values = source.values
    cdef const intp_t* starts = source.starts
    if source.code_size == 1:
        c8 = <const uint8_t*> source.codes + 2 * D * node
        mf_box_from_codes8(c8, D, values, starts, box)
    else:
        c16 = <const uint16_t*> source.codes + 2 * D * node
        for e in range(2 * D):
            box[e] = values[starts[e] + c16[e]]
    return box


cdef inline intp_t _split_rows(MondrianTree tree, intp_t node, const float64_t* X,
                               intp_t x_step, intp_t* idx, intp_t m) noexcept nogil:
    """Put the rows ``idx[:m]`` going left at ``node`` first; return their number. Each row
    is swapped with the first right one whatever its side (two right rows trade places when
    it goes right), so that the side is added, not branched on: a coin toss per row, which
    a branch mispredicts half the time. The sides of a chunk of rows are read first: each
    a cache miss on a wide row, their loads overlap (the swaps chain each row's place on the
    sides before it; position k is untouched until row k is swapped, so the same order)."""
    cdef intp_t k, t, c = 0, n_left = 0, feature = tree.nodes[node].feature
    cdef float64_t threshold = tree.nodes[node].threshold
    cdef uint8_t side[SPLIT_CHUNK]
    while c < m:
        for k in range(min(<intp_t> SPLIT_CHUNK, m - c)):
            side[k] = X[idx[c + k] * x_step + feature] <= threshold
        for k in range(c, min(c + SPLIT_CHUNK, m)):
            t = idx[k]
            idx[k] = idx[n_left]
            idx[n_left] = t
            n_left += side[k - c]
        c += SPLIT_CHUNK
    return n_left


cdef inline intp_t _join_active(intp_t* idx, intp_t a_left, intp_t n_left,
                                intp_t a_right) noexcept nogil:
    """Move the right side's active rows (at ``n_left``) after the left side's (``a_left`` at
    the front); return their total."""
    cdef intp_t k, t
    for k in range(a_right):
        t = idx[a_left + k]
        idx[a_left + k] = idx[n_left + k]
        idx[n_left + k] = t
    return a_left + a_right


cdef inline intp_t _keep_outside(BatchEtas* b, intp_t* idx, intp_t active, intp_t node,
                                 intp_t depth) noexcept nogil:
    """Record the etas ``b.dist[:active]`` of the rows ``idx[:active]`` at ``node``; move the
    rows still outside its box (eta > 0: their parent's is needed) to the front and return
    their number (0 at the root)."""
    cdef intp_t k, i, s, t = 0
    for k in range(active):
        i = idx[k]
        s = b.slot[i]
        b.etas[s * BATCH_ETAS + b.leaf_depth[s] - depth] = b.dist[k]
        b.nodes[s * BATCH_ETAS + b.leaf_depth[s] - depth] = node
        b.top[s] = depth
        if b.dist[k] != 0.0 and b.leaf_depth[s] - depth + 1 < BATCH_ETAS:
            # Still outside: keep for the parent.
            idx[k] = idx[t]
            idx[t] = i
            t += 1
        elif b.dist[k] != 0.0 and depth > 0:
            b.top[s] = -2  # its parent's eta has no room: walk_etas
    return 0 if depth == 0 else t


cdef inline void _take_slots(BatchEtas* b, const intp_t* idx, intp_t m, intp_t node,
                             intp_t depth) noexcept nogil:
    """The rows ``idx[:m]`` reached their leaf ``node`` at ``depth`` (or the depth limit):
    give them the next slots, in this order (``top`` -1 until an eta is found)."""
    cdef intp_t k, s
    for k in range(m):
        s = b.n_order + k
        b.order[s] = idx[k]
        b.slot[idx[k]] = s
        b.leaf[s] = node
        b.leaf_depth[s] = depth
        b.top[s] = -1
    b.n_order += m


cdef void _union_box(MondrianTree tree, intp_t lc, const float64_t* left_box, bint have_left,
                     intp_t rc, const float64_t* right_box, bint have_right,
                     float64_t* out) noexcept nogil:
    """The box of a lean node into ``out`` (2 D): one child's box (stored, or built below when
    ``have_*``) grown by the other's (stored, built, or from its points), as ``walk_etas``
    grows a lean node's box from its child on the path and that child's sibling."""
    cdef intp_t D = tree.n_features
    cdef const float64_t* first = _child_box(tree, lc, left_box, have_left)
    cdef const float64_t* second = _child_box(tree, rc, right_box, have_right)
    cdef intp_t other = rc
    if first == NULL:
        first = second
        second = NULL
        other = lc
    if second != NULL:
        mf_union_box(first, second, D, out)
    else:
        memcpy(out, first, 2 * D * sizeof(float64_t))
        _include_points(tree, other, out)


cdef inline const float64_t* _child_box(MondrianTree tree, intp_t child, const float64_t* built,
                                        bint have) noexcept nogil:
    """The box of ``child`` if at hand (stored, or ``built`` when ``have``), else NULL."""
    if tree.box_slot[child] >= 0:
        return tree.bounds + 2 * tree.n_features * tree.box_slot[child]
    return built if have else NULL


cdef inline void _include_points(MondrianTree tree, intp_t node, float64_t* box) noexcept nogil:
    """``include_subtree`` (_walk.pxd) by the vector kernel: the same points, the same rule,
    in the same order, so the same values."""
    cdef intp_t points[BOX_POINTS_MAX]
    cdef intp_t n = subtree_points(tree, node, points, BOX_POINTS_MAX)
    mf_grow_box(tree.points_ptr, tree.n_features, points, n, box)
