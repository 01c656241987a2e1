"""The parts of ``bench_kernel.py`` (the Mondrian kernel experiments on cpu_act), by concern.

``models``
    The data (cpu_act scaled, with its validation part), the models every experiment fits
    (Mondrian kernel ridge, random features with a ridge, exact Laplace kernel ridge) and the
    choice of ``alpha``.
``search``
    Fig. 8: the Mondrian lifetime path (with the time axis of its capped re-runs) against the
    refitting width searches, and the tables and targets of that part.
``sgd``
    Fig. 8 again with every model trained by SGD (the paper's protocol).
``fig6``
    Fig. 6: test error against the number of non-zero features per point.
``plots``
    The PNG files of both figures.

The script itself (``bench_kernel.py``) keeps the command line and the order of the report.
"""
