"""Kernel PCA with a random partition kernel, by Lanczos on the fast product."""

import numbers

import numpy as np
from scipy.sparse.linalg import ArpackError, LinearOperator, eigsh
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from mondrian._docstrings import N_PARTITIONS, PARTITIONER
from mondrian.estimator.atomic import atomic_fit
from mondrian.estimator.locking import LockedMethodsMixin
from mondrian.estimator.params import StrictParamsMixin
from mondrian.estimator.versioned import VersionedStateMixin
from mondrian.partition.features import RandomPartitionFeatures

__all__ = ["RandomPartitionKernelPCA"]


class RandomPartitionKernelPCA(
    StrictParamsMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, LockedMethodsMixin,
    VersionedStateMixin, BaseEstimator,
):
    __doc__ = f"""Centred kernel PCA with a random partition kernel in ``O(m N)`` per iteration.

    The top eigenvectors ``alpha`` of ``H K H`` (``H = I - 11^T/N``) are found by implicitly
    restarted Lanczos (ARPACK's ``eigsh``) that sees ``K`` only through its ``O(m N)`` product;
    below 50 training points the same product is applied to the identity and a dense solver
    is used. Training points map to ``alpha * sqrt(eigenvalue)`` (scikit-learn's convention); a
    new point ``x`` maps to ``(k(x, X) - K 1 / N)^T alpha / sqrt(eigenvalue)``, where
    ``k(x, X)^T alpha`` is read from the cluster sums of ``alpha``. Signs are fixed so that each
    component's largest-magnitude entry is positive.

    Parameters
    ----------
{PARTITIONER}\
    n_components : int, default=2
{N_PARTITIONS}\
    tol : float, default=1e-10
        Relative accuracy of the eigenvalues (ARPACK).
    random_state : int, RandomState instance or None, default=None

    Attributes
    ----------
    features_ : RandomPartitionFeatures
    eigenvalues_ : ndarray of shape (n_components,)
        In decreasing order.
    eigenvectors_ : ndarray of shape (n_samples, n_components)
        Unit-norm eigenvectors of the centred kernel matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import RandomPartitionKernelPCA
    >>> X = np.random.default_rng(0).normal(size=(300, 4))
    >>> pca = RandomPartitionKernelPCA(n_components=2, n_partitions=50, random_state=0)
    >>> pca.fit_transform(X).shape
    (300, 2)
    """

    _state_types = {"features_": RandomPartitionFeatures}

    _parameter_constraints = {
        "partitioner": [str, object],
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_partitions": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(self, partitioner="fast_cluster", n_components=2, n_partitions=200, *,
                 tol=1e-10, random_state=None):
        self.partitioner = partitioner
        self.n_components = n_components
        self.n_partitions = n_partitions
        self.tol = tol
        self.random_state = random_state

    @atomic_fit
    def fit(self, X, y=None):
        """Draw the partitions and find the top components.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), default=None
            Labels, for the supervised (random forest) partitions only.

        Returns
        -------
        self : object
        """
        self._validate_params()
        X = validate_data(self, X, dtype=np.float64, order="C")
        n = X.shape[0]
        if self.n_components > n:
            raise ValueError(f"n_components={self.n_components} > n_samples={n}")
        rng = check_random_state(self.random_state)
        self.features_ = RandomPartitionFeatures(
            self.partitioner, self.n_partitions, random_state=rng.randint(2**31 - 1)
        ).fit(X, y)
        prod = self.features_._products

        def centred(V):
            V = np.asarray(V, dtype=np.float64).reshape(n, -1)
            V = V - V.mean(axis=0)
            KV = prod.matmat(V)
            return KV - KV.mean(axis=0)

        k = int(self.n_components)
        if n < 50 or k >= n - 1:
            w, vecs = np.linalg.eigh(centred(np.eye(n)))
            w, vecs = w[::-1][:k], vecs[:, ::-1][:, :k]
        else:
            op = LinearOperator((n, n), matvec=centred, matmat=centred, dtype=np.float64)
            v0 = rng.uniform(-1.0, 1.0, size=n)
            try:
                w, vecs = eigsh(op, k=k, which="LA", tol=self.tol, v0=v0)
            except ArpackError as exc:  # e.g. a zero centred kernel: ARPACK stops
                raise ValueError(
                    "X gives no principal components: the centred kernel of the training "
                    "points is zero or degenerate (every partition puts them in one cluster, "
                    f"as for constant X); ARPACK said: {exc}"
                ) from None
            order = np.argsort(w)[::-1]
            w, vecs = w[order], vecs[:, order]
        signs = np.sign(vecs[np.argmax(np.abs(vecs), axis=0), np.arange(k)])
        signs[signs == 0] = 1.0
        self.eigenvectors_ = np.ascontiguousarray(vecs * signs)
        self.eigenvalues_ = np.maximum(w, 0.0)
        # (K 1 / N)^T alpha: the column-mean term of the centred cross kernel.
        self._col_term = prod.matmat(np.ones(n)) @ self.eigenvectors_ / n
        self._n_features_out = k
        return self

    def _scale(self):
        w = self.eigenvalues_
        return np.where(w > 0, 1.0 / np.sqrt(np.where(w > 0, w, 1.0)), 0.0)

    def transform(self, X):
        """Project ``X`` on the components.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_components)
        """
        check_is_fitted(self, "eigenvectors_")
        X = validate_data(self, X, dtype=np.float64, order="C", reset=False)
        # alpha sums to zero (it lies in the range of H), so the row-mean terms vanish.
        proj = self.features_.cross_kernel(X, self.eigenvectors_) - self._col_term
        return proj * self._scale()

    def fit_transform(self, X, y=None):
        """Fit, then the training points' projections ``alpha * sqrt(eigenvalue)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,), default=None

        Returns
        -------
        ndarray of shape (n_samples, n_components)
        """
        self.fit(X, y)
        return self.eigenvectors_ * np.sqrt(self.eigenvalues_)
