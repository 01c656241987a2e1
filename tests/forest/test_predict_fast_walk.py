"""Prediction finds the leaf first and computes eta (the distance from the test point to a
node's box) only from the leaf upward until it is 0 (``walk_etas`` in ``core/_walk.pxd``).

The shortcut relies on the boxes nesting (a child's box lies in its parent's, so eta never
decreases down a path) and on a node with eta == 0 adding nothing. These tests compare it bit
for bit with the plain walk, which computes every node's eta on the way down
(``plain_walk=True``), on random trees and points: inside and outside the boxes, far away,
exactly on training points, at lifetimes below the fitted one, after online updates (paused
leaves that regrow), with lean boxes (small nodes rebuilt from their points; K = 2 puts them
everywhere) and with every box stored (K = 0), for the tabulated many-row path and the
per-row path of the classifier (which also give the same bits as each other) and for the
regressor.
"""


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mondrian import MondrianForestClassifier, MondrianForestRegressor
from mondrian.core._walk import walk_path
from mondrian.forest._gaussian import GaussianPrior, predict_moments_trees, upward_messages
from mondrian.forest._hnsp import predict_proba_trees

from _checks import box_min_samples
from _data import awkward_classes

pytestmark = pytest.mark.exact


def _data(seed, n, d):
    X, y = awkward_classes(seed, n, d, constant_column=1, constant=0.5, n_duplicates=n // 8,
                           ties_column=2, noise=0.5)
    return X, y + (X[:, 3] > 0.7)


def _test_points(model, X, seed):
    """Scaled rows: training points (inside their leaf's box), jittered ones, far ones."""
    rng = np.random.default_rng(seed)
    jitter = 1e-2 * rng.normal(size=(40, X.shape[1]))
    jitter[:, 1] = 0.0  # inside the root's box (a constant column) but not every leaf's
    raw = np.vstack([X[:40], X[:40] + jitter, rng.normal(size=(40, X.shape[1])),
                     10.0 * rng.normal(size=(20, X.shape[1]))])
    return np.ascontiguousarray(model._validate_X_predict(raw))


def _proba(model, S, lifetime, plain, rows_at_once):
    out = np.zeros((S.shape[0], len(model.classes_)))
    step = S.shape[0] if rows_at_once else 1
    for start in range(0, S.shape[0], step):
        predict_proba_trees(model._trees, S[start:start + step], out[start:start + step],
                            float(model.discount_factor), model.branch_off_counts == "tables",
                            lifetime, plain)
    return out


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.sampled_from([0, 2, 32]),
       counts=st.sampled_from(["node", "tables"]),
       lifetime=st.sampled_from([None, 0.3, 2.0]), online=st.booleans())
def test_classifier_fast_walk_is_the_plain_walk(seed, k, counts, lifetime, online):
    X, y = _data(seed, 160, 5)
    with box_min_samples(k):
        model = MondrianForestClassifier(n_estimators=3, random_state=seed,
                                         branch_off_counts=counts)
        if online:
            model.partial_fit(X[:60], y[:60], classes=[0, 1, 2])
            for i in range(60, 160, 25):
                model.partial_fit(X[i:i + 25], y[i:i + 25])
        else:
            model.fit(X, y)
    S = _test_points(model, X, seed)
    nodes = max(tree.node_count for tree in model._trees)
    assert len(S) * 16 >= nodes  # the batch is tabulated, one row is not
    # The tabulated batch (node posteriors once per call, in storage order after a batch fit,
    # breadth first after online updates) and the rows one by one, each fast and plain.
    reference = _proba(model, S, lifetime, True, False)
    for rows_at_once in (True, False):
        for plain in (False, True):
            assert _proba(model, S, lifetime, plain, rows_at_once).tobytes() == \
                reference.tobytes()
    assert np.all(np.isfinite(reference))


def _moments(model, params, S, lifetime, plain, rows_at_once):
    messages = [upward_messages(tree, params, lifetime)[:2] for tree in model._trees]
    out = np.zeros((S.shape[0], 3))
    step = S.shape[0] if rows_at_once else 1
    for start in range(0, S.shape[0], step):
        predict_moments_trees(model._trees, messages, S[start:start + step],
                              out[start:start + step], params, 3, lifetime, plain)
    return out


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.sampled_from([0, 2, 32]),
       hierarchical=st.booleans(), lifetime=st.sampled_from([None, 0.5]),
       online=st.booleans())
def test_regressor_fast_walk_is_the_plain_walk(seed, k, hierarchical, lifetime, online):
    X, y = _data(seed, 160, 4)
    target = X[:, 0] + np.sin(3 * X[:, 3]) + 0.1 * y
    with box_min_samples(k):
        model = MondrianForestRegressor(n_estimators=2, random_state=seed)
        if online:
            for i in range(0, 160, 40):
                model.partial_fit(X[i:i + 40], target[i:i + 40])
        else:
            model.fit(X, target)
    S = _test_points(model, X, seed)
    params = GaussianPrior(0.1, 0.5, 1.0, 2.0, 1.3, hierarchical)
    for rows_at_once in (True, False):
        fast = _moments(model, params, S, lifetime, False, rows_at_once)
        plain = _moments(model, params, S, lifetime, True, rows_at_once)
        assert fast.tobytes() == plain.tobytes()


def test_eta_never_decreases_down_a_path(global_random_seed):
    """The invariant behind the shortcut, on the plain walk: boxes nest along every path."""
    X, y = _data(global_random_seed, 200, 5)
    with box_min_samples(2):
        model = MondrianForestClassifier(n_estimators=2, random_state=global_random_seed)
        model.partial_fit(X[:100], y[:100], classes=[0, 1, 2])
        model.partial_fit(X[100:], y[100:])
    S = _test_points(model, X, global_random_seed)
    positive_above_zero = 0
    for tree in model._trees:
        for x in S:
            eta = walk_path(tree, x)["eta"]
            assert np.all(np.diff(eta) >= 0.0)
            positive_above_zero += int(eta[-1] > 0.0 and eta[0] == 0.0)
    assert positive_above_zero > 0  # some paths enter their leaf's box only part of the way


def test_fast_walk_skips_most_of_the_path(global_random_seed):
    """On points near the data, most nodes of a path have eta == 0 (what the shortcut saves);
    the predictions stay those of the estimator's public method."""
    X, y = _data(global_random_seed, 300, 5)
    model = MondrianForestClassifier(n_estimators=2, random_state=global_random_seed).fit(X, y)
    S = _test_points(model, X, global_random_seed)[:80]
    zero = total = 0
    for tree in model._trees:
        for x in S:
            eta = walk_path(tree, x)["eta"]
            zero += int(np.sum(eta == 0.0))
            total += len(eta)
    assert zero > total / 2
    fast = _proba(model, S, None, False, True) / len(model._trees)
    np.testing.assert_array_equal(fast, model._proba_scaled(S))
