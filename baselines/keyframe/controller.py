"""Baseline ``keyframe``: B-Human's keyframe stand-up with joint-error compensation.

Reichenberg & Laue, "Stand Up, NAO! Increasing the Reliability of Stand-Up Motions Through Error
Compensation in Position Control" (2025), sections 3–6; engine details and numbers from B-Human's
2025 code release (``KeyframeMotionEngine``, ``keyframeMotionEngine.cfg``,
``keyframeMotionParameters.cfg``). The engine is
robot-agnostic: motions, balancer phases and engine numbers live in
``baselines/data/keyframe_<robot>.yaml`` (:mod:`upright.baselines.keyframe.library`).

Per control cycle (robot-side only: :class:`Sensors` and a private model of the robot):

* keyframe interpolation from the start pose to the target with the keyframe's interpolation type,
  both with their joint-error compensation (:mod:`upright.baselines.keyframe.compensation`): the
  current keyframe's for the target, the previous keyframe's (recomputed with the current error)
  for the start, scaled with the keyframe progress;
* the CoM balancer (exponential PD on the CoM relative to the centre of the support polygon,
  reference interpolated between the keyframes' ``goal_com``) adding to the keyframe's balance joints;
* the ankle-roll oscillation (±1° at 200 ms, scaled by the predicted hip-yaw-pitch error) while
  the balancer runs;
* checks: torso pitch/roll ranges per keyframe (leaving them breaks up = safe fall and retry),
  branches to arm-freeing blocks or back to earlier keyframes;
* limited conditional waiting at keyframe ends;
* the state machine ``decideAction`` → ``working`` ⇄ ``waiting`` → (``balanceOut``) →
  ``finished``, ``breakUp`` on failed checks, ``helpMe`` after ``max_tries`` failed tries or a
  broken (stuck) leg joint.

Stiffness: our servos take position targets only. With ``params.stiffness`` a stiffness s (0..1)
is emulated by commanding ``m + s·(r − m)`` (m measured, r requested), which scales the
position-error torque of the P servo by s; ``off`` joints get their measured angle.

Status: ``working`` (deciding, moving, balancing out), ``waiting``, ``failed`` (breaking up),
``finished``, ``help``.

Departures from B-Human's engine (state machine, compensation, balancer): the joint error goes straight into
equations 2–4 (no extra ``LowPassFilterPR`` on the raw error; the paper names none); the balancer's
output low-pass is a first-order filter (factor 0.35, between B-Human's 0.2 and 0.5); no mirroring
of motions and no head-button abort; a wait with several conditions ends when each holds or has
reached its own maximum wait; the break-up holds the measured angles at low stiffness (B-Human's
``sitBack``/``sitFrontGetUp`` poses are not in the reference); a broken joint is a leg joint that
stays ``broken_joint.error`` off its request without moving for ``broken_joint.seconds`` (B-Human
reads a separate motor-malfunction detector). After ``finished`` the last request is held; if the
torso tilts beyond 45° again a new get-up starts. From the second try on, a robot still on its back
rolls onto its front first (``params.roll_over``, the library's ``engine.roll_over`` motion): the
back stand-up cannot tip a loaded torso over the arms, the front stand-up still rises.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from upright.baselines import register_controller
from upright.baselines.common.joint_errors import compensation_offset
from upright.baselines.common.params import Params
from upright.baselines.keyframe.compensation import JointErrorEstimator, compensation
from upright.baselines.keyframe.library import (
    Block,
    Keyframe,
    MotionLibrary,
    interpolate,
    load_library,
)
from upright.baselines.common.rotations import yaw_removed
from upright.baselines.common.tempo import MotionClock
from upright.baselines.kinematics import Kinematics
from upright.envs.robots import RobotSpec
from upright.envs.sensors import Sensors


@dataclass(frozen=True)
class KeyframeParams(Params):
    """Feature switches (for ablations) and scales of the data file's numbers (the motion library
    itself, B-Human's keyframes and gains, is data: ``data_file``). The same defaults for every
    robot (no parameter file)."""

    #: Joint-error compensation (paper section 4).
    compensation: bool = True
    #: CoM balancer (section 5.1).
    balancer: bool = True
    #: Torso-angle checks with break-up and arm checks/branches (section 5.2).
    checks: bool = True
    #: Conditional waiting at keyframe ends (section 5.3).
    waiting: bool = True
    #: Ankle-roll oscillation (section 5.4).
    oscillation: bool = True
    #: Emulate per-keyframe stiffness through the position targets (see module docstring).
    stiffness: bool = True
    #: Detect a broken (stuck) leg joint and go to helpMe.
    broken_joint_check: bool = True
    #: Motion library file; None = ``baselines/data/keyframe_<robot>.yaml``.
    data_file: str | None = None
    #: Multiplies every compensation factor p_γ of the library (1 = its factors).
    compensation_scale: float = 1.0
    #: Multiply the balancer's proportional gains (Pbase and PmaxAdd) and its derivative gains
    #: (Dbase and DmaxAdd) of every phase (1 = the library's gains).
    balancer_p_scale: float = 1.0
    balancer_d_scale: float = 1.0
    #: Playback rate of the keyframes: every keyframe's duration divided by it (1 = the library's
    #: timing; 1.25 plays each interpolation in 0.8 of its time). The waits' conditions and time
    #: limits are the robot settling, so they stay as they are.
    tempo: float = 1.0
    #: The blocks (names in the library's ``blocks``) whose keyframes ``tempo`` plays faster; empty:
    #: every block. A rise can keep its own timing where the tempo would make it fail, while the
    #: motions that bring the robot into position (rolling over, pulling the legs in) go faster.
    tempo_blocks: tuple[str, ...] = ()
    #: From the second try on, roll a robot that lies on its back onto its front and stand up from
    #: there (ours: the library's ``engine.roll_over`` motion, where it has one). False is B-Human's
    #: engine, which tries the back stand-up again.
    roll_over: bool = True
    #: Multiplies the gain of the blocks' self-compensation (the library's ``self_compensation``:
    #: joints compensating their own error, ours); 0 is the paper's engine.
    self_compensation_scale: float = 1.0

    def __post_init__(self) -> None:
        if not self.tempo > 0.0:
            raise ValueError(f"KeyframeParams.tempo must be > 0, got {self.tempo!r}")


STATES = ("decideAction", "working", "waiting", "balanceOut", "finished", "breakUp", "helpMe")
_STATUS = {"decideAction": "working", "working": "working", "waiting": "waiting", "balanceOut": "working",
           "finished": "finished", "breakUp": "failed", "helpMe": "help"}


class RobotModel:
    """The robot's own kinematic model (:class:`~upright.baselines.kinematics.Kinematics`, a private
    model of ``robot.mjcf``): CoM and soles in the gravity-aligned torso frame (x forward, y left,
    z up; origin at the torso), wrists in the torso's own frame."""

    def __init__(self, robot: RobotSpec) -> None:
        self.kin = Kinematics(robot)
        self._imu = robot.imu_site
        self._soles = robot.sole_sites
        names = {self.kin.model.body(i).name for i in range(self.kin.model.nbody)}
        self._wrists = ("l_wrist", "r_wrist") if {"l_wrist", "r_wrist"} <= names else ()
        self._com = np.zeros(3)
        self._aligned = np.eye(3)

    def update(self, joint_pos: np.ndarray, quat: np.ndarray, fused_yaw: float) -> None:
        """Forward kinematics for measured joint angles (rad, joint order) and the IMU orientation
        ``(w, x, y, z)`` with its fused yaw removed (the tilt part: well defined in every pose, also
        lying)."""
        com = self.kin.com(joint_pos)
        _, imu_in_torso = self.kin.site_pose(self._imu)
        # torso frame -> gravity-aligned torso frame
        self._aligned = yaw_removed(quat, fused_yaw) @ imu_in_torso.T
        self._com = self._aligned @ com

    def com(self) -> np.ndarray:
        """Centre of mass (m) in the gravity-aligned torso frame."""
        return self._com

    def sole_points(self, front: float, back: float, side: float) -> np.ndarray:
        """The 4 support-polygon corners (m): left front, right front, right back, left back."""
        left, right = (self.kin.site_pose(sole) for sole in self._soles)
        pts = []
        for k, (dx, dy) in enumerate(((front, side), (front, -side), (-back, -side), (-back, side))):
            pos, rot = left if k in (0, 3) else right
            pts.append(self._aligned @ (pos + rot @ np.array([dx, dy, 0.0])))
        return np.array(pts)

    def wrist_y(self) -> np.ndarray:
        """Lateral positions (m) of the left and right wrists in the torso's own frame."""
        if not self._wrists:
            return np.array([np.nan, np.nan])
        return np.array([self.kin.body_pose(b)[0][1] for b in self._wrists])


class KeyframeController:
    """The keyframe stand-up engine (see module docstring). Targets in rad, actuator order."""

    def __init__(self, robot: RobotSpec, params: KeyframeParams | None = None) -> None:
        self.robot = robot
        self.params = params or KeyframeParams()
        self.lib: MotionLibrary = load_library(robot, self.params.data_file)
        unknown = [name for name in self.params.tempo_blocks if name not in self.lib.blocks]
        if unknown:
            raise ValueError(f"KeyframeParams.tempo_blocks: unknown block {unknown[0]!r} for {robot.name}; "
                             f"valid: {', '.join(self.lib.blocks)}")
        #: Per block with a self-compensation: its factor per actuator (p times the scale) and its
        #: dead band (deg).
        self._self_compensation = {
            name: (block.self_compensation.gains * self.params.self_compensation_scale,
                   block.self_compensation.dead_band)
            for name, block in self.lib.blocks.items() if block.self_compensation is not None}
        #: The follow-up motion this engine never starts (the roll-over, when ``roll_over`` is off).
        self._skipped_motion = None if self.params.roll_over else self.lib.engine.get("roll_over")
        self.nu = len(robot.actuator_names)
        self.dt = robot.control_period
        self.model = RobotModel(robot)
        self._act = np.array(robot.actuated_joint_index)
        lo, hi = np.rad2deg(self.model.kin.model.actuator_ctrlrange.T)
        self._lo, self._hi = lo, hi
        self._named = {n: i for i, n in enumerate(robot.actuator_names)}
        self.errors = JointErrorEstimator(self.nu, self.lib.delay_cycles)
        self.status = "working"
        self.state = "decideAction"
        #: The keyframes' interpolation time (set_tempo); waits and break-ups read the real time.
        self.clock = MotionClock()

    # ------------------------------------------------------------------ episode
    def reset(self, sensors: Sensors, rng: np.random.Generator) -> None:
        """Start deciding from the first measurements."""
        self._rng = rng
        eng = self.lib.engine
        self.e = eng
        meas = self._measured(sensors)
        self.errors.reset(meas)
        self.request = meas.copy()  # last output request (deg, unbalanced part in `unbalanced`)
        self.unbalanced = meas.copy()
        self.stiff = np.full(self.nu, 100.0)
        self.tries = 0
        self.state = "decideAction"
        self.status = "working"
        self._state_since = sensors.time
        self.clock = MotionClock(sensors.time)
        self._angles = np.zeros((3, 2))
        self._angles[:] = self._torso_angles(sensors)
        self.motion = None
        self.queue: list[str] = []
        self.block: Block | None = None
        self.kf_index = 0
        self.kf: Keyframe | None = None
        self.prev_kf: Keyframe | None = None
        self._loops: dict[str, int] = {}
        self._resume_index = 0
        self._stretch_ms = 0.0
        self._after_breakup = False
        self._com_diff = np.zeros(2)
        self._com_prev = np.zeros(2)
        self._low_com = 1000.0
        self._balance = np.zeros(2)
        self._balance_offsets = np.zeros(self.nu)
        self._i_term = np.zeros(2)
        self._balancer_idle = 99
        self._goal = np.zeros(2)
        self._last_goal = np.zeros(2)
        self._goal_growth = np.zeros(2)
        self._pid_d = 0.0
        self._range: np.ndarray | None = None
        self._stuck_since: float | None = None
        self._stuck_ref: np.ndarray | None = None
        self.broken_joint = False
        self.history: list[tuple[float, str, str, int]] = []

    # ------------------------------------------------------------------ measurements
    def _measured(self, sensors: Sensors) -> np.ndarray:
        return np.rad2deg(np.asarray(sensors.joint_pos)[self._act])

    @staticmethod
    def _torso_angles(sensors: Sensors) -> np.ndarray:
        """B-Human-style torso angles (deg): pitch = atan2(−R20, R22) in (−180, 180] (prone ≈ +90),
        roll = fused roll (+ = leaning right)."""
        w, x, y, z = np.asarray(sensors.quat) / np.linalg.norm(sensors.quat)
        r20 = 2.0 * (x * z - w * y)
        r22 = 1.0 - 2.0 * (x * x + y * y)
        return np.rad2deg([np.arctan2(-r20, r22), sensors.fused[1]])

    def _update_sensors(self, sensors: Sensors) -> None:
        self.meas = self._measured(sensors)
        self.sensors = sensors
        self._angles[1:] = self._angles[:-1].copy()  # the last three cycles, newest first
        self._angles[0] = self._torso_angles(sensors)
        self.pitch, self.roll = self._angles[0]
        vel = self._angles[0] - self._angles[1]
        acc = vel - (self._angles[1] - self._angles[2])
        self.fluctuation = (np.abs(acc) + np.abs(vel)) / self.dt  # deg/s
        self.errors.update(self.meas)
        self.model.update(np.asarray(sensors.joint_pos), np.asarray(sensors.quat), float(sensors.fused[2]))
        sp = self.e["support_polygon"]
        pts = self.model.sole_points(sp["front"] / 1000, sp["back"] / 1000, sp["side"] / 1000)
        com = self.model.com()
        self._com_prev = self._com_diff
        self._com_diff = (com[:2] - pts.mean(axis=0)[:2]) * 1000.0
        self._low_com = (com[2] - pts[:, 2].min()) * 1000.0

    def _var(self, name: str) -> float:
        """Current value of a condition variable (deg, deg/s, ms, mm or 0/1)."""
        j = self._named
        if name == "pitch":
            return self.pitch
        if name == "abs_roll":
            return abs(self.roll)
        if name == "fluctuation_pitch":
            return self.fluctuation[0]
        if name == "shoulder_pitch_left":
            return self.meas[j["LShoulderPitch"]]
        if name == "shoulder_pitch_right":
            return self.meas[j["RShoulderPitch"]]
        if name == "shoulder_roll_left":
            return self.meas[j["LShoulderRoll"]]
        if name == "shoulder_roll_right":
            return self.meas[j["RShoulderRoll"]]
        if name == "wait_time":
            return (self.sensors.time - self._state_since) * 1000.0
        if name == "try_counter":
            return float(self.tries)
        if name == "hyp_difference":
            return abs(self.errors.raw[j["LHipYawPitch"]])
        if name == "low_com":
            return self._low_com
        if name == "lying_on_arms_front":
            ly, ry = self.model.wrist_y() * 1000.0
            return float((ly < 90 and self.meas[j["LShoulderPitch"]] > 0) or (ry > -90 and self.meas[j["RShoulderPitch"]] > 0))
        if name == "another_front_hack":
            knees = [self.request[j[k]] - self.meas[j[k]] for k in ("LKneePitch", "RKneePitch")]
            gyro_y = np.rad2deg(self.sensors.gyro[1])
            return float((max(knees) < 10 and self.pitch < 80 and gyro_y < -100) or self.pitch < 70)
        raise ValueError(f"unknown condition variable {name!r}")

    # ------------------------------------------------------------------ motion control
    def _start_motion(self, name: str, t: float) -> None:
        motion = self.lib.motions[name]
        self.motion = motion
        self.queue = list(motion.blocks)
        self._loops = {}
        self._start_block(self.queue.pop(0), t)

    def _start_block(self, name: str, t: float) -> None:
        """Start block ``name`` at its first keyframe; its base stiffness replaces the current one
        (limbs with base −1 keep theirs)."""
        self.block = self.lib.blocks[name]
        base = self.block.stiffness
        self.stiff = np.where(np.isnan(base), self.stiff, base)
        self.kf_index = 0
        self._start_keyframe(t)

    def _start_keyframe(self, t: float) -> None:
        kf = self.block.keyframes[self.kf_index]
        self.prev_kf, self.kf = self.kf, kf
        for i, s in kf.stiffness.items():
            self.stiff[i] = s
        # start pose: the last request without the previous keyframe's current compensation
        prev_comp = self._comp(self.prev_kf)
        self.start_base = self.unbalanced - prev_comp
        left_balance = self._balance_offsets.copy()
        for i, _ in (*kf.balance_pitch, *kf.balance_roll):
            left_balance[i] = 0.0
        self.start_base += left_balance  # joints leaving the balancer keep their balanced request
        self.target_base = np.where(np.isnan(kf.angles), self.start_base, kf.angles)
        self.kf_start = t + self.clock.gain
        self._state_since = t
        self.duration = kf.duration
        if not self.params.tempo_blocks or self.block.name in self.params.tempo_blocks:
            self.duration /= self.params.tempo
        if self._stretch_ms > 0.0:
            self.duration = max(self.duration, self._stretch_ms)
            self._stretch_ms = 0.0
        # balancer references
        self._last_goal = self._com_diff.copy() if kf.set_last_com else self._goal.copy()
        self._last_range = self._range if self._range is not None else kf.breakup_end
        if kf.breakup_start is not None:
            self._last_range = kf.breakup_start
        self._range = self._last_range
        self._last_base = getattr(self, "_com_base", self.lib.phases[kf.phase].com_base)
        self._wait_fail = 0.0
        self._wait_dist: dict[int, float] = {}
        self.state = "working"
        self.history.append((t, self.block.name, "kf", self.kf_index))

    def _comp(self, kf: Keyframe | None) -> np.ndarray:
        if kf is None or not self.params.compensation or not kf.compensation:
            return np.zeros(self.nu)
        j = self._named
        hpd = self.meas[j["LHipPitch"]] - self.meas[j["RHipPitch"]] if "LHipPitch" in j else 0.0
        return compensation(kf.compensation, self.errors.raw, self.errors.applied, hpd, self.nu,
                            self.params.compensation_scale)

    def _ratio(self, t: float) -> float:
        elapsed = (t + self.clock.gain - self.kf_start) * 1000.0
        if self.duration - elapsed < 3.0:
            return 1.0
        return min(elapsed / self.duration, 1.0)

    def _interpolation_values(self, ratio: float) -> None:
        kf = self.kf
        self._goal_growth = (0.75 * self._goal_growth
                             + 0.25 * (kf.goal_com - self._last_goal) * self.lib.cycle_ms * self.clock.tempo / self.duration)
        self._goal = self._last_goal + (kf.goal_com - self._last_goal) * ratio
        self._com_base = self._last_base + (self.lib.phases[kf.phase].com_base - self._last_base) * ratio
        end = kf.breakup_end
        start = self._last_range
        self._range = start + (end - start) * ratio

    def _set_next_joints(self, ratio: float) -> np.ndarray:
        """Interpolated, compensated, balanced request (deg) for this cycle."""
        kf = self.kf
        self._interpolation_values(ratio)
        start = self.start_base + self._comp(self.prev_kf)
        target = self.target_base + self._comp(kf)
        request = start + interpolate(kf.interpolation, ratio) * (target - start)
        self.unbalanced = request.copy()
        self._balance_offsets = np.zeros(self.nu)
        if (kf.balance_pitch or kf.balance_roll) and self.params.balancer:
            self._run_balancer()
            for joints, value in ((kf.balance_pitch, self._balance[0]), (kf.balance_roll, self._balance[1])):
                for i, factor in joints:
                    self._balance_offsets[i] += value * factor
            if self.params.oscillation and self.state != "balanceOut":
                self._balance_offsets += self._oscillation()
        else:
            self._balancer_idle += 1
        return request + self._balance_offsets

    def _run_balancer(self) -> None:
        """Exponential PD on the CoM (B-Human ``KeyframePhaseBalancerImpl``); output (deg) in ``self._balance``."""
        if self._balancer_idle > 2:
            self._i_term = np.zeros(2)
            self._balance = np.zeros(2)
        self._balancer_idle = 0
        ph = self.lib.phases[self.kf.phase]
        p = self._com_diff - self._goal
        d = (self._com_diff - self._com_prev) - self._goal_growth
        if self.kf.phase == "StandStatic" or self.state == "balanceOut":
            n = np.linalg.norm(self._i_term)
            if n > 0:
                self._i_term -= self._i_term / n * min(7000.0 * self.dt, n)
        else:
            self._i_term += p
        out = np.zeros(2)
        for ax in range(2):
            neg, pos = self._com_base[ax]
            e_neg, e_pos = ph.exponent[ax]
            c_neg, c_pos = ph.max_scaling[ax]
            if p[ax] < 0:
                s = min(abs(p[ax] / neg) ** e_neg if neg else 1.0, c_neg)
            else:
                s = min((p[ax] / pos) ** e_pos if pos else 1.0, c_pos)
            s_d = s if p[ax] * d[ax] >= 0 else 0.0
            pb, pa = ph.p[ax] * self.params.balancer_p_scale
            db, da = ph.d[ax] * self.params.balancer_d_scale
            pid_d = d[ax] / self.dt * (db + min(s_d, da))
            if ax == 0:
                self._pid_d = pid_d
            raw = self.dt * (p[ax] * (pb + min(s, pa)) + 0.02 * self._i_term[ax] + pid_d)
            # LowPassFilterPR(0.2, 0.5) approximated by a first-order low pass with factor 0.2..0.5
            out[ax] = self._balance[ax] + 0.35 * (raw - self._balance[ax])
        self._balance = out

    def _oscillation(self) -> np.ndarray:
        """Ankle-roll oscillation (deg): ±amplitude sine of the oscillation period, scaled by the
        predicted hip-yaw-pitch error mapped from [5, 10] deg to [0, 1]."""
        o = self.e["oscillation"]
        j = self._named
        out = np.zeros(self.nu)
        if "LHipYawPitch" not in j:
            return out
        period = o["period_ms"] / 1000.0
        lo, hi = o["hyp_error"]
        scale = np.clip((abs(self.errors.applied[j["LHipYawPitch"]]) - lo) / (hi - lo), 0.0, 1.0)
        r = np.sin(2 * np.pi * (self.sensors.time % period) / period)
        out[j["LAnkleRoll"]] += scale * r * o["amplitude"]
        out[j["RAnkleRoll"]] -= scale * r * o["amplitude"]
        return out

    def _out_of_range(self) -> bool:
        if not self.params.checks:
            return False
        (plo, phi), (rlo, rhi) = self._range
        return not (plo <= self.pitch <= phi and rlo <= self.roll <= rhi)

    # ------------------------------------------------------------------ branches and waiting
    def _take_branch(self, early: bool, t: float) -> bool:
        if not self.params.checks:
            return False
        for br in self.kf.branches:
            cond = br.early if early else br.pre
            if cond is None or not cond.holds(self._var):
                continue
            key = f"{self.block.name}:{self.kf_index}:{br.block or br.motion}"
            if self._loops.get(key, 0) >= br.max_loops:
                continue
            self._loops[key] = self._loops.get(key, 0) + 1
            self.history.append((t, self.block.name, "branch", self.kf_index))
            if br.motion is not None:
                loops = self._loops
                self._start_motion(br.motion, t)
                self._loops = loops
                return True
            if not br.remove_current_block:
                # continue the current block after the inserted one (from the current keyframe on)
                rest = self.block.name
                self.queue.insert(0, rest)
                self._resume_index = self.kf_index + 1 if not early else self.kf_index
            self._start_block(br.block, t)
            return True
        return False

    def _wait_done(self, t: float) -> bool:
        """Whether the wait conditions of the current keyframe hold, timed out or stalled."""
        kf = self.kf
        if not kf.wait or not self.params.waiting:
            return True
        waited = (t - self._state_since) * 1000.0
        done = True
        for k, (cond, max_ms) in enumerate(kf.wait):
            if cond.holds(self._var) or waited >= max_ms:
                continue
            done = False
            if not kf.forbid_wait_break:
                dist = cond.distance(self._var)
                if dist >= self._wait_dist.get(k, np.inf):
                    self._wait_fail += 100 * self.dt
                if "fluctuation_pitch" in cond.variables():
                    self._wait_fail = max(0.0, self._wait_fail - 0.7)
                self._wait_dist[k] = dist
        return done or self._wait_fail > self.e["wait_break_limit"]

    def _next_keyframe(self, t: float) -> None:
        self.kf_index += 1
        if self.kf_index < len(self.block.keyframes):
            self._start_keyframe(t)
            return
        if self.queue:
            name = self.queue.pop(0)
            resume = self._resume_index
            self._resume_index = 0
            self.block = self.lib.blocks[name]
            base = self.block.stiffness
            self.stiff = np.where(np.isnan(base), self.stiff, base)
            self.kf_index = resume
            if self.kf_index >= len(self.block.keyframes):
                self._next_keyframe(t)
                return
            self._start_keyframe(t)
            return
        for name, cond in self.motion.then:
            if name == self._skipped_motion:
                continue
            if cond.holds(self._var):
                self._start_motion(name, t)
                return
        if self.motion.balance_out and abs(self.pitch) < 30:
            self.state, self._state_since = "balanceOut", t
            self._goal_growth = np.zeros(2)
            return
        self._finish(t)

    def _finish(self, t: float) -> None:
        if self.motion.getup and abs(self.pitch) > self.e["finished_max_pitch"]:
            self._break_up(t)
            return
        self.state, self._state_since = "finished", t

    def _break_up(self, t: float) -> None:
        self.tries += 1
        self.state, self._state_since = "breakUp", t
        self.history.append((t, "breakUp", "try", self.tries))
        self._after_breakup = True

    # ------------------------------------------------------------------ main loop
    def set_tempo(self, factor: float) -> None:
        """Play the keyframes' interpolation ``factor`` times as fast from the last control cycle on
        (1 = the library's timing, composed with ``params.tempo``): the motion clock that the
        keyframes' interpolation ratio reads advanced by ``factor`` × the elapsed time over the cycle
        before the next :meth:`step`. Waits, break-ups and stillness checks keep the real time. What a
        residual's ``tempo`` action entry sets (:class:`~upright.envs.residual.TempoResidual`,
        ``tempo_range``); ValueError for a factor that is not a finite number > 0."""
        self.clock.set_tempo(factor)

    def step(self, sensors: Sensors) -> np.ndarray:
        """Joint targets (rad, actuator order) for this control cycle."""
        t = sensors.time
        self.clock.advance(t)
        self._update_sensors(sensors)
        self._check_broken_joint(t)
        request = self._state_machine(t)
        self.status = _STATUS[self.state]
        request = np.clip(request, self._lo, self._hi)
        off = np.isnan(request)
        request = np.where(off, self.meas, request)
        self.request = request
        self.errors.push(np.where(off, np.nan, request))
        out = request
        own = self._self_compensation.get(self.block.name) if self.block is not None else None
        if own is not None:
            out = request + compensation_offset(self.errors.applied, *own)
        if self.params.stiffness:
            s = np.clip(self.stiff / 100.0, 0.0, 1.0)
            out = self.meas + s * (out - self.meas)
        return np.deg2rad(np.clip(out, self._lo, self._hi))

    def _state_machine(self, t: float) -> np.ndarray:
        if self.state == "decideAction":
            self._decide(t)
        if self.state == "breakUp":
            return self._break_up_pose(t)
        if self.state == "helpMe":
            self.stiff[:] = 0.0
            if abs(self.pitch) < 30 and abs(self.roll) < 30:
                self._start_motion(self.e["decide"]["upright"], t)
            return np.full(self.nu, np.nan)
        if self.state == "finished":
            if abs(self.pitch) > 45 or abs(self.roll) > 45:  # fell again: a new get-up
                self.state = "decideAction"
                self._decide(t)
            else:
                return self.request + 0.0
        if self.state == "balanceOut":
            return self._balance_out(t)
        if self.state == "waiting":
            if self._take_branch(True, t) or self._wait_done(t):
                if self.state == "waiting":
                    self._next_keyframe(t)
            else:
                return self._set_next_joints(1.0)
        if self.state == "working":
            return self._working(t)
        return self._state_machine(t) if self.state in ("decideAction", "waiting") else self.request + 0.0

    def _working(self, t: float) -> np.ndarray:
        ratio = self._ratio(t)
        if self._take_branch(True, t):
            ratio = self._ratio(t)
        elif ratio >= 1.0:
            if self._take_branch(False, t):
                ratio = self._ratio(t)
            elif self.kf.wait and self.params.waiting and not self._wait_done(t):
                self.state, self._state_since = "waiting", t
            else:
                self._next_keyframe(t)
                if self.state != "working":
                    return self._state_machine(t)
                ratio = self._ratio(t)
        if self.state in ("working", "waiting") and self._out_of_range():
            self._break_up(t)
            return self._break_up_pose(t)
        return self._set_next_joints(ratio if self.state == "working" else 1.0)

    def _decide(self, t: float) -> None:
        eng = self.e
        if self.broken_joint or self.tries >= eng["max_tries"]:
            self.state, self._state_since = "helpMe", t
            return
        (plo, phi), (rlo, rhi) = eng["safe_upright"]["pitch"], eng["safe_upright"]["roll"]
        self.kf = None
        self._range = None
        self.unbalanced = self.meas.copy()
        self._balance_offsets = np.zeros(self.nu)
        if plo <= self.pitch <= phi and rlo <= self.roll <= rhi:
            self._start_motion(eng["decide"]["upright"], t)
        else:
            if self._after_breakup and self.pitch > 0:
                self._stretch_ms = eng["recover_stretch_ms"]
            self._start_motion(eng["decide"]["lying"], t)
        self._after_breakup = False

    def _break_up_pose(self, t: float) -> np.ndarray:
        elapsed = (t - self._state_since) * 1000.0
        eng = self.e
        self.stiff[:] = eng["breakup_stiffness"] if elapsed < eng["unstiff_wait_ms"] else 0.0
        if elapsed >= eng["breakup_ms"]:
            self.state = "decideAction"
            self._decide(t)
            if self.state == "working":
                return self._working(t)
        return self.meas.copy()

    def _balance_out(self, t: float) -> np.ndarray:
        b = self.e["balance_out"]
        elapsed = (t - self._state_since) * 1000.0
        if self._out_of_range():
            self._break_up(t)
            return self._break_up_pose(t)
        calm = (abs(self.fluctuation[0]) < b["max_fluctuation"] and b["pitch"][0] < self.pitch < b["pitch"][1]
                and abs(self._pid_d) < b["max_d"])
        if elapsed > b["max_ms"] or calm:
            self._finish(t)
            return self.request + 0.0
        return self._set_next_joints(1.0)

    def _check_broken_joint(self, t: float) -> None:
        """A leg joint that stays ``error`` deg off its request and does not move for ``seconds``."""
        if not self.params.broken_joint_check or self.state not in ("working", "waiting"):
            self._stuck_since = None
            return
        bj = self.e["broken_joint"]
        legs = np.array(["Hip" in n or "Knee" in n or "Ankle" in n for n in self.robot.actuator_names])
        bad = legs & (np.abs(self.errors.raw) > bj["error"]) & (self.stiff >= 50)
        if not bad.any():
            self._stuck_since = None
            return
        if self._stuck_since is None or self._stuck_ref is None:
            self._stuck_since, self._stuck_ref = t, self.meas.copy()
            return
        moved = np.abs(self.meas - self._stuck_ref) > 2.0
        if np.any(bad & ~moved):
            if t - self._stuck_since > bj["seconds"]:
                self.broken_joint = True
                self._break_up(t)
        else:
            self._stuck_since, self._stuck_ref = t, self.meas.copy()


register_controller("keyframe", KeyframeController, KeyframeParams.load, task="getup")
