"""Random features of the Laplace kernel: the two baselines of the Mondrian kernel.

Both transformers approximate ``k(x, x') = exp(-lifetime * ||x - x'||_1)`` by an inner product of
random features, ``z(x)' z(x') -> k(x, x')`` as the number of components grows (Rahimi & Recht,
2007):

* :class:`RandomBinningFeatures` partitions the input space with randomly shifted regular grids
  and maps a point to the indicators of its bins (sparse, one non-zero per grid);
* :class:`LaplaceRandomFourierFeatures` projects on random directions drawn from the kernel's
  spectral density (a Cauchy distribution) and applies a shifted cosine (dense).

Unlike :class:`mondrian.MondrianKernelFeatures`, they act on ``X`` exactly as given: there is no
feature scaling, so ``lifetime`` is an inverse width in the units of ``X``. Both must be redrawn
for every lifetime (there is no lifetime path).
"""

import numbers

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.validation import check_is_fitted, validate_data

from mondrian.estimator.atomic import unchanged_on_error
from mondrian.estimator.inputs import dense_blocks, sparse_output
from mondrian.estimator.locking import LockedMethodsMixin
from mondrian.estimator.params import check_strict_params
from mondrian.estimator.versioned import VersionedStateMixin

__all__ = ["LaplaceRandomFourierFeatures", "RandomBinningFeatures"]

# Bin indices beyond this magnitude would overflow int64 (or lose integer precision in float64).
_MAX_BIN_INDEX = 2.0**53


class _LaplaceFeatures(ClassNamePrefixFeaturesOutMixin, TransformerMixin, LockedMethodsMixin,
                       VersionedStateMixin,
                       BaseEstimator):
    """Parameters and tags shared by the random features of the Laplace kernel (not for
    direct use): ``n_components`` random draws at inverse width ``lifetime``, float64 out."""

    _parameter_constraints: dict = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "lifetime": [Interval(numbers.Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64"]
        tags.input_tags.sparse = True
        return tags

    def _fit_input(self, X):
        """The checked parameters, ``X`` as float64 (CSR when sparse) and the random state:
        the start of every ``fit``, before anything is drawn."""
        self._validate_params()
        check_strict_params(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64)
        return X, check_random_state(self.random_state)


class RandomBinningFeatures(_LaplaceFeatures):
    """Random binning features of the Laplace kernel ``exp(-lifetime * ||x - x'||_1)``.

    ``fit`` draws ``n_components`` random grids. In grid ``m`` and dimension ``d`` the bin width
    is ``w_md ~ Gamma(shape=2, scale=1/lifetime)`` and the grid shift is ``u_md ~ U[0, w_md)``;
    a point's bin in that grid is the integer key ``(ceil((x_d - u_md) / w_md))_d``. Two points
    share a bin of a one-dimensional grid with probability ``max(0, 1 - |x_d - x'_d| / w_md)``,
    whose average over the Gamma width is ``exp(-lifetime * |x_d - x'_d|)``; the dimensions are
    independent, so the probability of sharing a bin of the whole grid is the Laplace kernel.

    Each output column is one (grid, key) pair that holds at least one training point of
    ``fit``; columns are ordered by grid, then by key. ``transform`` puts ``1/sqrt(n_components)``
    in the column of the point's bin in every grid, so the inner product of two rows is the
    fraction of grids in which the points share a bin. A bin that held no training point has no
    column: it gets no entry, and the row has fewer than ``n_components`` non-zeros. (Such a bin
    could only interact with other unseen points, and a model trained on the ``fit`` data gives
    it a zero weight anyway.)

    The transformer acts on ``X`` as given, with **no feature scaling**: ``lifetime`` is the
    inverse kernel width in the units of ``X``. Scale the inputs first (for example with
    :class:`sklearn.preprocessing.MinMaxScaler`) when the features have different units.

    Parameters
    ----------
    n_components : int, default=50
        Number of random grids ``M``: the number of non-zeros of a row (at most).
    lifetime : float, default=1.0
        Inverse kernel width ``λ > 0`` of ``exp(-λ ||x - x'||_1)``, in the units of ``X``.
    random_state : int, RandomState instance or None, default=None
        Seeds the widths and shifts of the grids. Pass an int for reproducible output.

    Attributes
    ----------
    widths_ : ndarray of shape (n_components, n_features)
        Bin width of each grid and dimension.
    shifts_ : ndarray of shape (n_components, n_features)
        Grid shift of each grid and dimension, in ``[0, width)``.
    n_bins_ : ndarray of shape (n_components,)
        Number of bins of each grid that hold training points (its number of columns).
    n_features_out_ : int
        Number of output columns, ``n_bins_.sum()``.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (n_features,)
        Names of the features seen during ``fit``, when ``X`` has string column names.

    See Also
    --------
    LaplaceRandomFourierFeatures : Dense random Fourier features of the same kernel.
    mondrian.MondrianKernelFeatures : Sparse Mondrian features of the same kernel, with a path
        over the lifetime.

    Notes
    -----
    A bin's key is its row of integer indices. When the box spanned by the training indices of
    a grid has fewer than ``2**62`` cells, the key is stored exactly as one int64 (its
    mixed-radix rank in that box); otherwise as the raw bytes of the row, ``8 * n_features_in_``
    bytes. Fitting costs one sort of ``n_samples`` keys per grid, transforming one binary
    search per point and grid.

    References
    ----------
    A. Rahimi and B. Recht, "Random features for large-scale kernel machines", NIPS 2007.

    M. Balog, B. Lakshminarayanan, Z. Ghahramani, D. M. Roy and Y. W. Teh, "The Mondrian
    kernel", UAI 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import RandomBinningFeatures
    >>> X = np.array([[0.0, 0.0], [0.1, 0.2], [1.0, 1.0]])
    >>> binning = RandomBinningFeatures(n_components=2000, lifetime=2.0, random_state=0)
    >>> Z = binning.fit_transform(X)
    >>> Z.shape[0], Z.getnnz(axis=1).tolist()
    (3, [2000, 2000, 2000])
    >>> K = (Z @ Z.T).toarray()
    >>> bool(abs(K[0, 1] - np.exp(-2.0 * 0.3)) < 0.05)
    True
    """

    # Keys of a grid are packed into one int64 when its box of training bins has < 2**62 cells.
    _RADIX_BITS = 62

    def __init__(self, n_components=50, *, lifetime=1.0, random_state=None):
        self.n_components = n_components
        self.lifetime = lifetime
        self.random_state = random_state

    def fit(self, X, y=None):
        """Draw the grids and give a column to every bin that holds a point of ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training points (sparse ones are densified: every coordinate picks a bin).
        y : None
            Ignored.

        Returns
        -------
        self : object
            The fitted transformer.
        """
        # A rejected refit keeps the fitted transformer (feature_names_in_ included).
        with unchanged_on_error(self):
            X, rng = self._fit_input(X)
            X = np.vstack(dense_blocks(X))
            shape = (self.n_components, self.n_features_in_)
            self.widths_ = rng.gamma(shape=2.0, scale=1.0 / self.lifetime, size=shape)
            self.shifts_ = rng.uniform(size=shape) * self.widths_
            self._grids = [self._index_grid(self._bin_indices(X, m))
                           for m in range(self.n_components)]
            self.n_bins_ = np.array([len(grid[3]) for grid in self._grids], dtype=np.intp)
            self._offsets = np.concatenate([[0], np.cumsum(self.n_bins_)]).astype(np.intp)
        return self

    def _bin_indices(self, X, m):
        """Integer bin indices ``ceil((x_d - u_md) / w_md)`` of the rows of ``X`` in grid ``m``."""
        index = np.ceil((X - self.shifts_[m]) / self.widths_[m])
        if index.size and not np.abs(index).max() < _MAX_BIN_INDEX:
            raise ValueError(
                "X is too large relative to the bin widths (bin index above 2**53); "
                "scale the inputs or lower the lifetime"
            )
        return index.astype(np.int64)

    def _index_grid(self, index):
        """The sorted unique keys of the training bins of one grid, and how keys are encoded.

        When the box ``[low_d, low_d + span_d)`` of training bin indices has fewer than
        ``2**_RADIX_BITS`` cells, a row of indices is encoded exactly by one int64, its
        mixed-radix rank in the box (fast to sort and search). Otherwise the row of int64
        indices is viewed as one opaque byte string.

        Returns
        -------
        grid : tuple (low, span, strides, keys)
            ``low`` and ``span`` (int64 per dimension) bound the training indices; ``strides``
            are the mixed-radix strides, or None for byte-string keys; ``keys`` is the sorted
            array of unique keys (int64 or void).
        """
        low = index.min(axis=0)
        span = index.max(axis=0) - low + 1
        if np.sum(np.log2(span.astype(np.float64))) < self._RADIX_BITS:
            strides = np.ones_like(span)
            strides[:-1] = np.cumprod(span[:0:-1])[::-1]
            return low, span, strides, np.unique((index - low) @ strides)
        return low, span, None, np.unique(self._byte_keys(index))

    @staticmethod
    def _byte_keys(index):
        """Rows of an int64 array as 1-D opaque (void) scalars: equal rows, equal keys."""
        index = np.ascontiguousarray(index)
        return index.view(np.dtype((np.void, index.itemsize * index.shape[1]))).ravel()

    @classmethod
    def _lookup(cls, index, grid):
        """Rank of each row's key among the training keys of ``grid``, and whether it is one."""
        low, span, strides, keys = grid
        if strides is None:
            query = cls._byte_keys(index)
            found = np.ones(len(query), dtype=bool)
        else:
            offset = index - low
            # Inside the box of training bins (a negative offset wraps to a huge unsigned one);
            # outside it the rank may wrap around, but such rows are masked out.
            found = (offset.view(np.uint64) < span.view(np.uint64)).all(axis=1)
            query = offset @ strides
        pos = np.searchsorted(keys, query)
        np.minimum(pos, len(keys) - 1, out=pos)
        found &= keys[pos] == query
        return pos, found

    def transform(self, X):
        """Bin indicators of ``X``, scaled by ``1/sqrt(n_components)``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Points to map (sparse ones are densified 4096 rows at a time).

        Returns
        -------
        Z : scipy.sparse.csr_matrix of shape (n_samples, n_outputs)
            ``n_outputs`` is ``n_features_out_``. At most ``n_components`` non-zeros per row,
            one per grid whose bin of the point held training points (a pandas DataFrame of
            sparse columns under ``set_output(transform="pandas")``).
        """
        check_is_fitted(self, "widths_")
        original, X = X, validate_data(self, X, accept_sparse="csr", dtype=np.float64,
                                       reset=False)
        blocks = [self._indicators(block) for block in dense_blocks(X)]
        return sparse_output(self, sparse.vstack(blocks, format="csr"), original)

    def _indicators(self, X):
        """CSR bin indicators of the dense points ``X``."""
        n = X.shape[0]
        columns = np.full((n, self.n_components), -1, dtype=np.intp)
        for m, grid in enumerate(self._grids):
            pos, found = self._lookup(self._bin_indices(X, m), grid)
            columns[found, m] = self._offsets[m] + pos[found]
        # Row-major order of an (n, M) array with increasing column ranges per grid: every
        # row's column indices come out sorted, as CSR expects.
        keep = columns >= 0
        indptr = np.concatenate([[0], np.cumsum(keep.sum(axis=1))]).astype(np.intp)
        indices = columns[keep]
        data = np.full(len(indices), 1.0 / np.sqrt(self.n_components))
        return sparse.csr_matrix((data, indices, indptr), shape=(n, self.n_features_out_))

    @property
    def n_features_out_(self):
        """Number of output columns (bins holding training points, over all grids)."""
        check_is_fitted(self, "widths_")
        return int(self._offsets[-1])

    @property
    def _n_features_out(self):
        """Number of output features, for :meth:`get_feature_names_out`."""
        return self.n_features_out_


class LaplaceRandomFourierFeatures(_LaplaceFeatures):
    """Random Fourier features of the Laplace kernel ``exp(-lifetime * ||x - x'||_1)``.

    By Bochner's theorem the kernel is the characteristic function of its spectral density,
    which factorises over the dimensions into Cauchy densities of scale ``lifetime``. ``fit``
    draws ``n_components`` frequencies ``ω_r`` with i.i.d. ``Cauchy(0, lifetime)`` entries and
    phases ``b_r ~ U[0, 2π)``; ``transform`` returns ``z(x) = sqrt(2/R) cos(ω_r' x + b_r)``, so
    that ``E[z(x)' z(x')] = exp(-lifetime * ||x - x'||_1)`` (the Rahimi-Recht construction).

    The output is dense: every row has ``n_components`` non-zeros (against one per grid or tree
    for :class:`RandomBinningFeatures` and :class:`mondrian.MondrianKernelFeatures`).

    The transformer acts on ``X`` as given, with **no feature scaling**: ``lifetime`` is the
    inverse kernel width in the units of ``X``. Scale the inputs first (for example with
    :class:`sklearn.preprocessing.MinMaxScaler`) when the features have different units.

    Parameters
    ----------
    n_components : int, default=100
        Number of random features ``R``.
    lifetime : float, default=1.0
        Inverse kernel width ``λ > 0`` of ``exp(-λ ||x - x'||_1)``, in the units of ``X``: the
        scale of the Cauchy frequencies.
    random_state : int, RandomState instance or None, default=None
        Seeds the frequencies and phases. Pass an int for reproducible output.

    Attributes
    ----------
    random_weights_ : ndarray of shape (n_features, n_components)
        Frequencies ``ω_r`` (one column per feature).
    random_offset_ : ndarray of shape (n_components,)
        Phases ``b_r``.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (n_features,)
        Names of the features seen during ``fit``, when ``X`` has string column names.

    See Also
    --------
    RandomBinningFeatures : Sparse random binning features of the same kernel.
    sklearn.kernel_approximation.RBFSampler : The same construction for the Gaussian kernel.

    References
    ----------
    A. Rahimi and B. Recht, "Random features for large-scale kernel machines", NIPS 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import LaplaceRandomFourierFeatures
    >>> X = np.array([[0.0, 0.0], [0.1, 0.2]])
    >>> rff = LaplaceRandomFourierFeatures(n_components=20000, lifetime=2.0, random_state=0)
    >>> Z = rff.fit_transform(X)
    >>> Z.shape
    (2, 20000)
    >>> bool(abs(Z[0] @ Z[1] - np.exp(-2.0 * 0.3)) < 0.05)
    True
    """

    def __init__(self, n_components=100, *, lifetime=1.0, random_state=None):
        self.n_components = n_components
        self.lifetime = lifetime
        self.random_state = random_state

    def fit(self, X, y=None):
        """Draw the frequencies and phases (only the number of features of ``X`` is used).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training points.
        y : None
            Ignored.

        Returns
        -------
        self : object
            The fitted transformer.
        """
        # A rejected refit keeps the fitted transformer (feature_names_in_ included).
        with unchanged_on_error(self):
            X, rng = self._fit_input(X)
            self.random_weights_ = self.lifetime * rng.standard_cauchy(
                size=(self.n_features_in_, self.n_components)
            )
            self.random_offset_ = rng.uniform(0.0, 2.0 * np.pi, size=self.n_components)
        return self

    def transform(self, X):
        """Random Fourier features ``sqrt(2/R) cos(X ω + b)``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Points to map.

        Returns
        -------
        Z : ndarray of shape (n_samples, n_components)
            Dense features.
        """
        check_is_fitted(self, "random_weights_")
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        with np.errstate(over="ignore", invalid="ignore"):
            projection = safe_sparse_dot(X, self.random_weights_, dense_output=True)
        if not np.all(np.isfinite(projection)):
            # cos of an overflowed projection is NaN: say so instead of returning it.
            raise ValueError(
                "X is too large for these random frequencies (X @ random_weights_ overflows "
                "float64): rescale the inputs"
            )
        projection += self.random_offset_
        np.cos(projection, out=projection)
        projection *= np.sqrt(2.0 / self.n_components)
        return projection

    @property
    def _n_features_out(self):
        """Number of output features, for :meth:`get_feature_names_out`."""
        return self.n_components
