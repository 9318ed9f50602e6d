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

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from upright.baselines import register_controller
from upright.baselines.common.params import Params
from upright.baselines.walk.com_observer import ComObserver
from upright.baselines.kinematics import Kinematics
from upright.baselines.kinematics.vectors import dot, matvec, quat_matrix, tmatvec, zxy_matrix, zyx_matrix
from upright.baselines.walk.lipm_player import GaitTarget, PendulumPlayer, PlayerParams
from upright.baselines.walk.odometry import FeedbackParams, FootLayout, SpeedFeedback, foot_samples
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
    #: Speed feedback from the robot's odometry (ours, :mod:`~upright.baselines.walk.odometry`).
    feedback: FeedbackParams = FeedbackParams()
    #: Sagittal gyro balance: the support sole's pitch (rad) per rad/s of the low-passed torso
    #: pitch rate (B-Human 2013 rotates the feet by the torso's rate error, gyroStateGain), and
    #: the low-pass ratio (old share per cycle). 0: off.
    gyro_balance: float = 0.0
    gyro_lowpass: float = 0.6


def _smoothstep(x: float) -> float:
    x = min(max(x, 0.0), 1.0)
    return x * x * (3.0 - 2.0 * x)


@dataclass(slots=True)
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
        self._sole_ids = [self.kin.site_id(site) for site in self.robot.sole_sites]
        self._feet_layout = FootLayout(self.kin, self.robot)
        self._actuated = np.array(self.robot.actuated_joint_index)
        self._all_actuated = bool(np.array_equal(self._actuated, np.arange(len(self.robot.joint_names))))
        self.command = np.zeros(3)
        self.status = "waiting"
        self._diagnostics: tuple | None = None
        self._player: PendulumPlayer | None = None
        self._observer: ComObserver | None = None

    @property
    def diagnostics(self) -> Diagnostics:
        """The observer's view of the last cycle (built when asked for)."""
        return Diagnostics(*self._diagnostics) if self._diagnostics is not None else Diagnostics()

    def set_command(self, command: np.ndarray) -> None:
        """Velocity command (vx m/s, vy m/s, yaw rate rad/s); applied from the next phase on."""
        command = np.asarray(command, dtype=float)
        if command.shape != (3,) or not np.all(np.isfinite(command)):
            raise ValueError(f"command must be three finite numbers (vx, vy, yaw rate), got {command!r}")
        self.command = command.copy()
        if self._player is not None:
            self._player.command = tuple(self.command.tolist())

    # ------------------------------------------------------------------ episode
    def reset(self, sensors: Sensors, rng: np.random.Generator) -> None:
        """Start from the measured standing pose."""
        p = self.params
        self._walking = False
        self._t0 = sensors.time
        self._last_time = sensors.time
        self._start_targets = np.asarray(sensors.joint_target, dtype=float).copy()
        self._joints = np.asarray(sensors.joint_pos, dtype=float).copy()
        self._joints[list(self.robot.actuated_joint_index)] = self._start_targets  # arms, head: as commanded
        w = p.player.foot_y
        stand = GaitTarget(0, [p.player.ref_x, 0.0], 0.0, (0.0, w, 0.0, 0.0), (0.0, -w, 0.0, 0.0), 0.0)
        for _ in range(6):  # settle the torso-to-CoM offset of the walking posture
            self._stand_targets = self._targets(stand)
        self._player = PendulumPlayer(p.player)
        self._player.command = tuple(self.command.tolist())
        self._observer = ComObserver(p.observer_process_std, p.observer_measurement_std)
        self.feedback = SpeedFeedback(p.feedback)
        self._gyro_y = 0.0
        self._walking = False
        self._diagnostics: tuple | None = None
        self.status = "working"

    def step(self, sensors: Sensors) -> np.ndarray:
        """Joint targets (rad, actuator order) for this cycle."""
        p = self.params
        t = sensors.time - self._t0
        dt = sensors.time - self._last_time
        self._gyro_y = p.gyro_lowpass * self._gyro_y + (1.0 - p.gyro_lowpass) * float(sensors.gyro[1])
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
        self.feedback.observe(sensors.time, player.phase.support, *self._odometry)
        player.command = self.feedback.planned(self.command)
        filtered, filtered_vel = self._observer.update(expected, expected_vel, measured, dt)
        corrected = player.correct(filtered, filtered_vel) if p.correction else False
        self._diagnostics = (sensors.time, player.phase.support, player.phase_count, foot_q, expected, measured,
                             filtered, filtered_vel, corrected)
        return self._targets(player.target(p.lift_height, p.delay if p.predict_delay else 0.0))

    # ------------------------------------------------------------------ measurement
    def _measure(self, sensors: Sensors, support: int) -> tuple[list[float], list[float]]:
        """Support foot (x, y) in ``Q`` and the measured CoM (x, y) in ``Q``: the CoM relative to the
        support foot from the joint angles, rotated by the IMU's pitch and roll into the gravity
        frame and expressed along the foot's heading (start phase: the left foot)."""
        kin = self.kin
        kin.fk(sensors.joint_pos)
        d = kin.data
        sole = self._sole_ids[0 if support >= 0 else 1]
        fx, fy, fz = d.site_xpos[sole].tolist()
        m = d.site_xmat[sole].tolist()
        cx, cy, cz = d.subtree_com[kin.torso_id].tolist()
        (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = quat_matrix(sensors.quat)
        yaw = float(sensors.fused[2])
        c, s = math.cos(-yaw), math.sin(-yaw)  # tilt = Rz(−fused yaw) R(quat)
        t0 = (c * r00 - s * r10, c * r01 - s * r11, c * r02 - s * r12)
        t1 = (s * r00 + c * r10, s * r01 + c * r11, s * r02 + c * r12)
        u = (cx - fx, cy - fy, cz - fz)
        v = (dot(t0, u), dot(t1, u))
        # for the odometry: both feet in the torso's (fused) heading frame, the yaw and the turn rate
        g = sensors.gyro.tolist()
        self._odometry = (*foot_samples(d, self._feet_layout, t0, t1, sensors.foot_pressure), yaw,
                          r20 * g[0] + r21 * g[1] + r22 * g[2])
        foot_x = (m[0], m[3], m[6])  # the sole's x axis
        yaw_f = math.atan2(dot(t1, foot_x), dot(t0, foot_x))
        c, s = math.cos(-yaw_f), math.sin(-yaw_f)
        foot_q = [0.0, (1.0 if support >= 0 else -1.0) * self.params.player.foot_y]
        return foot_q, [foot_q[0] + (c * v[0] - s * v[1]), foot_q[1] + (s * v[0] + c * v[1])]

    # ------------------------------------------------------------------ posture to joints
    def _targets(self, posture: GaitTarget) -> np.ndarray:
        """Leg IK for a posture in ``Q``; arms and head keep their standing targets. The torso is
        placed so that the model CoM (with the previous leg angles) is at the planned CoM."""
        p = self.params
        kin = self.kin
        roll = -posture.support * p.step_roll * math.sin(math.pi * posture.ratio)
        torso = zxy_matrix(posture.torso_yaw, roll, p.body_tilt)
        kin.fk(self._joints)
        model_com = kin.data.subtree_com[kin.torso_id].tolist()
        placed = matvec(torso, model_com)
        torso_pos = (posture.com_xy[0] - placed[0], posture.com_xy[1] - placed[1], p.com_height - placed[2])
        goals = []
        balance = p.gyro_balance * self._gyro_y if self._walking else 0.0
        (t00, t01, t02), (t10, t11, t12), (t20, t21, t22) = torso
        for side, foot in ((1, posture.left), (-1, posture.right)):
            goals.append(tmatvec(torso, (foot[0] - torso_pos[0], foot[1] - torso_pos[1], foot[2] - torso_pos[2])))
            # torsoᵀ Rz(yaw) Ry(pitch)
            (a, b, c), (d, e, f), (g, h, i) = zyx_matrix(foot[3], balance if side == posture.support else 0.0, 0.0)
            goals.append(((t00 * a + t10 * d + t20 * g, t00 * b + t10 * e + t20 * h, t00 * c + t10 * f + t20 * i),
                          (t01 * a + t11 * d + t21 * g, t01 * b + t11 * e + t21 * h, t01 * c + t11 * f + t21 * i),
                          (t02 * a + t12 * d + t22 * g, t02 * b + t12 * e + t22 * h, t02 * c + t12 * f + t22 * i)))
        angles, _ = kin.legs_ik_values(*goals, polish=False, quick_mean=True)  # Wolfgang: < 0.5 µm without the polish
        self._joints[kin.legs_joint_index] = angles
        return self._joints.copy() if self._all_actuated else self._joints[self._actuated]


register_controller("lipm", LipmWalk, LipmParams.load, robots=("nao", "wolfgang"), task="walk")

__all__ = ["Diagnostics", "LipmParams", "LipmWalk"]
