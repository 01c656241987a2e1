"""Forgetting training points: which stored copies a request removes, and the estimator method.

The trees forget exactly (:mod:`mondrian.core._forget`, docs/algorithms.md §13): after
``forget(S)`` a model fitted on ``D`` has the law of a model fitted on ``D \\ S``. This module
finds the stored copies of the rows to forget (matched bit for bit after the frozen feature
map, with their label), plans how much of each stored weight goes, and runs the update
atomically.
"""

import numbers

import numpy as np
from sklearn.utils._param_validation import validate_parameter_constraints
from sklearn.utils.validation import check_is_fitted, validate_data

from mondrian.core._forget_store import leaf_matches
from mondrian.core.ensemble import TreeEnsemble
from mondrian.core.feature_map import FeatureScaler
from mondrian.estimator.atomic import online_update, unchanged_on_error
from mondrian.estimator.inputs import check_sample_weight

__all__ = ["ForgetMixin", "plan_forget", "stored_matches"]


# Query batches up to this size compare each row with the whole store (vectorised); larger
# ones index the store once by the bytes of its rows.
_DIRECT_ROWS = 32

# A weight left below this fraction of the stored one is taken as fully forgotten (rounding of
# fractional weights removed in several parts).
_WEIGHT_RTOL = 1e-12


def _row_keys(U):
    U = np.ascontiguousarray(U + 0.0)  # (-0.0 + 0.0 is +0.0: equal rows, equal bytes)
    return U.view(np.dtype((np.void, U.shape[1] * U.itemsize))).ravel()


def stored_matches(X_store, U, tree=None):
    """Store indices of the rows of ``X_store`` equal to each row of ``U`` (in store order).

    With ``tree``, a tree holding every stored point, each row is looked for in the leaf it
    routes to (:func:`mondrian.core._forget_store.leaf_matches`: O(depth + leaf size) per row, not
    a pass over the store).

    Returns
    -------
    list of ndarray of intp
    """
    if tree is not None:
        return leaf_matches(tree, X_store, np.ascontiguousarray(U, dtype=np.float64))
    return _scan_matches(X_store, U)


def _scan_matches(X_store, U):
    """:func:`stored_matches` by a pass over the store (no tree to route the rows)."""
    if U.shape[0] <= _DIRECT_ROWS:
        return [np.flatnonzero((X_store == u).all(axis=1)) for u in U]
    keys = _row_keys(X_store)
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    wanted = _row_keys(U)
    lo = np.searchsorted(keys, wanted, side="left")
    hi = np.searchsorted(keys, wanted, side="right")
    return [np.sort(order[a:b]) for a, b in zip(lo.tolist(), hi.tolist(), strict=True)]


def plan_forget(X_store, rows_store, U, units=None, weight_columns=None, amounts=None,
                describe=None, stamps=None, tree=None):
    """Which stored points a request removes, and how.

    Each row ``r`` of ``U`` (trees' coordinates) removes one stored copy: the oldest point with
    the same coordinates whose contribution row is ``units[r]`` times its weight (the weight
    read in column ``weight_columns[r]``); any point with those coordinates when ``units`` is
    None. With ``amounts``, row ``r`` removes that much weight instead, from the oldest
    matching copies on: a copy left without weight is removed, the others keep
    ``units[r] * (w - taken)``.

    Returns
    -------
    indices : ndarray of intp
        The stored points concerned (sorted, each once).
    deltas : ndarray of shape (len(indices), width)
        What each loses: its whole row when it is removed.
    drop : ndarray of uint8
        Whether each point is removed.
    rows : ndarray or None
        The store's rows with the kept points' new rows (a new array), None when no point
        stays with a lower weight.

    Raises
    ------
    ValueError
        Naming the first row that is not stored (or not with that much weight), or when the
        request would remove every stored point.

    ``tree``: a tree holding every stored point, which finds the matches
    (:func:`stored_matches`), or None.
    """
    describe = describe or (lambda r: f"row {r} of X")
    flat, starts, fits = _candidates(stored_matches(X_store, U, tree), rows_store, units,
                                     weight_columns, stamps)
    taken = {}  # index -> weight taken so far
    unit_of = {}  # index -> a request row whose unit it matched
    gone = set()
    for r in range(U.shape[0]):
        need = None if amounts is None else float(amounts[r])
        done = False
        for p in range(starts[r], starts[r + 1]):
            i = flat[p]
            if i in gone or not fits[p]:
                continue
            if need is None:
                gone.add(i)
                done = True
                break
            w = rows_store[i, weight_columns[r]]
            have = w - taken.get(i, 0.0)
            if have <= 0:
                continue
            take = min(have, need)
            taken[i] = taken.get(i, 0.0) + take
            unit_of[i] = r
            need -= take
            if have - take <= _WEIGHT_RTOL * w:
                gone.add(i)
            if need <= _WEIGHT_RTOL * float(amounts[r]):
                done = True
                break
        if not done:
            what = "is not stored in the model" if need is None or need == float(amounts[r]) \
                else "is stored with less weight than sample_weight asks to forget"
            raise ValueError(f"cannot forget {describe(r)}: it {what} (rows are matched "
                             "exactly after the feature map, with their label)")
    indices = np.array(sorted(gone | set(taken)), dtype=np.intp)
    width = rows_store.shape[1]
    deltas = np.zeros((len(indices), width))
    drop = np.zeros(len(indices), dtype=np.uint8)
    new_rows = None
    for k, i in enumerate(indices.tolist()):
        if i in gone:
            deltas[k] = rows_store[i]
            drop[k] = 1
            continue
        r = unit_of[i]
        kept = units[r] * (rows_store[i, weight_columns[r]] - taken[i])
        deltas[k] = rows_store[i] - kept
        if new_rows is None:
            new_rows = rows_store.copy()
        new_rows[i] = kept
    if len(gone) == X_store.shape[0]:
        # No tree of no points: the compiled readers need a root.
        raise ValueError(f"cannot forget all {len(gone)} stored points: a model needs at "
                         "least one; fit a new model on other data instead")
    return indices, deltas, drop, new_rows


def _candidates(candidates, rows_store, units, weight_columns, stamps):
    """The stored copies each request row may remove, flat: row ``r``'s are
    ``flat[starts[r]:starts[r + 1]]``, oldest first (by arrival, not by place in the store:
    earlier forgets moved points; arrival numbers are distinct, so a store in arrival order
    keeps its order), and ``fits[p]`` says whether copy ``p``'s row is the request's unit
    row times its (positive) weight. Array operations over all rows at once (a request of
    many rows would otherwise compare them one by one)."""
    if len(candidates) <= _DIRECT_ROWS:  # (a few rows: fewer array calls one by one)
        flat, starts, fits = [], [0], []
        for r, c in enumerate(candidates):
            if stamps is not None and len(c) > 1:
                c = c[np.argsort(stamps[c], kind="stable")]
            for i in c.tolist():
                flat.append(i)
                w = None if units is None else rows_store[i, weight_columns[r]]
                fits.append(units is None or bool(
                    w > 0 and np.array_equal(rows_store[i], units[r] * w)))
            starts.append(len(flat))
        return flat, starts, fits
    lengths = np.array([len(c) for c in candidates], dtype=np.intp)
    starts = np.zeros(len(candidates) + 1, dtype=np.intp)
    np.cumsum(lengths, out=starts[1:])
    flat = np.concatenate(candidates) if candidates else np.zeros(0, dtype=np.intp)
    owner = np.repeat(np.arange(len(candidates)), lengths)
    if stamps is not None and len(flat):
        flat = flat[np.lexsort((stamps[flat], owner))]  # (owner blocks stay in place)
    fits = np.ones(len(flat), dtype=bool)
    if units is not None and len(flat):
        rows = rows_store[flat]
        weights = rows[np.arange(len(flat)), np.asarray(weight_columns)[owner]]
        fits = (weights > 0) & (rows == units[owner] * weights[:, None]).all(axis=1)
    return flat.tolist(), starts.tolist(), fits.tolist()


def _valid_window(window):
    """Whether ``window`` is None or a whole number of points, at least 1."""
    return window is None or (isinstance(window, numbers.Integral)
                              and not isinstance(window, bool) and window >= 1)


class ForgetMixin:
    """``forget``: remove training points exactly (estimators on a :class:`TreeEnsemble`).

    Subclasses give :meth:`_forget_units` (the contribution row of a unit weight of each
    labelled row, and the column holding its weight) and may extend :meth:`_after_forget`.
    """

    # Whether forget commits in one step (TreeEnsemble.forget_committed: atomic without a
    # snapshot or undo log, for a model that derives nothing else from its points; the
    # others extend _after_forget, which runs under a snapshot of the trees).
    _forget_commits = False

    def _forget_units(self, y, n_rows):
        """``(units, weight_columns, amounts_factor)`` for the labels ``y`` (None: any label);
        ``amounts_factor`` multiplies ``sample_weight`` (class weights), or None."""
        return None, None, None

    def _after_forget(self):
        """Update what the model derives from its stored points (subclasses)."""

    def _after_window(self):
        """Update what the model derives from its stored points after the window dropped
        the oldest (subclasses; the update that added points refreshes the rest)."""

    def set_params(self, **params):
        out = super().set_params(**params)
        ensemble = self.__dict__.get("_ensemble")
        if "window" in params and ensemble is not None and not ensemble.read_only:
            # The one-row paths read the window from the ensemble.
            ensemble.window = (None if "_weights_window" in self.__dict__
                               or not _valid_window(self.window) else self.window)
        return out

    def _frozen_stream(self):
        # An invalid window (set_params does not check, as scikit-learn's conventions ask)
        # takes the full path, which refuses the update.
        window = getattr(self, "window", None)
        return (window is None or _valid_window(window)) and super()._frozen_stream()

    def _add_points(self, X, rows, n_jobs=None):
        # The window applies once the stream window of feature_weights="auto" (which
        # re-maps every stored point when it closes) is closed.
        ensemble = self._ensemble
        window = getattr(self, "window", None)
        if not _valid_window(window):  # (set by set_params since the fit: refused here)
            validate_parameter_constraints(
                {"window": self._parameter_constraints["window"]}, {"window": window},
                caller_name=type(self).__name__)
        ensemble.window = None if "_weights_window" in self.__dict__ else window
        n = ensemble.store.n_samples
        super()._add_points(X, rows, n_jobs)
        if ensemble.store.n_samples < n + len(X):
            self._after_window()

    def _feed_weights_window(self, X, y, sample_weight=None):
        super()._feed_weights_window(X, y, sample_weight)
        ensemble = self.__dict__.get("_ensemble")
        window = getattr(self, "window", None)
        if ("_weights_window" not in self.__dict__ and ensemble is not None
                and ensemble.window is None and window is not None and _valid_window(window)):
            # The stream window of feature_weights="auto" closed in this update: the window
            # applies from now on, also on the one-row path (which reads it from the ensemble).
            ensemble.window = window
            if ensemble.trim_window():
                self._after_window()

    def forget(self, X, y=None, sample_weight=None):
        """Remove training points, exactly: the model then has the law of one fitted
        without them.

        Each row removes one stored copy of itself (the oldest), matched bit for bit after
        the feature map and, when ``y`` is given, with its label (its target for a regressor).
        The trees shrink their boxes, drop the cuts that no longer separate the remaining
        points and pause the leaves that a fit on the remaining points would pause; by the
        projectivity of the Mondrian process the result has the law of a fit on what remains
        (docs/forgetting.md; the argument is in docs/algorithms.md §13). The feature map
        stays frozen.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to forget, as they were learnt.
        y : array-like of shape (n_samples,), default=None
            Their labels (targets); None matches a stored copy whatever its label.
        sample_weight : array-like of shape (n_samples,), default=None
            The weight to remove from each row (needs ``y``): a stored copy keeps the rest of
            its weight, or goes when none is left. None removes whole copies.

        Returns
        -------
        self : object

        Raises
        ------
        ValueError
            If a row is not stored (or not with that much weight): nothing is changed then,
            as with every failed update.

        Examples
        --------
        >>> import numpy as np
        >>> from mondrian import MondrianForestClassifier
        >>> X = np.arange(20.0).reshape(10, 2)
        >>> y = np.array([0, 1] * 5)
        >>> clf = MondrianForestClassifier(n_estimators=3, random_state=0).fit(X, y)
        >>> clf.forget(X[:2], y[:2]).n_samples_seen_
        8
        """
        if "_ensemble" not in self.__dict__:
            check_is_fitted(self, "_trees")
        self._check_writable()
        commits = self._forget_commits and type(self)._after_forget is ForgetMixin._after_forget
        with unchanged_on_error(self) if commits else online_update(self, X):
            fast = self._fast_rows(X)
            X = fast if fast is not None else validate_data(
                self, X, reset=False, dtype=np.float64, order="C")
            n = X.shape[0]
            if y is not None:
                y = np.asarray(y)
                if y.shape != (n,):
                    raise ValueError(f"y must have shape ({n},), got {y.shape}")
            if sample_weight is not None and y is None:
                raise ValueError("forgetting part of a row's weight (sample_weight) needs "
                                 "its label y")
            amounts = check_sample_weight(sample_weight, X)
            if amounts is not None and np.any(amounts <= 0):
                raise ValueError("sample_weight of forget must be positive")
            self._check_frozen_map()
            units, columns, factor = self._forget_units(y, n)
            if amounts is not None and factor is not None:
                amounts = amounts * factor
            ensemble = self._ensemble
            U = ensemble.feature_map.transform(X)
            store = ensemble.store
            plan = plan_forget(store.X, store.rows, U, units, columns, amounts,
                               lambda r: _describe(X, y, r), store.stamps,
                               ensemble.matching_tree())
            if ensemble.feature_map.n_seen < ensemble.feature_map.warm_up:
                self._ensemble = _refit_remaining(ensemble, *plan, n_jobs=self._n_jobs())
            elif commits:
                ensemble.forget_committed(*plan)  # (the last write: nothing follows it)
                return self
            else:
                ensemble.forget(*plan)
            self._after_forget()
        return self

    def _check_frozen_map(self):
        if "_weights_window" in self.__dict__:
            raise ValueError(
                'forget needs fixed feature weights: the stream window of feature_weights='
                '"auto" is still open (it chooses the weights once it holds '
                f"{self._auto_warm_up()} rows); learn more rows first"
            )


def _refit_remaining(ensemble, indices, deltas, drop, rows=None, n_jobs=None):
    """During the warm-up of the min-max map (fewer points than ``warm_up`` seen) the map
    is that of every point seen, and a change re-samples the trees from their seeds: forgetting
    then re-builds the ensemble from its seeds on the remaining points (a few dozen), which is
    what a fit on them gives."""
    fm, store = ensemble.feature_map, ensemble.store
    if fm.originals is None or fm.originals.shape[0] != store.n_samples:
        raise ValueError("cannot forget during the warm-up of this model's feature map")
    keep = np.ones(store.n_samples, dtype=bool)
    keep[indices[np.asarray(drop, dtype=bool)]] = False
    kept_rows = (store.rows if rows is None else rows[: store.n_samples])[keep]
    feature_map = FeatureScaler(fm.enabled, warm_up=fm.warm_up, weights=fm.weights,
                                knots=fm.knots)
    out = TreeEnsemble(ensemble.n_features, ensemble.width, ensemble.lifetime, feature_map,
                       ensemble.seeds, min_samples_split=ensemble.min_samples_split,
                       pause_pure=ensemble.pause_pure, tree_class=ensemble.tree_class,
                       count_columns=ensemble.count_columns, lean_values=ensemble.lean_values)
    if ensemble.column_order is not None:
        out.set_columns(np.asarray(ensemble.column_order))
    if keep.any():
        out.add_points(fm.originals[keep], np.ascontiguousarray(kept_rows), n_jobs)
    return out


def _describe(X, y, r):
    text = f"row {r} of X ({np.array2string(X[r], threshold=8)})"
    if y is not None:
        text += f" with label {np.asarray(y)[r].tolist()!r}"
    return text
