"""Plots: matplotlib with the Agg backend when it imports, where the PNG files go, saving them.

Every figure is drawn by :mod:`mondrian.plot` (:func:`mondrian_plot`); the benchmarks only lay
the panels out, title them and save them. Full runs write ``benchmarks/results/<stem>.png``;
quick runs write ``<stem>_quick.png``, so a smoke test never overwrites the figures of a full
run.
"""

from __future__ import annotations

from pathlib import Path

from shared import REPO_ROOT, RESULTS_DIR

DPI = 120


def import_pyplot():
    """``(matplotlib.pyplot, "")`` with the Agg backend, or ``(None, "<why>; how to install")``.

    The pictures themselves come from :mod:`mondrian.plot` (see :func:`mondrian_plot`).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        return None, f"matplotlib unavailable ({exc}); `pip install matplotlib`"
    return plt, ""


def mondrian_plot():
    """The :mod:`mondrian.plot` module (call after :func:`import_pyplot` succeeded)."""
    import mondrian.plot

    return mondrian.plot


def figure_path(stem: str, quick: bool) -> Path:
    """``results/<stem>.png``, or ``results/<stem>_quick.png`` in quick mode."""
    return RESULTS_DIR / (f"{stem}_quick.png" if quick else f"{stem}.png")


def save_figure(fig, path: Path, plt) -> str:
    """Save ``fig`` to ``path`` (folder created), close it; return the path relative to the repo."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return str(path.relative_to(REPO_ROOT))
