"""The Mondrian grid: the ARD Laplace kernel of its features, exact incremental add/remove
updates of the ridge inverse, the greedy lifetime search, validation, pickling, atomicity."""

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mondrian import GridLifetimePath, MondrianGridFeatures, MondrianGridRidge
from mondrian.grid._cuts import GridCuts, GridSample
from mondrian.grid._search import begin, record
from mondrian.kernel._ridge_path import RidgePathVisitor

from _data import sine_regression
from _reference import grid_ridge_system


def _ard_laplace(A, B, lifetimes):
    return np.exp(-(lifetimes * np.abs(A[:, None, :] - B[None, :, :])).sum(-1))


# ---------------------------------------------------------------------------- the kernel

@pytest.mark.statistical
def test_same_cell_frequency_is_the_ard_laplace_kernel():
    """Entry (i, j) of Z Z' is the share of M grids where i and j share a cell: a mean of M
    Bernoulli(k_ij) draws. Every pair (fitted-fitted and new-fitted) must be within 4.5 binomial
    standard deviations of the ARD kernel (about 1e-5 per pair, 45 pairs)."""
    rng = np.random.RandomState(3)
    X = rng.uniform(size=(6, 3))
    X_new = rng.uniform(size=(3, 3))
    lifetimes = np.array([1.5, 0.6, 0.0])
    M = 4000
    model = MondrianGridFeatures(M, lifetimes=lifetimes, feature_scaling=None,
                                 random_state=0).fit(X)
    Z = model.transform(X)
    Z_new = model.transform(X_new)
    for A, ZA in ((X, Z), (X_new, Z_new)):
        shared = (ZA @ Z.T).toarray()
        exact = _ard_laplace(A, X, lifetimes)
        tolerance = 4.5 * np.sqrt(exact * (1 - exact) / M) + 1e-12
        assert np.all(np.abs(shared - exact) <= tolerance), np.abs(shared - exact).max()
    # The check has power: lifetimes off by 20% in one dimension break it.
    wrong = _ard_laplace(X, X, lifetimes * np.array([1.2, 1.0, 1.0]))
    assert np.any(np.abs((Z @ Z.T).toarray() - wrong)
                  > 4.5 * np.sqrt(wrong * (1 - wrong) / M) + 1e-12)


def test_minmax_units_and_unit_norm_rows():
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(20, 2)) * [10.0, 0.1] + [5.0, -3.0]
    a = MondrianGridFeatures(30, lifetimes=[2.0, 1.0], random_state=1).fit_transform(X)
    scaled = (X - X.min(0)) / (X.max(0) - X.min(0))
    b = MondrianGridFeatures(30, lifetimes=[2.0, 1.0], feature_scaling=None,
                             random_state=1).fit_transform(scaled)
    assert (a != b).nnz == 0
    assert np.allclose(a.multiply(a).sum(axis=1), 1.0)


def test_a_lifetime_of_zero_is_never_cut():
    rng = np.random.RandomState(1)
    X = rng.uniform(size=(40, 2))
    model = MondrianGridFeatures(50, lifetimes=[3.0, 0.0], random_state=0).fit(X)
    twin = X.copy()
    twin[:, 1] = rng.uniform(size=40)  # same first coordinate, any second one
    Z, Z_twin = model.transform(X), model.transform(twin)
    assert (Z != Z_twin).nnz == 0
    sample = GridSample(X, 20, 5)
    assert not sample.segments(np.array([np.inf, 0.0]))[:, sample.offsets[1]:].any()


def test_transform_is_deterministic_per_point():
    rng = np.random.RandomState(2)
    X = rng.uniform(size=(30, 2))
    model = MondrianGridFeatures(20, lifetimes=4.0, random_state=0).fit(X)
    X_new = rng.uniform(-0.5, 1.5, size=(10, 2))
    together = model.transform(np.vstack([X_new, X])).toarray()
    assert np.array_equal(together[:10], model.transform(X_new).toarray())
    assert np.array_equal(together[10:], model.transform(X).toarray())
    assert model.get_feature_names_out().shape == (model.n_features_out_,)


# ---------------------------------------------------------------------------- exact updates

N_POINTS, N_TRAIN, N_DIMS, N_GRIDS, ALPHA = 40, 30, 3, 4, 0.3


def _problem(seed):
    rng = np.random.RandomState(seed)
    X = np.round(rng.uniform(size=(N_POINTS, N_DIMS)), 2)  # ties: shared coordinates
    y = rng.normal(size=N_POINTS)
    is_train = (np.arange(N_POINTS) < N_TRAIN).astype(np.uint8)
    targets = np.ascontiguousarray(y - y[:N_TRAIN].mean())
    sample = GridSample(X, N_GRIDS, seed)
    source = GridCuts(sample)
    visitor = RidgePathVisitor(targets, is_train, ALPHA, capacity=400)
    begin(source, visitor)
    return X, targets, sample, source, visitor


def _fresh(visitor, targets):
    """Inverse and weights solved from scratch on the visitor's columns."""
    cols = visitor.columns
    Z, A = grid_ridge_system(cols, visitor.n_features, N_TRAIN, N_GRIDS, ALPHA)
    inverse = np.linalg.inv(A)
    return inverse, inverse @ (Z.T @ targets[:N_TRAIN]), cols


def _same_partition(a, b):
    pairs = set(zip(a.tolist(), b.tolist(), strict=True))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


@pytest.mark.exact
@settings(deadline=None, max_examples=25)
@given(seed=st.integers(0, 10**6),
       moves=st.lists(st.tuples(st.integers(0, N_DIMS - 1), st.booleans()), max_size=40))
def test_any_sequence_of_additions_and_removals_equals_a_fresh_solve(seed, moves):
    X, targets, sample, source, visitor = _problem(seed)
    for d, add in moves:
        if add and source.n_available(d) > 0:
            source.add(d, visitor)
        elif not add and source.active_counts[d] > 0:
            source.remove(d, visitor)
    inverse, weights, cols = _fresh(visitor, targets)
    assert np.abs(visitor.inverse - inverse).max() <= 1e-8
    coef = visitor.coef
    assert np.abs(coef - weights).max() <= 1e-8
    # Predictions of every point (training and validation) from the two solutions.
    predictions = coef[cols].sum(axis=0) / np.sqrt(N_GRIDS)
    assert np.allclose(predictions, weights[cols].sum(axis=0) / np.sqrt(N_GRIDS), atol=1e-8)
    # The source's cells are the grid's cells at its lifetimes (keys of section 9).
    lifetimes = source.lifetimes()
    segments = sample.segments(lifetimes)
    cells = source.cells()
    for m in range(N_GRIDS):
        keys = sample.keys(X, m, lifetimes, segments)
        key_ids = np.unique(keys, axis=0, return_inverse=True)[1].ravel()
        assert _same_partition(key_ids, cells[m])
        assert _same_partition(cells[m], cols[m])


@pytest.mark.exact
def test_trials_restore_the_saved_state_bit_for_bit():
    X, targets, sample, source, visitor = _problem(7)
    for d in (0, 1, 2, 0):
        source.add(d, visitor)
    saved_source, saved_visitor = source.snapshot(), visitor.snapshot()
    before = (visitor.inverse, record(visitor), source.cells())
    source.add(1, visitor)
    source.remove(0, visitor)
    source.restore(saved_source)
    visitor.restore(saved_visitor)
    after = (visitor.inverse, record(visitor), source.cells())
    for a, b in zip(before, after, strict=True):
        assert np.array_equal(a, b)


@pytest.mark.exact
@settings(deadline=None, max_examples=20)
@given(seed=st.integers(0, 10**6),
       before=st.lists(st.tuples(st.integers(0, N_DIMS - 1), st.booleans()), max_size=15),
       trial=st.lists(st.tuples(st.integers(0, N_DIMS - 1), st.booleans()), min_size=1,
                      max_size=40))
def test_any_trial_rolls_back_bit_for_bit(seed, before, trial):
    """The checkpoint copies the inverse only when a move changes it in place (a flush of the
    pending corrections, a merge): whatever the trial did, restoring gives the same bits."""
    X, targets, sample, source, visitor = _problem(seed)

    def play(moves):
        for d, add in moves:
            if add and source.n_available(d) > 0:
                source.add(d, visitor)
            elif not add and source.active_counts[d] > 0:
                source.remove(d, visitor)

    play(before)
    saved_source, saved_visitor = source.snapshot(), visitor.snapshot()
    reference = (record(visitor), source.cells(), visitor.columns)
    for _ in range(2):  # two trials from the same snapshot
        play(trial)
        source.restore(saved_source)
        visitor.restore(saved_visitor)
        again = (record(visitor), source.cells(), visitor.columns)
        for a, b in zip(reference, again, strict=True):
            assert np.array_equal(a, b)
    play(trial)  # and the state after the rollback still updates exactly
    inverse, weights, _ = _fresh(visitor, targets)
    assert np.abs(visitor.inverse - inverse).max() <= 1e-8


# ---------------------------------------------------------------------------- the search

@pytest.mark.statistical
def test_irrelevant_dimension_gets_a_small_lifetime():
    X, y = sine_regression(300, 2, 0)
    model = MondrianGridRidge(n_grids=10, alpha=0.1, max_features=200, random_state=0).fit(X, y)
    assert model.lifetimes_[1] < 0.1 * model.lifetimes_[0]
    assert np.array_equal(model.lifetimes_, model.lifetime_path_.best_lifetimes)


@pytest.mark.parametrize("search", ["add", "add_remove"])
def test_search_respects_the_feature_budget_and_never_revisits(search):
    X, y = sine_regression(120, 2, 1)
    model = MondrianGridRidge(n_grids=5, alpha=0.1, max_features=60, cuts_per_step=2,
                              search=search, random_state=0).fit(X, y)
    path = model.lifetime_path_
    assert isinstance(path, GridLifetimePath)
    assert path.n_features.max() <= 60
    assert path.n_features[0] == 5 and path.moves[0] == 0
    if search == "add":
        assert np.all(path.moves[1:] == 1)
        assert np.all(np.diff(path.lifetimes, axis=0) >= 0)
    configurations = {tuple(row) for row in path.lifetimes}
    assert len(configurations) == len(path)
    frame = path.to_frame()
    assert list(frame.columns[:4]) == ["dimension", "move", "lifetime_0", "lifetime_1"]
    assert path.validation_error[path.best_index] == path.validation_error.min()


def test_path_plot():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    X, y = sine_regression(80, 2, 2)
    model = MondrianGridRidge(n_grids=4, alpha=0.1, max_features=40, random_state=0).fit(X, y)
    axes = model.lifetime_path_.plot()
    assert len(axes) == 2
    import matplotlib.pyplot as plt

    plt.close("all")


def test_explicit_validation_data_and_fixed_lifetimes():
    X, y = sine_regression(150, 2, 3)
    X_val, y_val = sine_regression(50, 2, 4)
    model = MondrianGridRidge(n_grids=5, alpha=0.1, max_features=80, random_state=0)
    model.fit(X, y, X_val=X_val, y_val=y_val)
    fixed = MondrianGridRidge(n_grids=5, alpha=0.1, lifetimes=model.lifetimes_,
                              random_state=0).fit(X, y)
    assert not hasattr(fixed, "lifetime_path_")
    assert np.isfinite(fixed.predict(X_val)).all()


@pytest.mark.exact
def test_fixed_lifetimes_model_is_the_ridge_solution_on_grid_features():
    X, y = sine_regression(100, 2, 5)
    lifetimes = np.array([5.0, 1.0])
    model = MondrianGridRidge(n_grids=8, alpha=0.5, lifetimes=lifetimes, random_state=3).fit(X, y)
    features = MondrianGridFeatures(8, lifetimes=lifetimes, random_state=3).fit(X)
    Z = features.transform(X).toarray()
    w = np.linalg.solve(Z.T @ Z + 0.5 * np.eye(Z.shape[1]), Z.T @ (y - y.mean()))
    X_new = np.random.RandomState(0).uniform(size=(20, 2))
    assert np.allclose(model.predict(X_new), features.transform(X_new) @ w + y.mean(),
                       atol=1e-8)


# ---------------------------------------------------------------------------- contracts

@pytest.mark.parametrize("lifetimes, error", [
    ([1.0, 2.0, 3.0], ValueError), ([-1.0, 1.0], ValueError), ([np.nan, 1.0], ValueError),
    ("wide", (TypeError, ValueError)), (True, (TypeError, ValueError)),
])
def test_bad_lifetimes(lifetimes, error):
    X, y = sine_regression(20, 2, 0)
    with pytest.raises(error):
        MondrianGridFeatures(3, lifetimes=lifetimes).fit(X)
    with pytest.raises(error):
        MondrianGridRidge(3, lifetimes=lifetimes).fit(X, y)


def test_bad_inputs_name_the_problem():
    X, y = sine_regression(40, 2, 0)
    with pytest.raises(ValueError, match="X_val"):
        MondrianGridRidge(3).fit(X, y, X_val=X)
    with pytest.raises(ValueError, match="max_features"):
        MondrianGridRidge(10, max_features=5).fit(X, y)
    with pytest.raises(ValueError, match="max_features"):
        MondrianGridRidge(10, lifetimes=1e6, max_features=20).fit(X, y)
    with pytest.raises(ValueError, match="lifetimes='auto'"):
        MondrianGridRidge(3, lifetimes=1.0).fit(X, y, X_val=X, y_val=y)
    model = MondrianGridRidge(3, max_features=30, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :1])


def test_failed_fit_leaves_the_model_intact_and_predict_is_read_only():
    X, y = sine_regression(60, 2, 0)
    model = MondrianGridRidge(4, alpha=0.1, max_features=40, random_state=0).fit(X, y)
    before = model.predict(X)
    state = pickle.dumps(model)
    model.set_params(lifetimes=[1.0, -1.0])
    with pytest.raises(ValueError):
        model.fit(X, y)
    model.set_params(lifetimes="auto")
    assert np.array_equal(model.predict(X), before)
    assert pickle.dumps(model) == state


def test_pickling_round_trip():
    X, y = sine_regression(60, 2, 1)
    model = MondrianGridRidge(4, alpha=0.1, max_features=40, random_state=0).fit(X, y)
    features = MondrianGridFeatures(6, lifetimes=[2.0, 0.5], random_state=0).fit(X)
    X_new = np.random.RandomState(9).uniform(-0.2, 1.2, size=(25, 2))
    model2 = pickle.loads(pickle.dumps(model))
    features2 = pickle.loads(pickle.dumps(features))
    assert np.array_equal(model2.predict(X_new), model.predict(X_new))
    assert (features2.transform(X_new) != features.transform(X_new)).nnz == 0
    assert np.array_equal(model2.lifetime_path_.lifetimes, model.lifetime_path_.lifetimes)
