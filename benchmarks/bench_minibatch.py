"""Mini-batch benchmark: 100 ``partial_fit`` mini-batches against one batch ``fit``, and against
refitting ExtraTrees / RandomForest after every batch (the mini-batch table of the Mondrian
forest paper), on letter, satimage, usps and dna.

The training rows are cut, in file order, into ``--batches`` (100) equal consecutive batches.

fit vs partial_fit
    CPU time (``time.process_time``) of one ``MondrianForestClassifier.fit`` on all the rows and
    of the sequence of ``partial_fit`` calls, ``--trees`` trees each, the two interleaved, medians
    of ``--repeats`` runs; also the mean cost of a call over the first and the last tenth of the
    calls (the growth of a call's cost with the stored points).
refits (the paper's table)
    Cumulative CPU time of the online forest over the batches against refitting scikit-learn's
    ``ExtraTreesClassifier`` and ``RandomForestClassifier`` on all the rows seen after every
    batch, ``--refit-trees`` trees each (n_jobs=1), one run, and the test accuracy at the end.

Run from the repository root::

    python benchmarks/bench_minibatch.py                # full run, writes the report
    python benchmarks/bench_minibatch.py --quick        # dna and satimage, 10 batches
    python benchmarks/bench_minibatch.py --datasets letter --trees 100 --refit-trees 100
    python benchmarks/bench_minibatch.py --no-refits --output /tmp/fit_only.md

A full run writes ``benchmarks/results/minibatch.md`` (``--output`` elsewhere).
"""

from __future__ import annotations

import statistics
import time

import numpy as np
from shared.cli import add_datasets, add_output_options, add_sized, make_parser, parse_args
from shared.datasets import CLASSIFICATION_LOADERS, require_datasets
from shared.optional import import_mondrian
from shared.report import log, titled_report
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier

DATASETS = ("letter", "satimage", "usps", "dna")
FIT_COLUMNS = ["dataset", "rows", "trees", "fit (s)", "partial_fit total (s)", "partial / fit",
               "first tenth (s/call)", "last tenth (s/call)", "last / first"]
FIT_FORMATS = {"fit (s)": ".3f", "partial_fit total (s)": ".3f", "partial / fit": ".2f",
               "first tenth (s/call)": ".4f", "last tenth (s/call)": ".4f",
               "last / first": ".2f"}
REFIT_COLUMNS = ["dataset", "model", "update", "trees", "total time (s)", "vs online",
                 "test accuracy"]
REFIT_FORMATS = {"total time (s)": ".2f", "vs online": ".1f", "test accuracy": ".4f"}


def batch_bounds(n, n_batches):
    edges = np.linspace(0, n, n_batches + 1).astype(int)
    return list(zip(edges[:-1], edges[1:], strict=True))


def run_online(mondrian, data, trees, bounds, seed):
    """The partial_fit calls' CPU times and the fitted model."""
    model = mondrian.MondrianForestClassifier(trees, random_state=seed, n_jobs=1)
    classes = np.unique(data.y_train)
    calls = []
    for a, b in bounds:
        start = time.process_time()
        model.partial_fit(data.X_train[a:b], data.y_train[a:b], classes=classes)
        calls.append(time.process_time() - start)
    return np.array(calls), model


def run_fit(mondrian, data, trees, seed):
    model = mondrian.MondrianForestClassifier(trees, random_state=seed, n_jobs=1)
    start = time.process_time()
    model.fit(data.X_train, data.y_train)
    return time.process_time() - start


def bench_fit(mondrian, data, trees, bounds, repeats, seed):
    fits, onlines, firsts, lasts = [], [], [], []
    tenth = max(1, len(bounds) // 10)
    for r in range(repeats):
        log(f"{data.name}: fit vs partial_fit, repeat {r + 1}/{repeats}")
        fits.append(run_fit(mondrian, data, trees, seed))
        calls, _ = run_online(mondrian, data, trees, bounds, seed)
        onlines.append(calls.sum())
        firsts.append(calls[:tenth].mean())
        lasts.append(calls[-tenth:].mean())
    fit, online = statistics.median(fits), statistics.median(onlines)
    first, last = statistics.median(firsts), statistics.median(lasts)
    return {"dataset": data.name, "rows": len(data.y_train), "trees": trees, "fit (s)": fit,
            "partial_fit total (s)": online, "partial / fit": online / fit,
            "first tenth (s/call)": first, "last tenth (s/call)": last,
            "last / first": last / first}


def bench_refits(mondrian, data, trees, refit_trees, bounds, seed):
    log(f"{data.name}: online vs refits")
    calls, model = run_online(mondrian, data, trees, bounds, seed)
    online = calls.sum()
    rows = [{"dataset": data.name, "model": "MondrianForest", "update": "partial_fit",
             "trees": trees, "total time (s)": online, "vs online": 1.0,
             "test accuracy": model.score(data.X_test, data.y_test)}]
    for name, cls in (("ExtraTrees", ExtraTreesClassifier),
                      ("RandomForest", RandomForestClassifier)):
        total, refit = 0.0, None
        for _, b in bounds:
            refit = cls(n_estimators=refit_trees, n_jobs=1, random_state=seed)
            start = time.process_time()
            refit.fit(data.X_train[:b], data.y_train[:b])
            total += time.process_time() - start
        rows.append({"dataset": data.name, "model": name, "update": "refit on all seen",
                     "trees": refit_trees, "total time (s)": total,
                     "vs online": total / online * trees / refit_trees,
                     "test accuracy": refit.score(data.X_test, data.y_test)})
    return rows


def main(argv=None):
    parser = make_parser(__doc__.splitlines()[0])
    add_datasets(parser, DATASETS, quick=("satimage", "dna"))
    add_sized(parser, "--batches", 100, 10, "mini-batches")
    add_sized(parser, "--trees", 100, 10, "trees of the Mondrian forests")
    add_sized(parser, "--refit-trees", 100, 10, "trees of each refitted forest")
    parser.add_argument("--no-refits", action="store_true",
                        help="only fit vs partial_fit (skip the refits' table)")
    add_output_options(parser, "minibatch.md", plots=False)
    args = parse_args(parser, argv)
    require_datasets()
    mondrian, reason = import_mondrian()
    if mondrian is None:
        raise SystemExit(reason)
    report = titled_report(
        "Mini-batches: partial_fit vs fit vs refits", args.quick,
        f"{args.batches} consecutive batches in file order; CPU times; n_jobs=1; fit vs "
        f"partial_fit: medians of {args.repeats} interleaved runs. Refits: one run; `vs online` "
        "is the refits' time over the online forest's, per tree (times the ratio of tree "
        "counts when they differ).")
    fit_rows, refit_rows = [], []
    for name in args.datasets:
        data = CLASSIFICATION_LOADERS[name]()
        bounds = batch_bounds(len(data.y_train), args.batches)
        fit_rows.append(bench_fit(mondrian, data, args.trees, bounds, args.repeats, args.seed))
        if not args.no_refits:
            refit_rows += bench_refits(mondrian, data, args.trees, args.refit_trees, bounds,
                                       args.seed)
    report.table(fit_rows, FIT_COLUMNS, FIT_FORMATS, title="fit vs partial_fit")
    if refit_rows:
        report.table(refit_rows, REFIT_COLUMNS, REFIT_FORMATS,
                     title="Online vs refitting after every batch")
    report.write(args.output)


if __name__ == "__main__":
    main()
