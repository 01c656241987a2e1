# The statistics rows of the classifier's one-row walk (forest/_hnsp.pyx, _predict_row): at
# each step, the rows its IKN counts read (the node's own at a leaf, its children's above),
# stored or summed from the points, each summed once along the path.
from mondrian.core._tree cimport MondrianTree, node_row, points_row, stored_row, subtree_points
from mondrian.core._typedefs cimport BOX_POINTS_MAX, float64_t, intp_t
from mondrian.core._walk cimport WalkStep


cdef extern from "mondrian/forest/_hnsp_kernels.h":
    bint mf_integers(const float64_t* a, intp_t S) noexcept nogil


cdef inline bint _exact_difference(const float64_t* a, const float64_t* b, intp_t S,
                                   bint a_known, float64_t* out) noexcept nogil:
    """``out = a - b`` when every entry of ``a`` and ``b`` is an integer of magnitude below
    2**52 (then exact: the bits of the sum of the integers it stands for); False, ``out``
    unspecified, otherwise. ``a_known``: ``a`` passed ``mf_integers`` already (a path's
    stored rows are each the minuend of one step and the subtrahend of the step above)."""
    cdef intp_t c
    if not mf_integers(b, S) or not (a_known or mf_integers(a, S)):
        return False
    for c in range(S):
        out[c] = a[c] - b[c]
    return True


cdef inline const float64_t* _step_rows(MondrianTree tree, WalkStep* step, const float64_t* x,
                                        intp_t toward, const float64_t* own, bint* exact,
                                        float64_t* out_a, float64_t* out_b,
                                        const float64_t** first,
                                        const float64_t** second) noexcept nogil:
    """The statistics rows ``_node_counts`` (forest/_hnsp.pyx) reads at ``step``: the node's
    own row at a leaf (``first``), its children's rows at an internal node (``first``, ``second``).
    Returns the row of the child ``toward`` (the next step's node; any value at a leaf), for
    the next step's ``own``.

    Stored rows are read in place; the others (lean values) are summed into ``out_a`` and
    ``out_b`` (one row each, neither holding ``own``): below the frontier of stored boxes the
    step holds the node's points, which the node's cut splits between its children; above it,
    a child without a row has fewer than ``box_min_samples`` points, gathered from its subtree
    (into the step for the child on the side of ``x``: the walk's next step reads the same
    points, gathered once). ``own`` is the node's row when the previous step found it (else
    NULL): a leaf reads it instead of summing its points again, and below the frontier only
    the smaller side is summed, the other being ``own`` minus it when that difference is
    exact (integer counts); fractional rows are summed as without ``own``, so every row has
    the bits of the sum of its points in subtree order either way. ``exact[0]``: on entry,
    whether ``own`` passed ``mf_integers``; on exit, whether the returned row did."""
    cdef intp_t S = tree.value_stride, D = tree.n_features, k, n_left = 0, n_right = 0
    cdef intp_t j = step.node, lc, rc, f, far_node
    cdef float64_t t
    cdef const float64_t** near
    cdef const float64_t** far
    cdef const float64_t* stored
    cdef float64_t* near_out
    cdef float64_t* far_out
    cdef intp_t* small_points
    cdef intp_t* large_points
    cdef intp_t n_small, n_large
    cdef float64_t* small_out
    cdef float64_t* large_out
    cdef intp_t left_points[BOX_POINTS_MAX]
    cdef intp_t right_points[BOX_POINTS_MAX]
    if step.is_leaf:
        first[0] = stored_row(tree, j)
        if first[0] == NULL:
            if own != NULL:
                first[0] = own
            elif step.n_points >= 0:
                points_row(tree.rows_ptr, S, step.points, step.n_points, out_a)
                first[0] = out_a
            else:
                first[0] = node_row(tree, j, out_a)
        exact[0] = False
        return first[0]
    lc = tree.nodes[j].left_child
    rc = tree.nodes[j].right_child
    first[0] = stored_row(tree, lc)
    second[0] = stored_row(tree, rc)
    if first[0] != NULL and second[0] != NULL:
        exact[0] = False
        return first[0] if toward == lc else second[0]
    if step.n_points < 0:
        # No points gathered yet: above the frontier (the node stores its box, so its row),
        # or a small root reached by the leaf-first walk, which gathers nothing (its row is
        # then NULL below and the far child is summed). The child on x's side first: stored,
        # or summed from its points, gathered into the step.
        if toward == lc:
            near, far, far_node = first, second, rc
        else:
            near, far, far_node = second, first, lc
        near_out, far_out = out_a, out_b
        if near[0] == NULL:
            step.n_points = subtree_points(tree, toward, step.points, BOX_POINTS_MAX)
            points_row(tree.rows_ptr, S, step.points, step.n_points, near_out)
            near[0] = near_out
        if far[0] == NULL:
            # The other child: the node's row minus the near child's when every entry is an
            # integer (class counts: the exact difference, so the bits of the sum of its
            # points, without gathering them); else summed from its points.
            stored = stored_row(tree, j)
            if stored == NULL or not _exact_difference(
                    stored, near[0], S, exact[0] and stored == own, far_out):
                node_row(tree, far_node, far_out)
                exact[0] = False
            else:
                exact[0] = True  # (near[0] passed)
            far[0] = far_out
        else:
            exact[0] = False
        return near[0]
    # (neither child stores a row: the node stores none either)
    f = tree.nodes[j].feature
    t = tree.nodes[j].threshold
    for k in range(step.n_points):
        if tree.points_ptr[step.points[k] * D + f] <= t:
            left_points[n_left] = step.points[k]
            n_left += 1
        else:
            right_points[n_right] = step.points[k]
            n_right += 1
    first[0] = out_a
    second[0] = out_b
    if n_left <= n_right:
        small_points, n_small, small_out = left_points, n_left, out_a
        large_points, n_large, large_out = right_points, n_right, out_b
    else:
        small_points, n_small, small_out = right_points, n_right, out_b
        large_points, n_large, large_out = left_points, n_left, out_a
    points_row(tree.rows_ptr, S, small_points, n_small, small_out)
    if own == NULL or not _exact_difference(own, small_out, S, exact[0], large_out):
        points_row(tree.rows_ptr, S, large_points, n_large, large_out)
        exact[0] = False
    else:
        exact[0] = small_out == (first[0] if toward == lc else second[0])
    return first[0] if toward == lc else second[0]
