"""The one-row fast paths of validation give exactly what the full scikit-learn validation gives.

``BaseMondrianEnsemble._fast_rows`` (and the classifier's cached label codes) skip
``validate_data`` for small finite float64 arrays; every other input must take the full
validation. Each case runs twice, with the fast path and with it switched off, and compares the
predictions, the errors (type and message) and the warnings.
"""

import warnings

import numpy as np
import pandas as pd
import pytest

from mondrian import MondrianForestClassifier, MondrianForestRegressor
from mondrian.estimator.ensemble import BaseMondrianEnsemble
from mondrian.forest.classifier import _BaseMondrianClassifier

rng = np.random.default_rng(0)
X = rng.random((40, 3))
Y_CLASS = rng.integers(0, 3, 40)
Y_REG = X @ np.array([1.0, -2.0, 0.5])
NAMES = ["a", "b", "c"]


def _bad_nan():
    row = X[:1].copy()
    row[0, 1] = np.nan
    return row


INPUTS = {
    "float64": lambda: X[5:6].copy(),
    "float64 rows": lambda: X[5:9].copy(),
    "fortran": lambda: np.asfortranarray(X[5:9]),
    "list": lambda: X[5:6].tolist(),
    "float32": lambda: X[5:6].astype(np.float32),
    "int": lambda: (X[5:6] * 10).astype(np.int64),
    "dataframe": lambda: pd.DataFrame(X[5:6], columns=NAMES),
    "wrong width": lambda: X[5:6, :2].copy(),
    "nan": _bad_nan,
    "inf": lambda: np.full((1, 3), np.inf),
    "empty": lambda: np.empty((0, 3)),
    "1-D": lambda: X[5].copy(),
}


def _outcome(func):
    """What ``func()`` returns or raises, and the warnings it emits."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = ("ok", func())
        except Exception as exc:  # noqa: BLE001 - the exact error is what is compared
            result = (type(exc), str(exc))
    return result, [(w.category, str(w.message)) for w in caught]


def _same(a, b):
    (ra, wa), (rb, wb) = a, b
    assert wa == wb
    assert ra[0] == rb[0]
    if ra[0] == "ok":
        np.testing.assert_array_equal(np.asarray(ra[1]), np.asarray(rb[1]))
    else:
        assert ra[1] == rb[1]


def _no_fast(monkeypatch):
    monkeypatch.setattr(BaseMondrianEnsemble, "_fast_rows", lambda self, X, *limit: None)
    monkeypatch.setattr(_BaseMondrianClassifier, "_encode_known", lambda self, y: None)


def _assert_fast_equals_full(monkeypatch, func):
    """``func`` returns or raises the same, and warns the same, with and without the fast
    paths."""
    fast = _outcome(func)
    with monkeypatch.context() as m:
        _no_fast(m)
        full = _outcome(func)
    _same(fast, full)


def _fitted(kind, named):
    Xf = pd.DataFrame(X[:20], columns=NAMES) if named else X[:20]
    if kind == "classifier":
        model = MondrianForestClassifier(n_estimators=3, random_state=0)
        return model.partial_fit(Xf, Y_CLASS[:20], classes=[0, 1, 2, 5])
    return MondrianForestRegressor(n_estimators=3, random_state=0).partial_fit(Xf, Y_REG[:20])


@pytest.mark.exact
@pytest.mark.parametrize("named", [False, True])
@pytest.mark.parametrize("kind", ["classifier", "regressor"])
@pytest.mark.parametrize("name", list(INPUTS))
def test_predict_fast_path_matches_full_validation(monkeypatch, kind, named, name):
    model = _fitted(kind, named)
    method = model.predict_proba if kind == "classifier" else model.predict
    _assert_fast_equals_full(monkeypatch, lambda: method(INPUTS[name]()))


LABELS = {
    "int": lambda n: Y_CLASS[20 : 20 + n].copy(),
    "int32": lambda n: Y_CLASS[20 : 20 + n].astype(np.int32),
    "float": lambda n: Y_CLASS[20 : 20 + n].astype(float),
    "list": lambda n: Y_CLASS[20 : 20 + n].tolist(),
    "unseen": lambda n: np.full(n, 7),
    "new in classes": lambda n: np.full(n, 5),
    "2-D": lambda n: Y_CLASS[20 : 20 + n].reshape(-1, 1),
    "wrong length": lambda n: Y_CLASS[20 : 22 + n].copy(),
    "strings": lambda n: np.array(["a"] * n),
    "continuous": lambda n: np.full(n, 0.5),
}


@pytest.mark.exact
@pytest.mark.parametrize("named", [False, True])
@pytest.mark.parametrize("label", list(LABELS))
@pytest.mark.parametrize("name", ["float64", "float64 rows", "list", "float32", "dataframe",
                                  "wrong width", "nan"])
def test_partial_fit_fast_path_matches_full_validation(monkeypatch, name, label, named):
    """The model after the update (its predictions) or the error is the same either way."""

    def run():
        model = _fitted("classifier", named)
        rows = INPUTS[name]()
        model.partial_fit(rows, LABELS[label](len(rows)))
        return model.predict_proba(X[20:40])

    _assert_fast_equals_full(monkeypatch, run)


@pytest.mark.exact
@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_mini_batches_past_fast_rows_match_full_validation(monkeypatch, kind):
    """Mini-batches larger than ``FAST_ROWS`` (``partial_fit`` takes the direct checks up to
    ``FAST_BATCH_ROWS``) give the same model as the full validation."""
    data = np.random.default_rng(3).random((400, 3))
    target = (data[:, 0] * 3).astype(np.int64) if kind == "classifier" else data @ [1.0, 2.0, 3.0]
    cls = MondrianForestClassifier if kind == "classifier" else MondrianForestRegressor

    def run():
        model = cls(n_estimators=3, random_state=0)
        for start in range(0, 400, 100):
            model.partial_fit(data[start:start + 100], target[start:start + 100])
        return model.predict(X)

    _assert_fast_equals_full(monkeypatch, run)


@pytest.mark.exact
def test_fast_stream_matches_full_stream(monkeypatch):
    """A 1-row partial_fit / predict stream is bit-identical with and without the fast paths."""

    def stream():
        model = MondrianForestClassifier(n_estimators=3, random_state=1)
        model.partial_fit(X[:1], Y_CLASS[:1])
        out = []
        for i in range(1, 40):
            out.append(model.predict_proba(X[i : i + 1]))
            model.partial_fit(X[i : i + 1], Y_CLASS[i : i + 1])  # classes arrive one by one
        return [*out, model.classes_]

    fast = stream()
    with monkeypatch.context() as m:
        _no_fast(m)
        full = stream()
    assert len(fast) == len(full)
    for a, b in zip(fast, full, strict=True):
        np.testing.assert_array_equal(a, b)


def test_fast_path_takes_only_plain_float64():
    """The fast path accepts exactly what validate_data would return unchanged."""
    model = _fitted("regressor", False)
    row = X[:1].copy()
    assert model._fast_rows(row) is row
    for other in (X[:1].tolist(), X[:1].astype(np.float32), np.asfortranarray(X[:4]),
                  X[:1, :2].copy(), _bad_nan(), np.empty((0, 3)), X[0].copy(),
                  np.asmatrix(X[:1])):
        assert model._fast_rows(other) is None
    assert _fitted("regressor", True)._fast_rows(row) is None  # fitted with feature names


TARGETS = {
    "float": lambda n: Y_REG[20 : 20 + n].copy(),
    "int": lambda n: np.arange(n),
    "list": lambda n: Y_REG[20 : 20 + n].tolist(),
    "nan": lambda n: np.full(n, np.nan),
    "2-D": lambda n: Y_REG[20 : 20 + n].reshape(-1, 1),
    "two outputs": lambda n: np.ones((n, 2)),
    "wrong length": lambda n: Y_REG[20 : 22 + n].copy(),
}


@pytest.mark.exact
@pytest.mark.parametrize("named", [False, True])
@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("name", ["float64", "float64 rows", "list", "int", "dataframe",
                                  "wrong width", "nan"])
def test_regressor_partial_fit_fast_path_matches_full_validation(monkeypatch, name, target,
                                                                 named):
    def run():
        model = _fitted("regressor", named)
        rows = INPUTS[name]()
        model.partial_fit(rows, TARGETS[target](len(rows)))
        return model.predict(X[20:40])

    _assert_fast_equals_full(monkeypatch, run)
