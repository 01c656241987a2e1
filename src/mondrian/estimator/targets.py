"""Standardisation of regression targets shared by the batch-trained linear models."""

import numpy as np

__all__ = ["MAX_TARGET", "MAX_TOTAL_WEIGHT", "centre_and_scale", "check_target_scale"]

# Largest |target| a model accepts. float64 overflows at 2**1024; predictions scaled back from
# standardised units (offset + scale * z, variances scale**2 * v) keep 2**24 of headroom above
# the targets (extrapolation, interval widths), and every target up to 1e300 is accepted.
MAX_TARGET = 2.0**1000
# Largest total of the sample weights (counts): the models sum them (class counts plus priors,
# Gaussian sums of weighted targets), so the total keeps the same headroom below float64's
# overflow as the targets. Huge integer counts (2**52 and more) stay accepted.
MAX_TOTAL_WEIGHT = MAX_TARGET


def check_target_scale(y, name="y"):
    """``y`` as float64 numbers, finite and at most :data:`MAX_TARGET` in magnitude
    (finite-or-refuse: past it a model's outputs in the units of ``y`` could overflow to
    infinity or NaN).

    Raises
    ------
    ValueError
        Naming ``name``: labels that are not numbers, NaN, infinity or None (targets given
        as objects arrive as NaN), or a magnitude above the bound.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian.estimator.targets import check_target_scale
    >>> check_target_scale([1.0, 1e300]).tolist()
    [1.0, 1e+300]
    >>> check_target_scale([1.0, 1e308])
    Traceback (most recent call last):
    ...
    ValueError: y holds values of magnitude above 2**1000 (about 1.07e301), ...
    """
    try:
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must hold numbers (regression targets), got "
                         f"{np.asarray(y).dtype} values") from None
    with np.errstate(over="ignore", invalid="ignore"):
        top = float(np.max(np.abs(y), initial=0.0))
    if not np.isfinite(top):
        raise ValueError(f"{name} contains NaN, infinity or None")
    if top > MAX_TARGET:
        raise ValueError(
            f"{name} holds values of magnitude above 2**1000 (about 1.07e301), too close to "
            f"the float64 overflow for finite predictions: rescale {name}"
        )
    return y


def centre_and_scale(y):
    """The mean of ``y`` and a power of two above ``max|y - mean|`` (1 for constant targets).

    Dividing by a power of two is exact, and every model fitted on ``(y - mean) / scale`` by
    linear algebra (ridge weights, Gaussian process variances) gives, scaled back, the result
    of fitting ``y`` itself, while its sums of squares stay far from overflow and underflow: any
    finite target scale works, from 1e-300 to 1e300.

    Parameters
    ----------
    y : ndarray of shape (n_samples,)
        Finite targets (at least one).

    Returns
    -------
    offset, scale : float

    Raises
    ------
    ValueError
        When a target exceeds :data:`MAX_TARGET` in magnitude.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian.estimator.targets import centre_and_scale
    >>> centre_and_scale(np.array([1e300, 3e300]))
    (2e+300, 1.3393857589828342e+300)
    >>> centre_and_scale(np.array([5.0, 5.0]))
    (5.0, 1.0)
    """
    y = check_target_scale(np.asarray(y, dtype=np.float64))
    with np.errstate(over="ignore", invalid="ignore"):
        offset = float(np.mean(y))
        if not np.isfinite(offset):  # the sum overflowed: average in units of max|y|
            top = float(np.max(np.abs(y)))
            offset = float(np.mean(y / top)) * top
        spread = float(np.max(np.abs(y - offset)))
    if not np.isfinite(spread):
        raise ValueError("y spreads over more than the largest float64: rescale y")
    if spread == 0:
        return offset, 1.0
    return offset, float(np.ldexp(1.0, int(np.frexp(spread)[1])))
