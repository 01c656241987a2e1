"""The greedy lifetime search of the Mondrian grid (section 5.2 of the report).

A configuration holds, per input dimension, the first cuts of that dimension in birth order
(:class:`~mondrian.grid._cuts.GridCuts`). :func:`greedy_search` moves one dimension per step,
scoring every trial with any engine visitor (the kernel ridge path's
:class:`~mondrian.kernel._ridge_path.RidgePathVisitor`) and returning to the saved state
between trials.
"""

from libc.math cimport NAN

from mondrian.core._typedefs cimport float64_t, intp_t
from mondrian.grid._cuts cimport GridCuts
from mondrian.path._engine cimport CutVisitor

import numpy as np


def begin(GridCuts source, CutVisitor visitor):
    """Set ``visitor`` on ``source`` at lifetime 0 (every grid one cell)."""
    if source.active_counts.any():
        raise ValueError("the source must be at lifetime 0")
    visitor.source = source
    visitor.begin(True)


def record(CutVisitor visitor):
    """The visitor's metrics of its current model (one row)."""
    row = np.full(visitor.n_metrics, NAN)
    cdef float64_t[::1] r = row
    visitor.record(0, &r[0] if visitor.n_metrics else NULL)
    return row


def greedy_search(GridCuts source, CutVisitor visitor, *, bint allow_remove,
                  intp_t max_features, intp_t cuts_per_step=1, n_iter_no_change=None,
                  intp_t criterion=1, intp_t size_metric=3):
    """The greedy lifetime search of section 5.2 of the report, from lifetime 0.

    Every step tries, in each dimension, holding its next ``cuts_per_step`` cuts (and with
    ``allow_remove`` dropping its last ones), scores each trial with ``visitor`` (metric
    ``criterion``, minimised), returns to the saved state, and commits the best trial. A trial
    whose model would exceed ``max_features`` features (metric ``size_metric``) is not
    eligible; with ``allow_remove`` a configuration already visited is not either (so the search
    cannot cycle). The search stops when no trial is eligible, or after ``n_iter_no_change``
    steps without a better criterion than the best so far.

    Returns
    -------
    steps : list of tuple
        ``(dimension, +1 add / -1 remove / 0 start, lifetimes, metrics row)`` per step.
    """
    cdef intp_t D = source.n_dims, d, step = 0, since_best = 0
    begin(source, visitor)
    row = record(visitor)
    steps = [(-1, 0, source.lifetimes(), row)]
    best = row[criterion]
    visited = {tuple(source.active_counts)}
    directions = [1, -1] if allow_remove else [1]
    while True:
        saved_source = source.snapshot()
        saved_visitor = visitor.snapshot()
        n_now = row[size_metric]
        best_trial = None
        for d in range(D):
            for direction in directions:
                counts = source.active_counts
                counts[d] += direction * cuts_per_step
                if (counts[d] < 0 or direction > 0 and source.n_available(d) < cuts_per_step
                        or allow_remove and tuple(counts) in visited):
                    continue
                ok = True
                size = n_now
                for _ in range(cuts_per_step):
                    if direction > 0:
                        size += source.splits_of_next(d)
                        if size > max_features:
                            ok = False
                            break
                        source.add(d, visitor)
                    else:
                        source.remove(d, visitor)
                if ok:
                    trial = record(visitor)
                    if best_trial is None or trial[criterion] < best_trial[2][criterion]:
                        best_trial = (d, direction, trial)
                source.restore(saved_source)
                visitor.restore(saved_visitor)
        if best_trial is None:
            break
        d, direction, _ = best_trial
        for _ in range(cuts_per_step):
            if direction > 0:
                source.add(d, visitor)
            else:
                source.remove(d, visitor)
        row = record(visitor)
        step += 1
        steps.append((d, direction, source.lifetimes(), row))
        visited.add(tuple(source.active_counts))
        if row[criterion] < best:
            best = row[criterion]
            since_best = 0
        else:
            since_best += 1
            if n_iter_no_change is not None and since_best >= n_iter_no_change:
                break
    return steps
