"""Test metrics used by more than one benchmark script."""

from __future__ import annotations

import numpy as np


def rmse(y: np.ndarray, prediction: np.ndarray) -> float:
    """Root mean squared error of ``prediction`` against ``y``."""
    return float(np.sqrt(np.mean((y - prediction) ** 2)))


def gaussian_nll(y: np.ndarray, mean: np.ndarray, var: np.ndarray) -> float:
    """Average negative log density of ``y`` under ``N(mean, var)`` (inf if a variance is 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        nll = 0.5 * np.log(2.0 * np.pi * var) + (y - mean) ** 2 / (2.0 * var)
    return float(np.mean(nll)) if np.all(var > 0) else float("inf")
