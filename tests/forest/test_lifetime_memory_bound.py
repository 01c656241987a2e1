"""A finite lifetime caps the size of every tree, whatever the number of points.

The Mondrian process of lifetime lambda on a box with sides l_1..l_D has on average
prod_d (1 + lambda l_d) cells (Mourtada, Gaiffas and Scornet 2020, for the unit cube; the
general box follows by rescaling each axis). A Mondrian tree is that process restricted to the
data, so its expected number of leaves is at most that product, in the coordinates after the
feature map (min-max to [0, 1], then times the feature weights), and reaches it when the data
fill the box. docs/index.md ("Bounding memory") builds its memory cap on this figure.
"""

import numpy as np
import pytest

from mondrian import MondrianForestClassifier, MondrianForestRegressor

pytestmark = pytest.mark.statistical


def _leaf_counts(model):
    return np.array([int((est.tree_.children_left == -1).sum()) for est in model.estimators_])


@pytest.mark.parametrize(("weights", "lifetime"), [(None, 3.0), ([1.0, 0.5], 3.0),
                                                   ([1.0, 0.0], 4.0)])
def test_expected_leaves_of_dense_data_reach_the_product_bound(weights, lifetime):
    """Dense uniform data: the mean number of leaves over 150 trees is prod(1 + lambda w_d) up
    to 4 standard errors (the leaf count of one tree has a finite variance)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(4000, 2))
    model = MondrianForestRegressor(n_estimators=150, lifetime=lifetime, random_state=1,
                                    feature_weights=weights).fit(X, X.sum(axis=1))
    counts = _leaf_counts(model)
    w = np.ones(2) if weights is None else np.asarray(weights)
    bound = np.prod(1.0 + lifetime * w)
    se = counts.std(ddof=1) / np.sqrt(counts.size)
    assert abs(counts.mean() - bound) < 4 * se + 0.05 * bound


def test_leaves_stay_bounded_as_the_stream_grows():
    """The bound does not depend on the number of points: 10x more rows of the same law
    (streamed with partial_fit) leave the mean leaf count at the product, not 10x larger."""
    rng = np.random.default_rng(2)
    X = rng.uniform(size=(6000, 3))
    y = (X[:, 0] > 0.5).astype(int)
    model = MondrianForestClassifier(n_estimators=60, lifetime=1.5, random_state=3)
    model.partial_fit(X[:600], y[:600], classes=[0, 1])
    small = _leaf_counts(model).mean()
    for start in range(600, 6000, 1800):
        model.partial_fit(X[start:start + 1800], y[start:start + 1800])
    large = _leaf_counts(model)
    bound = (1.0 + 1.5) ** 3
    se = large.std(ddof=1) / np.sqrt(large.size)
    assert large.mean() < bound + 4 * se
    assert large.mean() < 1.5 * small
