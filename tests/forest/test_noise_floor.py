"""The regressor's noise floor from duplicated inputs: rows with identical inputs
and different targets bound the noise variance from below, whatever the held-out choice or the
marginal likelihood would pick."""

import gzip
import os
import pickle
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import chi2

import mondrian.forest._hyperparameters as hyper
from mondrian import MondrianForestRegressor
from mondrian.estimator.relevance import choose_weights
from mondrian.forest._hyperparameters import NOISE_FLOOR_LEVEL, _duplicate_noise_floor


def _reference_floor(X, y, weights=None, level=NOISE_FLOOR_LEVEL):
    """Pure Python: every row repeated by its (integer) weight, grouped by its input; the
    pooled within-group variance, then its one-sided chi-square lower bound."""
    counts = [1] * len(y) if weights is None else [int(w) for w in weights]
    groups = {}
    for row, target, count in zip(X, y, counts, strict=True):
        groups.setdefault(tuple(row), []).extend([float(target)] * count)
    squares, dof = 0.0, 0
    for targets in groups.values():
        mean = sum(targets) / len(targets)
        squares += sum((t - mean) ** 2 for t in targets)
        dof += len(targets) - 1
    if dof == 0 or squares == 0.0:
        return 0.0
    estimate = squares / dof
    return dof * estimate / chi2.ppf(level, dof)


def _duplicated(n=240, n_repeat=80, n_same=40, noise=0.02, repeat_noise=0.3, seed=0):
    """Inputs of which ``n_repeat`` are repeated once with targets that differ by noise of
    standard deviation ``repeat_noise`` (sigma_y^2 = repeat_noise**2 / 2 from the pairs) and
    ``n_same`` once more with the same target (as in concrete: duplicates of both kinds); the
    other targets are almost noise-free, so a free choice goes far below the pairs' noise."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(size=(n, 2))
    y = np.sin(6 * X[:, 0]) + noise * rng.normal(size=n)
    again = X[:n_repeat]
    y_again = y[:n_repeat] + repeat_noise * rng.normal(size=n_repeat)
    same = X[n_repeat:n_repeat + n_same]
    return (np.vstack([X, again, same]), np.r_[y, y_again, y[n_repeat:n_repeat + n_same]])


@pytest.mark.exact
def test_floor_equals_the_pooled_reference():
    rng = np.random.RandomState(1)
    X = np.round(rng.uniform(size=(60, 3)), 1)  # many repeated rows
    X[:, 2] = 0.5
    y = rng.normal(size=60)
    assert _duplicate_noise_floor(X, y) > 0
    np.testing.assert_allclose(_duplicate_noise_floor(X, y), _reference_floor(X, y),
                               rtol=1e-12)
    # Weights are counts: a row of weight w is w identical rows.
    w = rng.randint(1, 4, size=60).astype(float)
    np.testing.assert_allclose(_duplicate_noise_floor(X, y, w), _reference_floor(X, y, w),
                               rtol=1e-12)
    expanded = np.repeat(np.arange(60), w.astype(int))
    np.testing.assert_allclose(_duplicate_noise_floor(X, y, w),
                               _duplicate_noise_floor(X[expanded], y[expanded]), rtol=1e-12)
    # The level: the estimate itself at level 1 - P(chi2 > dof) (the median-ish point).
    dof = sum(c - 1 for c in np.unique(X, axis=0, return_counts=True)[1])
    estimate = _duplicate_noise_floor(X, y, level=chi2.cdf(dof, dof))
    np.testing.assert_allclose(estimate, _reference_floor(X, y) * chi2.ppf(
        NOISE_FLOOR_LEVEL, dof) / dof, rtol=1e-9)
    # No duplicated input: 0, with or without weights; equal targets in every group: 0.
    unique = rng.uniform(size=(50, 3))
    assert _duplicate_noise_floor(unique, rng.normal(size=50)) == 0.0
    assert _duplicate_noise_floor(unique, rng.normal(size=50), np.full(50, 3.0)) == 0.0
    assert _duplicate_noise_floor(np.vstack([unique, unique]), np.r_[y[:50], y[:50]]) == 0.0
    assert _duplicate_noise_floor(unique[:1], y[:1]) == 0.0


@pytest.mark.statistical
def test_floor_is_a_lower_confidence_bound():
    """Over many draws of Gaussian noise of variance 4 (3 degrees of freedom), the floor
    exceeds 4 at the rate 1 - level (binomial, 5 standard errors)."""
    rng = np.random.RandomState(2)
    X = np.repeat(np.arange(3.0), 2)[:, None]
    reps = 4000
    above = sum(_duplicate_noise_floor(X, 2.0 * rng.normal(size=6)) > 4.0 for _ in range(reps))
    p = 1 - NOISE_FLOOR_LEVEL
    assert abs(above / reps - p) < 5 * np.sqrt(p * (1 - p) / reps)


def test_chosen_noise_respects_the_floor(monkeypatch):
    X, y = _duplicated()
    model = MondrianForestRegressor(n_estimators=10, random_state=0).fit(X, y)
    floor = model._hyper_choice[4]
    expected = _duplicate_noise_floor(model._store.X, model._y_scaler.transform(y))
    np.testing.assert_allclose(floor, expected, rtol=1e-12)
    floor_units = floor * model._y_scaler.scale ** 2
    assert floor_units > 0.25 * 0.09  # sigma_y^2 = 0.09
    assert model.hyperparameters_["noise_variance"] >= floor_units * (1 - 1e-12)
    _, std = model.predict(X[:80], return_std=True)  # duplicated inputs
    assert np.all(std >= np.sqrt(floor_units) * (1 - 1e-12))
    # Without the floor the choice goes below it here (the repeated identical targets).
    monkeypatch.setattr(hyper, "_duplicate_noise_floor", lambda *a, **k: 0.0)
    free = MondrianForestRegressor(n_estimators=10, random_state=0).fit(X, y)
    assert free.hyperparameters_["noise_variance"] < floor_units


def test_held_out_scoring_sees_the_floor(monkeypatch):
    """Every predictive the probe scores (shares, then variance scales) has the noise
    max(chosen, floor), the floor in the probe's units: the choice is made on the predictive
    the model will have, the posteriors (messages) on the chosen noise."""
    X, y = _duplicated()
    calls, scored = [], []
    grid, predict = MondrianForestRegressor._held_out_moments_grid, hyper.predict_moments_grid

    def spy_grid(self, params, X_scaled, floor=0.0):
        calls.append((self._y_scaler, floor, [p.noise for p in params]))
        return grid(self, params, X_scaled, floor)

    def spy_predict(trees, messages, X_scaled, out, params, *args):
        scored.append([p.noise for p in params])
        return predict(trees, messages, X_scaled, out, params, *args)

    monkeypatch.setattr(MondrianForestRegressor, "_held_out_moments_grid", spy_grid)
    monkeypatch.setattr(hyper, "predict_moments_grid", spy_predict)
    # (debias=None: the debiased combination's choice reads the probe once more.)
    model = MondrianForestRegressor(n_estimators=6, debias=None, random_state=0).fit(X, y)
    floor = model._hyper_choice[4]
    assert floor > 0 and len(calls) == len(hyper.HELD_OUT_RATE_MULTIPLIERS) + 1
    binds = False
    for (scaler, probe_floor, chosen), noises in zip(calls, scored, strict=True):
        assert probe_floor == scaler.variance_from_units(floor)
        assert noises == [max(n, probe_floor) for n in chosen]
        binds |= min(chosen) < probe_floor
    assert binds


def test_floor_changes_no_mean():
    """The floor acts on the predictive's noise only: the same choice without it gives the
    same means, and smaller or equal standard deviations."""
    X, y = _duplicated()
    model = MondrianForestRegressor(n_estimators=6, random_state=0).fit(X, y)
    assert model._hyper_choice[4] > 0
    Xt = np.vstack([X[:100], np.random.RandomState(1).uniform(-0.5, 1.5, size=(50, 2))])
    mean, std = model.predict(Xt, return_std=True)
    hyper = model.hyperparameters_
    free = pickle.loads(pickle.dumps(model))
    free._hyper_choice = (*free._hyper_choice[:4], 0.0)
    free._version += 1
    mean0, std0 = free.predict(Xt, return_std=True)
    np.testing.assert_array_equal(mean, mean0)
    assert np.all(std >= std0) and np.any(std > std0)
    assert free.hyperparameters_["noise_variance"] < hyper["noise_floor"]
    assert hyper["noise_variance"] == hyper["noise_floor"]
    assert model.log_marginal_likelihood() == free.log_marginal_likelihood()


def test_marginal_likelihood_path_respects_the_floor(monkeypatch):
    """Batches under MIN_SAMPLES_HELD_OUT: the marginal likelihood decides, floored by the
    stored points' duplicates too. (It sees the scatter of the duplicates in their leaves, so
    its grid rarely reaches the floor: a grid of one tiny share shows the floor acting.)"""
    X, y = _duplicated(n=30, n_repeat=10, n_same=5, seed=0)
    assert len(y) < hyper.MIN_SAMPLES_HELD_OUT
    monkeypatch.setattr(hyper, "NOISE_SHARES", np.array([1e-6]))
    model = MondrianForestRegressor(n_estimators=5, random_state=0).fit(X, y)
    assert model._hyper_choice is None
    floor = model._store_noise_floor() * model._y_scaler.scale ** 2
    assert floor > 0
    np.testing.assert_allclose(model.hyperparameters_["noise_variance"], floor, rtol=1e-12)
    _, std = model.predict(X[:10], return_std=True)
    assert np.all(std >= np.sqrt(floor) * (1 - 1e-12))
    # Online below the held-out size: each update floors by the points stored then.
    online = MondrianForestRegressor(n_estimators=5, random_state=0)
    for start in range(0, len(y), 15):
        online.partial_fit(X[start:start + 15], y[start:start + 15])
        floor = online._store_noise_floor() * online._y_scaler.scale ** 2
        assert online.hyperparameters_["noise_variance"] >= floor * (1 - 1e-12)
    monkeypatch.setattr(hyper, "_duplicate_noise_floor", lambda *a, **k: 0.0)
    free = MondrianForestRegressor(n_estimators=5, random_state=0).fit(X, y)
    assert free.hyperparameters_["noise_variance"] < 0.01 * floor


@pytest.mark.exact
@pytest.mark.parametrize("n", [30, 300])
def test_no_duplicates_is_bit_identical_without_the_floor(n, monkeypatch):
    rng = np.random.RandomState(5)
    X = rng.uniform(size=(n, 3))
    y = np.sin(6 * X[:, 0]) + 0.1 * rng.normal(size=n)
    w = rng.randint(1, 3, size=n).astype(float)  # counts above 1 pool nothing either
    Xt = rng.uniform(-0.2, 1.2, size=(50, 3))
    kw = dict(n_estimators=6, random_state=0)
    floored = [MondrianForestRegressor(**kw).fit(X, y, sample_weight=s) for s in (None, w)]
    monkeypatch.setattr(hyper, "_duplicate_noise_floor", lambda *a, **k: 0.0)
    free = [MondrianForestRegressor(**kw).fit(X, y, sample_weight=s) for s in (None, w)]
    for a, b in zip(floored, free, strict=True):
        assert a._hyper_choice == b._hyper_choice
        for left, right in zip(a.predict(Xt, return_std=True), b.predict(Xt, return_std=True),
                               strict=True):
            np.testing.assert_array_equal(left, right)


def test_online_floor_is_the_batch_floor_of_the_stored_points():
    """partial_fit in chunks re-chooses on growth: the floor of each choice is that of the
    points stored then, and the last one equals the batch fit's on the same points."""
    X, y = _duplicated(n=300, n_repeat=100, n_same=50, seed=6)
    order = np.random.RandomState(0).permutation(len(y))
    X, y = X[order], y[order]
    first = np.r_[np.argmin(y), np.argmax(y)]  # the target map fixed by the first chunk
    order = np.r_[first, np.setdiff1d(np.arange(len(y)), first)]
    X, y = X[order], y[order]
    # Label-blind: a stream chooses its weights on its first rows, a batch on all of them.
    kw = dict(n_estimators=6, feature_scaling=None, feature_weights=None, random_state=0)
    batch = MondrianForestRegressor(**kw).fit(X, y)
    online = MondrianForestRegressor(**kw)
    seen = []
    for start, stop in ((0, 100), (100, 200), (200, 450)):
        online.partial_fit(X[start:stop], y[start:stop])
        seen.append(online._hyper_choice[4])
        np.testing.assert_allclose(seen[-1], online._store_noise_floor(), rtol=1e-12)
    np.testing.assert_array_equal(online._store.X, batch._store.X)
    assert online._hyper_choice == batch._hyper_choice
    assert seen[-1] > 0


def test_floor_follows_a_grown_target_scale_and_old_choices_load():
    """A grown target map rescales the stored floor exactly (units of y unchanged); a choice
    pickled before the floor (4 entries) predicts as floor 0."""
    X, y = _duplicated(seed=7)
    model = MondrianForestRegressor(n_estimators=4, random_state=0).fit(X, y)
    floor_units = model._hyper_choice[4] * model._y_scaler.scale ** 2
    scale = model._y_scaler.scale
    model.partial_fit(X[:5] + 0.001, 1e7 * y[:5])  # the scale grows, no new choice
    assert model._y_scaler.scale > scale and model._hyper_n == len(y)
    np.testing.assert_allclose(model._hyper_choice[4] * model._y_scaler.scale ** 2,
                               floor_units, rtol=1e-15)
    old = pickle.loads(pickle.dumps(model))
    old._hyper_choice = old._hyper_choice[:4]
    old._version += 1
    zero = pickle.loads(pickle.dumps(model))
    zero._hyper_choice = (*zero._hyper_choice[:4], 0.0)
    zero._version += 1
    for a, b in zip(old.predict(X, return_std=True), zero.predict(X, return_std=True),
                    strict=True):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------------------ concrete

def _datasets_dir():
    env = os.environ.get("MONDRIAN_DATASETS")
    return Path(env) if env else Path(__file__).resolve().parents[2].parent / "shared" / "datasets"


class _JointSearch(MondrianForestRegressor):
    """The joint map-and-power search of benchmarks/bench_weights.py (``auto_joint``), under
    2000 rows: extra-trees relevances only."""

    def _search_weights(self, X, y, method, quantile=False, sample_weight=None):
        return choose_weights(X, y, False, self._weights_score, method, self.random_state,
                              self.validation_fraction, quantile=quantile,
                              sample_weight=sample_weight, joint_map=True, simplest=True)


@pytest.mark.datasets
def test_concrete_split_0_has_no_nll_blow_up():
    """Concrete holds duplicated inputs with equal and with different strengths: without the
    floor the choice went to noise 0.0014 (var(y) about 280) and the test NLL of split 0 to
    316; with it the split's mean NLL is about 3.2."""
    folder = _datasets_dir()
    if not (folder / "concrete.csv.gz").exists():
        pytest.skip(f"datasets not found in {folder} (set MONDRIAN_DATASETS)")
    with gzip.open(folder / "concrete.csv.gz", "rt") as f:
        data = np.loadtxt(f, delimiter=",", skiprows=1)
    with gzip.open(folder / "concrete_splits.csv.gz", "rt") as f:
        f.readline()
        test = np.array([int(line.split(",")[0]) for line in f if line.split(",")[0].strip()])
    train = np.setdiff1d(np.arange(len(data)), test)
    X, y = data[:, :-1], data[:, -1]
    model = _JointSearch(100, feature_weights="auto", random_state=0).fit(X[train], y[train])
    mean, std = model.predict(X[test], return_std=True)
    nll = 0.5 * np.log(2 * np.pi * std**2) + (y[test] - mean) ** 2 / (2 * std**2)
    assert model._hyper_choice[4] > 0
    assert nll.mean() < 4.0, (model.feature_weights_info_, model.hyperparameters_)
