"""Regression benchmark on the UCI sets: Mondrian forest vs scikit-learn forests and river AMF.

On power_plant, kin8nm, naval, concrete, energy, wine_red, yacht and protein, with their standard
90/10 splits (the first 5 of each set by default), fit side by side:

MondrianForest
    ``mondrian.MondrianForestRegressor`` (100 trees, ``n_jobs=1``, hierarchical smoothing);
    predictive mean and standard deviation from ``predict(X, return_std=True)``.
RandomForest, ExtraTrees
    ``sklearn.ensemble.RandomForestRegressor`` / ``ExtraTreesRegressor`` (100 trees, ``n_jobs=1``).
    Predictive mean = the forest's prediction (mean of the trees); predictive variance = variance
    of the individual trees' predictions + a floor of ``0.01 * var(y_train)``, the usual way of
    reading uncertainty out of a random forest (SMAC, scikit-optimize).
river AMF
    ``river.forest.AMFRegressor(n_estimators=10, seed=S)``, trained online (one ``learn_one`` per
    row, dict rows, in the order of the training set) on at most the first 2000 training rows
    (``--amf-rows``), then ``predict_one`` on every test row. It has no predictive variance, so
    it gets an RMSE but no NLL.

Reported per (dataset, model), mean ± std over the splits: test RMSE and test NLL (Gaussian
predictive, ``0.5 log(2 pi var) + (y - mean)^2 / (2 var)`` averaged over the test rows), both in
the units of y; fit and predict time (seconds, mean over splits of the median of ``--repeats``
runs; predict = the whole predictive mean and variance of the test set). Then the targets of the
Mondrian forest (RMSE within 5% of RandomForest, better NLL than RandomForest, each on most sets)
and the hyperparameters it chose (held-out choice on the first batch) on split 0 of each set.

Run from the repository root::

    python benchmarks/bench_regression.py             # full run
    python benchmarks/bench_regression.py --quick     # 1 split, <= 1000 train rows, 10 trees
    python benchmarks/bench_regression.py --datasets yacht,energy --splits 20

A full run writes its report to ``benchmarks/results/regression.md`` (``--output`` elsewhere).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
from shared.cli import (
    add_datasets,
    add_output_options,
    add_sized,
    make_parser,
    parse_args,
    parse_list,
)
from shared.datasets import (
    Dataset,
    load_uci_regression,
    n_uci_splits,
    require_datasets,
    rows_as_dicts,
    subsample_train,
)
from shared.measure import fit_estimator, time_callable
from shared.metrics import gaussian_nll, rmse
from shared.optional import import_mondrian, optional_import
from shared.report import Report, environment_line, log, mean_std
from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor

# In the order of the report (datasets.UCI_REGRESSION holds the same names, sorted).
DATASETS = ("power_plant", "kin8nm", "naval", "concrete", "energy", "wine_red", "yacht", "protein")
MONDRIAN, RF, ET, AMF = "MondrianForest", "RandomForest", "ExtraTrees", "river AMF"
MODEL_KEYS = {"mondrian": MONDRIAN, "rf": RF, "et": ET, "amf": AMF}
DEFAULT_SPLITS = 5
QUICK_TRAIN_ROWS = 1000
QUICK_TREES = 10
AMF_TREES = 10
AMF_MAX_ROWS = 2000
VARIANCE_FLOOR = 0.01  # share of var(y_train) added to the tree-spread variance of RF and ET
RMSE_TOLERANCE = 1.05  # target: Mondrian RMSE <= 1.05 x RandomForest RMSE
COLUMNS = [
    "dataset", "model", "train rows", "RMSE", "NLL", "fit (s)", "predict (s)",
    "RMSE / RF", "NLL - RF",
]
FORMATS = {"fit (s)": ".3f", "predict (s)": ".3f", "RMSE / RF": ".3f", "NLL - RF": "+.3f"}
HYPER_COLUMNS = [
    "dataset", "noise_variance", "prior_variance", "sigmoid_rate", "prior_mean",
    "var(y_train)", "noise share",
]
HYPER_FORMATS = {"noise share": ".3f"}


@dataclass
class Outcome:
    """What one model produced on one split.

    Attributes
    ----------
    n_train : int
        Training rows the model saw.
    fit_s, predict_s : float
        Median fit and predict times (seconds).
    mean : ndarray of shape (n_test,)
        Predictive mean.
    var : ndarray of shape (n_test,) or None
        Predictive variance (None when the model has none).
    hyperparameters : dict or None
        ``hyperparameters_`` of the Mondrian forest.
    """

    n_train: int
    fit_s: float
    predict_s: float
    mean: np.ndarray
    var: np.ndarray | None
    hyperparameters: dict | None = None


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------


def run_mondrian(template, data: Dataset, repeats: int) -> Outcome:
    """Fit the Mondrian forest, then predict mean and standard deviation on the test rows."""
    fit_s, model = time_callable(
        lambda: fit_estimator(template, data.X_train, data.y_train), repeats)
    predict_s, (mean, std) = time_callable(
        lambda: model.predict(data.X_test, return_std=True), repeats)
    hyper = {k: float(v) for k, v in model.hyperparameters_.items()}
    return Outcome(len(data.y_train), fit_s, predict_s, mean, std**2, hyper)


def forest_moments(forest, X: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance (plus ``floor``) of the predictions of a fitted sklearn forest's trees.

    Parameters
    ----------
    forest : RandomForestRegressor or ExtraTreesRegressor
    X : ndarray of shape (n_samples, n_features)
    floor : float
        Added to the variance, so that leaves where every tree agrees keep some uncertainty.

    Returns
    -------
    mean, var : ndarray of shape (n_samples,)
    """
    X32 = np.ascontiguousarray(X, dtype=np.float32)  # what the trees predict on, converted once
    preds = np.stack([tree.predict(X32, check_input=False) for tree in forest.estimators_])
    return preds.mean(axis=0), preds.var(axis=0) + floor


def run_sklearn_forest(template, data: Dataset, repeats: int) -> Outcome:
    """Fit a scikit-learn forest; predictive variance = spread of its trees + floor."""
    floor = VARIANCE_FLOOR * float(np.var(data.y_train))
    fit_s, model = time_callable(
        lambda: fit_estimator(template, data.X_train, data.y_train), repeats)
    predict_s, (mean, var) = time_callable(
        lambda: forest_moments(model, data.X_test, floor), repeats)
    return Outcome(len(data.y_train), fit_s, predict_s, mean, var)


def run_amf(make: Callable, max_rows: int, data: Dataset, repeats: int) -> Outcome:
    """Train river's AMF online on the first ``max_rows`` training rows, then predict the test rows.

    Rows are converted to dicts before timing. ``max_rows <= 0`` means every training row.
    """
    n = len(data.y_train) if max_rows <= 0 else min(max_rows, len(data.y_train))
    train = rows_as_dicts(data.X_train[:n], data.feature_names)
    targets = [float(v) for v in data.y_train[:n]]
    test = rows_as_dicts(data.X_test, data.feature_names)

    def learn():
        model = make()
        for x, y in zip(train, targets, strict=True):
            model.learn_one(x, y)
        return model

    fit_s, model = time_callable(learn, repeats)
    predict_s, mean = time_callable(
        lambda: np.array([model.predict_one(x) for x in test], dtype=np.float64), repeats)
    return Outcome(n, fit_s, predict_s, mean, None)


def make_models(keys: list[str], n_estimators: int, seed: int, amf_rows: int,
                report: Report) -> dict:
    """The models to compare, as ``name -> run(data, repeats) -> Outcome``.

    Parameters
    ----------
    keys : list of str
        Subset of :data:`MODEL_KEYS`.
    n_estimators : int
        Trees of the Mondrian, random and extra-trees forests (AMF always has 10).
    seed : int
        ``random_state`` / ``seed`` of every model.
    amf_rows : int
        Training rows given to AMF (``<= 0``: all).
    report : Report
        Where to say which libraries are missing.

    Returns
    -------
    dict
        Unavailable libraries are left out, with a message.
    """
    params = {"n_estimators": n_estimators, "n_jobs": 1, "random_state": seed}
    models = {}
    if "mondrian" in keys:
        mondrian, reason = import_mondrian()
        if mondrian is None:
            report.add(f"NOTE: mondrian is unavailable, only the baselines are run. {reason}")
        else:
            template = mondrian.MondrianForestRegressor(smoothing="hierarchical", **params)
            models[MONDRIAN] = partial(run_mondrian, template)
    if "rf" in keys:
        models[RF] = partial(run_sklearn_forest, RandomForestRegressor(**params))
    if "et" in keys:
        models[ET] = partial(run_sklearn_forest, ExtraTreesRegressor(**params))
    if "amf" in keys:
        forest, reason = optional_import("river.forest")
        if forest is None:
            report.add(f"NOTE: river is unavailable, AMF is not run. {reason}")
        else:
            make = partial(forest.AMFRegressor, n_estimators=AMF_TREES, seed=seed)
            models[AMF] = partial(run_amf, make, amf_rows)
    return models


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def summarise(dataset: str, model: str, runs: list[dict]) -> dict:
    """One table row from the per-split results of a model on a dataset.

    Parameters
    ----------
    dataset, model : str
    runs : list of dict
        Per split: ``rmse``, ``nll`` (None without a predictive variance), ``fit``,
        ``predict``, ``n_train``.

    Returns
    -------
    dict
        Display columns, plus the mean RMSE and NLL under ``_rmse`` / ``_nll`` (None without NLL).
    """
    rmses = [r["rmse"] for r in runs]
    nlls = [r["nll"] for r in runs if r["nll"] is not None]
    return {
        "dataset": dataset,
        "model": model,
        "train rows": runs[0]["n_train"],
        "RMSE": mean_std(rmses, "#.4g"),
        "NLL": mean_std(nlls, ".3f") if nlls else None,
        "fit (s)": float(np.mean([r["fit"] for r in runs])),
        "predict (s)": float(np.mean([r["predict"] for r in runs])),
        "_rmse": float(np.mean(rmses)),
        "_nll": float(np.mean(nlls)) if nlls else None,
    }


def add_relative_columns(rows: list[dict]) -> None:
    """Add the RMSE ratio and the NLL difference to RandomForest, per dataset (in place)."""
    rf = {r["dataset"]: r for r in rows if r["model"] == RF}
    for row in rows:
        base = rf.get(row["dataset"])
        if base is None:
            continue
        row["RMSE / RF"] = row["_rmse"] / base["_rmse"]
        if row["_nll"] is not None and base["_nll"] is not None:
            row["NLL - RF"] = row["_nll"] - base["_nll"]


def most_sets_checks(rows: list[dict], names: list[str], column: str, passes: Callable,
                     describe: Callable) -> list[tuple[str, bool | None, str]]:
    """Per-set checks of the Mondrian forest on one relative column, then the "most sets" count.

    Parameters
    ----------
    rows : list of dict
        Rows with the relative columns added.
    names : list of str
        Datasets run.
    column : str
        Relative column to check (``"RMSE / RF"`` or ``"NLL - RF"``).
    passes : callable
        ``passes(value) -> bool``.
    describe : callable
        ``describe(value) -> str``, the detail of a per-set check.

    Returns
    -------
    list of (description, passed, detail)
        The last item passes when strictly more than half of the evaluated sets pass.
    """
    mondrian_rows = {r["dataset"]: r for r in rows if r["model"] == MONDRIAN}
    checks = []
    for name in names:
        value = mondrian_rows.get(name, {}).get(column)
        if value is None:
            checks.append((name, None, "not run"))
        else:
            checks.append((name, bool(passes(value)), describe(value)))
    evaluated = [passed for _, passed, _ in checks if passed is not None]
    n_pass = sum(evaluated)
    overall = bool(n_pass > len(evaluated) / 2) if evaluated else None
    checks.append(("most sets", overall, f"{n_pass}/{len(evaluated)} sets pass"))
    return checks


def hyperparameter_rows(first_split: dict[str, tuple[Outcome, float]]) -> list[dict]:
    """Table rows of the Mondrian hyperparameters chosen on split 0, with var(y_train).

    Parameters
    ----------
    first_split : dict
        Dataset -> (Mondrian outcome on split 0, variance of that split's training targets).

    Returns
    -------
    list of dict
    """
    rows = []
    for name, (outcome, y_var) in first_split.items():
        hyper = outcome.hyperparameters
        rows.append({"dataset": name, **hyper, "var(y_train)": y_var,
                     "noise share": hyper["noise_variance"] / y_var})
    return rows


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def load_split(name: str, split: int, quick: bool, seed: int) -> Dataset:
    """Load one standard split, subsampling its training rows in quick mode."""
    return subsample_train(load_uci_regression(name, split), QUICK_TRAIN_ROWS if quick else None,
                           seed)


def run_dataset(name: str, n_splits: int, models: dict, args,
                report: Report) -> tuple[list[dict], tuple | None]:
    """Run every model on the first ``n_splits`` splits of one dataset.

    Returns
    -------
    rows : list of dict
        One summary row per model.
    first : (Outcome, float) or None
        The Mondrian outcome on split 0 and var(y_train) of that split (None without Mondrian).
    """
    runs: dict[str, list[dict]] = {model: [] for model in models}
    first = None
    for split in range(n_splits):
        data = load_split(name, split, args.quick, args.seed)
        if split == 0:
            report.add(f"- {name}: {n_splits} split(s); {len(data.y_train)} train / "
                       f"{len(data.y_test)} test, {data.X_train.shape[1]} features ({data.note})")
        for model, run in models.items():
            log(f"[{name} split {split}] {model} ...")
            out = run(data, args.repeats)
            nll = None if out.var is None else gaussian_nll(data.y_test, out.mean, out.var)
            runs[model].append({"rmse": rmse(data.y_test, out.mean), "nll": nll,
                                "fit": out.fit_s, "predict": out.predict_s,
                                "n_train": out.n_train})
            if split == 0 and model == MONDRIAN:
                first = (out, float(np.var(data.y_train)))
    return [summarise(name, model, r) for model, r in runs.items()], first


def main(argv=None) -> None:
    """Run the benchmark: print the markdown report, write it in a full run."""
    parser = make_parser(__doc__.splitlines()[0], default_repeats=1)
    add_datasets(parser, DATASETS)
    add_sized(parser, "--splits", DEFAULT_SPLITS, 1,
              "use the first N standard splits of each set (protein has 5)")
    add_sized(parser, "--n-estimators", 100, QUICK_TREES, "trees of Mondrian / RF / ET")
    parser.add_argument("--models", default=",".join(MODEL_KEYS),
                        help="comma-separated subset of " + ",".join(MODEL_KEYS))
    parser.add_argument("--amf-rows", type=int, default=AMF_MAX_ROWS,
                        help=f"AMF learns the first N training rows (default {AMF_MAX_ROWS}, "
                             "0 = all)")
    add_output_options(parser, "regression.md", plots=False)
    args = parse_args(parser, argv)
    keys = parse_list(args.models, list(MODEL_KEYS))
    if args.splits < 1:
        parser.error("--splits must be at least 1")
    require_datasets()

    river, _ = optional_import("river")
    report = Report()
    report.add("## Regression benchmark" + (" (QUICK MODE)" if args.quick else ""))
    report.add(f"\n{environment_line()}"
               + (f", river {river.__version__}" if river is not None else ""))
    report.add(f"\nn_estimators={args.n_estimators} (AMF: {AMF_TREES}), n_jobs=1, "
               f"random_state={args.seed}; first {args.splits} standard split(s) per set, "
               "mean ± std over splits; times are the mean over splits of the median of "
               f"{args.repeats} run(s).")
    report.add(f"RF / ET predictive variance = variance of the trees' predictions "
               f"+ {VARIANCE_FLOOR} * var(y_train). AMF: online, one pass over the first "
               f"{args.amf_rows if args.amf_rows > 0 else 'all'} training rows, RMSE only. "
               f"RMSE and NLL are in the units of y.")
    if args.quick:
        report.add(f"Quick mode: training rows subsampled to at most {QUICK_TRAIN_ROWS} "
                   "(test rows unchanged), fewer trees and splits, so the targets are indicative "
                   "only.")
    report.add()

    models = make_models(keys, args.n_estimators, args.seed, args.amf_rows, report)
    rows, first_split = [], {}
    for name in args.datasets:
        splits = min(args.splits, n_uci_splits(name))
        dataset_rows, first = run_dataset(name, splits, models, args, report)
        rows += dataset_rows
        if first is not None:
            first_split[name] = first
    add_relative_columns(rows)
    report.table(rows, COLUMNS, FORMATS, title="Results")

    report.checks(
        f"Target: RMSE within {RMSE_TOLERANCE - 1:.0%} of RandomForestRegressor on most sets",
        most_sets_checks(rows, args.datasets, "RMSE / RF", lambda v: v <= RMSE_TOLERANCE,
                         lambda v: f"RMSE {v:.3f} x RandomForest"))
    report.checks(
        "Target: better NLL than RandomForestRegressor on most sets",
        most_sets_checks(rows, args.datasets, "NLL - RF", lambda v: v < 0.0,
                         lambda v: f"NLL {v:+.3f} vs RandomForest"))
    if first_split:
        report.table(
            hyperparameter_rows(first_split), HYPER_COLUMNS, HYPER_FORMATS,
            title="MondrianForest hyperparameters (default held-out choice, split 0; units of y)")
    report.write(args.output)


if __name__ == "__main__":
    main()
