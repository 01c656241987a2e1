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
    training rows, 5243 fit / 1311 validation rows (20%) for every choice. (a) ARD-weighted
    Mondrian kernel ridge: ``laplace_ard_lifetimes`` (marginal likelihood of the ARD Laplace
    GP on 500 fit rows) gives lifetimes ``l``; weights ``l ** p`` normalised to mean 1 multiply
    the inputs; ``MondrianKernelRidge(n_estimators=100, lifetime="auto")`` chooses its
    lifetime by its path on the fit rows, scored on the validation rows, for p in (0, 0.5, 1)
    at alpha 0.1 (the alpha the validation chose for both the grid-weighted Mondrian kernel
    and the exact ARD kernels in earlier runs); the best (p, lifetime) is fitted on all
    training rows with 100, 200 and 400 trees. Time: ARD + selection + that
    fit. (b) Exact isotropic Laplace kernel ridge (sklearn ``KernelRidge(kernel=
    "laplacian")``): the best ``(gamma, alpha)`` of a 6 x 4 grid on the validation rows,
    refitted on all training rows; time: the 24 fits of the search + the final fit. (c) For
    reference, the exact ARD Laplace kernel with the weights of (a) ((gamma, alpha) of a 3 x 2
    grid on validation): the M → ∞ limit of (a).

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
# Powers of the ARD lifetimes tried as weights on cpu_act (0: uniform), and tree counts.
CPU_ACT_POWERS = (0.0, 0.5, 1.0)
CPU_ACT_TREES = (100, 200, 400)


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
    from mondrian.grid._cuts import GridCuts, GridSample
    from mondrian.grid._search import begin, record
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

def mondrian_kernel(mondrian, X_fit, y_fit, X_val, y_val, seed, n_estimators=50,
                    alphas=(0.01, 0.1, 1.0), max_features=4000):
    """MondrianKernelRidge: lifetime="auto" (its path) on the fit rows for every alpha, scored
    on the validation rows; returns (validation RMSE, alpha, lifetime) of the best."""
    best = None
    for alpha in alphas:
        model = mondrian.MondrianKernelRidge(n_estimators=n_estimators, lifetime="auto",
                                             alpha=alpha, max_features=max_features,
                                             feature_scaling=None, random_state=seed)
        model.fit(X_fit, y_fit)
        error = rmse(y_val, model.predict(X_val))
        log(f"mondrian kernel M={n_estimators} alpha={alpha}: lifetime {model.lifetime_:.3g}, "
            f"val {error:.4f}")
        if best is None or error < best[0]:
            best = (error, alpha, model.lifetime_)
    return best


def power_weights(lifetimes, power):
    """``lifetimes ** power`` normalised to mean 1 (power 0: uniform)."""
    w = np.asarray(lifetimes, dtype=np.float64) ** power
    return w * (len(w) / w.sum())


def run_cpu_act(mondrian, args, report):
    from mondrian.grid.ard import laplace_ard_lifetimes

    data = load_cpu_act()
    scaler = MinMaxScaler().fit(data.X_train)
    X, X_test = scaler.transform(data.X_train), scaler.transform(data.X_test)
    y, y_test = data.y_train, data.y_test
    if args.quick:
        X, y = X[:2000], y[:2000]
    X_fit, X_val, y_fit, y_val = train_test_split(X, y, test_size=0.2, random_state=args.seed)
    rows = []
    # (a) ARD-weighted Mondrian kernel ridge: marginal-likelihood lifetimes on 500 fit rows,
    # then the power and lifetime on the validation rows with M = 100 (alpha 0.1).
    start = time.perf_counter()
    lam = laplace_ard_lifetimes(X_fit, y_fit, n_samples=500, random_state=args.seed)
    ard_time = time.perf_counter() - start
    log(f"laplace ARD lifetimes ({ard_time:.0f} s): {np.round(lam, 3)}")
    start = time.perf_counter()
    M_select, path_features = (50, 1000) if args.quick else (100, 2000)
    trials = {}
    for power in CPU_ACT_POWERS:
        w = power_weights(lam, power)
        trials[(power, 0.1)] = mondrian_kernel(mondrian, X_fit * w, y_fit, X_val * w, y_val,
                                               args.seed, M_select, (0.1,), path_features)
    (power, kernel_alpha), (_, _, lifetime) = min(trials.items(), key=lambda kv: kv[1][0])
    select_time = time.perf_counter() - start
    w = power_weights(lam, power)
    selection = "; ".join(f"p {p:g} alpha {a:g}: val {v[0]:.3f} λ* {v[2]:.3g}"
                          for (p, a), v in trials.items())
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
    exact_time = time.perf_counter() - start
    log(f"exact isotropic: {rmse(y_test, exact.predict(X_test)):.4f} ({exact_time:.0f} s)")
    rows.append({"method": "exact isotropic Laplace KRR (6 x 4 grid search)",
                 "test RMSE": rmse(y_test, exact.predict(X_test)), "time s": exact_time,
                 "detail": f"gamma {gamma:.3g}, alpha {alpha}, chosen on validation"})
    # (c) reference: the exact limit of (a), the ARD kernel at the chosen power, its
    # (gamma, alpha) on the same validation rows (a 3 x 2 grid).
    start = time.perf_counter()
    best = None
    for gamma in (0.1, 0.2, 0.4):
        for alpha in (0.03, 0.1):
            model = KernelRidge(kernel="laplacian", gamma=gamma, alpha=alpha).fit(X_fit * w,
                                                                                 y_fit)
            error = rmse(y_val, model.predict(X_val * w))
            if best is None or error < best[0]:
                best = (error, gamma, alpha)
    _, gamma, alpha = best
    exact = KernelRidge(kernel="laplacian", gamma=gamma, alpha=alpha).fit(X * w, y)
    log(f"exact ARD: {rmse(y_test, exact.predict(X_test * w)):.4f} gamma {gamma} alpha {alpha}")
    rows.append({"method": "exact ARD Laplace KRR, weights of (a) (limit of (a), reference)",
                 "test RMSE": rmse(y_test, exact.predict(X_test * w)),
                 "time s": ard_time + time.perf_counter() - start,
                 "detail": f"gamma {gamma:.3g}, alpha {alpha}, chosen on validation"})
    # The Mondrian fits last (the largest is the slowest), each row logged as it comes.
    for n_estimators in CPU_ACT_TREES[: 2 if args.quick else None]:
        start = time.perf_counter()
        model = mondrian.MondrianKernelRidge(n_estimators=n_estimators, lifetime=lifetime,
                                             alpha=kernel_alpha, feature_scaling=None,
                                             max_features=20000,
                                             random_state=args.seed).fit(X * w, y)
        fit_time = time.perf_counter() - start
        rows.append({"method": f"ARD-weighted Mondrian kernel ridge (M={n_estimators})",
                     "test RMSE": rmse(y_test, model.predict(X_test * w)),
                     "time s": ard_time + select_time + fit_time,
                     "detail": f"ARD {ard_time:.0f} s + selection {select_time:.0f} s + fit "
                               f"{fit_time:.0f} s; p {power:g}, alpha {kernel_alpha:g}, λ* "
                               f"{lifetime:.3g}, {model._ridge.n_features} features"})
        log(f"{rows[-1]}")
    report.add("\n### cpu_act: ARD-weighted Mondrian kernel vs exact isotropic Laplace\n")
    report.add(f"{len(y)} training rows ({len(y_fit)} fit / {len(y_val)} validation for every "
               f"search), {len(y_test)} test rows. Selection (M = {M_select}, validation RMSE): "
               f"{selection}.\n")
    report.table(rows, formats={"test RMSE": ".3f", "time s": ".0f"})
    report.add("\nARD lifetimes (marginal likelihood, 500 fit rows): "
               + ", ".join(f"{n} {v:.3f}" for n, v in zip(data.feature_names, lam, strict=True)))


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
