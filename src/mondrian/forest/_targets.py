"""The regressor's targets: checks of the targets given, and the affine map of the targets
the trees sum (:class:`_TargetScaler`), with the exact rescaling of stored sums it asks for."""

import math

import numpy as np

__all__ = ["_TargetScaler", "_rescaled_rows", "_rescaled_tree", "_check_one_output",
           "_check_one_target", "_check_finite_targets"]


def _check_one_output(y):
    """A clear error for multi-output targets (before scikit-learn's generic one)."""
    shape = getattr(y, "shape", None)
    if shape is None:
        shape = np.asarray(y).shape if y is not None else ()
    if len(shape) == 2 and shape[1] != 1:
        raise ValueError(
            f"y has shape {shape}: the Mondrian regressors predict one target (their Gaussian "
            "leaf statistics are per output). Fit one model per output, e.g. "
            "sklearn.multioutput.MultiOutputRegressor(MondrianForestRegressor())"
        )


def _check_one_target(y):
    """One regression target as a float, or a clear error (before any change)."""
    if y is None:
        raise ValueError("y is None: learn_one needs the sample's target")
    if isinstance(y, (str, bytes)) or np.ndim(y) != 0:
        raise ValueError(f"y must be a single number, got {y!r}")
    try:
        value = float(y)
    except (TypeError, ValueError):
        raise TypeError(f"y must be a real number, got {type(y).__name__}") from None
    if not np.isfinite(value):
        raise ValueError(f"y must be finite, got {y!r}")
    return value


def _check_finite_targets(y):
    """Object targets holding None become NaN under ``y_numeric``: reject them clearly."""
    if not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN, infinity or None")


# Standardised targets stay below this magnitude: a batch reaching beyond it multiplies the
# target scale by a power of two (see _TargetScaler.update), so squares and sums of standardised
# targets never come near overflow, whatever the units of y.
MAX_STANDARDISED_EXPONENT = 20  # |y - offset| / scale < 2**20


class _TargetScaler:
    """Affine map ``y -> (y - offset) / scale`` of the targets, applied before the trees sum them.

    The offset is the first target seen; the scale is the range of the targets when it first
    becomes positive (1 while every target equals the offset: their standardised values are all
    0, so any scale fits them). A later batch whose standardised values would exceed
    ``2**MAX_STANDARDISED_EXPONENT`` in magnitude multiplies the scale by the power of two
    ``2**k`` that brings them below 1: the stored sums of ``y`` and ``y**2`` are then multiplied
    by ``2**-k`` and ``2**-2k``, which is exact in floating point (only contributions below the
    smallest float, negligible next to the new targets, can round away). Any finite targets
    whose range is finite work: from a first batch of range 1e-303 to targets of 1e300.

    Differences are formed from halves (``y / 2 - offset / 2``, exact for normal floats), so
    they never overflow; targets whose range exceeds the largest float are refused.
    """

    def __init__(self):
        self.offset = None
        self.scale = 1.0
        self.frozen = False

    def update(self, y):
        """Take the targets ``y`` into account; return the ``k`` by which the scale was
        multiplied by ``2**k`` (0: the stored standardised sums stay valid as they are).

        Raises a ``ValueError`` when the targets' range exceeds the largest float.
        """
        y = np.asarray(y, dtype=np.float64)
        if y.size == 0:
            return 0
        if self.offset is None:
            self.offset = float(y[0])
        high, low = max(float(y.max()), self.offset), min(float(y.min()), self.offset)
        span = 2.0 * (0.5 * high - 0.5 * low)
        if not np.isfinite(span):
            raise ValueError(
                "the range of y exceeds the largest float64 (max(y) - min(y) overflows): "
                "rescale y"
            )
        if not self.frozen:
            if span > 0:
                self.scale = span
                self.frozen = True
            return 0
        # |y - offset| <= span < 2**e_span; scale >= 2**(e_scale - 1).
        e_span = int(np.frexp(span)[1])
        e_scale = int(np.frexp(self.scale)[1])
        k = e_span - e_scale + 1
        if k <= MAX_STANDARDISED_EXPONENT:
            return 0
        scale = float(np.ldexp(self.scale, k))
        if not np.isfinite(scale):
            raise ValueError(
                "the range of y exceeds the largest float64 (max(y) - min(y) overflows): "
                "rescale y"
            )
        self.scale = scale
        return k

    def fits(self, y):
        """Whether :meth:`update` with the one finite float target ``y`` would change
        nothing and return 0 (a frozen map whose scale needs no power of two for ``y``)."""
        if not self.frozen:
            return False
        high, low = max(y, self.offset), min(y, self.offset)
        span = 2.0 * (0.5 * high - 0.5 * low)
        if not math.isfinite(span):
            return False
        return math.frexp(span)[1] - math.frexp(self.scale)[1] + 1 <= MAX_STANDARDISED_EXPONENT

    def transform(self, y):
        y = np.asarray(y, dtype=np.float64)
        with np.errstate(over="ignore"):
            return (0.5 * y - 0.5 * self.offset) / (0.5 * self.scale)

    def inverse(self, mean, std=None):
        """Map standardised means (and standard deviations) back to the units of ``y``."""
        with np.errstate(over="ignore"):
            mean = mean * self.scale + self.offset
            return mean if std is None else (mean, std * self.scale)

    def variance_to_units(self, variance):
        """A variance of standardised targets in units of y squared (inf beyond float64)."""
        with np.errstate(over="ignore"):
            return np.float64(variance) * self.scale * self.scale

    def variance_from_units(self, variance):
        """A variance in units of y squared as one of standardised targets, kept positive and
        finite (a fixed hyperparameter far outside the targets' range)."""
        tiny, huge = np.finfo(np.float64).tiny, np.finfo(np.float64).max
        with np.errstate(over="ignore", under="ignore"):
            value = float(np.float64(variance) / self.scale / self.scale)
        return min(max(value, tiny), huge)


def _rescaled_rows(values, k):
    """Rows ``[n, sum y, sum y**2]`` of standardised targets after the scale grew by ``2**k``
    (exact: multiplications by powers of two)."""
    out = np.array(values, dtype=np.float64, copy=True)
    out[..., 1] = np.ldexp(out[..., 1], -k)
    out[..., 2] = np.ldexp(out[..., 2], -2 * k)
    return out


def _rescaled_tree(tree, k):
    """A new tree equal to ``tree`` with its target sums rescaled by :func:`_rescaled_rows`."""
    cls, args, state = tree.__reduce__()
    state["value"] = _rescaled_rows(state["value"], k)
    out = cls(*args)
    out.__setstate__(state)
    return out
