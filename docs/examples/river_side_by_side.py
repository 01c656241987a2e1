"""The same river streams through river's AMF and through mondrian's forests (docs/river.md).

    python docs/examples/river_side_by_side.py

Progressive validation (predict, then learn, every sample) on river's bundled datasets, with a
StandardScaler in front of every model, 10 trees each, fixed seeds. Prints a markdown table:
metric and the CPU time of the whole stream, prediction and learning, of each model (the median
of --repeats runs, the models interleaved). --limit N keeps the first N samples of each stream
(a cheaper run).
"""

import argparse
import statistics
import time

from river import datasets, evaluate, forest, metrics, preprocessing

from mondrian.river import MondrianClassifier, MondrianRegressor

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
        "river AMF": lambda: forest.AMFClassifier(n_estimators=N_TREES, seed=0),
        "mondrian": lambda: MondrianClassifier(n_estimators=N_TREES, seed=0),
    }


def regressors():
    return {
        "river AMF": lambda: forest.AMFRegressor(n_estimators=N_TREES, seed=0),
        "mondrian": lambda: MondrianRegressor(n_estimators=N_TREES, seed=0),
    }


def run(stream, make, metric):
    model = preprocessing.StandardScaler() | make()
    start = time.process_time()
    score = evaluate.progressive_val_score(stream, model, metric)
    return score.get(), time.process_time() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    print("| stream | samples | model | metric | value | CPU time (s) |")
    print("|---|---:|---|---|---:|---:|")
    tasks = [(CLASSIFICATION, classifiers, metrics.Accuracy, "accuracy"),
             (REGRESSION, regressors, metrics.MAE, "MAE")]
    for sets, models, metric, name in tasks:
        for label, dataset in sets.items():
            stream = list(dataset())[:args.limit]
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
