"""The classifier's dispatched kernels (``forest/_hnsp_kernels.h``: the branch-off terms in
vector lanes, AVX2 / AVX-512 clones) give the bits of the scalar reference loop forced by
``set_portable_kernels``, for every count of classes (full lanes and remainders), strict and
plain branch-off counts, weighted counts, one-row and tabulated calls, and far rows (every
node of their paths branching off)."""

import numpy as np
import pytest

from mondrian import MondrianForestClassifier
from mondrian.core._batch_walk import set_portable_kernels
from mondrian.forest import _node_cache

pytestmark = pytest.mark.exact


def _both(model, S):
    """Predictions with the dispatched kernels, then with the portable ones (uncached)."""
    out = []
    old_budget = _node_cache.CACHE_BYTES
    _node_cache.CACHE_BYTES = 0
    try:
        for portable in (False, True):
            old = set_portable_kernels(portable)
            try:
                out.append((model.predict_proba(S),
                            np.vstack([model.predict_proba(S[i:i + 1]) for i in range(20)])))
            finally:
                set_portable_kernels(old)
    finally:
        _node_cache.CACHE_BYTES = old_budget
    return out


@pytest.mark.parametrize("n_classes", [2, 3, 9, 26])
@pytest.mark.parametrize("counts", ["tables", "node"])
@pytest.mark.parametrize("weighted", [False, True])
def test_dispatched_branch_off_is_the_portable_loop(n_classes, counts, weighted):
    rng = np.random.default_rng(n_classes)
    X = rng.normal(size=(500, 5))
    y = np.digitize(X[:, 0] + 0.3 * X[:, 1], np.linspace(-2, 2, n_classes - 1))
    weight = rng.uniform(0.3, 2.5, size=500) if weighted else None
    model = MondrianForestClassifier(n_estimators=3, random_state=n_classes,
                                     branch_off_counts=counts)
    model.fit(X, y, sample_weight=weight)
    S = np.vstack([X[:100] + 0.1 * rng.normal(size=(100, 5)), 20.0 * rng.normal(size=(30, 5))])
    (fast, fast_rows), (plain, plain_rows) = _both(model, S)
    assert fast.tobytes() == plain.tobytes()
    assert fast_rows.tobytes() == plain_rows.tobytes()
    assert np.allclose(fast[:20], fast_rows, rtol=0, atol=1e-12)
