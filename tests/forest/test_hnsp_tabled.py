"""predict_proba tabulates the node posteriors once per call for many rows: same bits as the
per-row walk used for few rows."""

import numpy as np
import pytest

from mondrian import MondrianForestClassifier

pytestmark = pytest.mark.exact


@pytest.mark.parametrize("params", [{}, {"lifetime": 3.0}, {"branch_off_counts": "tables"}])
def test_tabulated_and_per_row_predictions_are_bit_identical(params, global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    model = MondrianForestClassifier(n_estimators=3, random_state=global_random_seed,
                                     **params).fit(X[:300], y[:300])
    nodes = max(tree.node_count for tree in model._trees)
    test = np.vstack([X[300:], rng.normal(scale=3.0, size=(300, 3))])
    assert len(test) * 16 >= nodes > 16  # the whole batch is tabulated, one row is not
    batch = model.predict_proba(test)
    rows = np.vstack([model.predict_proba(test[i : i + 1]) for i in range(len(test))])
    assert batch.tobytes() == rows.tobytes()
