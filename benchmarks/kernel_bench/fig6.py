"""Fig. 6: test error against the number of non-zero features per point, at one lifetime."""

from __future__ import annotations

import time

import numpy as np
from shared.metrics import rmse
from shared.report import Report, log, mean_std

from kernel_bench.models import (
    BINNING,
    FOURIER,
    MONDRIAN,
    Problem,
    exact_laplace_ridge,
    feature_ridge,
    make_features,
    mondrian_ridge,
)


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
