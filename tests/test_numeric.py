"""The hot-path helpers of ``envs/numeric.py`` and the memoised fused angles give NumPy's results
exactly (not just closely): the environments must not change by using them."""

from __future__ import annotations

import numpy as np

from upright.envs.numeric import consecutive, gather, mean, norm
from upright.envs.sensors import fused_angles, fused_tilt


def _vectors():
    rng = np.random.default_rng(0)
    for size in (1, 2, 3, 4, 7, 8, 9, 20, 23, 31, 129):
        for scale in (1e-3, 1.0, 1e3):
            yield rng.normal(0.0, scale, size)


def test_norm_and_mean_are_numpys_bit_for_bit():
    for v in _vectors():
        assert norm(v) == float(np.linalg.norm(v))
        assert mean(v) == float(np.mean(v))


def test_consecutive_indices_become_a_slice_that_gathers_a_copy():
    values = np.arange(10.0)
    for indices, run in (([3, 4, 5], True), ([2], True), ([1, 3, 4], False), ([5, 4], False), ([], False)):
        index = consecutive(indices)
        assert isinstance(index, slice) is run
        part = gather(values, index)
        np.testing.assert_array_equal(part, values[np.asarray(indices, dtype=int)])
        assert not np.shares_memory(part, values)


def test_fused_tilt_is_fused_angles_without_the_yaw_and_results_are_fresh():
    rng = np.random.default_rng(1)
    for quat in rng.normal(size=(200, 4)):
        angles = fused_angles(quat)
        pitch, roll, hemisphere = fused_tilt(quat)
        assert (pitch, roll, hemisphere) == (angles[0], angles[1], angles[3])
        angles[:] = 0.0  # the remembered angles are not shared with the caller
        assert fused_angles(quat)[0] == pitch
