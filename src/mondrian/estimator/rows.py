"""Rows in: the validation of the rows an estimator reads and learns, with the one-row fast
path (the same checks, made directly) that keeps streaming calls cheap."""

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from mondrian.core._online import all_true, scale_row
from mondrian.core._tree import MondrianTree
from mondrian.core.feature_map import MAX_SCALED
from mondrian.estimator.params import same_param

__all__ = ["RowsMixin", "FAST_ROWS", "FAST_BATCH_ROWS"]

# Largest batch taking the direct validation of BaseMondrianEnsemble._fast_rows (one-row streams).
FAST_ROWS = 64
# Largest mini-batch of partial_fit taking it (its checks cost O(rows x features) in NumPy,
# as the full validation's do, without the full validation's fixed ~1 ms per call).
FAST_BATCH_ROWS = 65536

# The float64 dtype, compared by identity on the one-row paths (another byte order is another
# object, and takes the full validation).
_FLOAT64 = np.dtype(np.float64)


class RowsMixin:
    """Validation of the rows of a :class:`~mondrian.estimator.ensemble.BaseMondrianEnsemble`
    (reads ``self._ensemble``, ``n_features_in_``, ``feature_names_in_``)."""

    def _validate_X_predict(self, X):
        if "_trees" not in self.__dict__:
            check_is_fitted(self, "_trees")
        fast = self._fast_rows(X)
        if fast is not None and fast.shape[0] == 1:
            scaled = self._fast_scaled_row(fast[0], clip=True)
            if scaled is not None:
                return scaled
        X = fast if fast is not None else validate_data(
            self, X, reset=False, dtype=np.float64, order="C"
        )
        return self._scaler.transform(X, clip=True)

    def _fast_rows(self, X, max_rows=FAST_ROWS):
        """``X`` itself when full validation would return it unchanged, else None.

        A C-contiguous float64 ndarray of at most ``max_rows`` rows (``FAST_ROWS``; a
        mini-batch of ``partial_fit``: ``FAST_BATCH_ROWS``) of the fitted width with finite
        values, given to a
        model fitted without feature names, is exactly what ``validate_data(reset=False,
        dtype=np.float64, order="C")`` returns (the same object, no warning); checking that
        directly skips most of the per-call cost of one-row streaming calls. Anything else
        (lists, other dtypes, DataFrames, sparse input, NaN, a wrong width) returns None and
        takes the full validation, which raises or warns exactly as before.
        """
        if (
            type(X) is np.ndarray
            and X.dtype == np.float64
            and X.ndim == 2
            and 0 < X.shape[0] <= max_rows
            and X.shape[1] == self.__dict__.get("n_features_in_", -1)
            and X.flags.c_contiguous
            and "feature_names_in_" not in self.__dict__
            and np.isfinite(X).all()
        ):
            return X
        return None

    # ----------------------------------------------------------------- one sample

    def _fast_scaled_row(self, x, clip):
        """One sample in the trees' coordinates, ``(1, n_features)``, when the full path
        (:meth:`_one_row`, then the feature map's ``transform``) would accept it; else None.

        Taken by a row that :meth:`_fast_values` accepts, under a feature map without a
        quantile part (:meth:`_fast_map`): :func:`~mondrian.core._online.scale_row` computes
        what ``transform`` computes, bit for bit, in one call. Anything else (lists, other
        dtypes, NaN, a wrong width or key set, values too large to store when ``clip`` is
        False) returns None and the caller takes the full path, which raises or converts
        exactly as before.
        """
        x = self._fast_values(x)
        if x is None:
            return None
        feature_map = self._fast_map()
        if feature_map is None:
            return None
        return scale_row(x, feature_map.offset, feature_map.scale, feature_map.weights,
                         MAX_SCALED, clip)

    def _fast_values(self, x):
        """One sample as a 1-D float64 ndarray of the fitted width for the one-row fast paths,
        or None (the full path then decides).

        A plain 1-D float64 ndarray of that width is returned as it is; a dict whose keys are
        exactly the features the model reads (``feature_names_in_``, else the key order of the
        first dict learnt) gives its values in that order. Its values may still be NaN or
        infinite: the readers check them. None also when the model has no ensemble yet.
        """
        d = self.__dict__
        if d.get("_ensemble") is None:
            return None
        if type(x) is dict:
            names = d.get("feature_names_in_")
            if names is None:
                names = d.get("_dict_keys")
            if names is None or len(x) != len(names):
                return None
            try:  # every name found and as many keys as names: the same key set
                x = np.array([x[name] for name in names], dtype=np.float64)
            except (KeyError, TypeError, ValueError):
                return None
        elif not (type(x) is np.ndarray and x.dtype is _FLOAT64 and x.ndim == 1):
            return None
        if x.shape[0] != d.get("n_features_in_", -1):
            return None
        return x

    def _fast_map(self):
        """The feature map when the one-row fast paths can apply it in place (a min-max map
        with its offset and scale set, no quantile part), else None."""
        feature_map = self._ensemble.feature_map
        if feature_map.knots is not None or feature_map.offset is None:
            return None
        return feature_map

    def _frozen_stream(self):
        """Whether an online update of this fitted model may take the one-row fast path
        (:meth:`TreeEnsemble.add_scaled_logged`): its trees log their changes, the feature map
        is frozen, no stream window of ``feature_weights="auto"`` is open, and no parameter
        changed since fit (the checks of :meth:`_warm_start_check` that would refuse the
        update or add trees). Otherwise the full path runs (and raises what it raises)."""
        d = self.__dict__
        ensemble = d.get("_ensemble")
        if (ensemble is None or ensemble.read_only or ensemble.tree_class is not MondrianTree
                or d.get("_read_only_view") or "_weights_window" in d):
            return False
        feature_map = ensemble.feature_map
        if (feature_map.n_seen < feature_map.warm_up or feature_map.frozen is None
                or feature_map.knots is not None or not all_true(feature_map.frozen)):
            return False
        if self._n_trees() != len(ensemble.trees):
            return False
        for name, before in d.get("_fit_params", {}).items():
            now = getattr(self, name)
            if now is not before and not same_param(now, before):
                return False
        return True

    def _one_row(self, x, learn=False):
        """A single sample (1-D array-like or dict) as a (1, n_features) float64 array.

        Only ``learn=True`` (``learn_one``) records the key order of a first dict: predicting
        never changes the model.
        """
        if isinstance(x, dict):
            names = getattr(self, "feature_names_in_", None)
            if names is None:
                names = getattr(self, "_dict_keys", None)
                if names is None:
                    names = list(x)
                    if learn:
                        self._dict_keys = names
            try:
                values = [x[name] for name in names]
            except KeyError as exc:
                raise ValueError(f"feature {exc.args[0]!r} is missing from x") from None
            if len(x) > len(values):
                known = set(names)
                unknown = [key for key in x if key not in known]
                raise ValueError(
                    f"x has features {unknown} that the model never saw (it reads "
                    f"{list(names)}); growing the feature set is not supported"
                )
            x = values
        row = np.asarray(x, dtype=np.float64).reshape(1, -1)
        if hasattr(self, "n_features_in_") and row.shape[1] != self.n_features_in_:
            raise ValueError(
                f"x has {row.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input"
            )
        if not np.isfinite(row).all():
            raise ValueError(
                "x contains NaN or infinity: the Mondrian models take no missing values; "
                "impute them first (e.g. sklearn.impute.SimpleImputer)"
            )
        return row

