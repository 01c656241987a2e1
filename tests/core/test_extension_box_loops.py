"""The online extension's vector box loops (``mf_extent``, ``mf_include``, ``mf_join`` in
``core/_box_loops.h``) at every feature count a lane split can meet.

They work on 2-double vectors (the extent's sums in 4 lanes) with scalar tails, so the widths
1, 2, 3, 5, 6 and 7 each take a different mix of vector and tail code. After mini-batches and
one-row updates on data with signed zeros, duplicated rows and a constant column, every box a
tree stores must still be the min/max of the points below its node, bit for bit (the rule a
lean tree's rebuilt boxes rely on), and the forest must predict as a copy of itself grown from
the same batches (the extension is deterministic given the seed).
"""

import numpy as np
import pytest
from test_box_invariant import _check_boxes

from mondrian import MondrianForestClassifier

from _data import awkward_classes

pytestmark = pytest.mark.exact


def _signed_zeros(X, seed):
    """``X`` with a quarter of its entries of the first column set to -0.0 or +0.0."""
    rng = np.random.RandomState(seed)
    X = X.copy()
    rows = rng.rand(len(X)) < 0.25
    X[rows, 0] = np.where(rng.rand(rows.sum()) < 0.5, -0.0, 0.0)
    return X


def _grown(X, y, seed):
    model = MondrianForestClassifier(n_estimators=2, random_state=seed)
    for start in range(0, 180, 9):
        model.partial_fit(X[start:start + 9], y[start:start + 9], classes=np.unique(y))
    for i in range(180, len(y)):
        model.partial_fit(X[i:i + 1], y[i:i + 1])
    return model


@pytest.mark.parametrize("n_features", [1, 2, 3, 5, 6, 7])
def test_extension_boxes_at_every_lane_split(n_features):
    d = max(n_features, 4)  # (awkward_classes puts its constant and tied columns at 2, 3)
    X, y = awkward_classes(7, 220, d)
    X = _signed_zeros(X[:, :n_features], 7)
    model = _grown(X, y, 7)
    _check_boxes(model)
    again = _grown(X, y, 7)
    np.testing.assert_array_equal(model.predict_proba(X), again.predict_proba(X))
