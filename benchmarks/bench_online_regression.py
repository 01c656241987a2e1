"""Online regression benchmark: MondrianForestRegressor vs river's AMFRegressor, one sample at a
time (prequential: predict, then learn), 10 trees each.

kin8nm
    The first ``--n`` (8000) rows of kin8nm in file order, raw features for both models: mondrian
    ``predict_one`` + ``learn_one`` on 1-D numpy rows, river ``AMFRegressor(n_estimators=10)``
    on dict rows (built before timing). Reports the CPU time of the whole loop, its rate, the
    rate over the first and the last tenth of the stream, and the prequential MAE (samples
    2..n).
river
    river's bundled TrumpApproval and ChickWeights through the same pipeline for both,
    ``StandardScaler() | model`` (mondrian through ``mondrian.river.RiverRegressor``),
    progressive validation (``river.evaluate.progressive_val_score``, MAE).

Runs are interleaved (each repeat runs every model once) and the medians of the CPU times
(``time.process_time``) are reported, with the ratios measured in the same run. Run from the
repository root::

    python benchmarks/bench_online_regression.py             # full run, writes the report
    python benchmarks/bench_online_regression.py --quick     # 1000 kin8nm rows, 1 repeat

A full run writes ``benchmarks/results/online_regression.md`` (``--output`` elsewhere).
"""

from __future__ import annotations

import statistics
import time

import numpy as np
from shared.cli import add_output_options, add_sized, make_parser, parse_args
from shared.datasets import load_xy, require_datasets, rows_as_dicts
from shared.optional import import_mondrian, optional_import
from shared.report import log, titled_report

N_TREES = 10
COLUMNS = ["stream", "samples", "model", "MAE", "CPU time (s)", "samples/s", "vs river",
           "first tenth (samples/s)", "last tenth (samples/s)", "last / first"]
FORMATS = {"MAE": ".4f", "CPU time (s)": ".2f", "samples/s": ".0f", "vs river": ".2f",
           "first tenth (samples/s)": ".0f", "last tenth (samples/s)": ".0f",
           "last / first": ".2f"}
RIVER = "river AMFRegressor"
MONDRIAN = "mondrian MondrianForestRegressor"


def prequential(model, rows, targets, predict, learn):
    """Predict then learn every sample; the absolute errors (samples 2..n) and the CPU time of
    each tenth of the stream."""
    n = len(targets)
    errors = np.zeros(n - 1)
    bounds = np.linspace(0, n, 11).astype(int)
    tenths = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        start = time.process_time()
        for i in range(a, b):
            if i:
                errors[i - 1] = abs(predict(model, rows[i]) - targets[i])
            learn(model, rows[i], targets[i])
        tenths.append(time.process_time() - start)
    return errors, np.array(tenths)


def kin8nm_learners(seed):
    mondrian, reason = import_mondrian()
    if mondrian is None:
        raise SystemExit(reason)
    river_forest, _ = optional_import("river.forest")
    learners = {MONDRIAN: (
        lambda: mondrian.MondrianForestRegressor(N_TREES, random_state=seed), "array",
        lambda m, x: m.predict_one(x), lambda m, x, y: m.learn_one(x, y))}
    if river_forest is not None:
        learners[RIVER] = (
            lambda: river_forest.AMFRegressor(n_estimators=N_TREES, seed=seed), "dict",
            lambda m, x: m.predict_one(x), lambda m, x, y: m.learn_one(x, y))
    return learners


def bench_kin8nm(n, repeats, seed):
    X, y, names = load_xy("kin8nm", classification=False)
    X, y = X[:n], y[:n]
    inputs = {"array": list(X), "dict": rows_as_dicts(X, names)}
    targets = [float(v) for v in y]
    learners = kin8nm_learners(seed)
    runs = {name: [] for name in learners}
    for r in range(repeats):
        for name, (make, kind, predict, learn) in learners.items():
            log(f"kin8nm repeat {r + 1}/{repeats}: {name}")
            errors, tenths = prequential(make(), inputs[kind], targets, predict, learn)
            runs[name].append((float(np.mean(errors)), tenths))
    rows = []
    for name, results in runs.items():
        total = statistics.median(float(t.sum()) for _, t in results)
        first = statistics.median(float(t[0]) for _, t in results)
        last = statistics.median(float(t[-1]) for _, t in results)
        tenth = n / 10
        rows.append({"stream": "kin8nm (raw features)", "samples": n, "model": name,
                     "MAE": results[0][0], "CPU time (s)": total, "samples/s": n / total,
                     "first tenth (samples/s)": tenth / first,
                     "last tenth (samples/s)": tenth / last, "last / first": first / last})
    return _vs_river(rows)


def _vs_river(rows):
    river = {r["stream"]: r["samples/s"] for r in rows if r["model"] == RIVER}
    for r in rows:
        if r["stream"] in river:
            r["vs river"] = r["samples/s"] / river[r["stream"]]
    return rows


def bench_river_sets(repeats, seed):
    river, _ = optional_import("river")
    if river is None:
        log("river is not installed: the river streams are skipped")
        return []
    from river import datasets, evaluate, forest, metrics, preprocessing

    from mondrian import MondrianForestRegressor
    from mondrian.river import RiverRegressor

    makers = {RIVER: lambda: forest.AMFRegressor(n_estimators=N_TREES, seed=seed),
              MONDRIAN: lambda: RiverRegressor(MondrianForestRegressor(N_TREES,
                                                                       random_state=seed))}
    rows = []
    for label, dataset in (("TrumpApproval", datasets.TrumpApproval),
                           ("ChickWeights", datasets.ChickWeights)):
        stream = list(dataset())
        times = {name: [] for name in makers}
        scores = {}
        for r in range(repeats):
            for name, make in makers.items():
                log(f"{label} repeat {r + 1}/{repeats}: {name}")
                model = preprocessing.StandardScaler() | make()
                start = time.process_time()
                score = evaluate.progressive_val_score(stream, model, metrics.MAE())
                times[name].append(time.process_time() - start)
                scores[name] = score.get()
        for name in makers:
            total = statistics.median(times[name])
            rows.append({"stream": f"{label} (StandardScaler, then the model)",
                         "samples": len(stream), "model": name, "MAE": scores[name],
                         "CPU time (s)": total, "samples/s": len(stream) / total})
    return _vs_river(rows)


def main(argv=None):
    parser = make_parser(__doc__.splitlines()[0])
    add_sized(parser, "--n", 8000, 1000, "kin8nm rows streamed")
    add_output_options(parser, "online_regression.md", plots=False)
    args = parse_args(parser, argv)
    require_datasets()
    repeats = args.repeats
    report = titled_report(
        "Online regression: MondrianForestRegressor vs river AMFRegressor", args.quick,
        f"{N_TREES} trees each; prequential (predict, then learn); CPU times, medians of "
        f"{repeats} interleaved run(s); MAE of the first run (seeded: every run alike).")
    rows = bench_kin8nm(args.n, repeats, args.seed) + bench_river_sets(repeats, args.seed)
    report.table(rows, COLUMNS, FORMATS)
    report.write(args.output)


if __name__ == "__main__":
    main()
