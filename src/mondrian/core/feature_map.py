"""The fixed feature map applied before the Mondrian process: min-max, frozen after a warm-up."""

import numpy as np

__all__ = ["FeatureScaler", "MAX_SCALED", "WARM_UP"]

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
    * **Frozen.** At the end of the warm-up every feature's map is fixed for good, so online
      learning is exact from then on. A feature that held a single value ``c`` throughout the
      warm-up has no observed range; its map is offset ``c`` and scale ``|c|`` (1 when ``c``
      is 0): the only unit the data gave is the magnitude of its value, so a later change by a
      fraction ``f`` of it moves the point by ``f`` in the trees' space (all stored values are
      0 under any scale, so no cut is affected). Freezing the scale at the first later change
      instead would let a tiny blip (1e-300) fix a scale that rejects every normal value after
      it. Such a feature is weighted by its magnitude; standardise it beforehand if its later
      variation has another natural unit.

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

    def _next_map(self, X):
        """The map after seeing ``X`` (not committed), and whether stored points move."""
        n_features = X.shape[1]
        if not self.enabled:
            return np.zeros(n_features), np.ones(n_features), np.ones(n_features, bool), False
        if self.n_seen < self.warm_up:
            seen = X if self.originals is None else np.vstack([self.originals, X])
            offset = seen.min(axis=0).astype(np.float64)
            span = seen.max(axis=0) - offset
            done = self.n_seen + len(X) >= self.warm_up
            # Zero-range features: scale 1 while warming up, |value| (1 for 0) once frozen.
            magnitude = np.abs(offset)
            flat = np.where(done & (magnitude >= np.finfo(np.float64).tiny), magnitude, 1.0)
            scale = np.where(span > 0, span, flat)
            frozen = np.full(n_features, done)
            # Stored values of zero-range features are 0 under any scale: they never move.
            varied = span > 0
            moved = self.n_seen > 0 and not (
                np.array_equal(offset, self.offset)
                and np.array_equal(scale[varied], self.scale[varied]))
            return offset, scale, frozen, moved
        offset, scale, frozen = self.offset, self.scale.copy(), self.frozen.copy()
        todo = ~frozen
        if todo.any():
            # Only in models pickled before every feature froze at the end of the warm-up:
            # unfrozen features have held the single value `offset` so far.
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
