"""Online extension through nodes that keep no box (issue 25).

Such a node decides whether a cut is inserted above it from part of its stored points: the
extent of the batch outside the box of the points read so far bounds the true extent from
above, so the decision to let the node absorb the batch is taken early only when the full box
would take it too, and a cut is inserted only with the exact box. Checked here:

* bit for bit, trees that store no box below ``box_min_samples`` = 256 (every node small: the
  partial reads everywhere) equal trees that store every box (``box_min_samples`` = 0), on
  wide data with ties and duplicates, batch sizes 1 to 40;
* in law, trees grown online through such nodes against batch-grown trees (leaf count,
  depth, root split time), on data where nodes hold tens of points;
* the work per inserted point (``MondrianTree.extend_work``: node records plus stored points
  read) stays well below the points of the small nodes on its path and does not grow with the
  store.
"""

import numpy as np
import pytest
from scipy import stats

from mondrian import MondrianForestClassifier
from mondrian.core._tree import MondrianTree

from _checks import box_min_samples, fit_then_extend
from _checks import two_sample_chi2_pvalue as _two_sample_chi2_pvalue

P_MIN = 1e-4


@pytest.mark.exact
@pytest.mark.parametrize("d", [1, 3, 20])
@pytest.mark.parametrize("chunks", [[1] * 30, [5, 40, 2, 13], [40, 40]])
def test_small_nodes_decide_as_stored_boxes(d, chunks, global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    n = 60
    X = np.round(rng.random((n + sum(chunks), d)) * 6) / 6  # ties and duplicates
    X[n + 3] = X[5]
    rows = np.eye(3)[rng.integers(0, 3, len(X))]
    for lifetime in (2.0, np.inf):
        trees = [MondrianTree(d, 3, lifetime, 2, False, global_random_seed, k)
                 for k in (0, 256)]
        fit_then_extend(trees, X, rows, n, chunks)
        full, lean = trees
        assert lean.box_count == 0  # every box rebuilt from the points
        assert full.nodes_array.tobytes() == lean.nodes_array.tobytes()
        assert full.bounds_array.tobytes() == lean.bounds_array.tobytes()
        assert full.get_rng_state().tobytes() == lean.get_rng_state().tobytes()


def _statistics(forest):
    leaves = np.array([np.sum(est.tree_.children_left == -1) for est in forest.estimators_])
    depth = np.array([est.tree_.max_depth for est in forest.estimators_])
    tau = np.array([est.tree_.split_time[0] for est in forest.estimators_])
    return leaves, depth, tau


@pytest.mark.statistical
@pytest.mark.parametrize("batch_size", [1, 7])
def test_online_through_small_nodes_has_the_batch_law(global_random_seed, batch_size):
    """40 points in 3 features, few labels: nodes of up to 40 points below
    ``box_min_samples`` = 32 + (the default), read in part at every insertion."""
    rng = np.random.default_rng(global_random_seed)
    X = rng.uniform(0.0, 1.0, size=(40, 3))
    y = (X[:, 0] + 0.3 * rng.standard_normal(40) > 0.5).astype(int)
    y[:2] = [0, 1]
    kwargs = dict(n_estimators=1500, lifetime=3.0, feature_scaling=None)
    batch = MondrianForestClassifier(random_state=global_random_seed, **kwargs).fit(X, y)
    online = MondrianForestClassifier(random_state=global_random_seed + 1, **kwargs)
    for start in range(0, len(X), batch_size):
        online.partial_fit(X[start:start + batch_size], y[start:start + batch_size],
                           classes=[0, 1])
    leaves_b, depth_b, tau_b = _statistics(batch)
    leaves_o, depth_o, tau_o = _statistics(online)
    assert _two_sample_chi2_pvalue(leaves_b, leaves_o) > P_MIN
    assert _two_sample_chi2_pvalue(depth_b, depth_o) > P_MIN
    assert stats.ks_2samp(tau_b, tau_o).pvalue > P_MIN


def test_work_per_point_through_wide_small_nodes_is_bounded():
    """40 features, ``box_min_samples`` = 80: the small nodes on a point's path hold up to 160
    points between them; an insertion reads a few of them, early in the stream and late."""
    rng = np.random.RandomState(3)
    X = rng.uniform(size=(4000, 40))
    y = (X[:, 0] + X[:, 1] > 1.0).astype(int)
    with box_min_samples(80):
        model = MondrianForestClassifier(2, random_state=0)
        per_point = []
        for start in range(0, len(y), 50):
            before = sum(t.extend_work for t in model._trees) if start else 0
            model.partial_fit(X[start:start + 50], y[start:start + 50], classes=[0, 1])
            per_point.append((sum(t.extend_work for t in model._trees) - before) / 100)
    per_point = np.array(per_point[1:])
    early, late = per_point[5:15].mean(), per_point[-10:].mean()
    assert 0 < early and late < 1.6 * early, (early, late)
    assert late < 40, late  # per tree: far fewer than the points of the small nodes
