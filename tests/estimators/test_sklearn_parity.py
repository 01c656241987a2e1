"""scikit-learn parity: missing values, sparse inputs, transformer outputs,
multi-output targets and the HTML repr."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import sparse
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.utils import estimator_html_repr

from mondrian import (
    LaplaceRandomFourierFeatures,
    MondrianForestClassifier,
    MondrianForestDensity,
    MondrianForestRegressor,
    MondrianGridFeatures,
    MondrianKernelFeatures,
    MondrianKernelRidge,
    MondrianTreeClassifier,
    MondrianTreeRegressor,
    RandomBinningFeatures,
    RandomPartitionFeatures,
)

rng = np.random.RandomState(0)
X = rng.uniform(size=(60, 3))
y_class = (X[:, 0] > 0.5).astype(int)
y_reg = X[:, 0] + X[:, 1]


def _supervised():
    return [
        (MondrianForestClassifier(n_estimators=3, random_state=0), y_class),
        (MondrianTreeClassifier(random_state=0), y_class),
        (MondrianForestRegressor(n_estimators=3, random_state=0), y_reg),
        (MondrianTreeRegressor(random_state=0), y_reg),
    ]


@pytest.mark.parametrize("model, y", _supervised(), ids=lambda v: type(v).__name__)
def test_nan_is_refused_with_the_way_out(model, y):
    """NaN gets a ValueError that names the imputer; a pipeline with one works."""
    X_nan = X.copy()
    X_nan[::7, 1] = np.nan
    with pytest.raises(ValueError, match="(?s)NaN.*imput"):
        model.fit(X_nan, y)
    model.fit(X, y)
    with pytest.raises(ValueError, match="(?s)NaN.*imput"):
        model.predict(X_nan)
    with pytest.raises(ValueError, match="(?s)NaN.*imput"):
        model.partial_fit(X_nan, y)
    pipe = make_pipeline(SimpleImputer(), model).fit(X_nan, y)
    assert np.isfinite(pipe.predict(X_nan).astype(float)).all()


def test_learn_one_nan_names_the_imputer():
    clf = MondrianForestClassifier(n_estimators=2, random_state=0).fit(X, y_class)
    with pytest.raises(ValueError, match="NaN.*SimpleImputer"):
        clf.learn_one([0.1, np.nan, 0.3], 1)


@pytest.mark.parametrize("model, y", [
    *_supervised(),
    (MondrianForestDensity(n_estimators=2, lifetime=2.0, random_state=0), None),
    (MondrianKernelRidge(n_estimators=3, random_state=0), y_reg),
    (RandomPartitionFeatures(n_partitions=3, random_state=0), None),
], ids=lambda v: type(v).__name__)
def test_sparse_input_is_refused_with_the_way_out(model, y):
    with pytest.raises(TypeError, match="toarray"):
        model.fit(sparse.csr_matrix(X), y)


@pytest.mark.parametrize("Features", [MondrianKernelFeatures, RandomBinningFeatures])
def test_kernel_features_take_sparse_rows(Features, monkeypatch):
    """The same features from sparse rows as from dense ones (densified in blocks)."""
    monkeypatch.setattr("mondrian.estimator.inputs.SPARSE_CHUNK", 7)  # several blocks
    X_sparse = X.copy()
    X_sparse[X_sparse < 0.4] = 0.0
    params = ({"n_estimators": 20} if Features is MondrianKernelFeatures
              else {"n_components": 20})
    dense = Features(**params, lifetime=3.0, random_state=0)
    sparse_model = Features(**params, lifetime=3.0, random_state=0)
    Z_dense = dense.fit(X_sparse).transform(X_sparse + 0.01)
    Z_sparse = sparse_model.fit(sparse.csr_matrix(X_sparse)).transform(
        sparse.csc_matrix(X_sparse + 0.01))
    assert (Z_dense != Z_sparse).nnz == 0
    if hasattr(dense, "partial_fit"):
        sparse_model.partial_fit(sparse.csr_matrix(X_sparse[:5]))
        dense.partial_fit(X_sparse[:5])
    assert (dense.transform(X) != sparse_model.transform(sparse.csr_matrix(X))).nnz == 0


def _transformers():
    return [
        MondrianKernelFeatures(n_estimators=5, lifetime=2.0, random_state=0),
        RandomBinningFeatures(n_components=5, random_state=0),
        LaplaceRandomFourierFeatures(n_components=6, random_state=0),
        RandomPartitionFeatures(n_partitions=4, random_state=0),
        MondrianGridFeatures(n_grids=5, random_state=0),
    ]


@pytest.mark.parametrize("transformer", _transformers(), ids=lambda t: type(t).__name__)
def test_transformers_name_their_outputs_and_set_pandas_output(transformer):
    frame = pd.DataFrame(X, columns=["a", "b", "c"], index=np.arange(100, 160))
    Z = transformer.fit_transform(frame)
    names = transformer.get_feature_names_out()
    prefix = type(transformer).__name__.lower()
    assert_array_equal(names, [f"{prefix}{k}" for k in range(Z.shape[1])])
    transformer.set_output(transform="pandas")
    out = transformer.fit_transform(frame)
    assert isinstance(out, pd.DataFrame)
    assert_array_equal(out.columns, names)
    assert_array_equal(out.index, frame.index)
    dense = Z.toarray() if sparse.issparse(Z) else Z
    values = out.sparse.to_dense().to_numpy() if sparse.issparse(Z) else out.to_numpy()
    assert_allclose(values, dense)
    part = transformer.transform(frame.iloc[5:9])
    assert isinstance(part, pd.DataFrame)
    assert_array_equal(part.index, frame.index[5:9])
    transformer.set_output(transform="default")
    again = transformer.transform(frame)
    assert sparse.issparse(again) == sparse.issparse(Z)


@pytest.mark.parametrize("Model", [MondrianForestRegressor, MondrianTreeRegressor])
def test_multi_output_targets_get_a_clear_error(Model):
    Y = np.column_stack([y_reg, -y_reg])
    with pytest.raises(ValueError, match="MultiOutputRegressor"):
        Model(random_state=0).fit(X, Y)
    model = Model(random_state=0).fit(X, y_reg)
    with pytest.raises(ValueError, match="MultiOutputRegressor"):
        model.partial_fit(X, Y)
    with pytest.warns(Warning):  # a column vector is raveled, as scikit-learn does
        Model(random_state=0).fit(X, y_reg[:, None])


@pytest.mark.parametrize("model", [
    MondrianForestClassifier(n_estimators=3, class_weight="balanced"),
    MondrianForestRegressor(lifetime=2.0),
    MondrianForestDensity(),
    *_transformers(),
    make_pipeline(SimpleImputer(), MondrianForestClassifier()),
], ids=lambda v: type(v).__name__)
def test_html_repr(model):
    html = estimator_html_repr(model)
    assert type(model).__name__ in html
    assert model._repr_html_() == html or "<div" in model._repr_html_()
