"""The classifier's node tables as one record per node (``forest/_hnsp_kernels.h``: a node's
counts, customers, tables and posterior side by side, and a record for the root's parent):
every reader of a tabulated call (the grouped walk below 32 features, the batched one from
32, the walk from the root of the plain reference, the cached tables of later calls, the
AVX-512 lanes, the AVX2 and portable loops) gives the bits of rows predicted one at a time,
which read no tables, for numbers of classes whose records fill lines differently."""

import numpy as np
import pytest

from mondrian import MondrianForestClassifier
from mondrian.core._batch_walk import set_portable_kernels
from mondrian.forest import _node_cache
from mondrian.forest._hnsp import _set_branch_kernel, predict_proba_trees

pytestmark = pytest.mark.exact


def _cpu_features():
    from numpy._core._multiarray_umath import __cpu_features__
    return __cpu_features__


def _calls(model, S, plain):
    """A call of every row of ``S`` (tabulated) and the rows one call each (not)."""
    strict = model.branch_off_counts == "tables"
    S = np.ascontiguousarray(model._validate_X_predict(S))  # (the trees' scaled space)
    whole = np.zeros((S.shape[0], len(model.classes_)))
    predict_proba_trees(model._trees, S, whole, float(model.discount_factor), strict, None,
                        plain)
    rows = np.zeros_like(whole)
    for i in range(S.shape[0]):
        predict_proba_trees(model._trees, S[i:i + 1], rows[i:i + 1],
                            float(model.discount_factor), strict, None, plain)
    return whole, rows


@pytest.mark.parametrize("n_classes", [2, 3, 6, 11])
@pytest.mark.parametrize("n_features", [5, 36])
@pytest.mark.parametrize("counts", ["node", "tables"])
@pytest.mark.parametrize("kernel", ["cpu", "avx2", "portable"])
def test_tabulated_calls_read_the_records_as_rows_alone(n_classes, n_features, counts,
                                                        kernel):
    if kernel == "avx2" and not _cpu_features().get("AVX2"):
        pytest.skip("no AVX2")
    rng = np.random.default_rng(n_classes + n_features)
    X = rng.normal(size=(400, n_features))
    y = np.digitize(X[:, 0] + 0.5 * X[:, 1], np.linspace(-1.5, 1.5, n_classes - 1))
    model = MondrianForestClassifier(n_estimators=3, random_state=n_classes,
                                     branch_off_counts=counts).fit(X, y)
    # (rows inside their leaf's box reach it: its posterior's term; the others branch off)
    S = np.vstack([X[:40], X[40:100] + 0.05 * rng.normal(size=(60, n_features)),
                   5.0 * rng.normal(size=(20, n_features))])
    old_portable = set_portable_kernels(kernel == "portable")
    old_kernel = _set_branch_kernel(2 if kernel == "avx2" else 0)
    try:
        for plain in (False, True):
            whole, rows = _calls(model, S, plain)
            assert whole.tobytes() == rows.tobytes()
        # The cache's records (built by the second call, read by the third).
        old_budget, _node_cache.CACHE_BYTES = _node_cache.CACHE_BYTES, 0
        try:
            alone = np.vstack([model.predict_proba(S[i:i + 1]) for i in range(len(S))])
        finally:
            _node_cache.CACHE_BYTES = old_budget
        cached = [model.predict_proba(S) for _ in range(3)]
        assert all(c.tobytes() == alone.tobytes() for c in cached)
    finally:
        _set_branch_kernel(old_kernel)
        set_portable_kernels(old_portable)
