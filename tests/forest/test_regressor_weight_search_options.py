"""Options of the regressor's feature-weight search (not the default, see
benchmarks/results/weights.md): map and power chosen together, the simplest
candidate within the validation noise of the best, several relevance methods competing on the
same validation rows."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from mondrian import MondrianForestRegressor
from mondrian.estimator import relevance
from mondrian.estimator.relevance import choose_weights


def _skewed(n=300, seed=0):
    """Column 0 drives y through its rank (log-normal: min-max crams it into a corner),
    column 1 a little, columns 2-3 are noise."""
    rng = np.random.RandomState(seed)
    Z = rng.uniform(size=(n, 4))
    X = Z.copy()
    X[:, 0] = np.exp(8 * Z[:, 0])
    y = np.sin(6 * Z[:, 0]) + 0.3 * Z[:, 1] + 0.05 * rng.randn(n)
    return X, y


def _looks_quantile_mapped(X_fit):
    # The quantile map of the fit part spreads column 0 evenly over [0, 1]; min-max leaves
    # exp(8 z) in its original units (a median far below the midrange).
    u = X_fit[:, 0]
    return abs(np.median(u) - 0.5) < 0.05 and u.max() <= 1.0 + 1e-9


def test_joint_map_probes_every_power_under_both_maps_and_takes_the_best_pair():
    X, y = _skewed()
    calls = []

    def score(w, X_fit, y_fit, X_val, y_val):
        quantile = _looks_quantile_mapped(X_fit)
        calls.append((w.copy(), quantile))
        rows = np.arange(len(y_val))
        base = np.cos(rows)  # shared by every probe: paired away
        # the quantile map wins clearly, but only at uniform weights or a mild power: the old
        # order (the power under min-max first, then the quantile map at that power) misses it
        spread = np.ptp(w)
        if quantile:
            return base + (0.5 if spread < 1.0 else -0.5)
        return base + 0.3 * (spread > 0)

    w, knots, info = choose_weights(X, y, False, score, "extra_trees", 0, quantile=True,
                                    joint_map=True)
    # 4 powers under min-max, then 4 under the quantile map, in that order
    assert len(calls) == 8
    assert [q for _, q in calls] == [False] * 4 + [True] * 4
    assert info["candidates"] == [(m, "extra_trees", p) for m in ("minmax", "quantile")
                                  for p in relevance.POWERS]
    assert info["map"] == "quantile" and knots is not None
    assert np.ptp(w) < 1.0
    # the quantile map's knots are those of the whole batch: it sends column 0 to its ranks
    u = knots.forward(X)[:, 0]
    assert abs(np.median(u) - 0.5) < 0.01
    # the old order: the best power under min-max, then the quantile map at that power only
    calls.clear()
    w_old, knots_old, old = choose_weights(X, y, False, score, "extra_trees", 0, quantile=True)
    assert len(calls) == 5 and old["map"] == "minmax" and knots_old is None
    assert old["power"] > 0 and np.ptp(w_old) > 1.0


def test_joint_map_keeps_minmax_when_the_quantile_map_does_not_beat_it():
    X, y = _skewed()

    def score(w, X_fit, y_fit, X_val, y_val):
        rows = np.arange(len(y_val))
        quantile = _looks_quantile_mapped(X_fit)
        # the quantile map wins on the mean by less than one paired standard error
        return np.sin(rows) + (0.002 + 0.1 * (-1.0) ** rows if quantile else 0.0)

    w, knots, info = choose_weights(X, y, False, score, "extra_trees", 0, quantile=True,
                                    joint_map=True)
    assert info["map"] == "minmax" and knots is None
    assert info["power"] == 0 and np.all(w == 1.0)


def _by_call(levels, noisy):
    """A score whose k-th call probes the k-th power (quantile=False: the powers are probed
    in order): mean ``levels[k]``, plus a +-0.3 alternating term on the
    ``noisy`` calls (a large paired standard error)."""
    calls = []

    def score(w, X_fit, y_fit, X_val, y_val):
        k = len(calls)
        calls.append(w.copy())
        rows = np.arange(len(y_val))
        return np.sin(rows) + levels[k] + (0.3 * (-1.0) ** rows if k in noisy else 0.0)

    return score


def test_simplest_takes_the_smallest_power_the_best_does_not_beat():
    X, y = _skewed()
    assert relevance.POWERS == (0.0, 0.5, 1.0, 2.0)
    # every power beats uniform clearly; p = 2 beats p = 1 on the mean by less than the noise,
    # p = 1 beats p = 0.5 by much more than it
    levels, noisy = (0.0, 1.0, 2.0, 2.02), {3}
    _, _, plain = choose_weights(X, y, False, _by_call(levels, noisy), "extra_trees", 0,
                                 quantile=False)
    w, _, simple = choose_weights(X, y, False, _by_call(levels, noisy), "extra_trees", 0,
                                  quantile=False, simplest=True)
    assert plain["power"] == 2.0
    assert simple["power"] == 1.0
    np.testing.assert_allclose(w, relevance.power_weights(simple["relevance"], 1.0))
    # a clear win of p = 2 is kept
    _, _, clear = choose_weights(X, y, False, _by_call((0.0, 1.0, 2.0, 2.5), set()),
                                 "extra_trees", 0, quantile=False, simplest=True)
    assert clear["power"] == 2.0
    # and uniform weights stay when no power beats them
    w, _, none = choose_weights(X, y, False, _by_call((0.0, 0.01, 0.01, 0.02), {1, 2, 3}),
                                "extra_trees", 0, quantile=False, simplest=True)
    assert none["power"] == 0.0
    assert_array_equal(w, np.ones(4))


@pytest.mark.statistical
def test_joint_search_with_the_regressors_probes_takes_the_quantile_map_when_skewed():
    # exp(8 z): under min-max, most rows share a sliver of column 0's range; the joint search
    # with real 20-tree probes of the regressor must find the quantile map, and column 0 must
    # keep a weight above the noise columns'.
    X, y = _skewed(400)
    model = MondrianForestRegressor(20, random_state=0)
    w, knots, info = choose_weights(X, y, False, model._weights_score, "extra_trees", 0,
                                    joint_map=True, simplest=True)
    assert info["map"] == "quantile" and knots is not None
    assert w[0] >= w[2:].max()
    # the chosen weights and map give a regressor that uses them as they are
    fitted = MondrianForestRegressor(10, feature_weights=w, random_state=0).fit(
        knots.forward(X), y)
    np.testing.assert_allclose(fitted.feature_weights_, w)


def test_several_methods_compete_on_the_same_validation_rows(monkeypatch):
    X, y = _skewed()
    monkeypatch.setitem(relevance.WEIGHT_METHODS, "on_col2",
                        lambda U, y, c, rng: np.array([0.1, 0.1, 1.0, 0.1]))
    monkeypatch.setitem(relevance.WEIGHT_METHODS, "on_col0",
                        lambda U, y, c, rng: np.array([1.0, 0.2, 0.05, 0.05]))
    calls = []

    def score(w, X_fit, y_fit, X_val, y_val):  # rewards the share of the weight on column 0
        calls.append(w.copy())
        rows = np.arange(len(y_val))
        return np.sin(rows) + w[0] / w.sum()

    w, _, info = choose_weights(X, y, False, score, ("on_col2", "on_col0"), 0, quantile=False)
    # uniform once, then 3 powers of each method
    assert len(calls) == 7 and sum(np.all(c == 1.0) for c in calls) == 1
    assert info["candidates"] == [("minmax", "on_col2", p) for p in relevance.POWERS] + [
        ("minmax", "on_col0", p) for p in relevance.POWERS[1:]]
    assert info["method"] == "on_col0" and info["power"] == 2.0
    np.testing.assert_allclose(w, relevance.power_weights([1.0, 0.2, 0.05, 0.05], 2.0))
    assert_array_equal(info["relevance"], [1.0, 0.2, 0.05, 0.05])
    # one method: the search and its info as before (no candidates entry)
    _, _, single = choose_weights(X, y, False, score, "on_col0", 0, quantile=False)
    assert "candidates" not in single and len(single["scores"]) == len(relevance.POWERS)
