"""Fingerprints of every public estimator's outputs and pickles, to show a refactor changed no bit.

Fits each class of ``mondrian.__all__`` in several ways (batch, weighted, mini-batches, one row at
a time, forgetting, lean and full boxes, finite lifetimes) and hashes every read it offers:
predictions, probabilities, standard deviations, densities, transforms, lifetime paths and the
pickle bytes.

Usage::

    python tools/fingerprint.py write before.json
    python tools/fingerprint.py compare before.json   # exits 1 and lists what differs

A change allowed to round differently (issue 24 allows 1e-12 relative) is checked on the values
themselves: ``write-values before.npz`` keeps every read, and ``close before.npz [rtol]`` compares
each array to ``rtol`` (default 1e-12, elementwise, relative to the earlier value; NaN and infinite
entries must match exactly) and every other read (pickle bytes, refusals) by its hash.
"""

import hashlib
import inspect
import json
import pickle
import sys
import warnings

import numpy as np

sys.path.insert(0, "tests")
from _catalog import data, estimator_classes, fit_args, small, target_kind  # noqa: E402

READS = ("predict", "predict_proba", "predict_log_proba", "decision_function", "score_samples",
         "transform", "apply")


def digest(value):
    """A short stable hash of a read's result (arrays by their bytes, the rest by repr)."""
    h = hashlib.sha256()
    if isinstance(value, tuple):
        for part in value:
            h.update(digest(part).encode())
    elif isinstance(value, np.ndarray) or hasattr(value, "toarray"):
        array = np.asarray(value.toarray() if hasattr(value, "toarray") else value)
        h.update(str(array.dtype).encode() + str(array.shape).encode())
        h.update(np.ascontiguousarray(array).tobytes())
    else:
        h.update(repr(value).encode())
    return h.hexdigest()[:16]


def reads(model, X, y, values=None):
    """Hashes of every read ``model`` offers on ``X``; the results themselves go to ``values``."""
    out = {}

    def keep(name, value):
        out[name] = digest(value)
        if values is not None:
            values[name] = value

    for name in READS:
        method = getattr(model, name, None)
        if method is None:
            continue
        try:
            keep(name, method(X))
        except Exception as exc:  # a read a model refuses is part of its fingerprint
            out[name] = f"{type(exc).__name__}"
    if "return_std" in str(inspect.signature(getattr(model, "predict", lambda: None))):
        keep("predict_std", model.predict(X, return_std=True))
    path = getattr(model, "lifetime_path", None)
    if path is not None:
        try:
            args = (X,) if target_kind(model) is None else (X, y)
            result = path(*args)
            keep("lifetime_path", tuple(np.asarray(v) for v in vars(result).values()
                                        if isinstance(v, np.ndarray)))
        except Exception as exc:
            out["lifetime_path"] = f"{type(exc).__name__}"
    out["pickle"] = hashlib.sha256(pickle.dumps(model, protocol=5)).hexdigest()[:16]
    out["reloaded_predict"] = reads_after_reload(model, X, values)
    return out


def reads_after_reload(model, X, values=None):
    """The hash of the first read of a pickled-and-reloaded copy (its result goes to ``values``)."""
    copy = pickle.loads(pickle.dumps(model))
    for name in READS:
        method = getattr(copy, name, None)
        if method is not None:
            try:
                value = method(X)
            except Exception as exc:
                return type(exc).__name__
            if values is not None:
                values["reloaded_predict"] = value
            return digest(value)
    return None


def variants(cls):
    """``(label, params, how)`` of the ways each class is fitted."""
    names = cls._get_param_names()
    out = [("default", {}, "fit")]
    if "lifetime" in names:
        out.append(("lifetime2", {"lifetime": 2.0}, "fit"))
    if "min_samples_split" in names:
        out.append(("split5", {"min_samples_split": 5}, "fit"))
    if "smoothing" in names:
        other = "dirichlet" if "branch_off_counts" in names else "independent"
        out.append(("smoothing", {"smoothing": other}, "fit"))
    if "feature_weights" in names:
        out.append(("larger", {}, "larger"))
    if "feature_weights" in names:
        out.append(("blind", {"feature_weights": None}, "fit"))
    if "sample_weight" in inspect.signature(cls.fit).parameters:
        out.append(("weighted", {}, "weighted"))
    if hasattr(cls, "partial_fit"):
        out.append(("batches", {}, "partial_fit"))
    if hasattr(cls, "learn_one"):
        out.append(("rows", {}, "learn_one"))
    if hasattr(cls, "forget"):
        out.append(("forget", {}, "forget"))
    if "window" in names:
        out.append(("window", {"window": 40}, "partial_fit"))
    return out


def fingerprint(values=None):
    """Hashes for every class, variant and read (results kept in ``values[key]`` if given)."""
    result = {}
    for cls in estimator_classes():
        for label, params, how in variants(cls):
            key = f"{cls.__name__}/{label}"
            try:
                model = small(cls, **params)
                kind = target_kind(model)
                n, d = (600, 8) if how == "larger" else (90, 4)
                X, y = data(kind, n=n, n_features=d, seed=1)
                X_test, y_test = data(kind, n=40, n_features=d, seed=2)
                X_test = X_test * 1.6 - 0.3  # rows outside the training box too
                args = fit_args(model, X, y)
                if how in ("fit", "larger"):
                    model.fit(*args)
                elif how == "weighted":
                    w = np.random.RandomState(3).randint(0, 4, len(X)).astype(float)
                    model.fit(*args, sample_weight=w)
                elif how == "partial_fit":
                    extra = {"classes": np.unique(y)} if kind == "class" else {}
                    for part in np.array_split(np.arange(len(X)), 3):
                        sub = (X[part],) if kind is None else (X[part], y[part])
                        model.partial_fit(*sub, **extra)
                elif how == "learn_one":
                    for i in range(len(X)):
                        model.learn_one(X[i]) if kind is None else model.learn_one(X[i], y[i])
                elif how == "forget":
                    model.fit(*args)
                    rows = [5, 17, 40]
                    model.forget(X[rows]) if kind is None else model.forget(X[rows], y[rows])
                kept = None if values is None else values.setdefault(key, {})
                result[key] = reads(model, X_test, y_test, kept)
            except Exception as exc:
                result[key] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
    return result


def flatten(values):
    """``{"key|read|part": float array}`` of every numeric result kept by :func:`fingerprint`."""
    flat = {}
    for key, kept in values.items():
        for read, value in kept.items():
            parts = value if isinstance(value, tuple) else (value,)
            for i, part in enumerate(parts):
                array = np.asarray(part.toarray() if hasattr(part, "toarray") else part)
                if array.dtype.kind in "fc":
                    flat[f"{key}|{read}|{i}"] = array
    return flat


def close(before, current, hashes_before, hashes_now, rtol):
    """Lines naming every read that differs by more than ``rtol``, or whose hash differs when
    it holds no floating-point array; and the largest relative difference seen."""
    differ, largest = [], 0.0
    for name in sorted(set(before) | set(current)):
        a, b = before.get(name), current.get(name)
        if a is None or b is None or a.shape != b.shape:
            shapes = [getattr(v, "shape", None) for v in (a, b)]
            differ.append(f"{name}: shape {shapes[0]} -> {shapes[1]}")
            continue
        finite = np.isfinite(a)
        if not np.array_equal(a[~finite], b[~finite], equal_nan=True) or \
                not np.isfinite(b[finite]).all():
            differ.append(f"{name}: non-finite entries differ")
            continue
        gap = np.abs(a[finite] - b[finite])
        scale = np.abs(a[finite])
        if gap.size:
            with np.errstate(divide="ignore", invalid="ignore"):
                rel = np.where(gap == 0, 0.0, gap / scale)
            largest = max(largest, float(rel.max()))
            if (gap > rtol * scale).any():
                differ.append(f"{name}: relative difference {float(rel.max()):.3g} > {rtol:g}")
    floats = {name.split("|")[0] + "|" + name.split("|")[1] for name in before}
    for key in sorted(set(hashes_before) | set(hashes_now)):
        a, b = hashes_before.get(key, {}), hashes_now.get(key, {})
        for read in sorted(set(a) | set(b)):
            if f"{key}|{read}" not in floats and a.get(read) != b.get(read):
                differ.append(f"{key} {read}: {a.get(read)} -> {b.get(read)}")
    return differ, largest


def main(argv):
    """Write or compare fingerprints, or write or compare the values behind them."""
    warnings.simplefilter("ignore")
    command, path = argv[1], argv[2]
    if command in ("write-values", "close"):
        values = {}
        hashes = fingerprint(values)
        flat = flatten(values)
        if command == "write-values":
            np.savez(path, __hashes__=np.array(json.dumps(hashes, sort_keys=True)), **flat)
            print(f"{len(flat)} arrays of {len(hashes)} fingerprints written to {path}")
            return 0
        rtol = float(argv[3]) if len(argv) > 3 else 1e-12
        with np.load(path) as stored:
            before = {name: stored[name] for name in stored.files if name != "__hashes__"}
            hashes_before = json.loads(str(stored["__hashes__"]))
        differ, largest = close(before, flat, hashes_before, hashes, rtol)
        print("\n".join(differ) if differ else
              f"all {len(flat)} arrays within {rtol:g} (largest relative difference "
              f"{largest:.3g}) and every other read identical")
        return 1 if differ else 0
    current = fingerprint()
    if command == "write":
        with open(path, "w") as f:
            json.dump(current, f, indent=1, sort_keys=True)
        print(f"{len(current)} fingerprints written to {path}")
        return 0
    with open(path) as f:
        before = json.load(f)
    differ = []
    for key in sorted(set(before) | set(current)):
        a, b = before.get(key, {}), current.get(key, {})
        for read in sorted(set(a) | set(b)):
            if a.get(read) != b.get(read):
                differ.append(f"{key} {read}: {a.get(read)} -> {b.get(read)}")
    print("\n".join(differ) if differ else f"all {len(current)} fingerprints identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
