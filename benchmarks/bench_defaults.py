"""The default Mondrian forests against the supervised forests they replace.

A user who swaps ``RandomForestClassifier`` for ``MondrianForestClassifier()`` keeps the
defaults. This script measures that swap: every model with its defaults, 100 trees, ``n_jobs=1``,
``random_state=0``, fit CPU time (``time.process_time``, the weight search included), models
fitted interleaved on the same split so the ratios share the machine's load.

* ``classification``: accuracy and fit CPU time on letter, usps, satimage, dna, pendigits
  (their fixed splits) and ``make_classification(n_features=20, n_informative=10,
  n_classes=5, random_state=0)`` at 20k, 100k and 400k rows (last 25% held out) for
  ``MF`` (the default, label-aware cuts), ``MF-blind`` (``feature_weights=None``, the
  label-blind process and the default before label-aware cuts), ExtraTrees and RandomForest.
* ``regression``: the 8 UCI sets on their first ``--splits`` standard splits: RMSE, RMSE / RF,
  Gaussian NLL (RF: mean and spread of its trees plus 0.01 var(y_train)) and fit CPU / RF.
* ``calibration``: coverage of the default regressor's 95% intervals on the noisy sine
  ``y = sin(6x) + 0.3 N(0, 1)`` at n = 30, 100, 1000 (``--seeds`` data sets each), and the
  predictive std at identical inputs against ``s * sqrt(1 + 1/n)``.

Run from the repository root (rows are appended to ``results/defaults_<task>.jsonl``; ``report``
writes ``results/defaults.md``; ``--label before`` tags rows measured on an older build)::

    python benchmarks/bench_defaults.py classification --datasets dna,satimage
    python benchmarks/bench_defaults.py classification --datasets synth400k
    python benchmarks/bench_defaults.py regression --splits 3
    python benchmarks/bench_defaults.py debias --splits 3
    python benchmarks/bench_defaults.py calibration --seeds 10
    python benchmarks/bench_defaults.py --src ../main/src calibration --seeds 10 --label before
    python benchmarks/bench_defaults.py report
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import norm
from shared.datasets import load_classification, load_uci_regression, load_xy
from shared.metrics import gaussian_nll, rmse
from sklearn.datasets import make_classification
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)

# ``--src PATH`` (before any other option): run the package of another checkout, for the
# ``before`` rows (``shared`` put this checkout's src first on sys.path).
if "--src" in sys.argv:
    _at = sys.argv.index("--src")
    sys.path.insert(0, sys.argv[_at + 1])
    del sys.argv[_at:_at + 2]

from mondrian import MondrianForestClassifier, MondrianForestRegressor  # noqa: E402

RESULTS = Path(__file__).parent / "results"
N_TREES = 100
VARIANCE_FLOOR = 0.01
REAL = ("letter", "usps", "satimage", "dna", "pendigits")
SYNTH = {"synth20k": 20_000, "synth100k": 100_000, "synth400k": 400_000}
REGRESSION = ("power_plant", "kin8nm", "naval", "concrete", "energy", "wine_red", "yacht",
              "protein")
CALIBRATION_SIZES = (30, 100, 1000)
# Row labels of the report, oldest build first: ``before`` the build before label-aware
# defaults, ``main`` the defaults of main 76f394f (before the 25-tree relevance of the
# classifiers), ``after`` this build.
LABELS = ("before", "main", "after")


def _timed(function):
    start = time.process_time()
    out = function()
    return time.process_time() - start, out


def _append(name, row):
    with open(RESULTS / f"defaults_{name}.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")


def _read(name):
    path = RESULTS / f"defaults_{name}.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load(name):
    """``(X_train, y_train, X_test, y_test)`` of a classification set."""
    if name in SYNTH:
        X, y = make_classification(SYNTH[name], n_features=20, n_informative=10, n_classes=5,
                                   random_state=0)
        cut = int(0.75 * len(y))
        return X[:cut], y[:cut], X[cut:], y[cut:]
    if name == "pendigits":
        X_tr, y_tr, _ = load_xy("pendigits_train")
        X_te, y_te, _ = load_xy("pendigits_test")
        return X_tr, y_tr, X_te, y_te
    data = load_classification(name)
    return data.X_train, data.y_train, data.X_test, data.y_test


def _models(mondrian, extra_trees, random_forest):
    """The compared models (fresh for each fit): the default, label-blind, ET and RF."""
    return {
        "MF": lambda: mondrian(N_TREES, random_state=0),
        "MF-blind": lambda: mondrian(N_TREES, feature_weights=None, random_state=0),
        "ET": lambda: extra_trees(N_TREES, random_state=0),
        "RF": lambda: random_forest(N_TREES, random_state=0),
    }


CLASSIFIERS = _models(MondrianForestClassifier, ExtraTreesClassifier, RandomForestClassifier)


def run_classification(args):
    for name in args.datasets:
        X, y, Xt, yt = load(name)
        for model_name in args.models or CLASSIFIERS:
            model = CLASSIFIERS[model_name]()
            fit_s, model = _timed(lambda m=model, A=X, b=y: m.fit(A, b))
            row = {"label": args.label, "dataset": name, "model": model_name,
                   "accuracy": float(np.mean(model.predict(Xt) == yt)), "fit_s": fit_s}
            info = getattr(model, "feature_weights_info_", None)
            if info is not None:
                row["power"], row["map"] = info["power"], info["map"]
            _append("classification", row)
            print(row, flush=True)


def _tree_moments(forest, X, floor):
    preds = np.stack([t.predict(np.asarray(X, np.float32), check_input=False)
                      for t in forest.estimators_])
    return preds.mean(axis=0), preds.var(axis=0) + floor


REGRESSORS = _models(MondrianForestRegressor, ExtraTreesRegressor, RandomForestRegressor)


def run_regression(args):
    for name in args.datasets:
        for split in range(args.splits):
            data = load_uci_regression(name, split)
            floor = VARIANCE_FLOOR * float(np.var(data.y_train))
            for model_name in args.models or REGRESSORS:
                model = REGRESSORS[model_name]()
                fit_s, model = _timed(lambda m=model, d=data: m.fit(d.X_train, d.y_train))
                if model_name in ("RF", "ET"):
                    mean, var = _tree_moments(model, data.X_test, floor)
                else:
                    mean, std = model.predict(data.X_test, return_std=True)
                    var = std**2
                row = {"label": args.label, "dataset": name, "split": split,
                       "model": model_name, "rmse": rmse(data.y_test, mean),
                       "nll": gaussian_nll(data.y_test, mean, var), "fit_s": fit_s}
                _append("regression", row)
                print(row, flush=True)


def run_debias(args):
    """The debiased default against the plain forest (``debias=None``, the default before it)
    and RandomForest, on the UCI standard splits. The plain forest is the debiased model with
    its combination removed (the same trees: the choice draws no random number); its fit time
    is the default's minus the CPU time of the combination's choice, measured around
    :func:`mondrian.forest.debias.choose_combination`."""
    import mondrian.forest.regressor as regressor_module

    chosen = regressor_module.choose_combination
    clock = [0.0]

    def timed_choice(*a, **k):
        start = time.process_time()
        try:
            return chosen(*a, **k)
        finally:
            clock[0] += time.process_time() - start

    regressor_module.choose_combination = timed_choice
    try:
        for name in args.datasets:
            for split in range(args.splits):
                data = load_uci_regression(name, split)
                floor = VARIANCE_FLOOR * float(np.var(data.y_train))
                rf = RandomForestRegressor(N_TREES, random_state=0)
                rf_s, rf = _timed(lambda m=rf, d=data: m.fit(d.X_train, d.y_train))
                mean, var = _tree_moments(rf, data.X_test, floor)
                rows = [("RF", "after", mean, var, rf_s, None), ("RF", "before", mean, var, rf_s,
                                                                  None)]
                clock[0] = 0.0
                mf = MondrianForestRegressor(N_TREES, random_state=0)
                mf_s, mf = _timed(lambda m=mf, d=data: m.fit(d.X_train, d.y_train))
                info = mf.debias_
                mean, std = mf.predict(data.X_test, return_std=True)
                rows.append(("MF", "after", mean, std**2, mf_s, info))
                mf.__dict__.pop("_debias_choice", None)  # the plain forest (debias=None)
                mean, std = mf.predict(data.X_test, return_std=True)
                rows.append(("MF", "before", mean, std**2, mf_s - clock[0], None))
                for model_name, label, mean, var, fit_s, info in rows:
                    row = {"label": label, "dataset": name, "split": split, "model": model_name,
                           "rmse": rmse(data.y_test, mean),
                           "nll": gaussian_nll(data.y_test, mean, var), "fit_s": fit_s,
                           "trees": N_TREES}
                    if info is not None:
                        row["debias"] = [info["lifetime"], info["weights"][1],
                                         info["variance_factor"]]
                    _append("regression", row)
                    print(row, flush=True)
    finally:
        regressor_module.choose_combination = chosen


def sine(n, seed):
    rng = np.random.RandomState(seed)
    x = rng.uniform(size=(n, 1))
    return x, np.sin(6 * x[:, 0]) + 0.3 * rng.normal(size=n)


def identical_inputs(n, seed):
    """Predictive std at an input shared by all ``n`` training rows, over ``s sqrt(1 + 1/n)``
    (``s`` the sample std of the targets)."""
    rng = np.random.RandomState(seed)
    y = rng.normal(size=n)
    model = MondrianForestRegressor(10, random_state=seed).fit(np.zeros((n, 1)), y)
    std = model.predict(np.zeros((1, 1)), return_std=True)[1][0]
    return float(std / (y.std(ddof=1) * np.sqrt(1 + 1 / n)))


def run_calibration(args):
    z = norm.ppf(0.975)
    for n in CALIBRATION_SIZES:
        for seed in range(args.seeds):
            X, y = sine(n, seed)
            Xt, yt = sine(2000, 10_000 + seed)
            mean, std = MondrianForestRegressor(N_TREES, random_state=seed).fit(X, y).predict(
                Xt, return_std=True)
            row = {"label": args.label, "n": n, "seed": seed,
                   "coverage": float(np.mean(np.abs(yt - mean) <= z * std)),
                   "identical_std_ratio": identical_inputs(n, seed)}
            _append("calibration", row)
            print(row, flush=True)


NOTES = """## Notes (run of 2026-11-27)

* Labels: `main` the defaults of main 76f394f (run of 2026-11-27, before this change), `after`
  this build (run of 2026-11-27 16:38-16:57 UTC, machine shared with 5 other jobs, load
  average 6-8 on 2 cores). The change since `main`: the classifiers' weight search no longer
  probes the quantile map (`mondrian.estimator.weights.CLASSIFIER_QUANTILE_PROBE`): the min-max
  map won all 34 recorded classification searches (the sets above, forest seeds 0-4, here and
  in weights.md), so the forests are bit for bit those of `main` (same accuracies, same
  fingerprints but the classifiers' pickles, whose `feature_weights_info_["quantile_score"]`
  is now None) for 4 probes instead of 5. The regressors are unchanged (their fingerprints
  are identical): the regression rows below stand for this build.
* Classification targets (accuracy >= the better of RF and ET minus 1 point; fit CPU <= 1.5x
  ET, search included), `after`: met on dna, letter, pendigits, make_classification 20k, 100k
  and 400k; usps now meets the fit CPU target (1.30x ET, was 1.59x in the `main` run; the
  label-blind fit 1.13x, was 1.32x) but not the accuracy (0.924 against 0.932); satimage
  misses by 0.4 points (0.901 against 0.905: the search keeps uniform weights, see
  weights.md). Read the usps CPU ratio with the load: the label-blind fit alone measured
  1.03-1.32x ET in runs of this day. Three interleaved repetitions on usps right after the
  run (load average 7-9): the default 1.33 / 1.50 / 1.29x ET (pooled 1.37x), the same search
  with the quantile probe (`main`) 1.46 / 1.51 / 1.68x (1.55x), the label-blind fit 1.03x.
  The search costs 0.6 s of CPU on usps (profiled: relevance 0.17 s, 4 probes of 0.1 s, half
  of each in its validation predictions; the weighted forest then grows a little faster than
  the blind one), so the
  load decides how close to 1.5x it lands (0.1 s less than `main` is 6% of ET's fit).
* Designs measured for the remaining gaps and rejected (this round; 100 trees, seed 0 unless
  said): (1) relevance from 25 extra trees instead of 50 (classes): search 0.62 -> 0.53 s on
  usps, but at seed 0 usps picked p = 2 (0.9238 -> 0.9153), dna 0.9359 -> 0.9317, letter
  0.9632 -> 0.9612; forest seeds 1-3: usps 0.9253/0.9223/0.9188 -> 0.9317/0.9292/0.9188,
  dna 0.9317/0.9325/0.9309 -> 0.9334/0.9283/0.9300, letter 0.9676/0.9650/0.9662 ->
  0.9684/0.9648/0.9682, satimage unchanged: the same mean for a noisier choice (rows
  `relevance25` of the jsonl). (2) Probes of 10 trees instead of 20: usps then picks p = 2
  (validation 0.875-0.895 for every power; p = 2 reads 0.918 on the test rows), letter p = 1.
  (3) Early stop of the power search at the first power scoring below the previous one: the
  same choices on the 6 sets (usps saves the p = 2 probe, 0.09 s), but on a 400-row XOR toy
  (80 validation rows) a dip of one row pair (0.9125 -> 0.8875) stopped it before p = 2
  (0.9625) and it kept uniform weights; stopping only when the best power so far beats the
  next by one paired standard error never fired on the 5 real sets. (4) Cross-fitted power
  choice for the regressors (two halves, each validating the probes fitted on the other:
  every row validates), 3 splits: mean RMSE / RF yacht 1.284 -> 1.287, energy 1.105 ->
  1.033, concrete 1.023 -> 1.089 (probes fitted on half the rows prefer larger powers: p = 1
  over 0.5 on splits 1 and 2), wine_red 0.994 -> 0.987, search +40% CPU: no net gain.
  (5) A wider held-out grid (the choice sat at its edge on yacht: share 1e-6, rate x64):
  rate multipliers up to 1024 gave yacht split 0 1.287 -> 1.758 (splits 1, 2 and energy
  unchanged); with noise shares down to 1e-9 too, split 0 1.793 and split 2 1.505 -> 1.612
  (56-62 held-out points cannot choose from a wider grid).
* Why yacht (1.28) and energy (1.11) stay behind RF: on yacht no fixed hyperparameters read
  off the test rows close the gap (noise share 1e-6-1e-2 x sigmoid rate 0.1-100, plain
  forest: best 1.157 / 1.488 / 1.496 of RF on splits 0-2, against the default's 1.287 /
  1.061 / 1.505), nor fixed weight powers (split 0: p = 1, 2, 4, 8 give 1.287, 1.251, 1.271,
  4.88); `smoothing="independent"` gives 17x: the limit is the partition and the
  hierarchical prior's pull toward the parents at the steep end of the resistance curve, not
  a choice. Energy's mean is one split: split 0 picks p = 0.5 by the one-standard-error rule
  (1.298; p = 1 would give 1.052, splits 1 and 2 are at 0.971 and 1.047), and dropping the
  rule (energy 1.105 -> 1.025) loses more on concrete (1.023 -> 1.078) and yacht (1.284 ->
  1.399, split 2 1.505 -> 1.850).
* The search reads a quarter of the batch, clipped to 2000-8000 rows
  (`mondrian.estimator.relevance.search_size`). Earlier designs measured in this run: every row up
  to 8000 gave usps 0.931 at 3.5x ET, letter 0.969 at 1.7x ET, satimage 1.55x ET,
  make_classification 20k 0.850 at 1.12x ET; a fixed 4000 gave the 20k set 0.837 and the 100k
  set 0.848; on the 100k set 2000 / 8000 / 16000 search rows gave 0.849 / 0.856 / 0.858.
* Regression, `debias="auto"` (task `debias`, run of 2026-11-27 13:35-13:52 UTC, 8 sets x 3
  standard splits, 100 trees; the label-aware rows of the previous run, 1 split, are in
  `results/defaults_regression_labelaware.jsonl`): mean RMSE / RF 1.075 -> 1.033, NLL better
  than RF's on 4 -> 5 of 8 (kin8nm joins yacht, energy, wine_red, naval), mean fit 1.09 ->
  1.13x RF (the choice costs about 3% of the fit). The combination is kept on 9 of 24 splits:
  kin8nm 1.009 -> 0.794 (all 3), naval 1.076 -> 0.980 (all 3), power_plant split 1 1.086 ->
  1.038, concrete split 0 1.003 -> 0.979 (NLL +0.151 -> +0.198: the variance factor 0.71
  chosen on 186 held-out points was too small there). Targets not met: mean RMSE / RF <= 1.0
  (yacht 1.28, energy 1.11, protein 1.04, concrete 1.02, power_plant 1.04 keep it above), NLL
  better on >= 6 of 8 (concrete, power_plant, protein lose by 0.05-0.12; their RMSE is 2-7%
  above RF's). Fit CPU <= 2x RF is met on every set (energy 1.88-1.96x is the closest).
* Debias designs measured on the way (same splits, 100 trees unless said): with a one-standard-
  error guard alone (no cross-fitting, variance factor from the error ratio, free to widen)
  yacht split 0 went 1.287 -> 1.559 (beta 1.14 from 56 held-out points) and wine_red's NLL
  from -1.94 to +3572 (the mean moved at test rows repeating a training input, where the plain
  forest is sure); that version also kept concrete split 2 (1.048 -> 0.989) and energy split 0
  (1.298 -> 1.257), which the cross-fitted guard now declines. A `g shift**2` variance term
  alone did not save wine_red (NLL -1.54 -> -0.27, 50 trees): the held-out likelihood check
  now declines it. Pairs of finite lifetimes with the Richardson weights of a bias c / l**p
  (p = 1 or 2) read off the test rows were weaker than extrapolating the fitted forest
  (kin8nm split 0, 50 trees: best pair 0.870, best (1 + beta) m(fitted) - beta m(l) 0.777;
  energy 1.218 against 1.211). The best combination read off the test rows gains little
  where the forest trails RF most (yacht split 0, 50 trees: 1.397 -> 1.193; power_plant split
  0: 1.019 -> 1.012): the remaining gap is not the bias the combination cancels.
* A variance factor `f` bounded below by the held-out ratio of the combination's normalised
  squared errors to the plain forest's (concrete, kin8nm, power_plant, naval rerun): concrete
  split 0's NLL - RF +0.198 -> +0.147, but kin8nm's -0.223/-0.206/-0.203 ->
  -0.157/-0.201/-0.168, naval's -0.643/-0.743 -> -0.514/-0.626 on splits 0 and 2, and naval
  split 1 lost its combination to the likelihood check (RMSE / RF 1.013 -> 1.153): rejected.
  Cross-fitting on 5 folds instead of 2 made the same choices on yacht, energy and concrete
  (50 trees).
* Calibration with `debias="auto"`: on the noisy sine the guard kept the plain forest on all
  6 seeds tried at n = 100 and n = 1000 (100 trees; n = 30 is under the held-out choice's 50
  points), so the calibration rows above stand. Online: a 3000-row kin8nm stream
  (`predict_one` then `learn_one`, 10 trees) costs 3.51 s of CPU against 2.22 s with
  `debias=None` (the shorter reading's messages are recomputed after every update, over the
  trees' part above `l`), prequential RMSE 0.183 against 0.191.
* Calibration: the marginal-likelihood grid of noise shares now reaches 1, so identical inputs
  at n = 30 give 0.968 of s sqrt(1 + 1/n) (was 0.824). At n = 100 the held-out choice decides:
  0.988 on average but 0.89-1.32 on single data sets (the variance scale read off 20 held-out
  points). The sine's coverage is 0.970 at n = 30 (too wide on single data sets; 0.976 over 20
  sets with 20 trees), 0.949 at n = 100, 0.951 at n = 1000.
"""


def _mean(rows, key):
    values = [r[key] for r in rows]
    return float(np.mean(values)) if values else float("nan")


def report(args):
    lines = ["# The defaults against the supervised forests", "",
             "100 trees, n_jobs=1, random_state=0, each model with its defaults; fit CPU time "
             "(process_time, weight search included), models fitted interleaved per set on a "
             "shared 2-core machine (read the ratios). `MF`: the default "
             "(`feature_weights=\"auto\"`, label-aware cuts); `MF-blind`: "
             "`feature_weights=None` (the label-blind process, the former default). "
             "`before` rows: measured on the build before label-aware defaults, `main` rows on "
             "main 76f394f (see the notes; regression: see its section). "
             "Script: `benchmarks/bench_defaults.py`.", ""]
    rows = _read("classification")
    if rows:
        lines += ["## Classification", "",
                  "| dataset | label | model | accuracy | target (best of RF, ET - 1 pt) | "
                  "fit CPU s | fit / ET | power (map) |", "|---|---|---|---|---|---|---|---|"]
        for name in (*REAL, *SYNTH):
            for label in LABELS:
                sel = [r for r in rows if r["dataset"] == name and r["label"] == label]
                if not sel:
                    continue
                by = {r["model"]: r for r in sel}  # the last row of each model
                peers = [by[m]["accuracy"] for m in ("RF", "ET") if m in by]
                target = max(peers) - 0.01 if peers else float("nan")
                et = by.get("ET", {}).get("fit_s")
                for model_name, r in by.items():
                    ratio = f"{r['fit_s'] / et:.2f}" if et else "—"
                    power = f"{r['power']} ({r['map']})" if "power" in r else ""
                    lines.append(f"| {name} | {label} | {model_name} | {r['accuracy']:.4f} | "
                                 f"{target:.4f} | {r['fit_s']:.2f} | {ratio} | {power} |")
        lines.append("")
    rows = _read("regression")
    if rows:
        lines += ["## Regression (UCI standard splits)", "",
                  "Task `debias`: `before` is the default before `debias=\"auto\"` "
                  "(`debias=None`: the same fitted forest with its combination removed; its fit "
                  "CPU is the default's minus the combination's choice), `after` the default. "
                  "RF: RandomForestRegressor, NLL from its trees' mean and spread plus 0.01 "
                  "var(y_train). `debiased`: splits where the combination was kept (mean of its "
                  "weight -beta on m(l)).", "",
                  "| dataset | label | model | splits | RMSE / RF | NLL | NLL - RF | fit / RF | "
                  "debiased |", "|---|---|---|---|---|---|---|---|---|"]
        summary = {}
        for name in REGRESSION:
            for label in ("before", "after"):
                sel = [r for r in rows if r["dataset"] == name and r["label"] == label]
                rf = {r["split"]: r for r in sel if r["model"] == "RF"}
                if not rf:
                    continue
                for model_name in REGRESSORS:
                    mine = {r["split"]: r for r in sel if r["model"] == model_name}
                    splits = sorted(set(mine) & set(rf))
                    if not splits:
                        continue
                    ratio = np.mean([mine[s]["rmse"] / rf[s]["rmse"] for s in splits])
                    nll = np.mean([mine[s]["nll"] for s in splits])
                    dnll = nll - np.mean([rf[s]["nll"] for s in splits])
                    fit = np.mean([mine[s]["fit_s"] / rf[s]["fit_s"] for s in splits])
                    summary.setdefault((label, model_name), []).append((ratio, dnll, fit))
                    kept = [mine[s]["debias"][1] for s in splits if mine[s].get("debias")]
                    debiased = f"{len(kept)} ({np.mean(kept):+.2f})" if kept else ""
                    lines.append(f"| {name} | {label} | {model_name} | {len(splits)} | "
                                 f"{ratio:.3f} | {nll:.3f} | {dnll:+.3f} | {fit:.2f} | "
                                 f"{debiased} |")
        lines += ["", "| label | model | sets | mean RMSE / RF | NLL better than RF | "
                  "mean fit / RF |", "|---|---|---|---|---|---|"]
        for (label, model_name), values in summary.items():
            v = np.array(values)
            lines.append(f"| {label} | {model_name} | {len(v)} | {v[:, 0].mean():.3f} | "
                         f"{int(np.sum(v[:, 1] < 0))} of {len(v)} | {v[:, 2].mean():.2f} |")
        lines.append("")
    rows = _read("calibration")
    if rows:
        lines += ["## Calibration of the default regressor", "",
                  "Noisy sine y = sin 6x + 0.3 N(0, 1), x uniform; 2000 test points per seed. "
                  "Target: coverage of the 95% intervals in 0.93-0.97; predictive std at "
                  "identical inputs (N(0, 1) targets) / (s sqrt(1 + 1/n)) within 0.95-1.05.", "",
                  "| label | n | seeds | mean coverage | identical inputs: mean std ratio |",
                  "|---|---|---|---|---|"]
        for label in ("before", "after"):
            for n in CALIBRATION_SIZES:
                sel = [r for r in rows if r["n"] == n and r["label"] == label]
                if sel:
                    lines.append(f"| {label} | {n} | {len(sel)} | {_mean(sel, 'coverage'):.3f} "
                                 f"| {_mean(sel, 'identical_std_ratio'):.3f} |")
        lines.append("")
    lines += NOTES.splitlines()
    (RESULTS / "defaults.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv=None):
    global N_TREES
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=("classification", "regression", "debias",
                                         "calibration", "report"))
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--datasets", default=None)
    parser.add_argument("--models", default=None, help="comma-separated subset of the models")
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--label", default="after", help="tag of the rows (before/after)")
    args = parser.parse_args(argv)
    args.models = args.models.split(",") if args.models else None
    default = {"classification": (*REAL, "synth20k", "synth100k"),
               "regression": REGRESSION, "debias": REGRESSION}.get(args.task, ())
    args.datasets = args.datasets.split(",") if args.datasets else list(default)
    N_TREES = args.trees
    {"classification": run_classification, "regression": run_regression, "debias": run_debias,
     "calibration": run_calibration, "report": report}[args.task](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
