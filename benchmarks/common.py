"""Helpers shared by the benchmark scripts.

This module holds everything that more than one benchmark needs:

* locating the offline datasets folder and skipping cleanly when it is absent;
* loaders that return numpy arrays, with the train/test splits used in the literature;
* timing (median of repeated runs), peak memory (in a fresh subprocess) and model size;
* a markdown table printer;
* the command-line conventions shared by all scripts (``--quick``, ``--seed``, ``--repeats``).

Datasets
--------
The folder defaults to ``<repo>/../shared/datasets`` and can be overridden with the environment
variable ``MONDRIAN_DATASETS``. When it does not exist, :func:`require_datasets` prints a message
and exits with status 0, so that a benchmark run on a machine without the data is a clean skip.

Memory measurement
------------------
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

import argparse
import csv
import gc
import gzip
import importlib
import os
import pickle
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
SRC_DIR = REPO_ROOT / "src"
DATASETS_ENV = "MONDRIAN_DATASETS"
MB = 1e6  # bytes per megabyte (decimal), used for every size reported by the benchmarks

# Benchmarks run from a checkout: make the in-place build of the package importable first.
if str(SRC_DIR) not in sys.path:
    sys.path.insert(1, str(SRC_DIR))

UCI_REGRESSION = (
    "concrete",
    "energy",
    "kin8nm",
    "naval",
    "power_plant",
    "protein",
    "wine_red",
    "yacht",
)
CLASSIFICATION = ("letter", "satimage", "usps", "dna")


# --------------------------------------------------------------------------------------------
# Datasets
# --------------------------------------------------------------------------------------------


@dataclass
class Dataset:
    """A train/test split held as numpy arrays.

    Attributes
    ----------
    name : str
        Short dataset name.
    X_train, y_train, X_test, y_test : ndarray
        Features (float64, 2-D) and labels (int64 for classification, float64 for regression).
    feature_names : list of str
        Column names from the CSV header, label excluded.
    note : str
        How the split was made.
    """

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    feature_names: list[str]
    note: str = ""

    @property
    def n_classes(self) -> int:
        """Number of classes seen in train or test (labels are coded ``0..K-1``)."""
        return int(max(self.y_train.max(), self.y_test.max())) + 1


def datasets_dir() -> Path:
    """Return the datasets folder (it may not exist).

    Returns
    -------
    pathlib.Path
        ``$MONDRIAN_DATASETS`` when set, else ``<repo>/../shared/datasets``.
    """
    env = os.environ.get(DATASETS_ENV)
    if env:
        return Path(env).expanduser()
    return REPO_ROOT.parent / "shared" / "datasets"


def require_datasets() -> Path:
    """Return the datasets folder, or print why and exit with status 0 when it is missing.

    Returns
    -------
    pathlib.Path
        The existing datasets folder.
    """
    path = datasets_dir()
    if not path.is_dir():
        print(
            f"SKIPPED: datasets folder not found at {path}. "
            f"Set {DATASETS_ENV}=/path/to/datasets to run this benchmark."
        )
        sys.exit(0)
    return path


def read_csv_gz(name: str) -> tuple[list[str], np.ndarray]:
    """Read ``<datasets>/<name>.csv.gz`` (one header row, all values numeric).

    Parameters
    ----------
    name : str
        File name without the ``.csv.gz`` suffix.

    Returns
    -------
    header : list of str
        Column names.
    data : ndarray of shape (n_rows, n_columns)
        The values as float64.
    """
    path = require_datasets() / f"{name}.csv.gz"
    with gzip.open(path, "rt", newline="") as f:
        header = next(csv.reader(f))
    data = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float64, ndmin=2)
    return header, data


def load_xy(name: str, label_column: str | None = None, classification: bool = True):
    """Load one data file and split it into features and label.

    Parameters
    ----------
    name : str
        File name without the ``.csv.gz`` suffix.
    label_column : str, optional
        Name of the label column; by default the last column (the convention of every file).
    classification : bool, default=True
        Cast the label to int64 when True.

    Returns
    -------
    X : ndarray of shape (n_rows, n_features)
    y : ndarray of shape (n_rows,)
    feature_names : list of str
    """
    header, data = read_csv_gz(name)
    col = len(header) - 1 if label_column is None else header.index(label_column)
    keep = [j for j in range(len(header)) if j != col]
    y = data[:, col]
    if classification:
        y = y.astype(np.int64)
    return np.ascontiguousarray(data[:, keep]), y, [header[j] for j in keep]


def _train_test_files(name: str, note: str, n_train: int | None = None) -> Dataset:
    """Load ``<name>_train`` / ``<name>_test``, keeping the first ``n_train`` training rows."""
    X_tr, y_tr, names = load_xy(f"{name}_train")
    X_te, y_te, _ = load_xy(f"{name}_test")
    if n_train is not None:
        X_tr, y_tr = X_tr[:n_train], y_tr[:n_train]
    return Dataset(name, X_tr, y_tr, X_te, y_te, names, note)


def load_letter() -> Dataset:
    """UCI letter: rows ``[0, 15000)`` train, ``[15000, 20000)`` test (the LIBSVM/Statlog split).

    Returns
    -------
    Dataset
    """
    X, y, names = load_xy("letter")
    note = "first 15000 rows train, last 5000 test (file in UCI order)"
    return Dataset("letter", X[:15000], y[:15000], X[15000:], y[15000:], names, note)


def load_satimage() -> Dataset:
    """UCI Statlog satimage with the original 4435/2000 train/test split.

    Returns
    -------
    Dataset
    """
    return _train_test_files("satimage", "original UCI train (4435) / test (2000)")


def load_usps() -> Dataset:
    """USPS digits with the original 7291/2007 train/test split.

    Returns
    -------
    Dataset
    """
    return _train_test_files("usps", "original train (7291) / test (2007)")


def load_dna() -> Dataset:
    """Statlog DNA: train on LIBSVM ``dna.scale.tr`` (first 1400 rows of dna_train), test 1186.

    The Mondrian forest paper (Lakshminarayanan et al., 2014) trained on these 1400 rows only,
    leaving out the 600 validation rows ``dna.scale.val``.

    Returns
    -------
    Dataset
    """
    note = "train = first 1400 rows of dna_train (LIBSVM dna.scale.tr, as in the MF paper)"
    return _train_test_files("dna", note, n_train=1400)


CLASSIFICATION_LOADERS: dict[str, Callable[[], Dataset]] = {
    "letter": load_letter,
    "satimage": load_satimage,
    "usps": load_usps,
    "dna": load_dna,
}


def load_classification(name: str) -> Dataset:
    """Load a classification dataset by name (one of :data:`CLASSIFICATION`).

    Parameters
    ----------
    name : str

    Returns
    -------
    Dataset
    """
    try:
        return CLASSIFICATION_LOADERS[name]()
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; choose from {CLASSIFICATION}") from None


def read_splits(name: str) -> list[np.ndarray]:
    """Read ``<name>_splits.csv.gz``: column ``splitK`` holds the 0-based test rows of split K.

    Parameters
    ----------
    name : str
        One of :data:`UCI_REGRESSION`.

    Returns
    -------
    list of ndarray of int64
        The test row indices of each split (empty cells, if any, are ignored).
    """
    path = require_datasets() / f"{name}_splits.csv.gz"
    with gzip.open(path, "rt", newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        columns: list[list[int]] = [[] for _ in header]
        for row in reader:
            for k, cell in enumerate(row):
                if cell.strip():
                    columns[k].append(int(float(cell)))
    return [np.asarray(c, dtype=np.int64) for c in columns]


def load_uci_regression(name: str, split: int = 0) -> Dataset:
    """Load a UCI regression set with one of its standard (PBP) 90/10 splits.

    Parameters
    ----------
    name : str
        One of :data:`UCI_REGRESSION`.
    split : int, default=0
        Split index (0..19, or 0..4 for protein).

    Returns
    -------
    Dataset
    """
    if name not in UCI_REGRESSION:
        raise ValueError(f"unknown dataset {name!r}; choose from {UCI_REGRESSION}")
    X, y, names = load_xy(name, classification=False)
    test = read_splits(name)[split]
    train = np.setdiff1d(np.arange(len(y)), test)
    note = f"standard split {split}: {len(train)} train / {len(test)} test"
    return Dataset(name, X[train], y[train], X[test], y[test], names, note)


def n_uci_splits(name: str) -> int:
    """Number of standard splits of a UCI regression set (20, or 5 for protein).

    Parameters
    ----------
    name : str

    Returns
    -------
    int
    """
    return len(read_splits(name))


def load_cpu_act(seed: int = 0, n_train: int = 6554) -> Dataset:
    """Delve cpu_act (target ``usr``) with a random 6554/1638 split, as in Rahimi & Recht (2007).

    Their split was not published, so a seeded random permutation is used.

    Parameters
    ----------
    seed : int, default=0
        Seed of the random split.
    n_train : int, default=6554
        Number of training rows; the rest are test rows.

    Returns
    -------
    Dataset
    """
    X, y, names = load_xy("cpu_act", classification=False)
    perm = np.random.default_rng(seed).permutation(len(y))
    tr, te = perm[:n_train], perm[n_train:]
    note = f"random split (seed {seed}): {len(tr)} train / {len(te)} test"
    return Dataset("cpu_act", X[tr], y[tr], X[te], y[te], names, note)


def subsample_train(data: Dataset, n: int, seed: int = 0) -> Dataset:
    """Return a copy of ``data`` keeping a random subset of at most ``n`` training rows.

    Parameters
    ----------
    data : Dataset
    n : int
        Maximum number of training rows.
    seed : int, default=0

    Returns
    -------
    Dataset
    """
    if len(data.y_train) <= n:
        return data
    rows = np.sort(np.random.default_rng(seed).choice(len(data.y_train), n, replace=False))
    note = f"{data.note}; train subsampled to {n} rows"
    return Dataset(
        data.name, data.X_train[rows], data.y_train[rows], data.X_test, data.y_test,
        data.feature_names, note,
    )


# --------------------------------------------------------------------------------------------
# Optional libraries
# --------------------------------------------------------------------------------------------


def optional_import(module: str):
    """Import an optional peer library.

    Parameters
    ----------
    module : str
        Dotted module name.

    Returns
    -------
    module : module or None
        The module, or None when it cannot be imported.
    reason : str
        Why it is unavailable (empty when available).
    """
    try:
        return importlib.import_module(module), ""
    except Exception as exc:  # any failure at import time means "unavailable"
        return None, f"{type(exc).__name__}: {exc}"


def import_mondrian():
    """Import the package under benchmark.

    Returns
    -------
    module : module or None
        The ``mondrian`` package, or None when it is not built / importable.
    reason : str
        Why it is unavailable (empty when available).
    """
    hint = "build it with `python setup.py build_ext --inplace` in the repo root"
    mondrian, reason = optional_import("mondrian")
    if mondrian is not None and not hasattr(mondrian, "MondrianForestClassifier"):
        # A source tree without its package __init__ imports as an empty namespace package.
        mondrian, reason = None, "mondrian has no MondrianForestClassifier"
    return mondrian, f"{reason} ({hint})" if mondrian is None else ""


def import_onelearn():
    """Import ``onelearn`` (Mourtada et al.'s AMF), working around its numpy 2 incompatibility.

    onelearn 0.3 imports ``numpy.core.numeric.ComplexWarning``, which numpy 2 moved to
    ``numpy.exceptions``. When that name is missing it is re-exported at the old place before the
    import; nothing else is changed. onelearn's pinned dependencies (scikit-learn < 0.23, old numba)
    cannot be installed next to a current stack, so install it with
    ``pip install --no-deps onelearn numba``.

    Returns
    -------
    module : module or None
        The ``onelearn`` package, or None when unavailable.
    reason : str
        Why it is unavailable (empty when available).
    """
    try:
        import numpy.core.numeric as old_numeric

        if not hasattr(old_numeric, "ComplexWarning"):
            old_numeric.ComplexWarning = np.exceptions.ComplexWarning
    except (ImportError, AttributeError):
        pass
    return optional_import("onelearn")


# --------------------------------------------------------------------------------------------
# Measurements
# --------------------------------------------------------------------------------------------


def time_callable(func: Callable[[], Any], repeats: int = 3) -> tuple[float, Any]:
    """Median wall-clock time of ``repeats`` calls of ``func``.

    Parameters
    ----------
    func : callable
        Called with no argument.
    repeats : int, default=3

    Returns
    -------
    seconds : float
        Median duration of one call (``time.perf_counter``).
    result : object
        What the last call returned.
    """
    times = []
    result = None
    for _ in range(max(1, repeats)):
        result = None  # release the previous result first, so runs do not stack up in memory
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def model_size_mb(model: Any) -> float:
    """Size of ``pickle.dumps(model, protocol=5)`` in MB (10**6 bytes).

    Parameters
    ----------
    model : object

    Returns
    -------
    float
    """
    return len(pickle.dumps(model, protocol=5)) / MB


def tracemalloc_peak(func: Callable[[], Any]) -> tuple[float, Any]:
    """Peak memory traced by :mod:`tracemalloc` while ``func()`` runs, in this process.

    Only Python allocators are traced (Python objects, numpy buffers); raw ``malloc`` from
    compiled code is not. See the module docstring.

    Parameters
    ----------
    func : callable
        Called with no argument.

    Returns
    -------
    peak_mb : float
        Peak traced memory above the level at the start of the call, in MB.
    result : object
        What ``func`` returned.
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


def fit_estimator(estimator: Any, X: np.ndarray, y: np.ndarray) -> Any:
    """Fit a fresh clone of a scikit-learn style estimator (module level, so it can be pickled).

    Parameters
    ----------
    estimator : estimator
        Unfitted template; it is cloned, not modified.
    X, y : ndarray

    Returns
    -------
    estimator
        The fitted clone.
    """
    from sklearn.base import clone

    return clone(estimator).fit(X, y)


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


def _format_cell(value: Any, fmt: str | None) -> str:
    """Format one table cell; NaN and None print as an em dash."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "—"
    if fmt is not None:
        return format(value, fmt)
    if isinstance(value, float | np.floating):
        return f"{value:.4g}"
    return str(value)


def markdown_table(
    rows: Sequence[dict],
    columns: Sequence[str] | None = None,
    formats: dict[str, str] | None = None,
) -> str:
    """Render a list of dict rows as a markdown table.

    Parameters
    ----------
    rows : sequence of dict
        One dict per row; a missing key prints as an em dash.
    columns : sequence of str, optional
        Keys to show, in order (also the headers). Default: keys of the first row.
    formats : dict, optional
        Format spec per column (e.g. ``{"accuracy": ".4f"}``); floats default to ``.4g``.

    Returns
    -------
    str
    """
    if not rows:
        return "(no rows)"
    columns = list(columns if columns is not None else rows[0].keys())
    formats = formats or {}
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in rows:
        cells = (_format_cell(row.get(c), formats.get(c)) for c in columns)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def print_markdown_table(rows: Sequence[dict], columns=None, formats=None, title=None) -> None:
    """Print :func:`markdown_table` output, optionally under a ``### title`` heading.

    Parameters
    ----------
    rows, columns, formats
        See :func:`markdown_table`.
    title : str, optional
    """
    if title:
        print(f"\n### {title}\n")
    print(markdown_table(rows, columns, formats))
    sys.stdout.flush()


def print_checks(title: str, checks: Iterable[tuple[str, bool | None, str]]) -> None:
    """Print a list of target checks as markdown bullets.

    Parameters
    ----------
    title : str
    checks : iterable of (description, passed, detail)
        ``passed`` is None when the check could not be evaluated.
    """
    print(f"\n### {title}\n")
    for description, passed, detail in checks:
        status = {True: "PASS", False: "FAIL", None: "N/A"}[passed]
        print(f"- [{status}] {description}: {detail}")


def log(message: str) -> None:
    """Print a progress message to stderr (tables go to stdout).

    Parameters
    ----------
    message : str
    """
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def make_parser(description: str, default_repeats: int = 3) -> argparse.ArgumentParser:
    """Argument parser with the options every benchmark accepts.

    ``--quick`` asks for a smoke-test run: smaller data, fewer trees and one repeat. Each script
    documents exactly what it shrinks. ``--repeats`` overrides the number of timed runs
    (default ``default_repeats``, or 1 with ``--quick``).

    Parameters
    ----------
    description : str
    default_repeats : int, default=3

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--quick", action="store_true",
        help="smoke-test mode: smaller data, fewer trees, one repeat",
    )
    parser.add_argument("--seed", type=int, default=0, help="random_state of every model")
    parser.add_argument(
        "--repeats", type=int, default=None,
        help=f"timed runs per measurement, median reported (default {default_repeats}, quick 1)",
    )
    parser.set_defaults(default_repeats=default_repeats)
    return parser


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None):
    """Parse arguments and resolve ``--repeats`` against ``--quick``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        Made by :func:`make_parser`.
    argv : sequence of str, optional

    Returns
    -------
    argparse.Namespace
    """
    args = parser.parse_args(argv)
    if args.repeats is None:
        args.repeats = 1 if args.quick else args.default_repeats
    return args


def parse_list(text: str, allowed: Sequence[str]) -> list[str]:
    """Parse a comma-separated list, checking every item against ``allowed``.

    Parameters
    ----------
    text : str
    allowed : sequence of str

    Returns
    -------
    list of str
    """
    items = [t.strip() for t in text.split(",") if t.strip()]
    unknown = sorted(set(items) - set(allowed))
    if unknown:
        raise SystemExit(f"unknown name(s) {unknown}; choose from {list(allowed)}")
    return items


def environment_line() -> str:
    """One line describing the software versions, for the header of a benchmark report.

    Returns
    -------
    str
    """
    import platform

    import sklearn

    parts = [f"Python {platform.python_version()}", f"numpy {np.__version__}",
             f"scikit-learn {sklearn.__version__}"]
    mod, _ = import_mondrian()
    parts.append(f"mondrian {getattr(mod, '__version__', '?')}" if mod else "mondrian: n/a")
    return ", ".join(parts) + f"; {os.cpu_count()} CPU(s)"


class Report:
    """Collects a benchmark report: printed as it goes, written to a file at the end."""

    def __init__(self):
        self.parts: list[str] = []

    def add(self, text: str = "") -> None:
        print(text, flush=True)
        self.parts.append(text)

    def table(self, rows: list[dict], columns=None, formats=None, title=None) -> None:
        if title:
            self.add(f"\n### {title}\n")
        self.add(markdown_table(rows, columns, formats))

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(self.parts) + "\n")
