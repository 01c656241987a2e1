"""Online regression, the readings of the trees: prequential MAE of MondrianForestRegressor under
diagnostic variants of its predictive, against river's AMFRegressor in the same run (issue 25).

Every variant reads the model of the default online route (the same trees, hyperparameters and
stream window); only ``predict_one`` (and, for ``prequential``, the scoring inside
``learn_one``) is replaced in this process, nothing of it is in the library:

integrated
    The model as it is: the Mondrian forest's predictive, integrating over where ``x`` branches
    off each tree.
routed
    Each tree predicts the empirical mean of the targets of the leaf ``x`` falls in (found by
    the cuts; the leaf's upward message), the forest their mean: AMF's node prediction at the
    leaf, no branching off, no smoothing.
routed-hierarchical
    The hierarchical posterior mean of that leaf (exact belief propagation, ``node_posteriors``):
    the model's predictive conditioned on ``x`` not branching off.
prequential
    Each ``learn_one`` first scores both the integrated and the routed means at its row (squared
    error, standardised targets); ``predict_one`` uses the reading of the smaller total so far.
amf / amf-no-aggregation
    river's ``AMFRegressor(n_estimators=10, seed=s)``, with ``use_aggregation=False`` for the
    second (each tree's leaf mean).

TrumpApproval and ChickWeights run through ``StandardScaler() | model`` and
``river.evaluate.progressive_val_score`` (MAE) for seeds 0..4 (mondrian ``random_state`` =
river ``seed``); ``--kin8nm`` adds the first 8000 kin8nm rows (raw features, seed 0, samples
2..n, as ``bench_online_regression.py``). Run from the repository root::

    python benchmarks/bench_online_regression_readings.py --variants integrated,routed,amf
    python benchmarks/bench_online_regression_readings.py --variants routed --kin8nm
"""

from __future__ import annotations

import argparse
import time

import numpy as np

N_TREES = 10
VARIANTS = ("integrated", "routed", "routed-hierarchical", "prequential", "amf",
            "amf-no-aggregation")


def _scaled_row(model, x):
    return model._scaler.transform(model._one_row(x), clip=True)


def _routed_mean(model, row, hierarchical=False):
    """Mean over the trees of the routed leaf's empirical (or posterior) mean, units of y."""
    from mondrian.forest._gaussian import node_posteriors

    cache = model._posterior()
    values = []
    for tree, (means, _) in zip(model._trees, cache.messages, strict=True):
        leaf = tree.apply(row)[0]
        if hierarchical:
            values.append(node_posteriors(tree, cache.smoothing)[0][leaf])
        else:
            values.append(means[leaf])  # a leaf's message: its targets' mean
    return float(model._y_scaler.inverse(np.array([np.mean(values)]))[0])


def patched_regressor(variant):
    """A MondrianForestRegressor subclass whose predictive is the ``variant``'s."""
    from mondrian import MondrianForestRegressor

    class Variant(MondrianForestRegressor):
        def predict_one(self, x, return_std=False):
            if not hasattr(self, "_trees") or variant == "integrated":
                return super().predict_one(x)
            row = _scaled_row(self, x)
            if variant != "prequential":
                return _routed_mean(self, row, variant == "routed-hierarchical")
            errors = self.__dict__.get("_reading_errors", (0.0, 0.0))
            return (_routed_mean(self, row) if errors[1] < errors[0]
                    else super().predict_one(x))

        def learn_one(self, x, y):
            if variant == "prequential" and hasattr(self, "_trees"):
                row = _scaled_row(self, x)
                means = (super().predict_one(x), _routed_mean(self, row))
                old = self.__dict__.get("_reading_errors", (0.0, 0.0))
                scale = self._y_scaler.scale
                self._reading_errors = tuple(e + ((m - y) / scale) ** 2
                                             for e, m in zip(old, means, strict=True))
            return super().learn_one(x, y)

    Variant.__name__ = MondrianForestRegressor.__name__
    return Variant


def make_model(variant, seed, river_api):
    """The model of ``variant`` at ``seed``; ``river_api``: wrapped as a river regressor."""
    if variant.startswith("amf"):
        from river import forest

        return forest.AMFRegressor(n_estimators=N_TREES, seed=seed,
                                   use_aggregation=variant == "amf")
    model = patched_regressor(variant)(N_TREES, random_state=seed)
    if not river_api:
        return model
    from mondrian.river import RiverRegressor

    return RiverRegressor(model)


def river_sets(variant, seeds):
    from river import datasets, evaluate, metrics, preprocessing

    out = {}
    for label in ("TrumpApproval", "ChickWeights"):
        stream = list(getattr(datasets, label)())
        maes = []
        for seed in seeds:
            model = preprocessing.StandardScaler() | make_model(variant, seed, True)
            maes.append(evaluate.progressive_val_score(stream, model, metrics.MAE()).get())
        out[label] = maes
    return out


def kin8nm(variant, n=8000):
    from shared.datasets import load_xy, rows_as_dicts

    X, y, names = load_xy("kin8nm", classification=False)
    X, y = X[:n], y[:n]
    rows = rows_as_dicts(X, names) if variant.startswith("amf") else list(X)
    model = make_model(variant, 0, False)
    errors = []
    start = time.process_time()
    for i in range(n):
        if i:
            errors.append(abs(model.predict_one(rows[i]) - y[i]))
        model.learn_one(rows[i], float(y[i]))
    return float(np.mean(errors)), time.process_time() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help=f"comma-separated subset of {','.join(VARIANTS)}")
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..n-1 (default 5)")
    parser.add_argument("--kin8nm", action="store_true", help="also the 8000-row kin8nm stream")
    args = parser.parse_args(argv)
    for variant in args.variants.split(","):
        if variant not in VARIANTS:
            raise SystemExit(f"unknown variant {variant!r}; choose among {VARIANTS}")
        maes = river_sets(variant, range(args.seeds))
        line = " | ".join(f"{label} {np.mean(v):.4f} ({' '.join(f'{m:.3f}' for m in v)})"
                          for label, v in maes.items())
        if args.kin8nm:
            mae, cpu = kin8nm(variant)
            line += f" | kin8nm {mae:.4f} ({cpu:.1f} s CPU)"
        print(f"{variant}: {line}", flush=True)


if __name__ == "__main__":
    main()
