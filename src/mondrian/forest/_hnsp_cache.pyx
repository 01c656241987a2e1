"""The classifier's entries of the prediction cache (``mondrian.forest._node_cache``): which
entry a tree's call reads or builds, and how a batched lean tree keeps every node's box.

A tree of 32 features or more finds its rows' etas node by node (``core/_batch_walk``), from
every node's box: kept in the cache, or else rebuilt from the training points at every call
(usps: 25% of a call). Kept as floats a box takes 16 D bytes (usps 4096 per node, 2.9 GB for
100 trees, beyond the 1 GiB budget; satimage 576, 1.87 MB per tree, beyond L2). But every
bound of a lean tree's box is a coordinate of a stored point (or +-inf), so a box is kept
exactly as 2 D rank codes into each feature's sorted distinct values
(``_node_cache.BoxCoder``): 1 byte each up to 256 values (satimage, dna: 72 and 360 bytes per
node), 2 up to 65536 (usps, 1789 at most: 1 KB per node, 720 MB for 100 trees). A call reads
a box's codes and the values they index: the very doubles, so the same distances, bit for bit.

Codes of 2 bytes are not kept by default (``WIDE_CODES``): on usps (100 trees) they made a call
of 2007 rows 16% faster but one of 3000 rows or more 1.5x slower (the rank kernel runs one chain
per row, the float kernel four rows side by side), the filling call twice as slow, and the
cache 720 MB larger. Such a tree keeps its boxes as floats where they fit the budget (usps at
20 trees), else rebuilds them from the points at every call, as before.
"""

from libc.stdlib cimport free

from mondrian.core._walk cimport reserve
from mondrian.forest._hnsp_group cimport mf_record_floats
from mondrian.forest._node_cache cimport encode_boxes, row_ranks

# Whether a batched lean tree keeps its boxes as codes when it can (else as floats, when
# they fit the budget); ``set_box_codes`` switches it (tests and benchmarks).
cdef bint BOX_CODES = True
cdef bint WIDE_CODES = False
RANK_MIN_FEATURES = 128


def _set_wide_codes(bint wide):
    """Keep codes of 2 bytes too (tests); returns the previous setting."""
    global WIDE_CODES
    cdef bint old = WIDE_CODES
    WIDE_CODES = wide
    return old


def _set_rank_min_features(intp_t features):
    """Set ``RANK_MIN_FEATURES`` (benchmarks); returns the previous value."""
    global RANK_MIN_FEATURES
    cdef intp_t old = RANK_MIN_FEATURES
    RANK_MIN_FEATURES = features
    return old


def set_box_codes(bint codes):
    """Keep a batched lean tree's boxes as codes (True) or as floats (False) in the entries
    built from now on; returns the previous setting. The same predictions either way.

    Parameters
    ----------
    codes : bool
        The new setting.

    Returns
    -------
    bool
        The previous setting.
    """
    global BOX_CODES
    cdef bint old = BOX_CODES
    BOX_CODES = codes
    return old


cdef NodeTables tree_entry(object cache, MondrianTree tree, intp_t n, float64_t gamma,
                           float64_t lam, bint batched, intp_t forest_trees, bint* tabled,
                           bint* fresh):
    """The cached rows of ``tree`` for a call of ``n`` rows, or None (the call's scratch);
    ``fresh``: a new entry that the call fills. A call of many rows (``tabled``) finds its
    entry or builds it (from the second call: ``PredictCache.reserve``). A call of few rows
    reads one that an earlier call kept, and is then ``tabled`` (its cost has no step at the
    tabulating threshold), but never builds one: that reads every node, more than its walks."""
    cdef NodeTables kept
    cdef intp_t m = tree.node_count, K = tree.n_columns, table_floats, box_floats = 0
    fresh[0] = False
    if cache is None:
        return None
    if not tabled[0]:
        kept = cache.find(tree, (gamma, lam)) if n > 1 else None
        if kept is None or not (kept.boxes != NULL or batched or tree.box_min_samples == 0):
            return None
        tabled[0] = True
        return kept
    key = (gamma, lam)
    kept = cache.find(tree, key)
    if kept is not None:
        return kept
    table_floats = (m + 1) * mf_record_floats(K)  # (a record per node and the root's parent)
    coder = None
    if tree.box_min_samples > 0 and not batched:
        box_floats = 2 * m * tree.n_features
    elif tree.box_min_samples > 0 and cache.asked(tree, key):
        # (the first ask builds nothing: no coder for a model predicted once)
        # (codes of 1 byte unless WIDE_CODES: else floats, where they fit: usps at 20 trees)
        coder = cache.box_coder(tree, 2 if WIDE_CODES else 1) if BOX_CODES else None
        box_floats = _kept_bounds(cache, tree, table_floats, coder, forest_trees)
        if box_floats == 0:
            coder = None
    kept = cache.reserve(tree, key, table_floats, box_floats, coder)
    fresh[0] = kept is not None
    return kept


cdef intp_t _kept_bounds(object cache, MondrianTree tree, intp_t table_floats, object coder,
                         intp_t forest_trees):
    """The box bounds (2 D per node) a batched lean tree keeps in ``cache`` with its tables
    (``table_floats``), 0 for none: when about ``forest_trees`` such entries fit the budget,
    as codes of ``coder`` (when not None, else as floats). Floats: satimage 688 bytes per
    node (223 MB for 100 trees), usps 4272 (3.1 GB: none); codes: satimage 184, usps 1200
    (codes of 2 bytes only under ``WIDE_CODES``: ``tree_entry`` passes no coder else)."""
    cdef intp_t bounds = 2 * tree.node_count * tree.n_features
    cdef intp_t size = 8 if coder is None else (<BoxCoder> coder).code_size
    if (table_floats * 8 + bounds * size) * forest_trees <= cache.budget:
        return bounds
    return 0


cdef int fill_codes(MondrianTree tree, NodeTables kept, intp_t** queue,
                    size_t* queue_size) except -1 nogil:
    """Write every node's box of ``tree`` to the codes of the fresh entry ``kept``
    (``queue``: the call's scratch); drop its codes when a bound cannot be encoded (its
    batches then rebuild the boxes from the points, as without a cache)."""
    reserve(<void**> queue, queue_size, tree.node_count * sizeof(intp_t))
    if not encode_boxes(kept.coder, tree, queue[0], kept.codes):
        kept.drop_codes()
    return 0


cdef class CallCodes:
    """The rows' ranks of one call of ``predict_proba_trees`` (see the ``.pxd``)."""

    def __cinit__(self):
        self.ranks = NULL
        self.ranks_size = 0
        self.ranked = None
        self.have_ranks = False
        self.n_features = 0

    def __dealloc__(self):
        free(self.ranks)

    cdef int point(self, NodeTables kept, const float64_t* X, intp_t n, intp_t x_step,
                   BoxSource* source) except -1:
        """Point ``source`` at the codes of ``kept`` (a batched tree's entry, or None) and
        its coder's values, ranking the call's ``n`` rows of ``X`` (row ``i`` at ``X + i
        x_step``) for a coder met first; at no codes (``source.codes`` NULL) without them."""
        source.boxes = NULL
        source.codes = NULL
        source.ranks = NULL
        if kept is None or kept.codes == NULL:
            return 0
        source.codes = kept.codes
        source.code_size = kept.coder.code_size
        source.values = kept.coder.values
        source.starts = kept.coder.starts
        if kept.coder is not self.ranked:
            self.ranked = kept.coder
            self.n_features = kept.coder.n_features
            self.have_ranks = False
            if self.n_features >= RANK_MIN_FEATURES:
                reserve(<void**> &self.ranks, &self.ranks_size,
                        2 * n * self.n_features * sizeof(uint16_t))
                self.have_ranks = row_ranks(kept.coder, X, n, x_step, self.ranks)
        return 0

    cdef const uint16_t* rows(self, intp_t start) noexcept nogil:
        """The ranks of the rows from ``start`` (NULL: none)."""
        if not self.have_ranks:
            return NULL
        return self.ranks + 2 * start * self.n_features
