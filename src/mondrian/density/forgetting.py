"""``forget`` and ``window`` of the density: its points inside ``B_0`` are in the trees, the
points outside only in the background weight, and a window counts both in arrival order."""


import numpy as np
from sklearn.utils._param_validation import validate_parameter_constraints
from sklearn.utils.validation import check_is_fitted, validate_data

from mondrian.core.state_checks import refuse
from mondrian.estimator.atomic import online_update
from mondrian.estimator.forgetting import plan_forget
from mondrian.estimator.params import WINDOW_CONSTRAINT

__all__ = ["DensityForgetMixin"]

_NO_ARRIVALS = np.zeros(0, dtype=np.int64)


class DensityForgetMixin:
    """``forget(X)`` and the ``window`` parameter of :class:`MondrianForestDensity`.

    The trees' store numbers the points inside ``B_0`` in arrival order (its stamps). A point
    outside ``B_0`` is recorded by the store's arrival count when it came
    (``_outside_stamps``, sorted; kept only while there are such points): it came after the
    inside points stamped below that count and before the others, which places both kinds on
    one arrival order for the window.
    """

    # The default of the parameter, also for models pickled before it existed; pickles leave
    # out a window of None, so a model without a window keeps the bytes it had then.
    window = None

    def __getstate__(self):
        state = super().__getstate__()
        if "window" in state and state["window"] is None:
            state = {name: value for name, value in state.items() if name != "window"}
        return state

    def _outside_arrivals(self):
        arrivals = self.__dict__.get("_outside_stamps")
        if arrivals is None:
            # (models pickled before the window existed: their outside points count as the
            # oldest ones)
            return np.zeros(self.__dict__.get("_n_outside", 0), dtype=np.int64)
        return arrivals

    def _set_outside(self, arrivals):
        """Record the outside points (a new array: a failed update restores the old one)."""
        self._n_outside = int(arrivals.shape[0])
        if arrivals.shape[0]:
            self._outside_stamps = arrivals
        else:
            self.__dict__.pop("_outside_stamps", None)

    def _set_seen(self, n_samples):
        self.n_samples_seen_ = n_samples
        self.outside_weight_ = (self._n_outside + 0.5) / (n_samples + 1.0)

    def _learn_outside(self, inside):
        """Record the rows of a batch that fall outside ``B_0`` (``inside`` is their mask),
        before its inside rows are stored."""
        if inside.all():
            return
        _, arrived = self._ensemble.store.arrival_state()
        before = np.cumsum(inside)[~inside]  # inside rows of the batch before each outside one
        self._set_outside(np.concatenate([self._outside_arrivals(), arrived + before]))

    def _check_window(self):
        """Refuse an invalid ``window`` (``set_params`` does not check, as scikit-learn's
        conventions ask) before an update changes anything."""
        validate_parameter_constraints({"window": WINDOW_CONSTRAINT}, {"window": self.window},
                                       caller_name=type(self).__name__)

    def _trim_window(self):
        """Forget the oldest points beyond the ``window`` most recent, inside and outside
        ``B_0`` alike (the trees keep at least their newest point: they need one)."""
        if self.window is None:
            return
        store = self._ensemble.store
        outside = self._outside_arrivals()
        excess = store.n_samples + outside.shape[0] - self.window
        if excess <= 0:
            return
        # Arrival order: an outside point recorded at count a precedes the inside point
        # stamped a (keys 2a and 2a + 1).
        keys = np.concatenate([2 * outside, 2 * store.stamps + 1])
        oldest = np.partition(keys, excess - 1)[:excess]
        n_out = int(np.count_nonzero(oldest % 2 == 0))
        n_in = min(excess - n_out, store.n_samples - 1)
        if n_in > 0:
            indices = np.sort(store.oldest(n_in))
            self._ensemble.forget(indices, store.rows[indices], np.ones(n_in, dtype=np.uint8))
        self._set_outside(outside[n_out:])
        self._set_seen(self.n_samples_seen_ - n_in - n_out)

    def forget(self, X):
        """Remove training points, exactly: the forest then has the law of one fitted
        without them (docs/algorithms.md §13).

        Each row removes one stored copy of itself (the oldest; matched bit for bit in the
        unit cube of the domain ``B_0``, which stays fixed); a row outside ``B_0`` removes the
        oldest point learnt outside ``B_0``, lowering the weight of the background density. A
        cell left without points becomes an unexpanded leaf, as a fit on the remaining points
        leaves it. The lifetime and concentration stay as they were chosen. A row that is not
        stored raises a ``ValueError`` and nothing changes.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to forget, as they were learnt.

        Returns
        -------
        self : object

        Examples
        --------
        >>> import numpy as np
        >>> from mondrian import MondrianForestDensity
        >>> X = np.random.default_rng(0).normal(size=(200, 2))
        >>> density = MondrianForestDensity(n_estimators=5, lifetime=2.0, random_state=0).fit(X)
        >>> density.forget(X[:50]).n_samples_seen_
        150
        """
        if "_ensemble" not in self.__dict__:
            check_is_fitted(self, "_trees")
        self._check_writable()
        with online_update(self, X):
            X = validate_data(self, X, reset=False, dtype=np.float64, order="C")
            U, inside = self._to_unit(X)
            n_outside = X.shape[0] - int(inside.sum())
            if n_outside > self._n_outside:
                raise ValueError(f"cannot forget {n_outside} rows outside the domain: the "
                                 f"model learnt {self._n_outside} such rows")
            if inside.any():
                rows = np.flatnonzero(inside)
                store = self._ensemble.store
                plan = plan_forget(store.X, store.rows, np.ascontiguousarray(U[inside]),
                                   describe=lambda r: f"row {rows[r]} of X", stamps=store.stamps,
                                   tree=self._ensemble.matching_tree())
                self._ensemble.forget(*plan)
            self._set_outside(self._outside_arrivals()[n_outside:])
            self._set_seen(self.n_samples_seen_ - X.shape[0])
        return self

    def _check_loaded_state(self):
        """Also refuse a loaded state whose outside arrivals do not match their count."""
        super()._check_loaded_state()
        arrivals = self.__dict__.get("_outside_stamps")
        if arrivals is not None and (
                not isinstance(arrivals, np.ndarray) or arrivals.dtype != np.int64
                or arrivals.ndim != 1 or arrivals.shape[0] != self.__dict__.get("_n_outside")):
            refuse(type(self).__name__, "_outside_stamps does not match _n_outside")
