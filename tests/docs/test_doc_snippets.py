"""Every Python snippet of the documentation runs as written, and so does every docstring example.

Each ```python block of README.md and docs/*.md is run on its own (one test per block, named by
file and line), in a fresh namespace and a temporary working directory, so every block must be
self-contained: its imports, its data (bundled scikit-learn datasets or synthetic arrays) and
its files. The numpydoc ``Examples`` sections of the package's modules run through ``doctest``
(one test per module), against the installed package.
"""

import doctest
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import mondrian

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def _snippets():
    """(id, source) of every ```python block, the id being "<file>:<line of the fence>"."""
    found = []
    for document in DOCUMENTS:
        if not document.exists():  # e.g. an installed copy of the tests without the docs
            continue
        text = document.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(pytest.param(match.group(1), id=f"{document.name}:{line}"))
    return found


SNIPPETS = _snippets()


@pytest.mark.skipif(not SNIPPETS, reason="README.md and docs/ are not next to the tests")
@pytest.mark.parametrize("source", SNIPPETS)
def test_documentation_snippet_runs(source, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # snippets that save files write them here
    code = compile(source, "<snippet>", "exec")
    exec(code, {"__name__": "__snippet__"})


def _modules():
    """Names of the package's modules (``__main__`` excluded: importing it runs the CLI)."""
    names = [mondrian.__name__]
    for info in pkgutil.walk_packages(mondrian.__path__, prefix="mondrian."):
        if not info.name.endswith("__main__"):
            names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(module, name, globs={}):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
