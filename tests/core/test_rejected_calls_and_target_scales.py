"""A rejected call leaves the model exactly as it was; targets of any scale and units are learnt."""

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.utils._param_validation import InvalidParameterError

import mondrian.forest._targets as targets_module
from mondrian import (
    MondrianForestClassifier,
    MondrianForestDensity,
    MondrianForestRegressor,
    MondrianTreeClassifier,
    MondrianTreeRegressor,
    RandomPartitionFeatures,
    RandomPartitionGPRegressor,
    RandomPartitionKernelPCA,
)
from mondrian.core.ensemble import fail_after_trees
from mondrian.kernel import (
    LaplaceRandomFourierFeatures,
    MondrianKernelFeatures,
    MondrianKernelRidge,
    MondrianKernelSGDClassifier,
    MondrianKernelSGDRegressor,
    RandomBinningFeatures,
)

rng = np.random.RandomState(0)
X = rng.rand(120, 3)
Y_REG = X[:, 0] + 0.1 * rng.randn(120)
Y_CLF = (X[:, 0] > 0.5).astype(int)


def state(model):
    return pickle.dumps(model)


def assert_unchanged(model, before, call, error=(ValueError, TypeError)):
    with pytest.raises(error):
        call()
    assert state(model) == before


def test_regressor_rejected_batch_keeps_target_sums():
    model = MondrianForestRegressor(4, random_state=0).fit(X, Y_REG)
    before = state(model)
    sums = model._y_sums.copy()
    assert_unchanged(model, before, lambda: model.partial_fit(np.full((2, 3), 1e200), [1.0, 2.0]))
    np.testing.assert_array_equal(model._y_sums, sums)


@pytest.mark.parametrize("targets", [[None, 1.0], [np.nan, 1.0], [np.inf, 0.0]])
def test_regressor_rejects_none_targets_without_change(targets):
    model = MondrianForestRegressor(4, random_state=0).fit(X, Y_REG)
    before = state(model)
    y = np.array(targets, dtype=object)
    assert_unchanged(model, before, lambda: model.partial_fit(X[:2], y))
    with pytest.raises(ValueError):
        MondrianForestRegressor(4, random_state=0).fit(X[:2], y)


def test_regressor_learns_later_targets_far_beyond_the_frozen_scale():
    """Targets of 1e300 after a fit on O(1) targets: the target scale grows (stored sums
    rescaled exactly) instead of overflowing; predictions stay finite and follow the data."""
    model = MondrianForestRegressor(4, random_state=0).fit(X, Y_REG)
    model.partial_fit(X[:2], [1e300, -1e300])
    mean, std = model.predict(X[:5], return_std=True)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std)) and np.all(std > 0)
    assert model._y_scaler.scale > 1e299


def test_kernel_ridge_rejects_none_targets_without_change():
    model = MondrianKernelRidge(4, random_state=0).fit(X, Y_REG)
    before = state(model)
    y = np.array([None, 1.0], dtype=object)
    assert_unchanged(model, before, lambda: model.partial_fit(X[:2], y))
    assert np.all(np.isfinite(model.predict(X[:5])))


@pytest.mark.parametrize("label", [np.nan, None, [1, 2], {"a": 1}, "a", 0.5])
def test_learn_one_bad_label_adds_no_class(label):
    model = MondrianForestClassifier(4, random_state=0).fit(X, Y_CLF)
    before = state(model)
    assert_unchanged(model, before, lambda: model.learn_one(X[0], label))
    np.testing.assert_array_equal(model.classes_, [0, 1])


@pytest.mark.parametrize("label", [np.nan, None, [1, 2]])
def test_learn_one_bad_first_label_leaves_model_unfitted(label):
    model = MondrianForestClassifier(4, random_state=0)
    with pytest.raises((ValueError, TypeError)):
        model.learn_one(X[0], label)
    assert not hasattr(model, "classes_") and not hasattr(model, "_ensemble")


def test_learn_one_bad_x_adds_no_class():
    model = MondrianForestClassifier(4, random_state=0).fit(X, Y_CLF)
    before = state(model)
    assert_unchanged(model, before, lambda: model.learn_one([1e200, 0.0, 0.0], 7))


ESTIMATORS = [
    (MondrianForestClassifier, Y_CLF),
    (MondrianForestRegressor, Y_REG),
    (MondrianForestDensity, None),
    (MondrianKernelFeatures, None),
    (MondrianKernelRidge, Y_REG),
    (MondrianKernelSGDRegressor, Y_REG),
    (MondrianKernelSGDClassifier, Y_CLF),
    (RandomBinningFeatures, None),
    (LaplaceRandomFourierFeatures, None),
    (MondrianTreeClassifier, Y_CLF),
    (MondrianTreeRegressor, Y_REG),
    (RandomPartitionFeatures, None),
    (RandomPartitionGPRegressor, Y_REG),
    (RandomPartitionKernelPCA, None),
]


def _fit(model, y):
    return model.fit(X) if y is None else model.fit(X, y)


NUMERIC_PARAMS = [
    (cls, y, name, value)
    for cls, y in ESTIMATORS
    for name in ("n_estimators", "lifetime", "n_components", "n_partitions", "n_jobs")
    if name in cls().get_params()
    for value in ((True, False, 0) if name == "n_jobs" else (True, False))
]


@pytest.mark.parametrize("cls, y, name, value", NUMERIC_PARAMS,
                         ids=[f"{c.__name__}-{n}={v}" for c, _, n, v in NUMERIC_PARAMS])
def test_booleans_and_zero_jobs_are_rejected(cls, y, name, value):
    model = cls(**{name: value})
    with pytest.raises(InvalidParameterError, match=name):
        _fit(model, y)


@pytest.mark.parametrize("cls", [RandomBinningFeatures, LaplaceRandomFourierFeatures,
                                 MondrianKernelFeatures])
def test_rejected_numpy_refit_keeps_feature_names(cls):
    model = cls().fit(pd.DataFrame(X, columns=["a", "b", "c"]))
    before = state(model)
    assert_unchanged(model, before, lambda: model.fit(np.full((3, 3), np.nan)))
    assert list(model.feature_names_in_) == ["a", "b", "c"]


def test_fourier_features_of_huge_finite_x_raise_instead_of_nan():
    model = LaplaceRandomFourierFeatures(n_components=20, random_state=0).fit(X)
    with pytest.raises(ValueError, match="too large"):
        model.transform(np.full((2, 3), 1e308))
    assert np.all(np.isfinite(model.transform(X[:5])))


def test_kernel_ridge_partial_fit_respects_max_features():
    model = MondrianKernelRidge(4, lifetime=3.0, random_state=0).fit(X[:30], Y_REG[:30])
    n_features = model._ridge.n_features
    model.set_params(max_features=n_features + 3)
    before = state(model)
    assert_unchanged(model, before, lambda: model.partial_fit(X[30:], Y_REG[30:]))
    model.set_params(max_features=4000)
    model.partial_fit(X[30:], Y_REG[30:])
    assert model._ridge.n_features > n_features + 3


def test_auto_lifetime_of_regressor_does_not_depend_on_units_of_y():
    data = np.random.RandomState(3)
    Xa = data.rand(300, 2)
    ya = np.sin(6 * Xa[:, 0]) + 0.05 * data.randn(300)
    # Label-blind cuts: the lifetime search is pinned here, not the weight search.
    lifetimes = [MondrianForestRegressor(4, lifetime="auto", feature_weights=None,
                                         random_state=0).fit(Xa, ya * s)
                 .lifetime_ for s in (1.0, 1e-6, 1e6)]
    assert lifetimes[1] == pytest.approx(lifetimes[0], rel=1e-6)
    assert lifetimes[2] == pytest.approx(lifetimes[0], rel=1e-6)


# ----------------------------------------------------------------- target scales (regressor)

def _small_regressor():
    # Label-blind cuts: the label-aware search in other units of y chooses weights equal only
    # to float noise (about 1e-4), which these rtol=1e-6 comparisons would see.
    return MondrianForestRegressor(4, feature_weights=None, random_state=0)


@pytest.mark.parametrize("scale", [1e-300, 1e-200, 1e154, 1e200, 1e300])
def test_regressor_works_at_any_target_scale(scale):
    """Targets of 1e-300 to 1e300: finite predictions equal, up to units, to those at scale 1
    (the standard deviation too: it no longer underflows to 0 or overflows)."""
    reference = _small_regressor().fit(X, Y_REG)
    model = _small_regressor().fit(X, Y_REG * scale)
    mean, std = model.predict(X[:10], return_std=True)
    ref_mean, ref_std = reference.predict(X[:10], return_std=True)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std)) and np.all(std > 0)
    np.testing.assert_allclose(mean / scale, ref_mean, rtol=1e-6)
    np.testing.assert_allclose(std / scale, ref_std, rtol=1e-6)


def test_regressor_constant_targets():
    model = _small_regressor().fit(X, np.full(len(X), 1e300))
    mean, std = model.predict(X[:5], return_std=True)
    np.testing.assert_array_equal(mean, 1e300)
    assert np.all(np.isfinite(std))


def test_regressor_first_batch_of_tiny_range_then_normal_targets():
    """A first batch whose targets span 1e-303 froze a scale that made every later target
    overflow; the scale now grows with the data."""
    y_first = np.zeros(100)
    y_first[-1] = 1e-303
    model = _small_regressor().fit(X[:100], y_first)
    model.partial_fit(X[100:], Y_REG[100:])
    mean, std = model.predict(X[100:], return_std=True)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std))
    assert np.abs(mean - Y_REG[100:]).mean() < np.abs(Y_REG[100:]).mean()


def test_rescaled_target_sums_are_exact(monkeypatch):
    """A later batch beyond the frozen scale grows it by a power of two and rescales the
    stored sums. With rescaling forced at every growth (threshold 2**0) the predictions equal,
    to rounding, those of a model never rescaled; a wrong rescaling of either sum moves them."""

    def fitted(exponent, factor):
        monkeypatch.setattr(targets_module, "MAX_STANDARDISED_EXPONENT", exponent)
        return (_small_regressor().fit(X[:100], Y_REG[:100])
                .partial_fit(X[100:], Y_REG[100:] * factor))

    for factor in (8.0, 1e30):
        rescaled, plain = fitted(0, factor), fitted(10**4, factor)
        assert rescaled._y_scaler.scale > 2 * plain._y_scaler.scale
        for a, b in zip(rescaled.predict(X, return_std=True),
                        plain.predict(X, return_std=True), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-9)
        # The trees' sums are the sums of the stored rows.
        store_rows = rescaled._store.rows
        for tree in rescaled._trees:
            np.testing.assert_allclose(tree.value_array[0], store_rows.sum(axis=0),
                                       rtol=1e-12)


@pytest.mark.parametrize("exception", [MemoryError, KeyboardInterrupt])
def test_failed_rescaling_update_is_rolled_back(exception):
    """A one-row update of a large model is normally not snapshotted, but one that grows the
    target scale rewrites every tree: it is, and a failure inside the core undoes it all."""
    model = _small_regressor().fit(X, Y_REG)
    before = state(model)
    fail_after_trees(1, exception)
    try:
        with pytest.raises(exception):
            model.partial_fit(X[:1], [1e250])
    finally:
        fail_after_trees(None)
    assert state(model) == before


def test_target_range_beyond_float64_is_refused_without_change():
    model = _small_regressor().fit(X, Y_REG)
    before = state(model)
    assert_unchanged(model, before, lambda: model.partial_fit(X[:2], [-1.7e308, 1.7e308]))


def test_kernel_sgd_regressor_huge_targets_are_finite():
    model = MondrianKernelSGDRegressor(4, random_state=0).fit(X, Y_REG * 1e300)
    assert np.all(np.isfinite(model.predict(X[:5])))


@pytest.mark.parametrize("scale", [1e-300, 1e300])
def test_partition_gp_works_at_any_target_scale(scale):
    reference = RandomPartitionGPRegressor(n_partitions=20, random_state=0).fit(X, Y_REG)
    model = RandomPartitionGPRegressor(n_partitions=20, random_state=0).fit(X, Y_REG * scale)
    mean, std = model.predict(X[:10], return_std=True)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std))
    np.testing.assert_allclose(mean / scale, reference.predict(X[:10]), rtol=1e-4)


# ----------------------------------------------------------------- feature map


@pytest.mark.parametrize("constant", [0.0, 5.0])
def test_feature_constant_during_warm_up_then_a_blip_keeps_accepting_values(constant):
    """A feature constant during the warm-up froze its scale at its first (tiny) variation,
    which then rejected every normal value; it now freezes at the magnitude of its value."""
    Xc = X.copy()
    Xc[:, 1] = constant
    model = MondrianForestClassifier(4, random_state=0).fit(Xc, Y_CLF)
    np.testing.assert_array_equal(model.feature_scale_[1], constant or 1.0)
    model.partial_fit([[0.5, constant + 1e-300, 0.5]], [1])
    model.partial_fit([[0.5, constant + 3.0, 0.5], [0.2, constant - 7.0, 0.1]], [1, 0])
    assert np.all(np.isfinite(model.predict_proba([[0.5, constant + 10.0, 0.5]])))


def test_feature_map_is_equivariant_to_units_of_a_constant_feature():
    Xc = X.copy()
    Xc[:, 1] = 5.0
    a = MondrianForestClassifier(4, random_state=0).fit(Xc, Y_CLF)
    Xs = Xc.copy()
    Xs[:, 1] *= 1e-6
    b = MondrianForestClassifier(4, random_state=0).fit(Xs, Y_CLF)
    Xt = np.column_stack([X[:5, 0], np.linspace(4, 6, 5), X[:5, 2]])
    Xts = Xt.copy()
    Xts[:, 1] *= 1e-6
    np.testing.assert_allclose(a.predict_proba(Xt), b.predict_proba(Xts), rtol=1e-9)


# ----------------------------------------------------------------- classes up front


def test_learn_one_with_classes_never_rewrites_the_trees(monkeypatch):
    """learn_one(classes=...) creates every class column at the first call: a stream of 30
    classes costs no rewrite of the trees, and gives the model of partial_fit(classes=)."""
    labels = np.arange(300) % 30
    calls = []
    original = MondrianForestClassifier._add_classes
    monkeypatch.setattr(MondrianForestClassifier, "_add_classes",
                        lambda self, new: (calls.append(len(new)), original(self, new))[1])
    streamed = MondrianForestClassifier(4, random_state=0)
    for i in range(100):
        streamed.learn_one(X[i], labels[i], classes=range(30))
    assert calls == []
    batched = MondrianForestClassifier(4, random_state=0)
    for i in range(100):
        batched.partial_fit(X[i : i + 1], labels[i : i + 1], classes=range(30))
    assert state(streamed) == state(batched)
    # Without classes=, every new class is added (a spare column; the rows are rewritten only
    # when the spare columns run out, see tests/forest/test_class_widening.py).
    plain = MondrianForestClassifier(4, random_state=0)
    for i in range(100):
        plain.learn_one(X[i], labels[i])
    assert len(calls) == 29


def test_learn_one_with_classes_refuses_a_label_outside_them():
    model = MondrianForestClassifier(4, random_state=0)
    model.learn_one(X[0], 1, classes=[0, 1])
    before = state(model)
    assert_unchanged(model, before, lambda: model.learn_one(X[1], 2, classes=[0, 1]))
    assert_unchanged(model, before, lambda: model.learn_one(X[1], 2))


# ----------------------------------------------------------------- failed fits without a tree core


@pytest.mark.parametrize("make, target", [
    (lambda: RandomPartitionFeatures(n_partitions=4, random_state=0), None),
    (lambda: RandomPartitionGPRegressor(n_partitions=4, random_state=0), Y_REG),
    (lambda: RandomPartitionKernelPCA(n_partitions=4, random_state=0), None),
], ids=["features", "gp", "pca"])
@pytest.mark.parametrize("exception", [MemoryError, KeyboardInterrupt])
def test_partition_refit_failing_midway_keeps_the_previous_model(make, target, exception,
                                                                monkeypatch):
    """A refit that fails after the partitions were drawn leaves the previous model: the
    partition estimators' fits are atomic too."""
    model = _fit(make(), target)
    before = state(model)

    def fail(*args, **kwargs):
        raise exception

    # np.cumsum runs after the partitions were drawn (renumbering their cells).
    monkeypatch.setattr(np, "cumsum", fail)
    with pytest.raises(exception):
        _fit(model, None if target is None else target[::-1])
    monkeypatch.undo()
    assert state(model) == before


# ----------------------------------------------------------------- selections in any units

XS = np.random.RandomState(3).rand(200, 2)
YS = np.sin(6 * XS[:, 0]) + 0.1 * np.random.RandomState(4).randn(200)


@pytest.mark.parametrize("make", [
    lambda: MondrianForestRegressor(4, lifetime="auto", feature_weights=None, random_state=0),
    lambda: MondrianKernelRidge(5, lifetime="auto", random_state=0),
    lambda: MondrianKernelRidge(5, lifetime="auto", lifetime_selection="marginal_likelihood",
                                random_state=0),
    lambda: MondrianKernelSGDRegressor(4, lifetime="auto", n_epochs=1, random_state=0),
], ids=["forest", "ridge-validation", "ridge-evidence", "sgd"])
def test_auto_lifetime_is_the_same_in_any_units_of_y(make):
    """Every selection reads its criterion in standardised units: targets of 1e-300 or 1e300
    (whose squared errors underflow or overflow in units of y) choose the lifetime of y."""
    reference = make().fit(XS, YS).lifetime_
    for scale in (1e-300, 1e300):
        assert make().fit(XS, YS * scale).lifetime_ == pytest.approx(reference, rel=1e-9)


@pytest.mark.parametrize("scale", [1e-300, 1e-160, 1e160, 1e300])
def test_kernel_ridge_works_at_any_target_scale(scale):
    reference = MondrianKernelRidge(5, lifetime=3.0, random_state=0).fit(XS, YS)
    model = MondrianKernelRidge(5, lifetime=3.0, random_state=0).fit(XS, YS * scale)
    for got, want in zip(model.predict(XS[:10], return_std=True),
                         reference.predict(XS[:10], return_std=True), strict=True):
        np.testing.assert_allclose(got / scale, want, rtol=1e-9)
    assert model.log_marginal_likelihood() + len(YS) * np.log(scale) == pytest.approx(
        reference.log_marginal_likelihood(), rel=1e-9)
    mean, std = model.predict_lifetime_mixture(XS[:5])
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std))


def test_kernel_ridge_online_targets_far_beyond_the_first_batch_are_refused_clearly():
    """The ridge keeps sums of squares of the first batch's standardised units: targets more
    than 2**100 times its spread are refused (documented), the model unchanged."""
    model = MondrianKernelRidge(4, lifetime=2.0, random_state=0).fit(X[:60], Y_REG[:60] * 1e-200)
    before = state(model)
    assert_unchanged(model, before, lambda: model.partial_fit(X[60:62], [1e200, 1.0]))
    model.partial_fit(X[60:62], [1e-170, 0.0])  # 1e30 times the spread: accepted
    assert np.all(np.isfinite(model.predict(X[:5], return_std=True)[1]))
