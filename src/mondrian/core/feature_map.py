"""The fixed feature map applied before the Mondrian process: min-max, frozen after a warm-up."""

import numpy as np

__all__ = ["FeatureScaler", "MAX_SCALED", "WARM_UP", "check_feature_range"]

# Points over which the min-max map may still adapt (see FeatureScaler).
WARM_UP = 64

# Largest magnitude allowed in the scaled feature space: sums of side lengths and distances over
# many features must stay finite.
MAX_SCALED = 1e150


class FeatureScaler:
    """Per-feature affine map ``(x - offset) / scale`` in front of the Mondrian trees.

    The Mondrian process is not scale invariant, so every feature is divided by its range.

    * **Warm-up.** While fewer than ``warm_up`` points have been seen, the map is the min-max
      map of all the points so far, and :meth:`update` reports when it changed: the trees are
      then re-sampled from scratch on the stored points (cheap: they are few), which has the
      same law as growing them online under the new map.
    * **Frozen.** Afterwards a feature's map never changes once its range is positive. A
      feature that has held a single value keeps the offset at that value and scale 1 (all its
      stored values are 0, so no cut uses it); its scale is fixed the first time it varies,
      which alters nothing already sampled. Online learning is therefore exact from then on.

    Multiplying a feature by a constant does not change the fitted model.

    Parameters
    ----------
    enabled : bool
        With ``False`` the map is the identity.
    warm_up : int, default=64
        Number of points over which the map may still adapt.
    """

    def __init__(self, enabled, warm_up=WARM_UP):
        self.enabled = enabled
        self.warm_up = warm_up if enabled else 0
        self.offset = None
        self.scale = None
        self.frozen = None
        self.n_seen = 0
        self.originals = None  # points seen during the warm-up, in original units

    @classmethod
    def fixed(cls, lower, upper):
        """A map fixed up front: ``(x - lower) / (upper - lower)``, never adapted.

        Features with ``upper == lower`` get scale 1. Models fitted anywhere under the same
        fixed map can be merged (see :func:`mondrian.merge_forests`); points outside
        ``[lower, upper]`` are valid (their scaled values leave ``[0, 1]``).
        """
        lower, upper = check_feature_range((lower, upper), len(np.atleast_1d(lower)))
        out = cls(True, warm_up=0)
        span = upper - lower
        out.offset = lower
        out.scale = np.where(span > 0, span, 1.0)
        out.frozen = np.ones(len(lower), dtype=bool)
        return out

    def _next_map(self, X):
        """The map after seeing ``X`` (not committed), and whether stored points move."""
        n_features = X.shape[1]
        if not self.enabled:
            return np.zeros(n_features), np.ones(n_features), np.ones(n_features, bool), False
        if self.n_seen < self.warm_up:
            seen = X if self.originals is None else np.vstack([self.originals, X])
            offset = seen.min(axis=0).astype(np.float64)
            span = seen.max(axis=0) - offset
            scale = np.where(span > 0, span, 1.0)
            frozen = (span > 0) if self.n_seen + len(X) >= self.warm_up else np.zeros(
                n_features, bool)
            moved = self.n_seen > 0 and not (
                np.array_equal(offset, self.offset) and np.array_equal(scale, self.scale))
            return offset, scale, frozen, moved
        offset, scale, frozen = self.offset, self.scale.copy(), self.frozen.copy()
        todo = ~frozen
        if todo.any():
            # Unfrozen features have held the single value `offset` so far.
            low = np.minimum(X[:, todo].min(axis=0), offset[todo])
            high = np.maximum(X[:, todo].max(axis=0), offset[todo])
            span = high - low
            positive = span > 0
            features = np.flatnonzero(todo)[positive]
            scale[features] = span[positive]
            frozen[features] = True
        return offset, scale, frozen, False

    def check(self, X):
        """Raise a ``ValueError`` if ``X`` could not be stored; change nothing."""
        offset, scale, _, moved = self._next_map(X)
        self._scaled(X, offset, scale, clip=False)
        if moved:
            self._scaled(self.originals, offset, scale, clip=False)

    def update(self, X):
        """Take the new points ``X`` (original units) into account before storing them.

        Returns
        -------
        ndarray or None
            When the map of the points already stored changed (during the warm-up): every point
            seen so far, ``X`` included, in original units. The caller must re-transform the
            stored points from them and re-sample the trees.
        """
        self.check(X)
        offset, scale, frozen, moved = self._next_map(X)
        seen = None
        if self.n_seen < self.warm_up:
            seen = X.copy() if self.originals is None else np.vstack([self.originals, X])
        self.offset, self.scale, self.frozen = offset, scale, frozen
        self.n_seen += len(X)
        self.originals = seen if self.n_seen < self.warm_up else None
        return seen if moved else None

    def transform(self, X, clip=False):
        """Map ``X`` (original units) to the scaled space, as a C-contiguous float64 array.

        Scaled values so large that box arithmetic (sums of side lengths) could overflow, e.g.
        after a feature whose observed range was subnormal, raise a ``ValueError``, or with
        ``clip=True`` (prediction) are clipped: such a point is as far from every box either way.
        """
        return self._scaled(X, self.offset, self.scale, clip)

    @staticmethod
    def _scaled(X, offset, scale, clip):
        with np.errstate(over="ignore"):
            out = np.subtract(X, offset, dtype=np.float64)
            out /= scale
        if clip:
            np.clip(out, -MAX_SCALED, MAX_SCALED, out=out)
        elif not np.all(np.abs(out) < MAX_SCALED):
            raise ValueError(
                "X holds values too large relative to the feature ranges seen in training "
                f"(|scaled value| must stay below {MAX_SCALED:g})"
            )
        return np.ascontiguousarray(out)

    def inverse_thresholds(self, values, features):
        """Map scaled values along ``features`` back to original units."""
        return values * self.scale[features] + self.offset[features]


def check_feature_range(feature_range, n_features):
    """Validate a fixed feature range ``(lower, upper)``; return it as two float64 arrays.

    Raises a ``ValueError`` naming the problem (shape, non-finite values, ``upper < lower``).
    """
    try:
        lower, upper = feature_range
    except (TypeError, ValueError):
        raise ValueError(
            "feature_scaling must be 'minmax', None or a pair (lower, upper) of arrays of "
            f"shape (n_features,); got {feature_range!r}"
        ) from None
    lower = np.array(lower, dtype=np.float64, ndmin=1)
    upper = np.array(upper, dtype=np.float64, ndmin=1)
    if lower.shape != (n_features,) or upper.shape != (n_features,):
        raise ValueError(
            f"the feature range (lower, upper) must hold two arrays of shape ({n_features},); "
            f"got shapes {lower.shape} and {upper.shape}"
        )
    if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
        raise ValueError("the feature range (lower, upper) must be finite")
    if np.any(upper < lower):
        raise ValueError("the feature range has upper < lower for features "
                         f"{np.flatnonzero(upper < lower).tolist()}")
    return lower, upper
