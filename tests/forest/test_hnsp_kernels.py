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


@pytest.mark.parametrize("k", [0, 4])
def test_grouped_walks_on_paths_deeper_than_the_walk_keeps(k):
    """A tabulated call of a tree of few features walks its rows side by side over every box
    (rebuilt on a lean tree, stored on a full one); a path deeper than WALK_DEPTH_MAX (192)
    is walked the plain way, rows outside every box branch off at every node: the bits of
    the plain walk, with the dispatched kernels and the portable ones."""
    from mondrian.core._walk import walk_path
    from mondrian.forest._hnsp import predict_proba_trees

    from _checks import box_min_samples

    # Halving values: most cuts split off the largest point, so the paths are long.
    x0 = 0.5 ** np.arange(400)
    X = np.c_[x0, np.zeros((400, 3))]
    y = np.arange(400) % 3
    with box_min_samples(k):
        model = MondrianForestClassifier(n_estimators=2, random_state=7).fit(X, y)
    S = np.ascontiguousarray(model._validate_X_predict(
        np.vstack([np.c_[x0, np.full((400, 3), 5.0)], X, X[:13] + 1e-3])))
    depth = max(len(walk_path(tree, s)["eta"]) for tree in model._trees for s in S)
    assert depth > 192

    def proba(plain):
        out = np.zeros((S.shape[0], 3))
        predict_proba_trees(model._trees, S, out, float(model.discount_factor), False, None,
                            plain)
        return out

    reference = proba(True)
    for portable in (False, True):
        old = set_portable_kernels(portable)
        try:
            assert proba(False).tobytes() == reference.tobytes()
        finally:
            set_portable_kernels(old)


def _cpu_has(flag):
    try:
        with open("/proc/cpuinfo") as f:
            return flag in f.read().split()
    except OSError:
        return False


@pytest.mark.parametrize("kernel, flag", [(1, None), (2, "avx2"), (3, "avx512f")])
@pytest.mark.parametrize("counts", ["tables", "node"])
def test_each_branch_off_kernel_is_the_portable_loop(kernel, flag, counts):
    """Each kernel of the branch-off terms (GCC's clones, AVX2 and AVX-512 lanes with a masked
    remainder), forced in turn, gives the bits of the scalar reference for counts of classes
    below, at and past each vector width, weighted counts and far rows."""
    from mondrian.forest._hnsp import _set_branch_kernel

    if flag is not None and not _cpu_has(flag):
        pytest.skip(f"the CPU has no {flag}")
    for n_classes in (2, 4, 5, 6, 8, 11, 26):
        rng = np.random.default_rng(n_classes)
        X = rng.normal(size=(300, 4))
        y = np.digitize(X[:, 0] + 0.3 * X[:, 1], np.linspace(-2, 2, n_classes - 1))
        model = MondrianForestClassifier(n_estimators=2, random_state=n_classes,
                                         branch_off_counts=counts)
        model.fit(X, y, sample_weight=rng.uniform(0.3, 2.5, size=300))
        S = np.vstack([X[:60] + 0.1 * rng.normal(size=(60, 4)),
                       20.0 * rng.normal(size=(20, 4))])
        old = _set_branch_kernel(kernel)
        try:
            (fast, fast_rows), (plain, plain_rows) = _both(model, S)
        finally:
            _set_branch_kernel(old)
        assert fast.tobytes() == plain.tobytes()
        assert fast_rows.tobytes() == plain_rows.tobytes()


@pytest.mark.parametrize("k", [0, 4])
@pytest.mark.parametrize("portable", [False, True])
def test_grouped_stages_give_the_plain_walk(k, portable):
    """The grouped walks in stages (a group's descents, the previous group's etas measured
    side by side, the walks of the group before; ``core/_group_walk.pxd``) give the bits
    of the plain walk for every count of rows around the group size (one group, part of
    one, two, three and more) and rows far outside every box, lean and full trees."""
    from mondrian.forest._hnsp import predict_proba_trees

    from _checks import box_min_samples

    rng = np.random.default_rng(5 + k)
    X = rng.normal(size=(400, 6))
    y = np.digitize(X[:, 0] - 0.5 * X[:, 2], [-1.0, 0.0, 1.0])
    with box_min_samples(k):
        # (few nodes: a call of 4 rows or more tabulates, so its rows go in groups)
        model = MondrianForestClassifier(n_estimators=2, random_state=k).fit(X[:50], y[:50])
    assert max(tree.node_count for tree in model._trees) <= 4 * 32
    S = np.ascontiguousarray(model._validate_X_predict(np.vstack([
        X[:40] + 0.05 * rng.normal(size=(40, 6)), 30.0 * rng.normal(size=(15, 6)),
        X[40:60]])))

    def proba(rows, plain):
        out = np.zeros((rows, len(model.classes_)))
        predict_proba_trees(model._trees, S[:rows], out, float(model.discount_factor),
                            False, None, plain)
        return out

    old = set_portable_kernels(portable)
    try:
        for rows in (4, 15, 16, 17, 31, 32, 33, 48, 49, 75):
            assert proba(rows, False).tobytes() == proba(rows, True).tobytes(), rows
    finally:
        set_portable_kernels(old)
