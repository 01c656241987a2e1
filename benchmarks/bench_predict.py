"""Prediction time of Mondrian forests against ExtraTrees, side by side (issue 10).

For each set, one fit of ``MondrianForestClassifier`` (``MondrianForestRegressor`` on the
regression sets, kin8nm and power_plant) and of ``ExtraTreesClassifier``
(``ExtraTreesRegressor``) with the same number of trees, ``n_jobs=1``, default parameters; both
are pickled to a temporary folder. Then every model is timed in a fresh process that loads it
and runs ``predict_proba`` (``predict``; for the Mondrian regressor also ``predict(X,
return_std=True)``, the "MF std" column) on the test rows (one warm-up call, then ``--calls``
timed calls, median), the models taking turns (``--repeats`` rounds, median of the rounds),
so the load of the shared machine hits them alike. The warm-up call's CPU time is reported too
("MF first": the first call of a loaded model keeps nothing), and the first timed call's ("MF
fill": the second call of a model fills its prediction cache, ``mondrian.forest._node_cache``,
which the next calls read; with ``--calls 3`` the median is a reading call), and the test rows
per second of the median call. ``power_plant_density`` times ``MondrianForestDensity``'s
``score_samples`` (no ExtraTrees counterpart). ``--baseline SRC`` adds the
same Mondrian model predicted by another build of the package (a ``src`` folder, for instance
an older commit built in place): the speed-up of a change, measured in the same rounds. Times
are the thread's CPU time (wall time is printed in the log), so waiting for a core does not
count.

Run from the repository root::

    python benchmarks/bench_predict.py --sets letter,kin8nm --trees 20
    python benchmarks/bench_predict.py --baseline /tmp/old/src --output results/predict.md
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from bench_memory import _load as _load_memory  # noqa: E402
from shared.report import environment_line, load_line, log, markdown_table  # noqa: E402

SETS = ("letter", "pendigits", "satimage", "dna", "usps", "synthetic200k", "kin8nm",
        "power_plant", "power_plant_density")
REGRESSION = ("kin8nm", "power_plant")
# The density sets: ``MondrianForestDensity`` (``lifetime="auto"``) on the joint (features,
# target) rows of bench_density's feature-weights part (split 0, 2000 training rows,
# dequantized, standardized), timed by ``score_samples`` against the baseline build only (no
# ExtraTrees counterpart; the rows per second are reported).
DENSITY = {"power_plant_density": "power_plant"}
SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def _load(name: str):
    """Train/test arrays of ``name`` (those of bench_memory, plus pendigits and dna, and the
    density sets: no targets)."""
    if name in DENSITY:
        from bench_density import weight_split

        train, test = weight_split(DENSITY[name], 0, False)
        return train, None, test
    if name in ("pendigits", "dna"):
        from shared.datasets import load_dna, load_xy

        if name == "dna":
            d = load_dna()
            return d.X_train, d.y_train, d.X_test
        X, y, _ = load_xy("pendigits_train")
        return X, y, load_xy("pendigits_test")[0]
    return _load_memory(name)


def _fit(name: str, trees: int, folder: str) -> dict:
    """Fit both models on ``name``, pickle them into ``folder``; return their file names."""
    from sklearn.ensemble import ExtraTreesClassifier, ExtraTreesRegressor

    import mondrian

    X, y, _ = _load(name)
    if name in DENSITY:
        return _fit_density(name, X, trees, folder)
    regression = name in REGRESSION
    params = {"n_estimators": trees, "n_jobs": 1, "random_state": 0}
    mf = (mondrian.MondrianForestRegressor if regression
          else mondrian.MondrianForestClassifier)(**params)
    et = (ExtraTreesRegressor if regression else ExtraTreesClassifier)(**params)
    files = {}
    for label, model in (("MF", mf), ("ET", et)):
        start = time.perf_counter()
        model.fit(X, y)
        log(f"  {name}: {label} fit {time.perf_counter() - start:.1f} s")
        files[label] = os.path.join(folder, f"{name}_{label}.pkl")
        with open(files[label], "wb") as f:
            pickle.dump(model, f, protocol=5)
    return files


def _fit_density(name: str, X, trees: int, folder: str) -> dict:
    """Fit the density of a density set, pickle it into ``folder``; return its file name."""
    import mondrian

    model = mondrian.MondrianForestDensity(n_estimators=trees, n_jobs=1, random_state=0)
    start = time.perf_counter()
    model.fit(X)
    log(f"  {name}: MF fit {time.perf_counter() - start:.1f} s")
    path = os.path.join(folder, f"{name}_MF.pkl")
    with open(path, "wb") as f:
        pickle.dump(model, f, protocol=5)
    return {"MF": path}


def _time_child(path: str, name: str, calls: int, src: str, std: bool = False) -> None:
    """Child side: load the model at ``path`` with the package in ``src``, time its
    predictions, print JSON."""
    import hashlib

    sys.path.insert(0, src)  # before the in-place build that ``shared`` put first
    import mondrian

    assert os.path.dirname(os.path.dirname(mondrian.__file__)) == os.path.abspath(src)
    with open(path, "rb") as f:
        model = pickle.load(f)
    _, _, X_test = _load(name)
    if name in DENSITY:
        predict = model.score_samples
    else:
        predict = model.predict if name in REGRESSION else model.predict_proba
    if std:
        def predict(X):
            return model.predict(X, return_std=True)[1]
    start_first = time.thread_time()
    first = predict(X_test)
    first_cpu = time.thread_time() - start_first
    last = first
    cpu, wall = [], []
    for _ in range(calls):
        start_cpu, start_wall = time.thread_time(), time.perf_counter()
        last = predict(X_test)
        cpu.append(time.thread_time() - start_cpu)
        wall.append(time.perf_counter() - start_wall)
    print(json.dumps({"cpu": float(np.median(cpu)), "wall": float(np.median(wall)),
                      "first": first_cpu, "fill": cpu[0], "rows": len(X_test),
                      # the first call's bits and a timed call's (which read the cache)
                      "checksum": hashlib.sha1(np.ascontiguousarray(first).tobytes()
                                               + np.ascontiguousarray(last).tobytes()
                                               ).hexdigest()}))


def _timed(path: str, name: str, calls: int, src: str, std: bool = False) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", path, "--sets", name,
                          "--calls", str(calls), "--src", src] + (["--std"] if std else []),
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _rows(name: str, trees: int, results: dict) -> list:
    """Table rows of one set: the medians of every variant, against ExtraTrees (if timed)."""
    cpu = {label: float(np.median([r["cpu"] for r in rs])) for label, rs in results.items()}
    et = cpu.get("ET")
    rows = []
    plain = ("score_samples" if name in DENSITY
             else "predict" if name in REGRESSION else "predict_proba")
    for suffix, method in (("", plain), (" std", "predict return_std")):
        if "MF" + suffix not in cpu:
            continue
        mf = cpu["MF" + suffix]
        first = float(np.median([r["first"] for r in results["MF" + suffix]]))
        fill = float(np.median([r.get("fill", np.nan) for r in results["MF" + suffix]]))
        rows_per_s = float(np.median([r.get("rows", np.nan) for r in results["MF" + suffix]])
                           / mf)
        row = {"data": name, "trees": trees, "method": method, "MF (s)": mf,
               "MF first (s)": first, "MF fill (s)": fill, "rows/s": f"{rows_per_s:,.0f}"}
        if et is not None:
            row.update({"ET (s)": et, "MF / ET": mf / et})
        base = "MF" + suffix + " baseline"
        if base in cpu:
            row["baseline (s)"] = cpu[base]
            if et is not None:
                row["baseline / ET"] = cpu[base] / et
            row["speed-up"] = cpu[base] / mf
            same = {r["checksum"] for r in results["MF" + suffix] + results[base]}
            row["same bits"] = "yes" if len(same) == 1 else "no"
        rows.append(row)
    return rows


def main(argv=None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--trees-200k", type=int, default=100,
                        help="trees on synthetic200k (its 100-tree model holds about 2 GB)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of the models' turns")
    parser.add_argument("--calls", type=int, default=3, help="timed calls per process")
    parser.add_argument("--baseline", default=None, help="src folder of another build")
    parser.add_argument("--output", default=None, help="append the table to this file")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--src", default=SRC, help=argparse.SUPPRESS)
    parser.add_argument("--std", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _time_child(args.child, args.sets, args.calls, args.src, args.std)
        return
    start_load = os.getloadavg()
    rows = []
    for name in args.sets.split(","):
        if name not in SETS:
            raise SystemExit(f"unknown set {name!r}; choose from {', '.join(SETS)}")
        trees = args.trees_200k if name == "synthetic200k" else args.trees
        with tempfile.TemporaryDirectory() as folder:
            try:
                files = _fit(name, trees, folder)
            except FileNotFoundError as exc:  # the real data sets are absent
                log(f"  {name}: skipped ({exc})")
                continue
            variants = [("MF", files["MF"], SRC, False)]
            if "ET" in files:
                variants.append(("ET", files["ET"], SRC, False))
            if args.baseline:
                variants.append(("MF baseline", files["MF"], os.path.abspath(args.baseline),
                                 False))
            if name in REGRESSION:
                variants.append(("MF std", files["MF"], SRC, True))
                if args.baseline:
                    variants.append(("MF std baseline", files["MF"],
                                     os.path.abspath(args.baseline), True))
            results = {label: [] for label, *_ in variants}
            for _ in range(args.repeats):
                for label, path, src, std in variants:
                    results[label].append(_timed(path, name, args.calls, src, std))
                    log(f"  {name}: {label} {results[label][-1]}")
        rows += _rows(name, trees, results)
    columns = ["data", "trees", "method", "MF (s)", "ET (s)", "MF / ET", "MF first (s)",
               "MF fill (s)", "rows/s"]
    if args.baseline:
        columns += ["baseline (s)", "baseline / ET", "speed-up", "same bits"]
    text = "\n".join([environment_line(), "", markdown_table(
        rows, columns, {"MF (s)": ".3f", "ET (s)": ".3f", "MF / ET": ".1f", "MF first (s)": ".3f",
                        "MF fill (s)": ".3f", "baseline (s)": ".3f", "baseline / ET": ".1f",
                        "speed-up": ".2f"}),
        "", load_line(start_load)])
    print(text)
    if args.output:
        with open(args.output, "a") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
