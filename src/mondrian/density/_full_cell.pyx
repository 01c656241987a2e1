"""Density estimation on full-cell Mondrian trees with a Polya-tree Beta prior (section 10).

The trees live in the unit cube ``[0, 1]^D`` (the estimator maps its domain ``B_0`` onto it), or
with feature weights ``w`` in the cell ``[0, w_1] x ... x [0, w_D]`` (:meth:`FullCellTree.
start_cell`): a side of length 0 is never cut and does not count in the volumes.
Unlike every other model of the package, each node's ``bounds`` row holds its *full cell*, not
the bounding box of its data: a cut changes the volumes of both sides even when it separates no
point, and densities need those volumes.

Mass model: at an internal node of depth ``d`` whose cut leaves the volume fractions
``f_1, f_2`` to its children, the share of mass of child ``c`` has the posterior mean
``(A f_c + n_c) / (A + n_1 + n_2)`` with ``A = g (d + 1)^2`` (Beta-Binomial conjugacy). A
leaf's mass is the product of these ratios along its path and its density is mass / volume.
Everything is computed in log space.
"""

from libc.math cimport INFINITY, exp, log
from libc.stdlib cimport free, malloc

from mondrian.core._random cimport RandomState, rng_seed, rng_uniform
from mondrian.core._tree cimport TREE_LEAF, MondrianTree, Node
from mondrian.core._typedefs cimport float64_t, intp_t, uint64_t
from mondrian.core._walk cimport goes_left, is_leaf_at
from mondrian.density._full_cell_builder cimport extend_cells
from mondrian.forest._node_cache cimport NodeTables

import numpy as np


cdef class FullCellTree(MondrianTree):
    """A Mondrian tree on full cells of the unit cube, refined only where there is data.

    A cell holding at least one training point gets its next cut at ``tau_parent + Exp(LD)``
    (``LD``: the sum of its side lengths), along a dimension drawn in proportion to the side
    lengths, at a uniform location on that side; both children are created with their cells.
    A child that holds no point is a leaf that is never refined (``split_time == lifetime``,
    ``n_node_samples == 0``): the prior splits mass in proportion to volume, so refining it
    would not change the estimate. Online extension samples such a cell lazily, from its birth
    time, when a first point lands in it; the result has the law of batch sampling on all the
    points, since the full-cell partition does not depend on the data.

    The constructor is the one of :class:`mondrian.core._tree.MondrianTree`; use
    ``value_stride=0``. Points must lie in the root cell: ``[0, 1]^D``, or the cell given by
    :meth:`start_cell` before the first points.
    """

    # Read by mondrian.core._forget: a forget empties cells instead of shrinking boxes.
    _full_cells = True

    def __cinit__(self, intp_t n_features, intp_t value_stride, float64_t lifetime, *args,
                  **kwargs):
        # At an infinite lifetime the cells around the points would be cut forever.
        if not lifetime < INFINITY:
            raise ValueError(f"a full-cell tree needs a finite lifetime, got {lifetime}")
        self.box_min_samples = 0  # full cells cannot be rebuilt from points: keep every box
        self.builder = extend_cells  # (mondrian.density._full_cell_builder)

    def __setstate__(self, state):
        if isinstance(state, dict) and state.get("box_min_samples", 0) != 0:
            # (the extension writes the cell of every node into its stored box)
            raise ValueError("inconsistent FullCellTree state: a full-cell tree keeps every "
                             "box (box_min_samples=0)")
        MondrianTree.__setstate__(self, state)

    def start_cell(self, upper):
        """Give the empty tree the root cell ``[0, upper_1] x ... x [0, upper_D]``.

        The root becomes a leaf without points, which the first points sample from time 0
        (the lazy path of the tree's builder, :mod:`mondrian.density._full_cell_builder`, so
        the tree has the law of one rooted there). A side of length 0 (a feature weight of 0)
        is never cut: cuts draw their dimension in proportion to the side lengths. Without
        this call the root cell is ``[0, 1]^D``.

        Parameters
        ----------
        upper : array-like of shape (n_features,)
            Finite non-negative side lengths, not all 0.
        """
        cdef intp_t D = self.n_features, d
        sides = np.asarray(upper, dtype=np.float64)
        if sides.shape != (D,):
            raise ValueError(f"the root cell needs {D} side lengths, got shape {sides.shape}")
        if not (np.all(np.isfinite(sides)) and np.all(sides >= 0) and np.any(sides > 0)):
            raise ValueError("the root cell's sides must be finite, non-negative, not all 0")
        if self.node_count != 0:
            raise ValueError("the tree already has its root cell")
        self._new_node()  # node 0: a leaf without points, born at time 0
        for d in range(D):
            self.bounds[d] = 0.0
            self.bounds[D + d] = sides[d]


# ---------------------------------------------------------------------------- kernels


cdef inline float64_t _log_cell_volume(MondrianTree tree, intp_t node) noexcept nogil:
    """Log volume of the cell over its sides of positive length (a side of length 0, from a
    feature weight of 0, is never cut: the estimator spreads the density along it)."""
    cdef intp_t D = tree.n_features, d
    cdef const float64_t* lo = tree.bounds + 2 * D * node
    cdef float64_t out = 0.0
    for d in range(D):
        if lo[D + d] > lo[d]:
            out += log(lo[D + d] - lo[d])
    return out


cdef inline float64_t _log_child_share(MondrianTree tree, intp_t node, bint left,
                                       intp_t depth, float64_t concentration,
                                       intp_t removed) noexcept nogil:
    """Log posterior mean share of mass of one child of the internal ``node``.

    ``removed`` points are taken out of that child's count and of the total (1 for a
    leave-one-out value, 0 otherwise).
    """
    cdef intp_t D = tree.n_features
    cdef Node* nd = &tree.nodes[node]
    cdef intp_t f = nd.feature
    cdef const float64_t* lo = tree.bounds + 2 * D * node
    cdef float64_t low = lo[f], high = lo[D + f]
    cdef float64_t a = concentration * (depth + 1) * (depth + 1)
    cdef float64_t n_left = tree.nodes[nd.left_child].n_node_samples
    cdef float64_t n_right = tree.nodes[nd.right_child].n_node_samples
    cdef float64_t fraction, count
    # Each fraction from its own side's length, so that a thin side keeps its precision.
    if left:
        fraction = (nd.threshold - low) / (high - low)
        count = n_left
    else:
        fraction = (high - nd.threshold) / (high - low)
        count = n_right
    return log((a * fraction + count - removed) / (a + n_left + n_right - removed))


cdef inline void _log_add(float64_t* peak, float64_t* total, float64_t x) noexcept nogil:
    """Add ``exp(x)`` to the running sum ``exp(peak) * total`` without overflow."""
    if x > peak[0]:
        total[0] = total[0] * exp(peak[0] - x) + 1.0
        peak[0] = x
    else:
        total[0] += exp(x - peak[0])


cdef void _add_tree_log_densities(MondrianTree tree, const float64_t* u,
                                  const float64_t* lifetimes, intp_t n_lifetimes,
                                  float64_t concentration, intp_t removed, float64_t* peak,
                                  float64_t* total) noexcept nogil:
    """Add the density at ``u`` of ``tree`` read at each of the increasing ``lifetimes`` to
    the running log-sums ``(peak[k], total[k])``, in one descent.

    The log mass is a prefix sum along the path of ``u``, and the leaf at lifetime ``k`` is
    the first node of the path whose cut is not born before it. With ``removed = 1``, ``u``
    must be a training point held by the tree: the values are its leave-one-out densities on
    the same partition.
    """
    cdef intp_t j = 0, depth = 0, k = 0
    cdef float64_t log_mass = 0.0
    cdef bint left
    while k < n_lifetimes:
        if is_leaf_at(tree, j, lifetimes[k]):
            _log_add(&peak[k], &total[k], log_mass - _log_cell_volume(tree, j))
            k += 1
            continue
        left = goes_left(tree, j, u)
        log_mass += _log_child_share(tree, j, left, depth, concentration, removed)
        j = tree.nodes[j].left_child if left else tree.nodes[j].right_child
        depth += 1


cdef _check_trees(list trees, intp_t n_features):
    cdef MondrianTree tree
    for tree in trees:
        if not isinstance(tree, FullCellTree):
            raise TypeError("density kernels need FullCellTree instances")
        if tree.node_count == 0:
            raise ValueError("the tree is empty")
        if tree.n_features != n_features:
            raise ValueError(f"points have {n_features} features, the trees expect "
                             f"{tree.n_features}")


cdef _log_sum_trees(list trees, const float64_t[:, ::1] U, const float64_t[::1] lifetimes,
                    float64_t concentration, float64_t[:, ::1] out, intp_t removed):
    """``out[i, k] = log(sum over trees of the density at U[i] read at lifetimes[k])``."""
    cdef intp_t n = U.shape[0], K = lifetimes.shape[0], i, k
    cdef MondrianTree tree
    _check_trees(trees, U.shape[1])
    if out.shape[0] != n or out.shape[1] != K:
        raise ValueError("out must have shape (n_samples, n_lifetimes)")
    for k in range(1, K):
        if not lifetimes[k - 1] <= lifetimes[k]:
            raise ValueError("lifetimes must be sorted in increasing order")
    peak_array = np.full((n, K), -INFINITY)
    total_array = np.zeros((n, K))
    cdef float64_t[:, ::1] peak = peak_array
    cdef float64_t[:, ::1] total = total_array
    if n == 0 or K == 0:
        return
    for tree in trees:
        with nogil:
            for i in range(n):
                _add_tree_log_densities(tree, &U[i, 0], &lifetimes[0], K, concentration,
                                        removed, &peak[i, 0], &total[i, 0])
    with nogil:
        for i in range(n):
            for k in range(K):
                out[i, k] = peak[i, k] + log(total[i, k])


cdef _log_sum_one_lifetime(list trees, const float64_t[:, ::1] U, float64_t lifetime,
                           float64_t concentration, float64_t[::1] out, intp_t removed):
    if out.shape[0] != U.shape[0]:
        raise ValueError("out must have one entry per point")
    cdef float64_t[:, ::1] column = np.empty((U.shape[0], 1))
    cdef intp_t i
    _log_sum_trees(trees, U, np.array([lifetime]), concentration, column, removed)
    for i in range(U.shape[0]):
        out[i] = column[i, 0]


def log_density_trees(list trees, const float64_t[:, ::1] U, float64_t lifetime,
                      float64_t concentration, float64_t[::1] out):
    """Log of the sum over ``trees`` of their densities at every row of ``U``.

    The trees are combined by a running log-sum-exp, so no density underflows or overflows.

    Parameters
    ----------
    trees : list of FullCellTree
    U : ndarray of shape (n_samples, n_features)
        Points in the unit cube (the trees' coordinates).
    lifetime : float
        Read the trees pruned at this lifetime (cuts born at or after it are ignored).
    concentration : float
        Hyperparameter ``g`` of the Beta prior (``A = g (depth + 1)^2``).
    out : ndarray of shape (n_samples,)
        OUT: ``log(sum_m p_m(u))``; ``-inf`` when ``trees`` is empty.
    """
    _log_sum_one_lifetime(trees, U, lifetime, concentration, out, 0)


cdef inline bint _fill_node(MondrianTree tree, intp_t j, intp_t depth, float64_t lifetime,
                            float64_t concentration, float64_t* value) noexcept nogil:
    """From ``value[j]``, node ``j``'s log mass: its log density if it is a leaf at
    ``lifetime`` (True: no children to visit), else its children's log masses."""
    cdef intp_t left, right
    if is_leaf_at(tree, j, lifetime):
        value[j] = value[j] - _log_cell_volume(tree, j)
        return True
    left = tree.nodes[j].left_child
    right = tree.nodes[j].right_child
    value[left] = value[j] + _log_child_share(tree, j, True, depth, concentration, 0)
    value[right] = value[j] + _log_child_share(tree, j, False, depth, concentration, 0)
    return False


cdef bint _fill_node_log_densities(MondrianTree tree, float64_t lifetime,
                                   float64_t concentration, float64_t* value,
                                   intp_t* depth) noexcept nogil:
    """``value[j]`` for every leaf ``j`` of the tree read at ``lifetime``: the log density
    ``_add_tree_log_densities`` adds there (the log mass, the prefix sum of the shares from
    the root in the order of a descent, minus the log volume), the nodes in index order (one
    pass through memory); ``depth``: node_count integers of scratch. False (nothing filled)
    unless every parent comes before its children, as the trees create them."""
    cdef intp_t n = tree.node_count, j
    for j in range(1, n):
        if tree.nodes[j].parent >= j:
            return False
    value[0] = 0.0
    depth[0] = 0
    for j in range(1, n):
        depth[j] = -1
    for j in range(n):
        if depth[j] >= 0 and not _fill_node(tree, j, depth[j], lifetime, concentration, value):
            depth[tree.nodes[j].left_child] = depth[j] + 1
            depth[tree.nodes[j].right_child] = depth[j] + 1
    return True


cdef object _kept_log_densities(object cache, MondrianTree tree, float64_t lifetime,
                                float64_t concentration):
    """The cached ``_fill_node_log_densities`` of ``tree`` at ``lifetime`` and
    ``concentration`` (a ``NodeTables``; built now if the cache has room), or None (no
    cache, no room, or a tree whose nodes are not in creation order)."""
    cdef NodeTables kept
    cdef intp_t* stack
    if cache is None:
        return None
    key = ("density", lifetime, concentration)
    kept, fresh = cache.entry(tree, key, tree.node_count, 0)
    if not fresh:
        return kept
    cdef bint filled
    stack = <intp_t*> malloc(tree.node_count * sizeof(intp_t))
    if stack == NULL:
        cache.release(kept.nbytes)
        raise MemoryError()
    with nogil:
        filled = _fill_node_log_densities(tree, lifetime, concentration, kept.tables, stack)
    free(stack)
    if not filled:  # (not in creation order, e.g. after a forget: for the whole generation)
        cache.refuse(tree, key, kept.nbytes)
        return None
    cache.store(tree, key, kept)
    return kept


cdef enum:
    # Rows whose descents of one tree go side by side (their node loads overlap).
    DESCENT_ROWS = 8


cdef inline void _add_kept_log_densities(MondrianTree tree, const float64_t* value,
                                         const float64_t* U, intp_t step, intp_t rows,
                                         float64_t lifetime, float64_t* peak,
                                         float64_t* total) noexcept nogil:
    """``_add_tree_log_densities`` at one lifetime (``removed`` 0) of ``rows`` rows (row
    ``r`` at ``U + r step``, its sums at ``peak[r]``, ``total[r]``) reading the leaf values
    ``value`` (``_fill_node_log_densities``): the descents alone, a step of every row at a
    time (each step's node loads requested before any is read), the same bits."""
    cdef intp_t node[DESCENT_ROWS]
    cdef intp_t r, j, remaining = rows
    for r in range(rows):
        node[r] = 0
    while remaining > 0:
        remaining = 0
        for r in range(rows):
            j = node[r]
            if j < 0:
                continue
            if is_leaf_at(tree, j, lifetime):
                _log_add(&peak[r], &total[r], value[j])
                node[r] = -1
                continue
            remaining += 1
            node[r] = (tree.nodes[j].left_child if goes_left(tree, j, U + r * step)
                       else tree.nodes[j].right_child)


def log_density_trees_cached(list trees, const float64_t[:, ::1] U, float64_t lifetime,
                             float64_t concentration, float64_t[::1] out, cache):
    """:func:`log_density_trees` (the same bits) keeping each tree's leaf values (the log
    density of every leaf's cell at ``lifetime``: 8 bytes per node, filled once per lifetime
    and concentration) in ``cache`` (a :class:`mondrian.forest._node_cache.PredictCache` or
    None), so that the next calls only descend the trees. A call of one row keeps nothing."""
    cdef intp_t n = U.shape[0], i
    cdef MondrianTree tree
    cdef const float64_t* value
    if cache is None or n <= 1:
        log_density_trees(trees, U, lifetime, concentration, out)
        return
    _check_trees(trees, U.shape[1])
    if out.shape[0] != n:
        raise ValueError("out must have one entry per point")
    peak_array = np.full(n, -INFINITY)
    total_array = np.zeros(n)
    cdef float64_t[::1] peak = peak_array
    cdef float64_t[::1] total = total_array
    for tree in trees:
        found = _kept_log_densities(cache, tree, lifetime, concentration)
        with nogil:
            if found is None:
                for i in range(n):
                    _add_tree_log_densities(tree, &U[i, 0], &lifetime, 1, concentration, 0,
                                            &peak[i], &total[i])
            else:
                value = (<NodeTables> found).tables
                i = 0
                while i < n:
                    _add_kept_log_densities(tree, value, &U[i, 0], U.shape[1],
                                            min(<intp_t>DESCENT_ROWS, n - i), lifetime,
                                            &peak[i], &total[i])
                    i += DESCENT_ROWS
    with nogil:
        for i in range(n):
            out[i] = peak[i] + log(total[i])


def _loo_log_density_trees(list trees, const float64_t[:, ::1] U, float64_t lifetime,
                           float64_t concentration, float64_t[::1] out):
    """Log of the sum over ``trees`` of the leave-one-out densities of training points.

    Every row of ``U`` must be a point held by every tree. Its leave-one-out density in a tree
    is ``P^(-i) / V`` on the tree's partition, where ``P^(-i)`` uses the ratio
    ``(A f_c + n_c - 1) / (A + n_1 + n_2 - 1)`` at each cut for the child holding the point
    (section 7). The lifetime path reuses this function.

    Parameters
    ----------
    trees : list of FullCellTree
    U : ndarray of shape (n_samples, n_features)
        Training points, in the unit cube.
    lifetime : float
        Read the trees pruned at this lifetime.
    concentration : float
        Hyperparameter ``g`` of the Beta prior.
    out : ndarray of shape (n_samples,)
        OUT: ``log(sum_m p_m^(-i)(u_i))``.
    """
    _log_sum_one_lifetime(trees, U, lifetime, concentration, out, 1)


def leaf_log_masses(MondrianTree tree, float64_t lifetime, float64_t concentration):
    """Leaves of the tree read at ``lifetime``, with their log masses and log volumes.

    Parameters
    ----------
    tree : FullCellTree
    lifetime : float
    concentration : float
        Hyperparameter ``g`` of the Beta prior.

    Returns
    -------
    leaves : ndarray of intp
        Node ids of the leaves, in depth-first order (left before right).
    log_mass : ndarray of float64
        Log posterior mean mass of each leaf (they sum to one).
    log_volume : ndarray of float64
        Log volume of each leaf's cell in the unit cube.
    """
    _check_trees([tree], tree.n_features)
    cdef intp_t n_nodes = tree.node_count, top = 1, n_leaves = 0, j
    leaves_array = np.empty(n_nodes, dtype=np.intp)
    mass_array = np.empty(n_nodes)
    volume_array = np.empty(n_nodes)
    cdef intp_t[::1] leaves = leaves_array
    cdef float64_t[::1] log_mass = mass_array
    cdef float64_t[::1] log_volume = volume_array
    cdef intp_t[::1] stack = np.empty(n_nodes, dtype=np.intp)
    cdef intp_t[::1] depth = np.zeros(n_nodes, dtype=np.intp)
    cdef float64_t[::1] node_mass = np.zeros(n_nodes)
    cdef Node* nd
    with nogil:
        stack[0] = 0
        while top > 0:
            top -= 1
            j = stack[top]
            if is_leaf_at(tree, j, lifetime):
                leaves[n_leaves] = j
                log_mass[n_leaves] = node_mass[j]
                log_volume[n_leaves] = _log_cell_volume(tree, j)
                n_leaves += 1
                continue
            nd = &tree.nodes[j]
            depth[nd.left_child] = depth[j] + 1
            depth[nd.right_child] = depth[j] + 1
            node_mass[nd.left_child] = node_mass[j] + _log_child_share(
                tree, j, True, depth[j], concentration, 0)
            node_mass[nd.right_child] = node_mass[j] + _log_child_share(
                tree, j, False, depth[j], concentration, 0)
            stack[top] = nd.right_child
            stack[top + 1] = nd.left_child
            top += 2
    return leaves_array[:n_leaves], mass_array[:n_leaves], volume_array[:n_leaves]


def sample_trees(list trees, const intp_t[::1] counts, const uint64_t[::1] seeds,
                 float64_t lifetime, float64_t concentration, float64_t[:, ::1] out):
    """Draw points from the trees' densities, ``counts[m]`` of them from tree ``m``.

    A draw descends from the root, choosing each child with its posterior mean share of mass,
    then takes a uniform point of the leaf's cell.

    Parameters
    ----------
    trees : list of FullCellTree
    counts : ndarray of intp, shape (n_trees,)
        Number of draws from each tree.
    seeds : ndarray of uint64, shape (n_trees,)
        Seeds of one random stream per tree.
    lifetime : float
        Read the trees pruned at this lifetime.
    concentration : float
        Hyperparameter ``g`` of the Beta prior.
    out : ndarray of shape (sum(counts), n_features)
        OUT: the draws in the unit cube, tree by tree.
    """
    cdef intp_t n_trees = len(trees), m, _draw, j, d, depth, row = 0, D, n_draws = 0
    cdef MondrianTree tree
    cdef RandomState state
    cdef const float64_t* lo
    if counts.shape[0] != n_trees or seeds.shape[0] != n_trees:
        raise ValueError("counts and seeds need one entry per tree")
    if n_trees == 0:
        return
    _check_trees(trees, out.shape[1])
    for m in range(n_trees):
        n_draws += counts[m]
    if n_draws != out.shape[0]:
        raise ValueError("out must have sum(counts) rows")
    D = out.shape[1]
    for m in range(n_trees):
        tree = trees[m]
        with nogil:
            rng_seed(&state, seeds[m])
            for _draw in range(counts[m]):
                j = 0
                depth = 0
                while not is_leaf_at(tree, j, lifetime):
                    if log(rng_uniform(&state)) < _log_child_share(
                            tree, j, True, depth, concentration, 0):
                        j = tree.nodes[j].left_child
                    else:
                        j = tree.nodes[j].right_child
                    depth += 1
                lo = tree.bounds + 2 * D * j
                for d in range(D):
                    out[row, d] = lo[d] + rng_uniform(&state) * (lo[D + d] - lo[d])
                row += 1


def path_edges(MondrianTree tree, float64_t concentration, bint leave_one_out):
    """Change of a point's log density when it moves from a node into each child.

    ``edge[c] = log(share of the parent's posterior mass) - log(share of its volume)`` for
    every non-root node ``c`` (0 at the root): the lifetime path of the density adds it when
    the parent's cut is born. With ``leave_one_out`` the moving point's own count is removed
    from the Beta update (it must be a training point held by the child).

    Returns
    -------
    ndarray of shape (node_count,)
    """
    out = np.zeros(tree.node_count)
    depths = tree.node_depths()
    cdef float64_t[::1] edge = out
    cdef const intp_t[::1] depth = depths
    cdef intp_t j, D = tree.n_features, f
    cdef Node* nd
    cdef const float64_t* lo
    cdef float64_t width
    with nogil:
        for j in range(tree.node_count):
            nd = &tree.nodes[j]
            if nd.left_child == TREE_LEAF:
                continue
            f = nd.feature
            lo = tree.bounds + 2 * D * j
            width = lo[D + f] - lo[f]
            edge[nd.left_child] = (
                _log_child_share(tree, j, True, depth[j], concentration, leave_one_out)
                - log((nd.threshold - lo[f]) / width))
            edge[nd.right_child] = (
                _log_child_share(tree, j, False, depth[j], concentration, leave_one_out)
                - log((lo[D + f] - nd.threshold) / width))
    return out
