"""Lean boxes: trees that store the box of a node only when it holds at least
``box_min_samples`` (K) points predict what trees storing every box predict, bit for bit.

The boxes of small nodes are rebuilt from the stored points below them (the walk of every
reader, online extension, ``bounds_array``), so a lean model and a full one (K = 0) grown with
the same seeds draw the same random numbers and give the same bits: after batch fits, online
streams (with duplicate rows and constant columns), pickling, merging and pruning, for the
classifier, the regressor, the kernel and the lifetime paths. K = 2 puts small nodes
everywhere (every leaf with one point), K = 32 is the default.
"""

import copy
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mondrian import MondrianForestClassifier, MondrianForestRegressor
from mondrian.core._tree import MondrianTree
from mondrian.core._walk import walk_path
from mondrian.density.estimator import MondrianForestDensity
from mondrian.kernel.ridge import MondrianKernelFeatures, MondrianKernelRidge
from mondrian.merging import feature_range, merge_forests

from _checks import box_min_samples, fit_then_extend
from _data import awkward_classes

pytestmark = pytest.mark.exact


def _same(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape
    assert a.tobytes() == b.tobytes()


def _check_lean(model, k):
    """Each tree stores exactly the boxes of its nodes with at least k points."""
    for tree in model._trees:
        assert tree.box_min_samples == k
        counts = tree.nodes_array["n_node_samples"]
        slots = tree.box_slots
        assert np.array_equal(slots >= 0, counts >= k)
        assert tree.box_count == int((counts >= k).sum())
        assert np.array_equal(np.sort(slots[slots >= 0]), np.arange(tree.box_count))


def _same_trees(a, b):
    """Same structure, statistics and (all) boxes, whatever each stores."""
    for ta, tb in zip(a._trees, b._trees, strict=True):
        assert ta.nodes_array.tobytes() == tb.nodes_array.tobytes()
        _same(ta.value_array, tb.value_array)
        _same(ta.bounds_array, tb.bounds_array)
        _same(ta.get_rng_state().view(np.float64), tb.get_rng_state().view(np.float64))


def _fit_both(make, fit, k):
    with box_min_samples(0):
        full = fit(make())
    with box_min_samples(k):
        lean = fit(make())
    _check_lean(lean, k)
    _check_lean(full, 0)
    return full, lean


@pytest.mark.parametrize("k", [2, 32])
def test_classifier_batch_and_online(k, global_random_seed):
    X, y = awkward_classes(global_random_seed, 300, 5)
    X_test = np.vstack([X[:50] + 0.05, X[:20] * 3.0])

    def stream(model):
        model.fit(X[:120], y[:120])
        model.partial_fit(X[120:200], y[120:200])
        for i in range(200, 260):
            model.learn_one(dict(enumerate(X[i])), int(y[i]))
        model.partial_fit(X[260:], y[260:])
        return model

    def make():
        return MondrianForestClassifier(n_estimators=3, random_state=global_random_seed)

    with box_min_samples(0):
        full = make().fit(X[:120], y[:120])
    with box_min_samples(k):
        lean = make().fit(X[:120], y[:120])
    _same(full.predict_proba(X_test), lean.predict_proba(X_test))
    _same(full.predict_proba(X_test[:3]), lean.predict_proba(X_test[:3]))  # untabled rows
    full, lean = _fit_both(make, stream, k)
    _same_trees(full, lean)
    _same(full.predict_proba(X_test), lean.predict_proba(X_test))
    assert sum(t.box_count for t in lean._trees) < sum(t.node_count for t in lean._trees)


@pytest.mark.parametrize("k", [2, 32])
def test_regressor_mean_and_std(k, global_random_seed):
    X, _ = awkward_classes(global_random_seed, 300, 5)
    y = X[:, 0] - X[:, 1] ** 2

    def stream(model):
        model.fit(X[:150], y[:150])
        for i in range(150, 170):
            model.partial_fit(X[i:i + 1], y[i:i + 1])
        model.partial_fit(X[170:], y[170:])
        return model

    def make():
        return MondrianForestRegressor(n_estimators=3, random_state=global_random_seed)

    full, lean = _fit_both(make, stream, k)
    _same_trees(full, lean)
    X_test = np.vstack([X[:40] + 0.1, X[:10] * 4.0])
    for a, b in zip(full.predict(X_test, return_std=True), lean.predict(X_test, return_std=True),
                    strict=True):
        _same(a, b)


@pytest.mark.parametrize("k", [2, 32])
def test_kernel_features_and_ridge(k, global_random_seed):
    X, _ = awkward_classes(global_random_seed, 300, 5)
    y = X[:, 0]
    X_test = X[:60] + 0.2

    def make():
        return MondrianKernelRidge(n_estimators=4, lifetime=2.0, random_state=global_random_seed)

    def stream(model):
        model.fit(X[:200], y[:200])
        model.partial_fit(X[200:], y[200:])
        return model

    full, lean = _fit_both(make, stream, k)
    _same(full.predict(X_test), lean.predict(X_test))

    def features():
        return MondrianKernelFeatures(n_estimators=4, lifetime=3.0,
                                      random_state=global_random_seed)

    full, lean = _fit_both(features, lambda m: m.fit(X), k)
    _same(full.transform(X_test).toarray(), lean.transform(X_test).toarray())


@pytest.mark.parametrize("k", [2, 32])
def test_lifetime_paths(k, global_random_seed):
    X, y = awkward_classes(global_random_seed, 300, 5)

    def make():
        return MondrianForestClassifier(n_estimators=3, random_state=global_random_seed)

    full, lean = _fit_both(make, lambda m: m.fit(X[:200], y[:200]), k)
    a, b = full.lifetime_path(X[200:], y[200:]), lean.lifetime_path(X[200:], y[200:])
    _same(a.lifetimes, b.lifetimes)
    for name in a.metrics:
        _same(a.metrics[name], b.metrics[name])
    _same_trees(full, lean)  # the path leaves the forests as they were


def test_pickle_merge_prune(global_random_seed):
    k = 4
    X, y = awkward_classes(global_random_seed, 300, 5)
    X_test = X[:40] + 0.05

    def make():
        return MondrianForestClassifier(n_estimators=2, random_state=global_random_seed)

    full, lean = _fit_both(make, lambda m: m.fit(X[:150], y[:150]), k)
    expected = full.predict_proba(X_test)
    loaded = pickle.loads(pickle.dumps(lean))
    _check_lean(loaded, k)
    _same(expected, loaded.predict_proba(X_test))
    _same_trees(full, loaded)
    copied = copy.deepcopy(lean)
    _check_lean(copied, k)
    _same(expected, copied.predict_proba(X_test))
    # Online after a load: the same as the full model fed the same points.
    for model in (full, loaded):
        model.partial_fit(X[150:220], y[150:220])
    _check_lean(loaded, k)
    _same(full.predict_proba(X_test), loaded.predict_proba(X_test))
    # Pruning keeps the boxes of the kept nodes.
    pf, pl = full.prune(0.5 * np.median([t.nodes_array["split_time"][0] for t in full._trees])
                        + 1.0), None
    pl = loaded.prune(pf._ensemble.lifetime)
    _check_lean(pl, k)
    _same(pf.predict_proba(X_test), pl.predict_proba(X_test))
    # Merging two shards (the second's points renumbered after the first's).
    scaling = feature_range(X)
    shards = []
    for kk in (0, k):
        with box_min_samples(kk):
            shards.append([
                # shards on different rows: a fixed map needs fixed weights too
                MondrianForestClassifier(n_estimators=2, feature_scaling=scaling,
                                         feature_weights=None,
                                         random_state=global_random_seed + s).fit(X[a:b], y[a:b])
                for s, (a, b) in enumerate([(0, 150), (150, 300)])
            ])
    (a_full, b_full), (a_lean, b_lean) = shards
    merged_full, merged_lean = merge_forests([a_full, b_full]), merge_forests([a_lean, b_lean])
    _check_lean(merged_lean, k)
    _same(merged_full.predict_proba(X_test), merged_lean.predict_proba(X_test))


def test_density_keeps_every_cell():
    X = np.random.default_rng(0).random((200, 2))
    model = MondrianForestDensity(n_estimators=2, random_state=0).fit(X)
    for tree in model._trees:
        assert tree.box_min_samples == 0
        assert tree.box_count == tree.node_count
        assert np.array_equal(tree.box_slots, np.arange(tree.node_count))
    loaded = pickle.loads(pickle.dumps(model))
    _same(model.score_samples(X[:20]), loaded.score_samples(X[:20]))


def test_memory_usage_counts_the_stored_boxes():
    X, y = awkward_classes(0, 300, 5)
    with box_min_samples(8):
        model = MondrianForestClassifier(n_estimators=2, random_state=0).fit(X, y)
    usage = model.memory_usage_
    D = X.shape[1]
    assert usage["bounds"] == sum(t.box_count for t in model._trees) * 2 * D * 8
    assert usage["box_slots"] == sum(t.node_count for t in model._trees) * 4


def test_a_tree_without_its_points_refuses_to_read():
    X = np.random.default_rng(0).random((100, 3))
    tree = MondrianTree(3, 0, np.inf, 2, False, 0, 8).fit(X, np.zeros((100, 0)), np.arange(100))
    path = walk_path(tree, X[0] + 0.5)
    copied = copy.deepcopy(tree)  # whole state, no points
    with pytest.raises(ValueError, match="attach_points"):
        walk_path(copied, X[0] + 0.5)
    with pytest.raises(ValueError, match="attach_points"):
        copied.bounds_array  # noqa: B018
    copied.attach_points(X)
    for name, value in walk_path(copied, X[0] + 0.5).items():
        _same(path[name], value)
    copied.attach_points(X[:50])  # fewer points than the tree holds
    with pytest.raises(ValueError, match="50 of its 100"):
        walk_path(copied, X[0])
    with pytest.raises(ValueError, match="box_min_samples"):
        MondrianTree(3, 0, np.inf, 2, False, 0, 100000)


def test_undo_log_restores_slots_and_boxes(global_random_seed):
    rng = np.random.default_rng(global_random_seed)
    X = rng.random((200, 3))
    X[150:] = X[:50] * 3.0  # new points outside: inserted parents, slots handed over
    rows = np.zeros((200, 0))
    tree = MondrianTree(3, 0, np.inf, 2, False, global_random_seed, 4)
    tree.fit(X, rows, np.arange(100))
    before = (tree.nodes_array.tobytes(), tree.box_slots.tobytes(),
              tree.stored_boxes.tobytes(), tree.bounds_array.tobytes(), tree.box_count)
    tree.begin_undo()
    for i in range(100, 200, 7):
        tree.extend(X, rows, np.arange(i, min(i + 7, 200)))
    assert tree.node_count > 0 and tree.box_count != before[-1]
    tree.rollback_undo()
    after = (tree.nodes_array.tobytes(), tree.box_slots.tobytes(),
             tree.stored_boxes.tobytes(), tree.bounds_array.tobytes(), tree.box_count)
    assert after == before


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(1, 60),
    d=st.integers(1, 4),
    k=st.integers(1, 8),
    chunks=st.lists(st.integers(1, 20), min_size=1, max_size=5),
    lifetime=st.sampled_from([0.5, 3.0, np.inf]),
)
def test_property_lean_walks_equal_full_walks(seed, n, d, k, chunks, lifetime):
    rng = np.random.default_rng(seed)
    X = np.round(rng.random((n + sum(chunks), d)) * 4) / 4  # ties and duplicates
    rows = np.eye(2)[rng.integers(0, 2, len(X))]
    trees = [MondrianTree(d, 2, lifetime, 2, False, seed, kk) for kk in (0, k)]
    fit_then_extend(trees, X, rows, n, chunks)
    full, lean = trees
    assert full.nodes_array.tobytes() == lean.nodes_array.tobytes()
    _same(full.bounds_array, lean.bounds_array)
    counts = lean.nodes_array["n_node_samples"]
    assert np.array_equal(lean.box_slots >= 0, counts >= k)
    for x in np.vstack([X[:5], rng.normal(size=(5, d)) * 2]):
        a, b = walk_path(full, x), walk_path(lean, x)
        for name in a:
            _same(a[name], b[name])
