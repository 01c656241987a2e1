"""Reading the CSV files of the command line: plain or gzip-compressed (``.csv.gz``), UTF-8
with or without a byte-order mark, with or without a header row; the target column parsed
into class labels or numbers, and the task told apart.

Every problem with a file ends in a :class:`CommandError` (one line, exit status 1).
"""

import csv
import gzip
import math
import os

import numpy as np

__all__ = ["CommandError", "read_csv", "detect_task", "describe_task", "targets",
           "check_writable"]

# Integer targets with at most this many distinct values are taken as class labels.
MAX_AUTO_CLASSES = 20
_GZIP_MAGIC = b"\x1f\x8b"


class CommandError(Exception):
    """A problem with the user's input: printed without a traceback, exit status 1."""


def _read_rows(path, encoding):
    """The rows of a CSV file (gzip-compressed when it starts with gzip's magic bytes)."""
    try:
        with open(path, "rb") as handle:
            compressed = handle.read(2) == _GZIP_MAGIC
        # utf-8-sig reads plain UTF-8 too, and drops a byte-order mark.
        codec = "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") \
            else encoding
        opener = gzip.open if compressed else open
        with opener(path, "rt", encoding=codec, newline="") as handle:
            return list(csv.reader(handle))
    except OSError as error:  # also gzip.BadGzipFile, EOFError below
        raise CommandError(f"cannot read {path}: {error.strerror or error}") from None
    except EOFError:
        raise CommandError(f"cannot read {path}: the gzip stream is truncated") from None
    except LookupError:
        raise CommandError(f"unknown --encoding {encoding!r}") from None
    except UnicodeDecodeError as error:
        raise CommandError(
            f"{path} is not {encoding} text (byte {error.object[error.start:error.start + 1]!r} "
            f"at offset {error.start}): save it as UTF-8, or pass its encoding, e.g. "
            "--encoding latin-1"
        ) from None
    except csv.Error as error:
        raise CommandError(f"{path} is not a readable CSV file: {error}") from None


def _is_number(text):
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def _parses(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _has_header(first, header):
    """Whether the first row is a header: ``header`` "yes"/"no", or "auto" (a first row of
    numbers only is data)."""
    if header == "auto":
        return not all(_is_number(value) for value in first)
    return header == "yes"


def read_csv(path, target=None, need_target=True, *, header="auto", encoding="utf-8"):
    """Read a CSV file into ``(X, y, feature_names, target_name)``.

    Parameters
    ----------
    path : str
        A CSV file, plain or gzip-compressed (recognised by its content, whatever its name).
    target : str, default=None
        Name of the target column; the last column when None.
    need_target : bool, default=True
        With False, the file may lack the target column (``y`` is None then).
    header : {"auto", "yes", "no"}, default="auto"
        Whether the first row names the columns. ``"auto"``: it does unless all its fields
        are numbers. Without a header the columns are named ``col1``, ``col2``...
    encoding : str, default="utf-8"
        Text encoding; a UTF-8 byte-order mark is dropped.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of str or None
        The raw target column (text), parsed by :func:`targets`.
    feature_names : list of str
    target_name : str or None

    Examples
    --------
    >>> import os, tempfile
    >>> from mondrian.cli.csv_input import read_csv
    >>> path = os.path.join(tempfile.mkdtemp(), "data.csv")
    >>> with open(path, "w", encoding="utf-8-sig") as handle:
    ...     _ = handle.write("a,b,label\\n1,2,x\\n3,4,y\\n")
    >>> X, y, names, target = read_csv(path)
    >>> X.shape, y.tolist(), names, target
    ((2, 2), ['x', 'y'], ['a', 'b'], 'label')
    """
    rows = [row for row in _read_rows(path, encoding) if row]
    if not rows:
        raise CommandError(f"{path} is empty: expected data rows (after an optional header)")
    first = 2 if _has_header(rows[0], header) else 1  # line number of the first data row
    if first == 2:
        names, body = [name.strip() for name in rows[0]], rows[1:]
    else:
        names, body = [f"col{j + 1}" for j in range(len(rows[0]))], rows
    if not body:
        raise CommandError(f"{path} has a header but no data rows")
    for k, row in enumerate(body):
        if len(row) != len(names):
            raise CommandError(
                f"{path}, line {k + first}: {len(row)} fields, but the "
                f"{'header' if first == 2 else 'first row'} has {len(names)}"
            )
    if target is None:
        target_name = names[-1] if need_target else None
    elif target in names:
        target_name = target
    elif need_target:
        raise CommandError(f"no column {target!r} in {path}; its columns are {names}")
    else:
        target_name = None
    columns = list(zip(*body, strict=True))
    y = None
    if target_name is not None:
        y = np.array([value.strip() for value in columns[names.index(target_name)]])
        empty = np.flatnonzero(y == "")
        if empty.size:
            raise CommandError(
                f"the target column {target_name!r} of {path} is empty on line "
                f"{empty[0] + first} ({empty.size} empty in all): fill or drop the rows without "
                "a target"
            )
    feature_names = [name for name in names if name != target_name]
    if not feature_names:
        raise CommandError(f"{path} has no feature column beside the target {target_name!r}")
    X = np.empty((len(body), len(feature_names)))
    for j, name in enumerate(feature_names):
        column = columns[names.index(name)]
        try:
            X[:, j] = [float(value) for value in column]
        except ValueError:
            k = next(k for k, v in enumerate(column) if not _is_number(v))
            what = "is empty" if not column[k].strip() else f"holds {column[k]!r}, not a number"
            raise CommandError(
                f"column {name!r} of {path} {what} on line {k + first}: encode categorical "
                "features as numbers, and fill or drop missing values, before fitting"
            ) from None
        if not np.isfinite(X[:, j]).all():
            raise CommandError(f"column {name!r} of {path} holds NaN or infinite values")
    return X, y, feature_names, target_name


def _integer_values(y):
    """The distinct values of a target column of integers, else None."""
    try:
        values = y.astype(np.float64)
    except ValueError:
        return None
    if not (np.isfinite(values).all() and np.all(values == np.round(values))):
        return None
    return np.unique(values)


def detect_task(y):
    """``"classification"`` or ``"regression"`` for a raw target column.

    Text labels are classes; numbers that are not all integers are regression targets.
    Integers are classes when there are at most ``MAX_AUTO_CLASSES`` distinct values, or when
    they are the consecutive codes ``0..K-1`` or ``1..K`` of ``K`` classes holding two rows
    each on average (letter's 26 classes); other integers (counts, scores) are regression
    targets. :func:`describe_task` says which rule decided, and ``--task`` overrides it.

    Parameters
    ----------
    y : ndarray of str

    Returns
    -------
    str

    Examples
    --------
    >>> import numpy as np
    >>> from mondrian.cli.csv_input import detect_task
    >>> detect_task(np.array(["cat", "dog"])), detect_task(np.array(["0.5", "2"]))
    ('classification', 'regression')
    >>> detect_task(np.array([str(k % 26) for k in range(100)]))
    'classification'
    """
    distinct = _integer_values(y)
    if distinct is None:
        # NaN and infinities are numbers too: the regression targets refuse them.
        return "regression" if all(_parses(v) for v in y) else "classification"
    k = len(distinct)
    codes = k * 2 <= len(y) and distinct[-1] - distinct[0] == k - 1 and distinct[0] in (0, 1)
    return "classification" if k <= MAX_AUTO_CLASSES or codes else "regression"


def describe_task(y, task, chosen):
    """How the task was set, for the result table (``chosen``: the ``--task`` option)."""
    if chosen != "auto":
        return "set by --task"
    distinct = _integer_values(y)
    if distinct is None:
        return f"auto: {'numbers' if task == 'regression' else 'text labels'}"
    other = "regression" if task == "classification" else "classification"
    return (f"auto: {len(distinct)} distinct integers, --task {other} to treat them as "
            f"{'numbers' if other == 'regression' else 'classes'}")


def targets(y, task, where):
    """The raw target column ``y`` as class labels (integers stay numbers) or floats."""
    if task == "classification":
        distinct = _integer_values(y)
        return y if distinct is None else y.astype(np.float64).astype(np.int64)
    try:
        values = y.astype(np.float64)
    except ValueError:
        bad = next(v for v in y if not _is_number(v))
        raise CommandError(
            f"the target of {where} holds {bad!r}: regression needs numbers (use --task "
            "classification for labels)"
        ) from None
    if not np.isfinite(values).all():
        raise CommandError(f"the target of {where} holds NaN or infinite values")
    return values


def check_writable(path, option):
    """Raise a :class:`CommandError` unless ``path`` can be written (checked before any
    work, so that a long fit does not end in a failed save)."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise CommandError(f"{option} {path} is a directory, not a file")
    if not os.path.isdir(folder):
        raise CommandError(f"cannot write {option} {path}: no directory {folder}")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise CommandError(f"cannot write {option} {path}: permission denied")
