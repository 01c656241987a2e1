"""Property-based tests (hypothesis) of the tree core invariants and the classifier outputs.

Inputs are bounded (|x| <= 1e3, no NaN or infinity), small (n <= 40, d <= 5, <= 3 labels) and
include duplicated rows, constant features and values a few ulps apart.
"""

import pickle

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy.testing import assert_array_equal

from mondrian import MondrianForestClassifier, MondrianTreeClassifier

from _checks import assert_same_tree, check_proba, check_tree_invariants

BOUND = 1e3
TINY = 1e-100
# Finite floats with |x| <= 1e3 and no non-zero value below 1e-100 in magnitude. Then distinct
# values differ by more than 1e-116, so scaled coordinates (x - offset) / scale of the test
# queries stay far below overflow. Sub-1e-100 values are covered by the separate
# `test_tiny_feature_ranges_are_handled` below.
finite_floats = st.floats(-BOUND, BOUND, allow_nan=False, allow_infinity=False).filter(
    lambda v: v == 0.0 or abs(v) >= TINY
)


def _ulp_neighbour(base, steps):
    value = base
    for _ in range(abs(steps)):
        value = np.nextafter(value, np.inf if steps > 0 else -np.inf)
    return float(value)


def ulp_values(bases=(1.0, -1.0, 0.5, 1e3)):
    """Floats at most 3 ulps from one of `bases`, which stress the open-interval cut rule and
    the rounding of the min-max map."""
    return st.builds(_ulp_neighbour, st.sampled_from(bases), st.integers(-3, 3))


@st.composite
def datasets(draw, max_n=40, max_features=5, max_classes=3, elements=None):
    """(X, y) with 1 <= n <= max_n rows, 1 <= d <= max_features and labels in 0..k-1; unless
    `elements` is given, one draw in four takes its values from floats a few ulps apart."""
    n = draw(st.integers(1, max_n))
    d = draw(st.integers(1, max_features))
    k = draw(st.integers(1, max_classes))
    if elements is None:
        elements = draw(st.sampled_from([finite_floats] * 3 + [ulp_values()]))
    X = draw(hnp.arrays(np.float64, (n, d), elements=elements))
    y = draw(hnp.arrays(np.int64, n, elements=st.integers(0, k - 1)))
    return X, y


tree_params = st.fixed_dictionaries(
    {
        "lifetime": st.sampled_from([0.0, 0.5, 2.0, np.inf]),
        "feature_scaling": st.sampled_from(["minmax", None]),
        "min_samples_split": st.sampled_from([1, 2, 3, 5]),
        "branch_off_counts": st.sampled_from(["node", "tables"]),
        "discount_factor": st.sampled_from([0.1, 10.0]),
        "random_state": st.integers(0, 2**31 - 1),
    }
)


def _queries(X, seed):
    """Training points, points around the data and points far away from it."""
    rng = np.random.default_rng(seed)
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.maximum(hi - lo, 1.0)
    near = lo + rng.uniform(-0.5, 1.5, size=(20, X.shape[1])) * span
    far = rng.choice([-1.0, 1.0], size=(5, X.shape[1])) * 1e5
    return np.vstack([X, near, far])


@given(data=datasets(), params=tree_params)
def test_fit_invariants(data, params):
    """A batch-fitted tree satisfies every structural invariant (`check_tree_invariants`),
    and predict_proba rows lie in [0, 1] and sum to 1 anywhere in input space."""
    X, y = data
    tree = MondrianTreeClassifier(**params).fit(X, y)
    check_tree_invariants(tree, X, y)
    queries = _queries(X, params["random_state"])
    proba = tree.predict_proba(queries)
    check_proba(proba, len(queries), len(tree.classes_))
    assert_array_equal(tree.predict(queries), tree.classes_[np.argmax(proba, axis=1)])


@given(
    data=datasets(),
    params=tree_params,
    cuts=st.lists(st.integers(0, 40), max_size=4),
    fix_classes=st.booleans(),
)
def test_partial_fit_in_chunks_keeps_invariants(data, params, cuts, fix_classes):
    """partial_fit on consecutive chunks keeps every invariant after every chunk, whether the
    classes are given up front or appear mid-stream."""
    X, y = data
    bounds = sorted({0, len(X), *[c for c in cuts if c < len(X)]})
    tree = MondrianTreeClassifier(**params)
    classes = np.unique(y) if fix_classes else None
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        tree.partial_fit(X[start:stop], y[start:stop], classes=classes)
        check_tree_invariants(tree, X[:stop], y[:stop])
        if fix_classes:
            assert_array_equal(tree.classes_, np.unique(y))
        else:
            assert set(tree.classes_) == set(np.unique(y[:stop]))
    queries = _queries(X, params["random_state"])
    check_proba(tree.predict_proba(queries), len(queries), len(tree.classes_))


@given(data=datasets(), params=tree_params)
def test_pickle_round_trip(data, params):
    """A pickled and unpickled tree has identical arrays and identical predict_proba."""
    X, y = data
    tree = MondrianTreeClassifier(**params).fit(X, y)
    clone = pickle.loads(pickle.dumps(tree))
    assert_same_tree(tree, clone)
    queries = _queries(X, params["random_state"])
    assert_array_equal(tree.predict_proba(queries), clone.predict_proba(queries))
    assert_array_equal(tree.apply(queries), clone.apply(queries))


@given(data=datasets(), params=tree_params)
def test_fit_is_deterministic(data, params):
    """Two fits with the same random_state give bit-identical trees and predictions, and
    refitting an estimator starts from scratch."""
    X, y = data
    a = MondrianTreeClassifier(**params).fit(X, y)
    b = MondrianTreeClassifier(**params).fit(X, y)
    assert_same_tree(a, b)
    queries = _queries(X, params["random_state"])
    assert_array_equal(a.predict_proba(queries), b.predict_proba(queries))
    b.fit(X[::-1], y[::-1]).fit(X, y)
    assert_same_tree(a, b)


@given(data=datasets(max_n=20), params=tree_params, n_estimators=st.integers(1, 4))
def test_forest_is_the_average_of_its_trees(data, params, n_estimators):
    """The forest predict_proba is the mean of its trees' predict_proba, apply stacks the
    trees' leaves, and every tree satisfies the invariants."""
    X, y = data
    forest = MondrianForestClassifier(n_estimators=n_estimators, **params).fit(X, y)
    queries = _queries(X, params["random_state"])
    proba = forest.predict_proba(queries)
    check_proba(proba, len(queries), len(forest.classes_))
    trees = [est.predict_proba(queries) for est in forest.estimators_]
    np.testing.assert_allclose(proba, np.mean(trees, axis=0), rtol=0, atol=1e-12)
    leaves = forest.apply(queries)
    assert leaves.shape == (len(queries), n_estimators)
    for m, est in enumerate(forest.estimators_):
        assert_array_equal(leaves[:, m], est.apply(queries))
        check_tree_invariants(est, X, y)


tiny_values = st.one_of(
    st.sampled_from([0.0, 5e-324, -5e-324, 1e-310, 1e-300, 1e-200, 1.0, -1e3, 1e3]),
    ulp_values(bases=(0.0, 1e-300)),
)


@given(
    data=datasets(max_n=20, elements=tiny_values),
    params=tree_params,
    cuts=st.lists(st.integers(0, 20), max_size=3),
)
def test_tiny_feature_ranges_are_handled(data, params, cuts):
    """Features whose range is subnormal or tiny (scaled coordinates can overflow) never give
    NaN or broken trees: every call either succeeds with all invariants and valid
    probabilities, or raises ValueError and leaves the model exactly as it was."""
    X, y = data
    bounds = sorted({0, len(X), *[c for c in cuts if c < len(X)]})
    tree = MondrianTreeClassifier(**params)
    queries = _queries(X, params["random_state"])
    learnt = 0
    for start, stop in zip(bounds[:-1], bounds[1:], strict=True):
        before = pickle.dumps(tree)
        try:
            tree.partial_fit(X[start:stop], y[start:stop], classes=np.unique(y))
        except ValueError:
            assert pickle.dumps(tree) == before, "a failed partial_fit changed the model"
            break
        learnt = stop
        check_tree_invariants(tree, X[:learnt], y[:learnt])
    if learnt == 0:
        return
    for q in queries:
        try:
            proba = tree.predict_proba(q[None, :])
        except ValueError:
            continue
        check_proba(proba, 1, len(tree.classes_))


def _cuts(tree):
    """The set of (feature, threshold, split_time) of the internal nodes."""
    t = tree.tree_
    internal = t.children_left != -1
    return set(
        zip(
            t.feature[internal].tolist(),
            t.threshold[internal].tolist(),
            t.split_time[internal].tolist(),
            strict=True,
        )
    )


@given(data=datasets(), params=tree_params, cut=st.integers(1, 39))
def test_partial_fit_never_undoes_cuts(data, params, cut):
    """Online extension only adds structure (§2): every cut of the tree survives a later
    partial_fit unchanged, and training points that were in different leaves stay in
    different leaves (only paused leaves regrow, and they held no cuts).

    Exception by design: while the min-max map is still warming up, a change of the map
    re-samples the trees from scratch; the check then only applies when the map is unchanged.
    """
    X, y = data
    cut = min(cut, len(X))
    tree = MondrianTreeClassifier(**params).partial_fit(X[:cut], y[:cut], classes=np.unique(y))
    cuts_before = _cuts(tree)
    leaves_before = tree.apply(X[:cut])
    map_before = (tree.feature_offset_, tree.feature_scale_)
    if cut < len(X):
        tree.partial_fit(X[cut:], y[cut:])
    map_after = (tree.feature_offset_, tree.feature_scale_)
    if not all(np.array_equal(a, b) for a, b in zip(map_before, map_after, strict=True)):
        assert params["feature_scaling"] == "minmax"
        return
    assert cuts_before <= _cuts(tree)
    leaves_after = tree.apply(X[:cut])
    apart = leaves_before[:, None] != leaves_before[None, :]
    assert np.all((leaves_after[:, None] != leaves_after[None, :])[apart])
