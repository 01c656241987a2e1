"""The regressor's order of the feature-weight search (issue 12): the map first, at uniform
weights, then the smallest power within the validation noise of the best, under that map."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from mondrian import MondrianForestRegressor
from mondrian.core import relevance
from mondrian.core.relevance import choose_weights


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


def test_map_first_chooses_the_map_at_uniform_weights_then_powers_under_it():
    X, y = _skewed()
    calls = []

    def score(w, X_fit, y_fit, X_val, y_val):
        quantile = _looks_quantile_mapped(X_fit)
        calls.append((w.copy(), quantile))
        rows = np.arange(len(y_val))
        base = np.cos(rows)  # shared by every probe: paired away
        gain = 0.5 if quantile else 0.0  # the quantile map wins clearly
        # under the quantile map, powers gain in proportion to p, up to p = 1
        p_gain = 0.0 if np.all(w == 1.0) else 0.3
        return base + gain + p_gain + 0.01 * (-1.0) ** rows

    w, knots, info = choose_weights(X, y, False, score, "extra_trees", 0, quantile=True,
                                    map_first=True)
    # 2 uniform probes (min-max, quantile), then the 3 non-zero powers under the quantile map
    # (uniform weights are not probed again)
    assert len(calls) == 5
    assert np.all(calls[0][0] == 1.0) and not calls[0][1]
    assert np.all(calls[1][0] == 1.0) and calls[1][1]
    assert all(q for _, q in calls[2:]) and not any(np.all(c == 1.0) for c, _ in calls[2:])
    assert info["map"] == "quantile" and knots is not None
    assert info["power"] > 0 and not np.all(w == 1.0)
    # the quantile map's knots are those of the whole batch: it sends column 0 to its ranks
    u = knots.forward(X)[:, 0]
    assert abs(np.median(u) - 0.5) < 0.01


def test_map_first_keeps_minmax_when_the_quantile_map_does_not_beat_it():
    X, y = _skewed()
    calls = []

    def score(w, X_fit, y_fit, X_val, y_val):
        quantile = _looks_quantile_mapped(X_fit)
        calls.append(quantile)
        rows = np.arange(len(y_val))
        # the quantile map wins on the mean by less than one paired standard error
        return np.sin(rows) + (0.002 + 0.1 * (-1.0) ** rows if quantile else 0.0)

    _, knots, info = choose_weights(X, y, False, score, "extra_trees", 0, quantile=True,
                                    map_first=True)
    assert info["map"] == "minmax" and knots is None
    assert calls[:2] == [False, True] and not any(calls[2:])  # powers under min-max


def _by_call(levels, noisy):
    """A score whose k-th call probes the k-th power (quantile=False, map_first=False: the
    powers are probed in order): mean ``levels[k]``, plus a +-0.3 alternating term on the
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


def test_regressor_auto_searches_map_first_with_the_simplest_power(monkeypatch):
    from mondrian.forest import regressor

    seen = {}

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return choose_weights(*args, **kwargs)

    monkeypatch.setattr(regressor, "choose_weights", spy)
    X, y = _skewed(200)
    model = MondrianForestRegressor(10, feature_weights="auto", random_state=0).fit(X, y)
    assert seen["map_first"] is True and seen["simplest"] is True
    assert seen["quantile"] is True
    info = model.feature_weights_info_
    assert info["map"] in ("minmax", "quantile")


@pytest.mark.statistical
def test_regressor_auto_takes_the_quantile_map_for_a_skewed_relevant_feature():
    # exp(8 z): under min-max, most rows share a sliver of column 0's range; the search must
    # find the quantile map and keep it, and column 0 must keep a weight above the noise's.
    X, y = _skewed(400)
    model = MondrianForestRegressor(20, feature_weights="auto", random_state=0).fit(X, y)
    info = model.feature_weights_info_
    assert info["map"] == "quantile"
    assert model.feature_weights_[0] >= model.feature_weights_[2:].max()


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
    assert info["candidates"] == [("on_col2", 0.0), ("on_col2", 0.5), ("on_col2", 1.0),
                                  ("on_col2", 2.0), ("on_col0", 0.5), ("on_col0", 1.0),
                                  ("on_col0", 2.0)]
    assert info["method"] == "on_col0" and info["power"] == 2.0
    np.testing.assert_allclose(w, relevance.power_weights([1.0, 0.2, 0.05, 0.05], 2.0))
    assert_array_equal(info["relevance"], [1.0, 0.2, 0.05, 0.05])
    # one method: the search and its info as before (no candidates entry)
    _, _, single = choose_weights(X, y, False, score, "on_col0", 0, quantile=False)
    assert "candidates" not in single and len(single["scores"]) == len(relevance.POWERS)


def test_regressor_auto_adds_the_laplace_lifetimes_from_enough_rows(monkeypatch):
    from mondrian.forest import regressor

    seen = []
    monkeypatch.setitem(relevance.WEIGHT_METHODS, "laplace_ard",
                        lambda U, y, c, rng: np.ones(U.shape[1]))  # cheap stand-in

    def spy(X, y, classification, score, method, *args, **kwargs):
        seen.append(method)
        return choose_weights(X, y, classification, score, method, *args, **kwargs)

    monkeypatch.setattr(regressor, "choose_weights", spy)
    X, y = _skewed(120)
    MondrianForestRegressor(5, feature_weights="auto", random_state=0).fit(X, y)
    monkeypatch.setattr(regressor, "AUTO_LAPLACE_MIN_ROWS", 100)
    MondrianForestRegressor(5, feature_weights="auto", random_state=0).fit(X, y)
    # a named method is taken as it is
    MondrianForestRegressor(5, feature_weights="extra_trees", random_state=0).fit(X, y)
    # rows counted with their weights: 60 rows of weight 2 are 120 rows
    MondrianForestRegressor(5, feature_weights="auto", random_state=0).fit(
        X[:60], y[:60], sample_weight=np.full(60, 2.0))
    assert seen == ["extra_trees", ("extra_trees", "laplace_ard"), "extra_trees",
                    ("extra_trees", "laplace_ard")]
