"""Fig. 8 with SGD training (the paper's protocol): every model trained by SGD."""

from __future__ import annotations

import numpy as np
from shared.measure import time_callable
from shared.report import Report, log
from sklearn.linear_model import SGDRegressor

from kernel_bench.models import Problem
from kernel_bench.search import (
    capped_runs,
    refit_searches,
    report_search_summary,
    search_tables,
    speedup_checks,
)

SGD_LEARNING_RATE = 0.2
SGD_STEPS_PER_CUT = 20
SGD_START_EPOCHS = 3
BASELINE_SGD_EPOCHS = 10
BASELINE_SGD_SCHEDULE = "constant"
BASELINE_SGD_ETA0 = 0.2


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
