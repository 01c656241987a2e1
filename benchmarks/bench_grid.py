"""Mondrian grid benchmark: learned per-dimension lifetimes (ch. 5 of Balog's report).

toy
    The report's Fig. 5.4 / 5.6: ``y = sin(6 x_0) + 0.1 ε`` on ``[0, 1]²`` (dimension 1 is
    irrelevant), 500 rows (80% fit, 20% validation), ``--n-grids`` grids, ``alpha = 0.1``. The
    greedy searches ``add`` and ``add_remove``, with single-cut trials (the report's procedure,
    ``cuts_per_step=1``) and with the default ``cuts_per_step = n_grids``; learned lifetimes,
    their ratio and the test RMSE on 2000 fresh rows. Plot: every search's path in the
    ``(λ_0, λ_1)`` plane and its validation RMSE against the step.
noise
    power_plant (standard split 0; 3000 fit and 1000 validation rows drawn from its training
    rows, its test rows) with 4 pure-noise columns ``U(0, 1)`` appended: the lifetimes learned
    per column by ``MondrianGridRidge`` (``X_val`` given, ``--n-grids`` grids, max 2000
    features), against equal lifetimes (the best common lifetime on the validation rows over a
    geometric grid, same grids and alpha), test RMSE of both refitted on the fit rows.
speed
    Exact incremental updates against refitting per candidate, at about 2000 features (the
    noise problem's grids grown round-robin over its dimensions until 2000 features). One
    candidate is one cut added to (or the last one removed from) one dimension. Incremental:
    replay the move on the ridge inverse, score the validation rows, restore the saved state
    (what the search does). Refit: the same move on the cells only, then features, ``Z'Z +
    alpha I``, Cholesky solve, validation predictions. Medians over the dimensions, interleaved.
cpu_act
    The fixed 6554/1638 split (``datasets.load_cpu_act``), inputs min-max scaled on the
    training rows. (a) Grid-weighted Mondrian kernel ridge: ``MondrianGridRidge`` (20 grids,
    validation 20% of the training rows, max 2000 features, ``n_iter_no_change=3``) learns the
    lifetimes; the inputs are multiplied by them, normalised to mean 1, and
    ``MondrianKernelRidge(n_estimators=50, lifetime="auto", feature_scaling=None)`` chooses its
    lifetime on the same fit/validation rows for each alpha in (0.01, 0.1, 1); the best is
    refitted on all training rows. (b) Exact isotropic Laplace kernel ridge (sklearn
    ``KernelRidge(kernel="laplacian")``): the best ``(gamma, alpha)`` of a 6 x 4 grid on the
    same validation rows, refitted on all training rows. Test RMSE and total time (search +
    final fit) of each.

Run from the repository root::

    python benchmarks/bench_grid.py            # full run, writes results/grid.md and PNGs
    python benchmarks/bench_grid.py --quick    # smaller sizes, a few minutes
"""

from __future__ import annotations

import os
import time

import numpy as np
from scipy import sparse
from scipy.linalg import cho_factor, cho_solve
from shared.cli import add_output_options, add_sized, make_parser, parse_args
from shared.datasets import load_cpu_act, load_uci_regression, require_datasets
from shared.figures import figure_path, import_pyplot, save_figure
from shared.metrics import rmse
from shared.optional import import_mondrian
from shared.report import Report, environment_line, load_line, log
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import MinMaxScaler
from threadpoolctl import threadpool_limits

PARTS = ("toy", "noise", "speed", "cpu_act")


# ---------------------------------------------------------------------------- toy

def run_toy(mondrian, args, report):
    rng = np.random.RandomState(args.seed)
    X = rng.uniform(size=(500, 2))
    y = np.sin(6 * X[:, 0]) + 0.1 * rng.normal(size=500)
    X_test = rng.uniform(size=(2000, 2))
    y_test = np.sin(6 * X_test[:, 0])
    rows, paths = [], {}
    for search in ("add", "add_remove"):
        for step in (1, None):
            model = mondrian.MondrianGridRidge(
                n_grids=args.n_grids, alpha=0.1, search=search, cuts_per_step=step,
                max_features=25 * args.n_grids, random_state=args.seed)
            start = time.perf_counter()
            model.fit(X, y)
            elapsed = time.perf_counter() - start
            lam = model.lifetimes_
            label = f"{search}, cuts_per_step={step or args.n_grids}"
            paths[label] = model.lifetime_path_
            rows.append({"search": label, "steps": len(model.lifetime_path_),
                         "best step": model.lifetime_path_.best_index,
                         "λ_0": lam[0], "λ_1 (irrelevant)": lam[1],
                         "λ_1/λ_0": lam[1] / lam[0] if lam[0] > 0 else np.nan,
                         "test RMSE": rmse(y_test, model.predict(X_test)), "fit s": elapsed})
            log(f"toy {label}: {lam}")
    report.add("\n### Toy: greedy path on a 2-D problem with one irrelevant dimension\n")
    report.table(rows, formats={"λ_0": ".3g", "λ_1 (irrelevant)": ".3g", "λ_1/λ_0": ".3f",
                                "test RMSE": ".4f", "fit s": ".2f"})
    return paths


def plot_toy(paths, quick):
    plt, reason = import_pyplot()
    if plt is None:
        return [f"(no plot: {reason})"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for label, path in paths.items():
        lam = path.lifetimes
        line, = axes[0].plot(lam[:, 0], lam[:, 1], marker=".", label=label)
        axes[0].plot(*path.best_lifetimes, "o", color=line.get_color(), markersize=9)
        axes[1].plot(np.sqrt(path.validation_error), label=label, color=line.get_color())
    axes[0].set_xlabel("λ_0 (relevant)")
    axes[0].set_ylabel("λ_1 (irrelevant)")
    axes[0].set_title("greedy paths (best configuration: large dot)")
    axes[0].legend(fontsize=8)
    axes[1].set_xlabel("step")
    axes[1].set_ylabel("validation RMSE")
    axes[1].set_yscale("log")
    fig.tight_layout()
    return [f"- {save_figure(fig, figure_path('grid_toy_paths', quick), plt)}"]


# ---------------------------------------------------------------------------- power plant + noise

def noise_problem(args):
    data = load_uci_regression("power_plant", 0)
    rng = np.random.RandomState(args.seed)
    n_fit, n_val = (3000, 1000) if not args.quick else (1000, 400)
    rows = rng.permutation(len(data.y_train))[:n_fit + n_val]
    noise = rng.uniform(size=(len(data.y_train) + len(data.y_test), 4))
    X_train = np.hstack([data.X_train, noise[:len(data.y_train)]])
    X_test = np.hstack([data.X_test, noise[len(data.y_train):]])
    scaler = MinMaxScaler().fit(X_train[rows[:n_fit]])
    fit, val = rows[:n_fit], rows[n_fit:]
    return (scaler.transform(X_train[fit]), data.y_train[fit], scaler.transform(X_train[val]),
            data.y_train[val], scaler.transform(X_test), data.y_test,
            list(data.feature_names) + [f"noise{k}" for k in range(4)])


def run_noise(mondrian, args, report):
    X, y, X_val, y_val, X_test, y_test, names = noise_problem(args)
    alpha = 1.0
    start = time.perf_counter()
    model = mondrian.MondrianGridRidge(n_grids=args.n_grids, alpha=alpha, max_features=2000,
                                       feature_scaling=None, random_state=args.seed)
    model.fit(X, y, X_val=X_val, y_val=y_val)
    learned_time = time.perf_counter() - start
    learned_rmse = rmse(y_test, model.predict(X_test))
    # Equal lifetimes: the best common value on the validation rows.
    start = time.perf_counter()
    best = None
    for lam in np.geomspace(0.25, 64, 17):
        try:
            equal = mondrian.MondrianGridRidge(n_grids=args.n_grids, alpha=alpha, lifetimes=lam,
                                               max_features=4000, feature_scaling=None,
                                               random_state=args.seed).fit(X, y)
        except ValueError:
            break  # more than max_features cells: larger lifetimes only have more
        error = rmse(y_val, equal.predict(X_val))
        if best is None or error < best[0]:
            best = (error, lam, equal)
    equal_time = time.perf_counter() - start
    _, lam_equal, equal = best
    equal_rmse = rmse(y_test, equal.predict(X_test))
    report.add("\n### power_plant + 4 pure-noise columns\n")
    report.add(f"{len(y)} fit / {len(y_val)} validation / {len(y_test)} test rows, "
               f"{args.n_grids} grids, alpha {alpha}, inputs min-max scaled on the fit rows.\n")
    report.table([{"column": n, "learned λ": v} for n, v in zip(names, model.lifetimes_,
                                                                  strict=True)],
                 formats={"learned λ": ".3f"})
    report.add("")
    report.table([
        {"lifetimes": "learned (greedy, add)", "test RMSE": learned_rmse,
         "features": model.n_features_out_, "search + fit s": learned_time},
        {"lifetimes": f"equal (best common λ = {lam_equal:.3g})", "test RMSE": equal_rmse,
         "features": equal.n_features_out_, "search + fit s": equal_time},
    ], formats={"test RMSE": ".3f", "search + fit s": ".1f"})
    return model, (X, y, X_val, y_val)


# ---------------------------------------------------------------------------- speed

def run_speed(mondrian, args, report, problem):
    from mondrian.grid._cuts import GridCuts, GridSample, begin, record
    from mondrian.kernel._ridge_path import RidgePathVisitor

    X, y, X_val, y_val = problem
    alpha, M = 1.0, args.n_grids
    target = 2000 if not args.quick else 800
    X_all = np.ascontiguousarray(np.vstack([X, X_val]))
    n_fit = len(y)
    offset = y.mean()
    targets = np.ascontiguousarray(np.r_[y, y_val] - offset)
    is_train = np.r_[np.ones(n_fit, np.uint8), np.zeros(len(y_val), np.uint8)]
    source = GridCuts(GridSample(X_all, M, args.seed))
    visitor = RidgePathVisitor(targets, is_train, alpha, capacity=target + 400,
                               pending_cuts=128)  # as MondrianGridRidge
    begin(source, visitor)
    D = X.shape[1]
    d = 0
    while visitor.n_features < target:
        if source.n_available(d) and visitor.n_features + source.splits_of_next(d) < target:
            source.add(d, visitor)
        d = (d + 1) % D
        if all(visitor.n_features + source.splits_of_next(e) >= target or
               not source.n_available(e) for e in range(D)):
            break
    C = visitor.n_features
    log(f"speed: {C} features")

    def incremental(e, add):
        saved_s, saved_v = source.snapshot(), visitor.snapshot()
        start = time.perf_counter()
        (source.add if add else source.remove)(e, visitor)
        error = record(visitor)[1]
        source.restore(saved_s)
        visitor.restore(saved_v)
        return time.perf_counter() - start, error

    def refit(e, add):
        saved_s = source.snapshot()
        start = time.perf_counter()
        (source.add if add else source.remove)(e, None)
        cells = source.cells()
        _, cols = np.unique(cells + (np.arange(M) * (2 * len(targets) + 2))[:, None],
                            return_inverse=True)
        cols = cols.reshape(M, -1)
        n_cols = cols.max() + 1
        rows = np.repeat(np.arange(len(targets)), M)
        Z = sparse.csr_matrix((np.full(rows.size, 1 / np.sqrt(M)), (rows, cols.T.ravel())),
                              shape=(len(targets), n_cols))
        Z_fit = Z[:n_fit]
        A = (Z_fit.T @ Z_fit).toarray() + alpha * np.eye(n_cols)
        w = cho_solve(cho_factor(A), Z_fit.T @ targets[:n_fit])
        error = np.mean((Z[n_fit:] @ w - targets[n_fit:]) ** 2)
        elapsed = time.perf_counter() - start
        source.restore(saved_s)
        return elapsed, error

    rows = []
    # Both on one BLAS thread: the incremental updates are BLAS-2 (threads only add
    # synchronisation), and a shared machine makes threaded timings meaningless.
    limits = threadpool_limits(limits=1, user_api="blas")
    for add in (True, False):
        inc, ref, agree, splits = [], [], [], []
        for e in range(D):
            if (add and not source.n_available(e)) or (not add and not source.active_counts[e]):
                continue
            splits.append(source.splits_of_next(e) if add else 0)
            for _ in range(args.repeats):
                t_inc, err_inc = incremental(e, add)
                t_ref, err_ref = refit(e, add)
                inc.append(t_inc)
                ref.append(t_ref)
                agree.append(abs(err_inc - err_ref) / err_ref)
        rows.append({"candidate": "add one cut" if add else "remove one cut",
                     "features": C, "incremental ms (median)": 1e3 * np.median(inc),
                     "incremental ms (max)": 1e3 * np.max(inc),
                     "refit ms (median)": 1e3 * np.median(ref),
                     "refit / incremental (medians)": np.median(ref) / np.median(inc),
                     "refit / incremental (totals)": np.sum(ref) / np.sum(inc),
                     "max rel. diff of validation MSE": max(agree)})
    limits.restore_original_limits()
    report.add("\n### Incremental add/remove vs refitting per candidate\n")
    report.table(rows, formats={
                                "refit / incremental (medians)": ".1f",
                                "refit / incremental (totals)": ".1f",
                                "incremental ms (median)": ".2f", "incremental ms (max)": ".1f",
                                "refit ms (median)": ".1f",
                                "max rel. diff of validation MSE": ".1e"})


# ---------------------------------------------------------------------------- cpu_act

def mondrian_kernel(mondrian, X, y, X_fit, y_fit, X_val, y_val, seed):
    """MondrianKernelRidge(n_estimators=50): lifetime="auto" on the fit rows for every alpha of
    (0.01, 0.1, 1), the best on the validation rows refitted on all rows at its lifetime."""
    best = None
    for alpha in (0.01, 0.1, 1.0):
        model = mondrian.MondrianKernelRidge(n_estimators=50, lifetime="auto", alpha=alpha,
                                             feature_scaling=None, random_state=seed)
        model.fit(X_fit, y_fit)
        error = rmse(y_val, model.predict(X_val))
        log(f"mondrian kernel alpha={alpha}: lifetime {model.lifetime_:.3g}, val {error:.4f}")
        if best is None or error < best[0]:
            best = (error, alpha, model.lifetime_)
    _, alpha, lifetime = best
    model = mondrian.MondrianKernelRidge(n_estimators=50, lifetime=lifetime, alpha=alpha,
                                         feature_scaling=None, random_state=seed).fit(X, y)
    return model, f"alpha {alpha}, λ* {lifetime:.3g}"


def run_cpu_act(mondrian, args, report):
    data = load_cpu_act()
    scaler = MinMaxScaler().fit(data.X_train)
    X, X_test = scaler.transform(data.X_train), scaler.transform(data.X_test)
    y, y_test = data.y_train, data.y_test
    if args.quick:
        X, y = X[:2000], y[:2000]
    X_fit, X_val, y_fit, y_val = train_test_split(X, y, test_size=0.2, random_state=args.seed)
    rows = []
    # (a) grid-weighted Mondrian kernel ridge.
    start = time.perf_counter()
    grid = mondrian.MondrianGridRidge(n_grids=20, alpha=1.0, max_features=2000,
                                      n_iter_no_change=3, feature_scaling=None,
                                      random_state=args.seed)
    grid.fit(X_fit, y_fit, X_val=X_val, y_val=y_val)
    grid_time = time.perf_counter() - start
    weights = grid.lifetimes_ / grid.lifetimes_.mean()
    start = time.perf_counter()
    kernel, detail = mondrian_kernel(mondrian, X * weights, y, X_fit * weights, y_fit,
                                     X_val * weights, y_val, args.seed)
    kernel_time = time.perf_counter() - start
    rows.append({"method": "grid-weighted Mondrian kernel ridge (M=50)",
                 "test RMSE": rmse(y_test, kernel.predict(X_test * weights)),
                 "time s": grid_time + kernel_time,
                 "detail": f"grid search {grid_time:.0f} s, kernel {kernel_time:.0f} s, "
                           + detail})
    rows.append({"method": "grid ridge alone (20 grids, learned λ, alpha 1)",
                 "test RMSE": rmse(y_test, grid.predict(X_test)), "time s": grid_time,
                 "detail": f"{grid.n_features_out_} features"})
    start = time.perf_counter()
    kernel_iso, detail = mondrian_kernel(mondrian, X, y, X_fit, y_fit, X_val, y_val, args.seed)
    rows.append({"method": "isotropic Mondrian kernel ridge (M=50, for reference)",
                 "test RMSE": rmse(y_test, kernel_iso.predict(X_test)),
                 "time s": time.perf_counter() - start, "detail": detail})
    # (b) exact isotropic Laplace kernel ridge, width x alpha grid search.
    start = time.perf_counter()
    best = None
    for gamma in np.geomspace(0.05, 2.0, 6):
        for alpha in (0.01, 0.1, 1.0, 10.0):
            model = KernelRidge(kernel="laplacian", gamma=gamma, alpha=alpha).fit(X_fit, y_fit)
            error = rmse(y_val, model.predict(X_val))
            log(f"exact laplace gamma={gamma:.3g} alpha={alpha}: {error:.4f}")
            if best is None or error < best[0]:
                best = (error, gamma, alpha)
    _, gamma, alpha = best
    exact = KernelRidge(kernel="laplacian", gamma=gamma, alpha=alpha).fit(X, y)
    rows.append({"method": "exact isotropic Laplace KRR (6 x 4 grid search)",
                 "test RMSE": rmse(y_test, exact.predict(X_test)),
                 "time s": time.perf_counter() - start,
                 "detail": f"gamma {gamma:.3g}, alpha {alpha}"})
    report.add("\n### cpu_act: grid-weighted Mondrian kernel vs exact isotropic Laplace\n")
    report.add(f"{len(y)} training rows ({len(y_fit)} fit / {len(y_val)} validation for every "
               f"search), {len(y_test)} test rows.\n")
    report.table(rows, formats={"test RMSE": ".3f", "time s": ".0f"})
    report.add("\nLearned lifetimes: "
               + ", ".join(f"{n} {v:.2f}" for n, v in zip(data.feature_names, grid.lifetimes_,
                                                            strict=True)))


def main(argv=None) -> None:
    """Run the benchmark: print the report, write it (full runs) with the plots."""
    parser = make_parser(__doc__.splitlines()[0], default_repeats=3)
    add_sized(parser, "--n-grids", 20, 10, "grids of the toy, noise and speed parts")
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"comma-separated subset of {','.join(PARTS)}")
    add_output_options(parser, "grid.md")
    args = parse_args(parser, argv)
    parts = [p for p in args.parts.split(",") if p]
    require_datasets()
    mondrian, reason = import_mondrian()
    if mondrian is None:
        print(f"SKIPPED: mondrian unavailable: {reason}")
        return
    wall, load = time.perf_counter(), os.getloadavg()
    report = Report()
    report.add("## Mondrian grid" + (" (QUICK MODE)" if args.quick else ""))
    report.add(f"\n{environment_line()}\n")
    report.add(__doc__.split("\n\n", 1)[1].split("Run from")[0])
    plots = []
    if "toy" in parts:
        paths = run_toy(mondrian, args, report)
        if not args.no_plots:
            plots += plot_toy(paths, args.quick)
    problem = None
    if "noise" in parts or "speed" in parts:
        _, problem = run_noise(mondrian, args, report) if "noise" in parts else (
            None, noise_problem(args)[:4])
    if "speed" in parts:
        run_speed(mondrian, args, report, problem)
    if "cpu_act" in parts:
        run_cpu_act(mondrian, args, report)
    if plots:
        report.add("\nPlots:\n")
        for line in plots:
            report.add(line)
    report.add(f"\nTotal wall time: {time.perf_counter() - wall:.0f} s; {load_line(load)}.")
    report.write(args.output)


if __name__ == "__main__":
    main()
