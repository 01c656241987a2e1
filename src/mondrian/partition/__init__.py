"""Random partition kernels: random-forest, fast-cluster and Mondrian partitions, O(mN) products,
GP regression and kernel PCA (Davies & Ghahramani, 2014; algorithm reference §11)."""

from mondrian.partition.features import RandomPartitionFeatures
from mondrian.partition.partitioners import (
    FastClusterPartitioner,
    MondrianPartitioner,
    RandomForestPartitioner,
)

__all__ = [
    "FastClusterPartitioner",
    "MondrianPartitioner",
    "RandomForestPartitioner",
    "RandomPartitionFeatures",
]
