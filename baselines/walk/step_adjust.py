"""``step_adjust``: the rUNSWift-style walk with B-Human's step adjustment and swing-foot leveling.

Reichenberg & Röfer, "Step Adjustment for a Robust Humanoid Walk" (RoboCup 2021), on the walk of
Hengst ("rUNSWift Walk2014 Report", 2014) as B-Human uses it (B-Human code release 2021, "BH-21":
``WalkingEngine``, ``WalkStepAdjustment``; rUNSWift 2014 ``Walk2014Generator``).

Base walk (rUNSWift Walk2014). Every step (half cycle) of duration ``T`` fixes Cartesian trajectories of both
feet in the walk frame (the torso frame turned by the nominal trunk pitch, so its x-y plane is
parallel to the ground when the robot walks as planned) from the step size the commanded velocity
needs: the support foot moves linearly from where it is to ``-step/2``, the swing foot to
``+step/2`` along :func:`parabolic_step` and is lifted along :func:`parabolic_return`. Lateral
steps and turning work the same way on the feet's y offsets and yaw angles. There is no active
weight shift: lifting the swing foot lets the robot sway over the support foot ("natural lateral
sway"), and the step ends when the foot pressure moves to the swing foot (support-foot switch from
the pressure sensors) once ``support_switch_phase[0]·T`` has passed, or at the latest after
``support_switch_phase[1]·T``; a step that overruns its duration lowers the swing foot below
the walking height so it finds the ground (B-Human's stretchSwingHeight, retuned in the YAML). The filtered gyro
turns the support foot against the torso's rotation: its pitch (sagittal, rUNSWift and B-Human) and
its roll (coronal, rUNSWift's ankle-roll feedback). Leg angles come from the robot model's analytic
leg IK.

Stabilisations, each switchable (the paper's configurations Old / WSA / SFL / New, see
:data:`CONFIGURATIONS`):

* step adjustment (:mod:`~upright.baselines.walk.foot_placement`, Algorithm 1): the CoM, measured from
  the joint angles and the IMU orientation relative to the support sole and predicted over the
  actuation delay with an inverted pendulum, must stay in a tolerance range spanned by both feet;
  if it leaves it the swing foot follows it and the support foot moves by half the amount the other
  way (sagittal only);
* swing-foot leveling (:mod:`~upright.baselines.walk.swing_leveling`, section 5).

Parameters per robot live in ``baselines/data/step_adjust_<robot>.yaml``; the support rectangle
in there comes from ``upright experiment step-adjust-calibration``.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from upright.baselines import register_controller
from upright.baselines.common.joint_errors import JointCompensationParams
from upright.baselines.common.params import Params
from upright.baselines.kinematics import Kinematics
from upright.baselines.kinematics.vectors import clip, quat_matrix
from upright.baselines.walk.base import CompensatedWalk
from upright.baselines.walk.ik_samples import SampledJoints
from upright.baselines.walk.odometry import FeedbackParams, FootSampler, SpeedFeedback
from upright.baselines.walk.foot_placement import adjust_step, predict_com, tolerance_range
from upright.baselines.walk.swing_leveling import LevelingParams, SwingFootLeveling
from upright.envs.robots import RobotSpec
from upright.envs.sensors import Sensors

SIDES = ("left", "right")

#: The step residual's entries (:meth:`StepAdjustWalk.set_step_residual`): offsets of the swing
#: foot's landing target in the walk frame, x (m, forward), y (m, left) and yaw (rad, left).
STEP_RESIDUAL = ("swing_x", "swing_y", "swing_yaw")

#: The paper's configurations: (step adjustment, swing-foot leveling).
CONFIGURATIONS: dict[str, tuple[bool, bool]] = {
    "Old": (False, False),
    "WSA": (True, False),
    "SFL": (False, True),
    "New": (True, True),
}


def parabolic_step(f: float) -> float:
    """rUNSWift's swing-foot progress: 2f² for f < 0.5, else 4f − 2f² − 1 (0 → 1, f clipped to [0, 1])."""
    f = clip(f, 0.0, 1.0)
    return 2.0 * f * f if f < 0.5 else 4.0 * f - 2.0 * f * f - 1.0


def parabolic_return(f: float) -> float:
    """rUNSWift's foot-height profile: 8f² (f < 0.25), 1 − 8(f − 0.5)² (f < 0.75), 8(1 − f)²; peak 1 at 0.5."""
    f = clip(f, 0.0, 1.0)
    if f < 0.25:
        return 8.0 * f * f
    if f < 0.75:
        return 1.0 - 8.0 * (f - 0.5) ** 2
    return 8.0 * (1.0 - f) ** 2


@dataclass(frozen=True)
class StepAdjustParams(Params):
    """Every tunable number of the walk (SI units: m, s, rad). Loaded from the robot's YAML file,
    where each value's source is noted."""

    DATA_FILE: ClassVar[str] = "step_adjust_{robot}.yaml"

    #: Step (half-cycle) duration (s) and its increase per m/s of sideways speed (s per m/s).
    period: float
    period_side_factor: float
    #: The step duration's increase per m/s of forward speed beyond ``period_forward_from`` (s per
    #: m/s; 0: none, B-Human's walk): a short period for the walks that fall least with it, longer
    #: steps for a fast forward walk, which a short period cannot sustain.
    period_forward_factor: float
    period_forward_from: float
    #: Sole height below the torso origin while walking, in the walk frame (m).
    walk_height: float
    #: Sole x in the walk frame when standing (m): minus B-Human's torsoOffset (torso ahead of the ankles).
    foot_x: float
    #: x of the sole's centre from the sole origin (m): the pivot of the swing foot's leveling.
    foot_center_x: float
    #: Sole y distance from the torso's centre line (m).
    foot_y: float
    #: Nominal trunk pitch (rad, + forward): the walk frame is the torso frame turned by it.
    trunk_pitch: float
    #: Swing-foot lift (m), its increase per m/s of forward and of sideways speed (s), and the factor
    #: on the first step.
    foot_lift: float
    foot_lift_forward: float
    foot_lift_side: float
    first_step_lift_factor: float
    #: Support-foot switch window as fractions of the step duration (earliest, forced).
    support_switch_phase: tuple[float, float]
    #: Gyro balance: low-pass ratio of the filter, gain of the sagittal rate on the support foot
    #: pitch and of the coronal rate on its roll (rad per rad/s).
    gyro_lowpass: float
    gyro_balance: float
    gyro_side_balance: float
    #: Overrunning step: after this overtime (s) the swing foot's height goes down at
    #: ``stretch_speed`` (m/s) to ``stretch_height`` (m, < 0: below the walking height).
    stretch_after: float
    stretch_speed: float
    stretch_height: float
    #: Speed limits (m/s, m/s, rad/s) forward, backward, sideways, turning.
    max_forward: float
    max_backward: float
    max_side: float
    max_turn: float
    #: Largest speed change per step (m/s, m/s, rad/s).
    max_acceleration: tuple[float, float, float]
    #: Time (s) to move from the measured start pose into the walking posture.
    start_time: float
    #: Step adjustment on/off (WSA) and swing-foot leveling on/off (SFL).
    step_adjustment: bool
    swing_leveling: bool
    #: Support rectangle of one sole, x of its back and front edges relative to the sole origin (m),
    #: from the calibration script.
    support_back: float
    support_front: float
    #: Tolerance range as fractions of the support rectangle from its back edge (desiredFootArea).
    foot_area: tuple[float, float]
    #: Largest adjustment speed (m/s; maxVelForward) and CoM low-pass ratio while adjusting.
    max_adjust_speed: float
    com_lowpass: float
    #: Reachable swing-foot x range relative to the nominal foot x (m; clipForward).
    clip_forward: tuple[float, float]
    #: With the swing foot on the ground, adjust only before this step phase (first 20 %).
    early_contact_phase: float
    #: Low-pass ratio of the CoM velocity estimate used for the prediction.
    com_velocity_lowpass: float
    #: Fraction of the weight (of the summed pressure) below which a foot counts as unloaded.
    unloaded_fraction: float
    #: Largest offsets (m, m, rad) of the swing foot's landing target that a step residual of ±1
    #: commands (:data:`STEP_RESIDUAL`): a learned policy's range, not part of the papers' walk.
    step_residual_limits: tuple[float, float, float]
    leveling: LevelingParams
    #: Speed feedback from the robot's odometry (ours, :mod:`~upright.baselines.walk.odometry`).
    feedback: FeedbackParams = FeedbackParams()
    #: Joint-error compensation of the legs (the stand-up paper's eq. 1–4, applied to the walk:
    #: :mod:`~upright.baselines.common.joint_errors`): the walk keeps its plan on softer servos.
    compensation: JointCompensationParams = JointCompensationParams()
    #: Control cycles per leg IK solution while walking; the targets of the cycles between are
    #: continued linearly from the last two solutions (:mod:`~upright.baselines.walk.ik_samples`).
    #: 1: every cycle.
    ik_period: int = 1

    def with_configuration(self, name: str) -> "StepAdjustParams":
        """A copy with the stabilisations of the paper's configuration ``name`` (Old/WSA/SFL/New)."""
        try:
            wsa, sfl = CONFIGURATIONS[name]
        except KeyError:
            raise ValueError(f"unknown configuration {name!r}; valid: {', '.join(CONFIGURATIONS)}") from None
        return replace(self, step_adjustment=wsa, swing_leveling=sfl)


def _pitch_of(R: np.ndarray) -> float:
    """Pitch (rad, + = x axis tipped down, i.e. toes down) of a rotation matrix's x axis."""
    return float(np.arctan2(-R[2, 0], np.hypot(R[0, 0], R[1, 0])))


def _pitch_of_flat(m: np.ndarray) -> float:
    """:func:`_pitch_of` of a rotation matrix given row-major flat (MuJoCo's ``xmat``)."""
    m = m.tolist()
    return math.atan2(-m[6], math.hypot(m[0], m[3]))


@dataclass(slots=True)
class _Foot:
    """One foot's walk-frame state: offsets from its nominal position (m), yaw (rad)."""

    x: float = 0.0
    y: float = 0.0
    yaw: float = 0.0


class StepAdjustWalk(CompensatedWalk):
    """The walk controller (see the module docstring); ``params`` may be changed before ``reset``."""

    #: What :meth:`set_step_residual`'s entries move (m, m, rad).
    step_residual_names = STEP_RESIDUAL

    def __init__(self, robot: RobotSpec, params: StepAdjustParams | None = None) -> None:
        self.robot = robot
        self.params = params if params is not None else StepAdjustParams.load(robot.name)
        self.kin = Kinematics(robot)
        #: cos, sin of the nominal trunk pitch (the walk frame in the torso frame), set again by ``reset``.
        self._trunk = (math.cos(self.params.trunk_pitch), math.sin(self.params.trunk_pitch))
        self.status = "waiting"
        self.command = np.zeros(3)
        self._standing = self._standing_joints()
        d = self.kin.data
        #: Views of the private model's sole sites (per side) and CoM, current after ``kin.fk``
        #: (indexing MjData's arrays anew costs ~0.3 µs a read).
        sole_ids = {side: self.kin.site_id(site) for side, site in zip(SIDES, robot.sole_sites)}
        self._sole_pos = {side: d.site_xpos[i] for side, i in sole_ids.items()}
        self._sole_rot = {side: d.site_xmat[i] for side, i in sole_ids.items()}
        self._com = d.subtree_com[self.kin.torso_id]
        self._foot_sampler = FootSampler(self.kin, robot)
        self._actuated = np.array(robot.actuated_joint_index)
        self._all_actuated = bool(np.array_equal(self._actuated, np.arange(len(robot.joint_names))))
        self.leveling = SwingFootLeveling(self.params.leveling)
        self.feedback = SpeedFeedback(self.params.feedback)
        self._log: tuple[float, ...] = ()  # the last frame's diagnostics, see log
        self._step_offset = (0.0, 0.0, 0.0)  # the step residual (m, m, rad), see set_step_residual

    def _standing_joints(self) -> np.ndarray:
        """Joint angles (robot joint order) of the standing keyframe of the robot's own model."""
        model = self.kin.model
        key = model.key(self.robot.standing_pose)
        adr = [model.jnt_qposadr[model.joint(j).id] for j in self.robot.joint_names]
        return key.qpos[adr].copy()

    # ------------------------------------------------------------------ interface
    def set_command(self, command: np.ndarray) -> None:
        """Velocity command (vx m/s, vy m/s, yaw rate rad/s), torso frame."""
        command = np.asarray(command, dtype=float)
        if command.shape != (3,) or not np.all(np.isfinite(command)):
            raise ValueError(f"command must be three finite numbers (vx, vy, yaw rate), got {command!r}")
        self.command = command

    @property
    def gait(self) -> tuple[float, float]:
        """(support, phase): the support foot (+1 left, −1 right, 0 while still moving into the
        walking posture) and the fraction of the current step's planned duration that has passed
        (0 at the support switch; above 1 on a step that overruns)."""
        if self.status != "working" or not self._started:
            return 0.0, 0.0
        return (1.0 if self._support == "left" else -1.0), self._phase / self._period

    @property
    def step_residual_limits(self) -> np.ndarray:
        """The largest step residual per entry of :data:`STEP_RESIDUAL` (m, m, rad)."""
        return np.asarray(self.params.step_residual_limits, dtype=float)

    def set_step_residual(self, offsets: np.ndarray) -> None:
        """Offsets (m, m, rad; :data:`STEP_RESIDUAL`) added to the swing foot's landing target from
        the next control cycle on, until changed; ``reset`` sets them to zero. The swing foot moves
        there along the walk's own step profile, so an offset given late in a step moves the foot
        while it is near the ground. A lateral offset towards the support foot is dropped: the
        walk's own closing steps already bring the feet as close as they may come. ValueError for
        a wrong shape, a non-finite value or one beyond :attr:`step_residual_limits`."""
        o = np.asarray(offsets, dtype=float)
        limits = self.step_residual_limits
        if o.shape != (3,) or not np.all(np.isfinite(o)):
            raise ValueError(f"a step residual is three finite offsets {STEP_RESIDUAL} (m, m, rad), got {offsets!r}")
        if np.any(np.abs(o) > limits * (1.0 + 1e-9)):
            raise ValueError(f"step residual {o.tolist()} is beyond step_residual_limits {limits.tolist()} (m, m, rad)")
        self._step_offset = (float(o[0]), float(o[1]), float(o[2]))

    def reset(self, sensors: Sensors, rng: np.random.Generator) -> None:
        """Start from the measured pose: first move into the walking posture, then walk."""
        p = self.params
        self._step_offset = (0.0, 0.0, 0.0)
        self.leveling = SwingFootLeveling(p.leveling)
        self.feedback = SpeedFeedback(p.feedback)
        self._time = 0.0
        self._trunk = (math.cos(p.trunk_pitch), math.sin(p.trunk_pitch))
        self._start_joints = np.asarray(sensors.joint_pos, dtype=float).copy()
        self._walk_joints = self._joints_for(_Foot(), _Foot())
        self._started = False
        self._feet = {s: _Foot() for s in SIDES}
        self._start = {s: _Foot() for s in SIDES}
        #: The speed the steps are planned for (m/s, m/s, rad/s): the command, ramped step by step.
        self._speed = (0.0, 0.0, 0.0)
        self._step_size = (0.0, 0.0, 0.0)
        #: The support and the swing foot ("left" / "right"; both kept: read several times a cycle).
        self._support, self._swing = "right", "left"
        self._phase = 0.0
        self._period = p.period
        self._lift = p.foot_lift * p.first_step_lift_factor
        self._gyro = (0.0, 0.0)
        self._w_plan_prev = 0.0
        self._w_bar_prev = 0.0
        self._com_filtered: float | None = None
        self._com_prev: float | None = None
        self._com_velocity = 0.0
        self._adjusting = False
        #: The step adjustment's tolerance range (T_min, T_max) relative to the sole origin (m).
        self._tolerance = tolerance_range(p.support_back, p.support_front, p.foot_area)
        #: Joint requests of the last ``delay_cycles + 1`` frames (the oldest is what the servos follow now).
        self._requests: deque[np.ndarray] = deque([self._walk_joints.copy()], maxlen=self.robot.delay_cycles + 1)
        self._samples = SampledJoints(p.ik_period)
        self._start_compensation(sensors, p.compensation)

    def _plan(self, sensors: Sensors) -> np.ndarray:
        """The walk's joint requests (rad, actuator order) for this control cycle."""
        dt = self.robot.control_period
        self._time += dt
        p = self.params
        # Filtered (roll rate, pitch rate) of the torso (rad/s, IMU frame: x forward, y left).
        a, gyro = p.gyro_lowpass, sensors.gyro.tolist()
        self._rates = gyro  # for the odometry
        self._gyro = (a * self._gyro[0] + (1.0 - a) * gyro[0], a * self._gyro[1] + (1.0 - a) * gyro[1])
        if not self._started:
            s = min(self._time / p.start_time, 1.0)
            blend = 0.5 - 0.5 * np.cos(np.pi * s)
            joints = (1.0 - blend) * self._start_joints + blend * self._walk_joints
            if s >= 1.0:
                self._started = True
                self._begin_step(first=True)
            return self.kin.targets_from_joints(joints)
        self._phase += dt
        left, right = self._loads = self._foot_sampler.loads(sensors.foot_pressure)
        loads = {"left": left, "right": right}
        if self._switch_due(loads):
            self._support, self._swing = self._swing, self._support
            self._begin_step(first=False)
        return self._walk(sensors, loads, dt)

    # ------------------------------------------------------------------ the gait
    def _switch_due(self, load: dict[str, float]) -> bool:
        """Support-foot switch: the swing foot carries more than the support foot (``load``: the
        summed pressure per foot) once the earliest switch phase has passed, or the step has
        lasted the forced maximum."""
        lo, hi = self.params.support_switch_phase
        t = self._phase / self._period
        if t >= hi:
            return True
        if t < lo:
            return False
        return load[self._swing] > load[self._support]

    def _begin_step(self, first: bool) -> None:
        """Fix the new step: speed ramped towards the command, step sizes, period, lift."""
        p = self.params
        command = self.feedback.planned(self.command)
        limits = ((-p.max_backward, p.max_forward), (-p.max_side, p.max_side), (-p.max_turn, p.max_turn))
        target = [clip(c, lo, hi) for c, (lo, hi) in zip(command, limits)]
        speed = self._speed = tuple(s + clip(t - s, -a, a) for s, t, a in zip(self._speed, target, p.max_acceleration))
        self._period = (p.period + p.period_side_factor * abs(speed[1])
                        + p.period_forward_factor * max(0.0, speed[0] - p.period_forward_from))
        self._step_size = (speed[0] * self._period, speed[1] * self._period, speed[2] * self._period)
        self._lift = p.foot_lift + p.foot_lift_forward * abs(speed[0]) + p.foot_lift_side * abs(speed[1])
        if first:
            self._lift *= p.first_step_lift_factor
        self._phase = 0.0
        self.leveling.start_step()
        self._start = {s: replace(self._feet[s]) for s in SIDES}
        self._w_plan_prev = self._w_bar_prev = self._feet[self._swing].x

    def _planned(self) -> tuple[dict[str, _Foot], float]:
        """The base walk's foot offsets at this phase and the swing foot's lift (m)."""
        f = self._phase / self._period
        sw, su = self._swing, self._support
        a, b = self._start[sw], self._start[su]
        s_x, s_y, s_t = self._step_size
        ps, lin = parabolic_step(f), min(f, 1.0)
        o_x, o_y, o_t = self._step_offset
        if o_y != 0.0 and (o_y < 0.0) == (sw == "left"):  # towards the support foot: dropped
            o_y = 0.0
        w_x, w_y, w_t = s_x / 2 + o_x, s_y / 2 + o_y, s_t / 2 + o_t  # the swing foot's landing target
        swing = _Foot(a.x + (w_x - a.x) * ps, a.y + (w_y - a.y) * ps, a.yaw + (w_t - a.yaw) * ps)
        support = _Foot(b.x + (-s_x / 2 - b.x) * lin, b.y + (-s_y / 2 - b.y) * lin, b.yaw + (-s_t / 2 - b.yaw) * lin)
        p = self.params
        overtime = self._phase - self._period - p.stretch_after
        if overtime <= 0.0:
            lift = self._lift * parabolic_return(f)
        else:
            lift = max(-p.stretch_speed * overtime, p.stretch_height)
        return {sw: swing, su: support}, lift

    def _walk(self, sensors: Sensors, load: dict[str, float], dt: float) -> np.ndarray:
        p = self.params
        planned, lift = self._planned()
        sw, su = self._swing, self._support
        ratio = self._phase / self._period
        kin = self.kin
        kin.fk(sensors.joint_pos)  # the measured posture: CoM and support sole below
        com_x = self._measured_com(sensors)
        self.feedback.observe(self._time, 1 if su == "left" else -1, *self._odometry(sensors))
        if p.swing_leveling:
            # the measured support-sole pitch, read before the private model moves on
            measured = _pitch_of_flat(self._sole_rot[su])
        if p.step_adjustment:
            self._adjust(planned, com_x, load, ratio, dt)
        swing_dx = planned[sw].x - self._feet[sw].x
        self._feet = planned
        support_pitch, swing_pitch = p.gyro_balance * self._gyro[1], 0.0
        support_roll = p.gyro_side_balance * self._gyro[0]
        if p.swing_leveling:
            # Measured support-sole pitch against the one requested when the measured joints were
            # commanded (the oldest request in the delay queue), both from the model's FK.
            kin.fk_poses(self._requests[0])
            requested = _pitch_of_flat(self._sole_rot[su])
            torso = float(sensors.fused[0]) - p.trunk_pitch
            swing_pitch = self.leveling.update(torso, measured - requested, ratio, swing_dx,
                                               planned[sw].x - planned[su].x, dt)
        # The support foot pitches about its ankle (gyro balance on the ankle pitch); the leveled
        # swing sole about its centre, so leveling lowers neither its heel nor its toes.
        samples = self._samples
        if not samples.due():  # a cycle between two IK solutions (ik_period): the joints continued
            joints = samples.continued()
        else:
            def by_side(support: float, swing: float) -> tuple[float, float]:
                """(left, right) of a support-foot and a swing-foot value."""
                return (support, swing) if su == "left" else (swing, support)

            joints = self._joints_for(planned["left"], planned["right"], by_side(0.0, lift),
                                      by_side(support_pitch, swing_pitch), by_side(support_roll, 0.0),
                                      by_side(0.0, p.foot_center_x))
            samples.solved(joints)
        self._requests.append(joints)
        self._log = (com_x, planned[sw].x, planned[su].x, swing_pitch, ratio)
        return joints.copy() if self._all_actuated else joints[self._actuated]

    @property
    def log(self) -> dict[str, float]:
        """The last frame's diagnostics (m, rad) for plots and tests, built when asked for: the
        predicted CoM x relative to the support sole, the swing and support feet's x offsets, the
        swing foot's leveling pitch and the step phase; empty before the first walking frame."""
        return dict(zip(("com_x", "swing_x", "support_x", "swing_pitch", "phase"), self._log))

    def com_offset(self, sensors: Sensors, side: str) -> np.ndarray:
        """The measured CoM relative to the ``side`` sole origin (m), in the gravity-aligned
        heading frame (torso frame turned by the IMU's pitch and roll, not its yaw): x, y are the
        CoM projected onto the ground relative to the sole, z its height above it."""
        self.kin.fk(np.asarray(sensors.joint_pos, dtype=float))
        return np.array(self._com_offset(sensors, side))

    def _com_offset(self, sensors: Sensors, side: str) -> tuple[float, float, float]:
        """:meth:`com_offset` for the posture already in the private model (:meth:`Kinematics.fk`);
        sets ``_heading``, the torso's yaw (rad) that was removed, and ``_tilt``."""
        cx, cy, cz = self._com.tolist()
        (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = quat_matrix(sensors.quat)
        # the torso's x axis in the world gives the heading (the yaw of the ZYX Euler angles)
        yaw = self._heading = math.atan2(r10, r00)
        c, s = math.cos(yaw), math.sin(yaw)
        sx, sy, sz = self._sole_pos[side].tolist()
        vx, vy, vz = cx - sx, cy - sy, cz - sz
        wx = r00 * vx + r01 * vy + r02 * vz
        wy = r10 * vx + r11 * vy + r12 * vz
        # the rows of the rotation from the torso into its heading frame, for the odometry
        self._tilt = ((c * r00 + s * r10, c * r01 + s * r11, c * r02 + s * r12),
                      (-s * r00 + c * r10, -s * r01 + c * r11, -s * r02 + c * r12), (r20, r21, r22))
        return c * wx + s * wy, -s * wx + c * wy, r20 * vx + r21 * vy + r22 * vz

    def _odometry(self, sensors: Sensors) -> tuple:
        """The odometry's inputs (:meth:`SpeedFeedback.observe` after the support) for the posture in
        the private model (after :meth:`_com_offset`): the feet's loads and sampler, the heading
        and the turn rate."""
        t0, t1, t2 = self._tilt
        g = self._rates
        sampler = self._foot_sampler
        sampler.tilt(t0, t1)
        return self._loads, sampler.sample, self._heading, t2[0] * g[0] + t2[1] * g[1] + t2[2] * g[2]

    def stance_targets(self, shift: np.ndarray) -> np.ndarray:
        """Joint targets (actuator order) of the walking posture with both feet standing and
        shifted by ``shift`` = (dx, dy) m in the walk frame (the torso moves the other way); the
        support-rectangle calibration uses it."""
        dx, dy = float(shift[0]), float(shift[1])
        return self.kin.targets_from_joints(self._joints_for(_Foot(dx, dy), _Foot(dx, dy)))

    def _measured_com(self, sensors: Sensors) -> float:
        """CoM x (m) relative to the support sole origin (:meth:`com_offset`, of the posture in the
        private model), predicted over the actuation delay."""
        p = self.params
        x, _, height = self._com_offset(sensors, self._support)
        if self._com_prev is not None:
            v = (x - self._com_prev) / self.robot.control_period
            self._com_velocity = p.com_velocity_lowpass * self._com_velocity + (1 - p.com_velocity_lowpass) * v
        self._com_prev = x
        horizon = self.robot.delay_cycles * self.robot.control_period
        return predict_com(x, self._com_velocity, p.support_back, p.support_front, height, horizon)

    def _adjust(self, planned: dict[str, _Foot], com_x: float, load: dict[str, float], ratio: float,
                dt: float) -> None:
        """Algorithm 1 on the planned sagittal foot positions (offsets from the nominal foot x)."""
        p = self.params
        sw, su = self._swing, self._support
        w_t, u_t = planned[sw].x, planned[su].x
        adjustment = self._w_bar_prev - self._w_plan_prev
        total = load["left"] + load["right"]
        gated = total <= 0.0 or load[su] < load[sw] or (
            load[sw] > p.unloaded_fraction * total and ratio > p.early_contact_phase)
        if gated:
            w_bar, u_bar = w_t + adjustment, u_t - adjustment / 2.0
        else:
            m_raw = self._feet[su].x + com_x
            if self._adjusting and self._com_filtered is not None:
                m = p.com_lowpass * self._com_filtered + (1.0 - p.com_lowpass) * m_raw
            else:
                m = m_raw
            self._com_filtered = m
            result = adjust_step(w_t, self._w_plan_prev, self._w_bar_prev, u_t, m, p.max_adjust_speed * dt,
                                 *self._tolerance)
            lo, hi = p.clip_forward  # widened to include the planned x
            w_bar = clip(result.swing_x, min(lo, w_t), max(hi, w_t))
            u_bar = u_t - (w_bar - w_t) / 2.0
        self._adjusting = abs(w_bar - w_t) > 1e-4
        self._w_plan_prev, self._w_bar_prev = w_t, w_bar
        planned[sw].x, planned[su].x = w_bar, u_bar

    def _joints_for(self, left: _Foot, right: _Foot, lifts: tuple[float, float] = (0.0, 0.0),
                    pitches: tuple[float, float] = (0.0, 0.0), rolls: tuple[float, float] = (0.0, 0.0),
                    pivots: tuple[float, float] | None = None) -> np.ndarray:
        """Leg IK for the walk-frame foot offsets of the ``left`` and ``right`` foot, and per foot
        (left, right) the lift (m), pitch and roll (rad, about the sole's y and x axes; the pitch
        about a point ``pivots`` m ahead of the sole origin, where given); the rest of the body
        keeps the standing pose."""
        p = self.params
        ct, st = self._trunk  # the walk frame in the torso frame
        goals = []
        for i, foot in ((0, left), (1, right)):
            x, y, z = p.foot_x + foot.x, (p.foot_y if i == 0 else -p.foot_y) + foot.y, -p.walk_height + lifts[i]
            # R = zyx_matrix(foot.yaw, pitch, roll), written out (its yaw's cosine and sine serve the
            # pivot); without a roll its products with cos 0 = 1 and sin 0 = ±0 are left out (the same
            # numbers, a zero's sign aside)
            pitch, roll = pitches[i], rolls[i]
            cz, sz = math.cos(foot.yaw), math.sin(foot.yaw)
            cy, sy = math.cos(pitch), math.sin(pitch)
            a, g = cz * cy, -sy
            if roll == 0.0:
                b, e = -sz, cz * sy
                row = (sz * cy, cz, sz * sy)
                top, bottom = (ct * a - st * g, ct * b, ct * e - st * cy), (st * a + ct * g, st * b, st * e + ct * cy)
            else:
                cx, sx = math.cos(roll), math.sin(roll)
                b, e = cz * sy * sx - sz * cx, cz * sy * cx + sz * sx
                row = (sz * cy, sz * sy * sx + cz * cx, sz * sy * cx - cz * sx)
                h, k = cy * sx, cy * cx
                top = (ct * a - st * g, ct * b - st * h, ct * e - st * k)
                bottom = (st * a + ct * g, st * b + ct * h, st * e + ct * k)
            if pivots is not None:  # pitch about a point `pivots[i]` ahead of the sole origin
                c = pivots[i]
                x, y, z = x + cz * c - a * c, y + sz * c - row[0] * c, z - g * c
            goals.append((ct * x - st * z, y, st * x + ct * z))
            goals.append((top, row, bottom))
        angles, _ = self.kin.walk_legs(*goals)
        joints = self._standing.copy()
        joints[self.kin.legs_joint_index] = angles
        return joints


register_controller("step_adjust", StepAdjustWalk, StepAdjustParams.load, task="walk",
                    needs=("legs",))
