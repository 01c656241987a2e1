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

from kernel_bench.fig6 import run_fig6
from kernel_bench.models import ALPHA_ROWS, QUICK_TRAIN_ROWS, choose_alpha, load_problem
from kernel_bench.plots import save_plots
from kernel_bench.search import run_fig8, validation_path
from kernel_bench.sgd import run_fig8_sgd
from shared.cli import add_output_options, add_sized, make_parser, parse_args, parse_list
from shared.datasets import require_datasets
from shared.optional import import_mondrian
from shared.report import Report, environment_line, log
from threadpoolctl import threadpool_info, threadpool_limits

PARTS = ("fig6", "fig8")
FULL_GRID = (1, 2, 5, 10, 20, 50, 100)
QUICK_GRID = (1, 5, 20)
FULL_TREES, QUICK_TREES = 50, 20
FULL_MAX_FEATURES, QUICK_MAX_FEATURES = 4000, 1000
FULL_SEEDS, QUICK_SEEDS = 3, 1


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
