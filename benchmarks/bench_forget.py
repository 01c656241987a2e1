"""Forgetting benchmark: exact deletion vs refitting, and a windowed stream's memory.

Three experiments:

cost
    letter (the 15000 training rows), a Mondrian forest of 100 trees (``n_jobs=1``). CPU time
    (``time.process_time``) of ``forget`` of one random row (median over ``--rows`` rows, each
    on the model the previous ones left) and of the oldest 10% in one call, against a refit on
    the remaining rows, measured in the same run, interleaved, medians of ``--repeats``.
breakdown
    The 10% call of the cost part, CPU time by step (timers around ``plan_forget``, the core
    call ``commit_forget`` and any snapshot of the trees).
memory
    A synthetic stream (``--stream`` rows of 4 features, a drifting linear concept) learnt in
    batches of 1000 rows by a 10-tree forest with ``window=--window`` and with
    ``window=None``; ``memory_usage_`` (used and reserved bytes) and the process's resident
    set size are recorded along the stream. Each model runs in its own process (clean RSS).
drift
    Prequential accuracy on river's drifting streams (``--drift-rows`` rows each):
    ``ConceptDriftStream`` over SEA and over Agrawal (the concept changing at the middle),
    ``RandomRBFDrift`` and ``Hyperplane`` with ``mag_change`` (continuous drifts): mondrian
    with its defaults, with ``window=--drift-window``, and with that window shrunk by ADWIN
    (the recipe of docs/forgetting.md), against river's ``AMFClassifier`` and
    ``ARFClassifier`` (10 trees each); CPU seconds and speed ratios. Every run appends a line
    to ``results/forget_drift.jsonl``; the table reads the latest one of each.

Run from the repository root::

    python benchmarks/bench_forget.py                 # both parts, report in results/forget.md
    python benchmarks/bench_forget.py --quick         # small sizes
    python benchmarks/bench_forget.py --parts cost
    python benchmarks/bench_forget.py --parts breakdown   # the 10% call, step by step
    python benchmarks/bench_forget.py --parts drift --output benchmarks/results/forget_drift.md
    python benchmarks/bench_forget.py --parts drift --drift-models amf,arf   # some models only
    python benchmarks/bench_forget.py --parts drift --drift-models ""        # the table only
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from shared.datasets import load_letter, require_datasets  # noqa: E402


def _cpu(func):
    start = time.process_time()
    out = func()
    return time.process_time() - start, out


def cost(args):
    from mondrian import MondrianForestClassifier

    require_datasets()
    data = load_letter()
    X, y = data.X_train, data.y_train
    n = len(X)
    rng = np.random.default_rng(0)

    def make():
        return MondrianForestClassifier(n_estimators=args.trees, random_state=0, n_jobs=1)

    load_before = os.getloadavg()[0]
    fits, ones, tenths, refits_one, refits_tenth = [], [], [], [], []
    for _ in range(args.repeats):
        t_fit, model = _cpu(lambda: make().fit(X, y))
        fits.append(t_fit)
        rows = rng.choice(n, args.rows, replace=False)
        times = [_cpu(lambda i=i, m=model: m.forget(X[i:i + 1], y[i:i + 1]))[0] for i in rows]
        ones.append(statistics.median(times))
        keep = np.setdiff1d(np.arange(n), rows[:1])
        refits_one.append(_cpu(lambda k=keep: make().fit(X[k], y[k]))[0])
        t_fit, model = _cpu(lambda: make().fit(X, y))
        oldest = np.arange(n // 10)
        tenths.append(_cpu(lambda m=model, o=oldest: m.forget(X[o], y[o]))[0])
        refits_tenth.append(_cpu(lambda: make().fit(X[n // 10:], y[n // 10:]))[0])
    med = statistics.median
    lines = [
        f"letter, {n} rows, {args.trees} trees, n_jobs=1; CPU seconds, medians of "
        f"{args.repeats} interleaved runs (one-row time: median over {args.rows} random rows); "
        f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after "
        f"({os.cpu_count()} cores).",
        "",
        "| operation | CPU s | refit on the rest, CPU s | ratio (forget / refit) |",
        "|---|---|---|---|",
        f"| fit on all rows | {med(fits):.3f} | | |",
        f"| forget one row | {med(ones) * 1e3:.2f} ms | {med(refits_one):.3f} | "
        f"1/{med(refits_one) / med(ones):.0f} |",
        f"| forget the oldest 10% ({n // 10} rows, one call) | {med(tenths):.3f} | "
        f"{med(refits_tenth):.3f} | 1/{med(refits_tenth) / med(tenths):.1f} |",
    ]
    return "\n".join(lines)


def _timed(owner, name, totals, key):
    """Wrap ``owner.name`` to add its CPU time to ``totals[key]``; returns the original."""
    original = getattr(owner, name)

    def timed(*args, **kwargs):
        start = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            totals[key] = totals.get(key, 0.0) + time.process_time() - start

    setattr(owner, name, timed)
    return original


def breakdown(args):
    """Where the 10% call's CPU time goes: timers around its steps (the same sequence as the
    cost part: a fit, then the oldest 10% forgotten in one call), medians of ``--repeats``."""
    import mondrian.core.ensemble as ensemble_module
    import mondrian.estimator.forgetting as forgetting_module
    from mondrian import MondrianForestClassifier

    require_datasets()
    data = load_letter()
    X, y = data.X_train, data.y_train
    n = len(X)
    steps = {  # (key: owner, name, what it does)
        "plan": (forgetting_module, "plan_forget", "finding the rows' copies and planning"),
        "core": (ensemble_module, "commit_forget",
                 "trees (forget, then the store's moves, tree by tree) and the store's arrays"),
        "snapshot": (ensemble_module.TreeEnsemble, "snapshot", "snapshot of the trees"),
    }
    load_before = os.getloadavg()[0]
    runs = []
    for _ in range(args.repeats):
        model = MondrianForestClassifier(n_estimators=args.trees, random_state=0,
                                         n_jobs=1).fit(X, y)
        totals = {}
        originals = {key: _timed(owner, name, totals, key)
                     for key, (owner, name, _) in steps.items()}
        try:
            oldest = np.arange(n // 10)
            totals["call"] = _cpu(lambda m=model, o=oldest: m.forget(X[o], y[o]))[0]
        finally:
            for key, (owner, name, _) in steps.items():
                setattr(owner, name, originals[key])
        runs.append(totals)
    med = statistics.median
    lines = [
        f"letter, {n} rows, {args.trees} trees, the oldest {n // 10} rows in one call; CPU "
        f"seconds, medians of {args.repeats} runs; load average {load_before:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after.",
        "",
        "| step | CPU s |",
        "|---|---|",
    ]
    for key, (_, name, what) in steps.items():
        lines.append(f"| {what} (`{name}`) | {med(r.get(key, 0.0) for r in runs):.4f} |")
    rest = med(r["call"] - sum(r.get(key, 0.0) for key in steps) for r in runs)
    lines += [f"| the rest (checks, the feature map, Python) | {rest:.4f} |",
              f"| the whole call | {med(r['call'] for r in runs):.4f} |"]
    return "\n".join(lines)


def _stream_rows(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 4))
    angle = np.linspace(0.0, np.pi, n)  # the concept turns slowly: a drifting stream
    y = ((X[:, 0] - 0.5) * np.cos(angle) + (X[:, 1] - 0.5) * np.sin(angle) > 0).astype(int)
    return X, y


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory_child(n, window, trees):
    from mondrian import MondrianForestClassifier

    X, y = _stream_rows(n)
    model = MondrianForestClassifier(n_estimators=trees, window=window, random_state=0, n_jobs=1)
    out = []
    step = 1000
    report = max(n // 40, step)
    for start in range(0, n, step):
        model.partial_fit(X[start:start + step], y[start:start + step])
        if (start + step) % report == 0:
            usage = model.memory_usage_
            out.append((start + step, usage["total"], usage["reserved"], _rss_bytes()))
            # Progress on stderr (the parent passes it through): a 2M-row stream runs long.
            print(f"window={window}: {start + step} rows, RSS {out[-1][3] / 1e6:.1f} MB, "
                  f"{time.process_time():.0f} CPU s", file=sys.stderr, flush=True)
    print(json.dumps(out))


def memory(args):
    runs = {}
    for window in (args.window, None):
        code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); import bench_forget; "
                f"bench_forget.memory_child({args.stream}, {window!r}, {args.stream_trees})")
        result = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                                check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
        runs[window] = json.loads(result.stdout.strip().splitlines()[-1])
    w = runs[args.window]
    start = max(args.stream // 10, 2 * args.window)  # the window full, twice over
    steady = [r for r in w if r[0] >= start]
    rss = [r[3] for r in steady]
    lines = [
        f"Stream of {args.stream} rows (4 features, batches of 1000), {args.stream_trees} trees; "
        f"window={args.window} vs window=None. MB: model bytes used (memory_usage_ total), "
        "reserved growth room, resident set size of the process.",
        "",
        "| rows | window: used | window: RSS | None: used | None: RSS |",
        "|---|---|---|---|---|",
    ]
    for a, b in zip(w[:: max(len(w) // 10, 1)], runs[None][:: max(len(w) // 10, 1)],
                    strict=False):
        lines.append(f"| {a[0]} | {a[1] / 1e6:.1f} | {a[3] / 1e6:.1f} | {b[1] / 1e6:.1f} | "
                     f"{b[3] / 1e6:.1f} |")
    lines += ["", f"Windowed RSS from {start} rows on: min {min(rss) / 1e6:.1f} MB, max "
              f"{max(rss) / 1e6:.1f} MB (spread {100 * (max(rss) / min(rss) - 1):.1f}%)."]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.5))
        for key, label in ((args.window, f"window={args.window}"), (None, "window=None")):
            r = np.array(runs[key], dtype=float)
            ax.plot(r[:, 0], r[:, 3] / 1e6, label=f"{label} (RSS)")
            ax.plot(r[:, 0], r[:, 1] / 1e6, "--", label=f"{label} (model)")
        ax.set_xlabel("rows learnt")
        ax.set_ylabel("MB")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(HERE / "results" / "forget_memory.png", dpi=100)
        lines += ["", "![memory](forget_memory.png)"]
    except ImportError:  # pragma: no cover
        pass
    return "\n".join(lines)


# The drifting streams of the drift part (river's synthetic generators, fixed seeds): a sudden
# concept change in the middle (ConceptDriftStream, over 5% of the rows) or a continuous drift.
DRIFT_STREAMS = ("SEA drift", "Agrawal drift", "RandomRBF drift", "Hyperplane drift")
DRIFT_MODELS = ("mondrian", "window", "adwin", "amf", "arf")
DRIFT_LABELS = {"mondrian": "mondrian", "window": "mondrian window",
                "adwin": "mondrian window + ADWIN", "amf": "river AMF", "arf": "river ARF"}


def _drift_stream(name, n):
    from river.datasets import synth

    if name == "SEA drift":
        return synth.ConceptDriftStream(synth.SEA(variant=0, seed=1), synth.SEA(variant=2, seed=2),
                                        seed=3, position=n // 2, width=n // 20).take(n)
    if name == "Agrawal drift":
        return synth.ConceptDriftStream(
            synth.Agrawal(classification_function=0, seed=1),
            synth.Agrawal(classification_function=4, seed=2), seed=3,
            position=n // 2, width=n // 20).take(n)
    if name == "RandomRBF drift":
        return synth.RandomRBFDrift(seed_model=1, seed_sample=2, n_classes=2, n_features=10,
                                    n_centroids=50, change_speed=0.001,
                                    n_drift_centroids=50).take(n)
    return synth.Hyperplane(seed=1, n_features=10, n_drift_features=2, mag_change=0.001,
                            noise_percentage=0.05, sigma=0.1).take(n)


def _mondrian_prequential(X, y, kind, window, trees):
    """Test then train, one row at a time. ``kind`` "adwin" follows the recipe of
    docs/forgetting.md: ADWIN watches the errors, and at a drift a new model is fitted on the
    recent rows ADWIN keeps (at least 100), which also chooses the feature weights again."""
    from river.drift import ADWIN

    from mondrian import MondrianForestClassifier

    def new_model():
        return MondrianForestClassifier(n_estimators=trees, random_state=0,
                                        window=None if kind == "mondrian" else window)

    model = new_model().partial_fit(X[:1], y[:1], classes=np.unique(y))
    detector = ADWIN()
    hits = 0
    for i in range(1, len(y)):
        hit = model.predict_one(X[i]) == y[i]
        hits += hit
        if kind == "adwin":
            detector.update(0.0 if hit else 1.0)
            if detector.drift_detected:
                recent = slice(max(0, i - max(int(detector.width), 100)), i)
                model = new_model().fit(X[recent], y[recent])
        model.learn_one(X[i], y[i])
    return hits / (len(y) - 1)


def _river_prequential(rows, kind, trees):
    from river import forest

    model = (forest.AMFClassifier(n_estimators=trees, seed=0) if kind == "amf"
             else forest.ARFClassifier(n_models=trees, seed=0))
    hits = 0
    for i, (x, label) in enumerate(rows):
        if i:
            hits += model.predict_one(x) == label
        model.learn_one(x, label)
    return hits / (len(rows) - 1)


def drift_run(name, kind, n, window, trees=10):
    """Prequential accuracy and CPU seconds of one model on one stream (one JSON line)."""
    rows = list(_drift_stream(name, n))
    keys = sorted(rows[0][0])
    X = np.array([[x[k] for k in keys] for x, _ in rows], dtype=float)
    y = np.array([int(label) for _, label in rows])
    if kind in ("amf", "arf"):
        seconds, accuracy = _cpu(lambda: _river_prequential(rows, kind, trees))
    else:
        seconds, accuracy = _cpu(lambda: _mondrian_prequential(X, y, kind, window, trees))
    return {"stream": name, "model": kind, "rows": n, "window": window, "trees": trees,
            "accuracy": accuracy, "cpu_s": seconds}


def drift(args):
    """Prequential accuracy (test then train, one row at a time; the first row is only
    learnt) on river's drifting streams: mondrian with its defaults, with ``window``, and
    with the window shrunk by ADWIN (docs/forgetting.md), against river's AMF and ARF (10
    trees each); CPU seconds. Each run is a subprocess appending a line to
    ``results/forget_drift.jsonl`` (``--drift-models`` picks the models); the table reads the
    latest line of every (stream, model) at these sizes."""
    path = HERE / "results" / "forget_drift.jsonl"
    n, window = args.drift_rows, args.drift_window
    for name in args.drift_streams.split(","):
        for kind in [k for k in args.drift_models.split(",") if k]:  # "": the table only
            if kind not in DRIFT_MODELS:
                raise SystemExit(f"unknown drift model {kind!r}: one of {DRIFT_MODELS}")
            code = (f"import sys, json; sys.path.insert(0, {str(HERE)!r}); import bench_forget; "
                    f"print(json.dumps(bench_forget.drift_run({name!r}, {kind!r}, {n}, "
                    f"{window})))")
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
            line = out.stdout.strip().splitlines()[-1]
            print(line, flush=True)
            if not args.quick:
                with open(path, "a") as f:
                    f.write(line + "\n")
    return drift_table(path, n, window)


def drift_table(path, n, window):
    """The markdown table of the latest runs at ``n`` rows (mondrian's at ``window``)."""
    latest = {}
    if Path(path).exists():
        for line in Path(path).read_text().splitlines():
            r = json.loads(line)
            if r["rows"] == n and (r["model"] in ("amf", "arf") or r["window"] == window):
                latest[r["stream"], r["model"]] = r
    lines = [f"{n} rows per stream, 10 trees each; prequential accuracy (CPU seconds); "
             f"window={window}. Speed vs X: X's CPU time / that of mondrian window + "
             "ADWIN.", "",
             "| stream | " + " | ".join(DRIFT_LABELS[k] for k in DRIFT_MODELS)
             + " | speed vs AMF | speed vs ARF |",
             "|---" * (len(DRIFT_MODELS) + 3) + "|"]
    for name in DRIFT_STREAMS:
        cells = []
        for kind in DRIFT_MODELS:
            r = latest.get((name, kind))
            cells.append("" if r is None else f"{r['accuracy']:.4f} ({r['cpu_s']:.1f} s)")
        ours = latest.get((name, "adwin"))
        for kind in ("amf", "arf"):
            r = latest.get((name, kind))
            cells.append("" if r is None or ours is None
                         else f"{r['cpu_s'] / ours['cpu_s']:.1f}x")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="cost,memory")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--stream", type=int, default=2_000_000)
    parser.add_argument("--stream-trees", type=int, default=10)
    parser.add_argument("--window", type=int, default=50_000)
    parser.add_argument("--drift-rows", type=int, default=100_000)
    parser.add_argument("--drift-window", type=int, default=5_000)
    parser.add_argument("--drift-streams", default=",".join(DRIFT_STREAMS))
    parser.add_argument("--drift-models", default=",".join(DRIFT_MODELS))
    parser.add_argument("--output", default=str(HERE / "results" / "forget.md"))
    args = parser.parse_args()
    if args.quick:
        args.trees, args.rows, args.repeats = 10, 5, 1
        args.stream, args.window = 40_000, 5_000
        args.drift_rows, args.drift_window = 3_000, 1_000
    sections = ["# Forgetting", "", "Command: `python benchmarks/bench_forget.py "
                + " ".join(sys.argv[1:]) + "`", ""]
    parts = args.parts.split(",")
    if "cost" in parts:
        sections += ["## Cost of forgetting vs refitting", "", cost(args), ""]
        print(sections[-2])
    if "breakdown" in parts:
        sections += ["## Where the 10% call goes", "", breakdown(args), ""]
        print(sections[-2])
    if "memory" in parts:
        sections += ["## Memory of a windowed stream", "", memory(args), ""]
        print(sections[-2])
    if "drift" in parts:
        sections += ["## Drift: prequential accuracy on river's drifting streams", "",
                     drift(args), ""]
        print(sections[-2])
    if not args.quick:
        Path(args.output).write_text("\n".join(sections))


if __name__ == "__main__":
    main()
