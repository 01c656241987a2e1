"""Finite-or-refuse: every estimator of ``mondrian.__all__`` (found by introspection) either
returns finite outputs or refuses the input at fit with a ``ValueError`` naming it, for target
and sample-weight scales from 1e-300 to 1e308 (all of them scaled, or one outlier), a missing
target, targets of None and constant inputs. The bounds are
:data:`~mondrian.estimator.targets.MAX_TARGET` (targets) and
:data:`~mondrian.estimator.targets.MAX_TOTAL_WEIGHT` (total weight), applied in one place each.
"""

import inspect
import warnings

import numpy as np
import pytest

from _catalog import data, estimator_classes, small, target_kind

SCALES = [1e-300, 1e-200, 1e-100, 1e-10, 1.0, 1e10, 1e100, 1e200, 1e300, 1e308]
OUTPUTS = ("predict", "predict_proba", "transform", "score_samples", "decision_function")


def _cases(cls, kind, y):
    cases = []
    if kind == "number":
        for s in SCALES:
            one = y.copy()
            one[3] = s
            cases += [(f"y*{s:g}", {"y": y * s}), (f"one y={s:g}", {"y": one}),
                      (f"y={s:g}+y", {"y": s + y})]
        cases += [("y=None", {"y": None}), ("y of None", {"y": [None] * len(y)}),
                  ("y of one None", {"y": [None, *y[1:].tolist()]})]
    if "sample_weight" in inspect.signature(cls.fit).parameters:
        for s in SCALES:
            one = np.ones(len(y if y is not None else np.ones(60)))
            one[3] = s
            cases += [(f"w={s:g}", {"w": np.full(one.shape, s)}), (f"one w={s:g}", {"w": one})]
    cases.append(("constant X", {"X": np.ones((60, 3))}))
    return cases


def _outputs(model, X):
    for name in OUTPUTS:
        if hasattr(model, name):
            out = getattr(model, name)(X)
            yield name, np.asarray(out.toarray() if hasattr(out, "toarray") else out, float)
    if "return_std" in inspect.signature(getattr(model, "predict", lambda X: 0)).parameters:
        for part in model.predict(X, return_std=True):
            yield "predict(return_std=True)", np.asarray(part, float)


@pytest.mark.parametrize("cls", estimator_classes(), ids=lambda c: c.__name__)
def test_finite_or_refused(cls):
    kind = target_kind(small(cls))
    X, y = data(kind, 60)
    for label, case in _cases(cls, kind, y):
        model = small(cls)
        Xc = case.get("X", X)
        args = (Xc,) if kind is None else (Xc, case.get("y", y))
        kwargs = {"sample_weight": case["w"]} if "w" in case else {}
        refusals = ValueError
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                model.fit(*args, **kwargs)
            except refusals:
                continue
            for name, out in _outputs(model, X):
                assert np.all(np.isfinite(out)), (cls.__name__, label, name)
