"""Slow plain-NumPy reference implementations used as oracles by the tests.

Everything here follows the project's algorithm reference (ALGORITHMS.md): the branching-off
probabilities of §5.1, the IKN posterior mean of §4.3, the per-tree predictive of §5.3 with the
two branch-off count variants of §5.2, and a Monte-Carlo of the single-point online extension of
§2.1. The code favours clarity over speed; it works on a snapshot of a fitted tree's arrays.

All times, lifetimes and distances are in *scaled* feature units (the units the Mondrian process
runs in). `TreeArrays.from_estimator` converts the original-unit boxes and thresholds that the
package reports into scaled units with the estimator's min-max map.
"""

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
from scipy import sparse

TREE_LEAF = -1
TREE_UNDEFINED = -2


@dataclass(frozen=True)
class TreeArrays:
    """A snapshot of one Mondrian tree, in scaled feature units.

    `lower`/`upper` are the data bounding boxes (node_count x n_features), `value` the raw
    per-node class histograms n_{j,k} (node_count x n_classes), `split_time` the absolute split
    times (leaves hold `lifetime`).
    """

    children_left: np.ndarray
    children_right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    split_time: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    value: np.ndarray
    lifetime: float

    @classmethod
    def from_estimator(cls, est):
        """Snapshot of a fitted `MondrianTreeClassifier`, converted to scaled units."""
        t = est.tree_
        offset, scale = feature_map(est)
        left = np.asarray(t.children_left, dtype=np.intp)
        feature = np.asarray(t.feature, dtype=np.intp)
        threshold = np.array(t.threshold, dtype=np.float64)
        internal = left != TREE_LEAF
        f = feature[internal]
        threshold[internal] = (threshold[internal] - offset[f]) / scale[f]
        return cls(
            children_left=left,
            children_right=np.asarray(t.children_right, dtype=np.intp),
            feature=feature,
            threshold=threshold,
            split_time=np.asarray(t.split_time, dtype=np.float64),
            lower=(np.asarray(t.lower_bounds, dtype=np.float64) - offset) / scale,
            upper=(np.asarray(t.upper_bounds, dtype=np.float64) - offset) / scale,
            value=np.asarray(t.value, dtype=np.float64),
            lifetime=float(est.lifetime),
        )

    @property
    def node_count(self):
        return len(self.children_left)

    @cached_property
    def parent(self):
        """Parent of every node (-1 for the root), derived from the child arrays."""
        parent = np.full(self.node_count, -1, dtype=np.intp)
        for j in range(self.node_count):
            if self.children_left[j] != TREE_LEAF:
                parent[self.children_left[j]] = j
                parent[self.children_right[j]] = j
        return parent

    @cached_property
    def root(self):
        """The only node that is nobody's child."""
        roots = np.flatnonzero(self.parent == -1)
        assert len(roots) == 1, roots
        return int(roots[0])

    def is_leaf(self, j):
        return self.children_left[j] == TREE_LEAF

    @cached_property
    def parent_time(self):
        """tau_parent(j) for every node, with tau_parent(root) = 0."""
        parent = self.parent
        return np.where(parent >= 0, self.split_time[np.maximum(parent, 0)], 0.0)


def feature_map(est):
    """The (offset, scale) of the estimator's min-max map (identity when scaling is off)."""
    n_features = est.n_features_in_
    if getattr(est, "feature_scaling", "minmax") is None:
        return np.zeros(n_features), np.ones(n_features)
    return (
        np.asarray(est.feature_offset_, dtype=np.float64),
        np.asarray(est.feature_scale_, dtype=np.float64),
    )


def to_scaled(est, X):
    """Map points in original units to the scaled units the tree runs in."""
    offset, scale = feature_map(est)
    return (np.asarray(X, dtype=np.float64) - offset) / scale


# --------------------------------------------------------------------------------------------
# §5.1 branching-off probabilities
# --------------------------------------------------------------------------------------------


def decision_path(t, x):
    """Node ids from the root to the leaf of `x` (go left iff x[feature] <= threshold)."""
    j = t.root
    path = [j]
    while not t.is_leaf(j):
        j = t.children_left[j] if x[t.feature[j]] <= t.threshold[j] else t.children_right[j]
        path.append(int(j))
    return path


def distance_to_box(t, j, x):
    """eta_j(x): the L1 distance from `x` to the data box of node `j` (0 inside the box)."""
    below = np.maximum(t.lower[j] - x, 0.0)
    above = np.maximum(x - t.upper[j], 0.0)
    return float(np.sum(below + above))


def separation_probability(eta, delta):
    """p = 1 - exp(-eta * delta) with the infinity rules of §0 (never evaluates 0 * inf)."""
    if eta == 0.0:
        return 0.0
    if np.isinf(delta):
        return 1.0
    return float(-np.expm1(-eta * delta))


def branch_off_probabilities(t, x):
    """Return (path, weights, s_end) of §5.1.

    weights[i] = s_{j_i} p_{j_i} is the probability that `x` branches off just above the i-th
    node of its path; s_end is the probability that it is never separated. They sum to 1.
    """
    path = decision_path(t, x)
    tau_parent = t.parent_time
    weights = np.zeros(len(path))
    alive = 1.0
    for i, j in enumerate(path):
        delta = t.split_time[j] - tau_parent[j]
        p = separation_probability(distance_to_box(t, j, x), delta)
        weights[i] = alive * p
        alive *= 1.0 - p
    return path, weights, alive


# --------------------------------------------------------------------------------------------
# §4 IKN posterior mean and §5.2-5.3 predictive
# --------------------------------------------------------------------------------------------


def ikn_counts(t):
    """Customers c_{j,k} and tables tab_{j,k} of §4.2 from the raw histograms n_{j,k}."""
    tab = (t.value > 0).astype(np.float64)
    c = np.array(t.value, dtype=np.float64)
    internal = t.children_left != TREE_LEAF
    c[internal] = tab[t.children_left[internal]] + tab[t.children_right[internal]]
    return c, tab


def discount(gamma, delta):
    """d = exp(-gamma * delta), 0 when delta is infinite (and gamma > 0)."""
    if np.isinf(delta):
        return 0.0 if gamma > 0 else 1.0
    return float(np.exp(-gamma * delta))


def expected_discount(eta, delta, gamma):
    """E[exp(-gamma S)], S ~ Exp(eta) truncated to [0, delta] (§5.2); needs eta > 0."""
    assert eta > 0
    if np.isinf(delta):
        return eta / (eta + gamma)
    return eta / (eta + gamma) * np.expm1(-(eta + gamma) * delta) / np.expm1(-eta * delta)


def posterior_means(t, gamma):
    """G_j of §4.3 for every node, computed top-down from G_parent(root) = uniform."""
    c, tab = ikn_counts(t)
    n_classes = t.value.shape[1]
    tau_parent = t.parent_time
    G = np.zeros_like(c)
    stack = [(t.root, np.full(n_classes, 1.0 / n_classes))]
    while stack:
        j, base = stack.pop()
        d = discount(gamma, t.split_time[j] - tau_parent[j])
        G[j] = (c[j] - d * tab[j] + d * tab[j].sum() * base) / c[j].sum()
        if not t.is_leaf(j):
            stack.append((t.children_left[j], G[j]))
            stack.append((t.children_right[j], G[j]))
    return G


def predict_proba_tree(t, X, gamma, branch_off_counts="node"):
    """The per-tree predictive of §5.3 for every row of `X` (scaled units).

    branch_off_counts="node" reuses node j's IKN counts for the inserted node ([BL]);
    "tables" uses the strict IKN counts c = tab_j of the inserted node.
    """
    c, tab = ikn_counts(t)
    G = posterior_means(t, gamma)
    parent = t.parent
    tau_parent = t.parent_time
    n_classes = t.value.shape[1]
    uniform = np.full(n_classes, 1.0 / n_classes)
    out = np.zeros((len(X), n_classes))
    for row, x in enumerate(np.asarray(X, dtype=np.float64)):
        path, weights, s_end = branch_off_probabilities(t, x)
        proba = s_end * G[path[-1]]
        for j, w in zip(path, weights, strict=True):
            if w == 0.0:
                continue
            base = G[parent[j]] if parent[j] >= 0 else uniform
            eta = distance_to_box(t, j, x)
            d_bar = expected_discount(eta, t.split_time[j] - tau_parent[j], gamma)
            T = tab[j].sum()
            if branch_off_counts == "node":
                g = (c[j] - d_bar * tab[j] + d_bar * T * base) / c[j].sum()
            elif branch_off_counts == "tables":
                g = ((1.0 - d_bar) * tab[j] + d_bar * T * base) / T
            else:
                raise ValueError(branch_off_counts)
            proba = proba + w * g
        out[row] = proba
    return out


# --------------------------------------------------------------------------------------------
# §2.1 single-point online extension (Monte-Carlo oracle for §5.1)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Extension:
    """Outcome of extending a tree by one point.

    `branched` is the node above which a new parent was inserted (-1 if none), `tree` the
    extended tree, `new_parent`/`new_leaf` the ids of the created nodes (-1 if none) and `gap`
    the new parent's split time minus tau_parent(branched).
    """

    branched: int
    tree: TreeArrays
    new_parent: int = -1
    new_leaf: int = -1
    gap: float = np.nan


def _open_uniform(rng, a, b):
    """Uniform on the open interval (a, b); resample if rounding returns an endpoint."""
    while True:
        u = rng.uniform(a, b)
        if a < u < b:
            return u


def _descend(t, x, rng):
    """The walk of ExtendMondrianBlock (§2.1) for `x` (scaled units).

    Returns (j, gap, lower, upper): the node above which a new parent is inserted (-1 if none),
    the gap between the new split time and tau_parent(j), and the boxes extended on the way.
    Every node, leaves included, races an Exp(eta_j) clock against its own split time (the
    lifetime for leaves): pausing is ignored, as in the predictive of §5.
    """
    lower = np.array(t.lower)
    upper = np.array(t.upper)
    tau_parent = t.parent_time
    j = t.root
    while True:
        below = np.maximum(lower[j] - x, 0.0)
        above = np.maximum(x - upper[j], 0.0)
        rate = float(np.sum(below + above))
        gap = rng.exponential(1.0 / rate) if rate > 0 else np.inf
        if tau_parent[j] + gap < t.split_time[j]:
            return int(j), float(gap), lower, upper
        lower[j] = np.minimum(lower[j], x)
        upper[j] = np.maximum(upper[j], x)
        if t.is_leaf(j):
            return -1, np.nan, lower, upper
        j = t.children_left[j] if x[t.feature[j]] <= t.threshold[j] else t.children_right[j]


def extend_once(t, x, rng):
    """Run ExtendMondrianBlock (§2.1) once for an unlabelled point `x` (scaled units).

    Returns an `Extension` holding the extended tree (new nodes appended at the end).
    """
    j, gap, lower, upper = _descend(t, x, rng)
    if j < 0:
        return Extension(branched=-1, tree=replace(t, lower=lower, upper=upper))
    tau_parent = t.parent_time
    parent = t.parent
    # a new parent k of j, and a new leaf holding x alone, are appended to the arrays; the cut
    # dimension is drawn in proportion to the extension of j's box, the cut location uniformly
    # in the open gap between the box and x
    extent = np.maximum(lower[j] - x, 0.0) + np.maximum(x - upper[j], 0.0)
    d = int(rng.choice(len(x), p=extent / extent.sum()))
    if x[d] > upper[j, d]:
        xi = _open_uniform(rng, upper[j, d], x[d])
    else:
        xi = _open_uniform(rng, x[d], lower[j, d])
    k, leaf = t.node_count, t.node_count + 1
    x_goes_left = x[d] <= xi
    new_left = np.append(t.children_left, [leaf if x_goes_left else j, TREE_LEAF])
    new_right = np.append(t.children_right, [j if x_goes_left else leaf, TREE_LEAF])
    p = parent[j]
    if p >= 0:
        if new_left[p] == j:
            new_left[p] = k
        else:
            new_right[p] = k
    n_classes = t.value.shape[1]
    tree = TreeArrays(
        children_left=new_left,
        children_right=new_right,
        feature=np.append(t.feature, [d, TREE_UNDEFINED]),
        threshold=np.append(t.threshold, [xi, TREE_UNDEFINED]),
        split_time=np.append(t.split_time, [tau_parent[j] + gap, t.lifetime]),
        lower=np.vstack([lower, np.minimum(lower[j], x), x]),
        upper=np.vstack([upper, np.maximum(upper[j], x), x]),
        value=np.vstack([t.value, t.value[j], np.zeros(n_classes)]),
        lifetime=t.lifetime,
    )
    return Extension(branched=int(j), tree=tree, new_parent=k, new_leaf=leaf, gap=float(gap))


def monte_carlo_branch_off(t, x, n_rep, rng):
    """Empirical distribution of where `x` branches off, from `n_rep` extension walks.

    Returns (path, counts, gaps): counts[i] is how often the new parent was inserted above the
    i-th node of the path, counts[-1] how often `x` was never separated, and gaps[i] the list of
    sampled gaps S (new split time minus tau_parent) for the i-th node.
    """
    path = decision_path(t, x)
    position = {j: i for i, j in enumerate(path)}
    counts = np.zeros(len(path) + 1, dtype=np.int64)
    gaps = [[] for _ in path]
    for _ in range(n_rep):
        j, gap, _, _ = _descend(t, x, rng)
        if j < 0:
            counts[-1] += 1
        else:
            counts[position[j]] += 1
            gaps[position[j]].append(gap)
    return path, counts, [np.asarray(g) for g in gaps]


def grid_ridge_system(columns, n_features, n_train, n_grids, alpha):
    """The Mondrian grid ridge solved from scratch: the design ``Z`` of the first ``n_train``
    points (their cell ``columns[g, i]`` in each grid ``g``, entries ``1 / sqrt(n_grids)``) and
    ``A = Z'Z + alpha I`` over ``n_features`` columns."""
    rows = np.repeat(np.arange(n_train), n_grids)
    Z = sparse.csr_matrix((np.full(n_train * n_grids, 1 / np.sqrt(n_grids)),
                           (rows, columns[:, :n_train].T.ravel())), shape=(n_train, n_features))
    return Z, (Z.T @ Z).toarray() + alpha * np.eye(n_features)
