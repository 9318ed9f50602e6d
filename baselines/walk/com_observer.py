"""Kalman-filtered CoM observer of Graf & Röfer 2011 (section 3.1, equations 10–14).

Two independent two-dimensional filters, one per horizontal axis, each with the state (CoM
position, CoM velocity) in the current phase frame ``Q`` (m, m/s). The prediction is not a
motion model of the filter's own: it is the pendulum's expected position and velocity at the
measurement time (equation 12); the innovation is the measured minus the expected position
(equation 11).
"""

from __future__ import annotations

import numpy as np

class ComObserver:
    """Per-axis Kalman filters on (position, velocity).

    Args:
        process_std: per axis (x, y), process noise standard deviations ``(position m, velocity
            m/s)`` added per cycle (the paper's Σε; B-Human 2013: 0.1 mm and 3 mm/s on both axes).
        measurement_std: per axis (x, y), standard deviation (m) of the measured CoM position
            (Σm; B-Human 2013: 2 mm on both axes).
    """

    def __init__(self, process_std: tuple[tuple[float, float], tuple[float, float]],
                 measurement_std: tuple[float, float]) -> None:
        process = np.asarray(process_std, dtype=float)
        measurement = np.asarray(measurement_std, dtype=float)
        if process.shape != (2, 2) or measurement.shape != (2,) or process.min() <= 0.0 or measurement.min() <= 0.0:
            raise ValueError(f"noise deviations must be > 0 with shapes (2, 2) and (2,), got "
                             f"{process_std!r}, {measurement_std!r}")
        self.process_cov = np.stack([np.diag(np.square(p)) for p in process])
        self.measurement_var = np.square(measurement)
        self.reset(np.zeros(2), np.zeros(2))

    def reset(self, position, velocity) -> None:
        """Start from a known state (m, m/s) with the process covariance as uncertainty."""
        self._position = np.asarray(position, dtype=float).tolist()
        self._velocity = np.asarray(velocity, dtype=float).tolist()
        # per axis (x, y) one flat tuple (:func:`_filter_axis`): the covariance, the process noise
        # (both row-major 2 x 2) and the measurement noise
        q, r = self.process_cov.reshape(2, 4).tolist(), self.measurement_var.tolist()
        self._state = (tuple(q[0] + q[0] + [r[0]]), tuple(q[1] + q[1] + [r[1]]))

    def update(self, expected_pos, expected_vel, measured_pos, dt: float) -> tuple[list[float], list[float]]:
        """One filter cycle: predict with the pendulum's expected state, correct with the measured
        CoM position. Returns the filtered position and velocity (each [x, y]). Written out in
        floats for the 2 x 2 matrices (a cycle of the walk), on a flat state per axis (fewer
        objects to read every cycle than nested lists)."""
        x, vx, state_x = _filter_axis(self._state[0], float(expected_pos[0]), float(expected_vel[0]),
                                      float(measured_pos[0]), dt)
        y, vy, state_y = _filter_axis(self._state[1], float(expected_pos[1]), float(expected_vel[1]),
                                      float(measured_pos[1]), dt)
        self._state = (state_x, state_y)
        self._position, self._velocity = [x, y], [vx, vy]
        return [x, y], [vx, vy]

    @property
    def position(self) -> np.ndarray:
        """The filtered CoM position (m), x and y."""
        return np.array(self._position)

    @property
    def velocity(self) -> np.ndarray:
        """The filtered CoM velocity (m/s), x and y."""
        return np.array(self._velocity)

    @property
    def cov(self) -> np.ndarray:
        """The covariance (2, 2, 2) per axis of (position, velocity)."""
        return np.array([state[:4] for state in self._state]).reshape(2, 2, 2)


def _filter_axis(state: tuple[float, ...], expected: float, expected_vel: float, measured: float,
                 dt: float) -> tuple[float, float, tuple[float, ...]]:
    """One axis of :meth:`ComObserver.update`: the filtered position (m) and velocity (m/s), and the
    axis's new ``state`` (covariance p00, p01, p10, p11, then the process noise q00, q01, q10, q11
    and the measurement noise r, unchanged)."""
    c00, c01, c10, c11, q00, q01, q10, q11, r = state
    # predicted covariance A P Aᵀ + Q with A = [[1, dt], [0, 1]]
    a00, a01 = c00 + dt * c10, c01 + dt * c11
    p00, p01 = a00 + a01 * dt + q00, a01 + q01
    p10, p11 = c10 + c11 * dt + q10, c11 + q11
    # gain P Cᵀ / (C P Cᵀ + R) with C = [1, 0]
    denominator = p00 + r
    g0, g1 = p00 / denominator, p10 / denominator
    innovation = measured - expected
    return (expected + g0 * innovation, expected_vel + g1 * innovation,
            (p00 - g0 * p00, p01 - g0 * p01, p10 - g1 * p00, p11 - g1 * p01, q00, q01, q10, q11, r))
