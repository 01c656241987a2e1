"""Reporting: markdown tables, target checks, progress messages and :class:`Report`.

Reports go to stdout and progress messages to stderr, so ``python benchmarks/bench_X.py >
report.md`` keeps only the report. A :class:`Report` also keeps what it printed, to write it to a
file at the end.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from shared.optional import import_mondrian

Check = tuple[str, "bool | None", str]  # (description, passed or None if not evaluated, detail)


def _format_cell(value: Any, fmt: str | None) -> str:
    """Format one table cell; NaN and None print as an em dash."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "—"
    if fmt is not None:
        return format(value, fmt)
    if isinstance(value, float | np.floating):
        return f"{value:.4g}"
    return str(value)


def markdown_table(
    rows: Sequence[dict],
    columns: Sequence[str] | None = None,
    formats: dict[str, str] | None = None,
) -> str:
    """Render a list of dict rows as a markdown table.

    Parameters
    ----------
    rows : sequence of dict
        One dict per row; a missing key prints as an em dash.
    columns : sequence of str, optional
        Keys to show, in order (also the headers). Default: keys of the first row.
    formats : dict, optional
        Format spec per column (e.g. ``{"accuracy": ".4f"}``); floats default to ``.4g``.

    Returns
    -------
    str
    """
    if not rows:
        return "(no rows)"
    columns = list(columns if columns is not None else rows[0].keys())
    formats = formats or {}
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in rows:
        cells = (_format_cell(row.get(c), formats.get(c)) for c in columns)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def checks_text(title: str, checks: Iterable[Check]) -> str:
    """Target checks as markdown bullets ``- [PASS|FAIL|N/A] description: detail`` under a title."""
    lines = [f"\n### {title}\n"]
    for description, passed, detail in checks:
        status = {True: "PASS", False: "FAIL", None: "N/A"}[passed]
        lines.append(f"- [{status}] {description}: {detail}")
    return "\n".join(lines)


def mean_std(values: Sequence[float], spec: str = ".3f") -> str:
    """``"mean ± std"`` of ``values`` (population std, 2 digits); the value alone when single."""
    if len(values) == 1:
        return format(values[0], spec)
    return f"{np.mean(values):{spec}} ± {np.std(values):.2g}"


def log(message: str) -> None:
    """Print a progress message to stderr (tables go to stdout)."""
    print(message, file=sys.stderr, flush=True)


def environment_line() -> str:
    """Python, numpy, scikit-learn and mondrian versions and the CPU count, on one line."""
    import sklearn

    parts = [f"Python {platform.python_version()}", f"numpy {np.__version__}",
             f"scikit-learn {sklearn.__version__}"]
    mod, _ = import_mondrian()
    parts.append(f"mondrian {getattr(mod, '__version__', '?')}" if mod else "mondrian: n/a")
    return ", ".join(parts) + f"; {os.cpu_count()} CPU(s)"


def load_line(start: tuple[float, float, float]) -> str:
    """The 1-minute load average at ``start`` (``os.getloadavg()``) and now."""
    return f"load average (1 min) {start[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end"


class Report:
    """A benchmark report: printed as it goes, written to a file at the end if asked."""

    def __init__(self):
        self.parts: list[str] = []

    def add(self, text: str = "") -> None:
        """Print ``text`` and keep it."""
        print(text, flush=True)
        self.parts.append(text)

    def table(self, rows: Sequence[dict], columns=None, formats=None, title=None) -> None:
        """Add a :func:`markdown_table`, under a ``### title`` heading when given."""
        if title:
            self.add(f"\n### {title}\n")
        self.add(markdown_table(rows, columns, formats))

    def checks(self, title: str, checks: Iterable[Check]) -> None:
        """Add the target checks (see :func:`checks_text`)."""
        self.add(checks_text(title, checks))

    def write(self, path: Path | str | None) -> None:
        """Write everything added so far to ``path`` (nothing when ``path`` is None)."""
        if path is None:
            return
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(self.parts) + "\n")
        log(f"report written to {path}")


def titled_report(title: str, quick: bool, note: str) -> Report:
    """A :class:`Report` opened with ``## title`` (marked in quick mode), the environment line
    and ``note``."""
    report = Report()
    report.add(f"## {title}" + (" (QUICK MODE)" if quick else ""))
    report.add(f"\n{environment_line()}")
    report.add(f"\n{note}\n")
    return report
