"""The one ingest route of the forests (classifier and regressor, forest and single tree).

Every update takes the same steps: *prepare* the rows (validate a batch, or read one sample),
*start* the model on the first call (feature map, lifetime, empty trees), *encode* the targets
into statistics rows and *add* the points to the trees. ``fit`` is the batch on a fresh model,
``partial_fit`` a batch that may be the first, ``learn_one`` a batch of one row read from a
dict or a 1-D sample. The one-row fast path of a model in its steady state is an optimisation
of that route behind one gate (:meth:`_fast_one`, taken by ``learn_one`` and by a one-row
``partial_fit`` alike): it does what the route would do, through the trees' undo logs. (The
classifier has one, for ``learn_one`` and a one-row ``partial_fit``; the regressor has one for
``learn_one``, which refreshes the posteriors inside the logged update when neither the
held-out choice nor the hyperparameters are due: ``OnlinePosteriorMixin._fast_one``.)

The families supply the target checks (``_check_raw_targets`` on the input as given,
``_check_targets`` on the validated array, ``_fast_targets`` for the fast gate,
``_target_validation`` for ``validate_data``) and ``_check_stream_start`` (what a first
``learn_one`` refuses).
"""

import numpy as np
from sklearn.utils.validation import validate_data

from mondrian.estimator.rows import FAST_BATCH_ROWS

__all__ = ["IngestMixin"]


class IngestMixin:
    """Prepare and start steps shared by the forests' ``fit``, ``partial_fit`` and
    ``learn_one`` (module docstring)."""

    # Keyword arguments of validate_data for the targets (the regressor: y_numeric=True).
    _target_validation = {}

    def _check_raw_targets(self, y):
        """Checks of ``y`` as given, before ``validate_data`` converts it."""

    def _check_targets(self, y):
        """Checks of the validated ``y`` (not run on the fast path, whose gate implies them)."""

    @staticmethod
    def _fast_targets(y, n_rows):
        """Whether ``y`` is what the checks of the full validation return unchanged."""
        return False

    def _check_stream_start(self):
        """What a first ``learn_one`` refuses beyond the lifetime (subclasses)."""

    def _validated(self, X, y, first):
        """``X, y`` after the full validation (``reset`` on the first call)."""
        self._check_raw_targets(y)
        X, y = validate_data(self, X, y, dtype=np.float64, order="C", reset=first,
                             **self._target_validation)
        self._check_targets(y)
        return X, y

    def _prepare_batch(self, X, y):
        """The prepare step of ``partial_fit``: ``(X, y, first)`` validated.

        After fit, a small C-contiguous float64 ``X`` that :meth:`_fast_rows` accepts and
        targets that ``_fast_targets`` accepts are returned as they are: they are what the
        full validation would return, without its per-call cost.
        """
        first = not hasattr(self, "_trees")
        self._check_writable()
        if first:
            self._validate_params()
        fast = None if first else self._fast_rows(X, FAST_BATCH_ROWS)
        if fast is not None and self._fast_targets(y, len(fast)):
            return fast, y, False
        X, y = self._validated(X, y, first)
        return X, y, first

    def _prepare_one(self, x):
        """The prepare step of ``learn_one``: ``(row, first, n_new_trees)``.

        ``row`` is the (1, n_features) float64 sample (a first dict fixes the key order). The
        first call checks the parameters and what a stream cannot start with; later calls
        check the parameter changes since fit (the trees to add).
        """
        row = self._one_row(x, learn=True)
        first = not hasattr(self, "_trees")
        n_new_trees = 0
        if first:
            self._validate_params()
            self._validate_lifetime()
            self._check_learn_one_lifetime()
            self._check_stream_start()
            self.n_features_in_ = row.shape[1]
        else:
            n_new_trees = self._warm_start_check()
        return row, first, n_new_trees

    def _check_learn_one_lifetime(self):
        if isinstance(self.lifetime, str):
            raise ValueError(
                'lifetime="auto" chooses the lifetime on a batch: call fit or partial_fit '
                "before learn_one"
            )

    def _fast_one(self, x, y):
        """The one-row fast path (subclasses): learn ``(x, y)`` and return True when the
        model is in its steady state and the sample needs no further validation; else change
        nothing and return False."""
        return False

    def _fast_batch(self, X, y):
        """The fast path of a one-row ``partial_fit``: a (1, n_features) float64 ndarray with
        ``_fast_targets`` labels takes :meth:`_fast_one` (the same gate as ``learn_one``)."""
        if not (type(X) is np.ndarray and X.ndim == 2 and X.shape[0] == 1
                and self._fast_targets(y, 1) and "feature_names_in_" not in self.__dict__):
            return False
        return self._fast_one(X[0], y[0])
