"""Batch classification benchmark: Mondrian forest vs scikit-learn random forests.

On letter, satimage, usps and dna, fit ``MondrianForestClassifier``, ``RandomForestClassifier`` and
``ExtraTreesClassifier`` (100 trees, ``n_jobs=1``, fixed ``random_state``) and report test accuracy,
fit and predict time (median of 3 runs), pickled model size and peak fit memory, with the fit time
relative to ExtraTrees and the accuracy difference to RandomForest.

Run from the repository root::

    python benchmarks/bench_classification.py            # full run
    python benchmarks/bench_classification.py --quick    # 10 trees, 1 run, <= 2000 train rows
    python benchmarks/bench_classification.py --datasets letter,dna --no-memory

A full run writes its report to ``benchmarks/results/classification.md`` (``--output`` elsewhere).
"""

from __future__ import annotations

import numpy as np
from shared.cli import add_datasets, add_output_options, add_sized, make_parser, parse_args
from shared.datasets import (
    CLASSIFICATION,
    Dataset,
    load_classification,
    require_datasets,
    subsample_train,
)
from shared.measure import fit_estimator, model_size_mb, peak_memory, time_callable
from shared.optional import import_mondrian
from shared.report import Report, environment_line, log
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier

MONDRIAN, RF, ET = "MondrianForest", "RandomForest", "ExtraTrees"
QUICK_TRAIN_ROWS = 2000
COLUMNS = [
    "dataset", "model", "accuracy", "fit (s)", "predict (s)", "size (MB)",
    "peak RSS (MB)", "traced peak (MB)", "fit / ET", "acc - RF (pts)",
]
FORMATS = {
    "accuracy": ".4f", "fit (s)": ".3f", "predict (s)": ".3f", "size (MB)": ".2f",
    "peak RSS (MB)": ".1f", "traced peak (MB)": ".1f", "fit / ET": ".2f", "acc - RF (pts)": "+.2f",
}
ACCURACY_TARGET = ("letter", "satimage", "usps")  # within 1 point of RandomForest
SPEED_TARGET = ("letter", "satimage")  # fit time at most 2x ExtraTrees


def make_models(n_estimators: int, seed: int, report: Report) -> dict:
    """Unfitted estimators to compare, by display name.

    Parameters
    ----------
    n_estimators : int
    seed : int
        ``random_state`` of every model.
    report : Report
        Where to say that mondrian is missing.

    Returns
    -------
    dict
        Name -> estimator. Mondrian is left out (with a message) when it is not importable.
    """
    params = {"n_estimators": n_estimators, "n_jobs": 1, "random_state": seed}
    models = {}
    mondrian, reason = import_mondrian()
    if mondrian is None:
        report.add(f"NOTE: mondrian is unavailable, only the baselines are run. {reason}")
    else:
        models[MONDRIAN] = mondrian.MondrianForestClassifier(**params)
    models[RF] = RandomForestClassifier(**params)
    models[ET] = ExtraTreesClassifier(**params)
    return models


def fit_and_score(name: str, estimator, data: Dataset, repeats: int) -> dict:
    """Time fit and predict, and measure accuracy and pickled size, of one model.

    Parameters
    ----------
    name : str
        Display name of the model.
    estimator : estimator
        Unfitted template (cloned for every fit).
    data : Dataset
    repeats : int
        Timed runs; the median is reported.

    Returns
    -------
    dict
        One table row (the fitted model is released on return).
    """
    X, y, X_test = data.X_train, data.y_train, data.X_test
    fit_s, model = time_callable(lambda: fit_estimator(estimator, X, y), repeats)
    predict_s, pred = time_callable(lambda: model.predict(X_test), repeats)
    return {
        "dataset": data.name,
        "model": name,
        "accuracy": float(np.mean(pred == data.y_test)),
        "fit (s)": fit_s,
        "predict (s)": predict_s,
        "size (MB)": model_size_mb(model),
    }


def evaluate(name: str, estimator, data: Dataset, repeats: int, memory: bool) -> dict:
    """One table row: :func:`fit_and_score`, then the peak memory of one fit in a subprocess.

    Parameters
    ----------
    name : str
    estimator : estimator
    data : Dataset
    repeats : int
    memory : bool
        Measure the peak memory (done after the timed model is released).

    Returns
    -------
    dict
    """
    row = fit_and_score(name, estimator, data, repeats)
    if memory:
        mem = peak_memory(fit_estimator, estimator, data.X_train, data.y_train)
        row["peak RSS (MB)"] = mem["peak_rss_mb"]
        row["traced peak (MB)"] = mem["traced_peak_mb"]
    return row


def add_relative_columns(rows: list[dict]) -> None:
    """Add fit time relative to ExtraTrees and accuracy minus RandomForest's, per dataset.

    Parameters
    ----------
    rows : list of dict
        Rows from :func:`evaluate`, modified in place.
    """
    by_key = {(r["dataset"], r["model"]): r for r in rows}
    for row in rows:
        et = by_key.get((row["dataset"], ET))
        rf = by_key.get((row["dataset"], RF))
        if et is not None:
            row["fit / ET"] = row["fit (s)"] / et["fit (s)"]
        if rf is not None:
            row["acc - RF (pts)"] = 100.0 * (row["accuracy"] - rf["accuracy"])


def target_checks(rows: list[dict]) -> list[tuple[str, bool | None, str]]:
    """Evaluate the performance targets of the Mondrian forest.

    Targets: accuracy at least RandomForest's minus 1 point on letter, satimage and usps; fit time
    at most twice ExtraTrees' on letter and satimage.

    Parameters
    ----------
    rows : list of dict
        Rows with the relative columns added.

    Returns
    -------
    list of (description, passed, detail)
    """
    mondrian_rows = {r["dataset"]: r for r in rows if r["model"] == MONDRIAN}
    checks = []
    for name in ACCURACY_TARGET:
        diff = mondrian_rows.get(name, {}).get("acc - RF (pts)")
        passed = None if diff is None else bool(diff >= -1.0)
        detail = "not run" if diff is None else f"{diff:+.2f} points vs RandomForest"
        checks.append((f"{name}: accuracy within 1 point of RandomForest", passed, detail))
    for name in SPEED_TARGET:
        ratio = mondrian_rows.get(name, {}).get("fit / ET")
        passed = None if ratio is None else bool(ratio <= 2.0)
        detail = "not run" if ratio is None else f"fit time {ratio:.2f}x ExtraTrees"
        checks.append((f"{name}: fit time <= 2x ExtraTrees", passed, detail))
    return checks


def load_datasets(names: list[str], quick: bool, seed: int) -> list[Dataset]:
    """Load the selected datasets, subsampling the training rows in quick mode.

    Parameters
    ----------
    names : list of str
    quick : bool
    seed : int

    Returns
    -------
    list of Dataset
    """
    n_rows = QUICK_TRAIN_ROWS if quick else None
    return [subsample_train(load_classification(name), n_rows, seed) for name in names]


def main(argv=None) -> None:
    """Run the benchmark: print the markdown report, write it in a full run."""
    parser = make_parser(__doc__.splitlines()[0])
    add_datasets(parser, CLASSIFICATION)
    add_sized(parser, "--n-estimators", 100, 10, "trees per forest")
    parser.add_argument("--no-memory", action="store_true",
                        help="skip the peak-memory subprocess measurements")
    add_output_options(parser, "classification.md", plots=False)
    args = parse_args(parser, argv)
    require_datasets()

    report = Report()
    report.add("## Classification benchmark" + (" (QUICK MODE)" if args.quick else ""))
    report.add(f"\n{environment_line()}")
    report.add(f"n_estimators={args.n_estimators}, n_jobs=1, random_state={args.seed}, "
               f"median of {args.repeats} run(s); peak memory = one fit in a spawned subprocess.")
    if args.quick:
        report.add(f"Quick mode: training rows subsampled to at most {QUICK_TRAIN_ROWS} (test rows "
                   "unchanged), so the targets are indicative only.")
    models = make_models(args.n_estimators, args.seed, report)
    rows = []
    for data in load_datasets(args.datasets, args.quick, args.seed):
        report.add(f"- {data.name}: {len(data.y_train)} train / {len(data.y_test)} test, "
                   f"{data.X_train.shape[1]} features, {data.n_classes} classes ({data.note})")
        for name, estimator in models.items():
            log(f"[{data.name}] {name} ...")
            rows.append(evaluate(name, estimator, data, args.repeats, not args.no_memory))
    add_relative_columns(rows)
    report.table(rows, COLUMNS, FORMATS, title="Results")
    report.checks("Targets (MondrianForest)", target_checks(rows))
    report.write(args.output)


if __name__ == "__main__":
    main()
