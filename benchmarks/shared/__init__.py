"""Small helpers shared by the benchmark scripts (``benchmarks/bench_*.py``).

One module per concern; each script imports only the modules it needs:

``datasets``
    The offline datasets folder (a clean skip when it is absent), loaders with the train/test
    splits of the literature, training-row subsampling, rows as dicts for river.
``measure``
    Wall-clock time (median of repeats), peak memory of one call in a fresh subprocess, pickled
    model size, fitting a fresh clone.
``metrics``
    Test metrics used by more than one script (RMSE, Gaussian NLL).
``report``
    Markdown tables, target checks, progress messages, the environment line and
    :class:`~shared.report.Report` (printed as it goes, optionally written to a file).
``figures``
    matplotlib (Agg) when it imports, where the plots go and how they are saved.
``optional``
    Imports of the package under benchmark and of optional peer libraries (river, onelearn).
``cli``
    The command-line conventions of every script (``--quick``, ``--seed``, ``--repeats``, options
    whose default depends on ``--quick``, ``--output`` / ``--no-plots``).

Importing this package puts ``<repo>/src`` first on ``sys.path``, so the scripts run the in-place
build of the checkout (``python setup.py build_ext --inplace``) without installing it, unless
``PYTHONPATH`` names a folder holding a ``mondrian`` package: then that build is the one timed
(``PYTHONPATH=/other/checkout/src python benchmarks/bench_forget.py`` measures the other build).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent.parent
REPO_ROOT = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"

_SRC_DIR = REPO_ROOT / "src"
_CHOSEN = any((Path(entry) / "mondrian" / "__init__.py").is_file()
              for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry)
if not _CHOSEN and str(_SRC_DIR) not in sys.path:
    sys.path.insert(1, str(_SRC_DIR))
