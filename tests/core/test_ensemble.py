"""The tree-ensemble container: merging, growing, pruning, views and pickling (exact checks)."""

import copy
import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from mondrian import MondrianForestClassifier, MondrianForestDensity, MondrianForestRegressor
from mondrian.core.ensemble import TreeEnsemble, draw_seeds

from _data import diagonal_classes


def _same_tree(a, b):
    assert a.node_count == b.node_count
    assert_array_equal(a.nodes_array, b.nodes_array)
    assert_array_equal(a.bounds_array, b.bounds_array)
    assert_array_equal(a.value_array, b.value_array)
    assert_array_equal(a.leaf_sample_assignment(), b.leaf_sample_assignment())
    assert_array_equal(a.get_rng_state(), b.get_rng_state())


def _with_ensemble(model, ensemble):
    out = copy.copy(model)
    out._ensemble = ensemble
    out.n_estimators = len(ensemble)
    return out


def test_merge_of_two_halves_is_the_forest():
    X, y = diagonal_classes()
    forest = MondrianForestClassifier(n_estimators=10, random_state=0).fit(X, y)
    ens = forest._ensemble
    merged = ens.subset(slice(0, 4), read_only=False).merge(ens.subset(slice(4, 10)))
    assert merged.store.n_samples == ens.store.n_samples  # same data: one store
    assert_array_equal(merged.seeds, ens.seeds)
    for a, b in zip(merged.trees, ens.trees, strict=True):
        _same_tree(a, b)
        assert a is not b  # the merge copies, the inputs stay as they were
    model = _with_ensemble(forest, merged)
    assert_array_equal(model.predict_proba(X), forest.predict_proba(X))


def test_merge_predicts_the_tree_weighted_average():
    X, y = diagonal_classes()
    a = MondrianForestClassifier(n_estimators=4, random_state=0).fit(X, y)
    b = MondrianForestClassifier(n_estimators=6, random_state=1).fit(X, y)
    merged = a._ensemble.merge(b._ensemble)
    assert len(merged) == 10
    model = _with_ensemble(a, merged)
    queries = np.random.RandomState(5).uniform(-0.5, 1.5, size=(40, 3))
    expected = (4 * a.predict_proba(queries) + 6 * b.predict_proba(queries)) / 10
    assert_allclose(model.predict_proba(queries), expected, rtol=1e-12, atol=1e-15)
    # The density is a mean over trees too.
    da = MondrianForestDensity(3, lifetime=4.0, concentration=1.0, random_state=0).fit(X)
    db = MondrianForestDensity(5, lifetime=4.0, concentration=1.0, random_state=1).fit(X)
    dm = _with_ensemble(da, da._ensemble.merge(db._ensemble))
    mix = np.logaddexp(np.log(3 / 8) + da.score_samples(queries),
                       np.log(5 / 8) + db.score_samples(queries))
    assert_allclose(dm.score_samples(queries), mix, rtol=1e-12)


def test_merge_of_shards_renumbers_the_second_store():
    X_a, y_a = diagonal_classes(120, seed=0)
    X_b, y_b = diagonal_classes(90, seed=1)
    params = dict(feature_scaling=None, random_state=0)
    a = MondrianForestClassifier(n_estimators=3, **params).fit(X_a, y_a)
    b = MondrianForestClassifier(n_estimators=5, **{**params, "random_state": 1}).fit(X_b, y_b)
    merged = a._ensemble.merge(b._ensemble)
    assert merged.store.n_samples == 210
    assert_array_equal(merged.store.X, np.vstack([X_a, X_b]))
    for tree, old in zip(merged.trees[:3], a._trees, strict=True):
        _same_tree(tree, old)
    for tree, old in zip(merged.trees[3:], b._trees, strict=True):
        assignment = tree.leaf_sample_assignment()
        assert_array_equal(assignment[:120], -1)  # never saw shard a
        assert_array_equal(assignment[120:], old.leaf_sample_assignment())
        assert_array_equal(tree.nodes_array["n_node_samples"], old.nodes_array["n_node_samples"])
        for leaf in np.flatnonzero(old.nodes_array["left_child"] == -1):
            assert_array_equal(tree.leaf_samples(leaf), old.leaf_samples(leaf) + 120)
    # Inputs unchanged.
    assert b._store.n_samples == 90 and b._trees[0].n_samples_seen == 90
    model = _with_ensemble(a, merged)
    queries = X_a[:30]
    expected = (3 * a.predict_proba(queries) + 5 * b.predict_proba(queries)) / 8
    assert_allclose(model.predict_proba(queries), expected, rtol=1e-12, atol=1e-15)
    # The merged forest keeps learning: every tree takes the new points.
    model.partial_fit(X_b[:10], y_b[:10])
    assert model._store.n_samples == 220
    for tree in model._trees:
        assert tree.nodes_array["n_node_samples"][0] in (130, 100)


def test_merge_rejects_mismatches():
    X, y = diagonal_classes()
    a = MondrianForestClassifier(n_estimators=2, random_state=0).fit(X, y)
    b = MondrianForestClassifier(n_estimators=2, random_state=1).fit(X * 2.0 + 1.0, y)
    with pytest.raises(ValueError, match="different feature maps .*offset"):
        a._ensemble.merge(b._ensemble)
    c = MondrianForestClassifier(n_estimators=2, lifetime=3.0, random_state=1).fit(X, y)
    with pytest.raises(ValueError, match="different lifetime"):
        a._ensemble.merge(c._ensemble)
    r = MondrianForestRegressor(n_estimators=2, random_state=1).fit(X, y)
    with pytest.raises(ValueError, match="different width"):
        a._ensemble.merge(r._ensemble)
    d = MondrianForestClassifier(n_estimators=2, feature_scaling=None, random_state=1).fit(X, y)
    with pytest.raises(ValueError, match="feature scaling"):
        a._ensemble.merge(d._ensemble)


def test_grown_trees_are_the_trees_of_a_larger_forest():
    X, y = diagonal_classes(200)
    small = MondrianForestClassifier(n_estimators=3, random_state=7).fit(X[:100], y[:100])
    small._ensemble.grow_trees(draw_seeds(7, 5, start=3))
    big = MondrianForestClassifier(n_estimators=5, random_state=7).fit(X[:100], y[:100])
    assert_array_equal(small._seeds, big._seeds)
    for a, b in zip(small._trees, big._trees, strict=True):
        _same_tree(a, b)


def test_pruned_is_independent():
    X, y = diagonal_classes()
    forest = MondrianForestClassifier(n_estimators=4, random_state=0).fit(X, y)
    ens = forest._ensemble
    pruned = ens.pruned(0.8)
    assert pruned.lifetime == 0.8 and ens.lifetime == np.inf
    for a, b in zip(pruned.trees, ens.trees, strict=True):
        _same_tree(a, b.pruned(0.8))
    assert pruned.store is not ens.store and pruned.feature_map is not ens.feature_map
    pruned.add_points(X[:5] + 0.01, np.eye(2)[y[:5]])
    assert ens.store.n_samples == len(X) and pruned.store.n_samples == len(X) + 5


def test_single_tree_view_is_read_only():
    X, y = diagonal_classes()
    forest = MondrianForestClassifier(n_estimators=4, random_state=0).fit(X, y)
    view = forest._ensemble.single_tree(2)
    assert view.read_only and len(view) == 1
    assert view.trees[0] is forest._trees[2] and view.store is forest._store
    assert_array_equal(view.seeds, forest._seeds[2:3])
    with pytest.raises(ValueError, match="read-only view"):
        view.add_points(X[:1], np.eye(2)[y[:1]])
    with pytest.raises(ValueError, match="read-only view"):
        view.grow_trees([1])
    assert forest._store.n_samples == len(X)


def test_pickle_round_trip_and_version():
    X, y = diagonal_classes()
    forest = MondrianForestClassifier(n_estimators=3, random_state=0).fit(X, y)
    ens = forest._ensemble
    back = pickle.loads(pickle.dumps(ens))
    assert isinstance(back, TreeEnsemble)
    assert_array_equal(back.seeds, ens.seeds)
    assert_array_equal(back.store.X, ens.store.X)
    assert_array_equal(back.feature_map.scale, ens.feature_map.scale)
    for a, b in zip(back.trees, ens.trees, strict=True):
        _same_tree(a, b)
    # The restored ensemble learns on exactly like the original.
    new = np.random.RandomState(3).uniform(size=(20, 3))
    rows = np.eye(2)[np.arange(20) % 2]
    ens.add_points(new, rows)
    back.add_points(new, rows)
    for a, b in zip(back.trees, ens.trees, strict=True):
        _same_tree(a, b)
    state = ens.__getstate__()
    state["version"] = 99
    with pytest.raises(ValueError, match="state version 99"):
        TreeEnsemble.__new__(TreeEnsemble).__setstate__(state)


@pytest.mark.parametrize("n_jobs", [1, 2, 3])
def test_accumulate_is_bit_identical_for_any_n_jobs(n_jobs):
    X, y = diagonal_classes()
    forest = MondrianForestClassifier(n_estimators=40, random_state=0).fit(X, y)
    ens = forest._ensemble

    def depth_sum(trees, out):
        for tree in trees:
            out[:, 0] += np.sqrt(tree.node_depths()[tree.apply(X)] + 0.1)

    reference = ens.accumulate(depth_sum, (len(X), 1), 1)
    assert_array_equal(ens.accumulate(depth_sum, (len(X), 1), n_jobs), reference)
