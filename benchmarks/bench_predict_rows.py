"""Prediction cost against the number of rows per call, 1 to 10000 (issue 24).

For each set, one fit of the Mondrian forest (``--trees`` trees, ``n_jobs=1``), pickled; then a
fresh process per build (this one, and ``--baseline SRC`` when given) loads it and times
``predict_proba`` (``predict`` on the regression sets) on calls of 1, 3, 10, ..., 10000 rows
drawn from the test rows, in two states (the thread's CPU time, the minimum of ``--calls``):

- *warm*: a model whose prediction cache (``mondrian.forest._node_cache``) holds every tree's
  entry, filled by two calls on the whole test set before the sizes are timed (one warm-up
  call of each size, then the timed calls);
- *cold*: the first call of a freshly unpickled model (nothing cached), one fresh model per
  timed call.

Every call draws other rows (the same rows again would find their paths in the CPU's caches).

Prints a table of the time per call and per row, the largest rise of the cost per row from one
size to the next, and plots both against the number of rows (log-log) into
``benchmarks/results/predict_rows.png``.

Run from the repository root::

    python benchmarks/bench_predict_rows.py --sets usps,letter,kin8nm --trees 20 \\
        --baseline /work/main/src --output benchmarks/results/predict.md
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

from bench_predict import REGRESSION, SRC, _load  # noqa: E402
from shared.report import environment_line, load_line, log, markdown_table  # noqa: E402

SIZES = (1, 3, 10, 30, 100, 300, 1000, 3000, 10000)
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def _child(path: str, name: str, calls: int, src: str) -> None:
    """Child side: load the model with the package in ``src``, time every size, print JSON."""
    sys.path.insert(0, src)
    import mondrian

    assert os.path.dirname(os.path.dirname(mondrian.__file__)) == os.path.abspath(src)
    with open(path, "rb") as f:
        blob = f.read()
    _, _, X_test = _load(name)
    method = "predict" if name in REGRESSION else "predict_proba"
    predict = getattr(pickle.loads(blob), method)
    predict(X_test)  # (asks for every tree's entry)
    predict(X_test)  # (fills them)
    rng = np.random.default_rng(0)
    out = {}
    for n in SIZES:
        # Other rows at every call: the same rows again would find their paths in the CPU's
        # caches, which a call of few rows does not in use.
        draws = [np.ascontiguousarray(X_test[rng.integers(0, len(X_test), n)])
                 for _ in range(2 * calls + 1)]
        cold = []
        for rows in draws[:calls]:
            fresh = getattr(pickle.loads(blob), method)
            start = time.thread_time()
            fresh(rows)
            cold.append(time.thread_time() - start)
        predict(draws[calls])
        warm = []
        for rows in draws[calls + 1:]:
            start = time.thread_time()
            predict(rows)
            warm.append(time.thread_time() - start)
        out[n] = [float(np.min(warm)), float(np.min(cold))]
    print(json.dumps(out))


def _timed(path: str, name: str, calls: int, src: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", path, "--sets", name,
                          "--calls", str(calls), "--src", src], capture_output=True,
                         text=True, check=True)
    return {int(k): v for k, v in json.loads(out.stdout.strip().splitlines()[-1]).items()}


def _per_row_steps(times: dict, state: int = 0) -> str:
    """The largest rise of the cost per row from one size to the next (x times), where a
    call of more rows costs more per row than the call of fewer before it (a step);
    ``state`` 0 reads the warm calls, 1 the cold ones."""
    n = sorted(times)
    rises = [(times[b][state] / b) / (times[a][state] / a)
             for a, b in zip(n[:-1], n[1:], strict=True)]
    worst = int(np.argmax(rises))
    return f"{rises[worst]:.2f} ({n[worst]} -> {n[worst + 1]} rows)"


def _plot(curves: dict, path: str) -> None:
    """Time per call and per row against rows per call, one line per set and build."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for (name, build), times in curves.items():
        n = np.array(sorted(times))
        for state, label in ((0, "warm"), (1, "cold")):
            t = np.array([times[k][state] for k in n])
            style = ("-o" if state == 0 else ":s") if build == "this build" else (
                "--x" if state == 0 else "-.+")
            axes[0].loglog(n, t, style, label=f"{name} ({build}, {label})")
            axes[1].loglog(n, t / n, style, label=f"{name} ({build}, {label})")
    axes[0].set(xlabel="rows per call", ylabel="CPU seconds per call",
                title="cost of a call")
    axes[1].set(xlabel="rows per call", ylabel="CPU seconds per row", title="cost per row")
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="usps,letter,kin8nm")
    parser.add_argument("--trees", type=int, default=20)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--baseline", default=None, help="src folder of another build")
    parser.add_argument("--output", default=None, help="append the table to this file")
    parser.add_argument("--plot", default=os.path.join(RESULTS, "predict_rows.png"))
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--src", default=SRC, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.sets, args.calls, args.src)
        return
    import mondrian

    start_load = os.getloadavg()
    builds = [("this build", SRC)]
    if args.baseline:
        builds.append(("baseline", os.path.abspath(args.baseline)))
    curves, rows, steps = {}, [], []
    for name in args.sets.split(","):
        X, y, _ = _load(name)
        cls = (mondrian.MondrianForestRegressor if name in REGRESSION
               else mondrian.MondrianForestClassifier)
        model = cls(n_estimators=args.trees, n_jobs=1, random_state=0).fit(X, y)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "model.pkl")
            with open(path, "wb") as f:
                pickle.dump(model, f, protocol=5)
            for build, src in builds:
                curves[name, build] = _timed(path, name, args.calls, src)
                log(f"  {name} ({build}): {curves[name, build]}")
        for n in SIZES:
            row = {"data": name, "rows": n}
            for build, _ in builds:
                row[f"{build} (ms/call)"] = 1e3 * curves[name, build][n][0]
                row[f"{build} (us/row)"] = 1e6 * curves[name, build][n][0] / n
                row[f"{build} cold (ms/call)"] = 1e3 * curves[name, build][n][1]
                row[f"{build} cold (us/row)"] = 1e6 * curves[name, build][n][1] / n
            rows.append(row)
        for build, _ in builds:
            for state, label in ((0, "warm"), (1, "cold")):
                steps.append(f"- {name}, {build}, {label}: largest rise of the cost per row "
                             f"{_per_row_steps(curves[name, build], state)}")
                log(steps[-1])
    columns = ["data", "rows"] + [f"{b}{c} ({u})" for b, _ in builds for c in ("", " cold")
                                  for u in ("ms/call", "us/row")]
    text = "\n".join([environment_line(), "", f"{args.trees} trees, minimum of {args.calls} "
                      "calls, thread CPU time (warm: the cache filled; cold: a fresh model's "
                      "first call)", "", markdown_table(
                          rows, columns, {c: ".2f" for c in columns[2:]}),
                      "", *steps, "", load_line(start_load)])
    print(text)
    _plot(curves, args.plot)
    if args.output:
        with open(args.output, "a") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
