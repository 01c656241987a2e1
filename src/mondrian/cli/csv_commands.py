"""Commands on a CSV file: ``fit`` (train and evaluate a forest, save it), ``path`` (draw the
lifetime path of a dataset) and ``predict`` (apply a saved model).

A CSV file (plain or gzip-compressed) has an optional header row; every feature column holds
numbers. The target column (the last one unless ``--target`` names another) holds labels or
numbers. Reading and task detection live in :mod:`mondrian.cli.csv_input`.
"""

import contextlib
import csv
import math
import pickle
import sys
import time
from pathlib import Path

import numpy as np

from mondrian.cli.csv_input import (
    CommandError,
    check_writable,
    describe_task,
    detect_task,
    read_csv,
    targets,
)
from mondrian.cli.demo import ProgressBar, _table

__all__ = ["CommandError", "read_csv", "detect_task", "run_fit", "run_path", "run_predict"]

SAVED_FORMAT = "mondrian-cli-model/1"


def _read(args, path, target=None, need_target=True):
    return read_csv(path, target, need_target, header=args.header, encoding=args.encoding)


def _read_task(args):
    """The training file of ``fit``/``path``: ``(X, y, names, target, task, how)``."""
    X, y_raw, names, target = _read(args, args.csv, args.target)
    task = detect_task(y_raw) if args.task == "auto" else args.task
    return X, targets(y_raw, task, args.csv), names, target, task, describe_task(
        y_raw, task, args.task)


@contextlib.contextmanager
def _model_errors(what):
    """The model's refusals of the data (ValueError, by the package's rules) as one line."""
    try:
        yield
    except ValueError as error:
        raise CommandError(f"{what}: {error}") from None


def _lifetime(text):
    if text == "auto":
        return "auto"
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0:
        raise CommandError(f"--lifetime must be positive, inf or auto, got {text}")
    return value


def _feature_weights(text, n_features):
    """``--feature-weights``: None (the model's default), "auto", or one weight per feature."""
    if text is None:
        return {}
    if text in ("auto", "none"):
        return {"feature_weights": None if text == "none" else "auto"}
    try:
        weights = [float(value) for value in text.split(",")]
    except ValueError:
        weights = []
    if len(weights) != n_features or not all(math.isfinite(w) and w >= 0 for w in weights):
        raise CommandError(
            f"--feature-weights must be auto, none or {n_features} non-negative numbers "
            f"separated by commas (one per feature), got {text!r}"
        )
    return {"feature_weights": np.array(weights)}


def _model(task, n_estimators, lifetime, seed, **params):
    from mondrian import MondrianForestClassifier, MondrianForestRegressor

    cls = MondrianForestClassifier if task == "classification" else MondrianForestRegressor
    return cls(n_estimators, lifetime=lifetime, random_state=seed, **params)


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


def _split(X, y, fraction, seed, stratify, option):
    """A random split holding out ``fraction`` of the rows (stratified when possible);
    a split that would leave either side without rows is refused."""
    from sklearn.model_selection import train_test_split

    n_test = math.ceil(fraction * len(y))  # train_test_split's rule
    if n_test < 1 or len(y) - n_test < 2:
        raise CommandError(
            f"{option} {fraction} of {len(y)} data rows leaves {len(y) - n_test} rows to train "
            f"on and {n_test} to evaluate; at least 2 and 1 are needed (lower {option}, "
            "or give more rows)"
        )
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


def _train(model, task, X, y, batch_size, quiet):
    """One ``fit`` (default), or ``partial_fit`` on batches of ``batch_size`` rows with a
    progress bar (the same law; the first batch is the whole set for lifetime="auto")."""
    if batch_size is None:
        with _model_errors("the model refused the training data"):
            return model.fit(X, y)
    first = len(y) if model.lifetime == "auto" else min(batch_size, len(y))
    bounds = sorted({0, first, *range(first + batch_size, len(y), batch_size), len(y)})
    advance, close = _progress(len(y), f"fit {task}", quiet)
    classes = {"classes": np.unique(y)} if task == "classification" else {}
    try:
        with _model_errors("the model refused the training data"):
            for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
                model.partial_fit(X[lo:hi], y[lo:hi], **(classes if lo == 0 else {}))
                advance(hi - lo)
    finally:
        close()
    return model


def run_fit(args, out=None):
    """``python -m mondrian fit``: train and evaluate a forest on a CSV file."""
    out = sys.stdout if out is None else out
    if args.save:
        check_writable(args.save, "--save")
    lifetime = _lifetime(args.lifetime)
    X, y, names, target, task, how = _read_task(args)
    params = _feature_weights(args.feature_weights, len(names))
    if args.test is not None:
        X_test, y_test_raw, test_names, _ = _read(args, args.test, target)
        if test_names != names:
            raise CommandError(
                f"the features of {args.test} ({test_names}) differ from those of {args.csv} "
                f"({names})"
            )
        X_train, y_train, y_test = X, y, targets(y_test_raw, task, args.test)
    elif args.test_fraction > 0:
        X_train, X_test, y_train, y_test = _split(X, y, args.test_fraction, args.seed,
                                                  task == "classification", "--test-fraction")
    else:
        X_train, y_train, X_test, y_test = X, y, X[:0], y[:0]
    model = _model(task, args.n_estimators, lifetime, args.seed, **params)
    start = time.process_time()
    _train(model, task, X_train, y_train, args.batch_size, args.quiet)
    train_time = time.process_time() - start
    n_classes = f", {len(model.classes_)} classes" if task == "classification" else ""
    weights = np.round(model.feature_weights_, 3)
    rows = [
        ["data", f"{args.csv}: {len(y_train)} training rows, {len(y_test)} test rows, "
                 f"{len(names)} features"],
        ["target", f"{target} ({task}{n_classes}; {how})"],
        ["model", f"{type(model).__name__}(n_estimators={args.n_estimators}, "
                  f"lifetime={model.lifetime_:.4g})"],
        ["feature weights", "uniform" if np.all(weights == 1) else
         " ".join(f"{w:g}" for w in weights[:12]) + (" ..." if len(weights) > 12 else "")],
        ["training", ("one fit" if args.batch_size is None else
                      f"partial_fit in batches of {args.batch_size} rows")
         + f", {train_time:.2f} s CPU ({len(y_train) / max(train_time, 1e-9):,.0f} rows/s)"],
    ]
    if len(y_test):
        with _model_errors("the model refused the test data"):
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
    check_writable(args.output, "--output")
    X, y, names, target, task, _ = _read_task(args)
    X_fit, X_val, y_fit, y_val = _split(X, y, args.validation_fraction, args.seed,
                                        task == "classification", "--validation-fraction")
    model = _model(task, args.n_estimators, np.inf, args.seed)
    with _model_errors("the model refused the data"):
        model.fit(X_fit, y_fit)
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
    if args.output:
        check_writable(args.output, "--output")
    try:
        with open(args.model, "rb") as handle:
            saved = pickle.load(handle)
    except OSError as error:
        raise CommandError(f"cannot read {args.model}: {error.strerror or error}") from None
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError,
            IndexError, TypeError, KeyError):
        saved = None
    if not (isinstance(saved, dict) and saved.get("format") == SAVED_FORMAT):
        raise CommandError(f"{args.model} is not a model saved by `python -m mondrian fit`")
    task = saved["task"]
    wrong = ("--std", "regression", "--proba") if task == "classification" else (
        "--proba", "classification", "--std")
    if getattr(args, wrong[0][2:]):
        raise CommandError(
            f"{wrong[0]} is for {wrong[1]} models; {args.model} holds a {task} model "
            f"(use {wrong[2]})"
        )
    X, _, names, _ = _read(args, args.csv, saved["target"], need_target=False)
    missing = [name for name in saved["features"] if name not in names]
    if missing:
        raise CommandError(f"{args.csv} lacks the feature columns {missing} of the model")
    X = X[:, [names.index(name) for name in saved["features"]]]
    model = saved["model"]
    header, columns = ["prediction"], []
    with _model_errors("the model refused the rows"):
        if task == "classification":
            columns.append(model.predict(X))
            if args.proba:
                header += [f"proba_{label}" for label in model.classes_]
                columns += list(model.predict_proba(X).T)
        else:
            mean, std = model.predict(X, return_std=True)
            columns.append(mean)
            if args.std:
                header.append("std")
                columns.append(std)
    try:
        target = open(args.output, "w", newline="") if args.output else out  # noqa: SIM115
    except OSError as error:
        raise CommandError(f"cannot write {args.output}: {error.strerror or error}") from None
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
