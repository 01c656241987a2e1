"""Hypothesis fuzzing of every public estimator.

Shapes (one row, one feature, wide), values (huge, tiny, constant and duplicated columns, a
NaN or an infinity), target scales (1e-300 to 1e300, constant) and label types (int, str,
float, bool) go through ``fit`` / ``partial_fit`` and the read methods. The only exceptions
allowed are a ``ValueError`` or ``TypeError`` with a message; every output must be finite, and
non-finite inputs must be refused. A rejected online update must leave the model unchanged.

The fast suite runs ``FAST_EXAMPLES`` examples per estimator, derandomised (the same examples on
every run, so CI is stable); the ``slow`` run draws ``SLOW_EXAMPLES`` per estimator.
``EXAMPLES_RUN`` counts the examples that actually ran, per estimator and outcome.
"""

import collections
import inspect
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mondrian
from mondrian import (
    LaplaceRandomFourierFeatures,
    MondrianForestClassifier,
    MondrianForestDensity,
    MondrianForestRegressor,
    MondrianGridFeatures,
    MondrianGridRidge,
    MondrianKernelFeatures,
    MondrianKernelRidge,
    MondrianKernelSGDClassifier,
    MondrianKernelSGDRegressor,
    MondrianTreeClassifier,
    MondrianTreeRegressor,
    RandomBinningFeatures,
    RandomPartitionFeatures,
    RandomPartitionGPRegressor,
    RandomPartitionKernelPCA,
)

FAST_EXAMPLES = 15
FAST_WIDE_EXAMPLES = 3
SLOW_EXAMPLES = 250

# name -> (factory, kind): small models, so that an example takes milliseconds.
ESTIMATORS = {
    "MondrianForestClassifier": (lambda: MondrianForestClassifier(3, random_state=0), "clf"),
    "MondrianTreeClassifier": (lambda: MondrianTreeClassifier(random_state=0), "clf"),
    "MondrianForestRegressor": (lambda: MondrianForestRegressor(3, random_state=0), "reg"),
    "MondrianTreeRegressor": (lambda: MondrianTreeRegressor(random_state=0), "reg"),
    "MondrianForestDensity": (
        lambda: MondrianForestDensity(3, lifetime=2.0, concentration=1.0, random_state=0),
        "density"),
    "MondrianKernelFeatures": (lambda: MondrianKernelFeatures(3, random_state=0), "transform"),
    "MondrianKernelRidge": (lambda: MondrianKernelRidge(3, random_state=0), "reg"),
    "MondrianKernelSGDRegressor": (
        lambda: MondrianKernelSGDRegressor(3, n_epochs=1, random_state=0), "reg"),
    "MondrianKernelSGDClassifier": (
        lambda: MondrianKernelSGDClassifier(3, n_epochs=1, random_state=0), "clf"),
    "LaplaceRandomFourierFeatures": (
        lambda: LaplaceRandomFourierFeatures(n_components=8, random_state=0), "transform"),
    "RandomBinningFeatures": (
        lambda: RandomBinningFeatures(n_components=4, random_state=0), "transform"),
    "RandomPartitionFeatures": (
        lambda: RandomPartitionFeatures(n_partitions=4, random_state=0), "transform"),
    "RandomPartitionGPRegressor": (
        lambda: RandomPartitionGPRegressor(n_partitions=4, random_state=0), "reg"),
    "MondrianGridFeatures": (
        lambda: MondrianGridFeatures(3, lifetimes=2.0, random_state=0), "transform"),
    "MondrianGridRidge": (
        lambda: MondrianGridRidge(3, max_features=200, random_state=0), "reg"),
    "RandomPartitionKernelPCA": (
        lambda: RandomPartitionKernelPCA(n_components=1, n_partitions=4, random_state=0),
        "transform"),
}

EXAMPLES_RUN = collections.Counter()
# Why finite inputs were refused: (estimator, first words of the message) -> count.
FINITE_REFUSALS = collections.Counter()


def test_every_public_estimator_is_fuzzed():
    public = {name for name in mondrian.__all__
              if isinstance(getattr(mondrian, name), type)
              and hasattr(getattr(mondrian, name), "get_params")}
    assert public == set(ESTIMATORS)


# ----------------------------------------------------------------- strategies

@st.composite
def columns(draw, n_rows):
    """One feature column of one of several kinds."""
    kind = draw(st.sampled_from(["uniform", "constant", "huge", "tiny", "integers", "mixed"]))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.RandomState(seed)
    if kind == "uniform":
        return rng.uniform(-1, 1, n_rows) * 10.0 ** draw(st.integers(-5, 5))
    if kind == "constant":
        return np.full(n_rows, draw(st.sampled_from([0.0, 1.0, -3.5, 1e-300, 1e300])))
    if kind == "huge":
        return rng.uniform(-1, 1, n_rows) * 10.0 ** draw(st.integers(100, 300))
    if kind == "tiny":
        return rng.uniform(-1, 1, n_rows) * 10.0 ** draw(st.integers(-300, -100))
    if kind == "integers":
        return rng.randint(0, 3, n_rows).astype(float)  # many duplicates
    # A constant column with a tiny blip (the frozen-scale trap of the feature map).
    col = np.zeros(n_rows)
    col[-1] = 1e-300
    return col


@st.composite
def datasets(draw, kind, wide=False):
    n_rows = draw(st.integers(1, 40))
    n_features = draw(st.integers(20, 60) if wide else st.integers(1, 5))
    X = np.column_stack([draw(columns(n_rows)) for _ in range(n_features)])
    if draw(st.booleans()):
        X = np.vstack([X, X[: draw(st.integers(1, n_rows))]])  # duplicated rows
    bad = draw(st.sampled_from([None] * 6 + [np.nan, np.inf, -np.inf]))
    if bad is not None:
        X[draw(st.integers(0, X.shape[0] - 1)), draw(st.integers(0, X.shape[1] - 1))] = bad
    n = X.shape[0]
    y = None
    if kind == "reg":
        scale = 10.0 ** draw(st.sampled_from([-300, -150, -5, 0, 5, 150, 300]))
        shape = draw(st.sampled_from(["linear", "constant", "noise"]))
        rng = np.random.RandomState(draw(st.integers(0, 2**16)))
        if shape == "constant":
            y = np.full(n, scale)
        elif shape == "linear":
            y = scale * np.nan_to_num(np.sign(X[:, 0]), nan=0.0) + scale * rng.rand(n)
        else:
            y = scale * rng.randn(n)
    elif kind == "clf":
        n_classes = draw(st.integers(1, 4))
        codes = np.arange(n) % n_classes
        label_type = draw(st.sampled_from(["int", "str", "float", "bool"]))
        if label_type == "int":
            y = codes * 7 - 3
        elif label_type == "str":
            y = np.array([f"c{c}" for c in codes])
        elif label_type == "float":
            y = codes * 0.5
        else:
            y = codes % 2 == 0
    return X, y, bad is not None


# ----------------------------------------------------------------- the property

def _outputs(model, kind, X):
    if kind == "clf":
        return [model.predict_proba(X), model.predict(X)]
    if kind == "reg":
        if "return_std" in inspect.signature(model.predict).parameters:
            return [model.predict(X), *model.predict(X, return_std=True)]
        return [model.predict(X)]
    if kind == "density":
        return [model.score_samples(X)]
    Z = model.transform(X)
    return [Z.toarray() if hasattr(Z, "toarray") else Z]


def _assert_finite(outputs):
    for out in outputs:
        out = np.asarray(out)
        if out.dtype.kind in "fc":
            assert np.all(np.isfinite(out)), out


def _allowed(exc):
    return isinstance(exc, (ValueError, TypeError)) and str(exc).strip()


def _fit(model, kind, X, y):
    return model.fit(X) if y is None else model.fit(X, y)


def check_estimator_on(name, data):
    factory, kind = ESTIMATORS[name]
    X, y, has_bad = data
    model = factory()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            _fit(model, kind, X, y)
        except Exception as exc:  # noqa: BLE001 - the property is about the exception type
            assert _allowed(exc), f"{name}.fit raised {type(exc).__name__}: {exc}"
            EXAMPLES_RUN[name, "rejected (NaN/inf)" if has_bad else "rejected (finite)"] += 1
            if not has_bad:
                FINITE_REFUSALS[name, str(exc)[:70]] += 1
            return
        assert not has_bad, f"{name}.fit accepted a non-finite X"
        try:
            outputs = _outputs(model, kind, X)
        except Exception as exc:  # noqa: BLE001
            assert _allowed(exc), f"{name} read raised {type(exc).__name__}: {exc}"
            EXAMPLES_RUN[name, "read rejected"] += 1
            return
        _assert_finite(outputs)
        if hasattr(model, "partial_fit"):
            # A second batch: the same rows, reversed and shifted (new extremes), and for the
            # regressors targets three times larger.
            X2 = X[::-1] * 2.0 + 1.0
            before = pickle.dumps(model)
            try:
                if y is None:
                    model.partial_fit(X2)
                elif kind == "clf":
                    model.partial_fit(X2, y[::-1])
                    model.learn_one(X2[0], y[0])
                else:
                    model.partial_fit(X2, y[::-1] * 3.0)
            except Exception as exc:  # noqa: BLE001
                assert _allowed(exc), f"{name}.partial_fit raised {type(exc).__name__}: {exc}"
                assert pickle.dumps(model) == before, f"{name}: a rejected update changed it"
            else:
                _assert_finite(_outputs(model, kind, X))
        EXAMPLES_RUN[name, "fitted"] += 1


@pytest.mark.parametrize("wide", [False, True], ids=["narrow", "wide"])
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_fuzz_estimator(name, wide):
    @settings(max_examples=FAST_WIDE_EXAMPLES if wide else FAST_EXAMPLES, deadline=None,
              derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(data=datasets(ESTIMATORS[name][1], wide=wide))
    def run(data):
        check_estimator_on(name, data)

    run()


@pytest.mark.slow
@pytest.mark.parametrize("wide", [False, True], ids=["narrow", "wide"])
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_fuzz_estimator_long(name, wide):
    @settings(max_examples=SLOW_EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=datasets(ESTIMATORS[name][1], wide=wide))
    def run(data):
        check_estimator_on(name, data)

    run()


def test_fuzz_counts_are_recorded():
    """Runs last in this module: prints how many examples ran (``pytest -s`` shows it)."""
    total = sum(EXAMPLES_RUN.values())
    print(f"\nfuzz examples run: {total}")
    for (name, outcome), count in sorted(EXAMPLES_RUN.items()):
        print(f"  {name:32s} {outcome:18s} {count}")
    for (name, message), count in sorted(FINITE_REFUSALS.items()):
        print(f"  refused finite input: {name}: {message} ({count})")
