"""Random partition kernels: random-forest, fast-cluster and Mondrian partitions, O(mN) products,
GP regression and kernel PCA (Davies & Ghahramani, 2014; algorithm reference §11)."""

from mondrian.partition.features import RandomPartitionFeatures
from mondrian.partition.gp import RandomPartitionGPRegressor
from mondrian.partition.partitioners import (
    FastClusterPartitioner,
    MondrianPartitioner,
    RandomForestPartitioner,
)
from mondrian.partition.pca import RandomPartitionKernelPCA

__all__ = [
    "FastClusterPartitioner",
    "MondrianPartitioner",
    "RandomForestPartitioner",
    "RandomPartitionFeatures",
    "RandomPartitionGPRegressor",
    "RandomPartitionKernelPCA",
]
