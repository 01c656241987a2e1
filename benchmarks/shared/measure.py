"""Measurements: wall-clock time, peak memory of one call, pickled model size.

Time
----
:func:`time_callable` calls a function ``repeats`` times in a row and reports the median
wall-clock duration (``time.perf_counter``); the previous result is released before each call so
that runs do not stack up in memory.

Memory
------
:func:`peak_memory` runs a callable in a child process started with the ``spawn`` method and reports
two numbers:

``peak_rss_mb``
    Growth of the child's resident set size while the callable runs: the high-water mark after the
    call minus the resident size just before it. On Linux the high-water mark is reset right before
    the call (writing ``5`` to ``/proc/self/clear_refs``) and read from ``VmHWM`` in
    ``/proc/self/status``, so memory freed before the call (imports, loading the inputs) cannot
    hide the call's own peak. Elsewhere the ``ru_maxrss`` delta of :func:`resource.getrusage` is
    used instead, which under-reports when the call's peak stays below an earlier peak of the child.
    This number sees every allocation: Python objects, numpy buffers and the ``malloc`` /
    ``realloc`` calls made by compiled (Cython / C / C++) code.
``traced_peak_mb``
    The :mod:`tracemalloc` peak of a second, separate run of the same callable. tracemalloc only
    sees allocations that go through Python's allocators: Python objects and numpy buffers (numpy
    reports its data buffers to tracemalloc), but *not* raw ``malloc`` / ``realloc`` from Cython or
    C++ code (e.g. scikit-learn's tree nodes or a Cython tree's node array). It is a lower bound,
    kept because it is deterministic and separates Python-visible memory from native memory.

Inputs that are numpy arrays are handed to the child through ``.npy`` files, which ``np.load`` reads
straight into the array buffer, so passing them costs no hidden extra copy. The second run is done
under tracemalloc, which slows allocation down, so neither run is used for timing.
"""

from __future__ import annotations

import gc
import os
import pickle
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Any

import numpy as np

MB = 1e6  # bytes per megabyte (decimal), used for every size reported by the benchmarks


def time_callable(func: Callable[[], Any], repeats: int = 3,
                  clock: Callable[[], float] = time.perf_counter) -> tuple[float, Any]:
    """Median time of ``repeats`` calls of ``func()`` and what the last call returned.

    ``clock`` is wall-clock time by default; pass ``time.process_time`` for the CPU time of
    the process (every thread's), the measure to compare on a loaded machine.
    """
    times = []
    result = None
    for _ in range(max(1, repeats)):
        result = None  # release the previous result first, so runs do not stack up in memory
        start = clock()
        result = func()
        times.append(clock() - start)
    return statistics.median(times), result


def model_size_mb(model: Any) -> float:
    """Size of ``pickle.dumps(model, protocol=5)`` in MB (10**6 bytes)."""
    return len(pickle.dumps(model, protocol=5)) / MB


def fit_estimator(estimator: Any, X: np.ndarray, y: np.ndarray | None = None) -> Any:
    """Fit a fresh clone of a scikit-learn style ``estimator`` (left unmodified) and return it.

    Module level, so that :func:`peak_memory` can pickle it. Without ``y`` the clone is fitted as
    ``fit(X)`` (density estimators).
    """
    from sklearn.base import clone

    model = clone(estimator)
    return model.fit(X) if y is None else model.fit(X, y)


def tracemalloc_peak(func: Callable[[], Any]) -> tuple[float, Any]:
    """Peak memory (MB) traced by :mod:`tracemalloc` above the start level while ``func()`` runs.

    Only Python allocators are traced (Python objects, numpy buffers); raw ``malloc`` from compiled
    code is not. Returns the peak and what ``func`` returned.
    """
    gc.collect()
    already = tracemalloc.is_tracing()
    if not already:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    try:
        result = func()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        if not already:
            tracemalloc.stop()
    return (peak - base) / MB, result


def _proc_status_kb(field: str) -> int | None:
    """Read a ``kB`` field (e.g. ``VmHWM``) of ``/proc/self/status``; None when unavailable."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_rss_peak() -> bool:
    """Reset this process's RSS high-water mark (Linux >= 4.0); return whether it worked."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return _proc_status_kb("VmHWM") is not None


def _maxrss_bytes() -> int:
    """``ru_maxrss`` of this process in bytes (kB on Linux, bytes on macOS)."""
    import resource

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024


def _rss_peak_of_call(func: Callable, args: tuple, kwargs: dict) -> tuple[float, str]:
    """Peak RSS growth (MB) of one call, and the method used to measure it."""
    gc.collect()
    if _reset_rss_peak():
        before = _proc_status_kb("VmRSS")
        func(*args, **kwargs)
        return (_proc_status_kb("VmHWM") - before) * 1024 / MB, "VmHWM"
    before = _maxrss_bytes()
    func(*args, **kwargs)
    return (_maxrss_bytes() - before) / MB, "ru_maxrss"


@dataclass(frozen=True)
class _NpyFile:
    """Marker for an array argument passed to the child process as a ``.npy`` file."""

    path: str


def _load_arg(arg: Any) -> Any:
    """Inverse of the array-to-file hand-off done by :func:`peak_memory`."""
    if isinstance(arg, _NpyFile):
        return np.load(arg.path, allow_pickle=False)
    return arg


def _peak_memory_child(func, args, kwargs, traced):
    """Body of the child process started by :func:`peak_memory`."""
    args = tuple(_load_arg(a) for a in args)
    kwargs = {k: _load_arg(v) for k, v in kwargs.items()}
    rss_mb, method = _rss_peak_of_call(func, args, kwargs)
    out = {"peak_rss_mb": rss_mb, "rss_method": method, "traced_peak_mb": float("nan")}
    if traced:
        out["traced_peak_mb"] = tracemalloc_peak(lambda: func(*args, **kwargs))[0]
    return out


def peak_memory(func: Callable, *args: Any, traced: bool = True, **kwargs: Any) -> dict:
    """Measure the peak memory of ``func(*args, **kwargs)`` in a fresh ``spawn`` subprocess.

    ``func`` must be a picklable module-level function; its result is discarded. Numpy array
    arguments are passed through temporary ``.npy`` files. See the module docstring for what the
    two numbers count.

    Parameters
    ----------
    func : callable
        Module-level function to measure.
    *args, **kwargs
        Its arguments (picklable).
    traced : bool, default=True
        Also run ``func`` a second time under tracemalloc.

    Returns
    -------
    dict
        ``peak_rss_mb`` (float), ``rss_method`` (``"VmHWM"`` or ``"ru_maxrss"``) and
        ``traced_peak_mb`` (float, NaN when ``traced`` is False).
    """
    with tempfile.TemporaryDirectory(prefix="mondrian-bench-") as tmp:

        def to_file(i, value):
            if not isinstance(value, np.ndarray):
                return value
            path = os.path.join(tmp, f"arg{i}.npy")
            np.save(path, value, allow_pickle=False)
            return _NpyFile(path)

        args = tuple(to_file(i, a) for i, a in enumerate(args))
        kwargs = {k: to_file(f"_{k}", v) for k, v in kwargs.items()}
        with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
            return pool.submit(_peak_memory_child, func, args, kwargs, traced).result()
