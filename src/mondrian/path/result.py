"""The result of every lifetime path: :class:`LifetimePath`, and what every path shares.

A Mondrian model read at lifetime λ only changes when λ crosses the birth time of a cut, so a
path is a list of intervals ``(lifetimes[k], upper_lifetimes[k]]`` on each of which the model,
and every metric of it, is constant. Forests, the density and the kernel models all return this
class; only the metric names differ. Every ``lifetime_path`` checks its ``direction`` with
:func:`check_direction` and assembles its result with :meth:`LifetimePath.from_cut_times`; the
Mondrian grid's search path is a subclass (:class:`~mondrian.grid.path.GridLifetimePath`).
"""

import numpy as np

__all__ = ["LifetimePath", "best_interval", "check_direction"]

# Two values of a criterion closer than this (relative to the best one) are a tie.
TIE_TOLERANCE = 1e-10


def best_interval(values, maximize):
    """Index of the first value that is best up to rounding, ignoring NaN.

    Ties go to the smallest lifetime: a curve that is flat in exact arithmetic (e.g. the
    leave-one-out likelihood once every training point sits alone in its cell) keeps the start
    of its plateau, whatever the rounding of its running sums.

    Parameters
    ----------
    values : array-like of shape (n_intervals,)
        The criterion on each interval, in increasing lifetime order.
    maximize : bool
        Whether larger values are better.

    Returns
    -------
    int
    """
    values = np.asarray(values, dtype=np.float64)
    sign = 1.0 if maximize else -1.0
    score = np.where(np.isnan(values), -np.inf, sign * values)
    top = np.max(score)
    if not np.isfinite(top):
        return int(np.argmax(score))  # all NaN (first interval) or an infinite best
    # Relative to the magnitude of the curve (no absolute floor): the choice must not depend
    # on the units of the metric (a regressor's error in units of y squared).
    scale = np.max(np.abs(score[np.isfinite(score)]))
    return int(np.argmax(score >= top - TIE_TOLERANCE * scale))


def check_direction(direction, backward=None):
    """Whether a path is walked forward; ``ValueError`` for a direction it cannot take.

    Parameters
    ----------
    direction : {"forward", "backward"}
        The ``direction`` parameter of a ``lifetime_path``.
    backward : str, default=None
        For a model without a backward path: the message refusing ``"backward"``.

    Returns
    -------
    bool
        True for ``"forward"``.
    """
    if direction == "backward" and backward is not None:
        raise ValueError(backward)
    if direction not in ("forward", "backward"):
        raise ValueError(f"direction must be 'forward' or 'backward', got {direction!r}")
    return direction == "forward"


class LifetimePath:
    """Metrics of a Mondrian model at every lifetime at which it changes.

    Entry ``k`` describes the model on the lifetimes ``(lifetimes[k], upper_lifetimes[k]]``
    (a cut born at time ``t`` belongs to the models of lifetime ``> t``). For forests, the
    density and kernel ridge the intervals tile ``[0, terminal]``: entry ``k`` is the model
    holding the first ``k`` cuts in birth order. Kernel SGD paths record one model every
    ``eval_every`` cuts, so their intervals are a subset of those.

    Metrics are also readable as attributes: ``path.validation_error`` is
    ``path.metrics["validation_error"]``.

    Parameters
    ----------
    lifetimes : array-like of shape (n_intervals,)
        Lower end of each interval.
    upper_lifetimes : array-like of shape (n_intervals,)
        Upper end of each interval.
    metrics : dict of str to array-like of shape (n_intervals,)
        One value per interval and metric.
    criterion : str
        The metric that chooses ``best_index`` (a key of ``metrics``).
    maximize : bool
        Whether the criterion is maximised (a log-likelihood, an accuracy) or minimised.
    direction : {"forward", "backward"}, default="forward"
        How the path was walked: cuts added from lifetime 0, or removed from the terminal
        lifetime down (the same numbers, reached from the other end).
    forest_ : estimator, default=None
        Forest paths: the transductive copy of the forest the path was computed on.
    **extras
        Model-specific attributes, stored as given.

    Attributes
    ----------
    best_index : int
        The interval with the best criterion (:func:`best_interval`: the smallest lifetime
        among values equal up to a relative ``1e-10``).
    best_lifetime : float
        A lifetime inside that interval: its midpoint, or ``inf`` when it is unbounded.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian import MondrianForestRegressor
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(size=(200, 2))
    >>> y = np.sin(4 * X[:, 0]) + 0.1 * rng.randn(200)
    >>> reg = MondrianForestRegressor(n_estimators=5, random_state=0).fit(X[:150], y[:150])
    >>> path = reg.lifetime_path(X[150:], y[150:])
    >>> path.criterion, bool(path.best_lifetime > 0)
    ('mse', True)
    >>> bool(path.mse[path.best_index] == path.metrics["mse"].min())
    True
    """

    def __init__(self, lifetimes, upper_lifetimes, metrics, criterion, maximize, *,
                 direction="forward", forest_=None, selection=None, **extras):
        self.lifetimes = np.asarray(lifetimes, dtype=np.float64)
        self.upper_lifetimes = np.asarray(upper_lifetimes, dtype=np.float64)
        n = self.lifetimes.shape[0]
        if self.lifetimes.ndim != 1 or self.upper_lifetimes.shape != (n,) or n == 0:
            raise ValueError("lifetimes and upper_lifetimes must be 1-D of one common length")
        self.metrics = {name: np.asarray(value) for name, value in metrics.items()}
        for name, value in self.metrics.items():
            if value.shape != (n,):
                raise ValueError(f"metric {name!r} has shape {value.shape}, expected ({n},)")
        if criterion not in self.metrics:
            raise ValueError(f"criterion {criterion!r} is not one of the metrics "
                             f"{sorted(self.metrics)}")
        check_direction(direction)
        self.criterion = criterion
        self.maximize = bool(maximize)
        self.direction = direction
        self.forest_ = forest_
        for name, value in extras.items():
            setattr(self, name, value)
        # The models choose on the criterion in standardised units (``selection``, an increasing
        # affine image of it): in the units of y a squared error may overflow or underflow.
        choice = self.metrics[criterion] if selection is None else selection
        self.best_index = best_interval(choice, self.maximize)
        low, high = self.lifetimes[self.best_index], self.upper_lifetimes[self.best_index]
        self.best_lifetime = float(0.5 * (low + high)) if np.isfinite(high) else np.inf

    @classmethod
    def from_cut_times(cls, times, terminal, metrics, criterion, maximize, *, models=None,
                       **kwargs):
        """The path of a model whose cuts are born at ``times`` (increasing) and that ends at
        the ``terminal`` lifetime: interval ``k`` holds the first ``k`` cuts.

        Parameters
        ----------
        times : array-like of shape (n_cuts,)
        terminal : float
        metrics, criterion, maximize, **kwargs
            As for :class:`LifetimePath`, with one value per model kept.
        models : array-like of int, default=None
            The numbers of cuts of the models recorded (increasing), when not every one of the
            ``n_cuts + 1`` models is (the kernel SGD path evaluates every ``eval_every`` cuts).

        Returns
        -------
        LifetimePath
        """
        times = np.asarray(times, dtype=np.float64)
        lifetimes, upper = np.r_[0.0, times], np.r_[times, terminal]
        if models is not None:
            lifetimes, upper = lifetimes[models], upper[models]
        return cls(lifetimes, upper, metrics, criterion, maximize, **kwargs)

    def __getattr__(self, name):
        # Only reached for names that are not attributes: the metrics.
        metrics = self.__dict__.get("metrics")
        if metrics is not None and name in metrics:
            return metrics[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __getstate__(self):
        return dict(self.__dict__)

    def __setstate__(self, state):
        self.__dict__.update(state)

    @property
    def n_cuts(self):
        """Number of cuts of the terminal model (intervals minus one)."""
        return len(self.lifetimes) - 1

    @property
    def best_value(self):
        """The criterion on the best interval."""
        return float(self.metrics[self.criterion][self.best_index])

    def __len__(self):
        return len(self.lifetimes)

    def __repr__(self):
        n = len(self.lifetimes)
        sense = "max" if self.maximize else "min"
        lines = [
            f"LifetimePath({n} interval{'s' if n != 1 else ''} over "
            f"[{self.lifetimes[0]:.4g}, {self.upper_lifetimes[-1]:.4g}], "
            f"direction={self.direction!r})",
            f"  criterion: {self.criterion} ({sense}imised)",
            f"  best: interval {self.best_index} "
            f"({self.lifetimes[self.best_index]:.4g}, "
            f"{self.upper_lifetimes[self.best_index]:.4g}], lifetime {self.best_lifetime:.4g}, "
            f"{self.criterion}={self.best_value:.6g}",
        ]
        for name, value in self.metrics.items():
            finite = value[np.isfinite(value)] if value.dtype.kind == "f" else value
            span = (f"[{np.min(finite):.4g}, {np.max(finite):.4g}]" if finite.size
                    else "(no finite value)")
            lines.append(f"  {name}: first {value[0]:.4g}, last {value[-1]:.4g}, range {span}")
        return "\n".join(lines)

    # ----------------------------------------------------------------- export

    # What a row of to_frame is.
    _frame_index = "interval"

    def _frame_columns(self):
        """The columns of :meth:`to_frame` before the metrics."""
        return {"lifetime": self.lifetimes, "upper_lifetime": self.upper_lifetimes}

    def to_frame(self):
        """The path as a table: one row per interval.

        Returns
        -------
        pandas.DataFrame
            Columns ``lifetime``, ``upper_lifetime`` and one per metric; index ``interval``.
        """
        try:
            import pandas as pd
        except ImportError as error:
            raise ImportError(f"{type(self).__name__}.to_frame requires pandas: pip install "
                              "pandas") from error
        frame = pd.DataFrame({**self._frame_columns(), **self.metrics})
        frame.index.name = self._frame_index
        return frame

    def plot(self, ax=None, metric=None):
        """Plot a metric against the lifetime (log axis), the best lifetime marked
        (:func:`mondrian.plot.plot_lifetime_path`).

        Each interval's value is drawn as a step ending at its upper lifetime (the first one
        starts at half its upper lifetime: 0 has no place on a log axis); the unbounded last
        interval of a model grown to ``inf`` ends at twice the largest finite lifetime.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Where to draw (a new figure when None).
        metric : str, default=None
            The metric to draw (default: the criterion).

        Returns
        -------
        matplotlib Axes
        """
        from mondrian.plot import plot_lifetime_path

        return plot_lifetime_path(self, metric=metric, ax=ax)

    # ----------------------------------------------------------------- Bayesian reading

    def lifetime_posterior(self, prior=None):
        """Posterior probability of each interval of lifetimes (Supplement B of the kernel paper).

        ``pi_k ∝ ML_k * (F(upper_k) - F(lower_k))`` where ``ML_k`` is the marginal likelihood of
        model ``k`` (constant on its interval) and ``F`` the prior CDF. Needs a
        ``log_marginal_likelihood`` metric (kernel ridge paths).

        Parameters
        ----------
        prior : scipy.stats frozen distribution, default=None
            Prior of the lifetime. Default: uniform on ``[0, terminal lifetime]`` when that is
            finite and positive, else exponential with the median birth time as scale (1 when
            the path has no cut).

        Returns
        -------
        ndarray of shape (n_intervals,)
            Probabilities of the intervals (sum to one).
        """
        from scipy import stats

        if "log_marginal_likelihood" not in self.metrics:
            raise ValueError(
                "lifetime_posterior needs a log_marginal_likelihood metric; this path has "
                f"{sorted(self.metrics)}"
            )
        log_ml = np.asarray(self.metrics["log_marginal_likelihood"], dtype=np.float64)
        if len(log_ml) == 1:
            return np.ones(1)  # one model: all the mass, whatever the prior
        if prior is None:
            terminal = self.upper_lifetimes[-1]
            if np.isfinite(terminal) and terminal > 0:
                prior = stats.uniform(0.0, terminal)
            else:
                births = self.lifetimes[1:]
                scale = float(np.median(births)) if births.size else 0.0
                prior = stats.expon(scale=scale if scale > 0 else 1.0)
        with np.errstate(divide="ignore"):
            log_mass = np.log(prior.cdf(self.upper_lifetimes) - prior.cdf(self.lifetimes))
        log_post = log_ml + log_mass
        total = np.logaddexp.reduce(log_post)
        if not np.isfinite(total):
            raise ValueError("the prior gives no mass to the intervals of this path")
        return np.exp(log_post - total)
