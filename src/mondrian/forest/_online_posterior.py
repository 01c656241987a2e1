"""The online side of the regressors' posterior: the cache of upward messages refreshed in place
after an update, and the schedule of the hyperparameters' derivations (see the user guide,
"Online hyperparameters", and the algorithm reference, section 6 (d))."""

import copy
import math
import numbers

import numpy as np

from mondrian.forest._gaussian_online import refresh_messages
from mondrian.forest.debias import refresh_short_messages

# An online regressor re-derives the hyperparameters of its posteriors (prior mean, noise and
# prior variances, sigmoid rate) at the end of an update that grew its stored points by this
# factor since the last derivation, or renewed the held-out choice; in between they stay, and
# an update recomputes the messages of the nodes it changed only (O(path length) per point).
# The derivations cost O(nodes) each: about 1 / (growth - 1) full passes per stream, amortised.
HYPER_PARAMS_GROWTH = 1.1


class _PosteriorCache:
    """Upward messages and hyperparameters for the current data (recomputed when stale).

    An online update refreshes the messages in place (``buffers``: per tree the message arrays
    with room to grow and a scratch of flags). Shallow copies (the one an update saves for its
    rollback) share the counter ``shared`` of those refreshes: a copy is current only while
    no refresh ran since it was made, so a rolled-back update never leaves a half-refreshed
    cache behind, and a rejected one leaves it as it was.
    """

    smoothing = None  # (caches pickled before the noise floor: their params are both)
    buffers = trees = shared = None  # (caches pickled before the online refresh)
    seen = work = 0

    def __init__(self):
        self.version = -1
        self.params = None  # of the predictive
        self.smoothing = None  # of the posteriors (params but for a floored noise)
        self.messages = None
        self.log_ml = None  # None after an online refresh: computed when asked
        self.buffers = None
        self.trees = None  # the trees the messages belong to
        self.shared = [0]  # in-place refreshes of the buffers, shared by shallow copies
        self.seen = 0  # the refreshes this copy has seen
        self.work = 0  # nodes whose messages the last online refresh recomputed (tests)

    def __copy__(self):
        out = _PosteriorCache.__new__(_PosteriorCache)
        out.__dict__.update(self.__dict__)  # (not through __getstate__: shares ``shared``)
        return out

    def current(self, version):
        """Whether the cache holds the messages of the model at ``version``."""
        return self.version == version and (self.shared is None
                                            or self.shared[0] == self.seen)

    def __getstate__(self):
        # Rebuilt after loading (the buffers from the messages, the trees by a full pass, the
        # log marginal likelihood when asked): the same bytes whichever way it was computed.
        state = dict(self.__dict__, buffers=None, trees=None, shared=[0], seen=0, work=0,
                     log_ml=None)
        if not self.current(self.version):
            state["version"] = -1  # (a copy saved before a refresh that ran since)
        return state


class OnlinePosteriorMixin:
    """The regressor's step after an update (not for direct use): the hyperparameters on their
    schedule, the messages refreshed along the new points' paths in between. The regressor
    provides ``_posterior`` (a full pass) and ``_hyper_statistics`` (the batch law's inputs)."""

    def _refresh_posterior(self, trees, counts, n_new, chose):
        """After an update that added ``n_new`` points to ``trees`` (of ``counts`` nodes
        before): re-derive the hyperparameters on the schedule of ``HYPER_PARAMS_GROWTH`` (or
        when the held-out choice was renewed, ``chose``, or a setting changed) with all the
        messages; otherwise keep them and recompute only the messages of the nodes the
        update changed (:func:`refresh_messages`: the bits of a full pass)."""
        n = self._store.n_samples
        if "_frozen_prior" in self.__dict__:  # a lifetime-path copy: fixed hyperparameters
            self._posterior()
            return
        if chose or self._hyper_params_due(n):
            self._hyper_params = self._hyper_statistics(n)
            self._posterior()
            return
        cache = self._posterior_cache
        if (not cache.current(self._version - 1) or cache.trees is None
                or len(cache.trees) != len(trees) or len(trees) != len(self._trees)
                or any(a is not b or a is not c
                       for a, b, c in zip(cache.trees, trees, self._trees, strict=True))):
            self._posterior()  # a stale cache, or other trees: every message
            return
        # Copies of the messages the first time (they may be shared with a saved copy).
        buffers = cache.buffers or [(m.copy(), v.copy(), np.zeros(len(m), dtype=np.uint8))
                                    for m, v in cache.messages]
        if cache.shared is None:  # (a cache pickled before the online refresh)
            cache.shared = [0]
        cache.shared[0] += 1  # refreshed in place below: earlier copies are stale
        cache.seen = cache.shared[0]
        X_new = self._store.X[n - n_new:]
        cache.buffers, cache.messages, cache.work = refresh_messages(
            trees, buffers, cache.smoothing, counts, X_new)
        cache.log_ml = None
        cache.version = self._version
        # [debias, issue 22] the shorter reading's messages, if read since the last full pass
        refresh_short_messages(self, cache, trees, counts, X_new)

    def _hyper_params_due(self, n):
        """Whether the hyperparameters are derived again after an update to ``n`` stored
        points that did not renew the held-out choice (see ``HYPER_PARAMS_GROWTH``)."""
        state = self.__dict__.get("_hyper_params")
        return (state is None or n >= HYPER_PARAMS_GROWTH * state[-1]
                or state[5:-1] != self._hyper_settings())

    def _fast_one(self, x, y):
        """The one-row fast path of ``learn_one`` (see :mod:`mondrian.forest._ingest`):
        learn ``(x, y)`` and return True when the update is one the full route would make
        without re-deriving anything but the messages along the new point's path; else
        change nothing and return False.

        That state: a fitted model in its steady stream (:meth:`_frozen_stream`), no
        forgetting window, a finite float target within the frozen target map's range
        (:meth:`_TargetScaler.fits`: no rescaling), and neither the held-out choice nor the
        hyperparameters due with the new point. The update is then exactly the route's: the
        statistics row ``(1, y_std, y_std**2)`` added to the sums and stored through
        :meth:`TreeEnsemble.add_scaled_logged`, a new version, and the messages refreshed
        inside that logged update, so that a failure of the refresh rolls the trees back too
        (the sums, the version and the cache are put back here).
        """
        d = self.__dict__
        ensemble = d.get("_ensemble")
        if (ensemble is None or ensemble.window is not None or self.window is not None
                or "_frozen_prior" in d or d.get("_hyper_params") is None):
            return False
        if type(y) is not float:
            if not isinstance(y, (numbers.Real, np.number)) or isinstance(y, bool):
                return False
            try:
                y = float(y)
            except (TypeError, ValueError, OverflowError):
                return False
        y_scaler = d.get("_y_scaler")
        if not (math.isfinite(y) and y_scaler is not None and y_scaler.fits(y)):
            return False
        n = ensemble.store.n_samples + 1
        if (not self._frozen_stream() or self._hyper_choice_due(n)
                or self._hyper_params_due(n)):
            return False
        row = self._fast_scaled_row(x, clip=False)
        if row is None:
            return False
        y_std = (0.5 * y - 0.5 * y_scaler.offset) / (0.5 * y_scaler.scale)
        stats = np.array([[1.0, y_std, y_std * y_std]])
        sums = self._y_sums + stats[0]
        if not (math.isfinite(y_std * y_std) and np.isfinite(sums).all()):
            return False  # the route raises its error
        trees = list(self._trees)
        counts = [tree.node_count for tree in trees]
        # The cache is refreshed in place (the debiased reading's messages are kept beside
        # that very object); a failure puts back a shallow copy, stale as the route's.
        saved = (self._y_sums, self._version, copy.copy(self._posterior_cache))

        def refresh():
            self._y_sums = sums
            self._version += 1
            self._refresh_posterior(trees, counts, 1, False)

        try:
            ensemble.add_scaled_logged(row, stats, refresh)
        except BaseException:
            self._y_sums, self._version, self._posterior_cache = saved
            raise
        return True

    def _hyper_settings(self):
        """The parameters a derivation of the hyperparameters depends on."""
        return (self.smoothing, self.noise_variance, self.prior_variance, self.sigmoid_rate)
