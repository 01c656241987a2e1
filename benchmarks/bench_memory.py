"""Memory benchmark: model size, peak fitting memory and prediction time of Mondrian forests.

Side by side in one run, at ``--trees`` trees (100 by default), ``n_jobs=1`` and default
parameters: ``MondrianForestClassifier`` vs ``ExtraTreesClassifier`` and
``RandomForestClassifier`` on letter, usps, satimage and ``make_classification(200_000, 20,
n_informative=10)``; ``MondrianForestRegressor`` vs ``ExtraTreesRegressor`` on kin8nm. Every
fit runs in a fresh subprocess under an address-space limit (``--limit-gb``, 8 by default), which
reports the pickle size, the peak RSS of the fit (above the loaded data), the fit time and the
median ``predict_proba`` (``predict``) time; a fit that exceeds the limit is reported as such.
Then a scaling table over N (20 features, ``--scaling-trees`` trees) with log-log slopes, the
bytes held per sample along a ``learn_one`` stream (10 trees), and (``--parts boxes``) the profile
behind lean boxes: for a threshold K, the share of nodes holding at least K points (those that
would keep a stored box) and the points a walk reads to recompute the boxes of the smaller nodes.

Run from the repository root::

    python benchmarks/bench_memory.py                 # full run (long: one fit at a time)
    python benchmarks/bench_memory.py --quick         # 10 trees, small sets
    python benchmarks/bench_memory.py --parts scaling,online

A full run writes its report to ``benchmarks/results/memory.md`` (``--output`` elsewhere).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
from shared.cli import add_output_options, make_parser, parse_args, parse_list
from shared.datasets import datasets_dir
from shared.report import Report, environment_line, log

MF, RF, ET = "MondrianForest", "RandomForest", "ExtraTrees"
PARTS = ("classification", "regression", "scaling", "online", "boxes")
BOX_THRESHOLDS = (2, 4, 8, 16, 32, 64, 128)
CLASSIFICATION_SETS = ("letter", "usps", "satimage", "synthetic200k")
SCALING_N = (10_000, 30_000, 100_000, 300_000, 1_000_000)
GB = 1024**3
MB = 1e6


# ----------------------------------------------------------------------------- child side


def _load(name: str, seed: int = 0):
    """Train/test arrays of a named set (``syntheticN``: make_classification, 20 features)."""
    if name.startswith("synthetic") or name.startswith("scaling"):
        from sklearn.datasets import make_classification

        n = int(name.removeprefix("synthetic").removeprefix("scaling").replace("k", "000"))
        n_test = 10_000
        X, y = make_classification(n_samples=n + n_test, n_features=20, n_informative=10,
                                   random_state=seed)
        return X[:n], y[:n], X[n:]
    sys.path.insert(0, os.path.dirname(__file__))
    if name in ("letter", "usps", "satimage"):
        from shared.datasets import load_classification

        d = load_classification(name)
    else:
        from shared.datasets import load_uci_regression

        d = load_uci_regression(name)
    return d.X_train, d.y_train, d.X_test


def _model(kind: str, trees: int, regression: bool):
    params = {"n_estimators": trees, "n_jobs": 1, "random_state": 0}
    if kind == MF:
        import mondrian

        cls = mondrian.MondrianForestRegressor if regression else mondrian.MondrianForestClassifier
        return cls(**params)
    from sklearn import ensemble

    name = {RF: "RandomForest", ET: "ExtraTrees"}[kind]
    return getattr(ensemble, name + ("Regressor" if regression else "Classifier"))(**params)


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _child(spec: dict) -> dict:
    """One fit, measured: run in a fresh process (see :func:`measure`)."""
    import pickle

    X, y, X_test = _load(spec["data"])
    model = _model(spec["model"], spec["trees"], spec["regression"])
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the RSS high-water mark
    before = _status_kb("VmRSS")
    start = time.perf_counter()
    model.fit(X, y)
    fit_s = time.perf_counter() - start
    peak_mb = (_status_kb("VmHWM") - before) * 1024 / MB
    held_mb = (_status_kb("VmRSS") - before) * 1024 / MB
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = _status_kb("VmRSS")
    blob = pickle.dumps(model, protocol=5)
    pickle_peak_mb = (_status_kb("VmHWM") - before) * 1024 / MB
    size_mb = len(blob) / MB
    del blob
    predict = model.predict if spec["regression"] else model.predict_proba
    times = []
    for _ in range(spec["repeats"]):
        start = time.perf_counter()
        predict(X_test)
        times.append(time.perf_counter() - start)
    out = {"fit (s)": fit_s, "peak RSS (MB)": peak_mb, "held (MB)": held_mb,
           "pickle (MB)": size_mb, "pickle peak (MB)": pickle_peak_mb,
           "predict (s)": float(np.median(times))}
    if spec["model"] == MF:
        usage = model.memory_usage_
        out["breakdown"] = {k: v / MB for k, v in usage.items()}
    return out


def _online_child(spec: dict) -> dict:
    """Bytes held per sample along a ``learn_one`` stream."""
    import mondrian

    X, y, _ = _load(spec["data"])
    model = mondrian.MondrianForestClassifier(n_estimators=spec["trees"], random_state=0)
    rows = []
    checkpoints = set(spec["checkpoints"])
    start = time.perf_counter()
    for i in range(max(checkpoints)):
        model.learn_one(dict(enumerate(X[i])), int(y[i]))
        if i + 1 in checkpoints:
            usage = model.memory_usage_
            nodes = sum(tree.node_count for tree in model._trees)
            rows.append({"samples": i + 1, "bytes / sample": usage["total"] / (i + 1),
                         "bytes / sample / tree": usage["total"] / (i + 1) / spec["trees"],
                         "nodes / sample / tree": nodes / (i + 1) / spec["trees"],
                         "seconds": time.perf_counter() - start})
    return {"rows": rows}


def measure(spec: dict, limit_gb: float) -> dict:
    """Run one measurement in a fresh, ``nice``d subprocess under an address-space limit."""
    code = (
        "import json, resource, sys; sys.path.insert(0, sys.argv[1]);"
        f"resource.setrlimit(resource.RLIMIT_AS, ({int(limit_gb * GB)}, {int(limit_gb * GB)}));"
        "import bench_memory as b; spec = json.loads(sys.argv[2]);"
        "f = b._online_child if spec.get('online') else b._child;"
        "print('RESULT', json.dumps(f(spec)))"
    )
    proc = subprocess.run(
        ["nice", sys.executable, "-c", code, os.path.dirname(os.path.abspath(__file__)),
         json.dumps(spec)], capture_output=True, text=True, env=os.environ)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": last[:120]}


# ----------------------------------------------------------------------------- parent side


def _ratio(rows: list[dict], key: str, base: str = ET) -> None:
    by = {(r["data"], r["model"]): r for r in rows}
    for r in rows:
        ref = by.get((r["data"], base))
        for col in ("pickle (MB)", "peak RSS (MB)", "predict (s)", "fit (s)"):
            if ref and col in r and col in ref and ref[col] > 0:
                r[f"{col.split(' ')[0]} / {base}"] = r[col] / ref[col]


COLUMNS = ["data", "model", "pickle (MB)", "peak RSS (MB)", "fit (s)", "predict (s)",
           "pickle / ExtraTrees", "peak / ExtraTrees", "fit / ExtraTrees",
           "predict / ExtraTrees", "pickle peak (MB)", "error"]
FORMATS = {c: ".2f" for c in COLUMNS[2:-1]}


def run_sets(names, trees, regression, args, report, title):
    rows = []
    for name in names:
        for kind in ((MF, ET) if regression else (MF, ET, RF)):
            log(f"{name} {kind}")
            spec = {"data": name, "model": kind, "trees": trees, "regression": regression,
                    "repeats": args.repeats}
            res = measure(spec, args.limit_gb)
            rows.append({"data": name, "model": kind, **res})
            log(f"  {res}")
    _ratio(rows, "")
    report.table(rows, COLUMNS, FORMATS, title=title)
    for r in rows:
        if "breakdown" in r:
            parts = ", ".join(f"{k} {v:.1f}" for k, v in r["breakdown"].items())
            report.add(f"- {r['data']} MF in-memory MB: {parts}")
    report.add()
    return rows


def run_scaling(args, report):
    rows = []
    sizes = [n for n in SCALING_N if n <= args.max_n]
    for n in sizes:
        for kind in (MF, ET, RF):
            log(f"scaling {n} {kind}")
            spec = {"data": f"scaling{n}", "model": kind, "trees": args.scaling_trees,
                    "regression": False, "repeats": 1}
            res = measure(spec, args.limit_gb)
            res.pop("breakdown", None)
            rows.append({"data": n, "model": kind, **res})
            log(f"  {res}")
    cols = ["data", "model", "fit (s)", "predict (s)", "pickle (MB)", "peak RSS (MB)", "error"]
    report.table(rows, cols, {c: ".3g" for c in cols[2:-1]},
                 title=f"Scaling, 20 features, {args.scaling_trees} trees (N = data)")
    slopes = []
    for kind in (MF, ET, RF):
        ok = [r for r in rows if r["model"] == kind and "error" not in r]
        if len(ok) < 2:
            continue
        logn = np.log([r["data"] for r in ok])
        row = {"model": kind}
        for col in ("fit (s)", "predict (s)", "pickle (MB)", "peak RSS (MB)"):
            vals = np.array([max(r[col], 1e-9) for r in ok])
            row[col] = float(np.polyfit(logn, np.log(vals), 1)[0])
        slopes.append(row)
    report.table(slopes, ["model", "fit (s)", "predict (s)", "pickle (MB)", "peak RSS (MB)"],
                 {c: ".2f" for c in ("fit (s)", "predict (s)", "pickle (MB)", "peak RSS (MB)")},
                 title="Log-log slopes against N")


def run_online(args, report):
    spec = {"online": True, "data": "synthetic200k", "trees": 10,
            "checkpoints": sorted({1_000, 10_000, args.online_n})}
    res = measure(spec, args.limit_gb)
    if "error" in res:
        report.add(f"online stream failed: {res['error']}")
        return
    cols = ["samples", "bytes / sample", "bytes / sample / tree", "nodes / sample / tree",
            "seconds"]
    report.table(res["rows"], cols, {c: ".1f" for c in cols[1:]},
                 title="learn_one stream (make_classification 20 features, 10 trees)")


def _box_profile(tree, K: int) -> tuple[float, float, float]:
    """Share of nodes with at least ``K`` points; mean (over training points) and max of the
    points below the first node with fewer than ``K`` points on a point's path (what a walk
    reads to rebuild that subtree's boxes: 0 when its leaf holds K points or more)."""
    counts = tree.n_node_samples
    left, right = tree.children_left, tree.children_right
    read, weight, stack = [], [], [(0, 0)]
    while stack:
        j, small = stack.pop()
        if small == 0 and counts[j] < K:
            small = counts[j]
        if left[j] == -1:
            read.append(small)
            weight.append(counts[j])
        else:
            stack.extend(((left[j], small), (right[j], small)))
    read = np.asarray(read, dtype=float)
    return float((counts >= K).mean()), float(np.average(read, weights=weight)), read.max()


def run_boxes(sets, args, report):
    """Box-threshold profile, in this process (``--box-trees`` trees, default parameters)."""
    rows = []
    for name in sets:
        log(f"boxes {name}")
        X, y, _ = _load(name)
        model = _model(MF, args.box_trees, False).fit(X, y)
        trees = [e.tree_ for e in model.estimators_]
        nodes = float(np.mean([t.node_count for t in trees]))
        D = X.shape[1]
        for K in BOX_THRESHOLDS:
            prof = np.array([_box_profile(t, K) for t in trees])
            share = prof[:, 0].mean()
            rows.append({"data": name, "D": D, "nodes / tree": nodes, "K": K,
                         "nodes with a box": share,
                         "box MB at 100 trees": share * nodes * 16 * D * 100 / MB,
                         "points read / walk": prof[:, 1].mean(), "max": prof[:, 2].max()})
        del model
    cols = list(rows[0]) if rows else []
    fmts = {"nodes / tree": ".0f", "nodes with a box": ".3f", "box MB at 100 trees": ".1f",
            "points read / walk": ".1f", "max": ".0f"}
    report.table(rows, cols, fmts, title=f"Lean boxes: threshold profile ({args.box_trees} trees)")


def main(argv=None) -> None:
    parser = make_parser(__doc__.splitlines()[0], default_repeats=3)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--scaling-trees", type=int, default=10)
    parser.add_argument("--max-n", type=int, default=1_000_000)
    parser.add_argument("--online-n", type=int, default=200_000)
    parser.add_argument("--limit-gb", type=float, default=8.0)
    parser.add_argument("--box-trees", type=int, default=5)
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--sets", default=",".join(CLASSIFICATION_SETS))
    add_output_options(parser, "memory.md", plots=False)
    args = parse_args(parser, argv)
    if args.quick:
        args.trees, args.max_n, args.online_n, args.repeats = 10, 30_000, 5_000, 1
    parts = parse_list(args.parts, PARTS)
    report = Report()
    report.add("# Memory benchmark\n")
    report.add(environment_line())
    report.add(f"\nEvery fit in a fresh subprocess limited to {args.limit_gb:g} GB of address "
               "space; peak RSS is the fit's high-water mark above the loaded data.\n")
    have_data = datasets_dir().exists()
    sets = parse_list(args.sets, CLASSIFICATION_SETS)
    if not have_data:
        report.add(f"NOTE: no datasets folder ({datasets_dir()}): real sets skipped.")
        sets = [s for s in sets if s.startswith("synthetic")]
    if "classification" in parts:
        run_sets(sets, args.trees, False, args, report,
                 f"Classification, {args.trees} trees, predict_proba")
    if "regression" in parts and have_data:
        run_sets(["kin8nm"], args.trees, True, args, report,
                 f"Regression (kin8nm), {args.trees} trees, predict")
    if "scaling" in parts:
        run_scaling(args, report)
    if "online" in parts:
        run_online(args, report)
    if "boxes" in parts:
        run_boxes(sets, args, report)
    report.write(args.output)


if __name__ == "__main__":
    main()
