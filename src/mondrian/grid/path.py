"""The path of a Mondrian grid's greedy lifetime search: :class:`GridLifetimePath`."""

import numpy as np

from mondrian.path.result import LifetimePath

__all__ = ["GridLifetimePath"]

METRICS = ("training_error", "validation_error", "log_marginal_likelihood", "n_features")


class GridLifetimePath(LifetimePath):
    """The configurations of lifetimes visited by a greedy search, one per step.

    Step 0 is lifetime 0 in every dimension (one cell per grid); step ``k`` moved one
    dimension: it held its next cut(s) (``move = +1``) or dropped its last one(s) (``-1``).
    A :class:`~mondrian.path.result.LifetimePath` whose entries are steps rather than intervals
    of one lifetime: it shares the metric access (``path.validation_error``), ``best_value``
    and :meth:`to_frame`; its criterion is always the validation error (minimised).

    Parameters
    ----------
    dimensions : array-like of int, shape (n_steps,)
        Dimension moved at every step (-1 for step 0).
    moves : array-like of int, shape (n_steps,)
        +1 add, -1 remove, 0 for step 0.
    lifetimes : array-like of shape (n_steps, n_dims)
        The lifetime vector after every step (``λ_d``: birth time of the last cut held).
    metrics : dict of str to array-like of shape (n_steps,)
        ``training_error`` and ``validation_error`` (mean squared errors),
        ``log_marginal_likelihood``, ``n_features``.
    search : {"add", "add_remove"}

    Attributes
    ----------
    best_index : int
        The first step of smallest validation error.
    best_lifetimes : ndarray of shape (n_dims,)
        Its lifetime vector (what the estimator keeps as ``lifetimes_``).

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian.grid.path import GridLifetimePath
    >>> path = GridLifetimePath([-1, 0], [0, 1], [[0.0, 0.0], [0.7, 0.0]],
    ...                         {"validation_error": [2.0, 1.0]}, "add")
    >>> path.best_index, path.best_lifetimes.tolist()
    (1, [0.7, 0.0])
    """

    # The search minimises the validation error, moving forward from lifetime 0.
    criterion = "validation_error"
    maximize = False
    direction = "forward"
    forest_ = None
    _frame_index = "step"

    def __init__(self, dimensions, moves, lifetimes, metrics, search):
        # Not LifetimePath.__init__: the lifetimes are vectors, and the best step is the first
        # of smallest validation error (no tie tolerance).
        self.dimensions = np.asarray(dimensions, dtype=np.intp)
        self.moves = np.asarray(moves, dtype=np.intp)
        self.lifetimes = np.asarray(lifetimes, dtype=np.float64)
        self.metrics = {k: np.asarray(v, dtype=np.float64) for k, v in metrics.items()}
        self.search = search
        errors = self.metrics["validation_error"]
        self.best_index = int(np.argmin(np.where(np.isnan(errors), np.inf, errors)))
        self.best_lifetimes = self.lifetimes[self.best_index].copy()

    def __repr__(self):
        best = self.metrics["validation_error"][self.best_index]
        return (f"GridLifetimePath({len(self)} steps, search={self.search!r}, best step "
                f"{self.best_index}: validation_error={best:.6g}, lifetimes="
                f"{np.array2string(self.best_lifetimes, precision=3)})")

    def to_frame(self):
        """The path as a table: one row per step.

        Returns
        -------
        pandas.DataFrame
            Columns ``dimension``, ``move``, ``lifetime_0`` .. ``lifetime_{D-1}`` and one per
            metric; index ``step``.
        """
        return super().to_frame()

    def _frame_columns(self):
        columns = {"dimension": self.dimensions, "move": self.moves}
        for d in range(self.lifetimes.shape[1]):
            columns[f"lifetime_{d}"] = self.lifetimes[:, d]
        return columns

    def lifetime_posterior(self, prior=None):
        """Not available: the steps of a search are not intervals of one lifetime."""
        raise ValueError("a grid search path visits lifetime vectors, not intervals of one "
                         "lifetime: it has no lifetime posterior")

    def plot(self, axes=None, metric="validation_error"):
        """Plot the metric and every dimension's lifetime against the step (report fig. 5.5).

        Parameters
        ----------
        axes : sequence of two matplotlib Axes, default=None
            Where to draw (a new figure when None).
        metric : str, default="validation_error"

        Returns
        -------
        ndarray of two matplotlib Axes
        """
        try:
            import matplotlib.pyplot as plt
        except ImportError as error:
            raise ImportError("plot requires matplotlib: pip install matplotlib") from error
        if metric not in self.metrics:
            raise ValueError(f"metric must be one of {sorted(self.metrics)}, got {metric!r}")
        if axes is None:
            _, axes = plt.subplots(1, 2, figsize=(10, 4))
        steps = np.arange(len(self))
        axes[0].plot(steps, self.metrics[metric])
        axes[0].axvline(self.best_index, color="0.5", linestyle="--", linewidth=1)
        axes[0].set_xlabel("step")
        axes[0].set_ylabel(metric)
        for d in range(self.lifetimes.shape[1]):
            axes[1].plot(steps, self.lifetimes[:, d], label=f"λ_{d}")
        axes[1].set_xlabel("step")
        axes[1].set_ylabel("lifetime")
        if self.lifetimes.shape[1] <= 12:
            axes[1].legend()
        return np.asarray(axes)
