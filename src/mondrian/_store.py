"""Forest-wide storage of training points and the min-max feature map."""

import numpy as np

__all__ = ["DataStore", "FeatureScaler"]

# Points over which the min-max map may still adapt (see FeatureScaler).
WARM_UP = 64

# Largest magnitude allowed in the scaled feature space: sums of side lengths and distances over
# many features must stay finite.
MAX_SCALED = 1e150


class DataStore:
    """Training points kept once per forest, shared by all of its trees.

    Trees refer to stored points by index. Paused leaves need their points to regrow, so the
    store keeps every point it is given: its memory is ``n_samples * (n_features + width)``
    float64 values.

    Parameters
    ----------
    n_features : int
        Number of (scaled) input features.
    width : int
        Width of the contribution rows (statistics added to every node above a point).
    """

    def __init__(self, n_features, width):
        self._X = np.zeros((0, n_features), dtype=np.float64)
        self._rows = np.zeros((0, width), dtype=np.float64)
        self.n_samples = 0

    @property
    def X(self):
        """Stored inputs, shape ``(n_samples, n_features)`` (a view, C-contiguous)."""
        return self._X[: self.n_samples]

    @property
    def rows(self):
        """Stored contribution rows, shape ``(n_samples, width)`` (a view, C-contiguous)."""
        return self._rows[: self.n_samples]

    def append(self, X, rows):
        """Store new points and return their indices.

        Parameters
        ----------
        X : ndarray of shape (n, n_features)
        rows : ndarray of shape (n, width)

        Returns
        -------
        ndarray of intp, shape (n,)
        """
        n = X.shape[0]
        end = self.n_samples + n
        if end > self._X.shape[0]:
            capacity = max(end, 2 * self._X.shape[0], 16)
            self._X = self._grow(self._X, capacity)
            self._rows = self._grow(self._rows, capacity)
        self._X[self.n_samples : end] = X
        self._rows[self.n_samples : end] = rows
        start, self.n_samples = self.n_samples, end
        return np.arange(start, end, dtype=np.intp)

    def _grow(self, array, capacity):
        out = np.zeros((capacity, array.shape[1]), dtype=np.float64)
        out[: self.n_samples] = array[: self.n_samples]
        return out

    def replace_X(self, X):
        """Overwrite the stored inputs (same number of points), after a change of feature map."""
        self._X[: self.n_samples] = X

    def set_row_columns(self, width, column_map):
        """Move row column ``c`` to ``column_map[c]`` in rows of the new ``width``."""
        rows = np.zeros((self._rows.shape[0], width), dtype=np.float64)
        rows[:, column_map] = self._rows
        self._rows = rows

    def __getstate__(self):
        # Only the used part is saved.
        return {"X": self.X.copy(), "rows": self.rows.copy(), "n_samples": self.n_samples}

    def __setstate__(self, state):
        self._X = np.ascontiguousarray(state["X"], dtype=np.float64)
        self._rows = np.ascontiguousarray(state["rows"], dtype=np.float64)
        self.n_samples = int(state["n_samples"])


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
