"""Read-only, scikit-learn style description of one fitted Mondrian tree."""

import sys

import numpy as np

from mondrian.estimator.locking import LockedMethodsMixin, share_lock

__all__ = ["MondrianTreeStructure", "TREE_LEAF", "TREE_UNDEFINED"]

# Pickles of a structure written before it moved here name ``mondrian.core.structure``.
sys.modules.setdefault("mondrian.core.structure", sys.modules[__name__])

TREE_LEAF = -1
TREE_UNDEFINED = -2


def _read_only(array):
    array = np.array(array)
    array.flags.writeable = False
    return array



def _node_field(name):
    """Read-only property: a fresh read-only copy of one field of the packed node array."""
    return property(lambda self: self._field(name))


def _index_field(name):
    """Read-only property: a 32-bit index field of the packed node array as ``intp``, the
    dtype of scikit-learn's ``Tree`` (and of this class before the struct was packed)."""
    return property(lambda self: _read_only(self._tree.nodes_array[name].astype(np.intp)))

class MondrianTreeStructure(LockedMethodsMixin):
    """Read-only description of one fitted Mondrian tree, in the style of scikit-learn's ``Tree``.

    Every attribute is computed on access and returned as a fresh, read-only copy, since online
    training reallocates the underlying buffers; it is read under the lock of the estimator
    the tree belongs to, so reading it beside that estimator's training is safe. Thresholds
    and bounds are mapped back to the original feature units (exact up to the rounding of that
    map: the trees route points in the scaled space); split times are in the scaled units in
    which the lifetime is measured.

    Attributes
    ----------
    node_count : int
        Number of nodes. The root is node 0.
    children_left, children_right : ndarray of int
        Child ids, ``-1`` for leaves. A point goes left iff ``x[feature] <= threshold``.
    parent : ndarray of int
        Parent ids, ``-1`` for the root.
    feature : ndarray of int
        Split dimension, ``-2`` for leaves.
    threshold : ndarray of float
        Split location in original units, ``-2`` for leaves.
    split_time : ndarray of float
        Birth time τ of each cut; the lifetime (possibly ``inf``) for leaves.
    lower_bounds, upper_bounds : ndarray of shape (node_count, n_features)
        Data bounding box of every node, in original units.
    n_node_samples : ndarray of int
        Number of training points below each node.
    value : ndarray of shape (node_count, n_outputs)
        Node statistics: class counts (classifier).
    paused : ndarray of bool
        Whether each node is a paused leaf.
    max_depth : int
        Depth of the deepest leaf (the root has depth 0).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from mondrian import MondrianTreeClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> tree = MondrianTreeClassifier(random_state=0).fit(X, y).tree_
    >>> int(tree.n_node_samples[0]), tree.value[0].tolist()
    (150, [50.0, 50.0, 50.0])
    >>> bool((tree.children_left == -1).sum() == (tree.node_count + 1) // 2)
    True
    """

    def __init__(self, tree, scaler, value_transform=None, owner=None):
        self._tree = tree
        self._scaler = scaler
        self._value_transform = value_transform
        if owner is not None:
            share_lock(self, owner)

    node_count = property(lambda self: self._tree.node_count)
    n_features = property(lambda self: self._tree.n_features)

    def _field(self, name):
        return _read_only(self._tree.nodes_array[name])

    children_left = _index_field("left_child")
    children_right = _index_field("right_child")
    parent = _index_field("parent")
    feature = _index_field("feature")

    @property
    def threshold(self):
        nodes = self._tree.nodes_array
        out = np.array(nodes["threshold"])
        internal = nodes["left_child"] != TREE_LEAF
        out[internal] = self._scaler.inverse_thresholds(
            out[internal], nodes["feature"][internal]
        )
        return _read_only(out)

    split_time = _node_field("split_time")

    def _bounds(self, row):
        scaled = self._tree.bounds_array[:, row, :]
        features = np.arange(scaled.shape[1])
        return _read_only(self._scaler.inverse_thresholds(scaled, features))

    lower_bounds = property(lambda self: self._bounds(0))
    upper_bounds = property(lambda self: self._bounds(1))

    n_node_samples = _node_field("n_node_samples")

    @property
    def value(self):
        value = self._tree.value_array
        if self._value_transform is not None:
            value = self._value_transform(value)
        return _read_only(value)

    @property
    def paused(self):
        return _read_only(self._field("paused").astype(bool))

    @property
    def max_depth(self):
        return int(self._tree.node_depths().max(initial=0))

    lifetime = property(lambda self: self._tree.lifetime)

    def __repr__(self):
        return f"MondrianTreeStructure(node_count={self.node_count})"
