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
        self._cov = self.process_cov.tolist()
        self._q = [(q[0][0], q[0][1], q[1][0], q[1][1]) for q in self.process_cov.tolist()]
        self._r = self.measurement_var.tolist()

    def update(self, expected_pos, expected_vel, measured_pos, dt: float) -> tuple[list[float], list[float]]:
        """One filter cycle: predict with the pendulum's expected state, correct with the measured
        CoM position. Returns the filtered position and velocity (each [x, y]). Written out in
        floats for the 2 x 2 matrices (a cycle of the walk)."""
        position, velocity = [0.0, 0.0], [0.0, 0.0]
        for axis in range(2):
            (c00, c01), (c10, c11) = self._cov[axis]
            q00, q01, q10, q11 = self._q[axis]
            # predicted covariance A P Aᵀ + Q with A = [[1, dt], [0, 1]]
            a00, a01 = c00 + dt * c10, c01 + dt * c11
            p00, p01 = a00 + a01 * dt + q00, a01 + q01
            p10, p11 = c10 + c11 * dt + q10, c11 + q11
            # gain P Cᵀ / (C P Cᵀ + R) with C = [1, 0]
            denominator = p00 + self._r[axis]
            g0, g1 = p00 / denominator, p10 / denominator
            innovation = float(measured_pos[axis]) - float(expected_pos[axis])
            position[axis] = float(expected_pos[axis]) + g0 * innovation
            velocity[axis] = float(expected_vel[axis]) + g1 * innovation
            self._cov[axis] = [[p00 - g0 * p00, p01 - g0 * p01], [p10 - g1 * p00, p11 - g1 * p01]]
        self._position, self._velocity = position, velocity
        return position[:], velocity[:]

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
        return np.array(self._cov)
