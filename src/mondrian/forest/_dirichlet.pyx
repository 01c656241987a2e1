"""The classifier's predictive under independent Dirichlet leaves (``smoothing="dirichlet"``,
the model of the classification lifetime paths, section 7), integrated over every extension
of each tree to the test point as in section 5."""

from libc.stdlib cimport free, malloc

from mondrian.core._tree cimport MondrianTree, node_row, points_row, stored_row
from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.core._walk cimport WalkStep, read_lifetime, walk_next, walk_start


cdef void _dirichlet_row(MondrianTree tree, const float64_t* x, float64_t alpha,
                         float64_t lifetime, float64_t* rows, float64_t* out) noexcept nogil:
    """Add the tree's predictive at ``x`` under independent Dirichlet leaves to ``out``.

    ``x`` stays in the tree with probability ``s`` (the product over its path of
    ``exp(-eta_j * delta_j)``, section 5.1) and reads its leaf ``(c_k + alpha / K) / (n +
    alpha)``; otherwise it lands in a fresh cell without data, which predicts ``1 / K``. A leaf
    whose stored points carry no label (validation points of a lifetime path) backs off to its
    deepest labelled ancestor. ``rows``: scratch of two statistics rows.
    """
    cdef intp_t K = tree.n_columns, S = tree.value_stride, k
    cdef const intp_t* cols = tree.columns
    cdef const float64_t* val
    cdef const float64_t* read = NULL
    cdef float64_t n
    cdef WalkStep step
    walk_start(&step, tree, x, lifetime)
    while True:
        # The node's row: stored, or summed from the step's points (lean values), into the
        # scratch row that does not hold the deepest labelled row so far.
        val = stored_row(tree, step.node)
        if val == NULL:
            val = rows if read != rows else rows + S
            if step.n_points >= 0:
                points_row(tree.rows_ptr, S, step.points, step.n_points, <float64_t*>val)
            else:
                val = node_row(tree, step.node, <float64_t*>val)
        n = 0.0
        for k in range(K):
            n += val[cols[k]]
        if n > 0.0:
            read = val
        if step.is_leaf or step.survival <= 0.0:
            if step.survival > 0.0:
                _add_dirichlet(tree, read, alpha, step.survival, out)
            _add_dirichlet(tree, NULL, alpha, 1.0 - step.survival, out)
            return
        walk_next(&step, tree, x, lifetime)


cdef inline void _add_dirichlet(MondrianTree tree, const float64_t* val, float64_t alpha,
                                float64_t weight, float64_t* out) noexcept nogil:
    """Add ``weight`` times the Dirichlet posterior mean of the statistics row ``val``
    (uniform if NULL)."""
    cdef intp_t K = tree.n_columns, k
    cdef const intp_t* cols = tree.columns
    cdef float64_t n = 0.0
    if val == NULL:
        for k in range(K):
            out[k] += weight / K
        return
    for k in range(K):
        n += val[cols[k]]
    for k in range(K):
        out[k] += weight * (val[cols[k]] + alpha / K) / (n + alpha)


def predict_proba_dirichlet_trees(list trees, const float64_t[:, ::1] X,
                                  float64_t[:, ::1] out, float64_t alpha, lifetime=None):
    """Add every tree's predictive under independent Dirichlet leaves to ``out``.

    The model of the classification lifetime paths (section 7): a leaf with class counts
    ``c`` predicts ``(c_k + alpha / K) / (n + alpha)``, and the extension of the tree to a test
    point is integrated over as in section 5 (a branched-off point predicts ``1 / K``; a leaf
    without labels backs off to its deepest labelled ancestor).

    Parameters
    ----------
    trees : list of MondrianTree
        Trees whose statistics are class histograms.
    X : ndarray of shape (n_samples, n_features)
        Test points in the scaled feature space.
    out : ndarray of shape (n_samples, n_classes)
        Accumulator; the sum over trees is added to it.
    alpha : float
        Concentration of the symmetric Dirichlet prior of every leaf.
    lifetime : float, default=None
        Predict with the trees pruned at this lifetime.
    """
    cdef MondrianTree tree
    cdef intp_t n = X.shape[0], K = out.shape[1], i
    cdef float64_t lam
    cdef float64_t* rows
    for tree in trees:
        if tree.n_columns != K:
            raise ValueError("the trees' statistics do not match the number of classes")
        if tree.node_count == 0:
            raise ValueError("cannot predict with an empty tree")
        lam = read_lifetime(tree, lifetime)
        with nogil:
            rows = <float64_t*> malloc(max(2 * tree.value_stride, 1) * sizeof(float64_t))
            if rows == NULL:
                with gil:
                    raise MemoryError()
            for i in range(n):
                _dirichlet_row(tree, &X[i, 0], alpha, lam, rows, &out[i, 0])
            free(rows)
