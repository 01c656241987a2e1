"""Validation of the inputs every estimator shares: sample weights, and sparse rows in and out."""

import numpy as np
from scipy import sparse
from sklearn.utils.validation import _check_sample_weight

from mondrian.estimator.targets import MAX_TOTAL_WEIGHT

__all__ = ["check_sample_weight", "weighted_rows", "drop_zero_weights", "SPARSE_CHUNK",
           "dense_blocks", "sparse_output"]


def check_sample_weight(sample_weight, X):
    """Validated sample weights (float64, finite, non-negative, not all zero), or None.

    A weight is a count: 0 leaves its row out, an integer ``k`` stands for ``k`` copies of it.

    Raises
    ------
    ValueError
        For a negative, NaN or infinite weight, a wrong shape, weights that are all zero or
        that sum to more than :data:`~mondrian.estimator.targets.MAX_TOTAL_WEIGHT`.
    """
    if sample_weight is None:
        return None
    weights = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
    if not np.all(np.isfinite(weights)):
        raise ValueError("sample_weight contains NaN or infinity")
    if not np.any(weights > 0):
        raise ValueError(
            "Sample weights must contain at least one non-zero number: a weight of zero leaves "
            "its row out, so all-zero weights leave nothing to learn from"
        )
    with np.errstate(over="ignore"):
        total = float(np.sum(weights))
    if not total <= MAX_TOTAL_WEIGHT:
        raise ValueError(
            "sample_weight sums to more than 2**1000 (about 1.07e301): the sums of counts "
            "the model forms would come too close to the float64 overflow; rescale "
            "sample_weight"
        )
    return weights


def weighted_rows(y, sample_weight):
    """Rows of a batch, counted with their weights (a row of weight ``k`` is ``k`` rows)."""
    return len(y) if sample_weight is None else float(np.sum(sample_weight))


def drop_zero_weights(weights, *arrays):
    """``arrays`` without the rows of weight 0, then the remaining weights (None: unchanged).

    Rows of weight 0 never reach the store, so they do not shape the partition either.
    """
    if weights is None:
        return (*arrays, None)
    keep = weights > 0
    if keep.all():
        return (*arrays, weights)
    return (*(np.ascontiguousarray(a[keep]) for a in arrays), weights[keep])


# Rows of a sparse input densified at a time by the transformers that take sparse rows.
SPARSE_CHUNK = 4096


def dense_blocks(X):
    """The rows of a validated ``X`` as dense C-contiguous float64 blocks: ``[X]`` when it is
    dense, else consecutive blocks of ``SPARSE_CHUNK`` densified rows (the trees and grids
    place dense points; densifying by blocks bounds the memory of a sparse input)."""
    if not sparse.issparse(X):
        return [X]
    return [np.ascontiguousarray(X[i : i + SPARSE_CHUNK].toarray(), dtype=np.float64)
            for i in range(0, X.shape[0], SPARSE_CHUNK)]


def sparse_output(estimator, Z, X):
    """The sparse features ``Z`` of the input ``X`` in the container chosen by
    ``estimator.set_output``.

    scikit-learn refuses sparse data under ``set_output(transform="pandas")``; these
    transformers then return a pandas DataFrame of sparse columns (``pd.SparseDtype``, no
    densification) named by ``get_feature_names_out``, with the index of ``X`` when it is a
    DataFrame. Any other configuration gets ``Z``.
    """
    from sklearn.utils._set_output import _get_output_config

    if _get_output_config("transform", estimator)["dense"] != "pandas":
        return Z
    import pandas as pd

    names = estimator.get_feature_names_out()
    columns = names if len(names) == Z.shape[1] else None  # e.g. a smaller lifetime
    return pd.DataFrame.sparse.from_spmatrix(Z, index=getattr(X, "index", None),
                                             columns=columns)
