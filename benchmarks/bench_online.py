"""Online classification benchmark on letter: Mondrian forest vs river / onelearn AMF and refits.

Two experiments, both on the letter training rows in file order:

stream
    Test-then-train (prequential) over the first 15000 rows, one sample at a time, 10 trees.
    Each sample is first predicted, then learned; the first sample is only learned, so accuracy
    is over samples 2..n. Models: mondrian with ``predict_one`` + ``learn_one`` (1-D numpy rows),
    mondrian with ``predict(X[i:i+1])`` + ``partial_fit(X[i:i+1], y[i:i+1])``, river's
    ``AMFClassifier`` (dict rows, built before timing) and onelearn's ``AMFClassifier`` when it
    imports, and the Mondrian forest behind ``mondrian.river.RiverClassifier`` (dict rows). Every
    model is warmed up on a few rows first (onelearn compiles with numba); the timed runs are
    interleaved (each repeat runs every model once) and the median of the repeats' CPU times
    (``time.process_time``, the loop alone) is reported.
batches
    100 growing mini-batches of 150 rows (batch b = rows ``[150 b, 150 (b + 1))``): mondrian
    ``partial_fit`` on each new batch vs refitting ``RandomForestClassifier`` on all rows seen so
    far after each batch (100 trees, ``n_jobs=1``), then accuracy on the 5000 letter test rows.

Run from the repository root::

    python benchmarks/bench_online.py            # full run
    python benchmarks/bench_online.py --quick    # 1000 stream samples; 10 batches of 10 trees
    python benchmarks/bench_online.py --parts stream --n 5000
    python benchmarks/bench_online.py --parts stream --baseline /tmp/main/src

``--baseline DIR`` (repeatable) adds the two mondrian stream loops run on another build of the
package (the ``src`` folder of a built checkout, e.g. the main branch before a change, and the
current one, so that both run alike): each timed run is a subprocess that imports mondrian from
``DIR`` and reports the time of its loop alone (imports and data loading excluded), interleaved
with the other learners, so a before/after comparison and its ratios to river come from one run
on a loaded machine.

A full run writes its report to ``benchmarks/results/online.md`` (``--output`` elsewhere).

``--profile MODE`` runs one untimed loop over the first ``--n`` rows for an instruction-count
profiler (deterministic on a shared machine): ``none`` learns the first two rows only (the
setup to subtract), ``learn`` then ``learn_one`` on every row, ``both`` ``predict_one`` and
``learn_one`` on every row (``both - learn`` is ``predict_one``; it does not change the model)::

    PYTHONHASHSEED=0 valgrind --tool=callgrind --callgrind-out-file=cg.both.out \
        python benchmarks/bench_online.py --parts stream --n 2000 --profile both
    callgrind_annotate cg.both.out | head -40
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from shared.cli import add_output_options, add_sized, make_parser, parse_args, parse_list
from shared.datasets import Dataset, load_letter, require_datasets, rows_as_dicts
from shared.measure import time_callable
from shared.optional import import_mondrian, import_onelearn, optional_import
from shared.report import Report, environment_line, log
from sklearn.ensemble import RandomForestClassifier

PARTS = ("stream", "batches")
WARMUP_ROWS = 20
BATCH_SIZE = 150
STREAM_COLUMNS = ["model", "inputs", "samples", "time (s)", "samples/s", "vs river", "accuracy"]
STREAM_FORMATS = {"time (s)": ".2f", "samples/s": ".0f", "vs river": ".2f", "accuracy": ".4f"}
BATCH_COLUMNS = [
    "model", "update", "batches", "rows seen", "total time (s)", "last update (s)",
    "time / MondrianForest", "test accuracy",
]
BATCH_FORMATS = {
    "total time (s)": ".2f", "last update (s)": ".3f", "time / MondrianForest": ".2f",
    "test accuracy": ".4f",
}
RIVER = "river AMFClassifier"
PROFILE_MODES = ("none", "learn", "both")
BASELINE_SRC = "MONDRIAN_BENCH_BASELINE_SRC"  # the worker's build (see worker)


@dataclass
class Stream:
    """One prequential stream, in every input format the learners need.

    Attributes
    ----------
    X : ndarray of shape (n, n_features)
        Rows as float64 (1-D rows are ``X[i]``).
    y : ndarray of shape (n,)
        Integer labels.
    labels : list of int
        ``y`` as Python ints (what the river-style ``learn_one`` receives).
    dicts : list of dict
        Rows as ``{feature_name: float}`` for river.
    classes : ndarray
        Every class of the dataset (for learners that must know them up front).
    """

    X: np.ndarray
    y: np.ndarray
    labels: list
    dicts: list
    classes: np.ndarray

    @classmethod
    def from_arrays(cls, X, y, feature_names, classes):
        """Build the stream, converting rows to dicts and labels to ints once, before timing."""
        return cls(np.ascontiguousarray(X, dtype=np.float64), y, [int(v) for v in y],
                   rows_as_dicts(X, feature_names), classes)

    def head(self, n: int) -> Stream:
        """The first ``n`` samples."""
        return Stream(self.X[:n], self.y[:n], self.labels[:n], self.dicts[:n], self.classes)


@dataclass
class StreamLearner:
    """A model of the prequential comparison.

    Attributes
    ----------
    name : str
    inputs : str
        How rows are fed, for the table.
    make : callable
        Returns a fresh, untrained model.
    run : callable
        ``run(model, stream) -> predictions``: the test-then-train loop (prediction of sample 0 is
        -1, since nothing was learned yet).
    timed : callable or None
        ``timed(stream) -> (seconds, predictions)`` for a learner that times itself (the
        baseline loops, run in a subprocess); None: ``run`` is timed here.
    """

    name: str
    inputs: str
    make: Callable
    run: Callable
    timed: Callable | None = None


# --------------------------------------------------------------------------------------------
# Test-then-train loops, one per API style
# --------------------------------------------------------------------------------------------


def run_learn_one_array(model, s: Stream) -> np.ndarray:
    """``predict_one`` then ``learn_one`` with 1-D numpy rows (mondrian)."""
    preds = np.full(len(s.y), -1, dtype=np.int64)
    X, labels = s.X, s.labels
    model.learn_one(X[0], labels[0])
    for i in range(1, len(labels)):
        preds[i] = model.predict_one(X[i])
        model.learn_one(X[i], labels[i])
    return preds


def run_learn_one_dict(model, s: Stream) -> np.ndarray:
    """``predict_one`` then ``learn_one`` with dict rows (river)."""
    preds = np.full(len(s.y), -1, dtype=np.int64)
    dicts, labels = s.dicts, s.labels
    model.learn_one(dicts[0], labels[0])
    for i in range(1, len(labels)):
        pred = model.predict_one(dicts[i])
        preds[i] = -1 if pred is None else pred
        model.learn_one(dicts[i], labels[i])
    return preds


def run_partial_fit(model, s: Stream) -> np.ndarray:
    """``predict`` then ``partial_fit`` on one-row 2-D slices (mondrian, scikit-learn style)."""
    preds = np.full(len(s.y), -1, dtype=np.int64)
    X, y = s.X, s.y
    model.partial_fit(X[0:1], y[0:1], classes=s.classes)
    for i in range(1, len(y)):
        preds[i] = model.predict(X[i : i + 1])[0]
        model.partial_fit(X[i : i + 1], y[i : i + 1])
    return preds


def run_onelearn(model, s: Stream) -> np.ndarray:
    """``predict_proba`` then ``partial_fit`` on one-row 2-D slices (onelearn)."""
    preds = np.full(len(s.y), -1, dtype=np.int64)
    X, y = s.X, s.y
    model.partial_fit(X[0:1], y[0:1])
    for i in range(1, len(y)):
        preds[i] = np.argmax(model.predict_proba(X[i : i + 1])[0])
        model.partial_fit(X[i : i + 1], y[i : i + 1])
    return preds


MONDRIAN_LOOPS = {"learn_one": run_learn_one_array, "partial_fit": run_partial_fit}
LOOP_INPUTS = {"learn_one": "learn_one(1-D array)", "partial_fit": "partial_fit(1-row 2-D array)"}


def worker(loop: str, n: int, n_estimators: int, seed: int) -> None:
    """Run one mondrian stream loop with the mondrian on ``sys.path``; print its time and
    predictions as JSON (the baseline learners' subprocess)."""
    # The build under test first: importing ``shared`` put this checkout's src ahead of
    # PYTHONPATH, which would otherwise time this checkout instead of the baseline.
    src = os.environ.get(BASELINE_SRC)
    if src:
        sys.path.insert(0, src)
    import mondrian

    if src and not os.path.abspath(mondrian.__file__).startswith(os.path.abspath(src)):
        raise RuntimeError(f"mondrian imported from {mondrian.__file__}, not from {src}")
    data = load_letter()
    stream = Stream.from_arrays(data.X_train[:n], data.y_train[:n], data.feature_names,
                                np.arange(data.n_classes))

    def make():
        return mondrian.MondrianForestClassifier(n_estimators=n_estimators, n_jobs=1,
                                                 random_state=seed)

    MONDRIAN_LOOPS[loop](make(), stream.head(WARMUP_ROWS))
    start = time.process_time()
    preds = MONDRIAN_LOOPS[loop](make(), stream)
    seconds = time.process_time() - start
    print(json.dumps({"seconds": seconds, "preds": preds.tolist()}))


def profile_loop(mode: str, n: int, n_estimators: int, seed: int) -> None:
    """The stream loop of ``--profile`` (see the module docstring), untimed; prints the number
    of correct predictions (``both``) so that runs can be checked against each other."""
    import mondrian

    data = load_letter()
    X = np.ascontiguousarray(data.X_train[:n], dtype=np.float64)
    labels = [int(v) for v in data.y_train[:n]]
    model = mondrian.MondrianForestClassifier(n_estimators=n_estimators, n_jobs=1,
                                              random_state=seed)
    model.learn_one(X[0], labels[0])
    model.learn_one(X[1], labels[1])
    correct = 0
    if mode != "none":
        for i in range(2, n):
            if mode == "both":
                correct += model.predict_one(X[i]) == labels[i]
            model.learn_one(X[i], labels[i])
    print(f"profile {mode}: {n} rows, {correct} correct predictions")


def baseline_learner(src: str, loop: str, n_estimators: int, seed: int) -> StreamLearner:
    """A mondrian loop timed in a subprocess that imports mondrian from ``src``."""
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.abspath(src), here]))
    env[BASELINE_SRC] = os.path.abspath(src)

    def timed(stream: Stream):
        command = [sys.executable, os.path.abspath(__file__), "--worker", loop,
                   "--n", str(len(stream.y)), "--stream-trees", str(n_estimators),
                   "--seed", str(seed)]
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
        result = json.loads(done.stdout.strip().splitlines()[-1])
        return result["seconds"], np.asarray(result["preds"], dtype=np.int64)

    return StreamLearner(f"MondrianForest (build in {src}, subprocess)", LOOP_INPUTS[loop],
                         lambda: None, lambda model, s: None, timed)


def stream_learners(n_estimators: int, seed: int, n_classes: int,
                    report: Report) -> list[StreamLearner]:
    """The learners available in this environment (messages say which are missing and why).

    Parameters
    ----------
    n_estimators : int
    seed : int
    n_classes : int
        Needed up front by onelearn.
    report : Report
        Where to say which learners are missing.

    Returns
    -------
    list of StreamLearner
    """
    learners = []
    mondrian, reason = import_mondrian()
    if mondrian is None:
        report.add(f"NOTE: mondrian is unavailable. {reason}")
    else:
        def make_mf():
            return mondrian.MondrianForestClassifier(
                n_estimators=n_estimators, n_jobs=1, random_state=seed
            )

        learners.append(StreamLearner("MondrianForest", "learn_one(1-D array)", make_mf,
                                      run_learn_one_array))
        learners.append(StreamLearner("MondrianForest", "partial_fit(1-row 2-D array)", make_mf,
                                      run_partial_fit))
    adapter, reason = optional_import("mondrian.river")
    if mondrian is not None and adapter is not None:
        learners.append(StreamLearner(
            "MondrianForest via mondrian.river.RiverClassifier", "learn_one(dict)",
            lambda: adapter.RiverClassifier(mondrian.MondrianForestClassifier(
                n_estimators=n_estimators, n_jobs=1, random_state=seed
            )),
            run_learn_one_dict,
        ))
    forest, reason = optional_import("river.forest")
    if forest is None:
        report.add(f"NOTE: river is unavailable. {reason}")
    else:
        learners.append(StreamLearner(
            RIVER, "learn_one(dict)",
            lambda: forest.AMFClassifier(n_estimators=n_estimators, seed=seed),
            run_learn_one_dict,
        ))
    onelearn, reason = import_onelearn()
    if onelearn is None:
        report.add(f"NOTE: onelearn is unavailable. {reason}")
    else:
        learners.append(StreamLearner(
            "onelearn AMFClassifier", "partial_fit(1-row 2-D array)",
            lambda: onelearn.AMFClassifier(
                n_classes=n_classes, n_estimators=n_estimators, random_state=seed
            ),
            run_onelearn,
        ))
    return learners


def bench_stream(stream: Stream, learners: list[StreamLearner], repeats: int) -> list[dict]:
    """Time the test-then-train loop of every learner.

    Parameters
    ----------
    stream : Stream
    learners : list of StreamLearner
    repeats : int
        Timed runs (fresh model each), median reported.

    Returns
    -------
    list of dict
        Table rows.
    """
    warmup = stream.head(WARMUP_ROWS)
    n = len(stream.y)
    for learner in learners:
        if learner.timed is None:  # a self-timed learner warms up in its own process
            learner.run(learner.make(), warmup)
    # Interleaved: each repeat times every learner once, so machine load drifts hit all alike.
    times = {id(learner): [] for learner in learners}
    preds = {}
    for repeat in range(max(1, repeats)):
        for learner in learners:
            log(f"[stream] repeat {repeat + 1}/{repeats}: {learner.name} / {learner.inputs} ...")
            if learner.timed is not None:
                seconds, preds[id(learner)] = learner.timed(stream)
            else:
                seconds, preds[id(learner)] = time_callable(
                    lambda lr=learner: lr.run(lr.make(), stream), 1, clock=time.process_time
                )
            times[id(learner)].append(seconds)
    rows = []
    for learner in learners:
        seconds = statistics.median(times[id(learner)])
        rows.append({
            "model": learner.name,
            "inputs": learner.inputs,
            "samples": n,
            "time (s)": seconds,
            "samples/s": n / seconds,
            "accuracy": float(np.mean(preds[id(learner)][1:] == stream.y[1:])),
        })
    river = next((r for r in rows if r["model"] == RIVER), None)
    for row in rows:
        if river is not None:
            row["vs river"] = row["samples/s"] / river["samples/s"]
    return rows


# --------------------------------------------------------------------------------------------
# Growing mini-batches
# --------------------------------------------------------------------------------------------


def batch_bounds(n_batches: int, batch_size: int = BATCH_SIZE) -> list[tuple[int, int]]:
    """Row ranges ``[b * batch_size, (b + 1) * batch_size)`` of the mini-batches.

    Parameters
    ----------
    n_batches : int
    batch_size : int, default=150

    Returns
    -------
    list of (start, stop)
    """
    return [(b * batch_size, (b + 1) * batch_size) for b in range(n_batches)]


def partial_fit_batches(make, X, y, bounds, classes):
    """Train one model with ``partial_fit`` on each new batch.

    Returns
    -------
    model : estimator
    last_seconds : float
        Duration of the last update.
    """
    model = make()
    last = 0.0
    for start, stop in bounds:
        last, _ = time_callable(
            lambda a=start, b=stop: model.partial_fit(X[a:b], y[a:b], classes=classes), 1
        )
    return model, last


def refit_batches(make, X, y, bounds, classes):
    """Refit a fresh model on all the rows seen so far after each batch.

    Returns
    -------
    model : estimator
        The model fitted on every batch.
    last_seconds : float
        Duration of the last refit.
    """
    model, last = None, 0.0
    for _, stop in bounds:
        last, model = time_callable(lambda b=stop: make().fit(X[:b], y[:b]), 1)
    return model, last


def batch_learners(n_estimators: int, seed: int) -> list[tuple[str, str, Callable, Callable]]:
    """(name, update description, factory, training loop) of the growing-batch comparison.

    Parameters
    ----------
    n_estimators : int
    seed : int

    Returns
    -------
    list of tuple
    """
    params = {"n_estimators": n_estimators, "n_jobs": 1, "random_state": seed}
    learners = []
    mondrian, _ = import_mondrian()
    if mondrian is not None:
        learners.append(("MondrianForest", "partial_fit(new batch)",
                         lambda: mondrian.MondrianForestClassifier(**params),
                         partial_fit_batches))
    learners.append(("RandomForest", "fit(all rows so far)",
                     lambda: RandomForestClassifier(**params), refit_batches))
    return learners


def bench_batches(data: Dataset, n_batches: int, n_estimators: int, seed: int,
                  repeats: int) -> list[dict]:
    """Total training time over the growing batches, and final test accuracy.

    Parameters
    ----------
    data : Dataset
        letter; its training rows are cut into batches in file order.
    n_batches : int
    n_estimators : int
    seed : int
    repeats : int
        Timed runs of the whole sequence, median reported.

    Returns
    -------
    list of dict
        Table rows.
    """
    bounds = batch_bounds(n_batches)
    X, y = data.X_train, data.y_train
    classes = np.arange(data.n_classes)
    rows = []
    for name, update, make, loop in batch_learners(n_estimators, seed):
        log(f"[batches] {name} ...")
        total, (model, last) = time_callable(
            lambda mk=make, lp=loop: lp(mk, X, y, bounds, classes), repeats
        )
        rows.append({
            "model": name, "update": update, "batches": n_batches, "rows seen": bounds[-1][1],
            "total time (s)": total, "last update (s)": last,
            "test accuracy": float(np.mean(model.predict(data.X_test) == data.y_test)),
        })
    reference = next((r for r in rows if r["model"] == "MondrianForest"), None)
    for row in rows:
        if reference is not None:
            row["time / MondrianForest"] = row["total time (s)"] / reference["total time (s)"]
    return rows


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def parse(argv=None):
    """Command-line options (see the module docstring)."""
    parser = make_parser(__doc__.splitlines()[0], default_repeats=1)
    parser.add_argument("--parts", default=",".join(PARTS),
                        help="comma-separated subset of " + ",".join(PARTS))
    add_sized(parser, "--n", 15000, 1000, "stream length")
    parser.add_argument("--stream-trees", type=int, default=10, help="trees in the stream part")
    add_sized(parser, "--batches", 100, 10, f"number of {BATCH_SIZE}-row batches")
    add_sized(parser, "--batch-trees", 100, 10, "trees in the batch part")
    parser.add_argument("--baseline", action="append", default=[], metavar="DIR",
                        help="also time the mondrian stream loops on the build of the package "
                             "in DIR (a built checkout's src folder), in subprocesses; may be "
                             "repeated (e.g. the build before a change and the current one)")
    parser.add_argument("--worker", default=None, choices=sorted(MONDRIAN_LOOPS),
                        help=argparse.SUPPRESS)
    parser.add_argument("--profile", default=None, choices=PROFILE_MODES,
                        help="run one untimed loop over the first --n rows for a profiler "
                             "(none: setup only; learn: learn_one; both: predict_one + "
                             "learn_one) and exit")
    add_output_options(parser, "online.md", plots=False)
    args = parse_args(parser, argv)
    args.parts = parse_list(args.parts, PARTS)
    return args


def main(argv=None) -> None:
    """Run the selected parts: print the markdown report, write it in a full run."""
    args = parse(argv)
    require_datasets()
    if args.worker:
        worker(args.worker, args.n, args.stream_trees, args.seed)
        return
    if args.profile:
        profile_loop(args.profile, args.n, args.stream_trees, args.seed)
        return
    data = load_letter()
    report = Report()
    report.add("## Online benchmark on letter" + (" (QUICK MODE)" if args.quick else ""))
    report.add(f"\n{environment_line()}")
    report.add(f"random_state/seed={args.seed}, n_jobs=1, median of {args.repeats} run(s).")
    if "stream" in args.parts:
        n = min(args.n, len(data.y_train))
        stream = Stream.from_arrays(data.X_train[:n], data.y_train[:n], data.feature_names,
                                    np.arange(data.n_classes))
        learners = stream_learners(args.stream_trees, args.seed, data.n_classes, report)
        for src in args.baseline:
            learners += [baseline_learner(src, loop, args.stream_trees, args.seed)
                         for loop in MONDRIAN_LOOPS]
            report.add(f"Build in {src}: mondrian imported from there (each timed run in a "
                       "subprocess, its loop timed alone).")
        rows = bench_stream(stream, learners, args.repeats)
        title = (f"Test-then-train stream: first {n} letter rows, {args.stream_trees} trees "
                 f"(accuracy over samples 2..{n}; 'vs river' = samples/s ratio)")
        report.table(rows, STREAM_COLUMNS, STREAM_FORMATS, title=title)
    if "batches" in args.parts:
        n_batches = min(args.batches, len(data.y_train) // BATCH_SIZE)
        rows = bench_batches(data, n_batches, args.batch_trees, args.seed, args.repeats)
        title = (f"Growing mini-batches: {n_batches} x {BATCH_SIZE} letter rows, "
                 f"{args.batch_trees} trees, test on the {len(data.y_test)} letter test rows")
        report.table(rows, BATCH_COLUMNS, BATCH_FORMATS, title=title)
    report.write(args.output)


if __name__ == "__main__":
    main()
