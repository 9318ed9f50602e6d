"""The hot-path helpers of ``envs/numeric.py`` give NumPy's results exactly (not just closely), and
the fused angles (compiled, :mod:`math` on floats) agree with an independent rotation-matrix
computation: the environments must not change by using them."""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from upright.envs.numeric import consecutive, gather, norm
from upright.envs.sensors import fused_angles, fused_tilt


def _vectors():
    rng = np.random.default_rng(0)
    for size in (1, 2, 3, 4, 7, 8, 9, 20, 23, 31, 129):
        for scale in (1e-3, 1.0, 1e3):
            yield rng.normal(0.0, scale, size)


def test_norm_is_numpys_bit_for_bit():
    for v in _vectors():
        assert norm(v) == float(np.linalg.norm(v))


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
        angles[:] = 0.0  # each call returns a new array
        assert fused_angles(quat)[0] == pitch


def test_fused_angles_match_the_rotation_matrix_definition():
    """pitch = asin(-R[2,0]), roll = asin(R[2,1]), yaw = 2 atan2(z, w) wrapped, hemisphere = sign R[2,2],
    with R from SciPy (which takes (x, y, z, w)); unnormalised quaternions are normalised."""
    rng = np.random.default_rng(2)
    for quat in rng.normal(size=(500, 4)) * rng.uniform(0.1, 10.0, (500, 1)):
        w, x, y, z = quat / np.linalg.norm(quat)
        r = Rotation.from_quat([x, y, z, w]).as_matrix()
        yaw = 2.0 * np.arctan2(z, w)
        expected = [np.arcsin(-r[2, 0]), np.arcsin(r[2, 1]), np.arctan2(np.sin(yaw), np.cos(yaw)),
                    1.0 if r[2, 2] >= 0 else -1.0]
        np.testing.assert_allclose(fused_angles(quat), expected, rtol=0, atol=1e-9)
