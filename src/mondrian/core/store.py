"""Forest-wide storage of training points (shared by every tree of an ensemble)."""

import numpy as np

from mondrian.core.state_checks import loaded_array, refuse

__all__ = ["DataStore"]


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
        """Move row column ``c`` to ``column_map[c]`` in rows of the new ``width`` (a new
        buffer; ``column_map[c] < 0`` drops a spare column)."""
        column_map = np.asarray(column_map, dtype=np.intp)
        kept = column_map >= 0
        rows = np.zeros((self._rows.shape[0], width), dtype=np.float64)
        rows[:, column_map[kept]] = self._rows[:, kept]
        self._rows = rows

    def __getstate__(self):
        # Only the used part is saved.
        # Views: pickle writes only the viewed rows, and no copy stays alive while it runs.
        return {"X": self.X, "rows": self.rows, "n_samples": self.n_samples}

    def __setstate__(self, state):
        X = loaded_array("DataStore", "X", state["X"], np.float64, 2)
        rows = loaded_array("DataStore", "rows", state["rows"], np.float64, 2,
                            (X.shape[0], None))
        if not np.isfinite(X).all() or np.isnan(rows).any():
            refuse("DataStore", "stored points are not finite")
        n_samples = int(state["n_samples"])
        if not 0 <= n_samples <= X.shape[0]:
            refuse("DataStore", f"n_samples={n_samples} but {X.shape[0]} stored rows")
        self._X, self._rows, self.n_samples = X, rows, n_samples
