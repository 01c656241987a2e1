"""The debiased regressor (issue 22, ``debias="auto"``): one forest read at two lifetimes and
combined with weights summing to 1 (mondrian.forest.debias)."""

import pickle

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from mondrian import MondrianForestRegressor, merge_forests
from mondrian.forest._gaussian import predict_moments_trees, upward_messages
from mondrian.forest.debias import richardson_weights
from mondrian.merging import forest_parts


def _smooth(seed, n=1000, d=4, noise=0.05):
    """A smooth function of 4 inputs with little noise: the forest's bias dominates its error."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(size=(n, d))
    Xt = rng.uniform(size=(2000, d))
    return X, np.sin(3 * X.sum(1)) + noise * rng.normal(size=n), Xt, np.sin(3 * Xt.sum(1))


def _rmse(a, b):
    return float(np.sqrt(np.mean((a - b) ** 2)))


def _plain(model, X):
    """The same forest's predictions without its combination (the plain forest)."""
    choice = model.__dict__.pop("_debias_choice")
    try:
        return model.predict(X, return_std=True)
    finally:
        model._debias_choice = choice


# ----------------------------------------------------------------- Richardson weights

@pytest.mark.parametrize("power", [1.0, 2.0])
def test_richardson_weights_sum_to_one_and_cancel_the_bias_terms(power):
    # Readings m(l) = f + c1 / l**p + c2 / l**(2p): J + 1 lifetimes cancel J terms exactly.
    f, c1, c2 = 0.7, -3.0, 5.0
    for lifetimes, terms in (([2.0, 5.0], 1), ([1.5, 3.0, 7.0], 2)):
        w = richardson_weights(lifetimes, power)
        assert abs(w.sum() - 1.0) < 1e-12
        lam = np.asarray(lifetimes)
        readings = f + c1 / lam**power + (c2 / lam ** (2 * power) if terms == 2 else 0.0)
        assert abs(w @ readings - f) < 1e-10
        # A single reading (or the plain average) keeps the bias: the weights matter.
        assert abs(readings.mean() - f) > 0.1


def test_richardson_weights_two_lifetimes_closed_form():
    l0, l1 = 2.0, 6.0
    w = richardson_weights([l0, l1], 1.0)
    assert np.allclose(w, [-l0 / (l1 - l0), l1 / (l1 - l0)], rtol=0, atol=1e-12)


@pytest.mark.parametrize("bad", [[], [1.0, 1.0], [0.0, 2.0], [1.0, np.inf]])
def test_richardson_weights_refuse_bad_lifetimes(bad):
    with pytest.raises(ValueError):
        richardson_weights(bad)


# ----------------------------------------------------------------- the estimator

def test_parameter_is_validated():
    X, y, _, _ = _smooth(0, n=60)
    with pytest.raises(InvalidParameterError, match="debias"):
        MondrianForestRegressor(3, debias="yes").fit(X, y)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_debiased_forest_beats_the_plain_one_where_the_bias_dominates(seed):
    # Measured: debiased / plain RMSE 0.74-0.79 on these seeds (20 trees); the tolerance 0.9
    # fails if the weights or their sign were wrong (the opposite combination is worse).
    X, y, Xt, yt = _smooth(seed)
    model = MondrianForestRegressor(20, random_state=seed).fit(X, y)
    info = model.debias_
    assert info is not None
    w_fitted, w_short = info["weights"]
    assert w_fitted + w_short == pytest.approx(1.0, abs=1e-12)
    assert w_fitted > 1.0 > 0.0 > w_short  # the fitted forest extrapolated away from l
    mean = model.predict(Xt)
    plain, _ = _plain(model, Xt)
    assert _rmse(mean, yt) < 0.9 * _rmse(plain, yt)
    # The same move with the wrong sign does worse than the plain forest.
    assert _rmse(plain - (mean - plain), yt) > _rmse(plain, yt)


def test_combination_is_the_weighted_sum_of_the_two_readings():
    X, y, Xt, _ = _smooth(0, n=600)
    model = MondrianForestRegressor(10, random_state=0).fit(X, y)
    lifetime, beta, factor, shift_factor = model._debias_choice
    Xs = model._validate_X_predict(Xt)
    cache = model._posterior()
    out = np.zeros((len(Xs), 2))
    messages = [upward_messages(t, cache.smoothing, lifetime)[:2] for t in model._trees]
    predict_moments_trees(model._trees, messages, Xs, out, cache.params,
                          int(model.n_quadrature), lifetime)
    short = model._y_scaler.inverse(out[:, 0] / len(model._trees))
    plain, plain_std = _plain(model, Xt)
    mean, std = model.predict(Xt, return_std=True)
    w_fitted, w_short = model.debias_["weights"]
    assert np.allclose(mean, w_fitted * plain + w_short * short, rtol=0, atol=1e-9)
    shift = mean - plain
    assert np.allclose(std**2, factor * plain_std**2 + shift_factor * shift**2, rtol=1e-9)


def test_switched_off_is_the_plain_forest_bit_for_bit():
    X, y, Xt, _ = _smooth(1, n=600)
    auto = MondrianForestRegressor(10, random_state=3).fit(X, y)
    off = MondrianForestRegressor(10, debias=None, random_state=3).fit(X, y)
    assert auto.debias_ is not None and off.debias_ is None
    assert "_debias_choice" not in off.__dict__
    # The choice draws no random number: the same trees, the same plain predictive.
    mean, std = off.predict(Xt, return_std=True)
    plain_mean, plain_std = _plain(auto, Xt)
    assert np.array_equal(mean, plain_mean) and np.array_equal(std, plain_std)
    assert np.array_equal(off.predict(Xt[:1]), plain_mean[:1])
    # Switched off after fit: the plain forest too (the choice is kept for debias="auto").
    auto.set_params(debias=None)
    assert auto.debias_ is None
    assert all(np.array_equal(a, b) for a, b in zip(auto.predict(Xt, return_std=True),
                                                    (mean, std), strict=True))
    auto.set_params(debias="auto")
    assert auto.debias_ is not None


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_guard_keeps_the_plain_forest_on_pure_noise(seed):
    rng = np.random.RandomState(seed)
    X = rng.uniform(size=(800, 3))
    model = MondrianForestRegressor(10, random_state=seed).fit(X, rng.normal(size=800))
    assert model.debias_ is None


def test_threads_pickles_and_online_updates_keep_the_combination():
    X, y, Xt, _ = _smooth(2, n=600)
    model = MondrianForestRegressor(10, random_state=0).fit(X, y)
    fitted = pickle.dumps(model)  # before any prediction
    assert model.debias_ is not None
    mean, std = model.predict(Xt, return_std=True)
    threaded = MondrianForestRegressor(10, random_state=0, n_jobs=2).fit(X, y)
    assert threaded.debias_ == model.debias_
    assert all(np.array_equal(a, b) for a, b in zip(threaded.predict(Xt, return_std=True),
                                                    (mean, std), strict=True))
    loaded = pickle.loads(pickle.dumps(model))
    assert loaded.debias_ == model.debias_
    assert np.array_equal(loaded.predict(Xt), mean)
    # The shorter reading's messages are not part of the state: predicting changes no byte.
    assert pickle.dumps(model) == fitted
    one = model.predict_one(dict(enumerate(Xt[0])), return_std=True)
    assert one == pytest.approx((mean[0], std[0]), rel=1e-12)
    # An update changes the trees: the short reading follows them (no stale messages).
    before = model.predict(Xt)
    model.partial_fit(X[:5] + 0.001, y[:5])
    after = model.predict(Xt)
    assert np.all(np.isfinite(after)) and not np.array_equal(before, after)
    lifetime = model._debias_choice[0]
    assert model.lifetime_path(Xt[:50], np.sin(3 * Xt[:50].sum(1))) is not None
    assert model._debias_choice[0] == lifetime
    # A new fit chooses anew (or not at all): no choice is carried over.
    model.fit(X[:30], y[:30])  # under MIN_SAMPLES_HELD_OUT: no held-out choice
    assert model.debias_ is None



def _debiased(n=600, seed=0):
    X, y, Xt, _ = _smooth(seed, n=n)
    model = MondrianForestRegressor(10, random_state=seed).fit(X, y)
    assert model.debias_ is not None  # a combination is kept on this smooth function
    return model, X, y, Xt


def test_a_choice_never_outlives_the_held_out_choice_it_was_made_with():
    X, y, _, _ = _smooth(0, n=700)
    # Switched off during an update that re-chooses the hyperparameters, the combination of
    # the first batch must not come back when switched on again: the model then holds what
    # the same updates with debias on chose.
    on = MondrianForestRegressor(10, random_state=0).fit(X[:400], y[:400])
    off = MondrianForestRegressor(10, random_state=0).fit(X[:400], y[:400])
    assert off.debias_ is not None
    off.set_params(debias=None)
    on.partial_fit(X[400:], y[400:])
    off.partial_fit(X[400:], y[400:])
    assert off._hyper_choice == on._hyper_choice
    off.set_params(debias="auto")
    assert off.debias_ is None
    # Forgetting below the held-out choice's size drops that choice and its combination.
    model, X, y, _ = _debiased()
    model.forget(X[:570], y[:570])
    assert model._hyper_choice is None and model.debias_ is None


def test_pruned_merged_and_path_copies_read_the_plain_forest():
    model, X, y, Xt = _debiased()
    lifetime = model.debias_["lifetime"]
    pruned = model.prune(lifetime / 2)  # a pruned copy
    assert pruned.debias_ is None and model.debias_ is not None
    plain = pickle.loads(pickle.dumps(model)).set_params(debias=None).prune(lifetime / 2)
    # The pruned forest is the plain forest pruned: its variance is not scaled down.
    np.testing.assert_array_equal(pruned.predict(Xt, return_std=True)[1],
                                  plain.predict(Xt, return_std=True)[1])
    # Parts of one forest make the whole forest's choice: merged, they are that forest.
    parts = [part.fit(X, y) for part in forest_parts(model, 2)]
    merged = merge_forests(parts)
    assert merged.debias_ == model.debias_
    for a, b in zip(merged.predict(Xt, return_std=True), model.predict(Xt, return_std=True),
                    strict=True):
        np.testing.assert_array_equal(a, b)
    # Parts that chose differently merge into the plain forest.
    parts[1]._debias_choice = None
    assert merge_forests(parts).debias_ is None
    path = model.lifetime_path(X[:100], y[:100])
    assert "_debias_choice" not in path.forest_.__dict__
