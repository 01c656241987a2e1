"""The package's layers and sizes: the tree core imports nothing above it, no module or function
grows past what a reader can hold, and docs/design.md lists every module."""

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "mondrian"
DESIGN = Path(__file__).resolve().parents[2] / "docs" / "design.md"
SOURCES = sorted(p for ext in ("*.py", "*.pyx", "*.pxd", "*.h") for p in SRC.rglob(ext))

MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 150

# The packages above the tree core, from the estimator layer up.
ABOVE_CORE = ("estimator", "forest", "density", "kernel", "grid", "partition", "path", "merging",
              "dask", "river", "cli", "plot")

# A Cython or Python definition: its indentation and name.
_DEF = re.compile(
    r"^(\s*)(?:async\s+)?"
    r"(?:c?p?def|cdef\s+(?!class\b|struct\b|enum\b|union\b|extern\b|packed\b)"
    r"(?:inline\s+)?[\w\[\]\*, ]+?)\s+(\w+)\s*\(")


def _relative(path):
    return path.relative_to(SRC).as_posix()


@pytest.mark.parametrize("path", SOURCES, ids=_relative)
def test_module_size(path):
    n = len(path.read_text().splitlines())
    assert n <= MAX_MODULE_LINES, f"{_relative(path)} has {n} lines"


def _function_spans(lines):
    """``(name, first line, last line)`` of every definition, a definition ending where the
    next line at its indentation or less (not blank, not a comment) starts."""
    spans = []
    for i, line in enumerate(lines):
        match = _DEF.match(line)
        if not match or line.rstrip().endswith(";"):
            continue
        indent = len(match.group(1))
        end = i
        for j in range(i + 1, len(lines)):
            text = lines[j]
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            if len(text) - len(text.lstrip()) <= indent and not text.lstrip().startswith(")"):
                break
            end = j
        spans.append((match.group(2), i + 1, end + 1))
    return spans


@pytest.mark.parametrize("path", [p for p in SOURCES if p.suffix in (".py", ".pyx")],
                         ids=_relative)
def test_function_size(path):
    lines = path.read_text().splitlines()
    long = [f"{name} (lines {a}-{b}: {b - a + 1})" for name, a, b in _function_spans(lines)
            if b - a + 1 > MAX_FUNCTION_LINES]
    assert not long, f"{_relative(path)}: {', '.join(long)}"


def _imported_modules(path):
    """Every ``mondrian.*`` module that ``path`` imports or cimports, at any depth."""
    text = path.read_text()
    if path.suffix == ".py":
        names = []
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.module:
                names.append(node.module)
            elif isinstance(node, ast.Import):
                names.extend(alias.name for alias in node.names)
        return [n for n in names if n.startswith("mondrian")]
    return re.findall(r"^\s*(?:from|cimport|import)\s+(mondrian[\w.]*)", text, flags=re.M)


@pytest.mark.parametrize("path", [p for p in SOURCES if p.parent == SRC / "core"],
                         ids=_relative)
def test_core_imports_nothing_above_it(path):
    above = [m for m in _imported_modules(path) if m.split(".")[1:2] and
             m.split(".")[1] in ABOVE_CORE]
    assert not above, f"core/{path.name} imports {above}"


def test_design_lists_every_module():
    layout = DESIGN.read_text().split("```")[1]  # the page's first block: the module tree
    missing = []
    for path in SOURCES:
        stem, suffix = path.name.split(".", 1)
        named = path.name in layout or f"{stem}.pxd/.{suffix}" in layout
        if path.name != "__init__.py" and not named:
            missing.append(_relative(path))
    assert not missing, f"the layout of docs/design.md does not list {missing}"
