"""The same river streams through river's AMF and through mondrian's forests (docs/river.md).

    python docs/examples/river_side_by_side.py

Progressive validation (predict, then learn, every sample) on river's bundled datasets, with a
StandardScaler in front of every model, 10 trees each, fixed seeds. Prints a markdown table:
metric and training + prediction time of each model (the median of --repeats runs).
"""

import argparse
import statistics
import time

from river import datasets, evaluate, forest, metrics, preprocessing

from mondrian import MondrianForestClassifier, MondrianForestRegressor
from mondrian.river import RiverClassifier, RiverRegressor

N_TREES = 10

CLASSIFICATION = {
    "Phishing": datasets.Phishing,
    "Bananas": datasets.Bananas,
    "ImageSegments": datasets.ImageSegments,
}
REGRESSION = {
    "TrumpApproval": datasets.TrumpApproval,
    "ChickWeights": datasets.ChickWeights,
}


def classifiers():
    return {
        "river AMFClassifier": lambda: forest.AMFClassifier(n_estimators=N_TREES, seed=0),
        "mondrian MondrianForestClassifier": lambda: RiverClassifier(
            MondrianForestClassifier(N_TREES, random_state=0)),
    }


def regressors():
    return {
        "river AMFRegressor": lambda: forest.AMFRegressor(n_estimators=N_TREES, seed=0),
        "mondrian MondrianForestRegressor": lambda: RiverRegressor(
            MondrianForestRegressor(N_TREES, random_state=0)),
    }


def run(stream, make, metric):
    model = preprocessing.StandardScaler() | make()
    start = time.perf_counter()
    score = evaluate.progressive_val_score(stream, model, metric)
    return score.get(), time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print("| stream | samples | model | metric | value | time (s) |")
    print("|---|---:|---|---|---:|---:|")
    tasks = [(CLASSIFICATION, classifiers, metrics.Accuracy, "accuracy"),
             (REGRESSION, regressors, metrics.MAE, "MAE")]
    for sets, models, metric, name in tasks:
        for label, dataset in sets.items():
            stream = list(dataset())
            makers = models()
            times = {model: [] for model in makers}
            values = {}
            for _ in range(args.repeats):  # models interleaved, medians reported
                for model, make in makers.items():
                    values[model], elapsed = run(stream, make, metric())
                    times[model].append(elapsed)
            for model in makers:
                print(f"| {label} | {len(stream)} | {model} | {name} | {values[model]:.4f} | "
                      f"{statistics.median(times[model]):.2f} |")


if __name__ == "__main__":
    main()
