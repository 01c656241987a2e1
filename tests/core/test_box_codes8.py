"""``mf_box_from_codes8`` (``core/_code_kernels.h``): a box kept as 1-byte rank codes decoded
for the coded batch walk, a feature's two bounds from one read of its start and the codes 8
at a time. Every bound must be the very double ``values[starts + codes]`` (``BoxCoder``'s
decode), for any number of features (words of 8 codes and the rest), codes 0 and 255,
infinite and signed-zero values."""

import numpy as np
import pytest

from mondrian.core._batch_walk import _box_from_codes

pytestmark = pytest.mark.exact


def _coder(D, rng):
    counts = rng.integers(1, 257, size=D)
    counts[0] = 256
    values = np.concatenate([np.sort(rng.normal(size=c) * 10.0 ** rng.integers(-3, 4))
                             for c in counts])
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.intp)
    values[starts[-1]] = -np.inf
    values[starts[0] + 1] = -0.0
    values[-1] = np.inf
    return values, np.concatenate([starts, starts]), np.concatenate([counts, counts])


@pytest.mark.parametrize("D", [1, 2, 7, 8, 9, 15, 16, 17, 36, 180])
def test_bounds_are_the_encoded_doubles(D):
    rng = np.random.default_rng(D)
    values, starts, counts = _coder(D, rng)
    for trial in range(20):
        codes = (rng.integers(0, 1 << 30, size=2 * D) % counts).astype(np.uint8)
        if trial == 0:
            codes[:] = counts - 1  # the last value of each table (255 for 256 values)
        elif trial == 1:
            codes[:] = 0
        box = np.full(2 * D, np.nan)
        _box_from_codes(codes, values, starts, box)
        expected = values[starts + codes]
        assert box.tobytes() == expected.tobytes()


def test_refuses_tables_it_cannot_read():
    values = np.arange(4.0)
    box = np.zeros(2)
    with pytest.raises(ValueError):
        _box_from_codes(np.array([0, 1], np.uint8), values, np.array([0, 1], np.intp), box)
    with pytest.raises(ValueError):
        _box_from_codes(np.array([0, 9], np.uint8), values, np.array([0, 0], np.intp), box)
