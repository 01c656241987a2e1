"""Threads over trees and the trees' seeds, shared by every ensemble of the core.

The trees of an ensemble are independent: growth, extension and accumulation run over groups
of them in threads of this process, and each tree's random stream is seeded from
``(random_state, k)`` alone, so results do not depend on ``n_jobs`` or on where a tree was fitted.
"""

import numbers

import numpy as np
from joblib import Parallel, cpu_count, delayed
from sklearn.utils import check_random_state

__all__ = ["draw_seeds", "n_threads", "run_threads"]

# Largest seed of a tree's random stream (exclusive).
_SEED_HIGH = np.iinfo(np.int64).max


def draw_seeds(random_state, n_trees, start=0):
    """Seeds of trees ``start .. n_trees - 1``: one child of a ``numpy.random.SeedSequence`` each.

    Tree ``k`` gets the first 63 bits of ``SeedSequence(entropy).spawn(n)[k]`` (its child with
    ``spawn_key=(k,)``, computed directly), where ``entropy`` is ``random_state`` itself when it
    is an integer, else one number drawn from it (``None``: NumPy's global generator). A tree's
    seed therefore depends only on ``(random_state, k)``: trees ``i:j`` fitted anywhere (another
    process, another machine) are the trees ``i:j`` of the forest fitted in one process, and
    trees added later continue the sequence.
    """
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        entropy = int(random_state)
    else:
        entropy = int(check_random_state(random_state).randint(0, _SEED_HIGH, dtype=np.int64))
    seeds = [np.random.SeedSequence(entropy, spawn_key=(k,)).generate_state(1, np.uint64)[0] >> 1
             for k in range(start, n_trees)]
    return np.asarray(seeds, dtype=np.uint64).astype(np.int64)


def n_threads(n_jobs, n_tasks):
    """Number of threads for ``n_tasks`` tasks (``None``: 1, negative: counted from the cores)."""
    if n_jobs is None:
        return 1
    if n_jobs < 0:
        n_jobs = max(cpu_count() + 1 + n_jobs, 1)
    return max(1, min(n_jobs, n_tasks))


def run_threads(function, tasks, n_jobs, verbose=0):
    """``[function(task) for task in tasks]``, in up to ``n_jobs`` threads.

    The tasks share the caller's trees and arrays, so they always run in threads of this
    process (``require="sharedmem"``): an outer ``joblib.parallel_config`` with a process
    backend (loky, dask) would otherwise pickle the trees and every change would be lost.
    """
    n_jobs = n_threads(n_jobs, len(tasks))
    if n_jobs == 1:
        return [function(task) for task in tasks]
    return Parallel(n_jobs=n_jobs, require="sharedmem", verbose=verbose)(
        delayed(function)(task) for task in tasks
    )


def _split(items, n_parts):
    bounds = np.linspace(0, len(items), n_parts + 1).astype(int)
    return [items[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]
