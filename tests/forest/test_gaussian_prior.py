"""GaussianPrior: the typed hyperparameters that the regressor passes to the Gaussian kernels."""

import pickle

import numpy as np
import pytest

from mondrian import MondrianForestRegressor
from mondrian.forest._gaussian import GaussianPrior, upward_messages

VALUES = dict(mean0=0.3, noise=0.4, prior_var=0.85, sigma2=1.7, rate=2.5, hierarchical=True)


def test_attributes_are_typed_and_read_only():
    prior = GaussianPrior(**VALUES)
    for name, value in VALUES.items():
        assert getattr(prior, name) == value
    assert isinstance(prior.hierarchical, bool)
    with pytest.raises(AttributeError):
        prior.noise = 1.0
    assert "noise=0.4" in repr(prior)


def test_pickle_round_trip_and_equality():
    prior = GaussianPrior(**VALUES)
    copy = pickle.loads(pickle.dumps(prior))
    assert copy == prior and hash(copy) == hash(prior)
    assert copy != GaussianPrior(**{**VALUES, "rate": 2.0})


@pytest.mark.parametrize("name, value", [
    ("noise", 0.0), ("noise", np.inf), ("prior_var", -1.0), ("sigma2", np.nan),
    ("rate", -0.5), ("mean0", np.inf),
])
def test_invalid_values_are_rejected(name, value):
    with pytest.raises(ValueError, match=name):
        GaussianPrior(**{**VALUES, name: value})


def test_kernels_refuse_anything_but_a_prior():
    rng = np.random.RandomState(0)
    X, y = rng.uniform(size=(40, 2)), rng.normal(size=40)
    tree = MondrianForestRegressor(1, random_state=0).fit(X, y)._trees[0]
    with pytest.raises(TypeError):
        upward_messages(tree, dict(VALUES))
    with pytest.raises(TypeError):
        upward_messages(tree, None)


def test_regressor_keeps_one_prior_and_pickles_with_it():
    rng = np.random.RandomState(1)
    X, y = rng.uniform(size=(80, 3)), rng.normal(size=80)
    reg = MondrianForestRegressor(3, random_state=0).fit(X, y)
    before = reg.predict(X[:10])
    prior = reg._posterior().params
    assert isinstance(prior, GaussianPrior)
    assert reg._posterior().params is prior  # built once per data version
    clone = pickle.loads(pickle.dumps(reg))
    np.testing.assert_array_equal(clone.predict(X[:10]), before)
