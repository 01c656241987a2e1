"""Mondrian forests for classification (HNSP/IKN) and regression (hierarchical Gaussian)."""

from mondrian.forest.classifier import MondrianForestClassifier, MondrianTreeClassifier
from mondrian.forest.regressor import MondrianForestRegressor, MondrianTreeRegressor

__all__ = [
    "MondrianForestClassifier",
    "MondrianForestRegressor",
    "MondrianTreeClassifier",
    "MondrianTreeRegressor",
]
