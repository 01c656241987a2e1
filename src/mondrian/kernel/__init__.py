"""The Mondrian kernel: random features, ridge regression and SGD along the lifetime, and the
Laplace-kernel baselines (random binning, random Fourier features)."""

from mondrian.kernel.laplace import LaplaceRandomFourierFeatures, RandomBinningFeatures
from mondrian.kernel.ridge import MondrianKernelFeatures, MondrianKernelRidge
from mondrian.kernel.sgd import (
    MondrianKernelSGDClassifier,
    MondrianKernelSGDRegressor,
    SGDLifetimePath,
)
from mondrian.path.result import LifetimePath

__all__ = [
    "LaplaceRandomFourierFeatures",
    "LifetimePath",
    "MondrianKernelFeatures",
    "MondrianKernelRidge",
    "MondrianKernelSGDClassifier",
    "MondrianKernelSGDRegressor",
    "RandomBinningFeatures",
    "SGDLifetimePath",
]
