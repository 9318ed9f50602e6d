"""How a robot turns raw sensor readings into what its controller reads: joint velocities from
encoder differences, orientation from a filter on gyro and accelerometer, and sensor latency.

The simulator knows the joint velocities and the orientation exactly; a robot does not. A NAO has
no joint-velocity sensor (its software differentiates the encoder angles), and every robot
estimates its orientation from its IMU: B-Human with an unscented Kalman filter, the Bit-Bots
with a complementary filter feeding fused angles. :class:`SensingModel` applies what
:class:`~upright.envs.conditions.Conditions` asks for (``joint_velocity``, ``orientation``,
``sensor_latency_cycles``) to one control cycle's readings, in the layout of
:data:`~upright.envs.observation.READINGS`, so the observation's layout never changes, only its
values.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import NamedTuple

import mujoco
import numpy as np

from upright.envs.kernels import quaternion_fused_angles

#: Standard gravity (m/s²): the accelerometer's magnitude at rest.
GRAVITY = 9.81


class OrientationFilter:
    """A complementary filter on the gyro and the accelerometer (Mahony, Hamel & Pflimlin 2008, in
    the form of Valenti, Dryanovski & Xiao 2015, whose ROS implementation the Bit-Bots' robots run):
    the estimate integrates the gyro, and is turned towards the accelerometer's "up" at
    ``gain`` (1/s) times the angle between them, the gain fading linearly from full to zero as the
    accelerometer's magnitude departs from gravity by 10 % to 20 % (a fall, an impact: the
    accelerometer is no gravity sensor then). There is no magnetometer, so yaw is the integrated
    gyro and drifts with its noise; tilt lags behind fast turns by about 1/``gain`` seconds.
    """

    #: Correction gain (1/s): the tilt error's time constant is about 1/gain = 0.5 s.
    GAIN = 2.0
    #: Fractions of gravity by which the accelerometer's magnitude may depart from it before the
    #: correction starts to fade, and where it is gone (Valenti et al. 2015, adaptive gain).
    FADE = (0.1, 0.2)

    def __init__(self, gain: float = GAIN) -> None:
        self.gain = float(gain)

    def step(self, quat: np.ndarray, gyro: np.ndarray, accel: np.ndarray, dt: float) -> np.ndarray:
        """The estimate ``dt`` seconds after ``quat`` (w, x, y, z; IMU frame to world), given the
        gyro (rad/s) and the accelerometer's specific force (m/s²), both in the IMU frame."""
        rotation = np.empty(9)
        mujoco.mju_quat2Mat(rotation, quat)
        up_estimated = rotation[6:9]  # the world's z axis in the IMU frame: R's last row
        magnitude = float(np.linalg.norm(accel))
        departure = abs(magnitude / GRAVITY - 1.0)
        low, high = self.FADE
        weight = 1.0 if departure <= low else max(0.0, (high - departure) / (high - low))
        omega = np.array(gyro, dtype=float)
        if weight > 0.0 and magnitude > 0.0:
            # Turning the body frame by w changes a world-fixed vector v seen in it at v × w, so
            # w = k (up_measured × up_estimated) turns the estimate towards the measurement.
            omega += self.gain * weight * np.cross(accel / magnitude, up_estimated)
        out = np.array(quat, dtype=float)
        mujoco.mju_quatIntegrate(out, omega, dt)
        mujoco.mju_normalize4(out)
        return out


class _Cycle(NamedTuple):
    """What :class:`SensingModel` keeps of one control cycle."""

    time: float  # s, the simulation's clock
    joint_pos: np.ndarray  # rad, the measured angles
    quat: np.ndarray  # the orientation estimate (w, x, y, z)
    values: np.ndarray  # the processed readings, in the layout of READINGS


class SensingModel:
    """Joint-velocity estimation, orientation filtering and latency over a sequence of readings.

    Args:
        slices: reading name → where it lies in a readings vector (``joint_pos``, ``joint_vel``,
            ``gyro``, ``accel``, ``quat``, ``fused``: the blocks of
            :data:`~upright.envs.observation.READINGS`).
        joint_velocity: ``exact`` or ``difference``.
        orientation: ``exact`` or ``filter``.

    :meth:`process` may be called more than once in the same cycle (a reset reads the sensors twice,
    for instance): a cycle's estimate always starts from the previous cycle's, never from an
    earlier call in the same cycle, so repeated reads do not advance the estimators.
    """

    def __init__(self, slices: Mapping[str, slice], joint_velocity: str = "exact", orientation: str = "exact") -> None:
        self._pos, self._vel, self._gyro, self._accel, self._quat, self._fused = (
            slices[name] for name in ("joint_pos", "joint_vel", "gyro", "accel", "quat", "fused"))
        self.difference = joint_velocity == "difference"
        self.filter = OrientationFilter() if orientation == "filter" else None
        self.restart(0)

    def restart(self, latency: int) -> None:
        """Forget every earlier reading (a new episode, or a robot put down by hand) and read with
        ``latency`` control cycles of sensor latency from now on."""
        self.latency = int(latency)
        self._previous: _Cycle | None = None
        self._current: _Cycle | None = None
        #: Whether this model changes any reading (else :meth:`process` can be skipped: it is read
        #: every control step).
        self.active = self.difference or self.filter is not None or self.latency > 0
        self._delayed: deque[np.ndarray] = deque(maxlen=self.latency)

    def process(self, time: float, values: np.ndarray) -> np.ndarray:
        """This cycle's readings (``values``: measured, noise included; changed in place) as the
        controller reads them at ``time`` (s): estimated velocities and orientation, then the
        readings of ``latency`` cycles ago (the oldest there are, early in an episode)."""
        current = self._current
        if current is not None and time != current.time:  # a new cycle: the last one is complete
            self._previous = current
            if self.latency:
                self._delayed.append(current.values)
        previous = self._previous
        joint_pos = values[self._pos]
        dt = 0.0 if previous is None else time - previous.time
        if self.difference:
            values[self._vel] = (joint_pos - previous.joint_pos) / dt if dt > 0.0 else 0.0
        quat = values[self._quat]
        if self.filter is not None:
            if dt > 0.0:
                quat = self.filter.step(previous.quat, values[self._gyro], values[self._accel], dt)
            else:  # the filter has settled before the episode: it starts from the true orientation
                quat = quat.copy()
            values[self._quat] = quat
            values[self._fused] = quaternion_fused_angles(*quat.tolist())
        self._current = _Cycle(time, joint_pos.copy(), quat.copy(), values.copy())
        if not self.latency:
            return values
        return (self._delayed[0] if self._delayed else values).copy()


__all__ = ["GRAVITY", "OrientationFilter", "SensingModel"]
