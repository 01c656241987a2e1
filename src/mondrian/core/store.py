"""Forest-wide storage of training points (shared by every tree of an ensemble)."""

import numpy as np

from mondrian.core.state_checks import loaded_array, refuse

__all__ = ["DataStore", "forget_moves"]


def forget_moves(indices, drop, n):
    """After the points ``indices[drop]`` (sorted) leave a store of ``n`` points: the last
    points that stay (``movers``), the freed places below the new size they move to
    (``holes``), and that size (see :meth:`DataStore.move`)."""
    if len(indices) == 1:  # (one row, the stream's case: no array operations)
        i, gone = int(indices[0]), int(bool(drop[0]))
        if i == n - 1 or not gone:
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp), n - gone
        return np.array([n - 1], dtype=np.intp), np.array([i], dtype=np.intp), n - 1
    gone = indices[np.asarray(drop, dtype=bool)]
    n_kept = n - gone.size
    holes = gone[gone < n_kept]  # (sorted: indices are)
    stays = np.ones(gone.size, dtype=bool)  # which of the last gone.size points stay
    stays[gone[gone >= n_kept] - n_kept] = False
    return np.flatnonzero(stays) + n_kept, holes, n_kept


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
        self._stamps = np.zeros(0, dtype=np.int64)
        self.n_arrived = 0

    @property
    def stamps(self):
        """Arrival number of each stored point (0 for the first point ever stored), shape
        ``(n_samples,)``: forgetting moves the last points into the places of forgotten ones,
        so the store's order is not the arrival order once points were forgotten."""
        stamps = self.__dict__.get("_stamps")
        if stamps is None or stamps.shape[0] < self.n_samples:  # (stores pickled before)
            self._stamps = stamps = np.arange(self._X.shape[0], dtype=np.int64)
            self.n_arrived = max(getattr(self, "n_arrived", 0), self.n_samples)
        return stamps[: self.n_samples]

    def arrival_state(self):
        """What :meth:`set_arrival_state` needs to put the arrival numbers back (a snapshot;
        appends write past ``n_samples`` only, forgets record their in-place moves)."""
        stamps = self.__dict__.get("_stamps")
        if stamps is None or stamps.shape[0] < self.n_samples:
            self.stamps  # noqa: B018 (creates the stamps of a store pickled without them)
        return self._stamps, self.n_arrived

    def set_arrival_state(self, state):
        self._stamps, self.n_arrived = state

    def oldest(self, k):
        """Store indices of the ``k`` points that arrived first (any order)."""
        stamps = self.stamps
        if k >= stamps.shape[0]:
            return np.arange(stamps.shape[0], dtype=np.intp)
        return np.argpartition(stamps, k - 1)[:k].astype(np.intp)

    def move(self, movers, holes, n_kept):
        """Move the points ``movers`` to the free indices ``holes`` and keep ``n_kept`` points
        (after a forget; see :func:`mondrian.core._forget.relocate_trees`).

        In place (O(moved points)), returning what :meth:`undo_move` needs to put the arrays
        back; when less than a quarter of the buffers stays in use they are replaced by
        smaller ones instead (memory given back, amortised), and the old arrays are left as
        they were (a snapshot's references stay valid): the record is then None.
        """
        stamps = self.stamps
        capacity = self._X.shape[0]
        if n_kept < capacity // 4 and capacity > 64:
            capacity = max(2 * n_kept, 16)
            X = np.zeros((capacity, self._X.shape[1]))
            rows = np.zeros((capacity, self._rows.shape[1]))
            new_stamps = np.zeros(capacity, dtype=np.int64)
            X[:n_kept] = self._X[:n_kept]
            rows[:n_kept] = self._rows[:n_kept]
            new_stamps[:n_kept] = stamps[:n_kept]
            X[holes] = self._X[movers]
            rows[holes] = self._rows[movers]
            new_stamps[holes] = stamps[movers]
            self._X, self._rows, self._stamps, self.n_samples = X, rows, new_stamps, n_kept
            return None
        record = (self._X, self._rows, self._stamps, holes.copy(), self._X[holes],
                  self._rows[holes], self._stamps[holes])
        self._X[holes] = self._X[movers]
        self._rows[holes] = self._rows[movers]
        self._stamps[holes] = self._stamps[movers]
        self.n_samples = n_kept
        return record

    def shrunk_buffers(self, rows, movers, holes, n_kept):
        """The buffers :meth:`move` would replace the store's by (``rows``: the store's rows
        as the move finds them), made and filled now without changing the store, or None
        when the move is done in place (at least a quarter of the buffers stays in use)."""
        capacity = self._X.shape[0]
        if n_kept == self.n_samples or n_kept >= capacity // 4 or capacity <= 64:
            return None
        capacity = max(2 * n_kept, 16)
        out = (np.zeros((capacity, self._X.shape[1])), np.zeros((capacity, rows.shape[1])),
               np.zeros(capacity, dtype=np.int64))
        for new, old in zip(out, (self.X, rows, self.stamps), strict=True):
            new[:n_kept] = old[:n_kept]
            new[holes] = old[movers]
        return out

    @staticmethod
    def undo_move(record):
        """Put back the arrays :meth:`move` changed in place (``record`` from it)."""
        if record is None:
            return
        X, rows, stamps, holes, old_X, old_rows, old_stamps = record
        X[holes] = old_X
        rows[holes] = old_rows
        stamps[holes] = old_stamps

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
        start = self.n_samples
        end = start + n
        stamps = self.__dict__.get("_stamps")
        if (n == 1 and end <= self._X.shape[0] and stamps is not None
                and stamps.shape[0] >= self._X.shape[0] and "n_arrived" in self.__dict__):
            # One point with room for it (the streaming case): the writes below, row by row.
            self._X[start] = X[0]
            self._rows[start] = rows[0]
            arrived = self.n_arrived
            stamps[start] = arrived
            self.n_arrived = arrived + 1
            self.n_samples = end
            return np.arange(start, end, dtype=np.intp)
        if end > self._X.shape[0]:
            capacity = max(end, 2 * self._X.shape[0], 16)
            self._X = self._grow(self._X, capacity)
            self._rows = self._grow(self._rows, capacity)
        stamps = self.stamps  # (before the buffers grow: its length follows theirs)
        if self._stamps.shape[0] < self._X.shape[0]:
            grown = np.zeros(self._X.shape[0], dtype=np.int64)
            grown[: self.n_samples] = stamps
            self._stamps = grown
        self._X[self.n_samples : end] = X
        self._rows[self.n_samples : end] = rows
        arrived = getattr(self, "n_arrived", self.n_samples)
        self._stamps[self.n_samples : end] = np.arange(arrived, arrived + n)
        self.n_arrived = arrived + n
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
        state = {"X": self.X, "rows": self.rows, "n_samples": self.n_samples}
        stamps = self.stamps
        if stamps.shape[0] and (self.n_arrived != self.n_samples
                                or stamps[-1] != self.n_samples - 1
                                or not np.array_equal(stamps, np.arange(self.n_samples))):
            # Only after a forget: a store in arrival order pickles as before.
            state["stamps"] = stamps
            state["n_arrived"] = self.n_arrived
        return state

    def __setstate__(self, state):
        X = loaded_array("DataStore", "X", state["X"], np.float64, 2)
        rows = loaded_array("DataStore", "rows", state["rows"], np.float64, 2,
                            (X.shape[0], None))
        if not np.isfinite(X).all() or np.isnan(rows).any():
            refuse("DataStore", "stored points are not finite")
        n_samples = int(state["n_samples"])
        if not 0 <= n_samples <= X.shape[0]:
            refuse("DataStore", f"n_samples={n_samples} but {X.shape[0]} stored rows")
        stamps = state.get("stamps")
        stamps = (np.arange(n_samples, dtype=np.int64) if stamps is None
                  else loaded_array("DataStore", "stamps", stamps, np.int64, 1, (n_samples,)))
        n_arrived = int(state.get("n_arrived", n_samples))
        if n_arrived < n_samples:
            refuse("DataStore", f"n_arrived={n_arrived} is below n_samples={n_samples}")
        self._X, self._rows, self.n_samples = X, rows, n_samples
        self._stamps, self.n_arrived = stamps, n_arrived
