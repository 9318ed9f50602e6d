"""What a robot measures: the :class:`Sensors` record and the fused-angle representation.

Controllers (``baselines/``) and observations are built only from :class:`Sensors`; simulator
truth (CoM, contact forces, true pose) is available from :class:`~upright.envs.simulation.Simulation`
getters for ``info`` and metrics only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class Sensors:
    """One control cycle's measurements.

    Frames: the IMU frame is fixed to the torso, axes parallel to the torso frame
    (x forward, y left, z up). Orientation is that frame's rotation relative to the world
    (gravity along -z); real IMUs drift in yaw, so controllers should rely on pitch/roll.
    """

    #: Time since the episode started (s).
    time: float
    #: Joint angles (rad) in the robot's joint order, with sensor noise.
    joint_pos: np.ndarray
    #: Joint angular velocities (rad/s), robot joint order.
    joint_vel: np.ndarray
    #: The last commanded joint targets (rad), actuator order (what the controller sent).
    joint_target: np.ndarray
    #: Angular velocity of the IMU (rad/s), IMU frame.
    gyro: np.ndarray
    #: Specific force of the IMU (m/s²), IMU frame; +9.81 on z when standing still upright.
    accel: np.ndarray
    #: IMU orientation quaternion (w, x, y, z), IMU frame to world.
    quat: np.ndarray
    #: Fused angles (pitch, roll, yaw, hemisphere) of the IMU orientation, see :func:`fused_angles`.
    fused: np.ndarray
    #: Normal forces (N) of the foot pressure sensors, 4 left then 4 right (robot's order).
    foot_pressure: np.ndarray

    def __eq__(self, other: object) -> bool:
        """Equal when every field is equal (arrays element-wise)."""
        if not isinstance(other, Sensors):
            return NotImplemented
        return all(np.array_equal(getattr(self, f), getattr(other, f)) for f in self.__dataclass_fields__)

    __hash__ = None  # type: ignore[assignment]  (mutable arrays inside)

    def __deepcopy__(self, memo: dict[int, object]) -> Sensors:
        """A copy with copies of the arrays: what :func:`copy.deepcopy` would make, at a fraction of
        its generic cost (SB3's ``DummyVecEnv`` deep-copies every step's ``info``, which holds the
        step's sensors)."""
        return Sensors(**{name: value.copy() if isinstance(value, np.ndarray) else value
                          for name, value in self.__dict__.items()})


def observation_from_sensors(sensors: Sensors, task_block: np.ndarray | None = None,
                             prior_targets: np.ndarray | None = None) -> np.ndarray:
    """The environments' observation (float32) of one cycle's ``sensors``: what ``env.step``
    returns, and what robot-side code feeds a trained policy (``docs/export.md``), so both build
    it with this one function. Its blocks in order are the rows of
    :data:`upright.envs.observation.OBSERVATION`: the sensors' blocks, then ``task_block`` (get-up:
    none; walk: the command and, with ``observe_odometry``, the prior's odometry) and, for a
    residual policy, the prior's ``prior_targets`` this cycle (rad, actuator order)."""
    w, x, y, z = sensors.quat.tolist()
    gravity = [-(2 * (x * z - w * y)), -(2 * (y * z + w * x)), -(1 - 2 * (x * x + y * y))]
    parts = [sensors.joint_pos, sensors.joint_vel, sensors.joint_target, sensors.gyro, sensors.accel, gravity,
             sensors.fused[:2], sensors.fused[3:], sensors.foot_pressure,
             np.zeros(0) if task_block is None else task_block]
    if prior_targets is not None:
        parts.append(prior_targets)
    return np.concatenate(parts).astype(np.float32)


def fused_tilt(quat: np.ndarray) -> tuple[float, float, float]:
    """Fused pitch and roll (rad) and the hemisphere (±1) of a body-to-world quaternion
    ``(w, x, y, z)``: :func:`fused_angles` without the yaw, as floats."""
    pitch, roll, _, hemisphere = _fused(*np.asarray(quat, dtype=float).tolist())
    return pitch, roll, hemisphere


def fused_angles(quat: np.ndarray) -> np.ndarray:
    """Fused angles (Allgeuer & Behnke, 2015) of a body-to-world quaternion ``(w, x, y, z)``.

    Returns ``(pitch, roll, yaw, hemisphere)``: fused pitch ``asin(-R[2,0])`` (positive = leaning
    forward), fused roll ``asin(R[2,1])`` (positive = rotated about +x,
    i.e. leaning to the robot's right), fused yaw ``2·atan2(z, w)`` wrapped to (-π, π], and the hemisphere
    ``+1`` when the body's z axis points up (``R[2,2] >= 0``), ``-1`` when upside down.
    Unlike Euler angles these have no gimbal lock near upright and stay meaningful lying down.
    """
    return np.array(_fused(*np.asarray(quat, dtype=float).tolist()))


def _fused(w: float, x: float, y: float, z: float) -> tuple[float, float, float, float]:
    """:func:`fused_angles` of the quaternion ``(w, x, y, z)`` (normalised here), as floats; in
    :mod:`math` on Python floats, which costs a fraction of NumPy's per-call overhead on scalars."""
    n = math.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / n, x / n, y / n, z / n
    r20 = 2.0 * (x * z - w * y)
    r21 = 2.0 * (y * z + w * x)
    r22 = 1.0 - 2.0 * (x * x + y * y)
    # The sines clipped to [-1, 1] as the definition has it; a NaN (a blown-up state) becomes 1, so
    # math.asin does not raise.
    sin_pitch = -r20 if -r20 < 1.0 else 1.0
    sin_roll = r21 if r21 < 1.0 else 1.0
    pitch = math.asin(sin_pitch if sin_pitch > -1.0 else -1.0)
    roll = math.asin(sin_roll if sin_roll > -1.0 else -1.0)
    half_yaw = 2.0 * math.atan2(z, w)
    yaw = math.atan2(math.sin(half_yaw), math.cos(half_yaw))
    return pitch, roll, yaw, 1.0 if r22 >= 0.0 else -1.0
