"""Mondrian forests on a ``dask.distributed`` cluster (``pip install "mondrian-process[dask]"``).

Three helpers, each for one way of scaling out (see the "Distributed" page of the docs):

* :func:`fit_tree_parallel`: the forest's trees fitted in parts on the workers, each part on
  the whole data set (sent once to each worker), merged on the client. With the same
  ``random_state`` the result is the forest ``estimator.fit`` gives in one process, tree for
  tree.
* :func:`stream_partial_fit`: a dask collection larger than memory streamed block by block
  through ``partial_fit`` on one worker, at most ``prefetch + 1`` blocks in flight. The model
  stays where it is and the blocks come to it: dask-ml's ``Incremental`` instead sends the
  model to each block, and a Mondrian forest grows with the data it has seen.
* :func:`predict_blocks`: any prediction method applied block-wise to a dask collection with
  the model scattered once to every worker (dask-ml's ``ParallelPostFit`` puts the model in
  the graph of every call).

:func:`feature_range` computes a feature map to fix up front (one distributed pass), so that
forests fitted on different shards can be merged (:func:`mondrian.merge_forests`).
"""

try:
    import dask
    import dask.array as da
    import distributed
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "mondrian.dask needs dask and dask.distributed; install them with "
        "pip install 'mondrian-process[dask]' (or pip install 'dask[distributed]')"
    ) from exc

import copy
import numbers
import pickle
import uuid

import numpy as np
from sklearn.base import clone

from mondrian.merging import _merge, forest_parts

__all__ = ["feature_range", "fit_tree_parallel", "predict_blocks", "stream_partial_fit"]


def _client(client):
    if client is not None:
        return client
    try:
        return distributed.get_client()
    except ValueError:
        raise ValueError(
            "no dask.distributed client: pass client=, or create one first "
            "(distributed.Client(...))"
        ) from None


def _is_dask(obj):
    return dask.is_dask_collection(obj)


def _is_frame(data):
    """A dask dataframe or series (dask arrays also have ``npartitions``)."""
    return not isinstance(data, da.Array) and hasattr(data, "npartitions")


def _row_blocks(data, name):
    """The row blocks of a dask array, dataframe or series, as a list of delayed objects."""
    if _is_frame(data):  # one block per partition
        return list(data.to_delayed())
    if isinstance(data, da.Array):
        if data.ndim == 2 and data.numblocks[1] != 1:
            data = data.rechunk({1: -1})
        if data.ndim not in (1, 2):
            raise ValueError(f"{name} must be 1-D or 2-D, got {data.ndim} dimensions")
        return list(data.to_delayed().ravel())
    raise TypeError(f"{name} must be a dask array, dataframe or series, not "
                    f"{type(data).__name__}")


def _aligned(X, y):
    """Row blocks of ``X`` and ``y`` (``None`` blocks when ``y`` is None), checked to match."""
    if isinstance(X, da.Array) and isinstance(y, da.Array) and X.chunks[0] != y.chunks[0]:
        y = y.rechunk({0: X.chunks[0]})
    x_blocks = _row_blocks(X, "X")
    if y is None:
        return x_blocks, [None] * len(x_blocks)
    y_blocks = _row_blocks(y, "y")
    if len(y_blocks) != len(x_blocks):
        raise ValueError(f"X has {len(x_blocks)} row blocks but y has {len(y_blocks)}: give "
                         "them the same row chunks (or partitions)")
    return x_blocks, y_blocks


def _concat(blocks):
    if hasattr(blocks[0], "iloc"):
        import pandas as pd

        return pd.concat(blocks)
    return np.concatenate(blocks)


def feature_range(X, *, client=None):
    """Per-feature ``(min, max)`` of a dask array or dataframe, in one distributed pass.

    Pass the result as ``feature_scaling=`` to forests fitted on different shards so that they
    share one feature map and can be merged.

    Parameters
    ----------
    X : dask array or dataframe of shape (n_samples, n_features), or a NumPy array
    client : distributed.Client, optional
        Default: the current client (or dask's default scheduler when there is none).

    Returns
    -------
    (lower, upper) : tuple of ndarray of shape (n_features,)

    Examples
    --------
    >>> import dask.array as da
    >>> from mondrian.dask import feature_range
    >>> X = da.arange(12.0, chunks=4).reshape(6, 2)
    >>> feature_range(X)
    (array([0., 1.]), array([10., 11.]))
    """
    if not _is_dask(X):
        from mondrian.merging import feature_range as local_range

        return local_range(X)
    if _is_frame(X):
        X = X.to_dask_array(lengths=False)
    X = X.astype(np.float64)
    lower, upper, finite = X.min(axis=0), X.max(axis=0), da.isfinite(X).all()
    if client is None:
        try:
            client = distributed.get_client()
        except ValueError:
            client = None
    if client is None:
        lower, upper, finite = dask.compute(lower, upper, finite)
    else:
        lower, upper, finite = client.compute([lower, upper, finite], sync=True)
    if not finite:
        raise ValueError("X contains NaN or infinity")
    return np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)


def _fit_part(part, X, y):
    # The part travels pickled: dask tokenises a scikit-learn estimator by its parameters
    # alone, and the parts differ only in their first tree (not a parameter), so two parts
    # passed as objects could be taken for one. The fitted part returns pickled too: dask
    # moves bytes faster than it serialises a large model (2-4x on 80-370 MB sub-forests).
    part = pickle.loads(part)
    fitted = part.fit(X) if y is None else part.fit(X, y)
    return pickle.dumps(fitted, protocol=pickle.HIGHEST_PROTOCOL)


def fit_tree_parallel(estimator, X, y=None, *, n_parts=None, client=None, progress=False):
    """Fit a forest tree-parallel on a dask cluster: parts of it on the workers, merged.

    The data are gathered into one block on a worker and sent once to every worker that fits
    a part; part ``p`` (:func:`mondrian.merging.forest_parts`) holds a consecutive range
    of trees with the seeds they have in the whole forest, so the merged result is exactly the
    forest ``estimator.fit(X, y)`` gives in one process (with an integer ``random_state``; a
    ``None`` one is drawn once for all the parts). A failed or lost part (a worker killed) is
    retried by dask or raises: the result never lacks trees.

    Parameters
    ----------
    estimator : MondrianForestClassifier, MondrianForestRegressor or MondrianForestDensity
        Unfitted (its parameters are used; it is not changed).
    X : dask array or dataframe of shape (n_samples, n_features), or a NumPy array / DataFrame
        Every part holds all of it: it must fit in one worker's memory.
    y : dask array or series of shape (n_samples,), array-like, or None (density)
    n_parts : int, optional
        Number of parts (default: the number of worker threads).
    client : distributed.Client, optional
        Default: the current client.
    progress : bool, default=False
        Show dask's progress bar of the part fits (``distributed.progress``).

    Returns
    -------
    estimator
        A new fitted estimator of the same class.
    """
    client = _client(client)
    workers = sorted(client.scheduler_info()["workers"])
    if not workers:
        raise ValueError("the dask cluster has no workers")
    if n_parts is None:
        n_parts = sum(w["nthreads"] for w in client.scheduler_info()["workers"].values())
    if not isinstance(n_parts, numbers.Integral) or n_parts < 1:
        raise ValueError(f"n_parts must be a positive integer, got {n_parts!r}")
    parts = forest_parts(estimator, int(n_parts))
    data = []
    for value, name in ((X, "X"), (y, "y")):
        if value is None:
            data.append(None)
        elif _is_dask(value):
            blocks = _row_blocks(value, name)
            data.append(client.compute(dask.delayed(_concat)(blocks)))
        else:
            # A copy on every worker: a worker lost mid-fit does not lose the data.
            data.append(client.scatter(value, hash=False, broadcast=True))
    X_future, y_future = data
    token = uuid.uuid4().hex[:8]
    futures = [
        client.submit(_fit_part, pickle.dumps(part), X_future, y_future, pure=False,
                      key=f"mondrian-part-{token}-{k}", workers=[workers[k % len(workers)]],
                      allow_other_workers=True)
        for k, part in enumerate(parts)
    ]
    if progress:
        distributed.progress(futures)
    try:
        distributed.wait(futures)
    except Exception:  # some part cancelled (its input lost): report the first error below
        pass
    # A failed part's own error (KilledWorker...) first, whatever its place: parts whose
    # input went with the failed one are only cancelled.
    for future in futures:
        if future.status == "error":
            future.result()
    for k, future in enumerate(futures):
        if future.status != "finished":
            raise RuntimeError(f"part {k} of the forest was {future.status}: no forest returned")
    fitted = [pickle.loads(blob) for blob in client.gather(futures)]
    merged = _merge(fitted, copy_parts=False)  # the parts are fresh copies already
    if merged.n_estimators != estimator.n_estimators:  # never return a partial forest
        raise RuntimeError(f"the parts hold {merged.n_estimators} trees, not "
                           f"{estimator.n_estimators}")
    return merged


def _partial_fit_block(model, X, y, kwargs):
    # In place: the model is the previous task's result in this worker's memory (copying it
    # per block would cost its whole size every block).
    if y is None:
        return model.partial_fit(X, **kwargs)
    return model.partial_fit(X, y, **kwargs)


def _start(model):
    return model


def stream_partial_fit(estimator, X, y=None, *, classes=None, client=None, prefetch=2,
                       on_block=None, return_future=False):
    """Stream a dask collection through ``partial_fit``, block by block, on one worker.

    Blocks are computed where dask chooses (e.g. read or generated on another worker) and
    sent to the worker holding the model, which learns from them in order; at most
    ``prefetch + 1`` blocks exist at a time, so the memory is the model plus a few blocks. The
    result equals the loop ``for block: estimator.partial_fit(block)`` run locally (the same
    calls in the same order). The model never moves between blocks: unlike dask-ml's
    ``Incremental`` (which sends the model to each block), the cost of a block does not grow
    with the model. A Mondrian forest stores every point it has learnt: its own memory grows
    linearly with the stream (``n_samples_seen_ * (n_features + width) * 8`` bytes for the
    store, plus the trees).

    Parameters
    ----------
    estimator : estimator with ``partial_fit``
        Fitted or not; copied (``sklearn.base.clone`` when unfitted), never changed.
    X : dask array or dataframe of shape (n_samples, n_features)
    y : dask array or series of shape (n_samples,), or None (density)
    classes : array-like, optional
        Passed to every ``partial_fit`` call of a classifier.
    client : distributed.Client, optional
    prefetch : int, default=2
        Blocks computed ahead of the one being learnt.
    on_block : callable, optional
        Called as ``on_block(i, n_blocks)`` when block ``i`` has been learnt (progress).
    return_future : bool, default=False
        Return the ``distributed.Future`` of the model (it stays on its worker) instead of
        the model.

    Returns
    -------
    estimator or distributed.Future
    """
    client = _client(client)
    if not isinstance(prefetch, numbers.Integral) or prefetch < 0:
        raise ValueError(f"prefetch must be a non-negative integer, got {prefetch!r}")
    x_blocks, y_blocks = _aligned(X, y)
    kwargs = {} if classes is None else {"classes": np.asarray(classes)}
    fitted = hasattr(estimator, "n_features_in_")
    # A copy: an in-process cluster (processes=False) need not serialise the argument.
    start = copy.deepcopy(estimator) if fitted else clone(estimator)
    token = uuid.uuid4().hex[:8]
    model = client.submit(_start, start, pure=False, key=f"mondrian-stream-{token}-start")
    distributed.wait(model)
    worker = sorted(client.who_has(model)[model.key])
    window = []
    n_blocks = len(x_blocks)
    for i, (xd, yd) in enumerate(zip(x_blocks, y_blocks, strict=True)):
        xf = client.compute(xd)
        yf = None if yd is None else client.compute(yd)
        model = client.submit(_partial_fit_block, model, xf, yf, kwargs, pure=False,
                              key=f"mondrian-stream-{token}-{i}", workers=worker,
                              allow_other_workers=True)
        window.append((i, model))
        del xf, yf
        while len(window) > prefetch:
            done_index, done = window.pop(0)
            distributed.wait(done)
            if done.status == "error":
                done.result()  # raises the block's error
            if on_block is not None:
                on_block(done_index, n_blocks)
    for done_index, done in window:
        distributed.wait(done)
        if on_block is not None and done.status == "finished":
            on_block(done_index, n_blocks)
    if return_future:
        return model
    return model.result()


def _apply(block, model, method, kwargs):
    return getattr(model, method)(block, **kwargs)


def predict_blocks(model, X, method="predict", *, client=None, **kwargs):
    """Apply ``model.<method>`` to every row block of a dask collection (lazy).

    The model is scattered once to every worker; each block's task reads it from its worker's
    memory.

    Parameters
    ----------
    model : fitted estimator
    X : dask array or dataframe of shape (n_samples, n_features)
    method : str, default="predict"
        ``predict``, ``predict_proba``, ``score_samples``, ``transform``...; it must return one
        array with one row per sample.
    client : distributed.Client, optional
    **kwargs
        Passed to the method.

    Returns
    -------
    dask.array.Array
        Row chunks of ``X``; call ``.compute()`` (or ``client.compute``) to get the values.
    """
    client = _client(client)
    if not callable(getattr(model, method, None)):
        raise ValueError(f"{type(model).__name__} has no method {method!r}")
    if _is_frame(X):
        X = X.to_dask_array(lengths=True)
    if not isinstance(X, da.Array) or X.ndim != 2:
        raise TypeError("X must be a 2-D dask array or a dask dataframe")
    X = X.rechunk({1: -1})
    probe = np.asarray(getattr(model, method)(np.zeros((1, X.shape[1])), **kwargs))
    [model_future] = client.scatter([model], broadcast=True, hash=False)
    if probe.ndim == 1:
        return X.map_blocks(_apply, model_future, method, kwargs, drop_axis=1,
                            dtype=probe.dtype, meta=np.empty((0,), dtype=probe.dtype))
    return X.map_blocks(_apply, model_future, method, kwargs,
                        chunks=(X.chunks[0], probe.shape[1:]), dtype=probe.dtype,
                        meta=np.empty((0,) * probe.ndim, dtype=probe.dtype))
