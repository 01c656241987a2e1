"""The classifier's feature_weights="auto" choice: probe forests, paired rule, relevant columns.

benchmarks/results/weights.md (classification) traces satimage's gap to the label-blind cuts and
finds the power choice noise-limited; these tests pin the mechanism that study measured: every
power is scored by the validation accuracy of a probe forest of 20 trees (whatever
n_estimators, so that the parts of a forest choose alike) with the forest's seed, fitted on the
stratified fit part, and a non-uniform power must beat uniform weights by the paired rule.
"""

import numpy as np
import pytest
from sklearn.utils import check_random_state

from mondrian import MondrianForestClassifier
from mondrian.estimator.holdout import holdout_split
from mondrian.estimator.relevance import beats, power_weights


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 6))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0.8).astype(int) + (X[:, 0] > 0.7)
    flip = rng.uniform(size=n) < 0.15  # label noise: probes of different sizes then disagree
    y[flip] = rng.integers(0, 3, size=flip.sum())
    return X, y


def _probe_rows(X, y, weights, n_trees, seed):
    """Per-row 0/1 scores of the probe the search should build, on its own split."""
    rng = check_random_state(seed)
    X_fit, X_val, y_fit, y_val = holdout_split(X, y, 0.2, rng, stratify=True, min_fit=2)
    probe = MondrianForestClassifier(n_trees, feature_weights=weights, random_state=seed)
    return (probe.fit(X_fit, y_fit).predict(X_val) == y_val).astype(float)


@pytest.mark.parametrize(("n_estimators", "probe_trees"), [(30, 20), (7, 20)])
def test_each_power_is_scored_by_a_probe_of_20_trees(n_estimators, probe_trees):
    X, y = _data()
    forest = MondrianForestClassifier(n_estimators, feature_weights="auto", random_state=0)
    info = forest.fit(X, y).feature_weights_info_
    rows = {}
    for power, score in zip(info["powers"], info["scores"], strict=True):
        rows[power] = _probe_rows(X, y, power_weights(info["relevance"], power), probe_trees, 0)
        assert score == pytest.approx(rows[power].mean(), abs=1e-12)
    # The choice: the best mean (ties: the smaller power), kept only if it beats uniform.
    best = max(info["powers"], key=lambda p: (rows[p].mean(), -p))
    if best != 0 and not beats(rows[best], rows[0.0], margin=1.0):
        best = 0.0
    assert info["power"] == best
    np.testing.assert_allclose(forest.feature_weights_,
                               power_weights(info["relevance"], info["power"]))


def test_relevant_columns_win_and_the_noise_columns_get_small_weights():
    X, y = _data(600)
    forest = MondrianForestClassifier(30, feature_weights="auto", random_state=0).fit(X, y)
    assert forest.feature_weights_info_["power"] > 0
    w = forest.feature_weights_
    assert min(w[0], w[1]) > max(w[2:])
