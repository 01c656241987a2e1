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
from libc.math cimport INFINITY, expm1

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
    intp_t n_points         # -1 while the path's nodes store their boxes, else len(points)
    intp_t points[BOX_POINTS_MAX]  # the stored points below the node (nodes without a box)


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
    cdef intp_t slot = tree.box_slot[step.node]
    if step.boxes != NULL:
        return box_distance(step.boxes + 2 * tree.n_features * step.node, tree.n_features, x)
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
    step.tau_parent = step.tau
    step.reach = step.survival
    _read_node(step, tree, x, lifetime)
