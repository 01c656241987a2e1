"""Label-aware feature weights (issue 12): ``feature_weights`` on the Mondrian forests.

Regression, on the UCI sets with their standard 90/10 splits (the first ``--splits``):
``MondrianForestRegressor`` with ``feature_weights=None`` and ``"auto"`` (and any other method
given in ``--methods``), 100 trees, against scikit-learn's ``RandomForestRegressor``,
``ExtraTreesRegressor`` and ``HistGradientBoostingRegressor`` (context). Reported per
(dataset, model), mean over splits: test RMSE, RMSE / RF, Gaussian NLL (RF and ET: variance of
the trees' predictions + 0.01 var(y_train), as in ``bench_regression.py``; HGB has none), and
the fit time relative to RF (the Mondrian fit includes the weight search). Classification on
letter, satimage, usps and dna (their fixed splits): accuracy and fit time, Mondrian forest
without and with weights against RF.

Every model is fitted once per split (``n_jobs=1``, interleaved); ratios of times are the
meaningful figures on a shared machine.

Run from the repository root::

    python benchmarks/bench_weights.py regression --splits 3
    python benchmarks/bench_weights.py classification --seeds 5
    python benchmarks/bench_weights.py diagnose --seeds 3          # satimage: where the gap is
    python benchmarks/bench_weights.py regression --datasets yacht,energy --methods permutation

Rows are appended to ``benchmarks/results/weights_<task>.jsonl`` as they come (``--raw``); the
report (``benchmarks/results/weights.md``) is written by ``report``.
"""

from __future__ import annotations

import argparse
import sys

from weights_bench.diagnose import run_diagnose
from weights_bench.rows import CLASSIFICATION, REGRESSION
from weights_bench.runners import run_classification, run_online, run_regression
from weights_bench.tables import report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("task", choices=["regression", "classification", "diagnose", "online",
                                         "report"])
    parser.add_argument("--datasets", default=None)
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=1,
                        help="classification, diagnose: forest seeds 0..n-1")
    parser.add_argument("--methods", default="auto")
    parser.add_argument("--models", default=None, help="only these models (comma separated)")
    args = parser.parse_args(argv)
    args.methods = [m for m in args.methods.split(",") if m]
    args.models = None if args.models is None else args.models.split(",")
    if args.task == "report":
        return report(args)
    default = {"classification": CLASSIFICATION, "diagnose": ("satimage",)}.get(args.task,
                                                                               REGRESSION)
    args.datasets = default if args.datasets is None else args.datasets.split(",")
    {"regression": run_regression, "classification": run_classification,
     "diagnose": run_diagnose, "online": run_online}[args.task](args)


if __name__ == "__main__":
    sys.exit(main())
