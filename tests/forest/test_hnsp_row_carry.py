"""The one-row HNSP walk hands each step's row of the child toward ``x`` to the next step: a
leaf reads it instead of summing its points, and below the frontier of stored rows only the
smaller side of a cut is summed, the other side being the node's row minus it when every entry
is an integer below 2**52 (an exact difference). Fractional or huge counts fall back to the
sums. Either way every row must have the bits of the plain walk (``plain_walk=True``), which
sums every row without a stored one from its points.

Weights in the rows exercise both branches: unit and integer weights (differences), fractional
ones (sums), weights of 2**52 and more (integers the test rejects), and mixtures.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mondrian import MondrianForestClassifier
from mondrian.forest._hnsp import predict_proba_trees

from _checks import box_min_samples

pytestmark = pytest.mark.exact


def _weights(kind, n, rng):
    if kind == "ones":
        return None
    if kind == "integers":
        return rng.integers(1, 5, n).astype(float)
    if kind == "fractional":
        return rng.uniform(0.1, 3.0, n)
    if kind == "huge":
        return np.where(rng.random(n) < 0.3, 2.0**52 + 2.0, 1.0)
    return np.where(rng.random(n) < 0.5, rng.integers(1, 4, n).astype(float),
                    rng.uniform(0.2, 2.0, n))


def _rows(model, S, plain):
    out = np.zeros((S.shape[0], len(model.classes_)))
    for i in range(S.shape[0]):
        predict_proba_trees(model._trees, S[i:i + 1], out[i:i + 1],
                            float(model.discount_factor), model.branch_off_counts == "tables",
                            None, plain)
    return out


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.sampled_from([2, 5, 32]),
       kind=st.sampled_from(["ones", "integers", "fractional", "huge", "mixed"]),
       counts=st.sampled_from(["node", "tables"]), online=st.booleans())
def test_carried_rows_have_the_bits_of_summed_rows(seed, k, kind, counts, online):
    rng = np.random.default_rng(seed)
    n = 150
    X = rng.normal(size=(n, 4))
    X[n // 2:n // 2 + 20] = X[:20]  # duplicate rows: leaves that cannot be cut
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.6)
    w = _weights(kind, n, rng)
    with box_min_samples(k):
        model = MondrianForestClassifier(n_estimators=3, random_state=seed,
                                         branch_off_counts=counts)
        if online:
            for start in range(0, n, 30):
                model.partial_fit(X[start:start + 30], y[start:start + 30],
                                  classes=[0, 1, 2],
                                  sample_weight=None if w is None else w[start:start + 30])
        else:
            model.fit(X, y, sample_weight=w)
    raw = np.vstack([X[:30], X[:30] + 0.01 * rng.normal(size=(30, 4)),
                     rng.normal(size=(20, 4)) * 3.0])
    S = np.ascontiguousarray(model._validate_X_predict(raw))
    fast = _rows(model, S, False)
    plain = _rows(model, S, True)
    assert fast.tobytes() == plain.tobytes()
    assert np.all(np.isfinite(fast))
