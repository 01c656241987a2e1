"""The ``regression``, ``classification`` and ``online`` tasks of the weights benchmark."""

from __future__ import annotations

import time

import numpy as np
from shared.datasets import load_classification, load_uci_regression
from shared.metrics import gaussian_nll, rmse
from sklearn.ensemble import (
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    HistGradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)

from mondrian import MondrianForestClassifier, MondrianForestRegressor
from mondrian.estimator.relevance import choose_weights
from weights_bench.rows import N_TREES, RESULTS, append_row

VARIANCE_FLOOR = 0.01
ONLINE_WARM = 128


def timed(function):
    """``(CPU seconds, result)`` of ``function()``."""
    start = time.process_time()
    out = function()
    return time.process_time() - start, out


def _tree_moments(forest, X, floor):
    preds = np.stack([t.predict(np.asarray(X, np.float32), check_input=False)
                      for t in forest.estimators_])
    return preds.mean(axis=0), preds.var(axis=0) + floor


class JointSearchRegressor(MondrianForestRegressor):
    """The candidate search of session 6, the regressor's ``feature_weights="auto"`` since
    session 7 (benchmarks/results/weights.md; this class now repeats it): map and power chosen
    together, then the simplest candidate within one paired standard error of the best
    (``choose_weights(joint_map=True, simplest=True)``), and from ``LAPLACE_MIN_ROWS`` rows the
    powers of the ARD Laplace lifetimes competing with the extra-trees ones. ``--methods
    auto_joint`` (20-tree probes), ``auto_joint10`` (10)."""

    LAPLACE_MIN_ROWS = 2000

    def _search_weights(self, X, y, method, quantile=False, sample_weight=None):
        n_rows = len(y) if sample_weight is None else float(np.sum(sample_weight))
        if n_rows >= self.LAPLACE_MIN_ROWS:
            method = (method, "laplace_ard")
        return choose_weights(X, y, False, self._weights_score, method, self.random_state,
                              self.validation_fraction, quantile=quantile,
                              sample_weight=sample_weight, joint_map=True, simplest=True)


class JointSearch10Regressor(JointSearchRegressor):
    _weights_probe_trees = 10


SEARCHES = {"auto_joint": JointSearchRegressor, "auto_joint10": JointSearch10Regressor}


def regression_models(methods):
    models = {
        "RF": lambda: RandomForestRegressor(N_TREES, random_state=0),
        "ET": lambda: ExtraTreesRegressor(N_TREES, random_state=0),
        "HGB": lambda: HistGradientBoostingRegressor(random_state=0),
        "MF": lambda: MondrianForestRegressor(N_TREES, random_state=0),
    }
    for method in methods:
        cls = SEARCHES.get(method, MondrianForestRegressor)
        models[f"MF-{method}"] = (lambda m="auto" if method in SEARCHES else method, c=cls:
                                  c(N_TREES, feature_weights=m, random_state=0))
    return models


def run_regression(args):
    out = RESULTS / "weights_regression.jsonl"
    for name in args.datasets:
        for split in range(args.splits):
            data = load_uci_regression(name, split)
            floor = VARIANCE_FLOOR * float(np.var(data.y_train))
            for model_name, make in regression_models(args.methods).items():
                if args.models and model_name not in args.models:
                    continue
                model = make()
                fit_s, model = timed(
                    lambda m=model, d=data: m.fit(d.X_train, d.y_train))
                nll = None
                if model_name in ("RF", "ET"):
                    mean, var = _tree_moments(model, data.X_test, floor)
                elif model_name.startswith("MF"):
                    mean, std = model.predict(data.X_test, return_std=True)
                    var = std**2
                else:
                    mean, var = model.predict(data.X_test), None
                if var is not None:
                    nll = gaussian_nll(data.y_test, mean, var)
                row = {"dataset": name, "split": split, "model": model_name,
                       "rmse": rmse(data.y_test, mean), "nll": nll, "fit_s": fit_s}
                if model_name.startswith("MF-"):
                    info = getattr(model, "feature_weights_info_", {})
                    row["power"] = info.get("power")
                    row["map"] = info.get("map")
                    row["weights"] = np.round(model.feature_weights_, 3).tolist()
                append_row(out, row)


def run_classification(args):
    """Accuracy on the fixed splits, one fit per model and forest seed (``--seeds``: seeds
    0..n-1; every model gets the same seed, the row records it)."""
    out = RESULTS / "weights_classification.jsonl"
    for name in args.datasets:
        data = load_classification(name)
        for seed in range(args.seeds):
            models = {
                "RF": lambda s=seed: RandomForestClassifier(N_TREES, random_state=s),
                "ET": lambda s=seed: ExtraTreesClassifier(N_TREES, random_state=s),
                "MF": lambda s=seed: MondrianForestClassifier(N_TREES, random_state=s),
            }
            for method in args.methods:
                models[f"MF-{method}"] = (lambda m=method, s=seed: MondrianForestClassifier(
                    N_TREES, feature_weights=m, random_state=s))
            for model_name, make in models.items():
                if args.models and model_name not in args.models:
                    continue
                model = make()
                fit_s, model = timed(
                        lambda m=model, d=data: m.fit(d.X_train, d.y_train))
                accuracy = float(np.mean(model.predict(data.X_test) == data.y_test))
                row = {"dataset": name, "seed": seed, "model": model_name,
                       "accuracy": accuracy, "fit_s": fit_s}
                if model_name.startswith("MF-"):
                    info = getattr(model, "feature_weights_info_", {})
                    row["power"] = info.get("power")
                    row["map"] = info.get("map")
                append_row(out, row)


def run_online(args):
    """Batch fit against a stream (a first batch of ``WARM`` rows, then chunks of 32), for
    ``feature_weights`` None and "auto": online regression must follow its batch law."""
    out = RESULTS / "weights_online.jsonl"
    for name in args.datasets:
        for split in range(args.splits):
            data = load_uci_regression(name, split)
            for weights in (None, "auto"):
                for mode in ("batch", "online"):
                    model = MondrianForestRegressor(N_TREES, feature_weights=weights,
                                                    random_state=0)
                    if mode == "batch":
                        model.fit(data.X_train, data.y_train)
                    else:
                        model.partial_fit(data.X_train[:ONLINE_WARM], data.y_train[:ONLINE_WARM])
                        for start in range(ONLINE_WARM, len(data.y_train), 32):
                            model.partial_fit(data.X_train[start:start + 32],
                                              data.y_train[start:start + 32])
                    mean, std = model.predict(data.X_test, return_std=True)
                    append_row(out, {"dataset": name, "split": split, "weights": str(weights),
                                  "mode": mode, "rmse": rmse(data.y_test, mean),
                                  "nll": gaussian_nll(data.y_test, mean, std**2)})
