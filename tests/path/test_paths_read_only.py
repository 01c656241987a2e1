"""A lifetime path reads a fitted model and never changes it.

Before this was a rule, ``MondrianKernelRidge.lifetime_path`` and
``MondrianKernelSGDRegressor.lifetime_path`` re-sampled the model's own trees, and the next
``predict`` raised ``IndexError``.
"""

import pickle

import numpy as np
import pytest

from _path_cases import ESTIMATORS, make_case


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_lifetime_path_leaves_the_model_exactly_as_it_was(name):
    case = make_case(name)
    expected = case.predictions()
    before = pickle.dumps(case.model)
    calls = [dict(direction="forward")]
    if case.backward:
        calls.append(dict(direction="backward"))
    for kwargs in calls:
        case.path(**kwargs)
        if not case.needs_validation:
            case.path(with_validation=False, **kwargs)
    assert pickle.dumps(case.model) == before
    np.testing.assert_array_equal(case.predictions(), expected)


@pytest.mark.parametrize("name", ["kernel_ridge"])
def test_lifetime_mixture_leaves_the_model_exactly_as_it_was(name):
    case = make_case(name)
    expected = case.predictions()
    before = pickle.dumps(case.model)
    case.model.predict_lifetime_mixture(case.X_val, n_components=3)
    assert pickle.dumps(case.model) == before
    np.testing.assert_array_equal(case.predictions(), expected)


@pytest.mark.parametrize("name", ["kernel_ridge"])
def test_online_updates_after_a_path_equal_those_without(name):
    """partial_fit after a path gives the model partial_fit gives without it."""
    case = make_case(name)
    twin = pickle.loads(pickle.dumps(case.model))
    case.path()
    X_new, y_new = case.X_val[:10], case.y_val[:10]
    case.model.partial_fit(X_new, y_new)
    twin.partial_fit(X_new, y_new)
    np.testing.assert_array_equal(case.model.coef_, twin.coef_)
    np.testing.assert_array_equal(case.predictions(), twin.predict(case.X_val))
