"""Per-tree quantities of prediction kept between calls of a model that did not change.

A call of many rows first fills, for every node of each tree, what does not depend on the test
points (the classifier's IKN tables, a lean tree's every node's box rebuilt from its points, a
density's leaf log densities): work proportional to the whole tree, repeated by every call. A
:class:`PredictCache` keeps them per tree, for the calls of one *generation* of a model (its
lock's count of completed writes, kept in the lock: views sharing a forest's lock share its
cache): ``fit``, ``partial_fit``, ``forget``, ``set_params`` and every other writer drop it
when they begin, a pickled or copied model starts with none (the cache is not part of the
model). Entries are built by the second call of many rows that needs them (a model predicted
once keeps nothing; calls of a few rows read entries but never build them), into buffers of
their own, and published by one dictionary assignment (atomic under the GIL), so concurrent
readers see a whole entry or none; two readers may both build one, the second's is dropped.
The bytes kept per model are bounded by :data:`CACHE_BYTES`; trees past the bound are
tabulated per call as without a cache. Reading cached rows gives the bits of rows built in the
call: the same functions fill them.
"""

import os
import threading

import numpy as np

from libc.stdint cimport uint8_t, uint16_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy, memset

from mondrian.core._rebuild cimport breadth_first
from mondrian.core._tree cimport TREE_LEAF

from mondrian.estimator.locking import LOCK_ATTRIBUTE

__all__ = ["CACHE_BYTES", "BoxCoder", "NodeTables", "PredictCache", "predict_cache"]

# Bytes of cached rows a model may keep (0: no cache; the environment variable
# MONDRIAN_PREDICT_CACHE_BYTES sets it at import). A classifier tree's entry holds
# 8 (2 K + 2) bytes per node of tables (K classes) and, on a lean tree below 32 features,
# 16 D more of boxes (D features); from 32 features, when the whole model's fit the budget,
# 2 D codes of 1 byte (BoxCoder; 2 bytes only under _hnsp_cache.WIDE_CODES), else 16 D of
# floats (as with BOX_CODES off in _hnsp_cache); a lean regressor tree's, 16 D of boxes; a
# density tree's, 8 bytes of leaf log density. 100 trees: letter 713 MB (688 bytes per node),
# pendigits 134 MB (432), kin8nm 189 MB (128); with codes satimage 184 bytes per node, dna 424;
# usps its tables alone (176; its boxes: 4272 as floats, past the budget).


def _budget_from_environment(default=1 << 30):
    """The byte budget set by ``MONDRIAN_PREDICT_CACHE_BYTES`` (a non-negative integer)."""
    text = os.environ.get("MONDRIAN_PREDICT_CACHE_BYTES")
    if text is None:
        return default
    try:
        budget = int(text)
    except ValueError:
        raise ValueError("MONDRIAN_PREDICT_CACHE_BYTES must be a non-negative integer "
                         f"number of bytes, got {text!r}") from None
    if budget < 0:
        raise ValueError("MONDRIAN_PREDICT_CACHE_BYTES must be a non-negative integer "
                         f"number of bytes, got {text!r}")
    return budget


CACHE_BYTES = _budget_from_environment()

# A stored point's code that does not decode to its bits (box_coder); never a value's code.
cdef uint16_t NO_CODE = 65535

# Guards the creation of a model's cache (two readers must not both publish one).
_CACHES_LOCK = threading.Lock()

cdef class NodeTables:
    """Buffers of one tree's cached rows (see the ``.pxd``); freed with the object. With a
    ``coder``, ``box_floats`` counts box bounds kept as its codes (``codes``)."""

    def __cinit__(self, intp_t node_count, intp_t table_floats, intp_t box_floats,
                  BoxCoder coder=None):
        cdef intp_t code_size = 0 if coder is None else coder.code_size
        self.node_count = node_count
        self.nbytes = table_floats * sizeof(float64_t) + box_floats * (
            code_size or sizeof(float64_t))
        self.tables = <float64_t*> malloc(max(table_floats, 1) * sizeof(float64_t))
        self.boxes = NULL
        self.codes = NULL
        self.coder = coder
        if box_floats > 0 and coder is None:
            self.boxes = <float64_t*> malloc(box_floats * sizeof(float64_t))
        elif box_floats > 0:
            self.codes = malloc(box_floats * code_size)
        if self.tables == NULL or (box_floats > 0 and self.boxes == NULL
                                   and self.codes == NULL):
            raise MemoryError()

    def __dealloc__(self):
        free(self.tables)
        free(self.boxes)
        free(self.codes)

    @property
    def box_codes(self):
        """Every node's box as codes of ``coder`` (a copy, rows of 2 D), or None."""
        if self.codes == NULL:
            return None
        D = self.coder.n_features
        dtype = np.uint8 if self.coder.code_size == 1 else np.uint16
        return np.frombuffer(
            (<char*> self.codes)[:self.node_count * 2 * D * self.coder.code_size],
            dtype=dtype).reshape(self.node_count, 2 * D).copy()

    @property
    def box_coder(self):
        """The :class:`BoxCoder` of ``box_codes``, or None."""
        return self.coder if self.codes != NULL else None

    cdef void drop_codes(self) noexcept nogil:
        """Forget the codes (a box that could not be encoded: the tree rebuilds its boxes)."""
        free(self.codes)
        self.codes = NULL


cdef class BoxCoder:
    """The sorted distinct values of every feature of a store of points (see the ``.pxd``);
    :func:`box_coder` builds one."""

    def __cinit__(self, const float64_t[::1] values, const intp_t[::1] counts,
                  const uint16_t[:, ::1] point_codes, object owner):
        cdef intp_t D = counts.shape[0], d, start = 0, n = point_codes.shape[0]
        self.n_features = D
        self.n_points = n
        self.owner = owner
        self.code_size = 1 if np.max(np.asarray(counts)) <= 256 else 2
        self.nbytes = values.shape[0] * sizeof(float64_t) + 3 * D * sizeof(intp_t) + (
            n * D * sizeof(uint16_t))
        self.values = <float64_t*> malloc(max(values.shape[0], 1) * sizeof(float64_t))
        self.starts = <intp_t*> malloc(2 * D * sizeof(intp_t))
        self.counts = <intp_t*> malloc(D * sizeof(intp_t))
        self.point_codes = <uint16_t*> malloc(max(n * D, 1) * sizeof(uint16_t))
        if (self.values == NULL or self.starts == NULL or self.counts == NULL
                or self.point_codes == NULL):
            raise MemoryError()
        for d in range(values.shape[0]):
            self.values[d] = values[d]
        for d in range(D):
            self.counts[d] = counts[d]
            self.starts[d] = start
            self.starts[D + d] = start
            start += counts[d]
        if n * D > 0:
            memcpy(self.point_codes, &point_codes[0, 0], n * D * sizeof(uint16_t))

    def __dealloc__(self):
        free(self.values)
        free(self.starts)
        free(self.counts)
        free(self.point_codes)

    def decode(self, codes):
        """The boxes of ``codes`` (rows of 2 D codes) as floats (the tests' reader)."""
        cdef intp_t total = self.starts[self.n_features - 1] + self.counts[self.n_features - 1]
        codes = np.asarray(codes, dtype=np.intp)
        values = np.asarray(<float64_t[:total]> self.values)
        starts = np.asarray(<intp_t[:2 * self.n_features]> self.starts)
        return values[starts + codes]


def box_coder(points, code_size=2):
    """A :class:`BoxCoder` of the rows of ``points`` (n, D), or None: no points, a NaN, or
    more distinct values of a feature (+-inf included) than codes of ``code_size`` bytes
    hold (256 for 1, 65535 for 2)."""
    X = np.asarray(points, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0 or np.isnan(X).any():
        return None
    cdef intp_t n = X.shape[0] + 2
    column = np.empty((n, X.shape[1]))
    column[0] = -np.inf
    column[1 : n - 1] = np.sort(X, axis=0)
    column[n - 1] = np.inf
    first = np.ones(column.shape, dtype=bool)
    first[1:] = column[1:] != column[: n - 1]
    counts = first.sum(axis=0).astype(np.intp)
    if counts.max() > (256 if code_size == 1 else 65535):  # (row_ranks: ranks up to the count)
        return None
    values = np.ascontiguousarray(column.T[first.T])
    point_codes = np.empty(X.shape, dtype=np.uint16)
    start = 0
    for d in range(X.shape[1]):
        code = np.searchsorted(values[start : start + counts[d]], X[:, d])
        # (a code whose value has other bits than the point's, -0.0 for 0.0: none)
        code[values[start + code].view(np.uint64) != X[:, d].view(np.uint64)] = NO_CODE
        point_codes[:, d] = code
        start += counts[d]
    return BoxCoder(values, counts, point_codes, points)


ctypedef fused code_t:
    uint8_t
    uint16_t


cdef inline bint _same_bits(float64_t a, float64_t b) noexcept nogil:
    return memcmp(&a, &b, sizeof(float64_t)) == 0


cdef inline bint _code_of(BoxCoder coder, intp_t d, float64_t v, intp_t* code) noexcept nogil:
    """The rank of ``v`` among feature ``d``'s values (the first not below it), True when
    that value has the bits of ``v`` (False: -0.0 for 0.0, a value of no stored point)."""
    cdef const float64_t* values = coder.values + coder.starts[d]
    cdef intp_t first = 0, n = coder.counts[d], half
    # Branch-free halving (the side is a coin toss: a branch mispredicts half the time):
    # the values before ``first`` are below v, those from first + n on are not.
    while n > 1:
        half = n >> 1
        first += half * (values[first + half - 1] < v)
        n -= half
    if n > 0:  # (n is 1 now, unless there are no values)
        first += values[first] < v
    code[0] = first
    return first < coder.counts[d] and _same_bits(values[first], v)


cdef bint _leaf_codes(BoxCoder coder, MondrianTree tree, intp_t j, code_t* out) noexcept nogil:
    """The codes of the box of the leaf ``j`` (its points', not stored) into ``out``: the
    least and greatest codes of its points, feature by feature. Codes follow the values, and
    a point with a code has that code's bits (``box_coder``), so these decode to the
    leaf's bounds, bit for bit. False (``out`` partly written) for a leaf without points
    or with a point without a code."""
    cdef intp_t D = tree.n_features, d, i = tree.nodes[j].first_sample
    cdef const uint16_t* pc
    cdef uint16_t c
    if i < 0 or i >= coder.n_points:
        return False
    pc = coder.point_codes + i * D
    for d in range(D):
        out[d] = <code_t> pc[d]
        out[D + d] = <code_t> pc[d]
    while i >= 0:
        if i >= coder.n_points:
            return False
        pc = coder.point_codes + i * D
        for d in range(D):
            c = pc[d]
            if c == NO_CODE:
                return False
            out[d] = <code_t> c if c < out[d] else out[d]
            out[D + d] = <code_t> c if c > out[D + d] else out[D + d]
        i = tree.sample_next[i]
    return True


cdef bint _encode(BoxCoder coder, MondrianTree tree, intp_t* queue,
                  code_t* codes) noexcept nogil:
    """:func:`encode_boxes` with codes of type ``code_t``."""
    cdef intp_t D = tree.n_features, tail = breadth_first(tree, queue), k, j, d, e, code
    cdef intp_t lc
    cdef const float64_t* stored
    cdef const code_t* left
    cdef const code_t* right
    cdef code_t* out
    memset(codes, 0, tree.node_count * 2 * D * sizeof(code_t))  # (unreached nodes: code 0)
    for k in range(tail - 1, -1, -1):  # children before their parent, as all_boxes
        j = queue[k]
        out = codes + 2 * D * j
        lc = tree.nodes[j].left_child
        if tree.box_slot[j] >= 0:
            stored = tree.bounds + 2 * D * tree.box_slot[j]
            for e in range(2 * D):
                if not _code_of(coder, e if e < D else e - D, stored[e], &code):
                    return False
                out[e] = <code_t> code
        elif lc == TREE_LEAF and tree.nodes[j].first_sample == TREE_LEAF:
            for d in range(D):  # (no points: lower bound +inf, upper -inf)
                out[d] = <code_t> (coder.counts[d] - 1)
                out[D + d] = 0
        elif lc == TREE_LEAF:
            if not _leaf_codes(coder, tree, j, out):
                return False
        else:
            # The union of the children's boxes: the lesser and the greater value, so the
            # lesser and the greater code (equal values have one code, of their bits).
            left = codes + 2 * D * lc
            right = codes + 2 * D * tree.nodes[j].right_child
            for d in range(D):
                out[d] = left[d] if left[d] < right[d] else right[d]
                out[D + d] = left[D + d] if left[D + d] > right[D + d] else right[D + d]
    return True


cdef bint row_ranks(BoxCoder coder, const float64_t* X, intp_t n, intp_t x_step,
                    uint16_t* out) noexcept nogil:
    """The ranks of the rows of ``X`` (row ``i`` at ``X + i x_step``) among ``coder``'s
    values, 2 D per row into ``out``: first, per feature, the number of its values not above
    the row's (by value: -0.0 as 0.0), then the number below it. A value is below the bound
    of code ``c`` when the first is at most ``c``, above when the second passes ``c`` (the
    comparisons of the box distance, ``core/_code_kernels.h``). False (``out`` unspecified)
    at a NaN, which no rank places as the distance does."""
    cdef intp_t D = coder.n_features, i, d, code
    cdef float64_t v
    for d in range(D):  # (feature by feature: its values stay in L1)
        for i in range(n):
            v = X[i * x_step + d]
            if v != v:
                return False
            _code_of(coder, d, v, &code)
            out[2 * i * D + D + d] = <uint16_t> code
            out[2 * i * D + d] = <uint16_t> (code + (
                code < coder.counts[d] and coder.values[coder.starts[d] + code] == v))
    return True


cdef bint encode_boxes(BoxCoder coder, MondrianTree tree, intp_t* queue,
                       void* codes) noexcept nogil:
    """Write every node's box of ``tree`` (those of ``MondrianTree._all_boxes``) as codes of
    ``coder`` to ``codes`` (``node_count`` rows of 2 D); ``queue``: scratch of
    ``node_count``. Built as ``all_boxes`` builds the floats, on codes: a leaf's from its
    points' codes, a stored box's bounds looked up, a union's the lesser and greater codes
    of its children's. Every code given decodes to the bits of the float bound (a point's
    code to the point's bits, a looked-up bound checked), so a union's does too. False when a
    bound has no code of its bits (a point of -0.0 beside 0.0; a stored bound of no stored
    point): the codes are then not to be read."""
    if coder.n_features != tree.n_features:
        return False
    if coder.code_size == 1:
        return _encode(coder, tree, queue, <uint8_t*> codes)
    return _encode(coder, tree, queue, <uint16_t*> codes)


class PredictCache:
    """The cached rows of one model's trees for one generation, at most ``budget`` bytes.

    Entries are keyed by the tree object and what the rows depend on (``key``: the discount
    and the lifetime read); an entry also records the tree's node count, checked on lookup.
    """

    def __init__(self, generation, budget):
        self.generation = generation
        self.budget = budget
        self.nbytes = 0
        self._entries = {}
        self._asked = {}  # the trees and keys asked for once (their tree kept: ids stay theirs)
        self._refused = set()  # the trees and keys whose entry cannot be built (see refuse)
        # id of a store of points: (the points, their BoxCoder or None, the largest code
        # size for which that answer stands: a coder declined for codes of 1 byte may exist
        # with 2)
        self._coders = {}
        self._lock = threading.Lock()

    def box_coder(self, tree, code_size=2):
        """The :class:`BoxCoder` of the points ``tree`` is attached to, with codes of at most
        ``code_size`` bytes (built at the first ask, its bytes counted in the budget), or
        None: no points, or no such coder for them (none is built past ``code_size``: usps'
        2-byte coder, 6 MB, when only codes of 1 byte are kept)."""
        cdef MondrianTree t = tree
        owner = t.points_owner
        if owner is None:
            return None
        known, coder = self._known_coder(owner, code_size)
        if known:
            return coder
        coder = box_coder(owner, code_size)
        with self._lock:
            known, found = self._known_coder(owner, code_size)
            if known:
                return found
            # (a coder declined for its width stands for narrower asks only; one past the
            # budget is asked no more in this generation)
            width = code_size if coder is None else 2
            if coder is not None and self.nbytes + coder.nbytes > self.budget:
                coder = None
            self._coders[id(owner)] = (owner, coder, width)
            if coder is not None:
                self.nbytes += coder.nbytes
        return coder

    def _known_coder(self, owner, code_size):
        """``(known, coder)``: whether ``_coders`` answers an ask of ``owner``'s coder of at
        most ``code_size`` bytes, and the answer (a coder or None)."""
        found = self._coders.get(id(owner))
        if found is None or found[0] is not owner:
            return False, None
        coder = found[1]
        if coder is None:
            return found[2] >= code_size, None
        return True, coder if coder.code_size <= code_size else None

    def find(self, tree, key):
        """The entry of ``tree`` at ``key``, or None."""
        entry = self._entries.get((id(tree), key))
        if entry is None or entry[0] is not tree or entry[1].node_count != tree.node_count:
            return None
        return entry[1]

    def asked(self, tree, key):
        """Whether an entry of ``tree`` at ``key`` was asked for before (:meth:`reserve`
        builds none at the first ask)."""
        return (id(tree), key) in self._asked

    def reserve(self, tree, key, intp_t table_floats, intp_t box_floats, coder=None):
        """A new entry's buffers for ``tree`` at ``key``, or None: at the first call that
        asks (a model predicted once keeps nothing: filling a cache of fresh pages costs that
        call more than its scratch), or when they would pass the budget (the bytes are
        counted now, so that threads building at once stay within it)."""
        cdef intp_t nbytes = table_floats * sizeof(float64_t) + box_floats * (
            sizeof(float64_t) if coder is None else (<BoxCoder> coder).code_size)
        with self._lock:
            if (id(tree), key) in self._refused:
                return None
            if (id(tree), key) not in self._asked:
                self._asked[(id(tree), key)] = tree
                return None
            if self.nbytes + nbytes > self.budget:
                return None
            self.nbytes += nbytes
        try:
            return NodeTables(tree.node_count, table_floats, box_floats, coder)
        except MemoryError:
            self.release(nbytes)
            return None

    def entry(self, tree, key, intp_t table_floats, intp_t box_floats, coder=None):
        """``(entry, fresh)``: the entry of ``tree`` at ``key`` (``fresh`` False), new buffers
        to fill and :meth:`store` (``fresh`` True; see :meth:`reserve`; the boxes as codes of
        ``coder`` if given), or ``(None, False)``."""
        kept = self.find(tree, key)
        if kept is not None:
            return kept, False
        kept = self.reserve(tree, key, table_floats, box_floats, coder)
        return kept, kept is not None

    def release(self, nbytes):
        """Give back the bytes of an entry that was not stored."""
        with self._lock:
            self.nbytes -= nbytes

    def refuse(self, tree, key, nbytes):
        """Give back the bytes of an entry of ``tree`` at ``key`` that could not be built,
        and reserve none for it again in this generation (the tree is as it was)."""
        with self._lock:
            self.nbytes -= nbytes
            self._asked[(id(tree), key)] = tree
            self._refused.add((id(tree), key))

    def store(self, tree, key, NodeTables tables):
        """Publish a built entry (a second one for the same tree and key is dropped)."""
        with self._lock:
            if (id(tree), key) in self._entries:
                self.nbytes -= tables.nbytes
                return
            self._entries[(id(tree), key)] = (tree, tables)


def predict_cache(estimator):
    """The :class:`PredictCache` of ``estimator``'s current generation, or None when it must
    not be used: no cache (``CACHE_BYTES`` 0), no lock yet (a private call), or a write in
    progress (a read nested in ``fit`` sees trees that change before the generation does)."""
    lock = estimator.__dict__.get(LOCK_ATTRIBUTE)
    if CACHE_BYTES <= 0 or lock is None or lock._writer is not None:
        return None
    generation = lock.generation
    cache = lock.derived
    if cache is None or cache.generation != generation or cache.budget != CACHE_BYTES:
        with _CACHES_LOCK:
            cache = lock.derived
            if cache is None or cache.generation != generation or cache.budget != CACHE_BYTES:
                cache = PredictCache(generation, CACHE_BYTES)
                lock.derived = cache
    return cache
