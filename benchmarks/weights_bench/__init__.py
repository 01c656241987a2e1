"""The parts of ``bench_weights.py`` (label-aware feature weights, issue 12), by concern.

``rows``
    The datasets and forest size every task shares, and the raw rows: appended to
    ``results/weights_<task>.jsonl`` as they come, read back by the report.
``runners``
    The ``regression``, ``classification`` and ``online`` tasks (and the joint-search
    regressors of ``--methods auto_joint``).
``diagnose``
    The ``diagnose`` task: variants that locate the gap to the random forest.
``tables``
    The ``report`` task: the tables of ``results/weights.md`` from the raw rows.
``notes``
    The measured notes that the report appends below its tables.

The script itself (``bench_weights.py``) keeps the command line.
"""
