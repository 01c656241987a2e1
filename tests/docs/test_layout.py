"""The package's layers and sizes: the tree core imports nothing above it, no module or function
grows past what a reader can hold, and docs/design.md lists every module."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "mondrian"
DESIGN = ROOT / "docs" / "design.md"
SOURCES = sorted(p for ext in ("*.py", "*.pyx", "*.pxd", "*.h") for p in SRC.rglob(ext))
# The size rules hold for the benchmarks, tools and tests as well.
SCRIPTS = sorted(p for folder in ("benchmarks", "tools", "tests")
                 for p in (ROOT / folder).rglob("*.py"))

MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 150

# The packages above the tree core, from the estimator layer up.
ABOVE_CORE = ("estimator", "forest", "density", "kernel", "grid", "partition", "path", "merging",
              "dask", "river", "cli", "plot")

# A Cython definition (def, cpdef or cdef of a function, whatever its return type): its
# indentation and name. Declarations of classes, structs and the like are not functions.
_DEF = re.compile(
    r"^(\s*)(?:async\s+)?(?:def|cpdef|cdef)\b"
    r"(?!\s+(?:class|struct|enum|union|extern|packed|public|readonly|ctypedef)\b)"
    r"[^=#(]*?\b(\w+)\s*\(")


def _relative(path):
    return path.relative_to(SRC if path.is_relative_to(SRC) else ROOT).as_posix()


@pytest.mark.parametrize("path", SOURCES + SCRIPTS, ids=_relative)
def test_module_size(path):
    n = len(path.read_text().splitlines())
    assert n <= MAX_MODULE_LINES, f"{_relative(path)} has {n} lines"


def _python_spans(text):
    """``(name, first line, last line)`` of every function of a Python module."""
    return [(node.name, node.lineno, node.end_lineno) for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _code_lines(lines):
    """Whether each line is code that can end a definition: not blank, not a comment, not
    inside a triple-quoted string."""
    code, inside = [], False
    for line in lines:
        quotes = line.count('"""') + line.count("'''")
        code.append(not inside and bool(line.strip()) and not line.lstrip().startswith("#"))
        if quotes % 2:
            inside = not inside
    return code


def _cython_spans(text):
    """``(name, first line, last line)`` of every function of a Cython module: a definition
    ends before the next code line at its indentation or less (a signature's closing line
    aside)."""
    lines = text.splitlines()
    code = _code_lines(lines)
    spans = []
    for i, line in enumerate(lines):
        match = _DEF.match(line)
        if not match or not code[i] or line.rstrip().endswith(";"):
            continue
        indent, end = len(match.group(1)), i
        for j in range(i + 1, len(lines)):
            text_j = lines[j]
            if not code[j]:
                continue
            if len(text_j) - len(text_j.lstrip()) <= indent and text_j.lstrip()[:1] not in ")]":
                break
            end = j
        spans.append((match.group(2), i + 1, end + 1))
    return spans


@pytest.mark.parametrize(
    "path", [p for p in SOURCES if p.suffix in (".py", ".pyx", ".pxd")] + SCRIPTS, ids=_relative)
def test_function_size(path):
    text = path.read_text()
    spans = _python_spans(text) if path.suffix == ".py" else _cython_spans(text)
    long = [f"{name} (lines {a}-{b}: {b - a + 1})" for name, a, b in spans
            if b - a + 1 > MAX_FUNCTION_LINES]
    assert not long, f"{_relative(path)}: {', '.join(long)}"


def test_function_spans_see_every_definition_form():
    body = "\n".join(["    x = 1"] * 200)
    for head in ("cpdef double f(x):", "cpdef inline int f(x):", "cdef cnp.ndarray f(x):",
                 "cdef unsigned char[::1] f(x):", "cdef float64_t *f(x) noexcept nogil:",
                 "cdef inline void f(\n        int x) noexcept nogil:", "def f(x):"):
        source = f"{head}\n    \"\"\"Doc.\n\nflush-left text inside the docstring\"\"\"\n{body}\n"
        (name, first, last), = _cython_spans(source)
        assert (name, first) == ("f", 1) and last - first + 1 > MAX_FUNCTION_LINES, head
    assert _cython_spans("cdef class A:\n    cdef int n\ncdef struct S:\n    int x\n") == []


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
