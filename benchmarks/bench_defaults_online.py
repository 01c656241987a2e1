"""The default Mondrian forest in a test-then-train stream, against river's AMFClassifier.

Each sample is first predicted, then learnt (prequential accuracy). Streams, in file order:

* ``letter``: the first 10000 rows of UCI letter (16 features, 26 classes);
* ``synth20k``: ``make_classification(20000, n_features=20, n_informative=10, n_classes=5,
  random_state=0)`` in its generated order.

Learners: ``MondrianForestClassifier`` with its defaults (label-aware weights searched once
the warm-up rows have arrived) and with ``feature_weights=None`` (the label-blind process),
through ``learn_one``/``predict_one`` on 1-D arrays, and river's
``AMFClassifier(n_estimators=10, seed=0)`` through dicts; 10 trees each. CPU time of the whole
loop (``time.process_time``), repeats interleaved, the median reported.

Run from the repository root::

    python benchmarks/bench_defaults_online.py --repeats 3
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from shared.datasets import load_xy, rows_as_dicts
from sklearn.datasets import make_classification

from mondrian import MondrianForestClassifier

N_TREES = 10


def streams(names):
    """``{name: (X, y)}`` of the requested streams."""
    out = {}
    if "letter" in names:
        X, y, _ = load_xy("letter")
        out["letter"] = (X[:10000], y[:10000])
    if "synth20k" in names:
        X, y = make_classification(20000, n_features=20, n_informative=10, n_classes=5,
                                   random_state=0)
        out["synth20k"] = (X, y)
    return out


def run_mondrian(X, y, **params):
    """Prequential correct count of a Mondrian forest fed by ``learn_one``."""
    model = MondrianForestClassifier(N_TREES, random_state=0, **params)
    classes = np.unique(y)
    correct = 0
    for i in range(len(y)):
        if i:
            correct += model.predict_one(X[i]) == y[i]
        model.learn_one(X[i], y[i], classes=classes)
    return correct


def run_amf(X, y):
    """Prequential correct count of river's AMFClassifier fed by dicts."""
    from river import forest

    model = forest.AMFClassifier(n_estimators=N_TREES, seed=0)
    rows = rows_as_dicts(X, [f"x{j}" for j in range(X.shape[1])])
    correct = 0
    for i, (row, label) in enumerate(zip(rows, y.tolist(), strict=True)):
        if i:
            correct += model.predict_one(row) == label
        model.learn_one(row, label)
    return correct


LEARNERS = {
    "MF (defaults)": lambda X, y: run_mondrian(X, y),
    "MF (feature_weights=None)": lambda X, y: run_mondrian(X, y, feature_weights=None),
    "river AMFClassifier": run_amf,
}


def main(argv=None):
    """Run the streams and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", default="letter,synth20k")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print("| stream | samples | learner | prequential accuracy | CPU time (s) | CPU / AMF |")
    print("|---|---:|---|---:|---:|---:|")
    for name, (X, y) in streams(args.streams.split(",")).items():
        times = {k: [] for k in LEARNERS}
        accuracy = {}
        for _ in range(args.repeats):
            for label, run in LEARNERS.items():
                start = time.process_time()
                correct = run(X, y)
                times[label].append(time.process_time() - start)
                accuracy[label] = correct / (len(y) - 1)
        amf = np.median(times["river AMFClassifier"])
        for label in LEARNERS:
            cpu = np.median(times[label])
            print(f"| {name} | {len(y)} | {label} | {accuracy[label]:.4f} | {cpu:.2f} | "
                  f"{cpu / amf:.2f} |", flush=True)


if __name__ == "__main__":
    main()
