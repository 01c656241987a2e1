"""The PNG files of Figs. 6 and 8 (drawn by ``mondrian.plot``, saved under ``results/``)."""

from __future__ import annotations

import numpy as np
from shared.figures import figure_path, import_pyplot, mondrian_plot, save_figure
from shared.report import Report

from kernel_bench.models import BINNING, EXACT, FOURIER, MONDRIAN


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
