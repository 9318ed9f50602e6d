"""Baseline ``spline``: the Bit-Bots quintic-spline stand-up with fused-angle stabiliser and fail-safe.

Stelter 2020 (thesis, chapter 4) and Stelter et al., ICAR 2021 (section III), after the Bit-Bots
engine ``bitbots_dynup``; every number is in ``baselines/data/spline_<robot>.yaml`` with its source.

1. The four pose splines of a :class:`~upright.baselines.spline.motion.Plan` give the goal poses of
   the hands (relative to the shoulders), of the right sole (torso frame) and of the left sole
   (right-sole frame), starting from the measured poses.
2. The left-foot goal is re-expressed in the torso frame; the legs get analytic IK (NAO: one shared
   HipYawPitch), the arms position IK of the hands (3-DoF arms cannot reach a full 6-D pose; the
   thesis allows approximate arm solutions): closed form, damped least squares where joint limits
   bind (:meth:`~upright.baselines.kinematics.Kinematics.arm_ik`). The head tilts out of the way
   (``head_tilt_front``/``back``) until the head-zero instant.
3. From the squat on, :class:`~upright.baselines.spline.stabilizer.TrunkStabilizer` turns the trunk goal by
   PID corrections of its fused pitch and roll (switch ``params.stabilizing``), which changes the
   right-foot goal and with it both legs.

Computation: steps 1-2 are solved at samples spaced along the splines' paths
(``ik_sample_distance``, ``ik_sample_angle``; :func:`sample_times`) plus every knot time (a
:class:`JointTrajectory`), lazily: a try's start only plans; each control cycle solves the samples
its interpolation needs (the first cycle: sample 1, sample 0 being the measured pose; more only
when a knot interval is shorter than a cycle) or else one sample ahead of the motion, so the IK
cost is spread over the cycles. Between samples the joints are interpolated in
the path parameter of their splines' quintic segments (the splines' timing is kept exactly). The
arms' IK takes the closed-form solution nearest to the previous sample; its DLS fallback starts from
the previous sample and stops when it stalls (``arm_ik_stall``). For the stabilised part the same
solve also gives the legs' first and second derivatives with respect to the two corrections
(central differences of the IK; for independent legs (Wolfgang) each corrected goal is solved by
Newton steps from a first-order step on the sole Jacobian, for NAO's shared hip by the closed
form), so a control cycle costs an interpolation with the PID's second-order Taylor step (one
product with the sample table) instead of IK calls.
The stabiliser keeps running after the motion ends (the end pose is held stabilised).

Fail-safe (our addition; the thesis' discussion names its absence as the system's largest issue):
from the squat on, and while standing afterwards, a trunk error (goal − measured fused pitch or
roll) above ``fall_angle`` for ``fall_time`` means a fall: the controller stops the motion, goes limp (targets =
measured angles, status ``waiting``) until the robot rests, moves into the safe pose for the
direction it now lies in (the robot's lying keyframe ``safe_pose_front``/``back``: the pose a try
from the start position begins in, in ``safe_pose_time``) and starts again in that direction
(fused pitch > 0: ``front``, else ``back``), at most ``max_tries`` times (then status ``failed``). Status: ``working`` → ``finished`` (end pose held, still stabilised).
A retry plays the phases before the squat ``retry_slowdown_front``/``back`` times as long (see
:class:`~upright.baselines.spline.params.SplineParams`): the tuned timing leaves the legs no time
to spare, so servos weaker or slower than the tuning's fail every identical retry the same way.

Robot-side only: :class:`~upright.envs.sensors.Sensors` and the robot's own model
(:class:`~upright.baselines.kinematics.Kinematics`).
"""

from __future__ import annotations

import bisect

import numpy as np

from upright.baselines import register_controller
from upright.baselines.common.tempo import MotionClock
from upright.baselines.kinematics import Kinematics
from upright.baselines.kinematics.forward import pose_error, solve_spd
from upright.baselines.spline.motion import (EFFECTORS, Plan, PoseSpline, plan_motion, pose_matrix, pose_vector,
                                             smoothstep5)
from upright.baselines.spline.params import SplineParams
from upright.baselines.spline.stabilizer import TrunkStabilizer
from upright.envs.robots import RobotSpec
from upright.envs.sensors import Sensors

SIDES = ("left", "right")
#: Step (rad) of the finite differences that give the legs' sensitivity to trunk corrections.
SENSITIVITY_STEP = 0.01
#: Squared damping (m², rad²) of the first-order step that starts the Newton steps of the corrected
#: leg goals (as the polish of :class:`~upright.baselines.kinematics.Kinematics`).
LEG_DAMPING2 = 1e-8 * np.eye(6)
#: The trunk corrections (fused pitch, roll) of the finite differences, in units of SENSITIVITY_STEP.
_CORRECTION_STEPS = (np.array((1.0, 0.0)), np.array((-1.0, 0.0)), np.array((0.0, 1.0)), np.array((0.0, -1.0)))


def lying_direction(fused: np.ndarray, fall_angle: float, front_pitch: float = 0.0) -> str:
    """Which motion gets the robot up from the measured fused angles ``(pitch, roll, yaw, hemi)``:
    ``rise`` when the trunk is within ``fall_angle`` of upright, else ``front`` for a trunk pitched
    forward beyond ``front_pitch`` (rad; 0, the reference's split, decides a robot lying on its
    side by the sign of a small pitch), ``back`` otherwise."""
    pitch, roll, _, hemisphere = fused
    if hemisphere > 0 and abs(pitch) < fall_angle and abs(roll) < fall_angle:
        return "rise"
    return "front" if pitch > front_pitch else "back"


class SplineStandUp:
    """The spline stand-up controller for one robot (see the module docstring).

    Args:
        robot: the robot's description; its MJCF is loaded into a private kinematic model.
        params: the parameters; default: ``baselines/data/spline_<robot>.yaml``.
    """

    def __init__(self, robot: RobotSpec, params: SplineParams | None = None) -> None:
        self.robot = robot
        self.params = params if params is not None else SplineParams.load(robot.name)
        self.kin = Kinematics(robot)
        names = robot.joint_names
        self._arm_index = {s: np.array([names.index(j) for j in self.kin.arm_joint_names(s)]) for s in SIDES}
        self._leg_joints = [j for s in SIDES for j in self.kin.leg_joint_names(s)]
        self._leg_index = np.array([names.index(j) for j in self._leg_joints])
        self._pan, self._tilt = names.index(self.params.head_pan_joint), names.index(self.params.head_tilt_joint)
        self._shoulder = {s: self.kin.shoulder_pose(s)[0] for s in SIDES}
        self.status = "working"
        self.plan: Plan | None = None
        self.tries = 0
        self._stabilizer = self._make_stabilizer()
        #: The current try's joint trajectories of the legs (with the trunk goal and the
        #: stabiliser's sensitivities) and of both arms.
        self.legs: JointTrajectory | None = None
        self.arms: JointTrajectory | None = None
        self._arms = np.concatenate([self._arm_index[s] for s in SIDES])
        self._actuated = np.array(robot.actuated_joint_index)
        # a control cycle is one product: the interpolation coefficients of the current intervals
        # (legs: two samples × [angle, sensitivities, curvatures]; arms: two samples; the constant
        # joints; the head tilt) with their table rows mapped onto the actuators (_interval_rows)
        actuated = list(robot.actuated_joint_index)

        def to_actuators(joints: np.ndarray) -> np.ndarray:
            """0/1 matrix (driven joints, actuators): a joint's column onto its actuator's (coupled
            followers, NAO's right HipYawPitch, map nowhere: their driver carries the value)."""
            m = np.zeros((len(joints), len(actuated)))
            for row, j in enumerate(joints):
                if j in actuated:
                    m[row, actuated.index(j)] = 1.0
            return m

        self._legs_to_act, self._arms_to_act = to_actuators(self._leg_index), to_actuators(self._arms)
        self._tilt_row = to_actuators(np.array([self._tilt]))[0]
        #: Actuator targets of the joints that no trajectory drives (held at the try's start; head pan 0).
        self._rest_row = np.zeros(len(actuated))
        self._rows: tuple[tuple[int, int], np.ndarray] | None = None  # (k, ka) -> rows, reset per try
        #: The targets (rad, actuator order) of the last cycle: the array :meth:`step` returned.
        self.targets = np.zeros(len(actuated))
        self._t0 = 0.0
        self.clock = MotionClock()  # the try's motion time (set_tempo)
        self._limp_since: float | None = None
        #: While moving into the safe pose: (start time (s), targets at the start, their change to
        #: the safe pose) (rad, actuator order).
        self._safe_pose: tuple[float, np.ndarray, np.ndarray] | None = None
        self._stable_for = 0.0
        #: The stabiliser's last correction of the trunk goal (fused pitch, roll; rad).
        self.correction = np.zeros(2)

    def _make_stabilizer(self) -> TrunkStabilizer:
        p = self.params
        return TrunkStabilizer((p.pitch_p, p.pitch_i, p.pitch_d), (p.roll_p, p.roll_i, p.roll_d),
                               p.i_clamp, p.max_correction)

    # ------------------------------------------------------------------ episode
    def reset(self, sensors: Sensors, rng: np.random.Generator) -> None:
        """Start from the first measurements: plan the motion for the direction the robot lies in."""
        self._stabilizer = self._make_stabilizer()
        self.tries = 0
        self.clock = MotionClock()
        self._start(sensors)

    def _start(self, sensors: Sensors) -> None:
        """Plan a new try from the measured poses and precompute its nominal joint trajectory."""
        self.tries += 1
        self._t0 = sensors.time
        self.clock.restart(sensors.time)
        self._limp_since = None
        self._safe_pose = None
        self._stable_for = 0.0
        self._off_goal_since: float | None = None
        self._stabilizer.reset()
        self.correction = np.zeros(2)
        p = self.params
        direction = lying_direction(sensors.fused, p.fall_angle, p.front_pitch)
        slowdown = 1.0
        if self.tries > 1:  # a retry after a fall
            slowdown = {"front": p.retry_slowdown_front, "back": p.retry_slowdown_back}.get(direction, 1.0)
        self.plan = plan = plan_motion(direction, p, self.measured_poses(sensors.joint_pos), slowdown)
        self._head_tilt = {"front": p.head_tilt_front, "back": p.head_tilt_back}.get(direction, p.head_tilt_final)
        start = np.array(sensors.joint_pos, dtype=float)
        period = self.robot.control_period
        feet, hands = (plan.splines["r_foot"], plan.splines["l_foot"]), (plan.splines["l_hand"], plan.splines["r_hand"])
        self.legs = JointTrajectory(sample_times(feet, p.ik_sample_distance, p.ik_sample_angle, period),
                                    feet[0].times, start[self._leg_index], self._solve_legs_at)
        # the arms' IK is position-only: their samples are spaced by distance alone
        self.arms = JointTrajectory(sample_times(hands, p.arm_sample_distance, np.inf, period),
                                    hands[0].times, start[self._arms], self._solve_arms_at)
        rest = start.copy()
        rest[np.concatenate((self._leg_index, self._arms, [self._pan, self._tilt]))] = 0.0
        self._rest_row = rest[self._actuated]
        self._rows = None
        self.status = "working"

    @property
    def joint_goal(self) -> np.ndarray:
        """The last cycle's targets in joint order (rad; coupled joints: their driver's)."""
        return self.targets[list(self.robot.joint_actuator_index)]

    def foot_goals(self, t: float, correction: np.ndarray | None = None) -> dict[str, tuple]:
        """Both soles' goal poses ``side -> (pos, rot)`` in the torso frame at time ``t`` (s) of the
        current plan; with ``correction`` (fused pitch, roll; rad) the trunk goal turned by it."""
        return self._foot_goal_sets(t, [correction])[0][0]

    def _foot_goal_sets(self, t: float, corrections: list) -> tuple[list[dict[str, tuple]], np.ndarray]:
        """:meth:`foot_goals` at ``t`` for each of ``corrections`` (None: uncorrected), the splines
        evaluated once, and the uncorrected trunk goal (fused angles, rad)."""
        splines = self.plan.splines
        r_pos, r_rot = pose_matrix(splines["r_foot"](t))
        l_rel_pos, l_rel_rot = pose_matrix(splines["l_foot"](t))
        trunk = TrunkStabilizer.trunk_goal(r_rot)
        goals = []
        for correction in corrections:
            pos, rot = (r_pos, r_rot) if correction is None else TrunkStabilizer.apply(r_pos, r_rot, correction, trunk)
            goals.append({"left": (pos + rot @ l_rel_pos, rot @ l_rel_rot), "right": (pos, rot)})
        return goals, trunk

    def _leg_ik(self, feet: dict[str, tuple]) -> tuple[np.ndarray, bool]:
        """Leg angles (order of the legs' columns) for ``feet``; whether both goals were reachable."""
        legs, reachable = self.kin.legs_ik(*feet["left"], *feet["right"], check=False)  # goals from pose_matrix
        return np.array([legs[j] for j in self._leg_joints]), reachable

    def _leg_ik_near(self, feet: dict[str, tuple], q: np.ndarray, nominal: dict[str, tuple],
                     jacobians: list[np.ndarray]) -> np.ndarray:
        """Leg angles for ``feet``, goals close to ``nominal`` whose solution is ``q`` (both legs):
        per leg a first-order step from ``q`` on its sole Jacobian at ``q`` (``jacobians``), then
        Newton steps from there (:meth:`~upright.baselines.kinematics.Kinematics.leg_ik_near`, one
        or two suffice); the closed form where both legs share a joint (NAO's HipYawPitch)."""
        if self.kin.shared_hip:
            return self._leg_ik(feet)[0]
        n = len(q) // 2
        out = []
        for i, side in enumerate(SIDES):
            jac, start = jacobians[i], q[i * n:(i + 1) * n]
            guess = start + jac.T @ solve_spd(jac @ jac.T + LEG_DAMPING2,
                                                    pose_error(*feet[side], *nominal[side]))
            out.append(self.kin.leg_ik_near(side, *feet[side], guess)[0])
        return np.concatenate(out)

    def _solve_legs_at(self, trajectory: JointTrajectory, k: int) -> None:
        """Sample ``k`` of the legs: IK of the foot goals; from the squat on also the legs'
        derivatives with respect to the stabiliser's corrections (central differences of the IK)."""
        p, plan = self.params, self.plan
        t = trajectory.times[k]
        stabilised = p.stabilizing and t >= plan.stabilize_from
        h = SENSITIVITY_STEP
        corrections = [None] + ([h * c for c in _CORRECTION_STEPS] if stabilised else [])
        goals, trunk = self._foot_goal_sets(t, corrections)
        feet = goals[0]
        if k == 0 and not stabilised:  # the splines start at the measured poses
            q, reachable = trajectory.start.copy(), True
        else:
            q, reachable = self._leg_ik(feet)
        sensitivity, curvature = np.zeros((len(q), 2)), np.zeros((len(q), 2))
        if stabilised:
            n = len(q) // 2
            jacobians = [] if self.kin.shared_hip else [self.kin.leg_jacobian(side, q[i * n:(i + 1) * n])
                                                        for i, side in enumerate(SIDES)]
            for axis in range(2):
                plus, minus = (self._leg_ik_near(goals[1 + 2 * axis + j], q, feet, jacobians) for j in range(2))
                sensitivity[:, axis] = (plus - minus) / (2.0 * h)
                curvature[:, axis] = (plus - 2.0 * q + minus) / (h * h)
        trajectory.store(k, q, trunk[:2], sensitivity, curvature, reachable)

    def _solve_arms_at(self, trajectory: JointTrajectory, k: int) -> None:
        """Sample ``k`` of both arms: DLS IK of the hand positions, started from sample ``k − 1``."""
        p = self.params
        if k == 0:  # the splines start at the measured poses
            trajectory.store(k, trajectory.start)
            return
        t = trajectory.times[k]
        q = trajectory.joints[k - 1].copy()
        n = len(self._arm_index["left"])
        for i, side in enumerate(SIDES):
            q[i * n:(i + 1) * n] = self.kin.arm_ik(
                side, self.plan.splines[f"{side[0]}_hand"](t)[:3], q[i * n:(i + 1) * n], damping=p.arm_ik_damping,
                iterations=p.arm_ik_iterations, stall=p.arm_ik_stall)
        trajectory.store(k, q)

    def measured_poses(self, joint_pos: np.ndarray) -> dict[str, np.ndarray]:
        """The effectors' current pose vectors in the splines' frames, from joint angles."""
        kin = self.kin
        kin.set_joints(joint_pos)  # one forward kinematics for the four sites
        (l_pos, l_rot), (r_pos, r_rot) = (kin.site_pose(site) for site in self.robot.sole_sites)
        poses = {
            "r_foot": pose_vector(r_pos, r_rot),
            "l_foot": pose_vector(r_rot.T @ (l_pos - r_pos), r_rot.T @ l_rot),
        }
        for side in SIDES:
            h_pos, h_rot = kin.site_pose(kin.arms[side].hand_site)
            poses[f"{side[0]}_hand"] = pose_vector(h_pos - self._shoulder[side], h_rot)
        assert set(poses) == set(EFFECTORS)
        return poses

    # ------------------------------------------------------------------ control
    def set_tempo(self, factor: float) -> None:
        """Play the planned motion ``factor`` times as fast from the last control cycle on (1 = the
        plan's timing): the try's motion time, which the splines, the stabiliser's start and the
        nominal end read, advances by ``factor`` × the elapsed time over the cycle before the next
        :meth:`step`. The fall check, the limp phase and the stillness before finishing keep the
        real time. What a residual's ``tempo`` action entry sets
        (:class:`~upright.envs.residual.TempoResidual`, ``tempo_range``); ValueError for a factor that is
        not a finite number > 0."""
        self.clock.set_tempo(factor)

    def step(self, sensors: Sensors) -> np.ndarray:
        """Joint targets (rad, actuator order) for this control cycle."""
        self.clock.advance(sensors.time)
        self.targets = self._step(sensors)
        return self.targets

    def _step(self, sensors: Sensors) -> np.ndarray:
        p = self.params
        if self.status in ("waiting", "failed"):
            return self._limp(sensors)
        t = sensors.time - self._t0 + self.clock.gain  # the try's motion time (s)
        legs, arms = self.legs, self.arms
        stabilising = t >= self.plan.stabilize_from
        k, w = legs.weights(t)
        legs.advance(k)
        trunk_goal = legs.trunk_goal_at(k, w)
        if stabilising and p.fail_safe and self._fallen(trunk_goal, sensors):
            self.status = "waiting"
            self._limp_since = sensors.time
            return self._limp(sensors)
        correction = None
        if stabilising and p.stabilizing:
            correction = self._stabilizer.correction(trunk_goal, sensors.fused, self.robot.control_period)
            self.correction = np.array(correction)
        ka, wa = arms.weights(t)
        arms.advance(ka)
        if self._rows is None or self._rows[0] != (k, ka):
            self._rows = ((k, ka), self._interval_rows(k, ka))
        tilt = self._head_tilt if t < self.plan.head_zero_at else p.head_tilt_final
        coefficients = legs.coefficients(w, correction) + arms.coefficients(wa) + [1.0, tilt]
        if t >= self.plan.duration:
            self._update_finished(t - self.plan.duration)
        return np.dot(coefficients, self._rows[1])

    def _interval_rows(self, k: int, ka: int) -> np.ndarray:
        """The rows (22, actuators) that :meth:`_step`'s coefficients multiply: the legs' table rows
        of samples ``k``, ``k + 1`` and the arms' of ``ka``, ``ka + 1`` (:meth:`JointTrajectory.rows`)
        on the actuators, the constant joints, the head tilt's unit row."""
        return np.vstack((self.legs.rows(k) @ self._legs_to_act, self.arms.rows(ka) @ self._arms_to_act,
                          self._rest_row, self._tilt_row))

    def _fallen(self, trunk_goal: np.ndarray, sensors: Sensors) -> bool:
        """The trunk has been more than ``fall_angle`` off its goal fused pitch or roll for longer
        than ``fall_time`` (a dynamic push into the squat may pass through such errors briefly)."""
        fused = sensors.fused
        if max(abs(trunk_goal[0] - fused[0]), abs(trunk_goal[1] - fused[1])) <= self.params.fall_angle:
            self._off_goal_since = None
            return False
        if self._off_goal_since is None:
            self._off_goal_since = sensors.time
        return sensors.time - self._off_goal_since >= self.params.fall_time

    def _update_finished(self, overtime: float) -> None:
        """Finish when the trunk error stayed below ``stable_threshold`` for ``stable_duration``,
        when not stabilising, or ``stabilization_timeout`` after the nominal end."""
        p = self.params
        if self.status == "finished":
            return
        error = self._stabilizer.error
        if abs(error[0]) < p.stable_threshold and abs(error[1]) < p.stable_threshold:
            self._stable_for += self.robot.control_period
        else:
            self._stable_for = 0.0
        if not p.stabilizing or self._stable_for >= p.stable_duration or overtime >= p.stabilization_timeout:
            self.status = "finished"

    def _limp(self, sensors: Sensors) -> np.ndarray:
        """Targets = measured angles (no servo torque but damping); after the limp phase, when the
        robot rests, it moves into the safe pose (its lying keyframe) and the next try starts (or
        the controller gives up)."""
        p = self.params
        if self._safe_pose is not None:
            return self._to_safe_pose(sensors)
        waited = sensors.time - self._limp_since
        if self.status == "waiting" and waited >= p.limp_time and (
                waited >= p.max_limp_time or float(np.linalg.norm(sensors.gyro)) < p.rest_gyro):
            if self.tries >= p.max_tries:
                self.status = "failed"
            else:
                direction = lying_direction(sensors.fused, p.fall_angle, p.front_pitch)
                if p.safe_pose_time > 0 and direction != "rise":
                    pose = p.safe_pose_front if direction == "front" else p.safe_pose_back
                    start = np.asarray(sensors.joint_pos, dtype=float)[self._actuated]
                    self._safe_pose = (sensors.time, start, self.kin.keyframe_joints(pose)[self._actuated] - start)
                    return self._to_safe_pose(sensors)
                self._start(sensors)
                return self._step(sensors)
        return np.asarray(sensors.joint_pos, dtype=float)[self._actuated]  # coupled joints follow their driver

    def _to_safe_pose(self, sensors: Sensors) -> np.ndarray:
        """Rest-to-rest quintic in joint space from the pose the limp phase ended in to the safe
        pose, in ``safe_pose_time``; then the next try starts from there."""
        since, start, change = self._safe_pose
        x = (sensors.time - since) / self.params.safe_pose_time
        if x >= 1.0:
            self._safe_pose = None
            self._start(sensors)
            return self._step(sensors)
        return start + smoothstep5(max(x, 0.0)) * change


_TAU = np.linspace(0.0, 1.0, 2001)
_S = smoothstep5(_TAU)


def sample_times(splines: tuple[PoseSpline, ...], distance: float, angle: float, min_interval: float) -> np.ndarray:
    """Sample times (s) for the IK of the joints that ``splines`` (all with the same knot times)
    drive: every knot, and inside each segment the times at which its path parameter is ``i / n``,
    with ``n`` the smallest number of equal steps that moves no effector more than ``distance`` (m)
    or turns it more than ``angle`` (rad) per step, so the samples lie evenly along the path, dense
    where the poses change much; but no closer in time than ``min_interval`` (s; a control period:
    a segment shorter than that, a jump, gets no inner samples)."""
    if distance <= 0 or angle <= 0 or min_interval <= 0:
        raise ValueError(f"sample spacing must be > 0, got distance {distance!r}, angle {angle!r}, "
                         f"min_interval {min_interval!r}")
    knots = splines[0].times
    steps = np.zeros(len(knots) - 1)
    for spline in splines:
        change = np.abs(np.diff(spline.knots, axis=0))
        steps = np.maximum(steps, np.maximum(change[:, :3].max(axis=1) / distance, change[:, 3:].max(axis=1) / angle))
    steps = np.minimum(np.ceil(steps), np.floor(np.diff(knots) / min_interval))
    times = [knots]
    for a, b, n in zip(knots[:-1], knots[1:], steps.astype(int)):
        if n > 1:
            times.append(a + (b - a) * np.interp(np.arange(1, n) / n, _S, _TAU))
    return np.unique(np.concatenate(times))


class JointTrajectory:
    """A try's motion of some joints, solved lazily sample by sample.

    Samples at ``times`` (s from the motion's start, every knot among them) hold joint angles (rad,
    the driven joints in the caller's order) and, for the legs, the trunk goal (fused pitch, roll;
    rad), the joints' first and second derivatives with respect to the stabiliser's two corrections
    (shape (joints, 2) each; zero before the squat) and whether the IK reached the goals.
    ``solve(trajectory, k)`` fills sample ``k`` (:meth:`store`), in order; :meth:`advance` keeps the
    samples just ahead of the motion solved, so the IK cost is spread over the control cycles
    instead of paid when a try starts.

    Between two samples the joints are interpolated linearly in the path parameter of the current
    segment of their splines (``knots``; :func:`smoothstep5`): within a segment a pose spline moves
    on a straight line in pose space with that time law, so the interpolation keeps the splines'
    timing (rest at every knot) and only the path between samples is a chord. Times are clamped to
    the sampled range.
    """

    def __init__(self, times: np.ndarray, knots: np.ndarray, start: np.ndarray, solve) -> None:
        n, joints = len(times), len(start)
        if n < 2:
            raise ValueError(f"a JointTrajectory needs at least 2 sample times, got {n}")
        self.times, self.start, self._solve = times, start, solve
        # per sample: rows [angle, sensitivity (pitch, roll), curvature / 2 (pitch, roll)] per joint
        self._table = np.zeros((n, 5, joints))
        self.joints, self.trunk = self._table[:, 0], np.zeros((n, 2))
        self._trunk: list[tuple[float, float]] = [(0.0, 0.0)] * n  # floats for the control cycle
        self.reachable = np.ones(n, dtype=bool)
        #: Number of samples solved (samples 0 .. solved − 1).
        self.solved = 0
        # per interval: the knot segment [a, b] containing it, and the path parameter at its ends
        j = np.clip(np.searchsorted(knots, 0.5 * (times[:-1] + times[1:]), side="right") - 1, 0, len(knots) - 2)
        self._a, self._span = knots[j], np.maximum(knots[j + 1] - knots[j], 1e-12)
        s0 = smoothstep5(np.clip((times[:-1] - self._a) / self._span, 0.0, 1.0))
        ds = smoothstep5(np.clip((times[1:] - self._a) / self._span, 0.0, 1.0)) - s0
        # plain lists: a control cycle reads single entries (faster than numpy scalars)
        self._lists = (times.tolist(), self._a.tolist(), self._span.tolist(), s0.tolist(), ds.tolist())

    def store(self, k: int, joints: np.ndarray, trunk: np.ndarray | None = None,
              sensitivity: np.ndarray | None = None, curvature: np.ndarray | None = None,
              reachable: bool = True) -> None:
        """Record sample ``k`` (must be the next unsolved one); the optional parts stay zero/True."""
        if k != self.solved:
            raise ValueError(f"samples are solved in order: expected {self.solved}, got {k}")
        self.joints[k] = joints
        if trunk is not None:
            self.trunk[k] = trunk
            self._trunk[k] = (float(trunk[0]), float(trunk[1]))
        if sensitivity is not None:
            self._table[k, 1:3] = sensitivity.T
            self._table[k, 3:5] = 0.5 * curvature.T
        self.reachable[k] = reachable
        self.solved += 1

    def ensure(self, k: int) -> None:
        """Solve every sample up to ``k`` (clamped to the last)."""
        while self.solved <= min(k, len(self.times) - 1):
            self._solve(self, self.solved)

    def advance(self, k: int, lookahead: int = 1) -> None:
        """Before interpolating in interval ``k``: samples ``k`` and ``k + 1`` must be solved; if
        they already were, one more sample is solved ahead, up to ``k + 1 + lookahead``."""
        solved = self.solved
        self.ensure(k + 1)
        if self.solved == solved and self.solved <= min(k + 1 + lookahead, len(self.times) - 1):
            self._solve(self, self.solved)

    def weights(self, t: float) -> tuple[int, float]:
        """The interval ``k`` (samples ``k``, ``k + 1``) at ``t`` (s) and the weight of sample ``k + 1``."""
        times, a, span, s0, ds = self._lists
        k = bisect.bisect_right(times, t) - 1
        if k < 0:
            return 0, 0.0
        if k >= len(times) - 1:
            return len(times) - 2, 1.0
        if ds[k] <= 1e-12:
            return k, (t - times[k]) / (times[k + 1] - times[k])
        x = min(max((t - a[k]) / span[k], 0.0), 1.0)
        return k, (smoothstep5(x) - s0[k]) / ds[k]

    def joints_at(self, k: int, w: float, correction: np.ndarray | None = None) -> np.ndarray:
        """Joint angles (rad) at the weights of :meth:`weights` (a new array); with ``correction``
        (trunk correction: fused pitch, roll; rad) plus their change for it: second-order Taylor
        series per axis (the pitch-roll cross term is neglected), ``sensitivity @ c + ½ curvature
        @ c²`` at both samples, interpolated (one product with the sample table)."""
        return np.dot(self.coefficients(w, correction), self.rows(k))

    @staticmethod
    def coefficients(w: float, correction=None) -> list[float]:
        """The 10 weights of :meth:`rows` at the weight ``w`` of sample ``k + 1``: per sample
        ``(1, c_pitch, c_roll, c_pitch², c_roll²)`` times its interpolation weight (no
        ``correction``: the angles only)."""
        if correction is None:
            return [1.0 - w, 0.0, 0.0, 0.0, 0.0, w, 0.0, 0.0, 0.0, 0.0]
        c0, c1 = float(correction[0]), float(correction[1])
        terms = (1.0, c0, c1, c0 * c0, c1 * c1)
        return [(1.0 - w) * x for x in terms] + [w * x for x in terms]

    def rows(self, k: int) -> np.ndarray:
        """The table rows (10, joints) of samples ``k`` and ``k + 1``: per sample the angles, their
        sensitivities to the pitch and the roll correction and half their curvatures (rad)."""
        return self._table[k:k + 2].reshape(10, -1)

    def trunk_goal_at(self, k: int, w: float) -> tuple[float, float]:
        """The trunk's goal fused (pitch, roll) (rad) at the weights of :meth:`weights`."""
        (a0, a1), (b0, b1) = self._trunk[k], self._trunk[k + 1]
        return a0 + w * (b0 - a0), a1 + w * (b1 - a1)


def _unstabilized_params(robot: str) -> SplineParams:
    """Defaults of the ablation ``spline_nostab``: the spline parameters with the stabiliser off."""
    return SplineParams.load(robot).with_overrides({"stabilizing": False})


register_controller("spline", SplineStandUp, SplineParams.load, task="getup")
register_controller("spline_nostab", SplineStandUp, _unstabilized_params, task="getup",
                    family="spline")
