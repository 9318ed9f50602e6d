"""What a robot measures: the :class:`Sensors` record and the fused-angle representation.

Controllers (``baselines/``) and observations are built only from :class:`Sensors`; simulator
truth (CoM, contact forces, true pose) is available from :class:`~upright.envs.simulation.Simulation`
getters for ``info`` and metrics only.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from upright.envs.kernels import fill_observation, quaternion_fused_angles
from upright.envs.observation import assembled_slices

#: The blocks :func:`fill_observation` writes, in the order of its argument ``at``.
_FILLED = ("joint_pos", "joint_vel", "joint_target", "gyro", "accel", "gravity", "fused", "foot_pressure", "task",
           "prior_target")
_EMPTY = np.zeros(0)  # an absent task or prior block (never written)


@dataclass(frozen=True, eq=False, init=False)
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

    def __init__(self, time: float, joint_pos: np.ndarray, joint_vel: np.ndarray, joint_target: np.ndarray,
                 gyro: np.ndarray, accel: np.ndarray, quat: np.ndarray, fused: np.ndarray,
                 foot_pressure: np.ndarray) -> None:
        # Frozen: the fields are set here once, in one update of the instance's dict. The generated
        # __init__ of a frozen dataclass sets them one object.__setattr__ call at a time, which
        # costs twice as much, and a Sensors is made every control step.
        self.__dict__.update(time=time, joint_pos=joint_pos, joint_vel=joint_vel, joint_target=joint_target,
                             gyro=gyro, accel=accel, quat=quat, fused=fused, foot_pressure=foot_pressure)

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
    task = _EMPTY if task_block is None else np.asarray(task_block, dtype=float)
    prior = _EMPTY if prior_targets is None else np.asarray(prior_targets, dtype=float)
    s = sensors
    size, at = _layout(s.joint_pos.size, s.joint_target.size, s.foot_pressure.size, task.size, prior.size)
    out = np.empty(size, dtype=np.float32)
    fill_observation(s.joint_pos, s.joint_vel, s.joint_target, s.gyro, s.accel, s.quat, s.fused, s.foot_pressure,
                     task, prior, at, out)
    return out


@cache
def _layout(joints: int, actuators: int, pressures: int, task: int, prior: int) -> tuple[int, np.ndarray]:
    """The size of an observation with these block sizes and the starts of :data:`_FILLED` in it
    (:func:`~upright.envs.observation.assembled_slices`)."""
    slices = assembled_slices({"nj": joints, "nu": actuators, "np": pressures}, task, prior)
    return max(part.stop for part in slices.values()), np.array([slices[name].start for name in _FILLED])


def fused_tilt(quat: np.ndarray) -> tuple[float, float, float]:
    """Fused pitch and roll (rad) and the hemisphere (±1) of a body-to-world quaternion
    ``(w, x, y, z)``: :func:`fused_angles` without the yaw, as floats."""
    pitch, roll, _, hemisphere = quaternion_fused_angles(*np.asarray(quat, dtype=float).tolist())
    return pitch, roll, hemisphere


def fused_angles(quat: np.ndarray) -> np.ndarray:
    """Fused angles (Allgeuer & Behnke, 2015) of a body-to-world quaternion ``(w, x, y, z)``.

    Returns ``(pitch, roll, yaw, hemisphere)``: fused pitch ``asin(-R[2,0])`` (positive = leaning
    forward), fused roll ``asin(R[2,1])`` (positive = rotated about +x,
    i.e. leaning to the robot's right), fused yaw ``2·atan2(z, w)`` wrapped to (-π, π], and the hemisphere
    ``+1`` when the body's z axis points up (``R[2,2] >= 0``), ``-1`` when upside down.
    Unlike Euler angles these have no gimbal lock near upright and stay meaningful lying down.
    """
    return np.array(quaternion_fused_angles(*np.asarray(quat, dtype=float).tolist()))
