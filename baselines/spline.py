"""Baseline ``spline``: the Bit-Bots quintic-spline stand-up with fused-angle stabiliser and fail-safe.

Stelter 2020 (thesis, chapter 4) and Stelter et al., ICAR 2021 (section III); every number is in
reference/controllers.md part (a) and ``baselines/data/spline_<robot>.yaml``.

1. The four pose splines of a :class:`~upright.baselines.spline_motion.Plan` give the goal poses of
   the hands (relative to the shoulders), of the right sole (torso frame) and of the left sole
   (right-sole frame), starting from the measured poses.
2. The left-foot goal is re-expressed in the torso frame; the legs get analytic IK (NAO: one shared
   HipYawPitch), the arms damped-least-squares IK on the hand positions (3-DoF arms cannot reach a
   full 6-D pose; the thesis allows approximate arm solutions). The head tilts out of the way
   (``head_tilt_front``/``back``) until the head-zero instant.
3. From the squat on, :class:`~upright.baselines.stabilizer.TrunkStabilizer` turns the trunk goal by
   PID corrections of its fused pitch and roll (switch ``params.stabilizing``), which changes the
   right-foot goal and with it both legs.

Computation: steps 1-2 are solved when a try starts, on a grid of ``ik_grid_period`` plus every
knot time (a joint trajectory, linearly interpolated per control cycle); for the stabilised part the
same solve also gives the legs' first and second derivatives with respect to the two corrections
(central differences of the IK), so a control cycle costs an interpolation, the PID and a
second-order Taylor step instead of IK calls.
The stabiliser keeps running after the motion ends (the end pose is held stabilised).

Fail-safe (our addition; the thesis' discussion names its absence as the system's largest issue):
from the squat on, and while standing afterwards, a trunk error (goal − measured fused pitch or
roll) above ``fall_angle`` for ``fall_time`` means a fall: the controller stops the motion, goes limp (targets =
measured angles, status ``waiting``) until the robot rests, and starts again in the direction it
now lies in (fused pitch > 0: ``front``, else ``back``), at most ``max_tries`` times
(then status ``failed``). Status: ``working`` → ``finished`` (end pose held, still stabilised).

Robot-side only: :class:`~upright.envs.sensors.Sensors` and the robot's own model
(:class:`~upright.baselines.kinematics.Kinematics`).
"""

from __future__ import annotations

import numpy as np

from upright.baselines.kinematics import Kinematics
from upright.baselines.spline_motion import EFFECTORS, Plan, plan_motion, pose_matrix, pose_vector
from upright.baselines.spline_params import SplineParams, load_params
from upright.baselines.stabilizer import TrunkStabilizer
from upright.envs.robots import RobotSpec
from upright.envs.sensors import Sensors

SIDES = ("left", "right")
#: Step (rad) of the finite differences that give the legs' sensitivity to trunk corrections.
SENSITIVITY_STEP = 0.01


def lying_direction(fused: np.ndarray, fall_angle: float) -> str:
    """Which motion gets the robot up from the measured fused angles ``(pitch, roll, yaw, hemi)``:
    ``rise`` when the trunk is within ``fall_angle`` of upright, else ``front`` for a trunk pitched
    forward (prone), ``back`` otherwise."""
    pitch, roll, _, hemisphere = fused
    if hemisphere > 0 and abs(pitch) < fall_angle and abs(roll) < fall_angle:
        return "rise"
    return "front" if pitch > 0 else "back"


class SplineStandUp:
    """The spline stand-up controller for one robot (see the module docstring).

    Args:
        robot: the robot's description; its MJCF is loaded into a private kinematic model.
        params: the parameters; default: ``baselines/data/spline_<robot>.yaml``.
    """

    def __init__(self, robot: RobotSpec, params: SplineParams | None = None) -> None:
        self.robot = robot
        self.params = params if params is not None else load_params(robot.name)
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
        self.joint_goal = np.zeros(len(names))
        self.trajectory: JointTrajectory | None = None
        self._t0 = 0.0
        self._limp_since: float | None = None
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
        self._start(sensors)

    def _start(self, sensors: Sensors) -> None:
        """Plan a new try from the measured poses and precompute its nominal joint trajectory."""
        self.tries += 1
        self._t0 = sensors.time
        self._limp_since = None
        self._stable_for = 0.0
        self._off_goal_since: float | None = None
        self._stabilizer.reset()
        self.correction = np.zeros(2)
        direction = lying_direction(sensors.fused, self.params.fall_angle)
        self.plan = plan_motion(direction, self.params, self.measured_poses(sensors.joint_pos))
        self.trajectory = self._precompute(self.plan, np.array(sensors.joint_pos, dtype=float))
        self.joint_goal = self.trajectory.joints[0].copy()
        self.status = "working"

    def foot_goals(self, t: float, correction: np.ndarray | None = None) -> dict[str, tuple]:
        """Both soles' goal poses ``side -> (pos, rot)`` in the torso frame at time ``t`` (s) of the
        current plan; with ``correction`` (fused pitch, roll; rad) the trunk goal turned by it."""
        goals = self.plan.poses(t)
        r_pos, r_rot = pose_matrix(goals["r_foot"])
        if correction is not None:
            r_pos, r_rot = TrunkStabilizer.apply(r_pos, r_rot, correction)
        l_rel_pos, l_rel_rot = pose_matrix(goals["l_foot"])
        return {"left": (r_pos + r_rot @ l_rel_pos, r_rot @ l_rel_rot), "right": (r_pos, r_rot)}

    def _solve_legs(self, q: np.ndarray, feet: dict[str, tuple]) -> bool:
        """Write the leg IK solution for ``feet`` into ``q``; whether both goals were reachable."""
        legs, reachable = self.kin.legs_ik(*feet["left"], *feet["right"])
        q[self._leg_index] = [legs[j] for j in self._leg_joints]
        return reachable

    def _precompute(self, plan: Plan, q: np.ndarray) -> "JointTrajectory":
        """The motion in joint space: IK of the spline goals on a grid of ``ik_grid_period`` (plus
        every knot time), arms seeded with the previous grid point; from the squat on also the
        legs' derivatives with respect to the stabiliser's corrections (central differences)."""
        p = self.params
        knots = np.concatenate([spline.times for spline in plan.splines.values()])
        times = np.union1d(np.arange(0.0, plan.duration, p.ik_grid_period), knots)
        joints, trunk = np.empty((len(times), len(q))), np.empty((len(times), 2))
        sensitivity, curvature = np.zeros((len(times), len(q), 2)), np.zeros((len(times), len(q), 2))
        reachable = np.empty(len(times), dtype=bool)
        head = {"front": p.head_tilt_front, "back": p.head_tilt_back}.get(plan.direction, p.head_tilt_final)
        q = q.copy()
        for k, t in enumerate(times):
            goals = plan.poses(t)
            feet = self.foot_goals(t)
            reachable[k] = self._solve_legs(q, feet)
            for side in SIDES:
                idx = self._arm_index[side]
                q[idx] = self.kin.arm_ik(side, goals[f"{side[0]}_hand"][:3], q[idx], damping=p.arm_ik_damping)
            q[self._pan] = 0.0
            q[self._tilt] = head if t < plan.head_zero_at else p.head_tilt_final
            joints[k] = q
            trunk[k] = TrunkStabilizer.trunk_goal(feet["right"][1])[:2]
            if p.stabilizing and t >= plan.stabilize_from:
                h = SENSITIVITY_STEP
                for axis in range(2):
                    plus, minus = q.copy(), q.copy()
                    self._solve_legs(plus, self.foot_goals(t, h * np.eye(2)[axis]))
                    self._solve_legs(minus, self.foot_goals(t, -h * np.eye(2)[axis]))
                    sensitivity[k, :, axis] = (plus - minus) / (2.0 * h)
                    curvature[k, :, axis] = (plus - 2.0 * q + minus) / (h * h)
        return JointTrajectory(times, joints, trunk, sensitivity, curvature, reachable)

    def measured_poses(self, joint_pos: np.ndarray) -> dict[str, np.ndarray]:
        """The effectors' current pose vectors in the splines' frames, from joint angles."""
        r_pos, r_rot = self.kin.foot_pose("right", joint_pos)
        l_pos, l_rot = self.kin.foot_pose("left", joint_pos)
        poses = {
            "r_foot": pose_vector(r_pos, r_rot),
            "l_foot": pose_vector(r_rot.T @ (l_pos - r_pos), r_rot.T @ l_rot),
        }
        for side in SIDES:
            h_pos, h_rot = self.kin.hand_pose(side, joint_pos)
            poses[f"{side[0]}_hand"] = pose_vector(h_pos - self._shoulder[side], h_rot)
        assert set(poses) == set(EFFECTORS)
        return poses

    # ------------------------------------------------------------------ control
    def step(self, sensors: Sensors) -> np.ndarray:
        """Joint targets (rad, actuator order) for this control cycle."""
        p = self.params
        if self.status in ("waiting", "failed"):
            return self._limp(sensors)
        t = sensors.time - self._t0
        trajectory = self.trajectory
        stabilising = t >= self.plan.stabilize_from
        k, w = trajectory.weights(t)
        trunk_goal = trajectory.trunk_goal_at(k, w)
        if stabilising and p.fail_safe and self._fallen(trunk_goal, sensors):
            self.status = "waiting"
            self._limp_since = sensors.time
            return self._limp(sensors)
        q = trajectory.joints_at(k, w)
        if stabilising and p.stabilizing:
            self.correction = self._stabilizer.correction(trunk_goal, sensors.fused, self.robot.control_period)
            q += trajectory.correction_change(k, w, self.correction)
        self.joint_goal = q
        if t >= self.plan.duration:
            self._update_finished(t - self.plan.duration)
        return self.kin.targets_from_joints(q)

    def _fallen(self, trunk_goal: np.ndarray, sensors: Sensors) -> bool:
        """The trunk has been more than ``fall_angle`` off its goal fused pitch or roll for longer
        than ``fall_time`` (a dynamic push into the squat may pass through such errors briefly)."""
        if np.abs(trunk_goal - sensors.fused[:2]).max() <= self.params.fall_angle:
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
        if np.all(np.abs(self._stabilizer.error) < p.stable_threshold):
            self._stable_for += self.robot.control_period
        else:
            self._stable_for = 0.0
        if not p.stabilizing or self._stable_for >= p.stable_duration or overtime >= p.stabilization_timeout:
            self.status = "finished"

    def _limp(self, sensors: Sensors) -> np.ndarray:
        """Targets = measured angles (no servo torque but damping); after the limp phase, when the
        robot rests, the next try starts (or the controller gives up)."""
        p = self.params
        waited = sensors.time - self._limp_since
        resting = float(np.linalg.norm(sensors.gyro)) < p.rest_gyro
        if self.status == "waiting" and waited >= p.limp_time and (resting or waited >= p.max_limp_time):
            if self.tries >= p.max_tries:
                self.status = "failed"
            else:
                self._start(sensors)
                return self.step(sensors)
        return self.kin.targets_from_joints(np.asarray(sensors.joint_pos, dtype=float))


class JointTrajectory:
    """A try's precomputed motion sampled at ``times`` (s from the motion's start): joint angles
    (rad, robot joint order), the trunk goal (fused pitch, roll; rad), the joints' first and second
    derivatives with respect to the stabiliser's two corrections (central differences of the IK;
    shape (n, joints, 2) each) and whether the leg IK reached the goals; linearly interpolated,
    clamped to the sampled range."""

    def __init__(self, times: np.ndarray, joints: np.ndarray, trunk: np.ndarray, sensitivity: np.ndarray,
                 curvature: np.ndarray, reachable: np.ndarray) -> None:
        self.times, self.joints, self.trunk = times, joints, trunk
        self.sensitivity, self.curvature, self.reachable = sensitivity, curvature, reachable

    def weights(self, t: float) -> tuple[int, float]:
        """The sample ``k`` at or before ``t`` (s) and the weight ``w`` of sample ``k + 1``."""
        n = len(self.times)
        if n == 1:
            return 0, 0.0
        k = int(np.searchsorted(self.times, t, side="right")) - 1
        if k < 0:
            return 0, 0.0
        if k >= n - 1:
            return n - 2, 1.0
        return k, (t - self.times[k]) / (self.times[k + 1] - self.times[k])

    def _lerp(self, samples: np.ndarray, k: int, w: float) -> np.ndarray:
        if len(self.times) == 1:
            return samples[0].copy()
        return (1.0 - w) * samples[k] + w * samples[k + 1]

    def joints_at(self, k: int, w: float) -> np.ndarray:
        """Joint angles (rad) at the weights of :meth:`weights` (a new array)."""
        return self._lerp(self.joints, k, w)

    def __call__(self, t: float) -> np.ndarray:
        """Joint angles (rad) at ``t`` (a new array)."""
        return self.joints_at(*self.weights(t))

    def correction_change(self, k: int, w: float, correction: np.ndarray) -> np.ndarray:
        """The joint angles' change (rad) for a trunk correction (fused pitch, roll; rad) at the
        weights of :meth:`weights`: second-order Taylor series per axis (the pitch-roll cross term
        is neglected)."""
        first = self._lerp(self.sensitivity, k, w)
        second = self._lerp(self.curvature, k, w)
        return first @ correction + 0.5 * (second @ (correction * correction))

    def trunk_goal_at(self, k: int, w: float) -> np.ndarray:
        """The trunk's goal fused (pitch, roll) (rad) at the weights of :meth:`weights`."""
        return self._lerp(self.trunk, k, w)


def _unstabilized(robot: RobotSpec) -> SplineStandUp:
    """The ablation ``spline_nostab``: the same controller with the stabiliser switched off."""
    return SplineStandUp(robot, load_params(robot.name).with_(stabilizing=False))


def _register() -> None:
    from upright.baselines import register_controller

    register_controller("spline", SplineStandUp, robots=("wolfgang", "nao"), task="getup")
    register_controller("spline_nostab", _unstabilized, robots=("wolfgang", "nao"), task="getup")


_register()
