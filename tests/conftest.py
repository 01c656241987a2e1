"""Shared pytest configuration: the helpers' import path, the global random seed fixture and the
hypothesis profiles.

The tests mirror the source tree (tests/core, tests/forest, tests/density, tests/kernel,
tests/path, plus tests/estimators for the scikit-learn checks and property tests, tests/cli and
tests/docs); there are no __init__.py files, so every test module's basename is unique.

MONDRIAN_TESTS_GLOBAL_RANDOM_SEED selects the seeds given to `global_random_seed`:
unset -> 42; an integer -> that seed; "a-b" -> every seed in a..b; "any" -> one seed drawn in
0..99; "all" -> every seed in 0..99. A test that uses the fixture must pass for every seed.

Hypothesis runs the "dev" profile (30 examples) by default and the "ci" profile (100 examples)
when the CI environment variable is set; HYPOTHESIS_PROFILE overrides both (the "thorough"
profile, 1000 examples, is for occasional bug hunts).
"""

import os
import random
import sys

from hypothesis import HealthCheck, settings

# The shared helpers (_checks.py, _reference.py) sit next to this file and are imported by bare
# name from every subfolder of tests/, whatever pytest's import mode.
_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

# Hypothesis profiles: ``dev`` (default) and ``ci`` (default when $CI is set) and ``thorough``,
# chosen with $HYPOTHESIS_PROFILE; only the number of examples and blob printing differ.
for _name, _examples in (("dev", 30), ("ci", 100), ("thorough", 1000)):
    settings.register_profile(
        _name,
        max_examples=_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        print_blob=_name != "dev",
    )
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

_SEED_ENV = "MONDRIAN_TESTS_GLOBAL_RANDOM_SEED"


def _global_seeds():
    """The seeds requested through MONDRIAN_TESTS_GLOBAL_RANDOM_SEED."""
    raw = os.environ.get(_SEED_ENV, "").strip().lower()
    if raw == "":
        return [42]
    if raw == "all":
        return list(range(100))
    if raw == "any":
        return [random.randrange(100)]
    if "-" in raw.lstrip("-"):
        start, stop = raw.split("-", 1)
        return list(range(int(start), int(stop) + 1))
    try:
        return [int(raw)]
    except ValueError:
        raise ValueError(
            f"{_SEED_ENV} must be unset, an integer, 'a-b', 'any' or 'all'; got {raw!r}"
        ) from None


def pytest_generate_tests(metafunc):
    """Parametrize every test that requests `global_random_seed`."""
    if "global_random_seed" in metafunc.fixturenames:
        metafunc.parametrize("global_random_seed", _global_seeds())


def pytest_report_header(config):
    seeds = _global_seeds()
    shown = seeds if len(seeds) <= 5 else f"{seeds[0]}..{seeds[-1]}"
    profile = settings.get_current_profile_name()
    return f"mondrian global_random_seed: {shown}; hypothesis profile: {profile}"
