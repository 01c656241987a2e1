"""Label-aware cuts by default: the forests and trees search their feature weights unless told
``feature_weights=None``, on a bounded subsample of the first batch, deterministically.

Fails if the default went back to label-blind cuts (fit, partial_fit, learn_one), if the rows
the search reads grew with the batch, or if the chosen weights depended on ``n_jobs`` or on
``n_estimators``.
"""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from mondrian import (
    MondrianForestClassifier,
    MondrianForestRegressor,
    MondrianTreeClassifier,
    MondrianTreeRegressor,
)
from mondrian.estimator import relevance
from mondrian.estimator import weights as weights_module
from mondrian.estimator.ensemble import BaseMondrianEnsemble
from mondrian.estimator.relevance import search_sample


def _data(n, seed=0):
    """Two relevant columns among five: the label-aware search must find them."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(size=(n, 5))
    y_cls = ((X[:, 0] > 0.5) ^ (X[:, 1] > 0.4)).astype(int)
    y_reg = np.sin(6 * X[:, 0]) + 2 * X[:, 1] + 0.1 * rng.normal(size=n)
    return X, y_cls, y_reg


CLASSES = {
    "forest-classifier": (MondrianForestClassifier, True),
    "tree-classifier": (MondrianTreeClassifier, True),
    "forest-regressor": (MondrianForestRegressor, False),
    "tree-regressor": (MondrianTreeRegressor, False),
}


def _make(name, **params):
    cls, classification = CLASSES[name]
    if cls in (MondrianForestClassifier, MondrianForestRegressor):
        params.setdefault("n_estimators", 5)
    return cls(random_state=0, **params), classification


def _target(classification, y_cls, y_reg):
    return y_cls if classification else y_reg


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_the_default_cuts_the_relevant_columns_more(name):
    model, classification = _make(name)
    assert model.get_params()["feature_weights"] == "auto"
    X, y_cls, y_reg = _data(300)
    model.fit(X, _target(classification, y_cls, y_reg))
    w = model.feature_weights_
    assert w[2:].max() < w[:2].min(), w  # label-blind cuts would give all ones
    assert_array_equal(model._scaler.weights, w)
    blind, _ = _make(name, feature_weights=None)
    blind.fit(X, _target(classification, y_cls, y_reg))
    assert_array_equal(blind.feature_weights_, np.ones(5))
    assert blind._scaler.weights is None


@pytest.mark.parametrize("name", ["forest-classifier", "forest-regressor"])
@pytest.mark.parametrize("mode", ["partial_fit", "learn_one"])
def test_a_default_stream_is_label_aware_after_its_warm_up(name, mode):
    model, classification = _make(name)
    X, y_cls, y_reg = _data(model._auto_warm_up() + 10)  # (the regressors' window: 512 rows)
    y = _target(classification, y_cls, y_reg)
    if mode == "partial_fit":
        kw = {"classes": [0, 1]} if classification else {}
        for start in range(0, len(y), 64):
            model.partial_fit(X[start:start + 64], y[start:start + 64], **kw)
    else:
        for row, target in zip(X, y, strict=True):
            model.learn_one(row, target.item())
    w = model.feature_weights_
    assert w[2:].max() < w[:2].min(), w
    assert_array_equal(model._store.X, model._scaler.transform(X))


def _count_search_rows(monkeypatch):
    """Record the rows every part of the search reads: the batch given to ``choose_weights``,
    the relevance method and every probe's fit and validation rows."""
    seen = {"choose": [], "relevance": [], "probe": []}
    choose, rel = weights_module.choose_weights, relevance.relevance

    def choose_spy(X, *args, **kwargs):
        seen["choose"].append(len(X))
        return choose(X, *args, **kwargs)

    def relevance_spy(method, X, *args, **kwargs):
        seen["relevance"].append(len(X))
        return rel(method, X, *args, **kwargs)

    score = BaseMondrianEnsemble._weights_score

    def score_spy(self, weights, X_fit, y_fit, X_val, y_val, **kwargs):
        seen["probe"].append(len(X_fit) + len(X_val))
        return score(self, weights, X_fit, y_fit, X_val, y_val, **kwargs)

    monkeypatch.setattr(weights_module, "choose_weights", choose_spy)
    monkeypatch.setattr(relevance, "relevance", relevance_spy)
    monkeypatch.setattr(BaseMondrianEnsemble, "_weights_score", score_spy)
    return seen


@pytest.mark.parametrize("name", ["forest-classifier", "forest-regressor"])
def test_the_search_reads_a_bounded_number_of_rows(name, monkeypatch):
    monkeypatch.setattr(relevance, "SEARCH_ROWS", 200)
    monkeypatch.setattr(relevance, "SEARCH_MIN_ROWS", 120)
    seen = _count_search_rows(monkeypatch)
    reads = []
    # (the regressor adds the ARD Laplace candidates from 2000 rows: compare 2400 with 4800)
    for n, size in ((100, 100), (400, 120), (600, 150), (2400, 200), (4800, 200)):
        assert relevance.search_size(n) == size  # a quarter, clipped to [120, 200]
        for values in seen.values():
            values.clear()
        model, classification = _make(name)
        X, y_cls, y_reg = _data(n)
        model.fit(X, _target(classification, y_cls, y_reg))
        assert seen["choose"] == [size]
        assert seen["probe"] and max(seen["probe"]) <= size
        assert max(seen["relevance"]) <= size
        reads.append(sum(map(sum, seen.values())))
    assert reads[-2] == reads[-1]  # past the cap the search reads the same number of rows


def test_a_weighted_batch_is_subsampled_by_its_counts(monkeypatch):
    monkeypatch.setattr(relevance, "SEARCH_ROWS", 200)
    monkeypatch.setattr(relevance, "SEARCH_MIN_ROWS", 200)
    X, y, _ = _data(150)
    counts = np.tile([1.0, 3.0], 75)  # 300 rows counted with their weights
    X_s, y_s, w_s, rng = search_sample(X, y, counts, 0)
    assert w_s.sum() == 200 and len(X_s) == len(y_s) == len(w_s)
    assert isinstance(rng, np.random.RandomState)
    # within the limit: nothing drawn, the search of the whole batch bit for bit
    X_a, y_a, w_a, state = search_sample(X[:50], y[:50], counts[:50], 7)
    assert np.shares_memory(X_a, X) and np.shares_memory(w_a, counts) and len(y_a) == 50
    assert state == 7


@pytest.mark.parametrize("name", ["forest-classifier", "forest-regressor"])
def test_the_search_does_not_depend_on_n_jobs_or_n_estimators(name, monkeypatch):
    monkeypatch.setattr(relevance, "SEARCH_ROWS", 300)
    monkeypatch.setattr(relevance, "SEARCH_MIN_ROWS", 300)
    X, y_cls, y_reg = _data(700)
    weights = []
    for n_jobs, n_trees in ((1, 4), (2, 4), (2, 9), (1, 9)):
        model, classification = _make(name, n_jobs=n_jobs, n_estimators=n_trees)
        model.fit(X, _target(classification, y_cls, y_reg))
        weights.append(model.feature_weights_)
    for w in weights[1:]:
        assert_array_equal(w, weights[0])
    # and a different seed draws a different subsample (the search is not a fixed function)
    other, classification = _make(name, n_estimators=4)
    other.set_params(random_state=1).fit(X, _target(classification, y_cls, y_reg))
    assert not np.array_equal(other.feature_weights_, weights[0])


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_only_the_regressors_probe_the_quantile_map(name, monkeypatch):
    seen = _count_search_rows(monkeypatch)
    model, classification = _make(name)
    X, y_cls, y_reg = _data(300)
    model.fit(X, _target(classification, y_cls, y_reg))
    info = model.feature_weights_info_
    if classification:
        # the powers only: no quantile probe, the min-max map
        assert info["quantile_score"] is None and info["map"] == "minmax"
        assert len(seen["probe"]) == len(relevance.POWERS)
        monkeypatch.setattr(weights_module, "CLASSIFIER_QUANTILE_PROBE", True)
        seen["probe"].clear()
        again, _ = _make(name)
        again.fit(X, y_cls)
        assert len(seen["probe"]) == len(relevance.POWERS) + 1
        assert again.feature_weights_info_["quantile_score"] is not None
        assert_array_equal(again.feature_weights_, model.feature_weights_)
    else:
        assert info["quantile_score"] is not None  # probed with every power (joint map)
