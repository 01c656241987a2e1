"""Density estimation with full-cell Mondrian trees and a Pólya-tree Beta prior."""

from mondrian.density.estimator import MondrianForestDensity

__all__ = ["MondrianForestDensity"]
