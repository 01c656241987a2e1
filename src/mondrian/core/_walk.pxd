# The walk of a point down a Mondrian tree read at a lifetime: the one mechanism behind "the
# leaf at lifetime lambda" and behind the branch-off quantities of the extension of the tree to
# a test point (section 5 of the algorithm reference). Every model reads its path through here:
#
#     cdef WalkStep step
#     walk_start(&step, tree, x, lifetime)
#     while True:
#         ... use step.eta, step.delta, step.p, step.reach, step.survival ...
#         if step.is_leaf:
#             break
#         walk_next(&step, tree, x, lifetime)
#
# The tree pruned at ``lifetime`` keeps the cuts born before it; a node whose cut is born at or
# after it is a leaf of the pruned tree, with node time ``lifetime``.
#
# Lean boxes: a node holding fewer than ``tree.box_min_samples`` points stores no box. The
# first such node on the path has its subtree's points (fewer than that) gathered into the
# step; each later step keeps those on x's side of the cut (stored points route by the same
# thresholds) and eta is computed from their min/max: about 2 K D reads per row, no write
# to the tree, so concurrent readers only need their own WalkStep.
#
# Leaf first (``walk_etas``, then ``walk_start_path``): a node's box lies in its parent's, so
# eta never decreases down a path, and a node with eta == 0 adds nothing (p = 0, survival =
# reach exactly). The predictors descend to the leaf reading only the cuts, compute eta from the
# leaf upward until it is 0 (2.5 nodes of a 24-node path on letter, 6 of 18 on usps), then walk
# the path as above with those etas: the same quantities, bit for bit, for a fraction of the
# box reads. A call of many rows finds those etas node by node instead (``_batch_walk.pyx``:
# each box built and read once per batch of rows) and starts each row's walk from them.
from libc.math cimport INFINITY, expm1
from libc.stdlib cimport free, malloc

from mondrian.core._tree cimport (
    TREE_LEAF,
    MondrianTree,
    Node,
    box_distance,
    check_points,
    points_distance,
    subtree_points,
)
from mondrian.core._typedefs cimport BOX_POINTS_MAX, float64_t, intp_t


cdef struct WalkStep:
    intp_t node             # node reached by x
    intp_t sibling          # other child of the node's parent (TREE_LEAF at the root)
    bint is_leaf            # the node is a leaf of the tree pruned at the lifetime
    float64_t tau_parent    # birth time of the parent's cut (0 at the root)
    float64_t tau           # node time: birth time of its cut, or the lifetime at a leaf
    float64_t delta         # tau - tau_parent: length of the edge above the node
    float64_t eta           # L1 distance from x to the node's data box (branch-off rate)
    float64_t p             # P(x branches off on the edge above the node | x got to the edge)
    float64_t reach         # P(x got to the edge): product of (1 - p) over the ancestors
    float64_t survival      # reach * (1 - p): P(x reaches the node itself)
    float64_t exposure      # sum of eta * delta over the path, this edge included
    const float64_t* boxes  # every node's box (MondrianTree._all_boxes), or NULL: the tree's
    const float64_t* etas   # eta of every path node from depth eta_top down (walk_etas), or NULL
    intp_t eta_top          # nodes above this depth have eta == 0
    intp_t depth            # depth of the node (0 at the root)
    intp_t n_points         # -1 while the path's nodes store their boxes, else len(points)
    intp_t points[BOX_POINTS_MAX]  # the stored points below the node (nodes without a box)


cdef enum:
    # Deepest path that walk_etas records (deeper ones are walked the plain way).
    WALK_DEPTH_MAX = 192


cdef inline int reserve(void** buf, size_t* capacity, size_t n_bytes) except -1 nogil:
    """Make ``buf[0]`` hold at least ``n_bytes`` (its content is not kept): a reader of many
    trees reuses one scratch for all of them (one allocation per call, not per tree).
    ``free(buf[0])`` when done."""
    if n_bytes <= capacity[0]:
        return 0
    free(buf[0])
    capacity[0] = 0
    buf[0] = malloc(n_bytes)
    if buf[0] == NULL:
        with gil:
            raise MemoryError()
    capacity[0] = n_bytes
    return 0


cdef inline float64_t read_lifetime(MondrianTree tree, object lifetime) except? -1.0:
    """The lifetime at which a kernel reads ``tree``: its own (``None``), or a smaller one.
    Raises if the tree cannot rebuild the boxes it does not store (its points not attached)."""
    check_points(tree)
    return tree.lifetime if lifetime is None else min(float(lifetime), tree.lifetime)


cdef inline bint is_leaf_at(MondrianTree tree, intp_t j, float64_t lifetime) noexcept nogil:
    """Whether node ``j`` is a leaf of the tree pruned at ``lifetime``."""
    return tree.nodes[j].left_child == TREE_LEAF or tree.nodes[j].split_time >= lifetime


cdef inline float64_t node_time(MondrianTree tree, intp_t j,
                                float64_t lifetime) noexcept nogil:
    """Time of node ``j`` in the tree pruned at ``lifetime``: its cut's birth, or the lifetime."""
    return lifetime if is_leaf_at(tree, j, lifetime) else tree.nodes[j].split_time


cdef inline bint goes_left(MondrianTree tree, intp_t j, const float64_t* x) noexcept nogil:
    """Whether ``x`` lies on the left side (``x[feature] <= threshold``) of the cut of ``j``."""
    return x[tree.nodes[j].feature] <= tree.nodes[j].threshold


cdef inline intp_t child_toward(MondrianTree tree, intp_t j, const float64_t* x) noexcept nogil:
    """Child of the internal node ``j`` on the side of ``x``."""
    return tree.nodes[j].left_child if goes_left(tree, j, x) else tree.nodes[j].right_child


cdef inline intp_t leaf_at(MondrianTree tree, const float64_t* x,
                           float64_t lifetime) noexcept nogil:
    """Leaf holding ``x`` in the tree pruned at ``lifetime``."""
    cdef intp_t j = 0
    while not is_leaf_at(tree, j, lifetime):
        j = child_toward(tree, j, x)
    return j


cdef inline float64_t node_distance(WalkStep* step, MondrianTree tree,
                                    const float64_t* x) noexcept nogil:
    """eta of ``step.node``: from its stored box, or from the points below it (gathered at
    the first node of the path without a box, narrowed by ``walk_next`` since)."""
    cdef intp_t slot
    if step.etas != NULL:
        return step.etas[step.depth] if step.depth >= step.eta_top else 0.0
    if step.boxes != NULL:
        return box_distance(step.boxes + 2 * tree.n_features * step.node, tree.n_features, x)
    # (read here, not above: a walk given its etas or every box never waits on the slots)
    slot = tree.box_slot[step.node]
    if slot >= 0:
        return box_distance(tree.bounds + 2 * tree.n_features * slot, tree.n_features, x)
    if step.n_points < 0:
        step.n_points = subtree_points(tree, step.node, step.points, BOX_POINTS_MAX)
    return points_distance(tree.points_ptr, tree.n_features, step.points, step.n_points, x)


cdef inline void _read_node(WalkStep* step, MondrianTree tree, const float64_t* x,
                            float64_t lifetime) noexcept nogil:
    """Fill the quantities of ``step.node`` from ``tau_parent``, ``reach`` and ``exposure``."""
    step.is_leaf = is_leaf_at(tree, step.node, lifetime)
    step.tau = lifetime if step.is_leaf else tree.nodes[step.node].split_time
    step.delta = step.tau - step.tau_parent
    step.eta = node_distance(step, tree, x)
    step.p = 0.0
    # eta == 0 (x inside the box) or delta == 0 (a leaf at the parent's time): no cut can
    # separate x; the test also keeps 0 * inf out of the sums.
    if step.eta > 0.0 and step.delta > 0.0:
        step.p = 1.0 if step.delta == INFINITY else -expm1(-step.eta * step.delta)
        step.exposure += step.eta * step.delta
    step.survival = step.reach * (1.0 - step.p)


cdef inline void walk_start(WalkStep* step, MondrianTree tree, const float64_t* x,
                            float64_t lifetime) noexcept nogil:
    """Put ``step`` at the root (the tree must not be empty)."""
    walk_start_boxes(step, tree, x, lifetime, NULL)


cdef inline void walk_start_boxes(WalkStep* step, MondrianTree tree, const float64_t* x,
                                  float64_t lifetime, const float64_t* boxes) noexcept nogil:
    """:func:`walk_start` reading every node's box from ``boxes`` (``node_count`` rows of
    ``2 D``, filled by ``MondrianTree._all_boxes`` in the reader's own scratch) when it is not
    NULL: a reader of many rows rebuilds a lean tree's boxes once, then walks as on a tree
    that stores them all (the same bits)."""
    step.boxes = boxes
    step.etas = NULL
    step.depth = 0
    step.node = 0
    step.sibling = TREE_LEAF
    step.tau_parent = 0.0
    step.reach = 1.0
    step.exposure = 0.0
    step.n_points = -1
    _read_node(step, tree, x, lifetime)


cdef inline void walk_next(WalkStep* step, MondrianTree tree, const float64_t* x,
                           float64_t lifetime) noexcept nogil:
    """Move ``step`` to the child on the side of ``x`` (``step`` must not be a leaf)."""
    cdef const Node* nd = &tree.nodes[step.node]
    cdef bint left = x[nd.feature] <= nd.threshold
    cdef intp_t k, kept = 0, D = tree.n_features
    if left:
        step.node = nd.left_child
        step.sibling = nd.right_child
    else:
        step.node = nd.right_child
        step.sibling = nd.left_child
    if step.n_points >= 0:
        # Keep the gathered points that the cut sends to x's side: those below the child.
        for k in range(step.n_points):
            if (tree.points_ptr[step.points[k] * D + nd.feature] <= nd.threshold) == left:
                step.points[kept] = step.points[k]
                kept += 1
        step.n_points = kept
    step.depth += 1
    step.tau_parent = step.tau
    step.reach = step.survival
    _read_node(step, tree, x, lifetime)


cdef inline void include_subtree(MondrianTree tree, intp_t node, float64_t* box) noexcept nogil:
    """Grow ``box`` (``2 D``: lower row, then upper) to hold the stored points below ``node``,
    a node holding fewer than ``BOX_POINTS_MAX``: the min/max of the same points as
    ``points_box``, so the same values whatever the order they come in."""
    cdef intp_t points[BOX_POINTS_MAX]
    cdef intp_t D = tree.n_features, n, k, d
    cdef const float64_t* row
    cdef float64_t* hi = box + D
    cdef float64_t v
    n = subtree_points(tree, node, points, BOX_POINTS_MAX)
    for k in range(n):
        row = tree.points_ptr + points[k] * D
        for d in range(D):
            v = row[d]
            box[d] = v if v < box[d] else box[d]
            hi[d] = v if v > hi[d] else hi[d]


cdef inline intp_t sibling_of(MondrianTree tree, intp_t j) noexcept nogil:
    """The other child of the parent of ``j`` (not the root)."""
    cdef intp_t parent = tree.nodes[j].parent
    if tree.nodes[parent].left_child == j:
        return tree.nodes[parent].right_child
    return tree.nodes[parent].left_child


cdef inline void include_box(float64_t* box, const float64_t* other, intp_t D) noexcept nogil:
    """Grow ``box`` to hold the box ``other`` (both ``2 D``)."""
    cdef intp_t d
    for d in range(D):
        box[d] = other[d] if other[d] < box[d] else box[d]
        box[D + d] = other[D + d] if other[D + d] > box[D + d] else box[D + d]


cdef inline intp_t walk_down(MondrianTree tree, const float64_t* x, float64_t lifetime,
                             intp_t* path) noexcept nogil:
    """Write the nodes of the path of ``x`` to its leaf to ``path`` (root first, at most
    ``WALK_DEPTH_MAX``) reading only the cuts; return their number, or 0 when deeper."""
    cdef intp_t n = 0, j = 0
    while True:
        if n == WALK_DEPTH_MAX:
            return 0
        path[n] = j
        n += 1
        if is_leaf_at(tree, j, lifetime):
            return n
        j = child_toward(tree, j, x)


cdef inline intp_t walk_etas(MondrianTree tree, const float64_t* x, float64_t lifetime,
                             const float64_t* boxes, float64_t* box, intp_t* path,
                             float64_t* etas, intp_t* top) noexcept nogil:
    """Descend to the leaf of ``x`` reading only the cuts, writing the path's nodes to
    ``path`` (root first; both buffers hold ``WALK_DEPTH_MAX``), then eta of its nodes from
    the leaf upward into ``etas`` until one is 0 or the root is reached; ``top[0]`` is the
    depth of the last one computed (every node above it has eta == 0, its box holding that
    node's). Returns the path's length, or 0 when it is deeper than ``WALK_DEPTH_MAX``.

    A node's box is read from ``boxes`` (every node's, ``MondrianTree._all_boxes``) unless
    NULL, else its stored one, else (a lean tree's small node) it is the box of its points,
    grown in ``box`` (``2 D`` scratch) on the way up from the child's box and the sibling's
    points: the min/max of the same points as ``node_distance``'s, hence the same eta.
    """
    cdef intp_t D = tree.n_features, n = walk_down(tree, x, lifetime, path), j, i, d, sib
    cdef bint grown = False  # box holds the box of path[i + 1]
    if n == 0:
        return 0
    i = n - 1
    while True:
        j = path[i]
        if boxes != NULL:
            etas[i] = box_distance(boxes + 2 * D * j, D, x)
        elif tree.box_slot[j] >= 0:
            etas[i] = box_distance(tree.bounds + 2 * D * tree.box_slot[j], D, x)
            grown = False
        else:
            if grown:  # the child's points (its box) plus its sibling's
                sib = sibling_of(tree, path[i + 1])
                if tree.box_slot[sib] >= 0:
                    include_box(box, tree.bounds + 2 * D * tree.box_slot[sib], D)
                else:
                    include_subtree(tree, sib, box)
            else:
                for d in range(D):
                    box[d] = INFINITY
                    box[D + d] = -INFINITY
                include_subtree(tree, j, box)
            grown = True
            etas[i] = box_distance(box, D, x)
        if etas[i] == 0.0 or i == 0:
            break
        i -= 1
    top[0] = i
    return n


cdef inline void walk_start_path(WalkStep* step, MondrianTree tree, const float64_t* x,
                                 float64_t lifetime, const intp_t* path,
                                 const float64_t* etas, intp_t top,
                                 intp_t start) noexcept nogil:
    """Put ``step`` at depth ``start`` (at most ``top``) of the path found by
    :func:`walk_etas`, reading its etas from then on. Every node above ``top`` has p == 0,
    so the walk arrives there with reach 1 and exposure 0, exactly: starting at ``top`` skips
    no term; starting at the root (0) also gives the nodes above it."""
    cdef intp_t parent
    step.boxes = NULL
    step.etas = etas
    step.eta_top = top
    step.depth = start
    step.node = path[start]
    step.sibling = TREE_LEAF
    step.tau_parent = 0.0
    if start > 0:
        parent = path[start - 1]
        step.sibling = (tree.nodes[parent].right_child if tree.nodes[parent].left_child
                        == step.node else tree.nodes[parent].left_child)
        step.tau_parent = tree.nodes[parent].split_time
    step.reach = 1.0
    step.exposure = 0.0
    step.n_points = -1
    _read_node(step, tree, x, lifetime)
