"""Forest lifetime paths: one path against one fit and against a grid of refits.

On power_plant and kin8nm (regression, standard split 0, ``datasets.load_uci_regression``) and on
satimage and letter (classification, their usual train/test splits), with 100 trees:

Validation part
    20% of the training rows (``ceil(0.2 n)``, ``mondrian.estimator.holdout.holdout_split``, i.e.
    ``train_test_split(test_size=0.2, random_state=seed)``,
    stratified for classification) are held out; the remaining 80% are the *fit part*. This is
    the split ``lifetime="auto"`` makes internally with the same seed, so its path is ours.
Fit and path
    ``MondrianForest{Regressor,Classifier}(n_estimators, lifetime=inf, n_jobs=1,
    random_state=seed).fit`` on the fit part, then ``lifetime_path(X_val, y_val,
    direction="forward")`` and ``direction="backward"`` on the validation part. Reported: number
    of cuts, times (median of ``--repeats`` runs, each with a fresh forest or path) and path time
    / fit time, the best lifetime ``best_lifetime`` (midpoint of the best interval), the path's
    validation metrics there and at the terminal lifetime ``inf``.
What the path reads
    Independent leaves (Gaussian leaves with the forest's hyperparameters frozen for regressors,
    Dirichlet leaves for classifiers) of a copy of the forest that holds the validation inputs
    (``path.forest_``). The fitted forest itself predicts with hierarchical smoothing, so its
    validation metrics are reported beside the path's: at ``inf`` and pruned to the best lifetime.
Test metrics
    (a) the forest at ``inf`` (default smoothing), fit part; (b) ``forest.prune(best_lifetime)``,
    fit part; (c) ``lifetime="auto", validation_fraction=0.2`` fitted on all training rows; the
    forest at ``inf`` fitted on all training rows (the fair comparison for (c)); (d)
    ``sklearn.ensemble.RandomForest{Regressor,Classifier}(n_estimators, n_jobs=1)`` on all
    training rows. Regression: RMSE and Gaussian NLL (units of y; Mondrian only, from
    ``predict(X, return_std=True)``). Classification: log-loss (probabilities clipped at 1e-15)
    and accuracy.
Grid of refits
    What a grid search costs: the forest refitted on the fit part at 10 lifetimes of a geometric
    grid spanning the 1% to 99% quantiles of the path's cut birth times, each fit timed (median of
    ``--repeats``) and scored on the validation part with default smoothing. Compared with one
    fit at ``inf`` plus one forward path.
Checks
    Forward and backward paths agree; ``path.forest_.prune(λ)`` predicts on the validation part
    exactly the metrics the path reports at λ (best lifetime and every grid lifetime);
    ``lifetime="auto"`` chose the same lifetime as our path.

The report is printed and, in a full run, written to ``benchmarks/results/forest_path.md``; plots
of the validation metrics against λ go to ``benchmarks/results/forest_path_<dataset>.png``
(``*_quick.png`` in quick mode) when matplotlib imports.

Run from the repository root::

    python benchmarks/bench_forest_path.py             # full run (a few minutes on 2 cores)
    python benchmarks/bench_forest_path.py --quick     # 20 trees, power_plant + satimage, 2000 rows
    python benchmarks/bench_forest_path.py --datasets kin8nm --n-estimators 50
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from functools import partial

import numpy as np
from shared.cli import add_datasets, add_output_options, add_sized, make_parser, parse_args
from shared.datasets import (
    load_classification,
    load_uci_regression,
    require_datasets,
    subsample_train,
)
from shared.figures import figure_path, import_pyplot, mondrian_plot, save_figure
from shared.measure import fit_estimator, time_callable
from shared.metrics import gaussian_nll, rmse
from shared.optional import import_mondrian
from shared.report import Report, environment_line, load_line, log
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

REGRESSION = ("power_plant", "kin8nm")
CLASSIFICATION = ("satimage", "letter")
DATASETS = REGRESSION + CLASSIFICATION
QUICK_DATASETS = ("power_plant", "satimage")
FULL_TREES, QUICK_TREES = 100, 20
QUICK_TRAIN_ROWS = 2000
VALIDATION_FRACTION = 0.2
GRID_SIZE = 10
GRID_QUANTILES = (0.01, 0.99)
PLOT_POINTS = 2000
PROBA_FLOOR = 1e-15  # log-loss clips probabilities here (a random forest predicts exact zeros)
TIE_TOLERANCE = 1e-9  # two class probabilities closer than this count as a tie
PATH_COST_TARGET = 2.0  # the path should cost "about one fit": flag it beyond 2 fits


@dataclass(frozen=True)
class Task:
    """What differs between regression and classification.

    Attributes
    ----------
    kind : str
        ``"regression"`` or ``"classification"``.
    metrics : tuple of str
        Display names of the primary (chooses λ) and secondary metric.
    better : tuple of str
        ``"lower"`` or ``"higher"`` for each metric.
    """

    kind: str
    metrics: tuple[str, str]
    better: tuple[str, str]

    @property
    def classification(self) -> bool:
        return self.kind == "classification"


REG_TASK = Task("regression", ("RMSE", "NLL"), ("lower", "lower"))
CLF_TASK = Task("classification", ("log-loss", "accuracy"), ("lower", "higher"))


@dataclass
class Split:
    """A dataset with its training rows split into a fit part and a validation part."""

    name: str
    task: Task
    X_train: np.ndarray
    y_train: np.ndarray
    X_fit: np.ndarray
    y_fit: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    note: str

    @property
    def rows(self) -> str:
        return f"{len(self.y_fit)} / {len(self.y_val)} / {len(self.y_test)}"


@dataclass
class Outcome:
    """Everything measured on one dataset (tables and plot are built from it)."""

    split: Split
    n_trees: int
    cost: dict = field(default_factory=dict)
    validation: dict = field(default_factory=dict)
    test: list[dict] = field(default_factory=list)
    grid: list[dict] = field(default_factory=list)
    grid_summary: dict = field(default_factory=dict)
    checks: dict = field(default_factory=dict)
    curve: dict = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def load_split(name: str, quick: bool, seed: int) -> Split:
    """Load a dataset (standard split 0 for regression), subsample in quick mode, carve validation.

    The validation part is drawn by the package's hold-out helper (``train_test_split(
    test_size=VALIDATION_FRACTION, random_state=seed)``, stratified for classification): the
    same rows that ``lifetime="auto"`` holds out with ``random_state=seed``.
    """
    task = CLF_TASK if name in CLASSIFICATION else REG_TASK
    data = load_classification(name) if task.classification else load_uci_regression(name, 0)
    data = subsample_train(data, QUICK_TRAIN_ROWS if quick else None, seed)
    from mondrian.estimator.holdout import holdout_split  # after import_mondrian() succeeded

    X_fit, X_val, y_fit, y_val = holdout_split(
        data.X_train, data.y_train, VALIDATION_FRACTION, seed, stratify=task.classification)
    note = f"{data.note}; validation = {len(y_val)} random training rows"
    return Split(name, task, data.X_train, data.y_train, X_fit, y_fit, X_val, y_val,
                 data.X_test, data.y_test, note)


# --------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------


def path_metrics(path, k: int, task: Task) -> tuple[float, float]:
    """The path's (primary, secondary) validation metrics on interval ``k``, display units."""
    if task.classification:
        return float(path.metrics["log_loss"][k]), float(path.metrics["accuracy"][k])
    return float(np.sqrt(path.metrics["mse"][k])), float(path.metrics["nll"][k])


def path_index(path, lifetime: float) -> int:
    """Interval of the path holding ``lifetime``: ``lifetimes[k] < lifetime <= upper[k]``."""
    k = int(np.searchsorted(path.lifetimes, lifetime, side="left")) - 1
    return min(max(k, 0), path.n_cuts)


def model_metrics(model, X: np.ndarray, y: np.ndarray, task: Task) -> tuple[float, float | None]:
    """(primary, secondary) metrics of a fitted model; NLL is None for sklearn regressors."""
    if task.classification:
        proba = model.predict_proba(X)
        codes = np.searchsorted(model.classes_, y)
        p_true = proba[np.arange(len(y)), codes]
        log_loss = float(-np.mean(np.log(np.maximum(p_true, PROBA_FLOOR))))
        accuracy = float(np.mean(model.classes_[np.argmax(proba, axis=1)] == y))
        return log_loss, accuracy
    if isinstance(model, RandomForestRegressor):
        return rmse(y, model.predict(X)), None
    mean, std = model.predict(X, return_std=True)
    return rmse(y, mean), gaussian_nll(y, mean, std**2)


def n_ties(model, X: np.ndarray) -> int:
    """Points whose two most probable classes are within ``TIE_TOLERANCE`` of each other."""
    proba = np.sort(model.predict_proba(X), axis=1)
    return int(np.sum(proba[:, -1] - proba[:, -2] < TIE_TOLERANCE))


def lifetime_grid(path) -> np.ndarray:
    """``GRID_SIZE`` geometric lifetimes between quantiles of the cut birth times of ``path``."""
    births = path.lifetimes[1:]
    low, high = np.quantile(births, GRID_QUANTILES)
    return np.geomspace(low, high, GRID_SIZE)


# --------------------------------------------------------------------------------------------
# Measurements
# --------------------------------------------------------------------------------------------


def fit_forest(cls, params: dict, lifetime, X: np.ndarray, y: np.ndarray):
    """A fresh forest of class ``cls`` fitted at ``lifetime``."""
    return cls(lifetime=lifetime, **params).fit(X, y)


def run_dataset(name: str, mondrian, args) -> Outcome:
    """Every measurement on one dataset."""
    split = load_split(name, args.quick, args.seed)
    task = split.task
    out = Outcome(split, args.n_estimators)
    repeats = args.repeats
    cls = mondrian.MondrianForestClassifier if task.classification else \
        mondrian.MondrianForestRegressor
    rf_cls = RandomForestClassifier if task.classification else RandomForestRegressor
    params = {"n_estimators": args.n_estimators, "n_jobs": 1, "random_state": args.seed}
    primary, secondary = task.metrics

    # Warm-up (first calls of the compiled code, imports), then fit at inf and the two paths.
    warm = fit_forest(cls, {**params, "n_estimators": 2}, np.inf, split.X_fit[:50],
                      split.y_fit[:50])
    warm.prune(1.0)
    warm.lifetime_path(split.X_fit[:20], split.y_fit[:20])  # labels the warm-up fit has seen
    log(f"[{name}] fit at lifetime inf ...")
    fit_s, forest = time_callable(
        partial(fit_forest, cls, params, np.inf, split.X_fit, split.y_fit), repeats)
    log(f"[{name}] forward path ...")
    fwd_s, path = time_callable(
        partial(forest.lifetime_path, split.X_val, split.y_val, direction="forward"), repeats)
    log(f"[{name}] backward path ...")
    bwd_s, back = time_callable(
        partial(forest.lifetime_path, split.X_val, split.y_val, direction="backward"), repeats)
    best = path.best_lifetime
    prune_s, pruned = time_callable(partial(forest.prune, best), repeats)
    out.cost = {
        "dataset": name, "task": task.kind, "fit / val / test rows": split.rows,
        "features": split.X_train.shape[1], "trees": args.n_estimators, "cuts": path.n_cuts,
        "fit at inf (s)": fit_s, "path fwd (s)": fwd_s, "path bwd (s)": bwd_s,
        "fwd / fit": fwd_s / fit_s, "bwd / fit": bwd_s / fit_s,
        "best λ": best, "best λ (bwd)": back.best_lifetime,
    }

    # Validation metrics: the path's (independent leaves) and the forest's (default smoothing).
    best_vals = path_metrics(path, path.best_index, task)
    inf_vals = path_metrics(path, path.n_cuts, task)
    forest_inf = model_metrics(forest, split.X_val, split.y_val, task)
    forest_best = model_metrics(pruned, split.X_val, split.y_val, task)
    out.validation = {
        "dataset": name, "best λ": best,
        f"path {primary} @best": best_vals[0], f"path {primary} @inf": inf_vals[0],
        f"path {secondary} @best": best_vals[1], f"path {secondary} @inf": inf_vals[1],
        f"forest {primary} @inf": forest_inf[0], f"forest {primary} @best": forest_best[0],
        f"forest {secondary} @inf": forest_inf[1], f"forest {secondary} @best": forest_best[1],
    }

    # Test metrics.
    log(f"[{name}] lifetime='auto' on all training rows ...")
    auto_s, auto = time_callable(
        partial(fit_forest, cls, {**params, "validation_fraction": VALIDATION_FRACTION}, "auto",
                split.X_train, split.y_train), repeats)
    log(f"[{name}] fit at inf on all training rows ...")
    full_s, full = time_callable(
        partial(fit_forest, cls, params, np.inf, split.X_train, split.y_train), repeats)
    log(f"[{name}] RandomForest ...")
    rf_s, rf = time_callable(
        partial(fit_estimator, rf_cls(**params), split.X_train, split.y_train), repeats)
    auto_lifetime = float(auto.lifetime_)
    fit_rows, all_rows = f"fit part ({len(split.y_fit)})", f"all train ({len(split.y_train)})"
    models = [
        ("(a) MF λ=inf", fit_rows, np.inf, fit_s, forest),
        ("(b) MF prune(best λ)", fit_rows, best, fit_s + fwd_s + prune_s, pruned),
        ("(c) MF lifetime='auto'", all_rows, auto_lifetime, auto_s, auto),
        ("MF λ=inf", all_rows, np.inf, full_s, full),
        ("(d) RandomForest", all_rows, None, rf_s, rf),
    ]
    for label, rows, lifetime, seconds, model in models:
        values = model_metrics(model, split.X_test, split.y_test, task)
        out.test.append({"dataset": name, "model": label, "trained on": rows, "λ": lifetime,
                         "fit (s)": seconds, f"test {primary}": values[0],
                         f"test {secondary}": values[1]})
    del models, auto, full, rf

    # Grid of refits, and the path checked against the transductive forest at every lifetime.
    grid = lifetime_grid(path)
    diffs = []
    for lifetime in grid:
        log(f"[{name}] refit at lifetime {lifetime:.4g} ...")
        refit_s, model = time_callable(
            partial(fit_forest, cls, params, float(lifetime), split.X_fit, split.y_fit), repeats)
        score_s, values = time_callable(
            partial(model_metrics, model, split.X_val, split.y_val, task), repeats)
        k = path_index(path, lifetime)
        on_path = path_metrics(path, k, task)
        exact = model_metrics(path.forest_.prune(float(lifetime)), split.X_val, split.y_val, task)
        diff = max(abs(a - b) for a, b in zip(on_path, exact, strict=True))
        diffs.append(diff)
        out.grid.append({
            "dataset": name, "λ": float(lifetime), "refit (s)": refit_s,
            "refit / fit at inf": refit_s / fit_s, "score (s)": score_s,
            f"refit {primary}": values[0], f"refit {secondary}": values[1],
            f"path {primary}": on_path[0], f"path {secondary}": on_path[1],
            "abs(path - forest_.prune)": diff,
        })
    refits = [r["refit (s)"] for r in out.grid]
    scores = [r["score (s)"] for r in out.grid]
    best_row = min(out.grid, key=lambda r: r[f"refit {primary}"])  # both primaries: lower = better
    out.grid_summary = {
        "dataset": name, "grid λ": f"{grid[0]:.3g} … {grid[-1]:.3g}",
        "refits (s)": float(np.sum(refits)), "refit scoring (s)": float(np.sum(scores)),
        "fit + path (s)": fit_s + fwd_s, "refits / (fit + path)": np.sum(refits) / (fit_s + fwd_s),
        "(refits + scoring) / (fit + path)": (np.sum(refits) + np.sum(scores)) / (fit_s + fwd_s),
        "best grid λ": best_row["λ"], f"best grid {primary}": best_row[f"refit {primary}"],
        "path best λ": best, f"forest {primary} @path best": forest_best[0],
    }

    # Checks.
    exact_best = model_metrics(path.forest_.prune(best), split.X_val, split.y_val, task)
    path_vs_best = max(abs(a - b) for a, b in zip(best_vals, exact_best, strict=True))
    fwd_bwd = max(float(np.max(np.abs(path.metrics[key] - back.metrics[key])))
                  for key in path.metrics)
    same_cuts = bool(np.array_equal(path.lifetimes, back.lifetimes))
    out.checks = {
        "dataset": name,
        "max abs(fwd - bwd)": fwd_bwd, "same cuts": same_cuts,
        "same best": path.best_index == back.best_index,
        "abs(path - forest_.prune) @best": path_vs_best,
        "max over grid": max(diffs),
        "auto λ": auto_lifetime, "auto λ = path λ": auto_lifetime == best,
        "path ≤ 2 fits": bool(max(fwd_s, bwd_s) <= PATH_COST_TARGET * fit_s),
        "ties @best": n_ties(path.forest_.prune(best), split.X_val) if task.classification
        else None,
    }

    # Curve for the plot: the path read exactly on a dense geometric grid of lifetimes.
    births = path.lifetimes[1:]
    lam = np.geomspace(births[0], births[-1], PLOT_POINTS)
    index = np.clip(np.searchsorted(path.lifetimes, lam, side="left") - 1, 0, path.n_cuts)
    primary_curve, secondary_curve = zip(*(path_metrics(path, k, task) for k in index),
                                         strict=True)
    out.curve = {
        "lifetimes": lam, "primary": np.array(primary_curve),
        "secondary": np.array(secondary_curve), "best": best, "best_vals": best_vals,
        "forest_inf": forest_inf, "forest_best": forest_best,
        "grid": [(r["λ"], r[f"refit {primary}"], r[f"refit {secondary}"]) for r in out.grid],
    }
    return out


# --------------------------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------------------------


def plot_dataset(out: Outcome, quick: bool, plt) -> str:
    """Validation metrics against the lifetime: the path, the chosen λ, the grid refits."""
    curve, task = out.curve, out.split.task
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    plot = mondrian_plot()
    for j, (ax, metric) in enumerate(zip(axes, task.metrics, strict=True)):
        values = curve["primary"] if j == 0 else curve["secondary"]
        reference = ({"forest at λ=inf, default smoothing": curve["forest_inf"][j]}
                     if curve["forest_inf"][j] is not None else None)
        plot.plot_search_curves(
            {"path (independent leaves, transductive)": (curve["lifetimes"], values)},
            points={"refit at λ, default smoothing": ([g[0] for g in curve["grid"]],
                                                      [g[1 + j] for g in curve["grid"]])},
            stars={"_chosen": (curve["best"], curve["best_vals"][j])},
            marks={f"chosen λ = {curve['best']:.3g}": curve["best"]}, reference=reference,
            best=None, steps=True, xlabel="lifetime λ (scaled feature units)",
            ylabel=f"validation {metric}", ax=ax)
    fig.suptitle(f"{out.split.name}: validation {task.metrics[0]} and {task.metrics[1]} vs "
                 f"lifetime ({out.n_trees} trees, {len(out.split.y_val)} validation rows)")
    fig.tight_layout()
    return save_figure(fig, figure_path(f"forest_path_{out.split.name}", quick), plt)


def save_plots(outcomes: list[Outcome], quick: bool) -> list[str]:
    """Write one PNG per dataset; return the lines of the report that list them."""
    plt, why = import_pyplot()
    if plt is None:
        return [f"Plots skipped: {why}."]
    return [f"- `{plot_dataset(out, quick, plt)}`" for out in outcomes]


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


TIME_FORMATS = {"fit at inf (s)": ".3f", "path fwd (s)": ".3f", "path bwd (s)": ".3f",
                "fwd / fit": ".2f", "bwd / fit": ".2f", "fit (s)": ".3f", "refit (s)": ".3f",
                "refit / fit at inf": ".2f", "score (s)": ".3f", "refits (s)": ".2f",
                "refit scoring (s)": ".2f", "fit + path (s)": ".3f",
                "refits / (fit + path)": ".2f", "(refits + scoring) / (fit + path)": ".2f"}
CHECK_COLUMNS = ["dataset", "max abs(fwd - bwd)", "same cuts", "same best",
                 "abs(path - forest_.prune) @best", "max over grid", "ties @best", "auto λ",
                 "auto λ = path λ", "path ≤ 2 fits"]
CHECK_FORMATS = {"max abs(fwd - bwd)": ".1e", "abs(path - forest_.prune) @best": ".1e",
                 "max over grid": ".1e"}


def metric_formats(rows: list[dict]) -> dict:
    """Formats of the metric columns: 4 significant digits, accuracy as a fraction."""
    formats = dict(TIME_FORMATS)
    for key in rows[0] if rows else []:
        if "accuracy" in key:
            formats[key] = ".4f"
        elif any(m in key for m in ("RMSE", "NLL", "log-loss")):
            formats[key] = ".4g"
        elif "λ" in key and key != "grid λ":
            formats[key] = ".4g"
    return formats


def method_text(args) -> list[str]:
    """What was measured and how to rerun it (the head of the report)."""
    quick = " --quick" if args.quick else ""
    return [
        "How it was measured (see the docstring of `benchmarks/bench_forest_path.py`):",
        "",
        f"- Data: regression sets on standard split 0 (`datasets.load_uci_regression`), "
        f"classification sets on their usual train/test split. {VALIDATION_FRACTION:.0%} of the "
        f"training rows are held out as the validation part (`train_test_split(test_size="
        f"{VALIDATION_FRACTION}, random_state={args.seed})`, stratified for classification; "
        "the same rows `lifetime=\"auto\"` holds out), the rest is the fit part.",
        f"- `MondrianForest*(n_estimators={args.n_estimators}, lifetime=inf, n_jobs=1, "
        f"random_state={args.seed}).fit` on the fit part, then `lifetime_path(X_val, y_val, "
        "direction=...)`. Times: wall clock, median of "
        f"{args.repeats} run(s), fresh forest / path each run; every fit and path single-threaded.",
        "- The path reads *independent* leaves (Gaussian, hyperparameters frozen / Dirichlet) of "
        "a copy of the forest that also holds the validation inputs (`path.forest_`). `path` "
        "columns are those numbers; `forest` columns are the fitted forest's own predictions "
        "(default smoothing: hierarchical Gaussian / HNSP) at λ=inf and pruned to the chosen λ. "
        "Regressor leaves split down to single points, so at λ=inf most validation points sit "
        "alone in a leaf of the transductive copy that holds no label; such a leaf backs off to "
        "the posterior of its deepest labelled ancestor.",
        "- Test rows: (a) forest at λ=inf and (b) `forest.prune(best λ)`, both fitted on the fit "
        "part ((b)'s time = fit + forward path + prune); (c) `lifetime=\"auto\"` and a forest "
        "at λ=inf, both fitted on all training rows; (d) scikit-learn `RandomForest*` with the "
        "same number of trees, all training rows. Regression NLL: Gaussian, units of y, from "
        "`predict(X, return_std=True)`. Log-loss clips probabilities at 1e-15.",
        f"- Grid of refits: the forest refitted on the fit part at {GRID_SIZE} geometric lifetimes "
        f"between the {GRID_QUANTILES[0]:.0%} and {GRID_QUANTILES[1]:.0%} quantiles of the path's "
        "cut birth times (each fit timed, median of the runs), scored on the validation part with "
        "default smoothing (`score (s)`, not counted in `refits (s)`).",
        "- Checks: forward vs backward metrics; the path against `path.forest_.prune(λ)` "
        "predicting the validation part at the chosen λ and at every grid λ; `auto` λ vs ours; "
        f"path time within {PATH_COST_TARGET:g} fits; `ties @best` = validation points whose two "
        f"top class probabilities differ by < {TIE_TOLERANCE:g} (argmax ties may break "
        "differently in the path's running sums).",
        "",
        "Rerun from the repository root (after `python setup.py build_ext --inplace -q`):",
        "",
        "```bash",
        f"python benchmarks/bench_forest_path.py{quick}"
        + (f" --n-estimators {args.n_estimators}"
           if args.n_estimators != (QUICK_TREES if args.quick else FULL_TREES) else "")
        + (f" --datasets {','.join(args.datasets)}"
           if tuple(args.datasets) != (QUICK_DATASETS if args.quick else DATASETS) else ""),
        "```",
    ]


def report_outcomes(report: Report, outcomes: list[Outcome]) -> None:
    """The tables."""
    cost = [o.cost for o in outcomes]
    report.table(cost, formats=metric_formats(cost),
                 title="Cost: one fit at λ=inf vs one lifetime path (fit part / validation part)")
    for task in (REG_TASK, CLF_TASK):
        mine = [o for o in outcomes if o.split.task == task]
        if not mine:
            continue
        val = [o.validation for o in mine]
        report.table(val, formats=metric_formats(val),
                     title=f"{task.kind.capitalize()}: validation {task.metrics[0]} / "
                           f"{task.metrics[1]} (path = independent leaves; forest = "
                           "default smoothing)")
        test = [row for o in mine for row in o.test]
        report.table(test, formats=metric_formats(test),
                     title=f"{task.kind.capitalize()}: test metrics")
        summary = [o.grid_summary for o in mine]
        report.table(summary, formats=metric_formats(summary),
                     title=f"{task.kind.capitalize()}: grid of {GRID_SIZE} refits vs one fit + "
                           "one path")
        for o in mine:
            rows = [{k: v for k, v in r.items() if k != "dataset"} for r in o.grid]
            formats = {**metric_formats(rows), "abs(path - forest_.prune)": ".1e"}
            report.table(rows, formats=formats,
                         title=f"{o.split.name}: the refits of the grid (validation part)")
    checks = [o.checks for o in outcomes]
    report.table(checks, CHECK_COLUMNS, formats={**CHECK_FORMATS, "auto λ": ".4g"}, title="Checks")


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def main(argv=None) -> None:
    """Run the benchmark: print the report, write it (full runs) with the plots."""
    parser = make_parser(__doc__.splitlines()[0], default_repeats=3)
    add_datasets(parser, DATASETS, quick=QUICK_DATASETS)
    add_sized(parser, "--n-estimators", FULL_TREES, QUICK_TREES, "trees of every forest")
    add_output_options(parser, "forest_path.md")
    args = parse_args(parser, argv)
    require_datasets()
    mondrian, reason = import_mondrian()
    if mondrian is None:
        print(f"SKIPPED: mondrian unavailable: {reason}")
        return

    wall, load = time.perf_counter(), os.getloadavg()
    report = Report()
    report.add("## Forest lifetime paths" + (" (QUICK MODE)" if args.quick else ""))
    report.add(f"\n{environment_line()}\n")
    for line in method_text(args):
        report.add(line)
    if args.quick:
        report.add(f"\nQuick mode: {args.n_estimators} trees, training rows subsampled to "
                   f"{QUICK_TRAIN_ROWS} (test rows unchanged), {args.repeats} run(s); "
                   "indicative only.")
    report.add("\nDatasets:\n")
    outcomes = []
    for name in args.datasets:
        out = run_dataset(name, mondrian, args)
        report.add(f"- {name} ({out.split.task.kind}): fit / validation / test rows "
                   f"{out.split.rows}, {out.split.X_train.shape[1]} features ({out.split.note})")
        outcomes.append(out)
    report_outcomes(report, outcomes)
    if not args.no_plots:
        report.add("\nPlots (validation metrics vs λ, log axis; chosen λ marked):\n")
        for line in save_plots(outcomes, args.quick):
            report.add(line)
    report.add(f"\nTotal wall time: {time.perf_counter() - wall:.0f} s; {load_line(load)}.")
    report.write(args.output)


if __name__ == "__main__":
    main()
