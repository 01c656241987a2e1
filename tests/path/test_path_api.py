"""One public lifetime-path API: the same class, fields and conventions for every estimator."""

import pickle

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.model_selection import train_test_split

import mondrian
from _path_cases import ESTIMATORS, make_case, make_estimator, training_data
from mondrian import LifetimePath, MondrianKernelRidge, SGDLifetimePath
from mondrian.estimator.holdout import holdout_split
from mondrian.path.result import best_interval

FIELDS = ("lifetimes", "upper_lifetimes", "metrics", "criterion", "maximize", "best_index",
          "best_lifetime", "direction")


def _check_path(path, direction="forward"):
    assert type(path) is LifetimePath
    for name in FIELDS:
        assert hasattr(path, name), name
    n = len(path.lifetimes)
    assert n >= 1 and path.upper_lifetimes.shape == (n,)
    assert np.all(path.upper_lifetimes >= path.lifetimes)
    assert path.criterion in path.metrics
    for name, values in path.metrics.items():
        assert values.shape == (n,), name
        assert_array_equal(getattr(path, name), values)  # metrics read as attributes
    assert isinstance(path.best_index, int) and 0 <= path.best_index < n
    low, high = path.lifetimes[path.best_index], path.upper_lifetimes[path.best_index]
    assert low <= path.best_lifetime <= high
    assert path.direction == direction
    assert path.best_index == best_interval(path.metrics[path.criterion], path.maximize)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_every_path_has_the_same_class_and_fields(name):
    case = make_case(name)
    path = case.path()
    _check_path(path)
    # The path covers [0, lifetime_] of the fitted model (kernel models: up to max_features).
    assert path.lifetimes[0] == 0.0
    if name.startswith("kernel"):
        assert path.upper_lifetimes[-1] <= case.model.lifetime_
    else:
        assert path.upper_lifetimes[-1] == case.model.lifetime_
    if case.backward:
        _check_path(case.path(direction="backward"), "backward")
    else:
        with pytest.raises(ValueError, match="backward"):
            case.path(direction="backward")
    with pytest.raises(ValueError, match="direction"):
        case.path(direction="sideways")
    if case.needs_validation:
        with pytest.raises(ValueError, match="validation"):
            case.path(with_validation=False)
    else:
        alone = case.path(with_validation=False)
        _check_path(alone)
        assert alone.criterion != path.criterion  # the training-only criterion


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_lifetime_auto_stores_the_path(name):
    X, y = training_data(name, n=200)
    params = {"lifetime": "auto"}
    if name.startswith("kernel"):
        params["max_lifetime"] = 30.0
    model = make_estimator(name, **params).fit(X, y)
    path = model.lifetime_path_
    _check_path(path)
    assert model.lifetime_ <= path.upper_lifetimes[-1]
    if name != "density":  # the density prunes to min(best, lifetime_) of its own path
        assert model.lifetime_ == path.best_lifetime
    assert getattr(path, "forest_", None) is None  # the fitted model keeps a light path
    again = make_estimator(name, **params).fit(X, y)
    assert again.lifetime_ == model.lifetime_  # seeded by random_state
    fixed = {"concentration": 1.0} if name == "density" else {}  # nothing left to choose
    model.set_params(lifetime=1.0, **fixed).fit(X, y)
    assert not hasattr(model, "lifetime_path_")


def test_repr_to_frame_and_pickle():
    case = make_case("forest_regressor")
    path = case.path()
    text = repr(path)
    assert text.startswith("LifetimePath(")
    assert f"{len(path.lifetimes)} intervals" in text
    assert "criterion: mse (minimised)" in text
    assert f"lifetime {path.best_lifetime:.4g}" in text
    assert len(text.splitlines()) <= 3 + len(path.metrics)
    clone = pickle.loads(pickle.dumps(path))
    assert_array_equal(clone.mse, path.mse)
    pd = pytest.importorskip("pandas")
    frame = path.to_frame()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == ["lifetime", "upper_lifetime", *path.metrics]
    assert len(frame) == len(path.lifetimes)
    assert_array_equal(frame["nll"].to_numpy(), path.nll)


def test_plot():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = make_case("forest_classifier").path()
    ax = path.plot()
    assert ax.get_xscale() == "log" and ax.get_ylabel() == "log_loss"
    fig, given = plt.subplots()
    assert path.plot(ax=given, metric="accuracy") is given
    assert given.get_ylabel() == "accuracy"
    with pytest.raises(ValueError, match="metric"):
        path.plot(metric="nope")
    plt.close("all")


def test_missing_optional_dependencies_are_named(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_extras(name, *args, **kwargs):
        if name.split(".")[0] in ("pandas", "matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    path = make_case("forest_regressor").path()
    monkeypatch.setattr(builtins, "__import__", no_extras)
    with pytest.raises(ImportError, match="pandas"):
        path.to_frame()
    with pytest.raises(ImportError, match="matplotlib"):
        path.plot()


def test_posterior_of_a_path_without_cuts():
    """A model of lifetime 0 has one interval: the posterior puts all its mass there."""
    X, y = training_data("kernel_ridge")
    model = MondrianKernelRidge(5, lifetime=0.0, random_state=0).fit(X, y)
    path = model.lifetime_path()
    assert len(path.lifetimes) == 1 and path.n_cuts == 0
    assert_array_equal(path.lifetime_posterior(), [1.0])
    lone = LifetimePath([0.0], [np.inf], {"log_marginal_likelihood": [-3.0]},
                        "log_marginal_likelihood", True)
    assert_array_equal(lone.lifetime_posterior(), [1.0])
    # Two intervals, unbounded terminal and a single birth time: a finite default prior.
    two = LifetimePath([0.0, 1.0], [1.0, np.inf], {"log_marginal_likelihood": [-3.0, -2.0]},
                       "log_marginal_likelihood", True)
    probs = two.lifetime_posterior()
    assert np.all(np.isfinite(probs)) and probs.sum() == pytest.approx(1.0)
    forest_path = make_case("forest_regressor").path()
    with pytest.raises(ValueError, match="log_marginal_likelihood"):
        forest_path.lifetime_posterior()


def test_one_tie_rule():
    """Ties (up to a relative 1e-10) go to the smallest lifetime; NaN is never best."""
    assert best_interval([1.0, 0.5, 0.5 + 1e-12, 0.4 + 1e-2], maximize=False) == 3
    assert best_interval([1.0, 0.5, 0.5 - 1e-12, 0.7], maximize=False) == 1
    assert best_interval([np.nan, 2.0, 2.0 * (1 + 1e-11), 1.0], maximize=True) == 1
    assert best_interval([np.nan, np.nan], maximize=True) == 0
    path = LifetimePath([0.0, 1.0, 2.0], [1.0, 2.0, 3.0], {"loss": [3.0, 1.0, 1.0]}, "loss",
                        False)
    assert path.best_index == 1 and path.best_lifetime == 1.5


def test_path_aliases_name_the_same_class_and_fields():
    assert SGDLifetimePath is LifetimePath
    assert mondrian.LifetimePath is LifetimePath
    case = make_case("kernel_ridge")
    model = MondrianKernelRidge(5, lifetime="auto", max_lifetime=10.0, random_state=0)
    model.fit(*training_data("kernel_ridge"))
    assert model.path_ is model.lifetime_path_
    path = case.path()
    assert_array_equal(path.validation_error, path.metrics["validation_error"])
    with pytest.raises(AttributeError):
        path.no_such_metric  # noqa: B018


class TestHoldout:
    def test_reproduces_train_test_split(self):
        X, y = training_data("forest_regressor", n=101)
        parts = holdout_split(X, y, 0.2, 7)
        assert len(parts[1]) == 21  # ceil(0.2 n), as train_test_split
        expected = train_test_split(X, y, test_size=0.2, random_state=7)
        for part, ref in zip(parts, expected, strict=True):
            assert_array_equal(part, ref)

    def test_stratifies_classifiers_when_possible(self):
        X, y = training_data("forest_classifier", n=100)
        y = np.where(np.arange(100) < 10, 2, y)  # a rare class
        _, _, y_fit, y_val = holdout_split(X, y, 0.2, 0, stratify=True)
        assert np.sum(y_val == 2) == 2 and np.sum(y_fit == 2) == 8
        y[0] = 5  # a class with one row: plain random split
        _, _, y_fit, y_val = holdout_split(X, y, 0.2, 0, stratify=True)
        assert len(y_val) == 20

    @pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1, 1.5, "half", True])
    def test_rejects_bad_fractions(self, fraction):
        X, y = training_data("forest_regressor", n=20)
        with pytest.raises(ValueError, match="validation_fraction"):
            holdout_split(X, y, fraction, 0)

    def test_rejects_an_empty_side(self):
        X, y = training_data("forest_regressor", n=4)
        with pytest.raises(ValueError, match="leaves 4 validation and 0 training"):
            holdout_split(X, y, 0.9, 0)
        with pytest.raises(ValueError, match="validation"):
            holdout_split(X[:0], y[:0], 0.5, 0)
        with pytest.raises(ValueError, match="training"):
            holdout_split(X, y, 0.5, 0, min_fit=3)

    @pytest.mark.parametrize("name", ["kernel_ridge", "kernel_sgd_classifier",
                                      "forest_classifier"])
    def test_every_auto_fit_rejects_an_empty_side(self, name):
        X, y = training_data(name, n=4)
        model = make_estimator(name, lifetime="auto", validation_fraction=0.9)
        with pytest.raises(ValueError, match="validation_fraction"):
            model.fit(X, y)
