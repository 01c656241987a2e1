"""The tree ensemble estimators after fit: under outer joblib backends, with parameters changed
after fit, with unknown dict keys in learn_one, after a failed refit, and through the read-only
estimators_ views."""

import copy
import pickle

import joblib
import numpy as np
import pytest
from numpy.testing import assert_array_equal

from mondrian import (
    MondrianForestClassifier,
    MondrianForestDensity,
    MondrianForestRegressor,
    MondrianKernelFeatures,
    MondrianKernelRidge,
    MondrianKernelSGDClassifier,
    MondrianKernelSGDRegressor,
    MondrianTreeClassifier,
    MondrianTreeRegressor,
)

from _data import diagonal_classes


def _frozen(model):
    """Pickled state in a canonical form (a round trip fixes the pickler's memo layout)."""
    return pickle.dumps(pickle.loads(pickle.dumps(model)))


def _trees_equal(a, b):
    assert len(a._trees) == len(b._trees)
    for ta, tb in zip(a._trees, b._trees, strict=True):
        assert ta.node_count == tb.node_count
        assert_array_equal(ta.nodes_array, tb.nodes_array)
        assert_array_equal(ta.value_array, tb.value_array)


# ----------------------------------------------------------------- outer process backends

FORESTS = [
    lambda: MondrianForestClassifier(n_estimators=20, n_jobs=2, random_state=0),
    lambda: MondrianForestRegressor(n_estimators=20, n_jobs=2, random_state=0),
    lambda: MondrianForestDensity(20, lifetime=3.0, concentration=1.0, n_jobs=2,
                                  random_state=0),
]


def _fit_and_update(make, X, y):
    model = make()
    density = isinstance(model, MondrianForestDensity)
    model.fit(X[:100]) if density else model.fit(X[:100], y[:100])
    fitted = copy.deepcopy(model)
    model.partial_fit(X[100:]) if density else model.partial_fit(X[100:], y[100:])
    if density:
        out = model.score_samples(X)
    elif isinstance(model, MondrianForestClassifier):
        out = model.predict_proba(X)
    else:
        out = model.predict(X)
    return fitted, model, out


def _check_backend(make, backend):
    X, y = diagonal_classes(160)
    fitted, model, out = _fit_and_update(make, X, y)
    with joblib.parallel_config(backend=backend, n_jobs=2):
        fitted_b, model_b, out_b = _fit_and_update(make, X, y)
    assert min(t.node_count for t in fitted_b._trees) > 1
    _trees_equal(fitted, fitted_b)
    _trees_equal(model, model_b)
    assert_array_equal(out, out_b)


@pytest.mark.parametrize("make", FORESTS)
def test_outer_loky_backend_changes_nothing(make):
    _check_backend(make, "loky")


@pytest.mark.parametrize("make", FORESTS)
def test_outer_dask_backend_changes_nothing(make):
    distributed = pytest.importorskip(
        "dask.distributed", reason="dask.distributed is not installed: dask backend not tested"
    )
    with distributed.Client(processes=True, n_workers=2, threads_per_worker=1,
                            dashboard_address=None):
        _check_backend(make, "dask")


def test_grid_search_under_dask_scores_like_without_it():
    distributed = pytest.importorskip(
        "dask.distributed", reason="dask.distributed is not installed: dask backend not tested"
    )
    from sklearn.model_selection import GridSearchCV

    X, y = diagonal_classes(120)

    def scores():
        search = GridSearchCV(MondrianForestClassifier(8, n_jobs=2, random_state=0),
                              {"lifetime": [1.0, 5.0]}, cv=3, n_jobs=2)
        return search.fit(X, y).cv_results_["mean_test_score"]

    expected = scores()
    with distributed.Client(processes=True, n_workers=2, threads_per_worker=1,
                            dashboard_address=None):
        with joblib.parallel_config(backend="dask"):
            assert_array_equal(scores(), expected)


# ----------------------------------------------------------------- set_params after fit


def test_more_trees_grow_on_the_stored_points():
    """n_estimators raised after fit: the next partial_fit grows the new trees on the stored
    points, which gives exactly the forest that had them from the start."""
    X, y = diagonal_classes(160)
    grown = MondrianForestClassifier(n_estimators=3, random_state=4).fit(X[:100], y[:100])
    grown.set_params(n_estimators=6).partial_fit(X[100:], y[100:])
    full = MondrianForestClassifier(n_estimators=6, random_state=4).fit(X[:100], y[:100])
    full.partial_fit(X[100:], y[100:])
    _trees_equal(grown, full)
    assert_array_equal(grown.predict_proba(X), full.predict_proba(X))
    # learn_one follows the same rule.
    grown = MondrianForestClassifier(n_estimators=3, random_state=4).fit(X[:100], y[:100])
    grown.set_params(n_estimators=5).learn_one(X[100], y[100])
    full = MondrianForestClassifier(n_estimators=5, random_state=4).fit(X[:100], y[:100])
    full.learn_one(X[100], y[100])
    _trees_equal(grown, full)


@pytest.mark.parametrize("make, fit_args", [
    (lambda n: MondrianForestRegressor(n_estimators=n, random_state=1), "y"),
    (lambda n: MondrianForestDensity(n, lifetime=3.0, concentration=1.0, random_state=1), ""),
    (lambda n: MondrianKernelFeatures(n, lifetime=2.0, random_state=1), ""),
])
def test_more_trees_for_every_online_model(make, fit_args):
    X, y = diagonal_classes(160)
    args = (y[:100],) if fit_args else ()
    more = (y[100:],) if fit_args else ()
    grown = make(3).fit(X[:100], *args)
    grown.set_params(n_estimators=5).partial_fit(X[100:], *more)
    full = make(5).fit(X[:100], *args).partial_fit(X[100:], *more)
    _trees_equal(grown, full)
    if isinstance(grown, MondrianKernelFeatures):
        assert_array_equal(grown._keys, full._keys)
        assert (grown.transform(X) != full.transform(X)).nnz == 0


def test_density_grows_new_trees_at_the_chosen_lifetime():
    X, _ = diagonal_classes(160)
    model = MondrianForestDensity(3, random_state=1).fit(X[:100])
    chosen, concentration = model.lifetime_, model.concentration_
    model.set_params(n_estimators=5).partial_fit(X[100:])
    assert len(model._trees) == 5
    assert {tree.lifetime for tree in model._trees} == {chosen}
    assert (model.lifetime_, model.concentration_) == (chosen, concentration)
    assert all(tree.nodes_array["n_node_samples"][0] == 160 for tree in model._trees)


ONLINE = [
    (lambda: MondrianForestClassifier(n_estimators=4, random_state=0), True),
    (lambda: MondrianTreeClassifier(random_state=0), True),
    (lambda: MondrianForestRegressor(n_estimators=4, random_state=0), True),
    (lambda: MondrianTreeRegressor(random_state=0), True),
    (lambda: MondrianForestDensity(4, lifetime=3.0, concentration=1.0, random_state=0), False),
    (lambda: MondrianKernelFeatures(4, lifetime=2.0, random_state=0), False),
    (lambda: MondrianKernelRidge(4, lifetime=2.0, random_state=0), True),
]


def _fit(model, X, y, supervised, partial=False):
    method = model.partial_fit if partial else model.fit
    return method(X, y) if supervised else method(X)


@pytest.mark.parametrize("make, supervised", ONLINE)
def test_changed_tree_parameters_are_refused_by_partial_fit(make, supervised):
    X, y = diagonal_classes(160)
    model = _fit(make(), X[:100], y[:100], supervised)
    saved = _frozen(model)
    changes = {"lifetime": 0.5}
    params = model.get_params()
    if "feature_scaling" in params:
        changes["feature_scaling"] = None
    if "min_samples_split" in params:
        changes["min_samples_split"] = 7
    if "concentration" in params and isinstance(model, MondrianForestDensity):
        changes["concentration"] = 2.0
        changes["margin"] = 0.3
    if "alpha" in params:
        changes["alpha"] = 3.0
    if "n_estimators" in params:
        changes["n_estimators"] = 2
    for name, value in changes.items():
        trial = pickle.loads(saved)
        before = trial.get_params()[name]
        trial.set_params(**{name: value})
        with pytest.raises(ValueError, match=f"{name}.*(call fit|refit)"):
            _fit(trial, X[100:], y[100:], supervised, partial=True)
        # Nothing changed, and restoring the parameter lets it learn on.
        assert _frozen(trial.set_params(**{name: before})) == saved
        _fit(trial, X[100:], y[100:], supervised, partial=True)
    if hasattr(model, "prune"):
        trial = pickle.loads(saved).set_params(lifetime=0.5)
        with pytest.raises(ValueError, match=r"prune\(0.5\)"):
            _fit(trial, X[100:], y[100:], supervised, partial=True)


def test_kernel_ridge_cannot_add_trees_online():
    X, y = diagonal_classes(160)
    model = MondrianKernelRidge(4, lifetime=2.0, random_state=0).fit(X[:100], y[:100])
    model.set_params(n_estimators=6)
    with pytest.raises(ValueError, match="cannot add trees online: call fit"):
        model.partial_fit(X[100:], y[100:])
    assert len(model._trees) == 4


def test_learn_one_checks_parameters_too():
    X, y = diagonal_classes(160)
    model = MondrianForestClassifier(n_estimators=3, random_state=0).fit(X, y)
    model.set_params(lifetime=2.0)
    with pytest.raises(ValueError, match="lifetime.*call fit"):
        model.learn_one(X[0], y[0])


# ----------------------------------------------------------------- dict keys in learn_one


def test_learn_one_rejects_unknown_dict_keys():
    X, y = diagonal_classes(160)
    model = MondrianForestClassifier(n_estimators=3, random_state=0)
    model.learn_one({"a": 0.1, "b": 0.2}, 0)
    model.learn_one({"a": 0.5, "b": 0.9}, 1)
    saved = _frozen(model)
    with pytest.raises(ValueError, match=r"\['c'\]"):
        model.learn_one({"a": 0.3, "b": 0.4, "c": 1.0}, 1)
    with pytest.raises(ValueError, match=r"\['extra'\]"):
        model.predict_one({"b": 0.4, "a": 0.3, "extra": 1.0})
    assert _frozen(model) == saved
    model.learn_one({"b": 0.4, "a": 0.3}, 1)  # key order does not matter
    assert model._store.n_samples == 3


# ----------------------------------------------------------------- failed refits

ALL = [
    (lambda: MondrianForestClassifier(n_estimators=3, random_state=0), "class"),
    (lambda: MondrianTreeClassifier(random_state=0), "class"),
    (lambda: MondrianForestRegressor(n_estimators=3, random_state=0), "real"),
    (lambda: MondrianTreeRegressor(random_state=0), "real"),
    (lambda: MondrianForestDensity(3, random_state=0), None),
    (lambda: MondrianKernelFeatures(3, random_state=0), None),
    (lambda: MondrianKernelRidge(3, random_state=0), "real"),
    (lambda: MondrianKernelSGDRegressor(3, n_epochs=1, random_state=0), "real"),
    (lambda: MondrianKernelSGDClassifier(3, n_epochs=1, random_state=0), "class"),
]


@pytest.mark.parametrize("make, target", ALL)
def test_a_failed_fit_leaves_the_fitted_model_intact(make, target):
    pd = pytest.importorskip("pandas")
    X, y = diagonal_classes(80)
    args = () if target is None else (y,)
    # Fitted on named features: a refit on an array drops the names before it fails.
    model = make().fit(pd.DataFrame(X, columns=["a", "b", "c"]), *args)
    saved = _frozen(model)
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    failures = [(X_nan, *args)]
    if target == "real":
        failures.append((X, np.where(np.arange(80) == 5, np.nan, y)))
    for fit_args in failures:
        trial = pickle.loads(saved)
        with pytest.raises(ValueError):
            trial.fit(*fit_args)
        assert _frozen(trial) == saved


# ----------------------------------------------------------------- estimators_ views


@pytest.mark.parametrize("forest_class", [MondrianForestClassifier, MondrianForestRegressor])
def test_views_do_not_write_through(forest_class):
    X, y = diagonal_classes(160)
    forest = forest_class(n_estimators=3, random_state=0).fit(X[:100], y[:100])
    saved = _frozen(forest)
    view = forest.estimators_[1]
    assert view._trees[0] is forest._trees[1]
    with pytest.raises(ValueError, match=r"estimators_\[i\] is a read-only view of the forest"):
        view.partial_fit(X[100:], y[100:])
    if hasattr(view, "learn_one"):
        with pytest.raises(ValueError, match="read-only view"):
            view.learn_one(X[100], y[100])
        with pytest.raises(ValueError, match="read-only view"):
            view.learn_one(X[100], 5)  # a new class would widen the forest's trees
    assert _frozen(forest) == saved
    # Reading, pruning and refitting a view are fine and leave the forest alone.
    view.predict(X[:5])
    pruned = view.prune(0.5)
    pruned.partial_fit(X[100:], y[100:])
    view.fit(X[100:], y[100:])
    view.partial_fit(X[:10], y[:10])  # an ordinary model after fit
    assert _frozen(forest) == saved
