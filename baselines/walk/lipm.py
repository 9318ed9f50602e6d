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
   placed so that the model's CoM lies on the planned CoM (with ``ik_period`` > 1, Wolfgang's 2, only
   every that many cycles: the cycles between continue the joints linearly and skip this step; with
   ``hip_period`` > 1, NAO's 2, NAO's shared hip yaw-pitch is solved only every that many cycles and
   the legs in between are solved for its continued angle).

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
from upright.baselines.common.joint_errors import JointCompensationParams
from upright.baselines.common.params import Params
from upright.baselines.walk.base import CompensatedWalk
from upright.baselines.walk.com_observer import ComObserver
from upright.baselines.walk.ik_samples import SampledJoints
from upright.baselines.kinematics import Kinematics
from upright.baselines.kinematics.vectors import quat_matrix, zxy_matrix
from upright.baselines.walk.lipm_player import GaitTarget, PendulumPlayer, PlayerParams
from upright.baselines.walk.odometry import FeedbackParams, FootSampler, SpeedFeedback
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
    #: Joint-error compensation of the legs (the stand-up paper's eq. 1–4, applied to the walk:
    #: :mod:`~upright.baselines.common.joint_errors`): the walk keeps its plan on softer servos.
    compensation: JointCompensationParams = JointCompensationParams()
    #: Sagittal gyro balance: the support sole's pitch (rad) per rad/s of the low-passed torso
    #: pitch rate (B-Human 2013 rotates the feet by the torso's rate error, gyroStateGain), and
    #: the low-pass ratio (old share per cycle). 0: off.
    gyro_balance: float = 0.0
    gyro_lowpass: float = 0.6
    #: Control cycles per leg IK solution while walking; the targets of the cycles between are
    #: continued linearly from the last two solutions (:mod:`~upright.baselines.walk.ik_samples`).
    #: 1: every cycle.
    ik_period: int = 1
    #: Control cycles per solution of NAO's shared hip yaw-pitch joint (the mean of the free legs'
    #: first candidates); the cycles between continue it linearly from the last two solutions and
    #: solve the legs for it (:mod:`~upright.baselines.walk.ik_samples`). 1: every cycle. A robot
    #: without a shared hip ignores it.
    hip_period: int = 1
    #: The request limit of B-Human's walking engines (speedMax, speedMaxBackwards): a command
    #: outside the ellipsoid with these semi-axes (forward m/s, sideways m/s, turn rad/s; backward
    #: m/s for a backward command) is scaled onto it, keeping its direction, before the walk plans
    #: for it. The step caps of ``player`` limit each axis alone; a walk that turns while it walks
    #: fast can fall inside them. None: no such limit.
    speed_max: tuple[float, float, float] | None = None
    speed_max_backward: float | None = None

    def __post_init__(self) -> None:
        if (self.speed_max is None) != (self.speed_max_backward is None):
            raise ValueError("LipmParams.speed_max and speed_max_backward are set together or not at all, "
                             f"got {self.speed_max!r} and {self.speed_max_backward!r}")
        if self.speed_max is not None and not min(*self.speed_max, self.speed_max_backward) > 0.0:
            raise ValueError(f"LipmParams.speed_max and speed_max_backward must be > 0, got {self.speed_max!r} "
                             f"and {self.speed_max_backward!r}")

    def limited(self, command: tuple[float, float, float]) -> tuple[float, float, float]:
        """``command`` (vx m/s, vy m/s, yaw rate rad/s) scaled onto the ``speed_max`` ellipsoid
        when it lies outside it; unchanged inside it or without a limit."""
        if self.speed_max is None:
            return command
        forward, sideways, turn = self.speed_max
        vx, vy, wz = command
        size = math.hypot(vx / (forward if vx >= 0.0 else self.speed_max_backward), vy / sideways, wz / turn)
        return command if size <= 1.0 else (vx / size, vy / size, wz / size)


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


class LipmWalk(CompensatedWalk):
    """The ``lipm`` walk controller (see the module docstring)."""

    def __init__(self, robot: RobotSpec | str, params: LipmParams | None = None) -> None:
        self.robot = get_robot(robot) if isinstance(robot, str) else robot
        self.params = params or LipmParams.load(self.robot.name)
        self.kin = Kinematics(self.robot)
        #: NAO's shared hip yaw-pitch angle, solved every ``hip_period`` cycles while walking.
        self._hip = SampledJoints(self.params.hip_period)
        self._sample_hip = self.kin.shared_hip and self.params.hip_period > 1
        d = self.kin.data
        #: Views of the private model's sole sites (left, right) and CoM, current after ``kin.fk``
        #: (indexing MjData's arrays anew costs ~0.3 µs a read).
        sole_ids = [self.kin.site_id(site) for site in self.robot.sole_sites]
        self._sole_pos = [d.site_xpos[i] for i in sole_ids]
        self._sole_rot = [d.site_xmat[i] for i in sole_ids]
        self._com = d.subtree_com[self.kin.torso_id]
        self._foot_sampler = FootSampler(self.kin, self.robot)
        self._actuated = np.array(self.robot.actuated_joint_index)
        self._all_actuated = bool(np.array_equal(self._actuated, np.arange(len(self.robot.joint_names))))
        self.command = np.zeros(3)
        self._command = (0.0, 0.0, 0.0)  # the command as floats
        self.status = "waiting"
        self._diagnostics: tuple | None = None
        self._player: PendulumPlayer | None = None
        self._observer: ComObserver | None = None
        #: The speed feedback and its odometry (new each ``reset``; here already so that an
        #: environment can check for it, ``observe_odometry``).
        self.feedback = SpeedFeedback(self.params.feedback)

    @property
    def diagnostics(self) -> Diagnostics:
        """The observer's view of the last cycle (built when asked for)."""
        return Diagnostics(*self._diagnostics) if self._diagnostics is not None else Diagnostics()

    @property
    def gait(self) -> tuple[float, float]:
        """(support, phase): the support foot of the pendulum's current phase (+1 left, −1 right, 0
        on both feet: the posture, settling and start phases) and the fraction of that phase's
        duration that has passed (0 before walking)."""
        player = self._player
        if self.status != "working" or not self._walking or player is None or player.phase is None:
            return 0.0, 0.0
        phase = player.phase
        return float(phase.support), (player.t - phase.tb) / (phase.te - phase.tb)

    def set_command(self, command: np.ndarray) -> None:
        """Velocity command (vx m/s, vy m/s, yaw rate rad/s); applied from the next phase on, within
        the request limit (``LipmParams.speed_max``)."""
        command = np.asarray(command, dtype=float)
        if command.shape != (3,) or not np.all(np.isfinite(command)):
            raise ValueError(f"command must be three finite numbers (vx, vy, yaw rate), got {command!r}")
        self.command = command.copy()
        self._command = self.params.limited(tuple(self.command.tolist()))
        if self._player is not None:
            self._player.command = self._command

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
        self._hip.reset()
        for _ in range(6):  # settle the torso-to-CoM offset of the walking posture
            self._stand_targets = self._targets(stand)
        self._player = PendulumPlayer(p.player)
        self._player.command = self._command
        self._observer = ComObserver(p.observer_process_std, p.observer_measurement_std)
        self.feedback = SpeedFeedback(p.feedback)
        self._samples = SampledJoints(p.ik_period)
        self._gyro_y = 0.0
        self._walking = False
        self._diagnostics: tuple | None = None
        self._start_compensation(sensors, p.compensation)

    def _plan(self, sensors: Sensors) -> np.ndarray:
        """The walk's joint requests (rad, actuator order) for this control cycle."""
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
        yaw = float(sensors.fused[2])
        foot_q, measured = self._measure(sensors, player.phase.support, yaw)
        self.feedback.observe(sensors.time, player.phase.support, self._loads, self._foot_sampler.sample,
                              *self._odometry)
        player.command = self.feedback.planned(self._command)
        filtered, filtered_vel = self._observer.update(expected, expected_vel, measured, dt)
        corrected = player.correct(filtered, filtered_vel) if p.correction else False
        self._diagnostics = (sensors.time, player.phase.support, player.phase_count, foot_q, expected, measured,
                             filtered, filtered_vel, corrected)
        samples = self._samples
        if not samples.due():  # a cycle between two IK solutions (ik_period): the joints continued
            self._joints = samples.continued()
            return self._joints.copy() if self._all_actuated else self._joints[self._actuated]
        targets = self._targets(player.target(p.lift_height, p.delay if p.predict_delay else 0.0))
        samples.solved(self._joints)
        return targets

    # ------------------------------------------------------------------ measurement
    def _measure(self, sensors: Sensors, support: int, yaw: float) -> tuple[list[float], list[float]]:
        """Support foot (x, y) in ``Q`` and the measured CoM (x, y) in ``Q``: the CoM relative to the
        support foot from the joint angles, rotated by the IMU's pitch and roll into the gravity
        frame and expressed along the foot's heading (start phase: the left foot). ``yaw``: the
        fused yaw (rad) of ``sensors``. The dot products are written out (the same operations as
        :func:`~upright.baselines.kinematics.vectors.dot`)."""
        self.kin.fk(sensors.joint_pos)
        sole = 0 if support >= 0 else 1
        fx, fy, fz = self._sole_pos[sole].tolist()
        m = self._sole_rot[sole].tolist()
        cx, cy, cz = self._com.tolist()
        (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = quat_matrix(sensors.quat)
        c, s = math.cos(-yaw), math.sin(-yaw)  # tilt = Rz(−fused yaw) R(quat)
        t00, t01, t02 = c * r00 - s * r10, c * r01 - s * r11, c * r02 - s * r12
        t10, t11, t12 = s * r00 + c * r10, s * r01 + c * r11, s * r02 + c * r12
        ux, uy, uz = cx - fx, cy - fy, cz - fz
        v0, v1 = t00 * ux + t01 * uy + t02 * uz, t10 * ux + t11 * uy + t12 * uz
        # for the odometry: the feet's loads and tilt (the heading frame of the fused yaw), the yaw
        # and the turn rate
        g = sensors.gyro.tolist()
        self._loads = self._foot_sampler.loads(sensors.foot_pressure)
        self._foot_sampler.tilt((t00, t01, t02), (t10, t11, t12))
        self._odometry = (yaw, r20 * g[0] + r21 * g[1] + r22 * g[2])
        # the sole's x axis (m[0], m[3], m[6]) along the heading
        yaw_f = math.atan2(t10 * m[0] + t11 * m[3] + t12 * m[6], t00 * m[0] + t01 * m[3] + t02 * m[6])
        c, s = math.cos(-yaw_f), math.sin(-yaw_f)
        foot_q = [0.0, (1.0 if support >= 0 else -1.0) * self.params.player.foot_y]
        return foot_q, [foot_q[0] + (c * v0 - s * v1), foot_q[1] + (s * v0 + c * v1)]

    # ------------------------------------------------------------------ posture to joints
    def _targets(self, posture: GaitTarget) -> np.ndarray:
        """Leg IK for a posture in ``Q``; arms and head keep their standing targets. The torso is
        placed so that the model CoM (with the previous leg angles) is at the planned CoM."""
        p = self.params
        kin = self.kin
        roll = -posture.support * p.step_roll * math.sin(math.pi * posture.ratio)
        torso = zxy_matrix(posture.torso_yaw, roll, p.body_tilt)
        kin.fk(self._joints)
        mx, my, mz = self._com.tolist()
        (t00, t01, t02), (t10, t11, t12), (t20, t21, t22) = torso
        # the torso origin: the planned CoM minus torso · model CoM (matvec and tmatvec written out)
        px = posture.com_xy[0] - (t00 * mx + t01 * my + t02 * mz)
        py = posture.com_xy[1] - (t10 * mx + t11 * my + t12 * mz)
        pz = p.com_height - (t20 * mx + t21 * my + t22 * mz)
        goals = []
        balance = p.gyro_balance * self._gyro_y if self._walking else 0.0
        for side, foot in ((1, posture.left), (-1, posture.right)):
            x, y, z = foot[0] - px, foot[1] - py, foot[2] - pz  # torsoᵀ (foot − torso origin)
            goals.append((t00 * x + t10 * y + t20 * z, t01 * x + t11 * y + t21 * z, t02 * x + t12 * y + t22 * z))
            # torsoᵀ Rz(yaw) Ry(pitch): zyx_matrix(yaw, pitch, 0) is ((cz cy, −sz, cz sy), (sz cy, cz, sz sy),
            # (−sy, 0, cy)) (its products with cos 0 = 1 and sin 0 = 0 give these numbers); the products
            # with its zero are left out
            yaw, pitch = foot[3], balance if side == posture.support else 0.0
            cz, sz = math.cos(yaw), math.sin(yaw)
            cy, sy = math.cos(pitch), math.sin(pitch)
            a, b, c, d, f, g = cz * cy, -sz, cz * sy, sz * cy, sz * sy, -sy
            goals.append(((t00 * a + t10 * d + t20 * g, t00 * b + t10 * cz, t00 * c + t10 * f + t20 * cy),
                          (t01 * a + t11 * d + t21 * g, t01 * b + t11 * cz, t01 * c + t11 * f + t21 * cy),
                          (t02 * a + t12 * d + t22 * g, t02 * b + t12 * cz, t02 * c + t12 * f + t22 * cy)))
        # hip_period: between two solutions of NAO's shared hip the legs are solved for its continued angle
        sampled, hip = self._walking and self._sample_hip, self._hip
        first = hip.continued() if sampled and not hip.due() else None
        angles, _ = kin.walk_legs(*goals, shared_first=first)
        if sampled and first is None:
            hip.solved(angles[0])
        self._joints[kin.legs_joint_index] = angles
        return self._joints.copy() if self._all_actuated else self._joints[self._actuated]


register_controller("lipm", LipmWalk, LipmParams.load, task="walk",
                    needs=("legs",))

__all__ = ["Diagnostics", "LipmParams", "LipmWalk"]
