"""Every public name has a runnable docstring example.

``test_doc_snippets.py`` runs the docstring examples module by module; this test goes by public
name (``mondrian.__all__`` and the subpackages' ``__all__``): the name's own docstring must hold
an ``Examples`` section, and every example of the name (its methods and properties included)
must pass.
"""

import doctest
import importlib

import pytest

PACKAGES = ["mondrian", "mondrian.forest", "mondrian.density", "mondrian.kernel",
            "mondrian.partition"]


def _public_names():
    seen, names = set(), []
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if name.startswith("__") or id(obj) in seen:
                continue
            seen.add(id(obj))
            names.append(pytest.param(package, name, id=f"{package}.{name}"))
    return names


@pytest.mark.parametrize("package, name", _public_names())
def test_public_name_has_a_running_example(package, name):
    obj = getattr(importlib.import_module(package), name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    tests = finder.find(obj, name, globs={})
    own = [t for t in tests if t.name == name]
    assert own and own[0].examples, f"{package}.{name} has no Examples section"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"
