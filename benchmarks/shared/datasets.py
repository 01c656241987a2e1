"""The offline datasets: where they are, loaders with the literature's splits, subsampling.

The folder defaults to ``<repo>/../shared/datasets`` and can be overridden with the environment
variable ``MONDRIAN_DATASETS``. When it does not exist, :func:`require_datasets` prints a message
and exits with status 0, so that a benchmark run on a machine without the data is a clean skip.
Every file is ``<name>.csv.gz`` with one header row, numeric values and the label in the last
column; the regression sets come with ``<name>_splits.csv.gz`` (column ``splitK`` = 0-based test
rows of split K).
"""

from __future__ import annotations

import csv
import gzip
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from shared import REPO_ROOT

DATASETS_ENV = "MONDRIAN_DATASETS"
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
    """Where the datasets are (the folder may not exist).

    ``$MONDRIAN_DATASETS`` when set, else ``<repo>/../shared/datasets``.
    """
    env = os.environ.get(DATASETS_ENV)
    if env:
        return Path(env).expanduser()
    return REPO_ROOT.parent / "shared" / "datasets"


def require_datasets() -> Path:
    """The existing datasets folder; when it is missing, print why and exit with status 0."""
    path = datasets_dir()
    if not path.is_dir():
        print(
            f"SKIPPED: datasets folder not found at {path}. "
            f"Set {DATASETS_ENV}=/path/to/datasets to run this benchmark."
        )
        sys.exit(0)
    return path


def read_csv_gz(name: str) -> tuple[list[str], np.ndarray]:
    """The header and the float64 values of ``<datasets>/<name>.csv.gz``."""
    path = require_datasets() / f"{name}.csv.gz"
    with gzip.open(path, "rt", newline="") as f:
        header = next(csv.reader(f))
    data = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float64, ndmin=2)
    return header, data


def load_xy(name: str, label_column: str | None = None, classification: bool = True):
    """Load one data file as ``(X, y, feature_names)``.

    The label is ``label_column`` (default: the last column, the convention of every file), cast
    to int64 when ``classification`` is true.
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
    """UCI letter: rows ``[0, 15000)`` train, ``[15000, 20000)`` test (the LIBSVM/Statlog split)."""
    X, y, names = load_xy("letter")
    note = "first 15000 rows train, last 5000 test (file in UCI order)"
    return Dataset("letter", X[:15000], y[:15000], X[15000:], y[15000:], names, note)


def load_satimage() -> Dataset:
    """UCI Statlog satimage with the original 4435/2000 train/test split."""
    return _train_test_files("satimage", "original UCI train (4435) / test (2000)")


def load_usps() -> Dataset:
    """USPS digits with the original 7291/2007 train/test split."""
    return _train_test_files("usps", "original train (7291) / test (2007)")


def load_dna() -> Dataset:
    """Statlog DNA: train on LIBSVM ``dna.scale.tr`` (first 1400 rows of dna_train), test 1186.

    The Mondrian forest paper (Lakshminarayanan et al., 2014) trained on these 1400 rows only,
    leaving out the 600 validation rows ``dna.scale.val``.
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
    """Load a classification dataset by name (one of :data:`CLASSIFICATION`)."""
    try:
        return CLASSIFICATION_LOADERS[name]()
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; choose from {CLASSIFICATION}") from None


def read_splits(name: str) -> list[np.ndarray]:
    """The int64 test-row indices of every standard split of ``name`` (empty cells ignored)."""
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
    """A UCI regression set (one of :data:`UCI_REGRESSION`) on its standard (PBP) 90/10 ``split``.

    Splits are numbered 0..19 (0..4 for protein).
    """
    if name not in UCI_REGRESSION:
        raise ValueError(f"unknown dataset {name!r}; choose from {UCI_REGRESSION}")
    X, y, names = load_xy(name, classification=False)
    test = read_splits(name)[split]
    train = np.setdiff1d(np.arange(len(y)), test)
    note = f"standard split {split}: {len(train)} train / {len(test)} test"
    return Dataset(name, X[train], y[train], X[test], y[test], names, note)


def n_uci_splits(name: str) -> int:
    """Number of standard splits of a UCI regression set (20, or 5 for protein)."""
    return len(read_splits(name))


def load_cpu_act(seed: int = 0, n_train: int = 6554) -> Dataset:
    """Delve cpu_act (target ``usr``) with a random 6554/1638 split, as in Rahimi & Recht (2007).

    Their split was not published, so a permutation seeded by ``seed`` is used; its first
    ``n_train`` rows are the training rows.
    """
    X, y, names = load_xy("cpu_act", classification=False)
    perm = np.random.default_rng(seed).permutation(len(y))
    tr, te = perm[:n_train], perm[n_train:]
    note = f"random split (seed {seed}): {len(tr)} train / {len(te)} test"
    return Dataset("cpu_act", X[tr], y[tr], X[te], y[te], names, note)


def subsample_train(data: Dataset, n: int | None, seed: int = 0) -> Dataset:
    """``data`` with a random subset (seeded by ``seed``) of at most ``n`` training rows.

    ``n=None`` keeps every row, so that scripts can write ``subsample_train(data, QUICK_ROWS if
    quick else None, seed)``. Test rows are never touched.
    """
    if n is None or len(data.y_train) <= n:
        return data
    rows = np.sort(np.random.default_rng(seed).choice(len(data.y_train), n, replace=False))
    return replace(data, X_train=data.X_train[rows], y_train=data.y_train[rows],
                   note=f"{data.note}; train subsampled to {n} rows")


def rows_as_dicts(X: np.ndarray, feature_names: list[str]) -> list[dict]:
    """Rows of ``X`` as ``{feature_name: float}`` dicts (the input of river's ``learn_one``)."""
    return [dict(zip(feature_names, map(float, row), strict=True)) for row in X]
