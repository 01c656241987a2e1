"""Mondrian kernel features (Balog et al., 2016): leaf indicators of Mondrian trees.

A point's feature vector has one entry ``1/sqrt(M)`` per tree, at the leaf holding it, so inner
products count the trees in which two points share a cell and converge to the Laplace kernel
``exp(-lifetime * ||x - x'||_1)``.

New points (not used to sample the trees) are placed by the extension of section 2: walking down
a tree, a point outside a node's data box is cut off above it with probability
``1 - exp(-eta * delta)``. A cut-off point lands in a fresh cell that holds no training point,
so it gets no entry for that tree. The uniform draw that decides this comes from a hash of the
point and the tree's key, which makes ``transform`` deterministic for a fitted model while
keeping, for every pair of a new and a training point, the kernel's law.
"""

from libc.math cimport exp
from libc.string cimport memcpy

from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t, intp_t, uint64_t
from mondrian.core._walk cimport WalkStep, read_lifetime, walk_next, walk_start

import numpy as np


cdef inline uint64_t _mix(uint64_t z) noexcept nogil:
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


cdef inline float64_t _hash_uniform(const float64_t* x, intp_t n, uint64_t key) noexcept nogil:
    """A uniform number on (0, 1) that depends only on the bytes of ``x`` and on ``key``."""
    cdef uint64_t h = _mix(key + <uint64_t>0x9E3779B97F4A7C15)
    cdef uint64_t bits
    cdef intp_t d
    cdef float64_t v
    for d in range(n):
        v = x[d] + 0.0  # -0.0 and 0.0 hash alike
        memcpy(&bits, &v, sizeof(uint64_t))
        h = _mix(h ^ (bits + <uint64_t>0x9E3779B97F4A7C15 + (h << 6) + (h >> 2)))
    return ((h >> 11) + 0.5) * (1.0 / 9007199254740992.0)


cdef intp_t _extension_leaf(MondrianTree tree, const float64_t* x, float64_t lifetime,
                            float64_t u) noexcept nogil:
    """Leaf of the pruned tree holding ``x``, or -1 when the extension cuts ``x`` off."""
    cdef WalkStep step
    walk_start(&step, tree, x, lifetime)
    while True:
        # x stays with the data iff u < exp(-sum of eta * delta along the path); an infinite
        # edge outside the box (exposure +inf) always cuts it off.
        if step.eta > 0.0 and not u < exp(-step.exposure):
            return -1
        if step.is_leaf:
            return step.node
        walk_next(&step, tree, x, lifetime)


def extension_leaves(list trees, const float64_t[:, ::1] X, const uint64_t[::1] keys,
                     lifetime=None):
    """Leaf of every row of ``X`` in every tree, -1 where the row is cut off.

    Parameters
    ----------
    trees : list of MondrianTree
    X : ndarray of shape (n_samples, n_features)
        Points in the scaled feature space.
    keys : ndarray of uint64, shape (n_trees,)
        Per-tree keys of the hash that draws the extension's uniform numbers.
    lifetime : float, default=None
        Read the trees pruned at this lifetime.

    Returns
    -------
    ndarray of intp, shape (n_samples, n_trees)
    """
    cdef intp_t n = X.shape[0], n_trees = len(trees), i, m
    cdef MondrianTree tree
    cdef float64_t lam
    out = np.empty((n, n_trees), dtype=np.intp)
    cdef intp_t[:, ::1] leaves = out
    if keys.shape[0] != n_trees:
        raise ValueError("one key per tree is needed")
    for m in range(n_trees):
        tree = trees[m]
        if tree.node_count == 0:
            raise ValueError("cannot place points in an empty tree")
        if tree.n_features != X.shape[1]:
            raise ValueError(f"X has {X.shape[1]} features, the trees {tree.n_features}")
        lam = read_lifetime(tree, lifetime)
        with nogil:
            for i in range(n):
                leaves[i, m] = _extension_leaf(
                    tree, &X[i, 0], lam, _hash_uniform(&X[i, 0], X.shape[1], keys[m]))
    return out
