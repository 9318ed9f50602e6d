"""The walks' compiled kernels (``upright.baselines.kernels``) give the very floats of their
formulas written in Python, on random inputs."""

from __future__ import annotations

import math

import numpy as np

from upright.baselines.kernels import foot_pressure_sums, joint_errors, step_adjustment


def _algorithm_1(w_t: float, w_prev: float, w_bar_prev: float, u_t: float, m: float, p_max: float, t_min: float,
                 t_max: float) -> tuple[float, float, float]:
    """Algorithm 1 of the step adjustment as printed (with the decay in lines 4-10), in Python."""
    dw_prev = w_bar_prev - w_prev
    decay = min(max(-dw_prev, -p_max), p_max)
    dw = w_t - w_prev
    w_hat = w_bar_prev + dw + decay
    support = u_t - (dw_prev + decay) / 2.0
    lower, upper = min(w_hat, support) + t_min, max(w_hat, support) + t_max
    delta = min(m - lower, 0.0) + max(m - upper, 0.0)
    p_lo = min(0.0, -p_max - dw) - max(decay, 0.0)
    p_hi = max(0.0, p_max - dw) - min(decay, 0.0)
    w_bar = w_hat + min(max(delta, p_lo), p_hi)
    return w_bar, u_t - (w_bar - w_t) / 2.0, delta


def _same_floats(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    """Equal to the bit, the sign of a zero included."""
    return all(x == y and math.copysign(1.0, x) == math.copysign(1.0, y) for x, y in zip(a, b, strict=True))


def test_step_adjustment_is_algorithm_1_to_the_bit():
    rng = np.random.default_rng(0)
    for i in range(3000):
        w_t, w_prev, w_bar_prev, u_t, m = (rng.normal(0.0, 0.02, 5) * (i % 3)).tolist()  # every third all zero
        args = (w_t, w_prev, w_bar_prev, u_t, m, 0.002, -0.005, 0.04)
        assert _same_floats(step_adjustment(*args), _algorithm_1(*args)), args


def test_foot_pressure_sums_add_each_foots_readings_in_sensor_order():
    rng = np.random.default_rng(1)
    for n_left, n_right in ((4, 4), (3, 2), (9, 1)):
        foot = [0] * n_left + [1] * n_right
        position = rng.normal(0.0, 0.05, (len(foot), 2))
        for _ in range(200):
            pressure = rng.exponential(20.0, len(foot)) * (rng.random(len(foot)) < 0.7)
            expected = []
            for side in (0, 1):
                load = mx = my = 0.0
                for f, (x, y), k in zip(pressure.tolist(), position.tolist(), foot):
                    if k == side:
                        load, mx, my = load + f, mx + f * x, my + f * y
                expected.append((load, mx, my))
            assert foot_pressure_sums(pressure, position, n_left) == tuple(expected)


def test_joint_errors_are_equations_2_to_4_as_numpy_writes_them():
    rng = np.random.default_rng(2)
    for _ in range(300):
        request, measured, previous = rng.normal(0.0, 0.1, (3, 20))
        request[rng.random(20) < 0.2] = np.nan  # unstiffened joints: no error
        previous[rng.random(20) < 0.2] = 0.0
        raw = request - measured
        raw = np.where(np.isnan(raw), 0.0, raw)
        predicted = 3.0 * (raw - previous) + raw
        applied = np.where(predicted * raw <= 0.0, 0.0, np.where(np.abs(predicted) < np.abs(raw), predicted, raw))
        got_raw, got_applied = np.empty(20), np.empty(20)
        joint_errors(request, measured, previous, 3.0, got_raw, got_applied)
        assert _same_floats(tuple(got_raw), tuple(raw)) and _same_floats(tuple(got_applied), tuple(applied))
