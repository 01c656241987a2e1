"""Random partition features: the sparse normalised cluster indicators of ``m`` partitions."""

import numbers

import numpy as np
from scipy import sparse
from scipy.sparse.linalg import LinearOperator
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from mondrian._docstrings import N_PARTITIONS, PARTITIONER
from mondrian.core.state_checks import check_index_array, loaded_array, refuse
from mondrian.estimator.atomic import atomic_fit
from mondrian.estimator.inputs import sparse_output
from mondrian.estimator.locking import LockedMethodsMixin
from mondrian.estimator.params import StrictParamsMixin
from mondrian.estimator.versioned import VersionedStateMixin
from mondrian.partition._products import (
    block_precondition,
    cluster_sums,
    gather_sums,
    kernel_matmat,
)
from mondrian.partition.partitioners import resolve_partitioner

__all__ = ["RandomPartitionFeatures"]


def _as_2d(v):
    v = np.asarray(v, dtype=np.float64)
    return np.ascontiguousarray(v.reshape(v.shape[0], -1)), v.ndim == 1


def _check_partition_state(state):
    """Refuse (``ValueError``) saved partition labels that would index outside the cluster
    arrays; ``state`` gets the checked arrays."""
    name = "RandomPartitionFeatures"
    labels = loaded_array(name, "labels", state["_labels"], np.int32, 2)
    m = labels.shape[0]
    offsets = loaded_array(name, "offsets", state["_offsets"], np.intp, 1, (m + 1,))
    sizes = np.diff(offsets)
    if m == 0 or offsets[0] != 0 or (sizes < 0).any():
        refuse(name, "offsets must start at 0 and never decrease")
    counts = loaded_array(name, "counts", state["_counts"], np.float64, 1, (offsets[-1],))
    lookup = state["_lookup"]
    if not isinstance(lookup, list) or len(lookup) != m:
        refuse(name, "one lookup table per partition is needed")
    lookup = [loaded_array(name, "lookup", table, np.int32, 1) for table in lookup]
    for r in range(m):
        check_index_array(name, "labels", labels[r], -1, sizes[r])
        check_index_array(name, "lookup", lookup[r], -1, sizes[r])
    if state.get("_n_features_out") != offsets[-1]:
        refuse(name, "n_features_out is not the number of clusters")
    state.update(_labels=labels, _offsets=offsets, _counts=counts, _lookup=lookup)


class _PartitionProducts:
    """Products with ``K = (1/m) sum_r K_r`` from labels of shape (m, N)."""

    def __init__(self, labels, offsets, counts):
        self.labels, self.offsets, self.counts = labels, offsets, counts

    def matmat(self, V):
        V, flat = _as_2d(V)
        out = kernel_matmat(self.labels, self.offsets, V)
        return out[:, 0] if flat else out

    def precondition(self, V, sigma):
        V, flat = _as_2d(V)
        out = block_precondition(self.labels, self.offsets, self.counts, float(sigma), V)
        return out[:, 0] if flat else out

    def sums(self, V):
        V, _ = _as_2d(V)
        return cluster_sums(self.labels, self.offsets, V)

    def operator(self):
        n = self.labels.shape[1]
        return LinearOperator((n, n), matvec=self.matmat, matmat=self.matmat,
                              rmatvec=self.matmat, dtype=np.float64)

    def preconditioner(self, sigma):
        n = self.labels.shape[1]
        apply = lambda V: self.precondition(V, sigma)  # noqa: E731
        return LinearOperator((n, n), matvec=apply, matmat=apply, rmatvec=apply,
                              dtype=np.float64)


class RandomPartitionFeatures(
    StrictParamsMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, LockedMethodsMixin,
    VersionedStateMixin, BaseEstimator,
):
    __doc__ = f"""Sparse features of a random partition kernel (Davies & Ghahramani, 2014).

    ``n_partitions`` partitions ``rho_1 .. rho_m`` are drawn from the training data; a point's
    features are the indicators of its cluster in every partition, scaled by ``1/sqrt(m)``, so
    ``Z Z^T`` is the ``m``-sample estimate ``K = (1/m) sum_r [rho_r(a) = rho_r(b)]`` of the kernel
    ``k(a, b) = P(rho(a) = rho(b))`` (each entry's variance is at most ``1/(4m)``). A column is a
    cluster holding at least one training point; a new point in no such cluster (possible for
    the Mondrian partitions) has no feature in that partition.

    Parameters
    ----------
{PARTITIONER}{N_PARTITIONS}\
    random_state : int, RandomState instance or None, default=None

    Attributes
    ----------
    labels_ : ndarray of int32, shape (n_samples, n_partitions)
        Cluster of every training point in every partition (numbered per partition).
    n_clusters_ : ndarray of shape (n_partitions,)
        Clusters of every partition.
    partition_ : object
        The sampled partitions (the partitioner's state).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import RandomPartitionFeatures
    >>> X = np.random.default_rng(0).normal(size=(100, 3))
    >>> rpf = RandomPartitionFeatures(n_partitions=50, random_state=0).fit(X)
    >>> Z = rpf.transform(X)
    >>> K = (Z @ Z.T).toarray()
    >>> bool(np.allclose(np.diag(K), 1.0))
    True
    >>> rpf.partition_labels(X[:2]).shape
    (2, 50)
    """

    _parameter_constraints = {
        "partitioner": [str, object],
        "n_partitions": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, partitioner="fast_cluster", n_partitions=200, random_state=None):
        self.partitioner = partitioner
        self.n_partitions = n_partitions
        self.random_state = random_state

    @atomic_fit
    def fit(self, X, y=None):
        """Draw the partitions from ``X`` (and ``y`` for the supervised partitioners).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : object
        """
        self._validate_params()
        X = validate_data(self, X, dtype=np.float64, order="C")
        if y is not None:
            y = np.asarray(y)
        return self._fit(X, y, None)

    def _fit(self, X, y, draw_rows):
        """Draw the partitions from the rows ``draw_rows`` of validated ``X`` (all when None)
        and label every row: a row outside ``draw_rows`` gets its cell like a new point, and a
        cell holding such rows only is a cluster too, so ``Z Z^T`` keeps its unit diagonal."""
        partitioner = resolve_partitioner(self.partitioner)
        rng = check_random_state(self.random_state)
        if draw_rows is None:
            self.partition_ = partitioner.sample(X, y, int(self.n_partitions), rng)
        else:
            self.partition_ = partitioner.sample(
                X[draw_rows], None if y is None else y[draw_rows], int(self.n_partitions), rng)
        raw = self.partition_.cells(X)
        m, n = raw.shape
        labels = np.empty((m, n), dtype=np.int32)
        self._lookup = []
        n_clusters = np.empty(m, dtype=np.intp)
        for r in range(m):
            # Renumber the cells that hold training points 0 .. C_r - 1 (a table, O(N + ids)).
            present = np.zeros(raw[r].max() + 1, dtype=bool)
            present[raw[r]] = True
            table = np.where(present, np.cumsum(present) - 1, -1).astype(np.int32)
            labels[r] = table[raw[r]]
            n_clusters[r] = present.sum()
            self._lookup.append(table)
        self._labels = labels
        self.n_clusters_ = n_clusters
        self._offsets = np.concatenate([[0], np.cumsum(n_clusters)]).astype(np.intp)
        self._counts = np.concatenate(
            [np.bincount(labels[r], minlength=n_clusters[r]) for r in range(m)]
        ).astype(np.float64)
        self._products = _PartitionProducts(self._labels, self._offsets, self._counts)
        self._n_features_out = int(self._offsets[-1])
        return self

    def _check_loaded_state(self):
        super()._check_loaded_state()
        if "_labels" in self.__dict__:
            if not callable(getattr(self.__dict__.get("partition_"), "cells", None)):
                refuse(type(self).__name__, "partition_ is not a sampled partition")
            _check_partition_state(self.__dict__)
            self._products = _PartitionProducts(self._labels, self._offsets, self._counts)

    @property
    def labels_(self):
        """Cluster of every training point in every partition, shape (n_samples, n_partitions)."""
        check_is_fitted(self, "_labels")
        return self._labels.T

    def _partition_labels_t(self, X):
        """Labels of new points, shape (n_partitions, n_samples), -1 outside every cluster."""
        check_is_fitted(self, "_labels")
        X = validate_data(self, X, dtype=np.float64, order="C", reset=False)
        raw = self.partition_.cells(X)
        out = np.full(raw.shape, -1, dtype=np.int32)
        for r, table in enumerate(self._lookup):
            ok = (raw[r] >= 0) & (raw[r] < table.shape[0])
            out[r, ok] = table[raw[r, ok]]
        return out

    def partition_labels(self, X):
        """Cluster of every row of ``X`` in every partition (-1: no training point shares it).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of int32, shape (n_samples, n_partitions)
        """
        return np.ascontiguousarray(self._partition_labels_t(X).T)

    def _indicator(self, labels_t):
        m, n = labels_t.shape
        cols = labels_t + self._offsets[:-1, None]
        keep = labels_t >= 0
        rows = np.broadcast_to(np.arange(n), (m, n))
        return sparse.csr_matrix(
            (np.full(int(keep.sum()), 1.0 / np.sqrt(m)), (rows[keep], cols[keep])),
            shape=(n, self._n_features_out))

    def transform(self, X):
        """Normalised cluster indicators of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scipy.sparse.csr_matrix of shape (n_samples, n_features_out)
            Entries ``1/sqrt(n_partitions)`` (a pandas DataFrame of sparse columns under
            ``set_output(transform="pandas")``).
        """
        return sparse_output(self, self._indicator(self._partition_labels_t(X)), X)

    def fit_transform(self, X, y=None):
        """Fit, then the features of the training points.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), default=None

        Returns
        -------
        scipy.sparse.csr_matrix of shape (n_samples, n_features_out)
            (a pandas DataFrame of sparse columns under ``set_output(transform="pandas")``).
        """
        return sparse_output(self, self.fit(X, y)._indicator(self._labels), X)

    def kernel_operator(self):
        """The training kernel matrix ``K`` as a ``LinearOperator`` (``O(m N)`` per product).

        Returns
        -------
        scipy.sparse.linalg.LinearOperator of shape (n_samples, n_samples)
        """
        check_is_fitted(self, "_labels")
        return self._products.operator()

    def preconditioner(self, sigma):
        """``B = (1/m) sum_r (K_r + sigma I)^-1``, an SPD approximation of ``(K + sigma I)^-1``.

        Parameters
        ----------
        sigma : float
            Positive shift (``noise / signal`` variance for GP regression).

        Returns
        -------
        scipy.sparse.linalg.LinearOperator of shape (n_samples, n_samples)
        """
        check_is_fitted(self, "_labels")
        return self._products.preconditioner(sigma)

    def cross_kernel(self, X, V):
        """``K(X, X_train) V`` through the cluster sums of ``V`` (``O(m (N + n))``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        V : ndarray of shape (n_train,) or (n_train, k)

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, k)
        """
        flat = np.ndim(V) == 1
        sums = self._products.sums(V)
        out = gather_sums(self._partition_labels_t(X), self._offsets, sums,
                          1.0 / self._labels.shape[0])
        return out[:, 0] if flat else out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.transformer_tags.preserves_dtype = []
        return tags
