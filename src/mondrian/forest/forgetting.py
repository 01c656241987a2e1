"""``forget`` for the forests: how a label enters the match, and what a model re-derives."""

import numpy as np

from mondrian.estimator.forgetting import ForgetMixin
from mondrian.forest._hyperparameters import HYPER_REFRESH_GROWTH, MIN_SAMPLES_HELD_OUT

__all__ = ["ClassifierForgetMixin", "RegressorForgetMixin"]


class ClassifierForgetMixin(ForgetMixin):
    """Rows are matched with their class: the stored row is the class's one-hot row times its
    weight. ``classes_`` keeps every class (a class whose points are all forgotten predicts
    from the prior, as one told with ``classes=`` before any of its points arrived)."""

    _forget_commits = True

    def _forget_units(self, y, n_rows):
        if y is None:
            return None, None, None
        self._check_label_kind(y)
        codes = np.searchsorted(self.classes_, y).astype(np.intp)  # (classes_ is sorted)
        known = codes < len(self.classes_)
        known[known] = self.classes_[codes[known]] == y[known]
        if not known.all():
            unknown = np.setdiff1d(np.unique(y), self.classes_)
            raise ValueError(f"cannot forget rows labelled {unknown.tolist()}: the model has "
                             f"no such class (classes_ = {self.classes_.tolist()})")
        factor = None
        if isinstance(self.class_weight, dict):
            factor = np.array([self._class_factor(label) for label in y.tolist()])
        elif self.class_weight is not None:
            factor = np.full(n_rows, np.nan)  # "balanced": refused below with sample_weight
        return self._rows(codes), self._class_columns()[codes], factor

    def forget(self, X, y=None, sample_weight=None):
        if sample_weight is not None and isinstance(self.class_weight, str):
            raise ValueError('forgetting part of a weight is not supported with '
                             'class_weight="balanced" (its factors depend on the whole '
                             "training set): forget whole rows (sample_weight=None)")
        return super().forget(X, y, sample_weight)

    forget.__doc__ = ForgetMixin.forget.__doc__


class RegressorForgetMixin(ForgetMixin):
    """Rows are matched with their target (the stored row is ``w (1, y, y**2)`` in the
    standardised units, which stay as they are). The target sums are recounted, and the
    held-out hyperparameters are chosen again when the store shrinks as much as a growth
    would re-choose them (or dropped below the size that chooses them)."""

    def _forget_units(self, y, n_rows):
        if y is None:
            return None, None, None
        y = np.asarray(y, dtype=np.float64)
        if not np.all(np.isfinite(y)):
            raise ValueError("y of forget holds NaN or infinite values")
        y_std = self._y_scaler.transform(y)
        units = np.column_stack([np.ones_like(y_std), y_std, y_std * y_std])
        return units, np.zeros(n_rows, dtype=np.intp), None

    def _after_window(self):
        store = self._store
        self._y_sums = store.rows.sum(axis=0) if store.n_samples else np.zeros(3)
        # The trees lost nodes: the messages are recomputed in full after this update, not
        # along the new points' paths only (their node counts from before no longer hold).
        cache = self.__dict__.get("_posterior_cache")
        if cache is not None:
            cache.trees = None

    def _after_forget(self):
        self._after_window()
        store = self._store
        n, last = store.n_samples, getattr(self, "_hyper_n", 0)
        if n < MIN_SAMPLES_HELD_OUT:
            self._hyper_choice, self._hyper_n = None, 0
            self.__dict__.pop("_debias_choice", None)  # chosen with the held-out choice
        elif last and n * HYPER_REFRESH_GROWTH <= last:
            self._hyper_n = 0
            self._refresh_hyper_choice()
        self._version += 1
        if n:
            self._posterior()
