"""Random partitions of a dataset: the samplers behind the random partition kernels.

A partitioner is a small specification (its parameters only). ``sample(X, y, n_partitions,
random_state)`` draws ``n_partitions`` partitions from the training data and returns a sampled
state whose ``cells(X)`` gives, per partition, the raw cell id of every row of ``X`` (a
non-negative integer, or -1 for a point that shares its cell with no training point).
:class:`~mondrian.partition.RandomPartitionFeatures` renumbers the cells that hold training
points. Algorithm reference §11; Davies & Ghahramani, "The Random Forest Kernel and other kernels
for big data from random partitions" (2014).
"""

import numbers

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from mondrian.kernel._features import extension_leaves

__all__ = [
    "FastClusterPartitioner",
    "MondrianPartitioner",
    "RandomForestPartitioner",
    "resolve_partitioner",
]


class FastClusterPartitioner:
    """The fast cluster partitions (Algorithm 2 of Davies & Ghahramani).

    Per partition: a feature mask ``b ~ Bernoulli(1/2)^D`` (an all-zero mask is redrawn), a level
    ``s ~ Uniform{0, ..., h}``, ``min(2^s, N)`` distinct training points as centres, and every
    point in the cluster of its nearest centre in the masked Euclidean distance (ties go to the
    first centre). Features are standardised on the training data first. Labels are not used, so
    unlabelled points may be included (semi-supervised use).

    Parameters
    ----------
    max_level : int, default=6
        ``h``: at most ``2^h`` centres per partition (and never more than ``log2(N)``). The
        default keeps the cost of a partition ``O(N D 2^h / (h + 1))`` small (the paper gives no
        value); larger ``h`` gives a more local kernel.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian.partition import FastClusterPartitioner
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> state = FastClusterPartitioner(max_level=3).sample(X, None, 4, 0)
    >>> state.cells(X).shape
    (4, 50)
    """

    uses_labels = False

    def __init__(self, max_level=6):
        self.max_level = max_level

    def sample(self, X, y, n_partitions, random_state):
        """Draw the masks and centres of ``n_partitions`` partitions.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
        y : ignored
        n_partitions : int
        random_state : int, RandomState instance or None

        Returns
        -------
        _FastClusterState
        """
        if not isinstance(self.max_level, numbers.Integral) or self.max_level < 0:
            raise ValueError(f"max_level must be a non-negative int, got {self.max_level!r}")
        rng = check_random_state(random_state)
        n, d = X.shape
        mean = X.mean(axis=0)
        scale = X.std(axis=0)
        scale[scale == 0] = 1.0
        Xs = (X - mean) / scale
        h = min(int(self.max_level), int(np.floor(np.log2(n)))) if n > 1 else 0
        masks, centres = [], []
        for _ in range(n_partitions):
            mask = rng.random_sample(d) < 0.5
            while d > 0 and not mask.any():
                mask = rng.random_sample(d) < 0.5
            s = rng.randint(h + 1)
            chosen = rng.choice(n, size=min(2**s, n), replace=False)
            masks.append(mask)
            centres.append(Xs[chosen] * mask)
        return _FastClusterState(mean, scale, masks, centres)


class _FastClusterState:
    def __init__(self, mean, scale, masks, centres):
        self.mean, self.scale, self.masks, self.centres = mean, scale, masks, centres

    def cells(self, X):
        """Index of the nearest centre of every row of ``X``, per partition."""
        Xs = (X - self.mean) / self.scale
        out = np.empty((len(self.centres), X.shape[0]), dtype=np.int32)
        for r, C in enumerate(self.centres):
            if C.shape[0] == 1:
                out[r] = 0
                continue
            # |x - c|^2 over the mask = |c|^2 - 2 x.c (+ |x|^2, the same for every centre).
            dist = (C * C).sum(axis=1) - 2.0 * (Xs @ C.T)
            out[r] = np.argmin(dist, axis=1)
        return out


def _tree_parents(forest):
    """Per tree of a fitted forest: parent of every node (-1 at the root)."""
    if hasattr(forest, "estimators_"):
        parents = []
        for est in forest.estimators_:
            left, right = est.tree_.children_left, est.tree_.children_right
            parent = np.full(left.shape[0], -1, dtype=np.intp)
            internal = np.flatnonzero(left >= 0)
            parent[left[internal]] = internal
            parent[right[internal]] = internal
            parents.append(parent)
        return parents
    return [np.asarray(tree.nodes_array["parent"], dtype=np.intp) for tree in forest._trees]


def _depths(parent):
    """Depth of every node from the parent array (parents precede children in both layouts)."""
    depth = np.zeros(parent.shape[0], dtype=np.intp)
    order = np.argsort(parent >= 0, kind="stable")  # the root first
    for j in order:
        if parent[j] >= 0:
            depth[j] = depth[parent[j]] + 1
    return depth


class RandomForestPartitioner:
    """The random forest partitions (Algorithm 1 of Davies & Ghahramani).

    Partition ``r`` reads tree ``r mod n_trees`` of a forest trained on the labels: a depth
    ``d ~ Uniform{0, ..., h}`` is drawn (``h`` the tree's height) and every point's cluster is the
    ancestor at depth ``d`` of the leaf it reaches. A leaf shallower than ``d`` is its own cluster
    (the paper assumes complete trees and does not cover this case). The kernel is supervised:
    only training labels may be used to fit the forest.

    Parameters
    ----------
    forest : estimator or None, default=None
        A scikit-learn forest (``RandomForestRegressor``, ``ExtraTreesClassifier``, ...) or one of
        this library's ``MondrianForestRegressor`` / ``MondrianForestClassifier``. A fitted
        forest is used as is; an unfitted one is cloned and fitted on the training data. ``None``
        fits a ``RandomForestRegressor`` with one tree per partition, ``max_features=1/3`` and
        ``min_samples_leaf=5`` (Breiman's leaf size for regression forests).

    Notes
    -----
    The leaf size matters for GP regression. Fully grown trees (``min_samples_leaf=1``) put
    almost every training point alone in its leaf, so the deepest levels act as a per-point
    nugget of the kernel: the GP interpolates the training targets, its fitted noise variance
    collapses, and a test point, which shares its leaf with one noisy training point, gets a
    large posterior variance (on yacht the test standard deviation was 16x the median error
    and the test log-likelihood -1.96 against -0.42 with leaves of at least 5; energy -0.94
    against -0.40). Training the forest on a held-out half of the rows helped less (-1.19 and
    -0.60). The benchmark note of the partition kernels has the measurements.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian.partition import RandomForestPartitioner
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 2)); y = X[:, 0] + 0.1 * rng.normal(size=60)
    >>> state = RandomForestPartitioner().sample(X, y, 5, 0)
    >>> state.cells(X).shape
    (5, 60)
    """

    #: The partitions depend on the training labels, so their marginal likelihood on the same
    #: labels is optimistic (``RandomPartitionGPRegressor(variances="auto")`` holds rows out).
    uses_labels = True

    def __init__(self, forest=None):
        self.forest = forest

    def sample(self, X, y, n_partitions, random_state):
        """Fit (or take) the forest and draw one depth per partition.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
        y : ndarray of shape (n_samples,)
            Training labels (required).
        n_partitions : int
        random_state : int, RandomState instance or None

        Returns
        -------
        _ForestState
        """
        rng = check_random_state(random_state)
        forest = self.forest
        if forest is None:
            from sklearn.ensemble import RandomForestRegressor

            forest = RandomForestRegressor(
                n_estimators=n_partitions, max_features=1.0 / 3.0, min_samples_leaf=5,
                random_state=rng.randint(2**31 - 1))
        try:
            check_is_fitted(forest)
        except NotFittedError:
            if y is None:
                raise ValueError("the random forest partitioner needs training labels") from None
            forest = clone(forest)
            if "random_state" in forest.get_params():
                forest.set_params(random_state=rng.randint(2**31 - 1))
            forest.fit(X, y)
        parents = _tree_parents(forest)
        depths = [_depths(parent) for parent in parents]
        trees = np.arange(n_partitions) % len(parents)
        cut = np.array([rng.randint(depths[t].max() + 1) for t in trees], dtype=np.intp)
        return _ForestState(forest, parents, depths, trees, cut)


class _ForestState:
    def __init__(self, forest, parents, depths, trees, cut):
        self.forest, self.parents, self.depths = forest, parents, depths
        self.trees, self.cut = trees, cut

    def cells(self, X):
        """Node id of every row's ancestor at the drawn depth (its leaf if shallower)."""
        leaves = np.asarray(self.forest.apply(X))
        if leaves.ndim == 1:
            leaves = leaves[:, None]
        out = np.empty((len(self.trees), X.shape[0]), dtype=np.int32)
        for r, (t, d) in enumerate(zip(self.trees, self.cut, strict=True)):
            node = leaves[:, t].astype(np.intp)
            parent, depth = self.parents[t], self.depths[t]
            deep = depth[node] > d
            while deep.any():
                node[deep] = parent[node[deep]]
                deep = depth[node] > d
            out[r] = node
        return out


class MondrianPartitioner:
    """The Mondrian kernel as a random partition kernel.

    Partition ``r`` is the leaf partition of a Mondrian tree (sampled by
    :class:`~mondrian.MondrianKernelFeatures` on min-max scaled features) pruned at a lifetime
    ``lambda_r``: the fixed ``lifetime`` (kernel ``exp(-lifetime * r)``, ``r`` the L1 distance
    of the scaled points) or, with ``random_lifetime=True``, ``lambda_r ~ Uniform[0, lifetime]``
    (kernel ``(1 - exp(-L r)) / (L r)`` with ``L = lifetime``). New points follow the extension of
    the tree (they may be cut off: cell -1).

    Parameters
    ----------
    lifetime : float, default=1.0
    random_lifetime : bool, default=False

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian.partition import MondrianPartitioner
    >>> X = np.random.default_rng(0).uniform(size=(30, 2))
    >>> p = MondrianPartitioner(lifetime=3.0, random_lifetime=True)
    >>> p.sample(X, None, 8, 0).cells(X).shape
    (8, 30)
    >>> float(p.closed_form(0.0))
    1.0
    """

    uses_labels = False

    def __init__(self, lifetime=1.0, random_lifetime=False):
        self.lifetime = lifetime
        self.random_lifetime = random_lifetime

    def closed_form(self, r):
        """The limit kernel at L1 distance ``r`` (scaled features).

        Parameters
        ----------
        r : array-like

        Returns
        -------
        ndarray
        """
        lr = float(self.lifetime) * np.asarray(r, dtype=np.float64)
        if not self.random_lifetime:
            return np.exp(-lr)
        safe = np.where(lr > 0, lr, 1.0)
        return np.where(lr > 0, -np.expm1(-safe) / safe, 1.0)

    def sample(self, X, y, n_partitions, random_state):
        """Sample ``n_partitions`` Mondrian trees on ``X`` and their lifetimes.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
        y : ignored
        n_partitions : int
        random_state : int, RandomState instance or None

        Returns
        -------
        _MondrianState
        """
        from mondrian.kernel import MondrianKernelFeatures

        if not self.lifetime > 0:
            raise ValueError(f"lifetime must be positive, got {self.lifetime!r}")
        rng = check_random_state(random_state)
        features = MondrianKernelFeatures(
            n_estimators=n_partitions, lifetime=float(self.lifetime),
            random_state=rng.randint(2**31 - 1)).fit(X)
        if self.random_lifetime:
            lifetimes = rng.uniform(0.0, float(self.lifetime), size=n_partitions)
        else:
            lifetimes = np.full(n_partitions, float(self.lifetime))
        return _MondrianState(features, lifetimes)


class _MondrianState:
    def __init__(self, features, lifetimes):
        self.features, self.lifetimes = features, lifetimes

    def scale(self, X):
        """``X`` in the scaled coordinates of the trees (the closed form's distances)."""
        return self.features._validate_X_predict(X)

    def cells(self, X):
        """Leaf of every row in every tree pruned at its lifetime, -1 where cut off."""
        Xs = np.ascontiguousarray(self.scale(X))
        trees, keys = self.features._trees, self.features._keys
        out = np.empty((len(trees), X.shape[0]), dtype=np.int32)
        for r, lam in enumerate(self.lifetimes):
            out[r] = extension_leaves([trees[r]], Xs, keys[r:r + 1], float(lam))[:, 0]
        return out


_NAMED = {
    "fast_cluster": FastClusterPartitioner,
    "random_forest": RandomForestPartitioner,
    "mondrian": MondrianPartitioner,
}


def resolve_partitioner(partitioner):
    """A partitioner object from a name (``"fast_cluster"``, ``"random_forest"``,
    ``"mondrian"``) or an object with a ``sample`` method.

    Parameters
    ----------
    partitioner : str or object

    Returns
    -------
    object
    """
    if isinstance(partitioner, str):
        if partitioner not in _NAMED:
            raise ValueError(
                f"unknown partitioner {partitioner!r}; expected one of {sorted(_NAMED)}")
        return _NAMED[partitioner]()
    if not hasattr(partitioner, "sample"):
        raise TypeError("a partitioner is a name or an object with a sample method")
    return partitioner
