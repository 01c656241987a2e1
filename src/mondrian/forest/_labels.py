"""The classes of a forest classifier: labels checked and encoded as codes of ``classes_``,
class columns that grow as classes arrive, and the class weights of the rows."""

import numbers

import numpy as np
from sklearn.utils.multiclass import check_classification_targets

from mondrian.estimator.inputs import check_sample_weight
from mondrian.estimator.rows import FAST_ROWS

__all__ = ["ClassLabelsMixin"]


def _reject_mixed_labels(y):
    """Raise a TypeError when a label sequence mixes strings with numbers.

    NumPy would silently turn such a list into strings, so the check runs on the raw input.
    """
    if y is None:
        return
    if isinstance(y, (list, tuple)):
        flat = np.ravel(np.asarray(y, dtype=object))
    else:
        flat = np.asarray(y)
        if flat.dtype != object:
            return
        flat = flat.ravel()
    is_str = [isinstance(v, (str, bytes)) for v in flat]
    if any(is_str) and not all(is_str):
        raise TypeError("y mixes strings and numbers; labels must be all strings or all numbers")


def _check_one_label(y):
    """Raise a clear error for a single label that could not be a class (before any change)."""
    if y is None:
        raise ValueError("y is None: learn_one needs the sample's class label")
    if np.ndim(y) != 0:
        raise ValueError(f"y must be a single label (a number or a string), got {y!r}")
    try:
        hash(y)
    except TypeError:
        raise TypeError(f"a label must be hashable, got {type(y).__name__}") from None
    if isinstance(y, (float, np.floating)) and not np.isfinite(y):
        raise ValueError(f"a label must be finite, got {y!r}")
    check_classification_targets(np.asarray([y]))


def _search_counts(sample_weight, X, weights):
    """The sample weights alone (without the class factors, which the weight search's probes
    apply themselves), aligned with ``weights`` for ``drop_zero_weights``."""
    if weights is None:
        return np.ones(len(X))
    return np.ones(len(weights)) if sample_weight is None else check_sample_weight(
        sample_weight, X)


def _or_none(counts, sample_weight):
    return None if sample_weight is None else counts


def _refuse_unseen(y, allowed, what):
    """Raise the ValueError of labels of ``y`` outside ``allowed`` (described by ``what``)."""
    unseen = np.setdiff1d(np.unique(y), allowed)
    if unseen.size:
        raise ValueError(
            f"y contains labels {unseen.tolist()} that are not in {what} ({allowed.tolist()})"
        )


class ClassLabelsMixin:
    """Labels, classes and class weights of the forest classifier and its single tree (reads
    ``classes_``, ``_classes_fixed``, ``class_weight`` and the ensemble's class columns)."""

    def _rows(self, codes, weights=None):
        """Contribution rows of labels with codes ``codes`` (positions in ``classes_``): the
        (weighted) one-hot rows, in the stored columns (:meth:`_class_columns`)."""
        rows = np.zeros((codes.shape[0], self._ensemble.width), dtype=np.float64)
        rows[np.arange(codes.shape[0]), self._class_columns()[codes]] = (
            1.0 if weights is None else weights)
        return rows

    def _class_columns(self):
        """Stored column of each class of ``classes_`` in the rows and the trees' statistics.

        Classes keep the column they got on arrival (new ones take the next spare column), so
        a new class costs O(n_classes) per tree, not a rewrite of every node: the width
        doubles when the spare columns run out (O(log n_classes) rewrites in all). The
        readers take the columns in this order, so every output follows ``classes_``.
        """
        order = self._ensemble.column_order
        return np.arange(len(self.classes_)) if order is None else np.array(order, dtype=np.intp)

    def _class_factor(self, label):
        """Weight of the class ``label`` under a dict ``class_weight`` (1 when absent)."""
        factor = self.class_weight.get(label, 1.0)
        if (not isinstance(factor, numbers.Real) or isinstance(factor, bool)
                or not np.isfinite(factor) or factor < 0):
            raise ValueError(
                f"class_weight[{label!r}] must be a finite non-negative number, got {factor!r}"
            )
        return float(factor)

    def _sample_weights(self, sample_weight, X, y, online, allow_empty=False):
        """Row weights: ``sample_weight`` times the class weights (None: all ones).

        ``class_weight="balanced"`` gives class ``k`` the factor ``W / (K * W_k)`` (``W_k``
        the weight of class ``k``, ``W`` the total, ``K`` the classes of positive weight):
        scikit-learn's rule, computed on weighted counts so that integer weights still equal
        repeated rows. It needs the whole training set, so only ``fit`` takes it.
        """
        weights = check_sample_weight(sample_weight, X)
        if self.class_weight is None:
            return weights
        if isinstance(self.class_weight, str) and online:
            raise ValueError(
                'class_weight="balanced" is computed on the whole training set: use fit, or '
                "give partial_fit a dict of class weights"
            )
        base = np.ones(len(y)) if weights is None else weights
        labels, inverse = np.unique(y, return_inverse=True)
        if isinstance(self.class_weight, str):
            totals = np.bincount(inverse, weights=base, minlength=len(labels))
            factors = np.zeros(len(labels))
            positive = totals > 0
            factors[positive] = base.sum() / (positive.sum() * totals[positive])
        else:
            factors = np.array([self._class_factor(label) for label in labels.tolist()])
        weights = base * factors[inverse]
        if not allow_empty and not np.any(weights > 0):
            raise ValueError(
                "every sample has zero weight after class_weight: nothing to learn from"
            )
        return weights

    def _class_codes(self):
        """``{label: column}`` lookup for the one-sample path, rebuilt when classes change."""
        cache = getattr(self, "_codes_cache", None)
        if cache is None or cache[0] is not self.classes_:
            labels = self.classes_.tolist()
            codes = {label: k for k, label in enumerate(labels)}
            # One-hot rows by code, made on first use: a table of every class would cost
            # O(n_classes * width) per new class, quadratic when classes arrive one by one.
            self._codes_cache = cache = (self.classes_, codes, labels, {})
        return cache[1]

    def _one_hot_row(self, code):
        """The (1, width) statistics row of one sample of class ``code`` (read-only)."""
        self._class_codes()
        rows = self._codes_cache[3]
        row = rows.get(code)
        if row is None:
            row = np.zeros((1, self._ensemble.width))
            row[0, self._class_columns()[code]] = 1.0
            row.flags.writeable = False
            rows[code] = row
        return row

    def _check_label_kind(self, y):
        if not hasattr(self, "classes_") or len(y) == 0:
            return
        old_str = self.classes_.dtype.kind in "OUS"
        new_str = np.asarray(y).dtype.kind in "OUS"
        if old_str != new_str:
            raise TypeError(
                f"labels of dtype {np.asarray(y).dtype} cannot be mixed with the classes "
                f"seen so far ({self.classes_.dtype})"
            )

    def _add_classes(self, new_classes):
        """Grow ``classes_`` (kept sorted): each new class takes the next spare stored column
        and its place in the trees' read columns; the rows are rewritten (to twice the width)
        only when no spare column is left."""
        merged = np.union1d(self.classes_, new_classes)
        ensemble = self._ensemble
        n_old, n_new = len(self.classes_), len(merged)
        new = ~np.isin(merged, self.classes_)
        order = np.empty(n_new, dtype=np.intp)
        order[~new] = self._class_columns()  # both sorted: classes_ in merged order
        order[new] = n_old + np.arange(n_new - n_old)  # stored columns 0..n_old-1 are in use
        width = ensemble.width
        ensemble.set_columns(order, max(n_new, 2 * width) if n_new > width else width)
        self.classes_ = merged

    def _sort_columns(self):
        """Store the classes in the order of ``classes_``, without spare columns (one rewrite
        unless they are so already): the layout of a forest told its classes up front, on
        which forests are merged."""
        ensemble, n_classes = self._ensemble, len(self.classes_)
        if ensemble.column_order is None and ensemble.width == n_classes:
            return
        column_map = np.full(ensemble.width, -1, dtype=np.intp)
        column_map[self._class_columns()] = np.arange(n_classes)
        ensemble.set_columns(np.arange(n_classes), n_classes, column_map)
        self.__dict__.pop("_codes_cache", None)

    def _encode_known(self, y):
        """Codes of a small integer ``y`` whose labels are all in ``classes_`` (what
        :meth:`_encode` gives, from the cached ``{label: column}`` lookup, without np.unique
        and setdiff1d), else None."""
        if y.shape[0] > FAST_ROWS or y.dtype.kind not in "iu":
            return None
        lookup = self._class_codes()
        codes = [lookup.get(label) for label in y.tolist()]
        if None in codes:
            return None
        return np.array(codes, dtype=np.intp)

    def _encode(self, y):
        """Codes of ``y`` in ``classes_``, adding unseen classes unless they were fixed."""
        codes = self._encode_known(y)
        if codes is not None:
            return codes
        unseen = np.setdiff1d(np.unique(y), self.classes_)
        if unseen.size:
            if self._classes_fixed:
                raise ValueError(
                    f"y contains labels {unseen.tolist()} that are not in the classes "
                    f"fixed by `classes=` ({self.classes_.tolist()})"
                )
            self._add_classes(unseen)
        return np.searchsorted(self.classes_, y).astype(np.intp)

    def _apply_classes(self, y, classes):
        """Check the labels ``y`` and the ``classes`` argument of a later call against the
        classes seen or fixed, then fix ``classes`` (adding its new ones)."""
        if classes is not None:
            if self._classes_fixed and not np.array_equal(classes, self.classes_):
                raise ValueError(
                    f"`classes`={classes.tolist()} differs from the classes fixed on the "
                    f"first call ({self.classes_.tolist()})"
                )
            missing = np.setdiff1d(self.classes_, classes)
            if missing.size:
                raise ValueError(f"`classes` lacks classes already seen: {missing.tolist()}")
        if (self._classes_fixed or classes is not None) and not (
            classes is None and self._encode_known(y) is not None
        ):
            allowed = classes if classes is not None else self.classes_
            _refuse_unseen(y, allowed, "the classes fixed by `classes=`")
        if classes is not None:
            extra = np.setdiff1d(classes, self.classes_)
            if extra.size:
                self._add_classes(extra)
            self._classes_fixed = True

    def _classes_already(self, classes):
        """Whether ``classes`` is the class set this model has already fixed (cheap when the
        same object is passed on every call, as a stream does)."""
        if not self.__dict__.get("_classes_fixed", False):
            return False
        if classes is self.__dict__.get("_classes_argument"):
            return True
        try:
            same = np.array_equal(np.unique(np.asarray(classes)), self.classes_)
        except TypeError:  # labels of mixed types: the full check reports it
            return False
        if same:
            self._classes_argument = classes
        return same

    def _is_known_class(self, y):
        if "classes_" not in self.__dict__ or np.ndim(y) != 0:
            return False
        try:
            return y in self._class_codes()
        except TypeError:  # unhashable: _check_one_label says so
            return False
