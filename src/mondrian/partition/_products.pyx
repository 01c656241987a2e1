"""Products with a random partition kernel through the partition labels (algorithm reference §11).

``labels`` has one row per partition and one column per training point: the point's cluster in
that partition, numbered ``0 .. n_clusters - 1`` per partition; column ``offsets[r] + c`` of the
stacked cluster arrays holds cluster ``c`` of partition ``r``. Negative labels (new points that
share no cluster with the training points) are skipped. Every loop is ``O(m N k)`` and nogil.
"""

import numpy as np

from libc.stdint cimport int32_t

from mondrian.core._typedefs cimport float64_t, intp_t


def cluster_sums(const int32_t[:, ::1] labels, const intp_t[::1] offsets,
                 const float64_t[:, ::1] V):
    """Sum of the rows of ``V`` over every cluster of every partition.

    Parameters
    ----------
    labels : ndarray of int32, shape (n_partitions, n_samples)
    offsets : ndarray of intp, shape (n_partitions + 1,)
    V : ndarray of shape (n_samples, n_columns)

    Returns
    -------
    ndarray of shape (offsets[-1], n_columns)
    """
    cdef intp_t m = labels.shape[0], n = labels.shape[1], k = V.shape[1], r, i, j, row
    cdef int32_t c
    if V.shape[0] != n or offsets.shape[0] != m + 1:
        raise ValueError("labels, offsets and V do not match")
    out = np.zeros((offsets[m], k))
    cdef float64_t[:, ::1] sums = out
    with nogil:
        for r in range(m):
            for i in range(n):
                c = labels[r, i]
                if c >= 0:
                    row = offsets[r] + c
                    for j in range(k):
                        sums[row, j] += V[i, j]
    return out


def gather_sums(const int32_t[:, ::1] labels, const intp_t[::1] offsets,
                const float64_t[:, ::1] sums, float64_t scale=1.0):
    """``scale`` times the sum over partitions of the cluster rows of ``sums`` of every point.

    Parameters
    ----------
    labels : ndarray of int32, shape (n_partitions, n_samples)
    offsets : ndarray of intp, shape (n_partitions + 1,)
    sums : ndarray of shape (offsets[-1], n_columns)
    scale : float, default=1.0

    Returns
    -------
    ndarray of shape (n_samples, n_columns)
    """
    cdef intp_t m = labels.shape[0], n = labels.shape[1], k = sums.shape[1], r, i, j, row
    cdef int32_t c
    if offsets.shape[0] != m + 1 or sums.shape[0] != offsets[m]:
        raise ValueError("labels, offsets and sums do not match")
    out = np.zeros((n, k))
    cdef float64_t[:, ::1] res = out
    with nogil:
        for r in range(m):
            for i in range(n):
                c = labels[r, i]
                if c >= 0:
                    row = offsets[r] + c
                    for j in range(k):
                        res[i, j] += sums[row, j]
        for i in range(n):
            for j in range(k):
                res[i, j] *= scale
    return out


def kernel_matmat(const int32_t[:, ::1] labels, const intp_t[::1] offsets,
                  const float64_t[:, ::1] V):
    """``K V`` with ``K = (1/m) sum_r K_r``: cluster sums, then gathered back (``2 m N k``).

    Parameters
    ----------
    labels : ndarray of int32, shape (n_partitions, n_samples)
    offsets : ndarray of intp, shape (n_partitions + 1,)
    V : ndarray of shape (n_samples, n_columns)

    Returns
    -------
    ndarray of shape (n_samples, n_columns)
    """
    return gather_sums(labels, offsets, cluster_sums(labels, offsets, V),
                       1.0 / labels.shape[0])


def block_precondition(const int32_t[:, ::1] labels, const intp_t[::1] offsets,
                       const float64_t[::1] counts, float64_t sigma,
                       const float64_t[:, ::1] V):
    """``B V`` with ``B = (1/m) sum_r (K_r + sigma I)^-1`` (corrected eq. 10 of the paper).

    Per block of size ``n_c``, Sherman-Morrison gives
    ``((K_r + sigma I)^-1 v)_i = (v_i - S_c / (n_c + sigma)) / sigma`` with ``S_c`` the sum of
    ``v`` over the block: the ``1 / sigma`` multiplies both terms.

    Parameters
    ----------
    labels : ndarray of int32, shape (n_partitions, n_samples)
    offsets : ndarray of intp, shape (n_partitions + 1,)
    counts : ndarray of shape (offsets[-1],)
        Size of every cluster.
    sigma : float
        Positive diagonal shift.
    V : ndarray of shape (n_samples, n_columns)

    Returns
    -------
    ndarray of shape (n_samples, n_columns)
    """
    cdef intp_t m = labels.shape[0], n = labels.shape[1], k = V.shape[1], i, j, row
    if not sigma > 0:
        raise ValueError("sigma must be positive")
    if counts.shape[0] != offsets[m]:
        raise ValueError("one count per cluster is needed")
    sums = cluster_sums(labels, offsets, V)
    cdef float64_t[:, ::1] S = sums
    with nogil:
        for row in range(S.shape[0]):
            for j in range(k):
                S[row, j] /= counts[row] + sigma
    out = gather_sums(labels, offsets, sums, -1.0 / (m * sigma))
    cdef float64_t[:, ::1] res = out
    with nogil:
        for i in range(n):
            for j in range(k):
                res[i, j] += V[i, j] / sigma
    return out
