"""The default Mondrian forest in a test-then-train stream, against river's AMFClassifier.

Each sample is first predicted, then learnt (prequential accuracy). Streams, in file order:

* ``letter``: the first 10000 rows of UCI letter (16 features, 26 classes);
* ``synth20k``: ``make_classification(20000, n_features=20, n_informative=10, n_classes=5,
  random_state=0)`` in its generated order.

Learners: ``MondrianForestClassifier`` with its defaults (label-aware weights searched once
the warm-up rows have arrived) and with ``feature_weights=None`` (the label-blind process),
through ``learn_one``/``predict_one`` on 1-D arrays, and river's
``AMFClassifier(n_estimators=10, seed=0)`` through dicts (the test-then-train loops of
``bench_online.py``); 10 trees each. CPU time of the whole
loop (``time.process_time``), repeats interleaved, the median reported.

Run from the repository root::

    python benchmarks/bench_defaults_online.py --repeats 3
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from bench_online import Stream, run_learn_one_array, run_learn_one_dict
from shared.datasets import load_xy
from sklearn.datasets import make_classification

from mondrian import MondrianForestClassifier

N_TREES = 10


def streams(names):
    """``{name: Stream}`` of the requested streams."""
    out = {}
    if "letter" in names:
        X, y, features = load_xy("letter")
        out["letter"] = Stream.from_arrays(X[:10000], y[:10000], features, np.unique(y))
    if "synth20k" in names:
        X, y = make_classification(20000, n_features=20, n_informative=10, n_classes=5,
                                   random_state=0)
        out["synth20k"] = Stream.from_arrays(X, y, [f"x{j}" for j in range(20)], np.unique(y))
    return out


def _amf():
    from river import forest

    return forest.AMFClassifier(n_estimators=N_TREES, seed=0)


# name -> (fresh model, test-then-train loop of bench_online.py)
LEARNERS = {
    "MF (defaults)": (lambda: MondrianForestClassifier(N_TREES, random_state=0),
                      run_learn_one_array),
    "MF (feature_weights=None)": (
        lambda: MondrianForestClassifier(N_TREES, random_state=0, feature_weights=None),
        run_learn_one_array),
    "river AMFClassifier": (_amf, run_learn_one_dict),
}


def main(argv=None):
    """Run the streams and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", default="letter,synth20k")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print("| stream | samples | learner | prequential accuracy | CPU time (s) | CPU / AMF |")
    print("|---|---:|---|---:|---:|---:|")
    for name, stream in streams(args.streams.split(",")).items():
        y = stream.y
        times = {k: [] for k in LEARNERS}
        accuracy = {}
        for _ in range(args.repeats):
            for label, (make, run) in LEARNERS.items():
                model = make()
                start = time.process_time()
                predictions = run(model, stream)
                times[label].append(time.process_time() - start)
                accuracy[label] = float(np.mean(predictions[1:] == y[1:]))
        amf = np.median(times["river AMFClassifier"])
        for label in LEARNERS:
            cpu = np.median(times[label])
            print(f"| {name} | {len(y)} | {label} | {accuracy[label]:.4f} | {cpu:.2f} | "
                  f"{cpu / amf:.2f} |", flush=True)


if __name__ == "__main__":
    main()
