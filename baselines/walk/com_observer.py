"""Kalman-filtered CoM observer of Graf & Röfer 2011 (section 3.1, equations 10–14).

Two independent two-dimensional filters, one per horizontal axis, each with the state (CoM
position, CoM velocity) in the current phase frame ``Q`` (m, m/s). The prediction is not a
motion model of the filter's own: it is the pendulum's expected position and velocity at the
measurement time (equation 12); the innovation is the measured minus the expected position
(equation 11).
"""

from __future__ import annotations

import numpy as np

_C = np.array([[1.0, 0.0]])


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
        self.cov = self.process_cov.copy()
        self.position = np.zeros(2)
        self.velocity = np.zeros(2)

    def reset(self, position: np.ndarray, velocity: np.ndarray) -> None:
        """Start from a known state (m, m/s) with the process covariance as uncertainty."""
        self.position = np.asarray(position, dtype=float).copy()
        self.velocity = np.asarray(velocity, dtype=float).copy()
        self.cov = self.process_cov.copy()

    def update(self, expected_pos: np.ndarray, expected_vel: np.ndarray, measured_pos: np.ndarray,
               dt: float) -> tuple[np.ndarray, np.ndarray]:
        """One filter cycle: predict with the pendulum's expected state, correct with the measured
        CoM position. Returns the filtered position and velocity (each (2,), x and y)."""
        a = np.array([[1.0, dt], [0.0, 1.0]])
        innovation = np.asarray(measured_pos, dtype=float) - np.asarray(expected_pos, dtype=float)
        for axis in range(2):
            mean = np.array([expected_pos[axis], expected_vel[axis]])
            cov = a @ self.cov[axis] @ a.T + self.process_cov[axis]
            gain = cov @ _C.T / ((_C @ cov @ _C.T)[0, 0] + self.measurement_var[axis])
            mean = mean + gain[:, 0] * innovation[axis]
            self.cov[axis] = cov - gain @ _C @ cov
            self.position[axis], self.velocity[axis] = mean
        return self.position.copy(), self.velocity.copy()
