"""The ``diagnose`` task: where the Mondrian forest loses to the random forest."""

from __future__ import annotations

import numpy as np
from shared.datasets import load_classification
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier

from mondrian import MondrianForestClassifier
from weights_bench.rows import N_TREES, RESULTS, append_row


def _leaf_vote_accuracy(forest, data):
    """Accuracy of ``forest``'s partition with random-forest leaves: every tree votes the
    training label frequencies of the leaf a test point falls in (``apply``), no HNSP
    smoothing, no branching off. Separates the cuts from the smoothing."""
    leaves_train, leaves_test = forest.apply(data.X_train), forest.apply(data.X_test)
    codes = np.searchsorted(forest.classes_, data.y_train)
    k = len(forest.classes_)
    votes = np.zeros((len(data.y_test), k))
    for t in range(leaves_train.shape[1]):
        ids, inverse = np.unique(leaves_train[:, t], return_inverse=True)
        counts = np.zeros((len(ids), k))
        np.add.at(counts, (inverse, codes), 1.0)
        at = np.minimum(np.searchsorted(ids, leaves_test[:, t]), len(ids) - 1)
        seen = ids[at] == leaves_test[:, t]
        votes[seen] += counts[at[seen]] / counts[at[seen]].sum(axis=1, keepdims=True)
        votes[~seen] += 1.0 / k
    return float(np.mean(forest.classes_[votes.argmax(axis=1)] == data.y_test))


def diagnose_variants(data, seed):
    """(label, accuracy) of the variants of ``diagnose``: where the Mondrian forest loses to
    the random forest. Rows marked "test-level" are a fixed setting per row (a sweep read on
    the test rows for the diagnosis), not a choice a model could make."""
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    from mondrian.core.feature_map import QuantileMap
    from mondrian.estimator.relevance import power_weights, relevance

    X, y, Xt, yt = data.X_train, data.y_train, data.X_test, data.y_test

    def mf(A=X, B=Xt, n=N_TREES, **params):
        forest = MondrianForestClassifier(n, random_state=seed, **params).fit(A, y)
        return forest, float(np.mean(forest.predict(B) == yt))

    base, accuracy = mf()
    yield "MF", accuracy
    yield "MF partition, random-forest leaf votes (oracle of the smoothing)", (
        _leaf_vote_accuracy(base, data))
    for factor in (1.0, 3.0, 30.0, 100.0):
        yield f"MF discount_factor={factor:g} (default 10)", mf(discount_factor=factor)[1]
    yield 'MF branch_off_counts="tables" (strict IKN)', mf(branch_off_counts="tables")[1]
    yield 'MF lifetime="auto" (finite, chosen on validation)', mf(lifetime="auto")[1]
    yield "MF 300 trees", mf(n=300)[1]
    r = relevance("extra_trees", X, y, True, seed)
    quantile = QuantileMap(X)
    for p in (0.25, 0.5, 0.75, 1.0, 2.0, 4.0):
        yield f"MF weights r^{p:g} (test-level)", mf(feature_weights=power_weights(r, p))[1]
    for p in (0.0, 0.5, 1.0):
        yield f"MF quantile map, weights r^{p:g} (test-level)", mf(
            quantile.forward(X), quantile.forward(Xt), feature_weights=power_weights(r, p))[1]
    yield "MF weights r^0.5, 300 trees (test-level)", mf(
        n=300, feature_weights=power_weights(r, 0.5))[1]
    for features, what in ((1, "the cut feature chosen without the labels"),
                           (2, "best of 2 random features")):
        et = ExtraTreesClassifier(N_TREES, max_features=features, random_state=seed).fit(X, y)
        yield f"ET max_features={features} ({what})", float(np.mean(et.predict(Xt) == yt))
    rf = RandomForestClassifier(N_TREES, max_features=1, random_state=seed).fit(X, y)
    yield "RF max_features=1", float(np.mean(rf.predict(Xt) == yt))
    lda = LinearDiscriminantAnalysis(solver="eigen", shrinkage="auto").fit(X, y)
    A, B = np.hstack([X, lda.transform(X)]), np.hstack([Xt, lda.transform(Xt)])
    yield "MF on X + LDA directions (oblique map)", mf(A, B)[1]
    yield 'MF-auto on X + LDA directions (oblique map)', mf(A, B, feature_weights="auto")[1]
    yield "MF-auto, oblique map kept if it wins on validation", _gated_oblique(data, seed)


def _gated_oblique(data, seed):
    """Test accuracy of MF-auto with the oblique map (X plus its shrunk LDA directions) kept
    only when it beats the plain map on a stratified 20% hold-out of the training rows (LDA
    and both forests fitted on the rest; the paired rule of ``relevance.beats``), refitted on
    every training row."""
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.utils import check_random_state

    from mondrian.estimator.holdout import holdout_split
    from mondrian.estimator.relevance import beats

    X, y = data.X_train, data.y_train

    def oblique(A, b):
        lda = LinearDiscriminantAnalysis(solver="eigen", shrinkage="auto").fit(A, b)
        return lambda Z: np.hstack([Z, lda.transform(Z)])

    def auto():
        return MondrianForestClassifier(N_TREES, feature_weights="auto", random_state=seed)

    fit, val, _, _ = holdout_split(np.arange(len(y)), y, 0.2, check_random_state(1000 + seed),
                                   stratify=True, min_fit=2)
    f = oblique(X[fit], y[fit])
    plain = auto().fit(X[fit], y[fit]).predict(X[val]) == y[val]
    tilted = auto().fit(f(X[fit]), y[fit]).predict(f(X[val])) == y[val]
    if beats(tilted.astype(float), plain.astype(float)):
        f = oblique(X, y)
        return float(np.mean(auto().fit(f(X), y).predict(f(data.X_test)) == data.y_test))
    return float(np.mean(auto().fit(X, y).predict(data.X_test) == data.y_test))


def run_diagnose(args):
    out = RESULTS / "weights_diagnose.jsonl"
    for name in args.datasets:
        data = load_classification(name)
        for seed in range(args.seeds):
            for label, accuracy in diagnose_variants(data, seed):
                append_row(out, {"dataset": name, "seed": seed, "variant": label,
                              "accuracy": accuracy})
