"""The fixed feature map applied before the Mondrian process: min-max, frozen after a warm-up."""

import numpy as np

__all__ = ["FeatureScaler", "MAX_SCALED", "QuantileMap", "WARM_UP", "check_feature_range",
           "check_weights"]

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

    * **Weights.** The scaled features are then multiplied by fixed weights ``w_d >= 0``
      (``feature_weights``): a Mondrian process of lifetime λ on ``w_d x_d`` cuts dimension
      ``d`` at rate ``λ w_d`` per unit of its scaled extent, and never cuts a dimension of
      weight 0. A fixed map of each feature keeps every property of the process (projectivity,
      online = batch in law, pruning, lifetime paths). ``None`` means no multiplication (the
      same as weights 1).

    Multiplying a feature by a constant does not change the fitted model.

    Parameters
    ----------
    enabled : bool
        With ``False`` the min-max part is the identity (weights still apply).
    warm_up : int, default=64
        Number of points over which the map may still adapt.
    weights : array-like of shape (n_features,), default=None
        Non-negative finite weights applied after the min-max map.
    """

    weights = None  # (maps pickled before the weights existed have none)
    knots = None

    def __init__(self, enabled, warm_up=WARM_UP, weights=None, knots=None):
        self.enabled = enabled
        self.warm_up = warm_up if enabled else 0
        self.offset = None
        self.scale = None
        self.frozen = None
        self.n_seen = 0
        self.originals = None  # points seen during the warm-up, in original units
        self.weights = None if weights is None else check_weights(weights)
        self.knots = knots  # per-feature quantile map, or None (see QuantileMap)

    @classmethod
    def fixed(cls, lower, upper, weights=None):
        """A map fixed up front: ``(x - lower) / (upper - lower)`` (times ``weights`` if given),
        never adapted.

        Features with ``upper == lower`` get scale 1. Models fitted anywhere under the same
        fixed map can be merged (see :func:`mondrian.merge_forests`); points outside
        ``[lower, upper]`` are valid (their scaled values leave ``[0, 1]``).
        """
        lower, upper = check_feature_range((lower, upper), len(np.atleast_1d(lower)))
        out = cls(True, warm_up=0, weights=weights)
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
            seen = self._premap(seen)
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
        if self.frozen.all():
            # The usual case after the warm-up: the map is fixed (the caller only reassigns
            # these arrays, never writes into them, so they need no copies).
            return self.offset, self.scale, self.frozen, False
        offset, scale, frozen = self.offset, self.scale.copy(), self.frozen.copy()
        todo = ~frozen
        if todo.any():
            # Only in models pickled before every feature froze at the end of the warm-up:
            # unfrozen features have held the single value `offset` so far.
            X = self._premap(X)
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
        self._scaled(self._premap(X), offset, scale, False, self.weights)
        if moved:
            self._scaled(self._premap(self.originals), offset, scale, False, self.weights)

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
        return self._scaled(self._premap(X), self.offset, self.scale, clip, self.weights)

    def _premap(self, X):
        """The per-feature quantile map (before the min-max map), when there is one."""
        return X if self.knots is None else self.knots.forward(X)

    def set_weights(self, weights):
        """Replace the weights (the caller re-transforms the stored points and re-samples)."""
        self.weights = None if weights is None else check_weights(weights, len(self.offset))

    @staticmethod
    def _scaled(X, offset, scale, clip, weights=None):
        with np.errstate(over="ignore"):
            out = np.subtract(X, offset, dtype=np.float64)
            out /= scale
            if weights is not None:
                out *= weights
        if clip:
            np.clip(out, -MAX_SCALED, MAX_SCALED, out=out)
        elif not np.all(np.abs(out) < MAX_SCALED):
            raise ValueError(
                "X holds values too large relative to the feature ranges seen in training "
                f"(|scaled value| must stay below {MAX_SCALED:g})"
            )
        return np.ascontiguousarray(out)

    def inverse_thresholds(self, values, features):
        """Map scaled values along ``features`` back to original units (a feature of weight 0
        holds only 0, which maps back to its offset)."""
        values = np.asarray(values, dtype=np.float64)
        if self.weights is not None:
            w = self.weights[features]
            values = np.divide(values, w, out=np.zeros(np.broadcast(values, w).shape), where=w > 0)
        out = values * self.scale[features] + self.offset[features]
        if self.knots is not None:
            out = self.knots.backward(out, features)
        return out


class QuantileMap:
    """A fixed increasing map per feature: the empirical CDF of a reference sample, piecewise
    linear between its (at most ``n_knots``) quantiles, extended linearly beyond them with the
    slope of the whole range. Skewed features get an even spread of cut positions; as a fixed
    monotone map it keeps every Mondrian property.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Reference sample (original units).
    n_knots : int, default=256
    """

    def __init__(self, X, n_knots=256):
        levels = np.linspace(0.0, 1.0, min(n_knots, len(X)))
        knots = np.quantile(X, levels, axis=0)
        self.xs, self.ls, self.slopes = [], [], []
        for d in range(X.shape[1]):
            xs, inverse = np.unique(knots[:, d], return_inverse=True)
            ls = np.bincount(inverse, levels) / np.bincount(inverse)
            span = xs[-1] - xs[0]
            self.xs.append(xs)
            self.ls.append(ls)
            self.slopes.append((ls[-1] - ls[0]) / span if span > 0 else 1.0)

    def forward(self, X):
        out = np.empty(X.shape, dtype=np.float64)
        for d, (xs, ls, slope) in enumerate(zip(self.xs, self.ls, self.slopes, strict=True)):
            x = X[:, d]
            u = np.interp(x, xs, ls)
            with np.errstate(over="ignore", invalid="ignore"):
                u = np.where(x < xs[0], ls[0] + (x - xs[0]) * slope, u)
                u = np.where(x > xs[-1], ls[-1] + (x - xs[-1]) * slope, u)
            out[:, d] = u
        return out

    def backward(self, values, features):
        values = np.array(values, dtype=np.float64)
        features = np.broadcast_to(features, values.shape)
        out = np.empty_like(values)
        for d in np.unique(features):
            xs, ls, slope = self.xs[d], self.ls[d], self.slopes[d]
            mask = features == d
            u = values[mask]
            x = np.interp(u, ls, xs)
            x = np.where(u < ls[0], xs[0] + (u - ls[0]) / slope, x)
            x = np.where(u > ls[-1], xs[-1] + (u - ls[-1]) / slope, x)
            out[mask] = x
        return out


def check_weights(weights, n_features=None):
    """``weights`` as a float64 array of non-negative finite numbers (ValueError otherwise)."""
    try:
        w = np.array(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"feature_weights must be None, 'auto' or an array of non-negative numbers, got "
            f"{weights!r}") from None
    if w.ndim != 1 or w.size == 0:
        raise ValueError(f"feature_weights must be a 1-d array, got shape {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("feature_weights must hold finite non-negative numbers")
    if n_features is not None and w.size != n_features:
        raise ValueError(f"feature_weights has {w.size} entries but X has {n_features} features")
    if np.all(w == 0):
        raise ValueError("feature_weights are all 0: no dimension could ever be cut")
    return w


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
