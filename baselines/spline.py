"""Baseline ``spline``: the Bit-Bots quintic-spline stand-up with fused-angle stabiliser and fail-safe.

Stelter 2020 (thesis, chapter 4) and Stelter et al., ICAR 2021 (section III); every number is in
reference/controllers.md part (a) and ``baselines/data/spline_<robot>.yaml``. Per control cycle:

1. the four pose splines of the current :class:`~upright.baselines.spline_motion.Plan` give the goal
   poses of the hands (relative to the shoulders), of the right sole (torso frame) and of the left
   sole (right-sole frame);
2. from the squat on, :class:`~upright.baselines.stabilizer.TrunkStabilizer` corrects the right-foot
   goal so the trunk reaches its goal fused pitch and roll (switch ``params.stabilizing``);
3. the left-foot goal is re-expressed in the torso frame, the legs get analytic IK (NAO: one shared
   HipYawPitch), the arms damped-least-squares IK on the hand positions (3-DoF arms cannot reach a
   full 6-D pose; the thesis allows approximate arm solutions);
4. the head tilts out of the way (``head_tilt_front``/``back``) until the head-zero instant.

Fail-safe (our addition; the thesis' discussion names its absence as the system's largest issue):
from the squat on, and while standing afterwards, a trunk error (goal − measured fused pitch or
roll) above ``fall_angle`` means a fall: the controller stops the motion, goes limp (targets =
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
        self._joints = np.zeros(len(names))
        self._t0 = 0.0
        self._limp_since: float | None = None
        self._stable_for = 0.0
        #: Whether the last leg IK reached both foot goals exactly.
        self.reachable = True

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
        """Plan a new try from the measured poses."""
        self.tries += 1
        self._joints = np.array(sensors.joint_pos, dtype=float)
        self._t0 = sensors.time
        self._limp_since = None
        self._stable_for = 0.0
        self._stabilizer.reset()
        direction = lying_direction(sensors.fused, self.params.fall_angle)
        self.plan = plan_motion(direction, self.params, self.measured_poses(sensors.joint_pos))
        self.status = "working"

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
        plan = self.plan
        goals = plan.poses(t)
        r_pos, r_rot = pose_matrix(goals["r_foot"])
        stabilising = t >= plan.stabilize_from
        if stabilising and p.fail_safe and self._fallen(r_rot, sensors):
            self.status = "waiting"
            self._limp_since = sensors.time
            return self._limp(sensors)
        if stabilising and p.stabilizing:
            r_pos, r_rot = self._stabilizer.correct(r_pos, r_rot, sensors.fused, self.robot.control_period)
        l_rel_pos, l_rel_rot = pose_matrix(goals["l_foot"])
        l_pos, l_rot = r_pos + r_rot @ l_rel_pos, r_rot @ l_rel_rot
        q = self._joints
        legs, self.reachable = self.kin.legs_ik(l_pos, l_rot, r_pos, r_rot)
        q[self._leg_index] = [legs[j] for j in self._leg_joints]
        for side in SIDES:
            idx = self._arm_index[side]
            q[idx] = self.kin.arm_ik(side, goals[f"{side[0]}_hand"][:3], q[idx], damping=p.arm_ik_damping)
        q[self._pan] = 0.0
        if t < plan.head_zero_at:
            q[self._tilt] = {"front": p.head_tilt_front, "back": p.head_tilt_back}.get(plan.direction,
                                                                                        p.head_tilt_final)
        else:
            q[self._tilt] = p.head_tilt_final
        if t >= plan.duration:
            self._update_finished(t - plan.duration)
        return self.kin.targets_from_joints(q)

    def _fallen(self, foot_rot: np.ndarray, sensors: Sensors) -> bool:
        """The trunk is more than ``fall_angle`` off its goal in fused pitch or roll."""
        goal = TrunkStabilizer.trunk_goal(foot_rot)
        error = np.abs(goal[:2] - sensors.fused[:2])
        return bool(sensors.fused[3] < 0 or error.max() > self.params.fall_angle)

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


def _unstabilized(robot: RobotSpec) -> SplineStandUp:
    """The ablation ``spline_nostab``: the same controller with the stabiliser switched off."""
    return SplineStandUp(robot, load_params(robot.name).with_(stabilizing=False))


def _register() -> None:
    from upright.baselines import register_controller

    register_controller("spline", SplineStandUp, robots=("wolfgang", "nao"), task="getup")
    register_controller("spline_nostab", _unstabilized, robots=("wolfgang", "nao"), task="getup")


_register()
