"""What the forests and their single trees add to the ensemble base: pruning, feature
importances, the single-tree form."""

import copy
import numbers

import numpy as np
from sklearn.utils.validation import check_is_fitted

from mondrian.estimator.locking import own_lock
from mondrian.estimator.structure import TREE_LEAF

__all__ = ["PruneMixin", "pruned_copy", "FeatureImportanceMixin", "SingleTreeMixin"]


class PruneMixin:
    """``prune(lifetime)`` for the forests: the same estimator restricted to a smaller lifetime."""

    def _after_prune(self):
        """Reset caches that depend on the trees (subclasses)."""

    def prune(self, lifetime):
        """The fitted model restricted to ``lifetime`` (at most the fitted lifetime).

        Every cut born at or after ``lifetime`` is dropped. By the Markov property of the
        Mondrian process the result has the law of the same estimator fitted with that lifetime
        on the same data; it is an ordinary fitted estimator (it predicts, learns online and
        pickles on its own). The pruned classifier predicts exactly what this one predicts when
        read at ``lifetime``; the pruned regressor does too when its hyperparameters are fixed
        (by default it re-estimates them on the pruned trees).

        Parameters
        ----------
        lifetime : float

        Returns
        -------
        estimator
            A new estimator of the same class, with ``lifetime`` set.
        """
        pruned = pruned_copy(self, lifetime, allow_zero=True)
        pruned._after_prune()
        return pruned


def pruned_copy(estimator, lifetime, allow_zero):
    """A shallow copy of a fitted estimator whose ensemble (trees, stored points, feature map)
    is its own, restricted to ``lifetime`` (validated against the fitted ``lifetime_``)."""
    check_is_fitted(estimator, "_trees")
    number = isinstance(lifetime, numbers.Real) and not isinstance(lifetime, bool)
    if not (number and (0 <= lifetime if allow_zero else 0 < lifetime)
            and lifetime <= estimator.lifetime_):
        bracket = "[" if allow_zero else "("
        raise ValueError(
            f"lifetime must be a number in {bracket}0, {estimator.lifetime_}] (the fitted "
            f"lifetime), got {lifetime!r}"
        )
    pruned = copy.copy(estimator)
    pruned.__dict__.pop("lifetime_path_", None)  # it described the unpruned model
    pruned.__dict__.pop("_read_only_view", None)  # its trees and store are its own
    pruned.lifetime = float(lifetime)
    pruned.lifetime_ = float(lifetime)
    pruned._ensemble = estimator._ensemble.pruned(float(lifetime))
    own_lock(pruned)
    pruned._fit_params = {**getattr(estimator, "_fit_params", {}), "lifetime": pruned.lifetime}
    return pruned


class FeatureImportanceMixin:
    """``feature_importances_``: the decrease of the leaf posterior's training loss at the
    cuts of each feature (subclasses define ``_node_losses``)."""

    def _node_losses(self, value):
        """Training loss of every node read as a leaf, from its statistics rows."""
        raise NotImplementedError

    def _learned_importances(self):
        """Learned per-feature weights to report instead, when the model has them (None).

        This is the one place a model with learned per-dimension weights (the relevance
        issue's ``feature_weights_``) returns their normalised values.
        """
        return None

    @property
    def feature_importances_(self):
        """Share of each feature in the decrease of the training loss at the trees' cuts.

        At every cut, the loss of the node read as a leaf minus the losses of its two
        children (a cut that does not lower it counts 0) is credited to the cut's feature.
        The loss of a node is its training loss under the leaf posterior the lifetime paths
        read, computed from its (weighted) statistics: for a classifier the log-loss
        ``-sum_k n_k log((n_k + a / K) / (n + a))`` of a Dirichlet leaf with the
        ``concentration`` ``a``; for a regressor the squared error about the node's mean
        (``sum y**2 - (sum y)**2 / n``). Each tree's credits are normalised to sum to one
        (a tree without cuts gives zeros), then averaged over the trees and normalised again,
        as scikit-learn's forests do. Unlike scikit-learn's trees the cuts are not chosen to
        lower the loss: a feature the labels do not depend on gets cuts but little credit.

        Returns
        -------
        ndarray of shape (n_features,)
            Non-negative, summing to one unless no cut lowers the loss (then all zero).
        """
        check_is_fitted(self, "_trees")
        learned = self._learned_importances()
        if learned is not None:
            return learned
        total = np.zeros(self.n_features_in_)
        for tree in self._trees:
            nodes = tree.nodes_array
            internal = nodes["left_child"] != TREE_LEAF
            losses = self._node_losses(tree.value_array)
            gain = (losses[internal] - losses[nodes["left_child"][internal]]
                    - losses[nodes["right_child"][internal]])
            credit = np.bincount(nodes["feature"][internal], weights=np.maximum(gain, 0.0),
                                 minlength=self.n_features_in_)
            if credit.sum() > 0:
                total += credit / credit.sum()
        return total / total.sum() if total.sum() > 0 else total


class SingleTreeMixin:
    """The single-tree form of an ensemble estimator (its ``apply`` returns one column)."""

    def _n_trees(self):
        return 1

    def decision_path(self, X):
        """Nodes each sample goes through, root to leaf (scikit-learn style).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        indicator : sparse matrix of shape (n_samples, n_nodes)
            CSR matrix whose non-zero ``(i, j)`` entries mark node ``j`` on the path of
            sample ``i``.
        """
        return super().decision_path(X)[0]

    def apply(self, X):
        """Leaf id reached by every sample.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return super().apply(X)[:, 0]
