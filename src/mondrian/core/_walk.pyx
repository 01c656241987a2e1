"""Python view of the shared walk (``_walk.pxd``): the path of one point, step by step.

The walk itself is a set of inline functions in ``_walk.pxd`` that the models compile into
their own loops; this module only exposes it, for tests and for inspection.
"""

from mondrian.core._tree cimport MondrianTree
from mondrian.core._typedefs cimport float64_t
from mondrian.core._walk cimport WalkStep, read_lifetime, walk_next, walk_start

import numpy as np


def walk_path(MondrianTree tree, const float64_t[::1] x, lifetime=None):
    """Every step of the walk of ``x`` from the root to its leaf in the pruned tree.

    Parameters
    ----------
    tree : MondrianTree
        A non-empty tree.
    x : ndarray of shape (n_features,)
        The point, in the tree's coordinates.
    lifetime : float, default=None
        Read the tree pruned at this lifetime (default: its own lifetime; a larger value is
        capped at it).

    Returns
    -------
    dict of ndarray, one entry per node of the path (root first)
        ``node``, ``sibling`` (-1 at the root), ``is_leaf`` (True at the last node only),
        ``tau_parent``, ``tau``, ``delta``, ``eta``, ``p`` (branch-off probability on the
        edge above the node), ``reach`` (probability of getting to that edge), ``survival``
        (``reach * (1 - p)``) and ``exposure`` (running sum of ``eta * delta``).
    """
    if tree.node_count == 0:
        raise ValueError("cannot walk an empty tree")
    if x.shape[0] != tree.n_features:
        raise ValueError(f"x has {x.shape[0]} features, the tree expects {tree.n_features}")
    cdef float64_t lam = read_lifetime(tree, lifetime)
    cdef WalkStep step
    steps = []
    walk_start(&step, tree, &x[0], lam)
    while True:
        steps.append((step.node, step.sibling, step.is_leaf, step.tau_parent, step.tau,
                      step.delta, step.eta, step.p, step.reach, step.survival, step.exposure))
        if step.is_leaf:
            break
        walk_next(&step, tree, &x[0], lam)
    names = ("node", "sibling", "is_leaf", "tau_parent", "tau", "delta", "eta", "p", "reach",
             "survival", "exposure")
    dtypes = {"node": np.intp, "sibling": np.intp, "is_leaf": bool}
    return {name: np.array([s[k] for s in steps], dtype=dtypes.get(name, np.float64))
            for k, name in enumerate(names)}
