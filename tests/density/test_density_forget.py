"""``MondrianForestDensity.forget``: cells left empty become unexpanded leaves, the rest of the
full-cell trees is unchanged, and the forest has the law of a fit on the remaining points."""

import pickle

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from mondrian import MondrianForestDensity

from _checks import two_sample_chi2_pvalue


def _interior_split(seed, n=120, n_forget=40):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    extreme = np.zeros(n, dtype=bool)
    for d in range(2):
        extreme[np.argmin(X[:, d])] = extreme[np.argmax(X[:, d])] = True
    candidates = np.flatnonzero(~extreme)  # forgetting them keeps the domain of a fit
    S = rng.choice(candidates, n_forget, replace=False)
    return X, S, np.setdiff1d(np.arange(n), S)


@pytest.mark.exact
def test_forget_empties_cells_and_keeps_the_others(global_random_seed):
    X, S, rest = _interior_split(global_random_seed)
    model = MondrianForestDensity(n_estimators=4, lifetime=6.0, random_state=global_random_seed)
    model.fit(X)
    before = [(t.nodes_array.copy(), t.bounds_array.copy()) for t in model._trees]
    model.forget(X[S])
    assert model.n_samples_seen_ == len(rest)
    store = model._store
    for tree, (nodes0, bounds0) in zip(model._trees, before, strict=True):
        bounds, _, counts, parent = tree.derived_arrays(store.X, store.rows)
        nodes = tree.nodes_array
        assert (counts >= 0).all()
        assert_array_equal(counts, nodes["n_node_samples"])
        assert_array_equal(parent, nodes["parent"])
        internal = nodes["left_child"] != -1
        assert (nodes["n_node_samples"][internal] > 0).all()  # no empty cell is refined
        # Every surviving cell is a cell of the tree before, with its cut and split time.
        cells = {b.tobytes(): k for k, b in enumerate(bounds0)}
        for j in range(tree.node_count):
            k = cells[tree.bounds_array[j].tobytes()]
            if internal[j]:
                assert nodes["split_time"][j] == nodes0["split_time"][k]
                assert nodes["threshold"][j] == nodes0["threshold"][k]
    fresh = MondrianForestDensity(n_estimators=4, lifetime=6.0, random_state=0).fit(X[rest])
    assert_array_equal(fresh.domain_, model.domain_)


@pytest.mark.exact
def test_density_forget_bad_row_changes_nothing():
    X, S, _ = _interior_split(1)
    model = MondrianForestDensity(n_estimators=3, lifetime=4.0, random_state=0).fit(X)
    before = pickle.dumps(model)
    with pytest.raises(ValueError, match="row 1 of X"):
        model.forget(np.vstack([X[:1], X[:1] + 1e-7]))
    assert pickle.dumps(model) == before
    model.forget(X[S])
    model.partial_fit(X[S])
    assert model.n_samples_seen_ == len(X)


@pytest.mark.statistical
def test_density_forget_has_the_law_of_a_fit_on_the_rest(global_random_seed):
    """Numbers of nodes of fit(D) + forget(S) and of fit(D \\ S) (same domain), 1500 trees
    each: two-sample chi-square at p > 1e-4. Keeping the refined subtrees of emptied cells
    gives too many nodes."""
    X, S, rest = _interior_split(global_random_seed, n=40, n_forget=30)
    a = MondrianForestDensity(n_estimators=1500, lifetime=8.0, random_state=global_random_seed)
    a.fit(X).forget(X[S])
    b = MondrianForestDensity(n_estimators=1500, lifetime=8.0,
                              random_state=global_random_seed + 100).fit(X[rest])
    assert_array_equal(a.domain_, b.domain_)
    count_a = np.array([t.node_count for t in a._trees])
    count_b = np.array([t.node_count for t in b._trees])
    assert two_sample_chi2_pvalue(count_a, count_b) > 1e-4
