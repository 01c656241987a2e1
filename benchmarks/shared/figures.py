"""Plots: matplotlib with the Agg backend when it imports, where the PNG files go, saving them.

Full runs write ``benchmarks/results/<stem>.png``; quick runs write ``<stem>_quick.png``, so a
smoke test never overwrites the figures of a full run.
"""

from __future__ import annotations

from pathlib import Path

from shared import REPO_ROOT, RESULTS_DIR

DPI = 120


def import_pyplot():
    """``(matplotlib.pyplot, "")`` with the Agg backend, or ``(None, "<why>; how to install")``."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        return None, f"matplotlib unavailable ({exc}); `pip install matplotlib`"
    return plt, ""


def figure_path(stem: str, quick: bool) -> Path:
    """``results/<stem>.png``, or ``results/<stem>_quick.png`` in quick mode."""
    return RESULTS_DIR / (f"{stem}_quick.png" if quick else f"{stem}.png")


def save_figure(fig, path: Path, plt) -> str:
    """Save ``fig`` to ``path`` (folder created), close it; return the path relative to the repo."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return str(path.relative_to(REPO_ROOT))
