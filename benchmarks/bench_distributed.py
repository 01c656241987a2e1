"""Mondrian forests on a dask LocalCluster (2 worker processes, 1 thread each).

Three experiments, each against its single-process counterpart:

stream
    A synthetic stream of ``--rows`` rows x 20 features (default 2M), a dask array whose blocks
    of ``--chunk`` rows are generated on the workers from their block index (never
    materialised in one process), learnt by ``mondrian.dask.stream_partial_fit`` on one worker.
    Reported: rows/s, the peak RSS of each worker (the one holding the model, the other one
    generating blocks), the model's size and bytes per stored sample. The online forest stores
    every point, so its memory grows linearly with the stream; the streaming overhead (blocks
    in flight) is bounded. A finite lifetime and few trees keep the model small.
tree-parallel
    ``fit_tree_parallel`` (2 parts) vs ``fit`` in one process, on letter (15000 rows, skipped
    without the datasets folder) and on a synthetic ``--big-rows`` x 10 set (default 300k):
    wall time (median of interleaved repeats), accuracy (must be identical: the same trees),
    bytes shipped per sub-forest and of the data sent to a worker.

Run from the repository root::

    nice python benchmarks/bench_distributed.py            # full run
    nice python benchmarks/bench_distributed.py --quick    # 200k-row stream, 30k-row set

A full run writes ``benchmarks/results/distributed.md`` (``--output`` elsewhere), keeping the
hand-written "On paper" section at its end.
"""

from __future__ import annotations

import pickle
import resource
import statistics
import time
from pathlib import Path

import numpy as np
from shared.cli import add_output_options, add_sized, make_parser, parse_args
from shared.datasets import datasets_dir, load_letter
from shared.report import Report, environment_line, load_line, log

N_FEATURES = 20
PAPER = "## On paper:"
BIG_FEATURES = 10


def _block(index, n_rows, n_features):
    """Block ``index`` of the synthetic stream: uniform inputs, a noisy linear label."""
    rng = np.random.default_rng(1000 + index)
    X = rng.random((n_rows, n_features))
    y = (X[:, :3].sum(axis=1) + 0.2 * rng.normal(size=n_rows) > 1.5).astype(np.int64)
    return X, y


def _block_X(index, n_rows, n_features):
    return _block(index, n_rows, n_features)[0]


def _block_y(index, n_rows, n_features):
    return _block(index, n_rows, n_features)[1]


def _stream_arrays(n_rows, chunk, n_features):
    import dask
    import dask.array as da

    sizes = [min(chunk, n_rows - start) for start in range(0, n_rows, chunk)]
    X = da.concatenate([
        da.from_delayed(dask.delayed(_block_X)(i, n, n_features), shape=(n, n_features),
                        dtype=np.float64) for i, n in enumerate(sizes)])
    y = da.concatenate([
        da.from_delayed(dask.delayed(_block_y)(i, n, n_features), shape=(n,), dtype=np.int64)
        for i, n in enumerate(sizes)])
    return X, y


def _rss():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _peak_rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class _Report:
    """Sections, text and list-of-rows tables on top of the shared report."""

    def __init__(self):
        self.report = Report()

    def section(self, title):
        self.report.add(f"\n## {title}\n")

    def text(self, text):
        self.report.add(text + "\n")

    def table(self, rows):
        header = [str(c) for c in rows[0]]
        self.report.table([dict(zip(header, map(str, row), strict=True)) for row in rows[1:]],
                          columns=header)
        self.report.add("")

    def write(self, path):
        # The "On paper" projection at the end of the report is written by hand from the
        # figures: a rerun rewrites the measured part above it and keeps it.
        kept = ""
        if path is not None and Path(path).exists():
            text = Path(path).read_text()
            if PAPER in text:
                kept = text[text.index(PAPER):]
        if kept:
            self.report.add(kept.rstrip("\n"))
        self.report.write(path)


def _mb(n_bytes):
    return f"{n_bytes / 2**20:.0f} MB"


def run_stream(client, args, report):
    from mondrian import MondrianForestClassifier
    from mondrian.dask import stream_partial_fit

    X, y = _stream_arrays(args.rows, args.chunk, N_FEATURES)
    before = client.run(_rss)
    estimator = MondrianForestClassifier(args.stream_trees, lifetime=args.stream_lifetime,
                                         random_state=0)
    log(f"stream: {args.rows} rows in blocks of {args.chunk}")
    start = time.perf_counter()
    future = stream_partial_fit(estimator, X, y, classes=[0, 1], client=client,
                                return_future=True)
    future.result  # noqa: B018 (the future is complete: stream_partial_fit waited for it)
    elapsed = time.perf_counter() - start
    holder = sorted(client.who_has(future)[future.key])[0]
    peaks = client.run(_peak_rss)
    model_bytes = client.submit(lambda m: len(pickle.dumps(m)), future).result()
    X_test, y_test = _block(10**6, 20000, N_FEATURES)
    accuracy = client.submit(lambda m: float(m.score(X_test, y_test)), future).result()
    n_nodes = client.submit(lambda m: [t.node_count for t in m._trees], future).result()
    del future
    rows = [["worker", "role", "RSS before", "peak RSS", "peak - before"]]
    for address in sorted(peaks):
        role = "holds the model" if address == holder else "generates blocks"
        rows.append([address.split(":")[-1], role, _mb(before[address]), _mb(peaks[address]),
                     _mb(peaks[address] - before[address])])
    store = args.rows * (N_FEATURES + 2) * 8
    report.section("Streaming a dask array through partial_fit (stream_partial_fit)")
    report.text(
        f"{args.rows:,} rows x {N_FEATURES} features in blocks of {args.chunk:,} rows "
        f"({args.rows * N_FEATURES * 8 / 2**30:.2f} GiB of inputs), generated block by block on "
        f"the workers; MondrianForestClassifier({args.stream_trees} trees, "
        f"lifetime={args.stream_lifetime}), classes=[0, 1], prefetch=2."
    )
    report.table([
        ["rows", "wall time", "rows / s", "model (pickled)", "bytes / sample",
         "store part", "nodes per tree", "accuracy (20k held-out rows)"],
        [f"{args.rows:,}", f"{elapsed:.1f} s", f"{args.rows / elapsed:,.0f}", _mb(model_bytes),
         f"{model_bytes / args.rows:.0f}", f"{store / args.rows:.0f}",
         f"{int(np.mean(n_nodes)):,}", f"{accuracy:.4f}"],
    ])
    report.table(rows)
    return {"rows_per_s": args.rows / elapsed, "bytes_per_sample": model_bytes / args.rows,
            "peaks": peaks, "before": before, "holder": holder, "model_bytes": model_bytes}


def _big_set(n_rows, seed):
    rng = np.random.default_rng(seed)
    X = rng.random((n_rows, BIG_FEATURES))
    y = ((X[:, 0] - 0.5) * (X[:, 1] - 0.5) + 0.1 * np.sin(8 * X[:, 2])
         + 0.05 * rng.normal(size=n_rows) > 0).astype(np.int64)
    return X, y


def run_tree_parallel(client, args, report):
    import distributed

    from mondrian import MondrianForestClassifier
    from mondrian.dask import _fit_part, fit_tree_parallel
    from mondrian.merging import _merge, forest_parts

    cases = []
    if (datasets_dir() / "letter.csv.gz").exists():
        data = load_letter()
        cases.append(("letter", data.X_train, data.y_train, data.X_test, data.y_test,
                       args.letter_trees, np.inf, args.repeats))
    else:
        log("letter skipped: no datasets folder")
    X, y = _big_set(args.big_rows, 0)
    X_test, y_test = _big_set(20000, 1)
    cases.append((f"synthetic {args.big_rows // 1000}k x {BIG_FEATURES}", X, y, X_test, y_test,
                  args.big_trees, args.big_lifetime, 1))
    rows = [["data set", "trees", "lifetime", "one process", "2 workers", "speed-up",
             "accuracy (one / 2 workers)", "identical", "bytes per sub-forest",
             "data sent per worker"]]
    steps = [["data set", "fit parts (workers, in parallel, incl. pickling)",
              "gather to the client", "unpickle + merge", "gather throughput"]]
    for name, X, y, X_test, y_test, n_trees, lifetime, repeats in cases:
        log(f"tree-parallel: {name}")
        estimator = MondrianForestClassifier(n_trees, lifetime=lifetime, random_state=0)
        local_times, cluster_times = [], []
        for _ in range(repeats):  # interleaved
            start = time.perf_counter()
            local = MondrianForestClassifier(**estimator.get_params()).fit(X, y)
            local_times.append(time.perf_counter() - start)
            local_pred = local.predict(X_test)
            del local
            start = time.perf_counter()
            merged = fit_tree_parallel(estimator, X, y, n_parts=2, client=client)
            cluster_times.append(time.perf_counter() - start)
            merged_pred = merged.predict(X_test)
            del merged
        # The helper's steps timed one by one (same calls as fit_tree_parallel).
        workers = sorted(client.scheduler_info()["workers"])
        [X_future] = client.scatter([X], broadcast=True)
        [y_future] = client.scatter([y], broadcast=True)
        start = time.perf_counter()
        futures = [client.submit(_fit_part, pickle.dumps(part), X_future, y_future, pure=False,
                                 workers=[workers[k % len(workers)]])
                   for k, part in enumerate(forest_parts(estimator, 2))]
        distributed.wait(futures)
        t_fit = time.perf_counter() - start
        start = time.perf_counter()
        blobs = client.gather(futures)
        t_gather = time.perf_counter() - start
        start = time.perf_counter()
        merged = _merge([pickle.loads(blob) for blob in blobs], copy_parts=False)
        t_merge = time.perf_counter() - start
        sizes = [len(blob) for blob in blobs]
        del futures, blobs, merged, X_future, y_future
        steps.append([name, f"{t_fit:.1f} s", f"{t_gather:.1f} s", f"{t_merge:.1f} s",
                      f"{sum(sizes) / 2**20 / max(t_gather, 1e-9):.0f} MB/s"])
        t_local, t_cluster = statistics.median(local_times), statistics.median(cluster_times)
        rows.append([name, n_trees, f"{lifetime:g}", f"{t_local:.1f} s", f"{t_cluster:.1f} s",
                     f"{t_local / t_cluster:.2f}",
                     f"{np.mean(local_pred == y_test):.4f} / {np.mean(merged_pred == y_test):.4f}",
                     "yes" if np.array_equal(local_pred, merged_pred) else "NO",
                     " + ".join(_mb(s) for s in sizes), _mb(X.nbytes + y.nbytes)])
    report.section("Tree-parallel fit (fit_tree_parallel, 2 parts) vs one process")
    report.text(f"Median of interleaved repeats ({args.repeats} for letter, 1 for the synthetic "
                "set); the same random_state, so the same trees.")
    report.table(rows)
    report.text("Where the time goes (one run of the helper's steps, timed separately):")
    report.table(steps)


def main(argv=None):
    parser = make_parser(__doc__.splitlines()[0], default_repeats=3)
    add_sized(parser, "--rows", 2_000_000, 200_000, "rows of the synthetic stream")
    add_sized(parser, "--chunk", 50_000, 20_000, "rows per block of the stream")
    add_sized(parser, "--big-rows", 300_000, 30_000, "rows of the synthetic tree-parallel set")
    parser.add_argument("--stream-trees", type=int, default=3)
    parser.add_argument("--stream-lifetime", type=float, default=0.5)
    parser.add_argument("--letter-trees", type=int, default=20)
    parser.add_argument("--big-trees", type=int, default=8)
    parser.add_argument("--big-lifetime", type=float, default=np.inf)
    parser.add_argument("--parts", default="stream,tree-parallel")
    parser.add_argument("--memory-limit", default="2.5GB", help="per worker")
    add_output_options(parser, "distributed.md", plots=False)
    args = parse_args(parser, argv)

    import os

    import distributed

    load_start = os.getloadavg()
    report = _Report()
    report.report.add("# Mondrian forests on a dask LocalCluster\n")
    report.text(environment_line() + f"; dask.distributed {distributed.__version__}; "
                "LocalCluster(n_workers=2, threads_per_worker=1, processes=True, "
                f"memory_limit={args.memory_limit!r}).")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  memory_limit=args.memory_limit,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        # Workers import the package once (a real cluster pays this once, not per fit).
        client.run(lambda: __import__("mondrian.dask") and None)
        if "stream" in args.parts:
            run_stream(client, args, report)
        if "tree-parallel" in args.parts:
            run_tree_parallel(client, args, report)
    report.text(f"Machine: {load_line(load_start)} (a shared 2-core machine: the two workers "
                "compete with other jobs, so wall times are indicative; ratios are what they are).")
    report.write(args.output)


if __name__ == "__main__":
    main()
