"""Baseline ``lipm``: the 3D-LIPM omnidirectional walk with Kalman CoM observer (Graf & Röfer,
"A Center of Mass Observing 3D-LIPM Gait for the RoboCup Standard Platform League Humanoid", 2011).

Each control cycle (``LipmWalk.step``):

1. advance the pendulum player (:mod:`~upright.baselines.walk.lipm_player`) to the measurement time;
2. measure the CoM relative to the support foot from the IMU orientation and the joint angles
   (the robot's own kinematic model), in the phase frame ``Q``;
3. filter it with the Kalman observer (:mod:`~upright.baselines.walk.com_observer`, equations 10–14),
   the pendulum's expected state being the prediction;
4. correct the current pendulum from the filtered state (equations 15–20; switch ``correction``);
5. predict the pendulum over the actuation delay (equation 21; switch ``predict_delay``) and turn
   that posture (CoM, feet, torso yaw) into leg joint targets by inverse kinematics; the torso is
   placed so that the model's CoM lies on the planned CoM.

Before walking, the controller moves from the standing pose to its walking posture (bent knees,
CoM at the walking height) over ``posture_time`` and holds it for ``settle_time``. Parameters per
robot live in ``baselines/data/lipm_<robot>.yaml`` (each value with its source).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from upright.baselines import register_controller
from upright.baselines.common.params import Params
from upright.baselines.walk.com_observer import ComObserver
from upright.baselines.common.rotations import rot_x, rot_y, rot_z, yaw_removed
from upright.baselines.kinematics import Kinematics
from upright.baselines.walk.lipm_player import GaitTarget, PendulumPlayer, PlayerParams
from upright.envs.robots import RobotSpec, get_robot
from upright.envs.sensors import Sensors


@dataclass(frozen=True)
class LipmParams(Params):
    """Every tunable number of the walk (m, s, rad) and the feature switches for ablations."""

    DATA_FILE: ClassVar[str] = "lipm_{robot}.yaml"

    player: PlayerParams
    #: CoM height above the soles while walking (m).
    com_height: float
    #: Swing-foot lift at mid-phase (m).
    lift_height: float
    #: Torso pitch while walking (rad, + = forward).
    body_tilt: float
    #: Step-bound torso rotation about x towards the support foot (rad, peak at mid-phase): the
    #: paper's "rotation around the x-axis to simplify the center of mass shifting to a side"
    #: (sec. 4); it also takes up the hip and ankle roll sag under the body's weight.
    step_roll: float
    #: Actuation delay predicted over (s), equation 21.
    delay: float
    #: Kalman process noise per axis x, y: (position m, velocity m/s); measurement noise per axis (m).
    observer_process_std: tuple[tuple[float, float], tuple[float, float]]
    observer_measurement_std: tuple[float, float]
    #: Time (s) to move from the standing pose to the walking posture, then to hold it.
    posture_time: float
    settle_time: float
    #: Correct the pendulum from the observed CoM (section 3.2); off = open-loop pendulum walk
    #: (the observer still runs, for measuring its error).
    correction: bool = True
    #: Generate the posture from the pendulum predicted over ``delay`` (section 3.3).
    predict_delay: bool = True
    #: First support foot: +1 left, −1 right; the sideways command's sign overrides it.
    first_support: int = 1


def _smoothstep(x: float) -> float:
    x = min(max(x, 0.0), 1.0)
    return x * x * (3.0 - 2.0 * x)


@dataclass
class Diagnostics:
    """The observer's view of the last cycle, in the phase frame ``Q`` (m, m/s)."""

    time: float = 0.0
    support: int = 0
    phase_count: int = 0
    #: Support foot (x, y) in ``Q``; the CoM vectors below are in ``Q`` too.
    support_foot: np.ndarray | None = None
    expected: np.ndarray | None = None
    measured: np.ndarray | None = None
    filtered: np.ndarray | None = None
    filtered_velocity: np.ndarray | None = None
    corrected: bool = False


class LipmWalk:
    """The ``lipm`` walk controller (see the module docstring)."""

    def __init__(self, robot: RobotSpec | str, params: LipmParams | None = None) -> None:
        self.robot = get_robot(robot) if isinstance(robot, str) else robot
        self.params = params or LipmParams.load(self.robot.name)
        self.kin = Kinematics(self.robot)
        self.command = np.zeros(3)
        self.status = "waiting"
        self.diagnostics = Diagnostics()
        self._player: PendulumPlayer | None = None
        self._observer: ComObserver | None = None

    def set_command(self, command: np.ndarray) -> None:
        """Velocity command (vx m/s, vy m/s, yaw rate rad/s); applied from the next phase on."""
        command = np.asarray(command, dtype=float)
        if command.shape != (3,) or not np.all(np.isfinite(command)):
            raise ValueError(f"command must be three finite numbers (vx, vy, yaw rate), got {command!r}")
        self.command = command.copy()
        if self._player is not None:
            self._player.command = self.command.copy()

    # ------------------------------------------------------------------ episode
    def reset(self, sensors: Sensors, rng: np.random.Generator) -> None:
        """Start from the measured standing pose."""
        p = self.params
        self._t0 = sensors.time
        self._last_time = sensors.time
        self._start_targets = np.asarray(sensors.joint_target, dtype=float).copy()
        self._joints = np.asarray(sensors.joint_pos, dtype=float).copy()
        self._joints[list(self.robot.actuated_joint_index)] = self._start_targets  # arms, head: as commanded
        w = p.player.foot_y
        stand = GaitTarget(0, np.array([p.player.ref_x, 0.0]), 0.0, np.array([0.0, w, 0.0, 0.0]),
                        np.array([0.0, -w, 0.0, 0.0]), 0.0)
        for _ in range(6):  # settle the torso-to-CoM offset of the walking posture
            self._stand_targets = self._targets(stand)
        self._player = PendulumPlayer(p.player)
        self._player.command = self.command.copy()
        self._observer = ComObserver(p.observer_process_std, p.observer_measurement_std)
        self._walking = False
        self.diagnostics = Diagnostics()
        self.status = "working"

    def step(self, sensors: Sensors) -> np.ndarray:
        """Joint targets (rad, actuator order) for this cycle."""
        p = self.params
        t = sensors.time - self._t0
        dt = sensors.time - self._last_time
        self._last_time = sensors.time
        if t < p.posture_time:
            a = _smoothstep(t / p.posture_time)
            return (1.0 - a) * self._start_targets + a * self._stand_targets
        if t < p.posture_time + p.settle_time:
            return self._stand_targets.copy()
        player = self._player
        if not self._walking:
            first = int(np.sign(-self.command[1])) if self.command[1] != 0.0 else p.first_support
            player.start(first, p.player.ref_x)
            pos, vel = player.expected()
            self._observer.reset(pos, vel)
            self._walking = True
        else:
            player.advance(dt)
        expected, expected_vel = player.expected()
        foot_q, measured = self._measure(sensors, player.phase.support)
        filtered, filtered_vel = self._observer.update(expected, expected_vel, measured, dt)
        corrected = player.correct(filtered, filtered_vel) if p.correction else False
        self.diagnostics = Diagnostics(sensors.time, player.phase.support, player.phase_count, foot_q,
                                       expected, measured, filtered, filtered_vel, corrected)
        target_player = player.advanced(p.delay) if p.predict_delay else player
        return self._targets(target_player.target(p.lift_height))

    # ------------------------------------------------------------------ measurement
    def _measure(self, sensors: Sensors, support: int) -> tuple[np.ndarray, np.ndarray]:
        """Support foot (x, y) in ``Q`` and the measured CoM (x, y) in ``Q``: the CoM relative to the
        support foot from the joint angles, rotated by the IMU's pitch and roll into the gravity
        frame and expressed along the foot's heading (start phase: the left foot)."""
        side = "left" if support >= 0 else "right"
        tilt = yaw_removed(sensors.quat, float(sensors.fused[2]))
        foot_pos, foot_rot = self.kin.foot_pose(side, sensors.joint_pos)
        com = self.kin.com(sensors.joint_pos)
        v = tilt @ (com - foot_pos)
        heading = tilt @ foot_rot[:, 0]
        v = rot_z(-np.arctan2(heading[1], heading[0])) @ v
        foot_q = np.array([0.0, (1.0 if support >= 0 else -1.0) * self.params.player.foot_y])
        return foot_q, foot_q + v[:2]

    # ------------------------------------------------------------------ posture to joints
    def _targets(self, posture: GaitTarget) -> np.ndarray:
        """Leg IK for a posture in ``Q``; arms and head keep their standing targets. The torso is
        placed so that the model CoM (with the previous leg angles) is at the planned CoM."""
        p = self.params
        roll = -posture.support * p.step_roll * np.sin(np.pi * posture.ratio)
        torso_rot = rot_z(posture.torso_yaw) @ rot_x(roll) @ rot_y(p.body_tilt)
        com = np.array([posture.com_xy[0], posture.com_xy[1], p.com_height])
        torso_pos = com - torso_rot @ self.kin.com(self._joints)
        feet = []
        for foot in (posture.left, posture.right):
            feet.append(torso_rot.T @ (foot[:3] - torso_pos))
            feet.append(torso_rot.T @ rot_z(foot[3]))
        angles, _ = self.kin.legs_ik(*feet)
        self._joints = self.kin.with_joints(self._joints, angles)
        return self.kin.targets_from_joints(self._joints)


register_controller("lipm", LipmWalk, LipmParams.load, robots=("nao", "wolfgang"), task="walk")

__all__ = ["Diagnostics", "LipmParams", "LipmWalk"]
