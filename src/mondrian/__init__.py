"""Mondrian-process models with a Cython core.

Online Mondrian forests (Lakshminarayanan, Roy & Teh, 2014) as scikit-learn estimators that also
learn from streams, built on one Mondrian tree core shared by every model of the package.
"""

from mondrian.density import MondrianForestDensity
from mondrian.estimator.structure import MondrianTreeStructure
from mondrian.forest import (
    MondrianForestClassifier,
    MondrianForestRegressor,
    MondrianTreeClassifier,
    MondrianTreeRegressor,
)
from mondrian.grid import GridLifetimePath, MondrianGridFeatures, MondrianGridRidge
from mondrian.kernel import (
    LaplaceRandomFourierFeatures,
    MondrianKernelFeatures,
    MondrianKernelRidge,
    MondrianKernelSGDClassifier,
    MondrianKernelSGDRegressor,
    RandomBinningFeatures,
    SGDLifetimePath,
)
from mondrian.merging import merge_forests
from mondrian.partition import (
    RandomPartitionFeatures,
    RandomPartitionGPRegressor,
    RandomPartitionKernelPCA,
)
from mondrian.path.result import LifetimePath

__version__ = "0.1.0"

__all__ = [
    "GridLifetimePath",
    "LaplaceRandomFourierFeatures",
    "LifetimePath",
    "MondrianForestClassifier",
    "MondrianForestDensity",
    "MondrianGridFeatures",
    "MondrianGridRidge",
    "MondrianKernelFeatures",
    "MondrianKernelRidge",
    "MondrianKernelSGDClassifier",
    "MondrianKernelSGDRegressor",
    "SGDLifetimePath",
    "MondrianForestRegressor",
    "MondrianTreeRegressor",
    "MondrianTreeClassifier",
    "MondrianTreeStructure",
    "RandomBinningFeatures",
    "RandomPartitionFeatures",
    "RandomPartitionGPRegressor",
    "RandomPartitionKernelPCA",
    "__version__",
    "merge_forests",
]
