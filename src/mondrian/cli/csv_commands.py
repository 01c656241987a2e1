"""Commands on a CSV file: ``fit`` (train and evaluate a forest, save it), ``path`` (draw the
lifetime path of a dataset) and ``predict`` (apply a saved model).

A CSV file has a header row; every feature column holds numbers. The target column (the last
one unless ``--target`` names another) holds labels or numbers.
"""

import csv
import math
import pickle
import sys
import time
from pathlib import Path

import numpy as np

from mondrian.cli.demo import ProgressBar, _table

__all__ = ["read_csv", "detect_task", "run_fit", "run_path", "run_predict"]

# Integer targets with at most this many distinct values are taken as class labels.
MAX_AUTO_CLASSES = 20
# Rows learnt per partial_fit call of `fit` (one step of the progress bar).
BATCH_SIZE = 512
SAVED_FORMAT = "mondrian-cli-model/1"


class CommandError(Exception):
    """A problem with the user's input: printed without a traceback, exit status 1."""


def read_csv(path, target=None, need_target=True):
    """Read a CSV file with a header into ``(X, y, feature_names, target_name)``.

    Parameters
    ----------
    path : str
    target : str, default=None
        Name of the target column; the last column when None.
    need_target : bool, default=True
        With False, the file may lack the target column (``y`` is None then).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of str or None
        The raw target column (text), parsed by the caller.
    feature_names : list of str
    target_name : str or None
    """
    try:
        with open(path, newline="") as handle:
            rows = list(csv.reader(handle))
    except OSError as error:
        raise CommandError(f"cannot read {path}: {error.strerror or error}") from None
    if not rows or not rows[0]:
        raise CommandError(f"{path} is empty: expected a header row and data rows")
    header, body = [name.strip() for name in rows[0]], [row for row in rows[1:] if row]
    if not body:
        raise CommandError(f"{path} has a header but no data rows")
    for k, row in enumerate(body):
        if len(row) != len(header):
            raise CommandError(
                f"{path}, line {k + 2}: {len(row)} fields, but the header has {len(header)}"
            )
    if target is None:
        target_name = header[-1] if need_target else None
    elif target in header:
        target_name = target
    elif need_target:
        raise CommandError(f"no column {target!r} in {path}; its columns are {header}")
    else:
        target_name = None
    columns = list(zip(*body, strict=True))
    y = None
    if target_name is not None:
        y = np.array([value.strip() for value in columns[header.index(target_name)]])
    feature_names = [name for name in header if name != target_name]
    if not feature_names:
        raise CommandError(f"{path} has no feature column beside the target {target_name!r}")
    X = np.empty((len(body), len(feature_names)))
    for j, name in enumerate(feature_names):
        column = columns[header.index(name)]
        try:
            X[:, j] = [float(value) for value in column]
        except ValueError:
            bad = next(v for v in column if not _is_number(v))
            raise CommandError(
                f"column {name!r} of {path} holds {bad!r}, not a number: encode categorical "
                "features as numbers, and fill or drop missing values, before fitting"
            ) from None
        if not np.isfinite(X[:, j]).all():
            raise CommandError(f"column {name!r} of {path} holds NaN or infinite values")
    return X, y, feature_names, target_name


def _is_number(text):
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def detect_task(y):
    """``"classification"`` for text labels or few integer values, else ``"regression"``.

    Parameters
    ----------
    y : ndarray of str

    Returns
    -------
    str
    """
    try:
        values = y.astype(np.float64)
    except ValueError:
        return "classification"
    if np.all(values == np.round(values)) and len(np.unique(values)) <= MAX_AUTO_CLASSES:
        return "classification"
    return "regression"


def _targets(y, task, where):
    if task == "classification":
        try:  # integer labels stay numbers (the model's classes_ are then numbers)
            values = y.astype(np.float64)
            if np.all(values == np.round(values)):
                return values.astype(np.int64)
        except ValueError:
            pass
        return y
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


def _lifetime(text):
    if text == "auto":
        return "auto"
    value = float(text)
    if not value > 0:
        raise CommandError(f"--lifetime must be positive, inf or auto, got {text}")
    return value


def _model(task, n_estimators, lifetime, seed):
    from mondrian import MondrianForestClassifier, MondrianForestRegressor

    cls = MondrianForestClassifier if task == "classification" else MondrianForestRegressor
    return cls(n_estimators, lifetime=lifetime, random_state=seed)


def _progress(total, label, quiet):
    """tqdm when it is installed, else the demo's text bar on stderr; ``(advance, close)``."""
    if quiet:
        return (lambda n: None), (lambda: None)
    try:
        from tqdm.auto import tqdm
    except ImportError:
        bar, done = ProgressBar(total, label=label), [0]

        def advance(n):
            done[0] += n
            bar.update(done[0])

        return advance, (lambda: None)
    bar = tqdm(total=total, desc=label, unit="rows", file=sys.stderr)
    return bar.update, bar.close


def _split(X, y, fraction, seed, stratify):
    from sklearn.model_selection import train_test_split

    try:
        return train_test_split(X, y, test_size=fraction, random_state=seed,
                                stratify=y if stratify else None)
    except ValueError:  # a class too small to stratify
        return train_test_split(X, y, test_size=fraction, random_state=seed)


def _evaluate(model, task, X, y):
    """Metrics of ``model`` on ``(X, y)``: ``[(name, value), ...]``."""
    from sklearn import metrics

    if task == "classification":
        proba = model.predict_proba(X)
        known = np.isin(y, model.classes_)
        result = [("accuracy", metrics.accuracy_score(y, model.predict(X)))]
        if known.all():
            result.append(("log loss", metrics.log_loss(y, proba, labels=model.classes_)))
        return result
    mean, std = model.predict(X, return_std=True)
    var = np.maximum(std**2, 1e-300)
    nll = float(np.mean(0.5 * np.log(2 * np.pi * var) + (y - mean) ** 2 / (2 * var)))
    return [
        ("RMSE", math.sqrt(metrics.mean_squared_error(y, mean))),
        ("MAE", metrics.mean_absolute_error(y, mean)),
        ("R²", metrics.r2_score(y, mean) if len(y) > 1 else float("nan")),
        ("mean predictive std", float(np.mean(std))),
        ("Gaussian NLL", nll),
    ]


def run_fit(args, out=None):
    """``python -m mondrian fit``: train and evaluate a forest on a CSV file."""
    out = sys.stdout if out is None else out
    X, y_raw, names, target = read_csv(args.csv, args.target)
    task = detect_task(y_raw) if args.task == "auto" else args.task
    y = _targets(y_raw, task, args.csv)
    if args.test is not None:
        X_test, y_test_raw, test_names, _ = read_csv(args.test, target)
        if test_names != names:
            raise CommandError(
                f"the features of {args.test} ({test_names}) differ from those of {args.csv} "
                f"({names})"
            )
        X_train, y_train, y_test = X, y, _targets(y_test_raw, task, args.test)
    elif args.test_fraction > 0:
        X_train, X_test, y_train, y_test = _split(X, y, args.test_fraction, args.seed,
                                                  task == "classification")
    else:
        X_train, y_train, X_test, y_test = X, y, X[:0], y[:0]
    model = _model(task, args.n_estimators, _lifetime(args.lifetime), args.seed)
    # Mini-batches (the same law as one fit): the progress bar moves with each batch. The
    # first batch is the whole training set when lifetime="auto" (it is chosen on a batch).
    first = len(y_train) if model.lifetime == "auto" else min(args.batch_size, len(y_train))
    advance, close = _progress(len(y_train), f"fit {task}", args.quiet)
    start = time.perf_counter()
    bounds = [0, first, *range(first + args.batch_size, len(y_train), args.batch_size)]
    bounds = sorted(set(bounds + [len(y_train)]))
    try:
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            if task == "classification":
                model.partial_fit(X_train[lo:hi], y_train[lo:hi],
                                  classes=np.unique(y_train) if lo == 0 else None)
            else:
                model.partial_fit(X_train[lo:hi], y_train[lo:hi])
            advance(hi - lo)
    finally:
        close()
    train_time = time.perf_counter() - start
    rows = [
        ["data", f"{args.csv}: {len(y_train)} training rows, {len(y_test)} test rows, "
                 f"{len(names)} features"],
        ["target", f"{target} ({task}"
                   + (f", {len(model.classes_)} classes)" if task == "classification" else ")")],
        ["model", f"{type(model).__name__}(n_estimators={args.n_estimators}, "
                  f"lifetime={model.lifetime_:.4g})"],
        ["training time", f"{train_time:.2f} s ({len(y_train) / max(train_time, 1e-9):,.0f} "
                          "rows/s)"],
    ]
    if len(y_test):
        rows += [[f"test {name}", f"{value:.4f}"]
                 for name, value in _evaluate(model, task, X_test, y_test)]
    print(f"## mondrian fit: {args.csv}\n", file=out)
    print(_table(["", "value"], rows, ["<", "<"]), file=out)
    if args.save:
        saved = {"format": SAVED_FORMAT, "model": model, "features": names, "target": target,
                 "task": task}
        try:
            with open(args.save, "wb") as handle:
                pickle.dump(saved, handle)
        except OSError as error:
            raise CommandError(f"cannot write {args.save}: {error.strerror or error}") from None
        print(f"\nModel saved to {args.save} (python -m mondrian predict {args.save} FILE.csv).",
              file=out)
    return model


def run_path(args, out=None):
    """``python -m mondrian path``: the lifetime path of a dataset, drawn to a PNG file."""
    out = sys.stdout if out is None else out
    X, y_raw, names, target = read_csv(args.csv, args.target)
    task = detect_task(y_raw) if args.task == "auto" else args.task
    y = _targets(y_raw, task, args.csv)
    X_fit, X_val, y_fit, y_val = _split(X, y, args.validation_fraction, args.seed,
                                        task == "classification")
    model = _model(task, args.n_estimators, np.inf, args.seed).fit(X_fit, y_fit)
    if task == "classification":
        known = np.isin(y_val, model.classes_)
        X_val, y_val = X_val[known], y_val[known]
    path = model.lifetime_path(X_val, y_val)
    metric = args.metric or path.criterion
    if metric not in path.metrics:
        raise CommandError(f"--metric must be one of {sorted(path.metrics)}, got {metric!r}")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CommandError("drawing the path needs matplotlib: pip install matplotlib") from None
    from mondrian.plot import plot_lifetime_path

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    plot_lifetime_path(path, metric=metric, ax=ax)
    ax.set_title(f"{Path(args.csv).name}: {type(model).__name__}, {len(y_val)} validation rows")
    fig.tight_layout()
    try:
        fig.savefig(args.output, dpi=110)
    except OSError as error:
        raise CommandError(f"cannot write {args.output}: {error.strerror or error}") from None
    finally:
        plt.close(fig)
    best = path.best_index
    rows = [[name, f"{path.metrics[name][best]:.4f}"] for name in sorted(path.metrics)]
    print(f"## mondrian path: {args.csv} ({task})\n", file=out)
    print(f"Best lifetime {path.best_lifetime:.4g} of {len(path.lifetimes)} lifetimes "
          f"(criterion: {path.criterion}); at that lifetime:\n", file=out)
    print(_table(["validation metric", "value"], rows, ["<", ">"]), file=out)
    print(f"\nPicture: {args.output}", file=out)
    return path


def run_predict(args, out=None):
    """``python -m mondrian predict``: apply a model saved by ``fit --save`` to a CSV file."""
    out = sys.stdout if out is None else out
    try:
        with open(args.model, "rb") as handle:
            saved = pickle.load(handle)
    except OSError as error:
        raise CommandError(f"cannot read {args.model}: {error.strerror or error}") from None
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError):
        saved = None
    if not (isinstance(saved, dict) and saved.get("format") == SAVED_FORMAT):
        raise CommandError(f"{args.model} is not a model saved by `python -m mondrian fit`")
    X, _, names, _ = read_csv(args.csv, saved["target"], need_target=False)
    missing = [name for name in saved["features"] if name not in names]
    if missing:
        raise CommandError(f"{args.csv} lacks the feature columns {missing} of the model")
    X = X[:, [names.index(name) for name in saved["features"]]]
    model = saved["model"]
    header, columns = ["prediction"], []
    if saved["task"] == "classification":
        columns.append(model.predict(X))
        if args.proba:
            proba = model.predict_proba(X)
            header += [f"proba_{label}" for label in model.classes_]
            columns += list(proba.T)
    else:
        mean, std = model.predict(X, return_std=True)
        columns.append(mean)
        if args.std:
            header.append("std")
            columns.append(std)
    target = open(args.output, "w", newline="") if args.output else out  # noqa: SIM115
    try:
        writer = csv.writer(target)
        writer.writerow(header)
        for row in zip(*columns, strict=True):
            writer.writerow([_cell(v) for v in row])
    finally:
        if args.output:
            target.close()
    return columns[0]


def _cell(value):
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.10g}"
    return str(value.item() if isinstance(value, np.generic) else value)
