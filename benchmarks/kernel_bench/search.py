"""Fig. 8: the Mondrian lifetime path against refitting width searches (ridge training)."""

from __future__ import annotations

import time

import numpy as np
from shared.measure import time_callable
from shared.metrics import rmse
from shared.report import Report, log

from kernel_bench.models import (
    BINNING,
    FOURIER,
    MONDRIAN,
    Problem,
    feature_ridge,
    make_features,
    mondrian_ridge,
)

SEARCH_START = 0.01
MAX_EXPANSIONS = 16
BISECTION_STEPS = 3
SPEEDUP_TARGET = 10.0
PATH_COST_TARGET = 3.0


def validation_path(problem: Problem, n_trees: int, alpha: float, seed: int, cap: int):
    """The forward lifetime path with at most ``cap`` features (timed by the caller)."""
    model = mondrian_ridge(n_trees, 1.0, alpha, seed, max_lifetime=np.inf, max_features=cap)
    # Trees up to max_lifetime on the fit part, no solve: the model lifetime="auto" sweeps.
    probe = model._path_probe(problem.X_fit, problem.y_fit)
    return probe.lifetime_path(problem.X_val, problem.y_val)


def capped_runs(run_path, curve, path, path_s: float, terminal_cap: int, best_cap: int,
                n_trees: int, repeats: int, label: str, count) -> tuple[list[dict], list[int]]:
    """The time axis of a path: re-runs from scratch capped at doubling feature counts (and at
    the best and terminal caps), each checked to reproduce the start of the terminal ``path``.

    ``curve(path)`` is the validation MSE of each recorded model, ``count(path)`` the column
    counting them.
    """
    caps = {best_cap, terminal_cap}
    cap = 2 * n_trees
    while cap < terminal_cap:
        caps.add(cap)
        cap *= 2
    runs, mismatches = [], []
    for cap in sorted(caps):
        if cap == terminal_cap:
            seconds, prefix = path_s, path
        else:
            log(f"  {label} capped at {cap} features")
            seconds, prefix = time_callable(lambda cap=cap: run_path(cap), repeats)
            n = len(curve(prefix))
            if n > len(curve(path)) or not np.allclose(
                curve(prefix), curve(path)[:n], rtol=1e-7, atol=1e-9
            ):
                mismatches.append(cap)
        values = curve(prefix)
        k = int(np.argmin(values))
        runs.append({
            "max_features cap": cap,
            **count(prefix),
            "lifetime reached": float(prefix.lifetimes[-1]),
            "time (s)": seconds,
            "best val RMSE so far": float(np.sqrt(values[k])),
            "best lifetime so far": float(prefix.lifetimes[k]),
        })
    return runs, mismatches


def search_tables(report: Report, mondrian_result: dict, searches: dict, runs_title: str,
                  search_title, mismatch_label: str) -> tuple[float, list]:
    """Report the path's capped runs and every refit search; return the common level (worst of
    the best RMSEs) and the path's (time, best RMSE so far) points."""
    level = max([mondrian_result["best_rmse"]] + [s["best_rmse"] for s in searches.values()])
    mondrian_points = [(r["time (s)"], r["best val RMSE so far"])
                       for r in mondrian_result["runs"]]
    report.table(
        mondrian_result["runs"], formats={"time (s)": ".3f", "lifetime reached": ".4g",
                                          "best val RMSE so far": ".4f",
                                          "best lifetime so far": ".4g"},
        title=runs_title)
    if mondrian_result["mismatches"]:
        report.add(f"\n**Warning**: the capped {mismatch_label} "
                   f"{mondrian_result['mismatches']} did not reproduce the prefix of the terminal "
                   "path.")
    for method, search in searches.items():
        report.table(
            search["records"], formats={"lifetime": ".4g", "elapsed (s)": ".3f",
                                        "val RMSE": ".4f", "best so far": ".4f"},
            title=search_title(method))
    return level, mondrian_points


def speedup_checks(mondrian_result: dict, searches: dict, search_label: str) -> list:
    """The target lines: the path reaches its best width 10x sooner than each search."""
    checks = []
    for method, search in searches.items():
        ratio = search["time_to_best"] / mondrian_result["time_to_best"]
        checks.append((
            f"Mondrian path reaches its best width at least {SPEEDUP_TARGET:g}x sooner than the "
            f"{method} {search_label}", ratio >= SPEEDUP_TARGET,
            f"{mondrian_result['time_to_best']:.3f} s vs {search['time_to_best']:.3f} s "
            f"({ratio:.2f}x)"))
    return checks


def mondrian_search(problem: Problem, n_trees: int, alpha: float, seed: int, max_features: int,
                    repeats: int) -> dict:
    """Terminal path, capped re-runs for the time axis, and one fit at the terminal lifetime."""
    log(f"  Mondrian path: {n_trees} trees, up to {max_features} features")
    path_s, path = time_callable(
        lambda: validation_path(problem, n_trees, alpha, seed, max_features), repeats)
    best = path.best_index
    best_cap = int(path.n_features[best])
    runs, mismatches = capped_runs(
        lambda cap: validation_path(problem, n_trees, alpha, seed, cap),
        lambda p: p.validation_error, path, path_s, int(path.n_features[-1]), best_cap,
        n_trees, repeats, "Mondrian path", lambda p: {"cuts": len(p.lifetimes) - 1})
    terminal = float(path.lifetimes[-1])
    log(f"  MondrianKernelRidge.fit at the terminal lifetime {terminal:.4g}")
    fit_s, fitted = time_callable(
        lambda: mondrian_ridge(n_trees, terminal, alpha, seed).fit(problem.X_fit, problem.y_fit),
        repeats)
    time_to_best = next(r["time (s)"] for r in runs if r["max_features cap"] == best_cap)
    return {
        "path": path, "path_s": path_s, "runs": runs, "mismatches": mismatches,
        "fit_s": fit_s, "fit_features": int(fitted.coef_.shape[0]), "terminal": terminal,
        "best_lifetime": float(path.best_lifetime),
        "best_rmse": float(np.sqrt(path.validation_error[best])),
        "time_to_best": time_to_best, "evaluations": len(path.lifetimes),
    }


def width_search(method: str, problem: Problem, n_components: int, alpha: float, seed: int,
                 steps: int, trainer=None) -> dict:
    """Doubling/halving then bisection search of the lifetime, refitting every time.

    ``trainer(transformer, X, y, X_eval)`` returns the predictions on ``X_eval`` (default: the
    ridge of :func:`feature_ridge`).
    """
    log(f"  {method}: width search" + ("" if trainer is None else " (SGD)"))
    tried: dict[float, float] = {}
    records: list[dict] = []
    start = time.perf_counter()

    def evaluate(lifetime: float, phase: str) -> None:
        transformer = make_features(method, n_components, lifetime, seed)
        if trainer is None:
            prediction, _ = feature_ridge(transformer, problem.X_fit, problem.y_fit,
                                          problem.X_val, alpha)
        else:
            prediction = trainer(transformer, problem.X_fit, problem.y_fit, problem.X_val)
        tried[lifetime] = rmse(problem.y_val, prediction)
        records.append({
            "step": len(records) + 1, "phase": phase, "lifetime": lifetime,
            "elapsed (s)": time.perf_counter() - start, "val RMSE": tried[lifetime],
            "best so far": min(tried.values()),
        })

    evaluate(SEARCH_START, "start")
    evaluate(2 * SEARCH_START, "double")
    for _ in range(MAX_EXPANSIONS):
        ordered = sorted(tried)
        best = min(tried, key=tried.get)
        if best == ordered[-1]:
            evaluate(2 * ordered[-1], "double")
        elif best == ordered[0]:
            evaluate(ordered[0] / 2, "halve")
        else:
            break
    for _ in range(steps):
        ordered = sorted(tried)
        i = ordered.index(min(tried, key=tried.get))
        for j in (i - 1, i + 1):
            if 0 <= j < len(ordered):  # no neighbour when the expansion budget ran out
                evaluate(float(np.sqrt(ordered[j] * ordered[i])), "bisect")
    best = min(tried, key=tried.get)
    first = next(r for r in records if r["lifetime"] == best)
    return {
        "records": records, "best_lifetime": best, "best_rmse": tried[best],
        "time_to_best": first["elapsed (s)"], "evaluations": len(records),
        "total_s": records[-1]["elapsed (s)"],
    }


def report_search_summary(report: Report, mondrian_result, searches, level, mondrian_points,
                          path_label, refit_label, count_column, count_note, title):
    """The Fig. 8 summary table: the Mondrian path against the refitting width searches."""
    summary = [{
        "method": f"{MONDRIAN} ({path_label})", count_column: mondrian_result["evaluations"],
        "best lifetime": mondrian_result["best_lifetime"],
        "best val RMSE": mondrian_result["best_rmse"],
        "time to best (s)": mondrian_result["time_to_best"],
        "whole search (s)": mondrian_result["path_s"],
        "time to common level (s)": time_to_level(mondrian_points, level),
    }]
    for method, search in searches.items():
        points = [(r["elapsed (s)"], r["best so far"]) for r in search["records"]]
        summary.append({
            "method": f"{method} ({refit_label})", count_column: search["evaluations"],
            "best lifetime": search["best_lifetime"], "best val RMSE": search["best_rmse"],
            "time to best (s)": search["time_to_best"], "whole search (s)": search["total_s"],
            "time to common level (s)": time_to_level(points, level),
        })
    for row in summary:
        row["time to best / Mondrian"] = row["time to best (s)"] / mondrian_result["time_to_best"]
    report.add(f"\nCommon level = worst of the best validation RMSEs = {level:.4f}. {count_note}")
    report.table(
        summary, formats={"best lifetime": ".4g", "best val RMSE": ".4f",
                          "time to best (s)": ".3f", "whole search (s)": ".3f",
                          "time to common level (s)": ".3f", "time to best / Mondrian": ".2f"},
        title=title)


def time_to_level(points: list[tuple[float, float]], level: float) -> float:
    """First time at which the best-so-far error of ``(time, error)`` points is <= ``level``."""
    for seconds, err in sorted(points):
        if err <= level * (1 + 1e-12):
            return seconds
    return float("nan")


def refit_searches(problem: Problem, args, alpha: float, trainer=None) -> dict:
    """:func:`width_search` of random Fourier features and of random binning (``trainer``: see
    there), with 2 bisection steps in quick mode."""
    steps = 2 if args.quick else BISECTION_STEPS
    return {
        method: width_search(method, problem, args.n_trees, alpha, args.seed, steps, trainer)
        for method in (FOURIER, BINNING)
    }


def run_fig8(problem: Problem, args, alpha: float, report: Report) -> dict:
    """The width-search experiment; reports its tables and returns what fig6 and the plot need."""
    log(f"fig8: width search with {args.n_trees} non-zeros per point")
    mondrian_result = mondrian_search(problem, args.n_trees, alpha, args.seed, args.max_features,
                                      args.repeats)
    searches = refit_searches(problem, args, alpha)
    level, mondrian_points = search_tables(
        report, mondrian_result, searches,
        f"Fig. 8: Mondrian lifetime path, {args.n_trees} trees, each cap run from scratch",
        lambda method: f"Fig. 8: {method} width search, {args.n_trees} components, refit per "
                       "lifetime", "paths")

    report_search_summary(report, mondrian_result, searches, level, mondrian_points, "path",
                          "refits", "fits / runs", "`fits / runs` counts lifetimes evaluated "
                          "(for the path: intervals between cuts).", "Fig. 8 summary")
    cost = [{
        "terminal lifetime": mondrian_result["terminal"],
        "path features": int(mondrian_result["path"].n_features[-1]),
        "whole path (s)": mondrian_result["path_s"],
        "fit features": mondrian_result["fit_features"],
        "one fit (s)": mondrian_result["fit_s"],
        "path / fit": mondrian_result["path_s"] / mondrian_result["fit_s"],
    }]
    report.table(
        cost, formats={"terminal lifetime": ".4g", "whole path (s)": ".3f", "one fit (s)": ".3f",
                       "path / fit": ".2f"},
        title="Whole path vs one MondrianKernelRidge.fit at the terminal lifetime (fit rows)")

    checks = speedup_checks(mondrian_result, searches, "search")
    ratio = mondrian_result["path_s"] / mondrian_result["fit_s"]
    checks.append((
        f"the whole path costs at most {PATH_COST_TARGET:g}x one fit at the terminal lifetime",
        ratio <= PATH_COST_TARGET,
        f"{mondrian_result['path_s']:.3f} s vs {mondrian_result['fit_s']:.3f} s ({ratio:.2f}x)"))
    report.checks("Targets (Fig. 8)", checks)
    return {"mondrian": mondrian_result, "searches": searches, "level": level}
