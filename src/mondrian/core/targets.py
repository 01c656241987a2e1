"""Standardisation of regression targets shared by the batch-trained linear models."""

import numpy as np

__all__ = ["centre_and_scale"]


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
        When the targets spread over more than the largest float64.

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian.core.targets import centre_and_scale
    >>> centre_and_scale(np.array([1e300, 3e300]))
    (2e+300, 1.3393857589828342e+300)
    >>> centre_and_scale(np.array([5.0, 5.0]))
    (5.0, 1.0)
    """
    y = np.asarray(y, dtype=np.float64)
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
