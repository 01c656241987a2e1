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

from libc.stdlib cimport free, malloc

from mondrian.estimator.locking import LOCK_ATTRIBUTE

__all__ = ["CACHE_BYTES", "NodeTables", "PredictCache", "predict_cache"]

# Bytes of cached rows a model may keep (0: no cache; the environment variable
# MONDRIAN_PREDICT_CACHE_BYTES sets it at import). A classifier tree's entry holds
# 8 (2 K + 2) bytes per node of tables (K classes) and, on a lean tree below 32 features or
# when the whole model's fit the budget, 16 D more of boxes (D features); a lean regressor
# tree's, 16 D of boxes; a density tree's, 8 bytes of leaf log density. 100 trees: letter
# 713 MB (688 bytes per node), satimage 223 MB (688), dna 204 MB (2944), pendigits 134 MB
# (432), kin8nm 189 MB (128), usps 124 MB (176: tables only, its boxes would pass the budget).


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

# Guards the creation of a model's cache (two readers must not both publish one).
_CACHES_LOCK = threading.Lock()

cdef class NodeTables:
    """Buffers of one tree's cached rows (see the ``.pxd``); freed with the object."""

    def __cinit__(self, intp_t node_count, intp_t table_floats, intp_t box_floats):
        self.node_count = node_count
        self.nbytes = (table_floats + box_floats) * sizeof(float64_t)
        self.tables = <float64_t*> malloc(max(table_floats, 1) * sizeof(float64_t))
        self.boxes = NULL
        if box_floats > 0:
            self.boxes = <float64_t*> malloc(box_floats * sizeof(float64_t))
        if self.tables == NULL or (box_floats > 0 and self.boxes == NULL):
            raise MemoryError()

    def __dealloc__(self):
        free(self.tables)
        free(self.boxes)


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
        self._lock = threading.Lock()

    def find(self, tree, key):
        """The entry of ``tree`` at ``key``, or None."""
        entry = self._entries.get((id(tree), key))
        if entry is None or entry[0] is not tree or entry[1].node_count != tree.node_count:
            return None
        return entry[1]

    def reserve(self, tree, key, intp_t table_floats, intp_t box_floats):
        """A new entry's buffers for ``tree`` at ``key``, or None: at the first call that
        asks (a model predicted once keeps nothing: filling a cache of fresh pages costs that
        call more than its scratch), or when they would pass the budget (the bytes are
        counted now, so that threads building at once stay within it)."""
        cdef intp_t nbytes = (table_floats + box_floats) * sizeof(float64_t)
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
            return NodeTables(tree.node_count, table_floats, box_floats)
        except MemoryError:
            self.release(nbytes)
            return None

    def entry(self, tree, key, intp_t table_floats, intp_t box_floats):
        """``(entry, fresh)``: the entry of ``tree`` at ``key`` (``fresh`` False), new buffers
        to fill and :meth:`store` (``fresh`` True; see :meth:`reserve`), or ``(None, False)``."""
        kept = self.find(tree, key)
        if kept is not None:
            return kept, False
        kept = self.reserve(tree, key, table_floats, box_floats)
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
