"""mondrian.dask on a LocalCluster of two worker processes (skipped when dask is absent)."""

import os
import pickle

import numpy as np
import pytest

dask = pytest.importorskip(
    "dask", reason="dask is not installed: pip install 'mondrian-process[dask]' to run these tests")
distributed = pytest.importorskip(
    "distributed", reason="dask.distributed is not installed: pip install 'mondrian-process[dask]'")

import dask.array as da  # noqa: E402
import joblib  # noqa: E402

from mondrian import (  # noqa: E402
    MondrianForestClassifier,
    MondrianForestDensity,
    MondrianForestRegressor,
    merge_forests,
)
from mondrian.dask import (  # noqa: E402
    feature_range,
    fit_tree_parallel,
    predict_blocks,
    stream_partial_fit,
)

pytestmark = [pytest.mark.distributed, pytest.mark.exact]

RNG = np.random.default_rng(3)
X = RNG.normal(size=(400, 4))
Y = (X[:, 0] + X[:, 1] > 0).astype(int) + 2 * (X[:, 2] > 1)
Y_REG = X[:, 0] * X[:, 1] + 0.1 * RNG.normal(size=400)
X_TEST = RNG.normal(size=(50, 4))
CHUNK = 100


@pytest.fixture(scope="module")
def client():
    # A task that was running on two dying workers fails (KilledWorker) instead of 4.
    with dask.config.set({"distributed.scheduler.allowed-failures": 1,
                          "distributed.worker.daemon": False}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
        client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def _dask(values):
    return da.from_array(values, chunks=(CHUNK,) + values.shape[1:])


@pytest.mark.parametrize("kind", ["classifier", "regressor", "density"])
def test_tree_parallel_fit_on_the_cluster_equals_the_local_fit(client, kind):
    model, y, method = {
        "classifier": (MondrianForestClassifier(6, random_state=5), Y, "predict_proba"),
        "regressor": (MondrianForestRegressor(6, random_state=5), Y_REG, "predict"),
        "density": (MondrianForestDensity(6, lifetime=3.0, concentration=0.5, random_state=5),
                    None, "score_samples"),
    }[kind]
    fitted = fit_tree_parallel(model, _dask(X), None if y is None else _dask(y), client=client)
    local = model.fit(X) if y is None else model.fit(X, y)
    assert fitted is not local and fitted.n_estimators == 6
    np.testing.assert_array_equal(fitted._seeds, local._seeds)
    np.testing.assert_array_equal(getattr(fitted, method)(X_TEST),
                                  getattr(local, method)(X_TEST))


def _fit_shard(lo, hi, seed, X_, y_):
    # Shards on different rows: the fixed map needs fixed feature weights too.
    return MondrianForestClassifier(4, random_state=seed, feature_scaling=(lo, hi),
                                    feature_weights=None).fit(X_, y_)


def test_shards_fitted_on_workers_merge_to_the_weighted_average(client):
    Xd = _dask(X)
    lo, hi = feature_range(Xd, client=client)
    np.testing.assert_array_equal(lo, X.min(axis=0))
    np.testing.assert_array_equal(hi, X.max(axis=0))
    shards = [client.submit(_fit_shard, lo, hi, seed, X[k::2], Y[k::2])
              for k, seed in enumerate((1, 2))]
    parts = client.gather(shards)
    merged = merge_forests(parts)
    expected = (parts[0].predict_proba(X_TEST) + parts[1].predict_proba(X_TEST)) / 2
    np.testing.assert_allclose(merged.predict_proba(X_TEST), expected, rtol=1e-12)
    # Without the fixed map the shards' min-max maps differ: merging is refused.
    free = client.gather([client.submit(MondrianForestClassifier(4, random_state=s).fit,
                                        X[k::2], Y[k::2]) for k, s in enumerate((1, 2))])
    with pytest.raises(ValueError, match="different feature maps"):
        merge_forests(free)


def _learn_more(model, X_, y_):
    return model.partial_fit(X_, y_)


def test_a_model_round_trips_to_a_worker_and_keeps_learning_identically(client):
    model = MondrianForestClassifier(5, random_state=2).fit(X[:200], Y[:200])
    remote = client.submit(_learn_more, model, X[200:], Y[200:]).result()
    model.partial_fit(X[200:], Y[200:])
    np.testing.assert_array_equal(remote.predict_proba(X_TEST), model.predict_proba(X_TEST))
    assert pickle.dumps(remote._ensemble.seeds) == pickle.dumps(model._ensemble.seeds)


def test_streaming_equals_the_local_partial_fit_loop_and_predicts_blockwise(client):
    estimator = MondrianForestClassifier(4, random_state=9)
    seen = []
    streamed = stream_partial_fit(estimator, _dask(X), _dask(Y), classes=[0, 1, 2, 3],
                                  client=client, prefetch=1,
                                  on_block=lambda i, n: seen.append((i, n)))
    assert not hasattr(estimator, "classes_")  # the input is not changed
    local = MondrianForestClassifier(4, random_state=9)
    for start in range(0, len(X), CHUNK):
        local.partial_fit(X[start:start + CHUNK], Y[start:start + CHUNK], classes=[0, 1, 2, 3])
    assert seen == [(i, 4) for i in range(4)]
    np.testing.assert_array_equal(streamed.predict_proba(X_TEST), local.predict_proba(X_TEST))
    proba = predict_blocks(local, _dask(X_TEST), "predict_proba", client=client)
    assert proba.chunks == ((50,), (4,))
    np.testing.assert_array_equal(proba.compute(), local.predict_proba(X_TEST))
    labels = predict_blocks(local, da.from_array(X, chunks=(150, 2)), client=client)
    np.testing.assert_array_equal(labels.compute(), local.predict(X))


def test_streaming_a_failing_block_raises(client):
    bad = X.copy()
    bad[250, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        stream_partial_fit(MondrianForestClassifier(2, random_state=0), _dask(bad), _dask(Y),
                           client=client)


def test_outer_joblib_dask_backend_gives_the_same_trees(client):
    plain = MondrianForestClassifier(8, n_jobs=2, random_state=4).fit(X, Y)
    with joblib.parallel_config(backend="dask"):
        under_dask = MondrianForestClassifier(8, n_jobs=2, random_state=4).fit(X, Y)
    for a, b in zip(plain._trees, under_dask._trees, strict=True):
        assert a.nodes_array.tobytes() == b.nodes_array.tobytes()
        np.testing.assert_array_equal(a.value_array, b.value_array)


class _CrashOnce(MondrianForestClassifier):
    """Kills its worker process on the first fit of the part holding tree 0 (a marker file
    remembers), or on every fit of it; the test sets the folder and the mode in the
    scheduler's metadata."""

    def fit(self, X, y):
        marker_dir, always = distributed.get_client().get_metadata("crash")
        marker = os.path.join(marker_dir, f"part-{self._first_tree}")
        if self._first_tree == 0 and (always or not os.path.exists(marker)):
            open(marker, "w").close()
            os._exit(1)
        return super().fit(X, y)


def test_a_worker_killed_mid_fit_retries_the_part(client, tmp_path):
    client.wait_for_workers(2, timeout=60)
    client.set_metadata("crash", [str(tmp_path), False])
    fitted = fit_tree_parallel(_CrashOnce(6, random_state=1), _dask(X), _dask(Y), n_parts=2,
                               client=client)
    assert os.listdir(tmp_path) == ["part-0"]  # the part did crash its first worker
    local = MondrianForestClassifier(6, random_state=1).fit(X, Y)
    assert fitted.n_estimators == 6
    np.testing.assert_array_equal(fitted.predict_proba(X_TEST), local.predict_proba(X_TEST))


@pytest.mark.slow
def test_a_part_that_keeps_killing_workers_raises(client, tmp_path):
    client.wait_for_workers(2, timeout=60)
    client.set_metadata("crash", [str(tmp_path), True])
    with pytest.raises(distributed.KilledWorker):
        fit_tree_parallel(_CrashOnce(4, random_state=1), X, Y, n_parts=2, client=client)
    client.wait_for_workers(2, timeout=60)
