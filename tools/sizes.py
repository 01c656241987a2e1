"""List the modules and functions over the project's size limits.

The project's standards: no source module over 800 lines, no function over 150.
Python files are measured with :mod:`ast` (a function spans its decorators to its last line);
Cython files (``.pyx``, ``.pxd``) by indentation: a ``def``, ``cdef`` or ``cpdef`` line that
opens a block (``:`` at its end, also over continuation lines) runs until the next non-blank
line indented at most as deep. Generated C is never read.

Run from the repository root::

    python tools/sizes.py                      # src tests benchmarks tools: 800 / 150 lines
    python tools/sizes.py --module-lines 750   # the modules close to the limit too
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

SUFFIXES = (".py", ".pyx", ".pxd")
CYTHON_DEF = re.compile(r"^(\s*)(?:cdef|cpdef|def)\b(?!\s+class\b)[^=]*\(")


def python_functions(text: str) -> list[tuple[str, int, int]]:
    """``(qualified name, first line, last line)`` of every function of a Python module."""
    found = []

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                    found.append((name, first, child.end_lineno))
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(text), "")
    return found


def cython_functions(text: str) -> list[tuple[str, int, int]]:
    """``(name, first line, last line)`` of every function body of a Cython module."""
    lines = text.splitlines()
    found = []
    i = 0
    while i < len(lines):
        code = lines[i].split("#")[0]  # parentheses in a comment open no signature
        match = CYTHON_DEF.match(code)
        name = re.search(r"(\w+)\s*\(", code) if match else None
        if name is None:
            i += 1
            continue
        indent, name = len(match.group(1)), name.group(1)
        head = i
        depth = code.count("(") - code.count(")")
        while depth > 0 and head + 1 < len(lines):  # the signature's continuation lines
            head += 1
            tail = lines[head].split("#")[0]
            depth += tail.count("(") - tail.count(")")
        if not lines[head].split("#")[0].rstrip().endswith(":"):
            i = head + 1  # a declaration (.pxd, extern), not a body
            continue
        end = head
        for j in range(head + 1, len(lines)):
            stripped = lines[j].strip()
            if not stripped or stripped.startswith("#"):
                continue
            if len(lines[j]) - len(lines[j].lstrip()) <= indent:
                break
            end = j
        found.append((name, i + 1, end + 1))
        i = head + 1
    return found


def scan(roots: list[str], module_lines: int, function_lines: int) -> tuple[list, list]:
    """The modules over ``module_lines`` and the functions over ``function_lines`` lines."""
    modules, functions = [], []
    for root in roots:
        paths = [Path(root)] if Path(root).is_file() else sorted(Path(root).rglob("*"))
        for path in paths:
            if path.suffix not in SUFFIXES or "build" in path.parts:
                continue
            text = path.read_text()
            n = len(text.splitlines())
            if n > module_lines:
                modules.append((n, str(path)))
            spans = python_functions(text) if path.suffix == ".py" else cython_functions(text)
            for name, first, last in spans:
                if last - first + 1 > function_lines:
                    functions.append((last - first + 1, f"{path}:{first}", name))
    return sorted(modules, reverse=True), sorted(functions, reverse=True)


def main(argv=None) -> int:
    """Print the modules and functions over the limits; exit 1 when there is any."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="*", default=["src", "tests", "benchmarks", "tools"])
    parser.add_argument("--module-lines", type=int, default=800)
    parser.add_argument("--function-lines", type=int, default=150)
    args = parser.parse_args(argv)
    modules, functions = scan(args.roots, args.module_lines, args.function_lines)
    print(f"modules over {args.module_lines} lines: {len(modules)}")
    for n, path in modules:
        print(f"  {n:5d}  {path}")
    print(f"functions over {args.function_lines} lines: {len(functions)}")
    for n, where, name in functions:
        print(f"  {n:5d}  {where}  {name}")
    return 1 if modules or functions else 0


if __name__ == "__main__":
    sys.exit(main())
