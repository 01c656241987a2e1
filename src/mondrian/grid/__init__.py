"""The Mondrian grid: ARD Laplace kernel features and ridge regression with learned
per-dimension lifetimes (section 9 of the algorithms notes; ch. 5 of Balog's report)."""

from mondrian.grid.ard import laplace_ard_lifetimes
from mondrian.grid.features import MondrianGridFeatures
from mondrian.grid.path import GridLifetimePath
from mondrian.grid.ridge import MondrianGridRidge

__all__ = ["GridLifetimePath", "MondrianGridFeatures", "MondrianGridRidge", "laplace_ard_lifetimes"]
