"""Mondrian kernel benchmark on cpu_act: Figs. 6 and 8 of "The Mondrian kernel" (Balog et al.).

Every method sees the same inputs: cpu_act (random 6554/1638 split, ``datasets.load_cpu_act``)
min-max scaled to [0, 1] by a ``MinMaxScaler`` fitted on the training rows (the test rows may fall
slightly outside); ``mondrian`` runs with ``feature_scaling=None``. Targets are used as given.
All the random-feature methods approximate the Laplace kernel ``exp(-λ ||x - x'||_1)`` and are
trained by ridge regression with the same ``alpha``, on targets centred by their training mean and
without an intercept column: ``min ||y - ȳ - Z w||² + alpha ||w||²``, the problem that
``MondrianKernelRidge`` solves (baselines: ``sklearn.linear_model.Ridge(fit_intercept=False)``).

A validation part (20% of the training rows, random) is carved from the training rows. It serves
to choose ``alpha`` (exact Laplace kernel ridge on at most 2000 of the remaining rows, over a grid
of ``alpha`` and ``λ``; ``--alpha`` skips this) and the kernel width.

fig6
    Test RMSE against the number of non-zero features per point, M: Mondrian kernel ridge with M
    trees, random binning with M grids and random Fourier features with R = M features, all at
    one common lifetime λ* (the best of the Mondrian lifetime path of the ``fig8`` part, with
    ``--n-trees`` trees, on the validation part), fitted on all the training rows; mean ± std
    over ``--feature-seeds`` seeds. The exact Laplace kernel ridge at λ* (sklearn ``KernelRidge``
    on the precomputed ``laplacian_kernel(gamma=λ*)``, an O(N³) solve) is the reference line.
fig8
    Validation RMSE against wall-clock time while searching the kernel width, with M =
    ``--n-trees`` non-zeros per point for every method.

    *Mondrian path.* One path (trees sampled once on the fit inputs up to ``max_lifetime=inf``
    with no ridge solve, as ``lifetime="auto"`` does, then ``lifetime_path(X_val, y_val)``:
    copies of the trees extended with the validation inputs, every cut swept in birth-time
    order, stopping at ``--max-features`` features) gives the validation error of every
    lifetime. Its time is
    measured honestly: the forward path with a cap of ``c`` features computes exactly the first
    ``c - M`` cuts of the terminal path (same trees, same sweep), so the path is re-run from
    scratch with caps ``2M, 4M, 8M, ...``, with the cap at which the terminal path's best
    lifetime appears, and with the terminal cap; each run is timed on its own (sampling
    included), and the point (time of the run, best validation RMSE of its lifetimes) is what
    the sweep had found after that much time. That each capped run reproduces the prefix of the
    terminal path is checked.

    *Refitting searches.* Random Fourier features and random binning are redrawn and refitted for
    every lifetime tried (same seed, so the draws are rescaled, not resampled): start at
    ``λ = 0.01``; while the best lifetime so far is the largest (smallest) one tried, double the
    largest (halve the smallest); then bisect (geometric midpoints) on both sides of the best
    lifetime, keeping the best and its two neighbours, for 3 steps (2 fits each). Elapsed time
    is recorded after every fit (features of the fit and validation rows, ridge solve,
    validation predictions).

    *Time to best* is, for every method, the time at which it first evaluated the lifetime it
    finally reports as best. Also reported: the time to reach the common level, the worst of
    the three best validation RMSEs (Mondrian: the first capped run reaching it, an upper bound).

    *Path vs one fit.* The terminal path is compared with one ``MondrianKernelRidge(lifetime=
    terminal lifetime of the path).fit`` on the fit rows.

    *Fig. 8 with SGD training (the paper's protocol).* The same experiment with every model
    trained by SGD, as in the paper, in its own section after the ridge one: the Mondrian
    kernel by ``MondrianKernelSGDRegressor.lifetime_path`` (``SGD_START_EPOCHS`` epochs on the
    root cells, ``SGD_STEPS_PER_CUT`` steps after every cut, validation loss every M cuts; time
    axis from capped re-runs as above), random Fourier features and random binning by
    ``sklearn.linear_model.SGDRegressor`` refits (``BASELINE_SGD_EPOCHS`` epochs, constant step
    ``BASELINE_SGD_ETA0``) under the same search. L2 constant ``alpha / n_fit`` per sample (the
    ridge objective divided by ``2 n_fit``), no intercept, targets standardised on the fit part.

Plots go to ``benchmarks/results/kernel_fig6_rmse_vs_nonzeros.png``,
``kernel_fig8_search_time.png`` and ``kernel_fig8_sgd_search_time.png`` (``*_quick.png`` in quick
mode) when matplotlib imports; a full run writes its report to ``benchmarks/results/kernel.md``
(``--output`` elsewhere).

Run from the repository root::

    python benchmarks/bench_kernel.py             # full run
    python benchmarks/bench_kernel.py --quick     # 2000 training rows, M in 1,5,20; < 1 min
    python benchmarks/bench_kernel.py --parts fig8 --n-trees 50 --max-features 2000
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from shared.cli import add_output_options, add_sized, make_parser, parse_args, parse_list
from shared.datasets import load_cpu_act, require_datasets, subsample_train
from shared.figures import figure_path, import_pyplot, mondrian_plot, save_figure
from shared.measure import time_callable
from shared.metrics import rmse
from shared.optional import import_mondrian
from shared.report import Report, environment_line, log, mean_std
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import Ridge, SGDRegressor
from sklearn.metrics.pairwise import laplacian_kernel, manhattan_distances
from sklearn.preprocessing import MinMaxScaler
from threadpoolctl import threadpool_info, threadpool_limits

PARTS = ("fig6", "fig8")
FULL_GRID = (1, 2, 5, 10, 20, 50, 100)
QUICK_GRID = (1, 5, 20)
FULL_TREES, QUICK_TREES = 50, 20
FULL_MAX_FEATURES, QUICK_MAX_FEATURES = 4000, 1000
FULL_SEEDS, QUICK_SEEDS = 3, 1
QUICK_TRAIN_ROWS = 2000
VALIDATION_FRACTION = 0.2
ALPHA_GRID = (0.001, 0.01, 0.1, 1.0)
ALPHA_LIFETIMES = (0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6)
ALPHA_ROWS = 2000
SEARCH_START = 0.01
MAX_EXPANSIONS = 16
BISECTION_STEPS = 3
SPEEDUP_TARGET = 10.0
PATH_COST_TARGET = 3.0
SGD_LEARNING_RATE = 0.2
SGD_STEPS_PER_CUT = 20
SGD_START_EPOCHS = 3
BASELINE_SGD_EPOCHS = 10
BASELINE_SGD_SCHEDULE = "constant"
BASELINE_SGD_ETA0 = 0.2
MONDRIAN, BINNING, FOURIER, EXACT = (
    "Mondrian kernel", "random binning", "random Fourier", "exact Laplace kernel",
)


@dataclass
class Problem:
    """cpu_act scaled to [0, 1] by the training rows, with a validation part of the training rows.

    Attributes
    ----------
    X_train, y_train, X_test, y_test : ndarray
        All training rows and the test rows.
    X_fit, y_fit, X_val, y_val : ndarray
        The training rows split into a fit part and a validation part.
    note : str
        How the data was split and subsampled.
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    X_fit: np.ndarray
    y_fit: np.ndarray
    X_val: np.ndarray
    y_val: np.ndarray
    note: str


def load_problem(quick: bool, seed: int) -> Problem:
    """Load cpu_act, subsample it in quick mode, scale it and carve the validation part."""
    data = subsample_train(load_cpu_act(seed), QUICK_TRAIN_ROWS if quick else None, seed)
    scaler = MinMaxScaler().fit(data.X_train)
    X_train, X_test = scaler.transform(data.X_train), scaler.transform(data.X_test)
    n = len(data.y_train)
    val = np.zeros(n, dtype=bool)
    val[np.random.default_rng(seed).permutation(n)[: int(round(VALIDATION_FRACTION * n))]] = True
    note = (f"{data.note}; validation part: {val.sum()} random training rows, "
            f"fit part: {n - val.sum()}")
    return Problem(X_train, data.y_train, X_test, data.y_test, X_train[~val],
                   data.y_train[~val], X_train[val], data.y_train[val], note)


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------


def make_features(method: str, n_components: int, lifetime: float, seed: int):
    """An unfitted random-feature transformer of the Laplace kernel."""
    import mondrian

    if method == BINNING:
        return mondrian.RandomBinningFeatures(n_components, lifetime=lifetime, random_state=seed)
    return mondrian.LaplaceRandomFourierFeatures(n_components, lifetime=lifetime,
                                                 random_state=seed)


def feature_ridge(transformer, X: np.ndarray, y: np.ndarray, X_eval: np.ndarray,
                  alpha: float) -> tuple[np.ndarray, int]:
    """Fit ``transformer`` and a ridge on centred targets; predict ``X_eval``.

    Returns
    -------
    prediction : ndarray
    n_features : int
        Number of feature columns.
    """
    Z = transformer.fit_transform(X)
    offset = float(np.mean(y))
    ridge = Ridge(alpha=alpha, fit_intercept=False).fit(Z, y - offset)
    return ridge.predict(transformer.transform(X_eval)) + offset, Z.shape[1]


def mondrian_ridge(n_trees: int, lifetime: float, alpha: float, seed: int, **kwargs):
    """``MondrianKernelRidge`` on the benchmark's scaled inputs."""
    import mondrian

    return mondrian.MondrianKernelRidge(n_estimators=n_trees, lifetime=lifetime, alpha=alpha,
                                        feature_scaling=None, random_state=seed, **kwargs)


def exact_laplace_ridge(X: np.ndarray, y: np.ndarray, X_eval: np.ndarray, lifetime: float,
                        alpha: float) -> np.ndarray:
    """Exact Laplace kernel ridge (centred targets, no intercept) predictions on ``X_eval``."""
    offset = float(np.mean(y))
    model = KernelRidge(alpha=alpha, kernel="precomputed")
    model.fit(laplacian_kernel(X, gamma=lifetime), y - offset)
    return model.predict(laplacian_kernel(X_eval, X, gamma=lifetime)) + offset


def choose_alpha(problem: Problem, seed: int) -> tuple[float, float, list[dict]]:
    """Exact Laplace kernel ridge on at most ``ALPHA_ROWS`` fit rows, scored on validation.

    Returns
    -------
    alpha, lifetime : float
        The best pair of the grid.
    rows : list of dict
        Validation RMSE of every pair, one row per alpha.
    """
    rng = np.random.default_rng(seed)
    n = len(problem.y_fit)
    keep = np.sort(rng.choice(n, min(n, ALPHA_ROWS), replace=False))
    X, y = problem.X_fit[keep], problem.y_fit[keep]
    offset = float(np.mean(y))
    D_train = manhattan_distances(X)
    D_val = manhattan_distances(problem.X_val, X)
    rows, best = [], (np.inf, None, None)
    for alpha in ALPHA_GRID:
        row = {"alpha": alpha}
        for lifetime in ALPHA_LIFETIMES:
            model = KernelRidge(alpha=alpha, kernel="precomputed")
            model.fit(np.exp(-lifetime * D_train), y - offset)
            err = rmse(problem.y_val, model.predict(np.exp(-lifetime * D_val)) + offset)
            row[f"λ={lifetime:g}"] = err
            if err < best[0]:
                best = (err, alpha, lifetime)
        rows.append(row)
    return best[1], best[2], rows


# --------------------------------------------------------------------------------------------
# Fig. 8: width search
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Fig. 8 with SGD training (the paper's protocol)
# --------------------------------------------------------------------------------------------


def sgd_path(problem: Problem, n_trees: int, alpha: float, seed: int, cap: int):
    """The SGD lifetime path with at most ``cap`` features, evaluated every ``n_trees`` cuts."""
    import mondrian

    model = mondrian.MondrianKernelSGDRegressor(
        n_estimators=n_trees, lifetime=1.0, alpha=alpha / len(problem.y_fit),
        learning_rate=SGD_LEARNING_RATE, steps_per_cut=SGD_STEPS_PER_CUT,
        n_epochs=SGD_START_EPOCHS, max_lifetime=np.inf, max_features=cap, feature_scaling=None,
        random_state=seed)
    probe = model._path_probe(problem.X_fit, problem.y_fit)  # as for lifetime="auto"
    return probe.lifetime_path(problem.X_val, problem.y_val, eval_every=n_trees)


def mondrian_sgd_search(problem: Problem, n_trees: int, alpha: float, seed: int,
                        max_features: int, repeats: int) -> dict:
    """Terminal SGD path and capped re-runs for the time axis (as :func:`mondrian_search`)."""
    log(f"  Mondrian SGD path: {n_trees} trees, up to {max_features} features")
    path_s, path = time_callable(
        lambda: sgd_path(problem, n_trees, alpha, seed, max_features), repeats)
    best = int(np.argmin(path.validation_loss))
    last = len(path.lifetimes) - 1
    # Evaluation k < last is after k * n_trees cuts, i.e. with n_trees * (k + 1) features.
    terminal_cap = max_features
    best_cap = terminal_cap if best == last else n_trees * (best + 1)
    runs, mismatches = capped_runs(
        lambda cap: sgd_path(problem, n_trees, alpha, seed, cap), lambda p: p.validation_loss,
        path, path_s, terminal_cap, best_cap, n_trees, repeats, "Mondrian SGD path",
        lambda p: {"evaluations": len(p.lifetimes)})
    time_to_best = next(r["time (s)"] for r in runs if r["max_features cap"] == best_cap)
    return {
        "path": path, "path_s": path_s, "runs": runs, "mismatches": mismatches,
        "best_lifetime": float(path.best_lifetime),
        "best_rmse": float(np.sqrt(path.validation_loss[best])),
        "time_to_best": time_to_best, "evaluations": len(path.lifetimes),
    }


def feature_sgd(transformer, X: np.ndarray, y: np.ndarray, X_eval: np.ndarray, alpha: float,
                seed: int) -> np.ndarray:
    """Fit ``transformer`` and an ``SGDRegressor`` on standardised targets; predict ``X_eval``.

    The L2 constant is ``alpha / n`` (sklearn minimises the mean loss plus ``alpha/2 ||w||²``
    per sample, the ridge objective divided by ``2 n``); no intercept, as in the ridge.
    """
    Z = transformer.fit_transform(X)
    offset, scale = float(np.mean(y)), float(np.std(y)) or 1.0
    model = SGDRegressor(loss="squared_error", penalty="l2", alpha=alpha / len(y),
                         fit_intercept=False, max_iter=BASELINE_SGD_EPOCHS, tol=None,
                         learning_rate=BASELINE_SGD_SCHEDULE, eta0=BASELINE_SGD_ETA0,
                         random_state=seed)
    model.fit(Z, (y - offset) / scale)
    return model.predict(transformer.transform(X_eval)) * scale + offset


def run_fig8_sgd(problem: Problem, args, alpha: float, report: Report) -> dict:
    """Fig. 8 again, every method trained by SGD; reports its tables and returns the plot data."""
    log(f"fig8 (SGD): width search with {args.n_trees} non-zeros per point")
    n_fit = len(problem.y_fit)
    report.add("\n## Fig. 8 with SGD training (the paper's protocol)")
    report.add(f"\nEvery method trained by SGD on squared error with L2 constant alpha / n_fit = "
          f"{alpha:g} / {n_fit} = {alpha / n_fit:.3g} per sample, no intercept, targets "
          "centred and divided by their fit-part std (RMSE reported in the units of y). "
          f"Mondrian: `MondrianKernelSGDRegressor(learning_rate={SGD_LEARNING_RATE:g}, "
          f"steps_per_cut={SGD_STEPS_PER_CUT}, n_epochs={SGD_START_EPOCHS})` "
          f"({SGD_START_EPOCHS} epochs on the root cells, then {SGD_STEPS_PER_CUT} SGD steps "
          f"on random fit points after every cut, weights inherited by both halves of a cut "
          f"cell), validation loss every {args.n_trees} cuts; its time axis comes from capped "
          f"re-runs from scratch (caps {2 * args.n_trees}, {4 * args.n_trees}, ..., the cap of "
          "the best evaluation, the terminal cap), each timed on its own, as above. Refits: "
          f"`SGDRegressor(max_iter={BASELINE_SGD_EPOCHS}, tol=None, "
          f"learning_rate='{BASELINE_SGD_SCHEDULE}', eta0={BASELINE_SGD_ETA0:g}, "
          f"random_state={args.seed})` on the same features and under the same "
          "doubling-then-bisection search as above.")
    mondrian_result = mondrian_sgd_search(problem, args.n_trees, alpha, args.seed,
                                          args.max_features, args.repeats)
    searches = refit_searches(
        problem, args, alpha,
        trainer=lambda t, X, y, X_eval: feature_sgd(t, X, y, X_eval, alpha, args.seed))
    level, mondrian_points = search_tables(
        report, mondrian_result, searches,
        f"Fig. 8 (SGD): Mondrian SGD lifetime path, {args.n_trees} trees, each cap run "
        "from scratch",
        lambda method: f"Fig. 8 (SGD): {method} width search, {args.n_trees} components, SGD "
                       "refit per lifetime", "SGD paths")

    report_search_summary(
        report, mondrian_result, searches, level, mondrian_points, "SGD path", "SGD refits",
        "evaluations / fits",
        "`evaluations / fits` counts validation evaluations of the path (one every "
        f"{args.n_trees} cuts, plus the start and the end) or lifetimes refitted. The path's "
        "best lifetime is the midpoint of the interval between its best evaluation and the "
        "next cut.", "Fig. 8 (SGD) summary")
    report.checks("Targets (Fig. 8, SGD)",
                  speedup_checks(mondrian_result, searches, "SGD search"))
    return {"mondrian": mondrian_result, "searches": searches, "level": level}


# --------------------------------------------------------------------------------------------
# Fig. 6: test error against non-zero features
# --------------------------------------------------------------------------------------------


def run_fig6(problem: Problem, args, alpha: float, lifetime: float, report: Report) -> dict:
    """Test RMSE of the three approximations and of the exact kernel at one lifetime."""
    log(f"fig6: test RMSE against non-zeros per point at λ = {lifetime:.4g}")
    results: dict[str, dict[int, dict[str, list]]] = {m: {} for m in (MONDRIAN, BINNING, FOURIER)}
    for M in args.grid:
        for method in results:
            results[method][M] = {"rmse": [], "features": [], "seconds": []}
        for s in range(args.feature_seeds):
            seed = args.seed + s
            log(f"  M = {M}, seed {seed}")
            start = time.perf_counter()
            model = mondrian_ridge(M, lifetime, alpha, seed).fit(problem.X_train, problem.y_train)
            prediction = model.predict(problem.X_test)
            out = results[MONDRIAN][M]
            out["seconds"].append(time.perf_counter() - start)
            out["rmse"].append(rmse(problem.y_test, prediction))
            out["features"].append(model.coef_.shape[0])
            for method in (BINNING, FOURIER):
                start = time.perf_counter()
                prediction, n_features = feature_ridge(
                    make_features(method, M, lifetime, seed), problem.X_train, problem.y_train,
                    problem.X_test, alpha)
                out = results[method][M]
                out["seconds"].append(time.perf_counter() - start)
                out["rmse"].append(rmse(problem.y_test, prediction))
                out["features"].append(n_features)
    log(f"  exact Laplace kernel ridge on {len(problem.y_train)} rows")
    start = time.perf_counter()
    exact = rmse(problem.y_test, exact_laplace_ridge(problem.X_train, problem.y_train,
                                                     problem.X_test, lifetime, alpha))
    exact_s = time.perf_counter() - start

    rows = []
    for M in args.grid:
        row = {"non-zeros / point": M}
        for method in results:
            row[f"{method} RMSE"] = mean_std(results[method][M]["rmse"])
        for method in results:
            row[f"{method} features"] = int(np.mean(results[method][M]["features"]))
        for method in results:
            row[f"{method} fit+predict (s)"] = float(np.mean(results[method][M]["seconds"]))
        rows.append(row)
    report.table(
        rows, formats={f"{m} fit+predict (s)": ".3f" for m in results},
        title=f"Fig. 6: test RMSE on cpu_act at λ = {lifetime:.4g}, alpha = {alpha:g} "
              f"(mean ± std over {args.feature_seeds} seed(s))")
    report.add(f"\nExact Laplace kernel ridge (N = {len(problem.y_train)}): test RMSE {exact:.3f} "
          f"({exact_s:.1f} s).")
    return {"results": results, "exact": exact, "lifetime": lifetime}


# --------------------------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------------------------


def plot_fig6(fig6: dict, grid: list[int], quick: bool, plt) -> str:
    """Test RMSE against non-zeros per point."""
    fig, ax = plt.subplots(figsize=(6, 4.2))
    methods = (MONDRIAN, BINNING, FOURIER)
    values = {m: [fig6["results"][m][M]["rmse"] for M in grid] for m in methods}
    mondrian_plot().plot_search_curves(
        {m: (grid, [np.mean(v) for v in values[m]]) for m in methods},
        errors={m: [np.std(v) for v in values[m]] for m in methods},
        reference={EXACT: fig6["exact"]}, best=None, logy=True,
        xlabel="non-zero features per data point", ylabel="test RMSE",
        title=f"cpu_act, Laplace kernel λ = {fig6['lifetime']:.3g}", ax=ax)
    fig.tight_layout()
    return save_figure(fig, figure_path("kernel_fig6_rmse_vs_nonzeros", quick), plt)


def plot_time_axis(ax, fig8: dict, path_label: str, search_label: str, reference=None) -> None:
    """Best validation RMSE so far against wall-clock time: the path and each search."""
    runs = fig8["mondrian"]["runs"]
    curves = {f"{MONDRIAN} {path_label}": ([r["time (s)"] for r in runs],
                                           [r["best val RMSE so far"] for r in runs])}
    points = {}
    for method in (BINNING, FOURIER):
        records = fig8["searches"][method]["records"]
        label = f"{method} {search_label} (best so far)"
        curves[label] = ([r["elapsed (s)"] for r in records], [r["best so far"] for r in records])
        points[label] = ([r["elapsed (s)"] for r in records], [r["val RMSE"] for r in records])
    mondrian_plot().plot_search_curves(
        curves, points=points, reference=reference, best=None, steps=True, logy=True,
        xlabel="wall-clock time (s)", ylabel="validation RMSE", ax=ax)


def plot_fig8(fig8: dict, quick: bool, plt) -> str:
    """Validation RMSE against time (left) and against the lifetime (right)."""
    fig, (ax_t, ax_l) = plt.subplots(1, 2, figsize=(11, 4.2))
    plot_time_axis(ax_t, fig8, "path", "search")
    ax_t.set_title("Kernel width search")

    path = fig8["mondrian"]["path"]
    shown = path.lifetimes > 0
    mondrian_plot().plot_search_curves(
        {MONDRIAN + " path": (path.lifetimes[shown], np.sqrt(path.validation_error[shown]))},
        points={f"{method} fits": ([r["lifetime"] for r in fig8["searches"][method]["records"]],
                                   [r["val RMSE"] for r in fig8["searches"][method]["records"]])
                for method in (BINNING, FOURIER)},
        best="min", steps=True, logy=True, xlabel="lifetime λ (inverse width, scaled units)",
        ylabel="validation RMSE", title="Validation error by lifetime", ax=ax_l)
    fig.tight_layout()
    return save_figure(fig, figure_path("kernel_fig8_search_time", quick), plt)


def plot_fig8_sgd(fig8: dict, quick: bool, plt) -> str:
    """Validation RMSE against time for the three SGD-trained methods."""
    fig, ax = plt.subplots(figsize=(6, 4.2))
    plot_time_axis(ax, fig8, "SGD path", "SGD search", reference={"common level": fig8["level"]})
    ax.set_title("Kernel width search, SGD training")
    fig.tight_layout()
    return save_figure(fig, figure_path("kernel_fig8_sgd_search_time", quick), plt)


def save_plots(fig6: dict | None, fig8: dict | None, fig8_sgd: dict | None, args,
               report: Report) -> None:
    """Write the PNG files and list them, or say why not."""
    plt, why = import_pyplot()
    if plt is None:
        report.add(f"\nPlots skipped: {why}.")
        return
    report.add()
    if fig6 is not None:
        report.add(f"Saved {plot_fig6(fig6, args.grid, args.quick, plt)}")
    if fig8 is not None:
        report.add(f"Saved {plot_fig8(fig8, args.quick, plt)}")
    if fig8_sgd is not None:
        report.add(f"Saved {plot_fig8_sgd(fig8_sgd, args.quick, plt)}")


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def parse_grid(text: str) -> list[int]:
    """Comma-separated positive integers."""
    try:
        grid = sorted({int(t) for t in text.split(",") if t.strip()})
    except ValueError:
        raise SystemExit(f"--grid must be comma-separated integers, got {text!r}") from None
    if not grid or grid[0] < 1:
        raise SystemExit("--grid needs positive integers")
    return grid


def blas_line() -> str:
    """The BLAS libraries and their thread counts."""
    pools = [f"{p['internal_api']} ({p['num_threads']} threads)"
             for p in threadpool_info() if p["user_api"] == "blas"]
    return "BLAS: " + (", ".join(pools) if pools else "unknown")


def main(argv=None) -> None:
    """Run the benchmark: print the markdown report, write it in a full run."""
    parser = make_parser(__doc__.split("\n\n")[0], default_repeats=1)
    parser.add_argument("--parts", default=",".join(PARTS),
                        help="comma-separated subset of " + ",".join(PARTS))
    parser.add_argument("--grid", default=None,
                        help="non-zeros per point for fig6 (default "
                             + ",".join(map(str, FULL_GRID)) + "; quick "
                             + ",".join(map(str, QUICK_GRID)) + ")")
    add_sized(parser, "--n-trees", FULL_TREES, QUICK_TREES, "non-zeros per point in fig8")
    add_sized(parser, "--max-features", FULL_MAX_FEATURES, QUICK_MAX_FEATURES,
              "terminal cap of the lifetime path")
    add_sized(parser, "--feature-seeds", FULL_SEEDS, QUICK_SEEDS, "seeds per point of fig6")
    parser.add_argument("--alpha", type=float, default=None,
                        help="ridge constant for every method (default: chosen on validation)")
    parser.add_argument("--lifetime", type=float, default=None,
                        help="fig6 lifetime (default: the best of the fig8 Mondrian path)")
    parser.add_argument("--blas-threads", type=int, default=None,
                        help="limit BLAS threads (default: the libraries' own setting)")
    add_output_options(parser, "kernel.md")
    args = parse_args(parser, argv)
    parts = parse_list(args.parts, PARTS)
    args.grid = parse_grid(args.grid) if args.grid else list(QUICK_GRID if args.quick
                                                             else FULL_GRID)
    if args.max_features <= args.n_trees:
        parser.error("--max-features must exceed --n-trees")
    require_datasets()
    mondrian, reason = import_mondrian()
    if mondrian is None:
        print(f"SKIPPED: mondrian unavailable: {reason}")
        return

    limits = threadpool_limits(args.blas_threads) if args.blas_threads else None
    try:
        run(args, parts)
    finally:
        if limits is not None:
            limits.restore_original_limits()


def run(args, parts: list[str]) -> None:
    """Run the requested parts; print the report and write it where ``args.output`` says."""
    wall = time.perf_counter()
    problem = load_problem(args.quick, args.seed)
    report = Report()
    report.add("## Mondrian kernel benchmark (cpu_act)" + (" (QUICK MODE)" if args.quick else ""))
    report.add(f"\n{environment_line()}; {blas_line()}")
    report.add(f"\nData: {problem.note}; test rows: {len(problem.y_test)}. Inputs min-max scaled "
               "to [0, 1] on the training rows for every method (mondrian: "
               "feature_scaling=None); targets as given. Ridge on centred targets without "
               "intercept, same alpha for all.")
    if args.quick:
        report.add(f"Quick mode: training rows subsampled to {QUICK_TRAIN_ROWS}, fig6 grid "
                   f"{args.grid}, {args.n_trees} trees / components in fig8, path capped at "
                   f"{args.max_features} features, 2 bisection steps; targets indicative only.")

    if args.alpha is None:
        log("choosing alpha with exact Laplace kernel ridge on validation")
        alpha, alpha_lifetime, alpha_rows = choose_alpha(problem, args.seed)
        report.table(
            alpha_rows, formats={k: ".4f" for k in alpha_rows[0] if k != "alpha"},
            title=f"Choice of alpha: validation RMSE of exact Laplace kernel ridge "
                  f"(<= {ALPHA_ROWS} fit rows)")
        report.add(f"\nalpha = {alpha:g} (best λ on this grid: {alpha_lifetime:g}).")
    else:
        alpha = args.alpha
        report.add(f"\nalpha = {alpha:g} (given).")

    fig8 = run_fig8(problem, args, alpha, report) if "fig8" in parts else None
    fig8_sgd = run_fig8_sgd(problem, args, alpha, report) if "fig8" in parts else None
    fig6 = None
    if "fig6" in parts:
        lifetime = args.lifetime
        if lifetime is None and fig8 is not None:
            lifetime = fig8["mondrian"]["best_lifetime"]
            report.add(f"\nfig6 lifetime λ* = {lifetime:.4g}: the best of the Mondrian path "
                       "above.")
        elif lifetime is None:
            log("fig6: lifetime path to choose λ*")
            path = validation_path(problem, args.n_trees, alpha, args.seed, args.max_features)
            lifetime = float(path.best_lifetime)
            report.add(f"\nfig6 lifetime λ* = {lifetime:.4g}: the best of a Mondrian path with "
                       f"{args.n_trees} trees and {args.max_features} features.")
        fig6 = run_fig6(problem, args, alpha, lifetime, report)
    if not args.no_plots:
        save_plots(fig6, fig8, fig8_sgd, args, report)
    report.add(f"\nTotal wall time: {time.perf_counter() - wall:.1f} s.")
    report.write(args.output)


if __name__ == "__main__":
    main()
