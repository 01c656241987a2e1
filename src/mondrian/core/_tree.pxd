# The Mondrian tree core: a packed node array with side buffers, shared by every model.
from mondrian.core._random cimport RandomState, rng_uniform_open, rng_weighted
from mondrian.core._typedefs cimport float64_t, intp_t

cdef enum:
    # Sentinels of the node array, as in scikit-learn's trees.
    TREE_LEAF = -1
    TREE_UNDEFINED = -2

cdef struct Node:
    intp_t parent           # id of the parent node, TREE_LEAF (-1) for the root
    intp_t left_child       # id of the left child (points with x[feature] <= threshold), or -1
    intp_t right_child      # id of the right child, or -1
    intp_t feature          # split dimension, TREE_UNDEFINED (-2) for leaves
    float64_t threshold     # split location, TREE_UNDEFINED for leaves
    float64_t split_time    # tau: birth time of the cut; the lifetime for leaves (may be +inf)
    intp_t n_node_samples   # number of training points below the node
    intp_t first_sample     # leaves: head of the list of stored points in the leaf, else -1
    intp_t paused           # 1 for a paused leaf (regrows once its pause rule stops holding)


cdef struct StackRecord:
    intp_t node             # node to grow or extend
    intp_t start            # range [start, end) of the index buffer holding its points
    intp_t end
    float64_t tau_parent    # birth time of the node's parent cut (0 for the root)


cdef class MondrianTree:
    # Hyperparameters fixed at construction.
    cdef readonly intp_t n_features         # number of input features
    cdef readonly intp_t value_stride       # width of the per-node statistics row (stored)
    # The statistics columns the models read, in their order: read column k is stored column
    # columns[k], for k < n_columns <= value_stride (a classifier keeps its classes in arrival
    # order with spare zero columns, so that a new class rarely rewrites the rows; readers
    # see them in the sorted order of classes_). Identity over value_stride by default.
    cdef readonly intp_t n_columns
    cdef intp_t* columns
    cdef intp_t columns_capacity
    cdef readonly float64_t lifetime        # lambda, possibly +inf
    cdef readonly intp_t min_samples_split  # leaves with fewer points pause
    cdef readonly bint pause_pure           # pause leaves whose statistics have one non-zero entry
    # What min_samples_split counts: 0 the points, k > 0 the sum of value[:k], -1 of the whole row
    # (weighted counts, for sample_weight).
    cdef public intp_t count_columns

    # Storage: node i owns nodes[i], bounds[2*D*i : 2*D*(i+1)] and value[S*i : S*(i+1)].
    cdef Node* nodes                        # (capacity,) packed node structs
    cdef float64_t* bounds                  # (capacity, 2, n_features) lower row then upper row
    cdef float64_t* value                   # (capacity, value_stride) summed contribution rows
    cdef readonly intp_t node_count         # nodes in use; the root is node 0
    cdef readonly intp_t capacity           # allocated nodes

    # Leaf membership of stored points: sample_next[i] is the next stored point in i's leaf.
    cdef intp_t* sample_next
    cdef readonly intp_t sample_capacity    # length of sample_next
    cdef readonly intp_t n_samples_seen     # 1 + largest store index added to the tree

    cdef RandomState rng                    # this tree's random stream

    # Scratch buffers, reused between calls: one explicit stack for batch growth, one for
    # online extension (extension can start a growth), and 3 * n_features floats.
    cdef StackRecord* grow_stack
    cdef intp_t grow_stack_capacity
    cdef StackRecord* extend_stack
    cdef intp_t extend_stack_capacity
    cdef float64_t* scratch

    # Undo log of one online update (begin_undo / rollback / commit): the state at begin, and
    # the old contents of every pre-existing node and leaf-list entry before it is written.
    cdef bint undo_on
    cdef intp_t undo_node_count, undo_samples_seen
    cdef RandomState undo_rng
    cdef intp_t undo_n, undo_cap, undo_vcap  # node entries: count, capacity, value floats
    cdef intp_t* undo_ids
    cdef Node* undo_nodes
    cdef float64_t* undo_bounds
    cdef float64_t* undo_values
    cdef intp_t undo_sn, undo_scap           # leaf-list entries: (index, old next) pairs
    cdef intp_t* undo_samples
    cdef float64_t* undo_old_value           # statistics buffer before set_value_columns
    cdef intp_t undo_old_stride, undo_old_capacity
    cdef bint undo_widened
    cdef intp_t* undo_old_columns            # read columns before set_value_columns / order
    cdef intp_t undo_old_n_columns, undo_old_columns_capacity
    cdef bint undo_reordered

    cdef int _resize(self, intp_t capacity) except -1 nogil
    cdef int _ensure_samples(self, intp_t n) except -1 nogil
    cdef int _ensure_indices(self, const intp_t* idx, intp_t n) except -1 nogil
    cdef intp_t _new_node(self) except -1 nogil
    cdef int _log_node(self, intp_t node) except -1 nogil
    cdef int _log_sample(self, intp_t i) except -1 nogil
    cdef void _free_undo(self) noexcept nogil
    cdef int _save_columns(self) except -1
    cdef int _set_columns(self, const intp_t* columns, intp_t n) except -1
    cdef bint _should_pause(self, intp_t node) noexcept nogil
    cdef int _prepend_to_leaf(self, intp_t node, const intp_t* idx, intp_t start,
                              intp_t end) except -1 nogil
    cdef void _reset_leaf(self, intp_t node, intp_t n_samples) noexcept nogil
    cdef intp_t _split(self, intp_t node, intp_t feature, float64_t threshold,
                       float64_t split_time) except -1 nogil
    cdef intp_t _push_children(self, intp_t top, intp_t left, intp_t start, intp_t mid,
                               intp_t end, float64_t split_time) except -1 nogil
    cdef intp_t _descend(self, intp_t top, intp_t node, intp_t start, intp_t mid,
                         intp_t end) except -1 nogil
    cdef int _grow(self, intp_t node, intp_t* idx, intp_t start, intp_t end,
                   float64_t tau_parent, const float64_t* X,
                   const float64_t* rows) except -1 nogil
    cdef int _extend(self, intp_t* idx, intp_t n, const float64_t* X,
                     const float64_t* rows) except -1 nogil
    cdef int _make_leaf_list(self, intp_t node, intp_t* idx, intp_t start,
                             intp_t end) except -1 nogil
    cdef intp_t _route(self, const float64_t* x, float64_t lifetime) noexcept nogil


cdef inline float64_t box_distance(MondrianTree tree, intp_t node,
                                   const float64_t* x) noexcept nogil:
    """L1 distance from ``x`` to the data box of ``node``: the rate at which the extension of
    the tree to ``x`` cuts ``x`` off above the node (eta in sections 2 and 5)."""
    cdef intp_t D = tree.n_features, d
    cdef const float64_t* lo = tree.bounds + 2 * D * node
    cdef const float64_t* hi = lo + D
    cdef float64_t eta = 0.0
    for d in range(D):
        if x[d] < lo[d]:
            eta += lo[d] - x[d]
        elif x[d] > hi[d]:
            eta += x[d] - hi[d]
    return eta


cdef inline intp_t _partition(intp_t* idx, intp_t start, intp_t end, const float64_t* X,
                              intp_t n_features, intp_t feature,
                              float64_t threshold) noexcept nogil:
    """Move the points with ``x[feature] <= threshold`` to the front; return the boundary."""
    cdef intp_t i = start
    cdef intp_t j = end - 1
    cdef intp_t tmp
    while i <= j:
        if X[idx[i] * n_features + feature] <= threshold:
            i += 1
        else:
            tmp = idx[i]
            idx[i] = idx[j]
            idx[j] = tmp
            j -= 1
    return i


cdef inline float64_t _side_lengths(const float64_t* lo, const float64_t* hi, float64_t* sides,
                                    intp_t n_features) noexcept nogil:
    """Write the box's side lengths into ``sides``; return their sum (its linear dimension)."""
    cdef intp_t d
    cdef float64_t linear_dim = 0.0
    for d in range(n_features):
        sides[d] = hi[d] - lo[d]
        linear_dim += sides[d]
    return linear_dim


cdef inline intp_t _draw_cut(RandomState* rng, const float64_t* lo, const float64_t* hi,
                             const float64_t* sides, intp_t n_features, float64_t linear_dim,
                             float64_t* threshold) noexcept nogil:
    """Draw a cut of the box: its dimension in proportion to ``sides``, then a uniform
    location inside that side (written to ``threshold``); return the dimension."""
    cdef intp_t d = rng_weighted(rng, sides, n_features, linear_dim)
    threshold[0] = rng_uniform_open(rng, lo[d], hi[d])
    return d


cdef int _start_stack(StackRecord** stack, intp_t* capacity, intp_t node, intp_t start,
                      intp_t end, float64_t tau_parent) except -1 nogil
