"""Mondrian grid features (section 9): indicators of the cells of ``M`` Mondrian grids."""

import numbers

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from mondrian._docstrings import GRID_FEATURE_SCALING
from mondrian.core.feature_map import FeatureScaler
from mondrian.core.state_checks import loaded_array, refuse
from mondrian.estimator.atomic import atomic_fit
from mondrian.estimator.inputs import sparse_output
from mondrian.estimator.locking import LockedMethodsMixin
from mondrian.estimator.params import StrictParamsMixin
from mondrian.estimator.versioned import VersionedStateMixin
from mondrian.grid._cuts import GridSample, key_hashes

__all__ = ["MondrianGridFeatures", "GridMap", "check_lifetimes"]


def check_lifetimes(lifetimes, n_features):
    """One lifetime per input dimension, from an array or a scalar: a ``ValueError`` names the
    problem (wrong length, negative, NaN)."""
    if isinstance(lifetimes, (bool, np.bool_)) or isinstance(lifetimes, str):
        raise TypeError(f"lifetimes must be a number or an array of numbers, got {lifetimes!r}")
    try:
        values = np.asarray(lifetimes, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"lifetimes must be a number or an array of numbers, got {lifetimes!r}") from None
    if values.ndim == 0:
        values = np.full(n_features, float(values))
    if values.shape != (n_features,):
        raise ValueError(
            f"lifetimes must be a scalar or hold one value per input feature ({n_features}), "
            f"got shape {values.shape}")
    if np.isnan(values).any() or (values < 0).any():
        raise ValueError(f"lifetimes must be in [0, inf], got {values}")
    return np.ascontiguousarray(values)


class GridMap:
    """The fitted feature map of a Mondrian grid: first-cut times, lifetimes and the cells
    (non-empty at fit) numbered as feature columns, grid after grid.

    Parameters
    ----------
    sample : GridSample
        First-cut times, sampled on every point the model was fitted on.
    lifetimes : ndarray of shape (n_dims,)
    X_cells : ndarray of shape (n, n_dims)
        The scaled points whose cells are the features.
    """

    def __init__(self, sample, lifetimes, X_cells):
        self.sample = sample
        self.lifetimes = np.ascontiguousarray(lifetimes, dtype=np.float64)
        self.segments = sample.segments(self.lifetimes)
        self.hashes, self.keys, self.columns = [], [], []
        offset = 0
        for m in range(sample.n_grids):
            keys = sample.keys(X_cells, m, self.lifetimes, self.segments)
            hashes = key_hashes(keys)
            unique, first = np.unique(hashes, return_index=True)
            cell_keys = keys[first]
            if len(np.unique(cell_keys, axis=0)) != len(unique):  # a 64-bit hash collision
                raise RuntimeError("cell keys collide; refit with another random_state")
            self.hashes.append(unique)
            self.keys.append(cell_keys)
            self.columns.append(offset)
            offset += len(unique)
        self.columns.append(offset)
        self.n_features = offset

    def __setstate__(self, state):
        sample = state.get("sample")
        if not isinstance(sample, GridSample):
            refuse("GridMap", "its sample is not a GridSample")
        M, D = sample.n_grids, sample.n_dims
        lifetimes = loaded_array("GridMap", "lifetimes", state.get("lifetimes"), np.float64, 1,
                                 (D,))
        parts = [state.get(name) for name in ("hashes", "keys", "columns")]
        if not all(isinstance(part, list) for part in parts) or [len(p) for p in parts] != [
                M, M, M + 1]:
            refuse("GridMap", "hashes, keys and columns must be lists of one entry per grid")
        hashes = [loaded_array("GridMap", "hashes", h, np.int64, 1) for h in parts[0]]
        keys = [loaded_array("GridMap", "keys", k, np.intp, 2, (len(h), D))
                for k, h in zip(parts[1], hashes, strict=True)]
        columns = [int(c) for c in parts[2]]
        if columns != np.cumsum([0] + [len(h) for h in hashes]).tolist() or (
                state.get("n_features") != columns[-1]):
            refuse("GridMap", "columns are not the running counts of the cells")
        self.__dict__.update(state)
        self.lifetimes, self.hashes, self.keys, self.columns = lifetimes, hashes, keys, columns
        self.segments = sample.segments(lifetimes)  # (derived: never read from the state)

    def transform(self, X):
        """CSR indicators of the cells holding the scaled points ``X``, scaled by ``1/sqrt(M)``:
        at most one entry per grid (none when the point is in a cell not seen at fit)."""
        M = self.sample.n_grids
        rows, cols = [], []
        for m in range(M):
            keys = self.sample.keys(X, m, self.lifetimes, self.segments)
            hashes = key_hashes(keys)
            pos = np.searchsorted(self.hashes[m], hashes)
            pos = np.minimum(pos, len(self.hashes[m]) - 1)
            found = (self.hashes[m][pos] == hashes) & np.all(self.keys[m][pos] == keys, axis=1)
            rows.append(np.flatnonzero(found))
            cols.append(self.columns[m] + pos[found])
        rows = np.concatenate(rows)
        cols = np.concatenate(cols)
        data = np.full(len(rows), 1.0 / np.sqrt(M))
        return sparse.csr_matrix((data, (rows, cols)), shape=(X.shape[0], self.n_features))


def draw_seed(rng):
    """A 63-bit seed from a RandomState."""
    return int(rng.randint(np.iinfo(np.int64).max, dtype=np.int64))


class MondrianGridFeatures(ClassNamePrefixFeaturesOutMixin, TransformerMixin, StrictParamsMixin,
                           LockedMethodsMixin, VersionedStateMixin, BaseEstimator):
    __doc__ = f"""Sparse random features of the ARD Laplace kernel from Mondrian grids.

    Each of the ``n_grids`` grids cuts every input dimension ``d`` by a 1-D Mondrian process
    (a Poisson process) of lifetime ``λ_d``; the cuts are full hyperplanes and the cells the
    boxes between them. A point's features are the indicators of its cell in each grid, scaled
    by ``1/sqrt(M)``, so that ``Z Z'`` converges to ``exp(-Σ_d λ_d |x_d - x'_d|)`` (in the units
    of ``feature_scaling``). Only the first-cut time of each gap between distinct coordinates
    of the fitted points is sampled.

    ``transform`` is inductive (section 9 of the algorithms notes): a coordinate seen at fit
    takes its segment; a new one inside a gap splits the gap's first cut between its two parts
    (the part holding it drawn uniformly, the other part's first cut later by memorylessness)
    and joins a neighbour's segment when no cut separates them. A point that ends up in a cell
    holding no fitted point gets no entry for that grid (such a cell is not a feature). The
    draws are hashes of the coordinate, so a point always gets the same features, and for a new
    and a fitted point the probability of sharing a cell is exactly the kernel. (Two new
    points are placed independently given the grids, so among new points only their sharing of
    fitted cells is represented.)

    Parameters
    ----------
    n_grids : int, default=50
        Number of grids M (each row of the output has at most M non-zeros).
    lifetimes : float or array-like of shape (n_features,), default=1.0
        Lifetime λ_d of each input dimension (inverse kernel width, scaled units); a scalar is
        used for every dimension. A lifetime of 0 never cuts its dimension.
{GRID_FEATURE_SCALING}\
    random_state : int, RandomState instance or None, default=None
        Seeds the first-cut times.

    Attributes
    ----------
    lifetimes_ : ndarray of shape (n_features,)
        The lifetimes used.
    n_features_in_ : int
    n_features_out_ : int
        Number of features: the non-empty cells of the fitted data over all grids.

    Notes
    -----
    Thread safety (:class:`~mondrian.estimator.locking.LockedMethodsMixin`, as the other
    estimators): any number of threads may read the model at once (``transform``,
    pickling); ``fit`` runs alone, and reads arriving meanwhile wait for it. ``fit`` is
    atomic: when it raises, the previous model is left as it was.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import MondrianGridFeatures
    >>> X = np.random.RandomState(0).uniform(size=(6, 2))
    >>> Z = MondrianGridFeatures(n_grids=100, lifetimes=[2.0, 0.0], random_state=0).fit_transform(X)
    >>> Z.shape[0], bool(np.allclose(Z.multiply(Z).sum(axis=1), 1.0))
    (6, True)
    """

    _state_types = {"_map": GridMap}

    _parameter_constraints = {
        "n_grids": [Interval(numbers.Integral, 1, None, closed="left")],
        "lifetimes": ["array-like", Interval(numbers.Real, 0, None, closed="both")],
        "feature_scaling": [StrOptions({"minmax"}), None],
        "random_state": ["random_state"],
    }

    def __init__(self, n_grids=50, *, lifetimes=1.0, feature_scaling="minmax",
                 random_state=None):
        self.n_grids = n_grids
        self.lifetimes = lifetimes
        self.feature_scaling = feature_scaling
        self.random_state = random_state

    @atomic_fit
    def fit(self, X, y=None):
        """Sample the grids' first-cut times on ``X`` and number its cells.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self : object
        """
        self._validate_params()
        X = validate_data(self, X, dtype=np.float64, order="C")
        lifetimes = check_lifetimes(self.lifetimes, X.shape[1])
        self._scaler = FeatureScaler(self.feature_scaling == "minmax", warm_up=X.shape[0])
        self._scaler.update(X)
        X_scaled = self._scaler.transform(X)
        seed = draw_seed(check_random_state(self.random_state))
        self._map = GridMap(GridSample(X_scaled, int(self.n_grids), seed), lifetimes, X_scaled)
        self.lifetimes_ = lifetimes
        return self

    def transform(self, X):
        """Cell-indicator features of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scipy.sparse.csr_matrix of shape (n_samples, n_outputs)
            A pandas DataFrame of sparse columns under ``set_output(transform="pandas")``.
        """
        check_is_fitted(self, "_map")
        original, X = X, validate_data(self, X, reset=False, dtype=np.float64, order="C")
        return sparse_output(self, self._map.transform(self._scaler.transform(X, clip=True)),
                             original)

    @property
    def n_features_out_(self):
        """Number of output features."""
        check_is_fitted(self, "_map")
        return self._map.n_features

    @property
    def _n_features_out(self):
        return self.n_features_out_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = []
        tags.input_tags.sparse = False
        return tags
