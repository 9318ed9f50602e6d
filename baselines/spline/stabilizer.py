"""The spline stand-up's trunk stabiliser: PID control of the trunk's fused pitch and roll.

Bit-Bots ``dynup_stabilizer.cpp`` and the ICAR paper (section III.B): the trunk's goal
orientation follows from the right-foot goal (the sole lies flat on the floor, so the trunk's
orientation relative to the world is the inverse of the foot's orientation relative to the trunk);
its fused pitch and roll are compared with the IMU's, a PID per angle corrects the goal angles,
and the corrected trunk orientation is turned back into a right-foot goal (the trunk keeps its
position relative to the foot and turns about its own origin).

Sign convention (ours): with error ``e = goal − measured``, the corrected goal angle is
``goal + u`` with ``u = p·e + i·∫e + d·ė`` and **positive** gains. A trunk that leans further
forward than planned (measured > goal) therefore gets a goal leaning back relative to the feet,
which moves the upper body's mass back over the support. (The Bit-Bots configs carry negative gains
for the same behaviour in their frame conventions.)
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

from upright.envs.sensors import fused_angles


def rotation_fused_angles(rot: np.ndarray) -> np.ndarray:
    """Fused angles ``(pitch, roll, yaw, hemisphere)`` of a body-to-world rotation matrix."""
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(rot, dtype=float).ravel())
    return fused_angles(quat)


def fused_to_rotation(pitch: float, roll: float, yaw: float, hemisphere: float) -> np.ndarray:
    """The body-to-world rotation matrix with the given fused angles (inverse of
    :func:`~upright.envs.sensors.fused_angles`): ``R = Rz(yaw) · tilt``, where the tilt turns about
    a horizontal axis and maps the world's z axis seen from the body, ``(−sin pitch, sin roll, ±c)``,
    onto ``z``. Pitch and roll whose sines square to more than 1 are scaled back onto that circle."""
    sp, sr = math.sin(pitch), math.sin(roll)
    s2 = sp * sp + sr * sr
    if s2 > 1.0:
        scale = 1.0 / math.sqrt(s2)
        sp, sr, s2 = sp * scale, sr * scale, 1.0
    cz = (1.0 if hemisphere >= 0 else -1.0) * math.sqrt(1.0 - s2)
    norm = math.hypot(sr, sp)  # |z_body × z| with z_body = (−sin pitch, sin roll, ±c)
    tilt = np.eye(3)
    if norm > 1e-12:
        quat = np.empty(4)
        mujoco.mju_axisAngle2Quat(quat, np.array((sr / norm, sp / norm, 0.0)), math.acos(min(max(cz, -1.0), 1.0)))
        mujoco.mju_quat2Mat(tilt.ravel(), quat)
    elif cz < 0:
        tilt = np.diag([1.0, -1.0, -1.0])
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]) @ tilt


class Pid:
    """``u = p·e + i·∫e dt + d·de/dt`` with the integral term's contribution clamped to
    ``±i_clamp`` (anti-windup) and ``u`` to ``±max_output``. Units follow ``e`` (here rad)."""

    def __init__(self, p: float, i: float, d: float, i_clamp: float, max_output: float) -> None:
        self.p, self.i, self.d = p, i, d
        self.i_clamp, self.max_output = i_clamp, max_output
        self.reset()

    def reset(self) -> None:
        """Forget the integral and the previous error."""
        self._integral = 0.0
        self._previous: float | None = None

    def __call__(self, error: float, dt: float) -> float:
        if dt <= 0:
            raise ValueError(f"Pid needs dt > 0, got {dt!r}")
        if self.i != 0.0:
            bound = self.i_clamp / abs(self.i)
            self._integral = min(max(self._integral + error * dt, -bound), bound)
        rate = 0.0 if self._previous is None else (error - self._previous) / dt
        self._previous = error
        u = self.p * error + self.i * self._integral + self.d * rate
        return min(max(float(u), -self.max_output), self.max_output)


class TrunkStabilizer:
    """Corrects a right-foot goal (torso frame) so the trunk reaches its goal fused pitch and roll.

    ``pitch_gains``/``roll_gains``: ``(p, i, d)``; ``i_clamp``, ``max_correction`` in rad.
    """

    def __init__(self, pitch_gains: tuple[float, float, float], roll_gains: tuple[float, float, float],
                 i_clamp: float, max_correction: float) -> None:
        self.pitch = Pid(*pitch_gains, i_clamp, max_correction)
        self.roll = Pid(*roll_gains, i_clamp, max_correction)
        #: The last fused (pitch, roll) error goal − measured (rad).
        self.error = (0.0, 0.0)

    def reset(self) -> None:
        self.pitch.reset()
        self.roll.reset()
        self.error = (0.0, 0.0)

    @staticmethod
    def trunk_goal(foot_rot: np.ndarray) -> np.ndarray:
        """Fused angles of the trunk orientation a right-foot goal rotation implies (sole flat)."""
        return rotation_fused_angles(foot_rot.T)

    def correction(self, goal, measured_fused: np.ndarray, dt: float) -> tuple[float, float]:
        """The PID corrections ``(pitch, roll)`` (rad) of the trunk goal ``goal`` = (fused pitch,
        fused roll) given the IMU's fused angles; ``dt``: control period (s)."""
        pitch, roll = float(goal[0]) - float(measured_fused[0]), float(goal[1]) - float(measured_fused[1])
        self.error = (pitch, roll)
        return self.pitch(pitch, dt), self.roll(roll, dt)

    @staticmethod
    def apply(foot_pos: np.ndarray, foot_rot: np.ndarray, correction: np.ndarray,
              goal: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The right-foot goal (torso frame) after turning the trunk goal by ``correction``
        (fused pitch, roll; rad) about the trunk's origin; ``goal``: the goal's
        :meth:`trunk_goal` where the caller has it already."""
        goal = TrunkStabilizer.trunk_goal(foot_rot) if goal is None else goal
        trunk = fused_to_rotation(goal[0] + correction[0], goal[1] + correction[1], goal[2], goal[3])
        return trunk.T @ (foot_rot.T @ foot_pos), trunk.T

    def correct(self, foot_pos: np.ndarray, foot_rot: np.ndarray, measured_fused: np.ndarray,
                dt: float) -> tuple[np.ndarray, np.ndarray]:
        """The corrected right-foot goal ``(pos, rot)`` in the torso frame (:meth:`correction`
        then :meth:`apply`)."""
        u = self.correction(self.trunk_goal(foot_rot)[:2], measured_fused, dt)
        return self.apply(foot_pos, foot_rot, u)
