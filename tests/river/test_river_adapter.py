"""``mondrian.river`` makes the online models river estimators (skipped without river)."""

import functools
import importlib
import pickle
import sys

import numpy as np
import pytest

river = pytest.importorskip("river")

from river import checks, datasets, evaluate, metrics, preprocessing  # noqa: E402

from mondrian import (  # noqa: E402
    MondrianForestClassifier,
    MondrianForestDensity,
    MondrianForestRegressor,
    MondrianTreeClassifier,
)
from mondrian.kernel import MondrianKernelRidge  # noqa: E402
from mondrian.river import (  # noqa: E402
    MondrianAnomalyDetector,
    MondrianClassifier,
    MondrianRegressor,
    RiverAnomalyDetector,
    RiverClassifier,
    RiverRegressor,
)

rng = np.random.RandomState(0)
X = rng.rand(120, 3)
Y_CLF = (X[:, 0] + X[:, 1] > 1).astype(int)
Y_REG = np.sin(4 * X[:, 0]) + 0.1 * rng.randn(120)
NAMES = ["b", "a", "c"]  # not sorted: the adapters read features in sorted order


def rows(k):
    return dict(zip(NAMES, X[k].tolist(), strict=True))


def _dataset_free(check):
    return not (isinstance(check, functools.partial) and "dataset" in check.keywords)


def _checks(cls, with_datasets):
    model = cls(**next(cls._unit_test_params()))
    for check in checks.yield_checks(model):
        name = getattr(check, "__name__", None) or check.func.__name__
        if name == "check_bounded_memory_growth":
            continue  # 15 s: run under the slow marker below
        if with_datasets or _dataset_free(check):
            yield pytest.param(model, check, id=f"{cls.__name__}-{name}-{id(check) % 997}")


# river's own estimator checks (pickling, cloning, shuffled / emerging / disappearing features,
# predict_one purity...). The anomaly checks read a dataset downloaded from the web: only the
# checks without a dataset run for it.
@pytest.mark.parametrize("model, check", [
    *_checks(RiverClassifier, True), *_checks(RiverRegressor, True),
    *_checks(RiverAnomalyDetector, False),
    *_checks(MondrianClassifier, True), *_checks(MondrianRegressor, True),
    *_checks(MondrianAnomalyDetector, False),
])
def test_river_estimator_checks(model, check):
    check(model.clone())


@pytest.mark.slow
@pytest.mark.parametrize("cls", [RiverClassifier, RiverRegressor])
def test_river_bounded_memory_growth(cls):
    model = cls(**next(cls._unit_test_params()))
    for check in checks.yield_checks(model):
        if getattr(check, "func", None) is checks.common.check_bounded_memory_growth:
            check(model.clone())


def test_isinstance_of_river_bases():
    assert isinstance(RiverClassifier(), river.base.Classifier)
    assert isinstance(RiverRegressor(), river.base.Regressor)
    assert isinstance(RiverAnomalyDetector(), river.base.AnomalyDetector)
    assert isinstance(preprocessing.StandardScaler() | RiverClassifier(), river.base.Classifier)


def test_progressive_validation_in_a_pipeline():
    model = preprocessing.StandardScaler() | RiverClassifier(
        MondrianForestClassifier(5, random_state=0))
    stream = list(datasets.Phishing())[:300]
    accuracy = evaluate.progressive_val_score(stream, model, metrics.Accuracy())
    assert accuracy.get() > 0.75
    model = preprocessing.StandardScaler() | RiverRegressor(
        MondrianForestRegressor(5, noise_variance=10.0, random_state=0))
    stream = list(datasets.TrumpApproval())[:150]
    mae = evaluate.progressive_val_score(stream, model, metrics.MAE())
    assert mae.get() < 5  # the approval rate varies by about 10 points over the stream


@pytest.mark.exact
def test_adapter_trains_the_model_on_sorted_features():
    adapter = RiverClassifier(MondrianForestClassifier(4, random_state=0))
    direct = MondrianForestClassifier(4, random_state=0)
    order = np.argsort(NAMES)
    for k in range(60):
        adapter.learn_one(rows(k), Y_CLF[k])
        direct.learn_one(X[k, order], Y_CLF[k])
    assert adapter.feature_names_ == ["a", "b", "c"]
    for k in range(60, 80):
        got = adapter.predict_proba_one(rows(k))
        want = direct.predict_proba_one(X[k, order])
        assert got == want
        assert adapter.predict_one(rows(k)) == direct.predict_one(X[k, order])
    assert adapter.model is None or not hasattr(adapter.model, "_ensemble")


def test_template_is_never_fitted_and_clone_is_fresh():
    template = MondrianForestClassifier(3, random_state=0)
    adapter = RiverClassifier(template)
    adapter.learn_one(rows(0), 1)
    assert not hasattr(template, "_ensemble")
    fresh = adapter.clone()
    assert fresh.predict_one(rows(0)) is None
    assert fresh.predict_proba_one(rows(0)) == {}


def test_weights_count_samples():
    adapter = RiverRegressor(MondrianForestRegressor(3, random_state=0))
    adapter.learn_one(rows(0), 1.0)
    adapter.learn_one(rows(1), 2.0, w=3)
    # The regressor takes sample weights: w=3 is the same model as the row learnt 3 times.
    order = np.argsort(NAMES)
    direct = MondrianForestRegressor(3, random_state=0)
    direct.partial_fit(X[[0]][:, order], [1.0])
    direct.partial_fit(np.repeat(X[[1]][:, order], 3, axis=0), [2.0] * 3)
    np.testing.assert_array_equal(adapter.model_.predict(X[:, order]), direct.predict(X[:, order]))
    before = pickle.dumps(adapter)
    adapter.learn_one(rows(2), 2.0, w=0)  # the same as leaving the sample out
    assert pickle.dumps(adapter) == before
    for bad in (-1, np.nan, "2", True):
        with pytest.raises(ValueError, match="w"):
            adapter.learn_one(rows(2), 2.0, w=bad)
        assert pickle.dumps(adapter) == before
    # The density takes integer weights only (it repeats the rows).
    density = RiverAnomalyDetector(MondrianForestDensity(n_estimators=3, random_state=0))
    density.learn_one(rows(0), w=2)
    assert density.model_.n_samples_seen_ == 2
    with pytest.raises(ValueError, match="integer sample weights"):
        density.learn_one(rows(1), w=0.5)
    # A pipeline routes river's w to the final step.
    pipeline = preprocessing.StandardScaler() | RiverClassifier(MondrianForestClassifier(3))
    pipeline.learn_one(rows(0), 1, w=2)
    assert pipeline[-1].model_._store.rows[:, :].sum() == 2


def test_missing_and_unknown_features():
    adapter = RiverClassifier(MondrianTreeClassifier(random_state=0))
    adapter.learn_one({"a": 0.1, "b": 0.2}, 0)
    before = pickle.dumps(adapter)
    with pytest.raises(ValueError, match=r"\['b'\] are missing"):
        adapter.learn_one({"a": 0.3}, 1)
    with pytest.raises(ValueError, match=r"\['z'\] not seen"):
        adapter.learn_one({"a": 0.3, "b": 0.1, "z": 1.0}, 1)
    with pytest.raises(ValueError, match=r"\['b'\] are missing"):
        adapter.predict_one({"a": 0.3})
    with pytest.raises(TypeError, match="dict"):
        adapter.learn_one([0.3, 0.1], 1)
    assert pickle.dumps(adapter) == before

    lenient = RiverClassifier(MondrianTreeClassifier(random_state=0), fill_value=0.5,
                              unknown_features="ignore")
    lenient.learn_one({"a": 0.1, "b": 0.2}, 0)
    lenient.learn_one({"a": 0.9, "z": 4.0}, 1)  # b filled with 0.5, z dropped
    direct = MondrianTreeClassifier(random_state=0)
    direct.learn_one([0.1, 0.2], 0).learn_one([0.9, 0.5], 1)
    for probe in ([0.2, 0.3], [0.8, 0.6], [0.5, 0.9]):
        got = lenient.predict_proba_one(dict(zip("ab", probe, strict=True)))
        assert got == direct.predict_proba_one(probe)
    assert lenient.feature_names_ == ["a", "b"]


def test_rejected_first_sample_fixes_no_features():
    adapter = RiverClassifier(MondrianForestClassifier(3, random_state=0))
    with pytest.raises(ValueError):
        adapter.learn_one({"a": np.nan, "b": 1.0}, 0)
    assert adapter.feature_names_ is None
    adapter.learn_one({"c": 1.0}, 0)
    assert adapter.feature_names_ == ["c"]


def test_bad_parameters():
    with pytest.raises(ValueError, match="fill_value"):
        RiverClassifier(fill_value="zero")
    with pytest.raises(ValueError, match="unknown_features"):
        RiverClassifier(unknown_features="drop")
    with pytest.raises(TypeError, match="neither"):
        RiverRegressor(model=object())


def test_regressor_std_and_models_without_learn_one():
    adapter = RiverRegressor(MondrianForestRegressor(3, random_state=0))
    assert adapter.predict_one(rows(0), return_std=True) == (None, None)
    for k in range(30):
        adapter.learn_one(rows(k), Y_REG[k])
    mean, std = adapter.predict_one(rows(40), return_std=True)
    assert mean == adapter.predict_one(rows(40)) and std > 0
    ridge = RiverRegressor(MondrianKernelRidge(5, lifetime=2.0, random_state=0))
    for k in range(30):
        ridge.learn_one(rows(k), Y_REG[k])
    assert ridge.model_.n_samples_seen_ == 30
    assert isinstance(ridge.predict_one(rows(40)), float)
    with pytest.raises(TypeError, match="standard deviation"):
        ridge.predict_one(rows(40), return_std=True)


def test_anomaly_scores_are_negative_log_density():
    detector = RiverAnomalyDetector(MondrianForestDensity(5, random_state=0))
    assert detector.score_one(rows(0)) == 0.0
    for k in range(60):
        detector.learn_one(rows(k))
    inside, outside = rows(70), {"a": 5.0, "b": 5.0, "c": 5.0}
    assert detector.score_one(outside) > detector.score_one(inside)
    order = np.argsort(NAMES)
    log_density = detector.model_.score_samples(X[70:71, order])[0]
    assert detector.score_one(inside) == -log_density


def test_clear_import_error_without_river(monkeypatch):
    monkeypatch.setitem(sys.modules, "river", None)
    monkeypatch.setitem(sys.modules, "river.base", None)
    monkeypatch.delitem(sys.modules, "mondrian.river")
    with pytest.raises(ImportError, match="pip install river"):
        importlib.import_module("mondrian.river")


# ----------------------------------------------------------------- river-style constructors


def _stream(cls, n=60):
    data = datasets.Phishing() if "Classifier" in cls.__name__ else datasets.TrumpApproval()
    return list(data)[:n]


@pytest.mark.parametrize("cls", [RiverClassifier, RiverRegressor, MondrianClassifier,
                                 MondrianRegressor])
def test_default_adapters_are_deterministic_and_pass_the_shuffle_check(cls):
    stream = _stream(cls)
    checks.common.check_shuffle_features_no_impact(cls(), stream)
    first, second = cls(), cls()
    for x, y in stream:
        assert first.predict_one(x) == second.predict_one(x)
        first.learn_one(x, y)
        second.learn_one(x, y)


def test_seed_sets_the_random_state_of_the_clone():
    assert RiverClassifier(seed=3).model_.random_state == 3
    assert RiverClassifier().model_.random_state == 0
    template = MondrianForestClassifier(4, random_state=None)
    assert RiverClassifier(template).model_.random_state is None  # the model's own
    assert RiverClassifier(template, seed=5).model_.random_state == 5
    assert template.random_state is None  # the template is never changed
    for bad in (1.5, "0", True):
        with pytest.raises(ValueError, match="seed"):
            RiverRegressor(seed=bad)


def test_river_style_constructors_build_the_model():
    clf = MondrianClassifier(n_estimators=4, lifetime=2.0, smoothing="dirichlet", seed=7)
    params = clf.model_.get_params()
    assert (params["n_estimators"], params["lifetime"], params["smoothing"],
            params["random_state"]) == (4, 2.0, "dirichlet", 7)
    reg = MondrianRegressor(n_estimators=3, noise_variance=0.5, min_samples_split=4)
    assert reg.model_.get_params()["noise_variance"] == 0.5
    assert reg.model_.get_params()["min_samples_split"] == 4
    assert reg.model_.random_state == 0  # deterministic by default
    det = MondrianAnomalyDetector(n_estimators=2, seed=None)
    assert det.model_.random_state is None and det.model_.n_estimators == 2
    # river's clone keeps the river-style parameters.
    assert clf.clone()._get_params() == clf._get_params()
    assert clf.clone({"n_estimators": 6}).model_.n_estimators == 6
    assert isinstance(clf, RiverClassifier) and isinstance(clf, river.base.Classifier)


@pytest.mark.parametrize("model, adapter", [
    (MondrianForestClassifier(5), "MondrianClassifier"),
    (MondrianForestRegressor(5), "MondrianRegressor"),
])
def test_a_bare_forest_in_river_points_to_the_adapter(model, adapter):
    with pytest.raises(TypeError, match=f"mondrian.river.{adapter}"):
        preprocessing.StandardScaler() | model
    metric = metrics.Accuracy() if "Classifier" in adapter else metrics.MAE()
    with pytest.raises(TypeError, match="not a river one"):
        metric.works_with(model)


@pytest.mark.exact
@pytest.mark.parametrize("cls, template", [
    (RiverClassifier, MondrianForestClassifier(3, random_state=0, feature_weights=None)),
    (RiverRegressor, MondrianForestRegressor(3, random_state=0, feature_weights=None)),
    (RiverAnomalyDetector, MondrianForestDensity(3, lifetime=3.0, random_state=0)),
])
def test_window_passes_to_the_clone(cls, template):
    """``window`` sets the clone's window: learn_one then keeps the last samples, as the
    windowed model learning the same rows directly."""
    adapter = cls(template, window=40)
    assert adapter.model_.window == 40 and template.window is None
    direct = clone_of(template).set_params(window=40)
    order = np.argsort(NAMES)
    target = {RiverClassifier: Y_CLF, RiverRegressor: Y_REG, RiverAnomalyDetector: None}[cls]
    for k in range(100):
        if target is None:
            adapter.learn_one(rows(k))
            direct.partial_fit(X[k:k + 1, order])
        else:
            adapter.learn_one(rows(k), target[k])
            direct.learn_one(X[k, order], target[k])
    assert adapter.model_.n_samples_seen_ == direct.n_samples_seen_ == 40
    if cls is RiverClassifier:
        assert [adapter.predict_one(rows(k)) for k in range(100, 120)] == [
            direct.predict_one(X[k, order]) for k in range(100, 120)]
    elif cls is RiverRegressor:
        assert [adapter.predict_one(rows(k)) for k in range(100, 120)] == [
            direct.predict_one(X[k, order]) for k in range(100, 120)]
    else:
        assert [adapter.score_one(rows(k)) for k in range(100, 120)] == [
            -float(direct.score_samples(X[k:k + 1, order])[0]) for k in range(100, 120)]
    # river's conventions: the parameter is a constructor one, kept by clone.
    assert adapter._get_params()["window"] == 40
    fresh = adapter.clone()
    assert fresh.window == 40 and fresh.model_.window == 40 and not fresh._fitted()
    assert adapter.clone({"window": 10}).model_.window == 10
    assert pickle.loads(pickle.dumps(adapter)).model_.n_samples_seen_ == 40



@pytest.mark.parametrize("cls", [MondrianClassifier, RiverClassifier])
def test_adapter_pickled_without_window_loads_and_clones(cls):
    # An adapter pickled before the window option: its state has no ``window``.
    adapter = cls()
    adapter.learn_one({"a": 1.0}, 0)
    adapter.learn_one({"a": 2.0}, 1)
    state = adapter.__dict__.copy()
    del state["window"]
    old = cls.__new__(cls)
    old.__dict__.update(state)
    loaded = pickle.loads(pickle.dumps(old))
    assert loaded._get_params()["window"] is None
    assert loaded.clone().window is None
    assert loaded.predict_one({"a": 1.5}) == adapter.predict_one({"a": 1.5})
    loaded.learn_one({"a": 3.0}, 1)

def clone_of(template):
    from sklearn.base import clone

    return clone(template)


def test_window_is_checked():
    for bad in (0, -1, 2.5, True, "5"):
        with pytest.raises(ValueError, match="window"):
            RiverClassifier(window=bad)
    with pytest.raises(ValueError, match="no window parameter"):
        RiverRegressor(MondrianKernelRidge(n_estimators=2), window=10)
    assert RiverClassifier(MondrianForestClassifier(2, window=7)).model_.window == 7


@pytest.mark.parametrize("cls", [MondrianClassifier, MondrianRegressor,
                                 MondrianAnomalyDetector])
def test_river_style_window(cls):
    model = cls(n_estimators=2, window=30, feature_weights=None)
    assert model.model_.window == 30 and model.window == 30
    assert model.clone()._get_params() == model._get_params()
    assert cls(n_estimators=2).model_.window is None
    for k in range(100):  # (the forests' window applies after the map's warm-up of 64)
        x = rows(k)
        model.learn_one(x) if cls is MondrianAnomalyDetector else model.learn_one(x, Y_CLF[k])
    assert model.model_.n_samples_seen_ == 30
