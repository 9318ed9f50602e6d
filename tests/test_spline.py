"""The spline stand-up: splines, stabiliser, fail-safe, IK goals and real stand-ups (Wolfgang)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from upright.baselines import baseline_entry, make_controller
from upright.baselines.spline.controller import SplineStandUp, lying_direction
from upright.baselines.spline.motion import (DIRECTIONS, EFFECTORS, MIN_SEGMENT, PoseSpline, plan_motion, pose_matrix,
                                             pose_vector)
from upright.baselines.spline.params import SplineParams
from upright.baselines.spline.stabilizer import TrunkStabilizer, fused_to_rotation, rotation_fused_angles
from upright.envs.conditions import get_conditions
from upright.envs.robots import get_robot
from upright.envs.sensors import Sensors
from upright.eval.runner import resolve_policy, run_episodes


# ---------------------------------------------------------------- splines
def test_pose_matrix_is_fixed_axis_roll_pitch_yaw_and_inverts_pose_vector() -> None:
    rng = np.random.default_rng(3)
    for vec in rng.uniform(-1.5, 1.5, (20, 6)):
        pos, rot = pose_matrix(vec)
        np.testing.assert_allclose(rot, Rotation.from_euler("xyz", vec[3:]).as_matrix(), atol=1e-14)
        np.testing.assert_allclose(pose_vector(pos, rot), vec, atol=1e-12)


def test_pose_spline_rests_at_knots_and_is_c2() -> None:
    rng = np.random.default_rng(0)
    times = np.cumsum(rng.uniform(0.1, 0.5, 6)).tolist()
    poses = [np.concatenate([rng.uniform(-0.3, 0.3, 3), rng.uniform(-1, 1, 3)]) for _ in times]
    spline = PoseSpline(times, poses)
    for t, pose in zip(times, poses):
        np.testing.assert_allclose(spline(t), pose, atol=1e-9)
        np.testing.assert_allclose(spline.velocity(t), 0.0, atol=1e-7)
        np.testing.assert_allclose(spline.acceleration(t), 0.0, atol=1e-5)
    eps = 1e-8
    for t in times[1:-1]:  # value, velocity and acceleration continuous across interior knots
        np.testing.assert_allclose(spline(t - eps), spline(t + eps), atol=1e-7)
        np.testing.assert_allclose(spline.velocity(t - eps), spline.velocity(t + eps), atol=1e-5)
        np.testing.assert_allclose(spline.acceleration(t - eps), spline.acceleration(t + eps), atol=1e-3)
    # a rest-to-rest quintic: halfway between two knots it is exactly at the mean
    mid = 0.5 * (times[1] + times[2])
    np.testing.assert_allclose(spline(mid), 0.5 * (poses[1] + poses[2]), atol=1e-9)
    np.testing.assert_allclose(spline(times[0] - 1.0), poses[0])  # clamped
    for t in rng.uniform(times[0], times[-1], 50):  # the closed-form evaluation is the BPoly's quintic
        np.testing.assert_allclose(spline(t), spline._poly(t), atol=1e-12)
    np.testing.assert_allclose(spline(times[-1] + 1.0), poses[-1])


def test_zero_duration_phase_jumps_and_angles_unwrap() -> None:
    a, b = np.zeros(6), np.array([0.1, 0, 0, 0, 0, 0])
    spline = PoseSpline([0.0, 1.0, 1.0], [a, a, b])
    assert spline(1.0 - 1e-3)[0] == pytest.approx(0.0, abs=1e-9)
    assert spline(1.0 + MIN_SEGMENT)[0] == pytest.approx(0.1)
    turn = PoseSpline([0.0, 1.0], [np.array([0, 0, 0, 0, 0, 3.0]), np.array([0, 0, 0, 0, 0, -3.0])])
    assert turn(0.5)[5] == pytest.approx(np.pi)  # the short way round, through ±π
    with pytest.raises(ValueError, match="must not decrease"):
        PoseSpline([1.0, 0.5], [a, b])


@pytest.mark.parametrize("robot", baseline_entry("spline").robots)
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_plan_starts_at_measured_poses_and_ends_in_walkready(robot: str, direction: str) -> None:
    p = SplineParams.load(robot)
    rng = np.random.default_rng(1)
    start = {name: np.concatenate([rng.uniform(-0.2, 0.2, 3), rng.uniform(-0.5, 0.5, 3)]) for name in EFFECTORS}
    plan = plan_motion(direction, p, start)
    for name in EFFECTORS:
        np.testing.assert_allclose(plan.splines[name](0.0), start[name])
    end = plan.poses(plan.duration)
    np.testing.assert_allclose(end["r_foot"], [-p.trunk_x_final, -p.foot_distance / 2, -p.trunk_height,
                                               0, -p.trunk_pitch, 0], atol=1e-9)
    np.testing.assert_allclose(end["l_foot"], [0, p.foot_distance, 0, 0, 0, 0], atol=1e-9)
    np.testing.assert_allclose(end["l_hand"][:3], [p.hand_walkready_x, p.hand_walkready_y, p.hand_walkready_height])
    np.testing.assert_allclose(end["r_hand"][:3], [p.hand_walkready_x, -p.hand_walkready_y, p.hand_walkready_height])
    assert 0.0 <= plan.stabilize_from <= plan.head_zero_at <= plan.duration
    assert plan.duration == pytest.approx(plan.stabilize_from + {"front": p.wait_in_squat_front,
                                                                 "back": p.wait_in_squat_back,
                                                                 "rise": 0.0}[direction] + p.rise_time)
    with pytest.raises(ValueError, match="sideways"):
        plan_motion("sideways", p, start)


def test_params_are_validated() -> None:
    with pytest.raises(ValueError, match="no SplineParams for robot 'asimo'"):
        SplineParams.load("asimo")
    with pytest.raises(ValueError, match="unknown key 'stabilising'; valid keys: .*stabilizing"):
        SplineParams.load("wolfgang").with_overrides({"stabilising": False})
    nao = SplineParams.load("nao")
    assert nao.max_leg_angle == pytest.approx(np.deg2rad(51.6))  # degrees in the file, rad in code


# ---------------------------------------------------------------- stabiliser
def test_fused_angle_round_trip() -> None:
    for i in range(200):
        rot = Rotation.random(random_state=i).as_matrix()
        np.testing.assert_allclose(fused_to_rotation(*rotation_fused_angles(rot)), rot, atol=1e-9)


def _trunk_pitch_roll(foot_rot: np.ndarray) -> np.ndarray:
    return TrunkStabilizer.trunk_goal(foot_rot)[:2]


@pytest.mark.parametrize("axis", [0, 1])
def test_stabilizer_turns_the_trunk_goal_against_the_error_by_the_gain(axis: int) -> None:
    p_gain = (0.42, 0.76)[axis]
    stab = TrunkStabilizer((0.42, 0.0, 0.0), (0.76, 0.0, 0.0), i_clamp=0.25, max_correction=0.5)
    foot_pos, foot_rot = np.array([0.0, -0.1, -0.38]), np.eye(3)  # trunk goal: upright
    measured = np.array([0.0, 0.0, 0.0, 1.0])
    pos, rot = stab.correct(foot_pos, foot_rot, measured, 0.01)
    np.testing.assert_allclose(pos, foot_pos, atol=1e-12)  # no error, no correction
    np.testing.assert_allclose(rot, foot_rot, atol=1e-12)
    measured[axis] = 0.1  # leaning forward (pitch) or to the right (roll) by 0.1 rad
    pos, rot = stab.correct(foot_pos, foot_rot, measured, 0.01)
    corrected = _trunk_pitch_roll(rot)
    assert corrected[axis] == pytest.approx(-p_gain * 0.1, abs=1e-9)  # goal turns the other way
    assert corrected[1 - axis] == pytest.approx(0.0, abs=1e-9)
    assert np.linalg.norm(pos) == pytest.approx(np.linalg.norm(foot_pos))  # the trunk turns about its origin
    assert stab.error[axis] == pytest.approx(-0.1)


def test_stabilizer_derivative_and_clamp() -> None:
    stab = TrunkStabilizer((0.0, 0.0, 0.02), (0.0, 0.0, 0.0), i_clamp=0.25, max_correction=0.05)
    foot = (np.array([0.0, -0.1, -0.38]), np.eye(3))
    stab.correct(*foot, np.array([0.0, 0.0, 0.0, 1.0]), 0.01)
    _, rot = stab.correct(*foot, np.array([0.01, 0.0, 0.0, 1.0]), 0.01)  # error rate -1 rad/s
    assert _trunk_pitch_roll(rot)[0] == pytest.approx(-0.02, abs=1e-9)
    _, rot = stab.correct(*foot, np.array([0.5, 0.0, 0.0, 1.0]), 0.01)  # huge rate: clamped
    assert _trunk_pitch_roll(rot)[0] == pytest.approx(-0.05, abs=1e-9)


# ---------------------------------------------------------------- fail-safe
def _sensors(robot, t: float, joint_pos: np.ndarray, pitch: float, gyro: float = 0.0) -> Sensors:
    n = len(robot.joint_names)
    quat = Rotation.from_euler("y", pitch).as_quat()[[3, 0, 1, 2]]
    return Sensors(time=t, joint_pos=joint_pos, joint_vel=np.zeros(n), joint_target=np.zeros(len(robot.actuator_names)),
                   gyro=np.array([0.0, gyro, 0.0]), accel=np.zeros(3), quat=quat,
                   fused=np.array([pitch, 0.0, 0.0, 1.0]), foot_pressure=np.zeros(8))


def test_fail_safe_goes_limp_and_retries_in_the_new_direction() -> None:
    robot = get_robot("wolfgang")
    c = SplineStandUp(robot)
    q = np.zeros(len(robot.joint_names))
    c.reset(_sensors(robot, 0.0, q, 1.5), np.random.default_rng(0))
    assert (c.plan.direction, c.status, c.tries) == ("front", "working", 1)
    t = c.plan.stabilize_from - 0.02
    c.step(_sensors(robot, t, q, 1.5))  # still lying, but not yet checked
    assert c.status == "working"
    q_fallen = np.full(len(robot.joint_names), 0.1)
    c.step(_sensors(robot, c.plan.stabilize_from + 0.01, q_fallen, 1.5))  # squat not reached ...
    assert c.status == "working"  # ... but a dynamic push may pass such errors for fall_time
    t_fall = c.plan.stabilize_from + 0.01 + c.params.fall_time
    targets = c.step(_sensors(robot, t_fall, q_fallen, 1.5))
    assert c.status == "waiting"
    np.testing.assert_allclose(targets, q_fallen)  # limp: targets follow the measured angles
    c.step(_sensors(robot, t_fall + c.params.limp_time / 2, q_fallen, -1.5))
    assert c.status == "waiting"  # limp phase not over
    c.step(_sensors(robot, t_fall + c.params.limp_time + 0.01, q_fallen, -1.5, gyro=1.0))
    assert c.status == "waiting"  # still moving
    t_rest = t_fall + c.params.limp_time + 0.02
    targets = c.step(_sensors(robot, t_rest, q_fallen, -1.5))  # at rest: into the safe pose ...
    assert (c.status, c.tries) == ("waiting", 1)
    np.testing.assert_allclose(targets, q_fallen)
    supine = c.kin.keyframe_joints(c.params.safe_pose_back)
    targets = c.step(_sensors(robot, t_rest + c.params.safe_pose_time / 2, q_fallen, -1.5))
    np.testing.assert_allclose(targets, c.kin.targets_from_joints(0.5 * (q_fallen + supine)))  # halfway
    c.step(_sensors(robot, t_rest + c.params.safe_pose_time, supine, -1.5))  # ... then the next try
    assert (c.plan.direction, c.status, c.tries) == ("back", "working", 2)
    off = SplineStandUp(robot, c.params.with_overrides({"safe_pose_time": 0.0}))  # no safe pose: at once
    off.reset(_sensors(robot, 0.0, q, 1.5), np.random.default_rng(0))
    for t, pitch in ((off.plan.stabilize_from + 0.01, 1.5), (off.plan.stabilize_from + 0.01 + off.params.fall_time, 1.5)):
        off.step(_sensors(robot, t, q_fallen, pitch))
    off.step(_sensors(robot, t + off.params.limp_time + 0.01, q_fallen, -1.5))
    assert (off.plan.direction, off.status, off.tries) == ("back", "working", 2)


def test_plan_slowdown_stretches_only_the_phases_before_the_squat() -> None:
    p = SplineParams.load("wolfgang")
    start = {name: np.zeros(6) for name in EFFECTORS}
    for direction in ("front", "back"):
        tuned, slow = plan_motion(direction, p, start), plan_motion(direction, p, start, 1.7)
        squat = {"front": p.time_to_squat, "back": p.time_full_squat_legs}[direction]  # the squat keeps its time
        assert slow.stabilize_from - squat == pytest.approx(1.7 * (tuned.stabilize_from - squat))
        assert slow.duration - slow.stabilize_from == pytest.approx(tuned.duration - tuned.stabilize_from)
        np.testing.assert_allclose(slow.poses(slow.stabilize_from)["r_foot"], tuned.poses(tuned.stabilize_from)["r_foot"])
    with pytest.raises(ValueError, match="slowdown must be >= 1, got 0.5"):
        plan_motion("front", p, start, 0.5)


@pytest.mark.parametrize("slowdown", [1.0, 1.7])
def test_a_retry_after_a_fall_plays_the_phases_before_the_squat_slower(slowdown: float) -> None:
    robot = get_robot("wolfgang")
    c = SplineStandUp(robot, SplineParams.load("wolfgang").with_overrides(
        {"safe_pose_time": 0.0, "retry_slowdown_front": slowdown}))
    q = np.zeros(len(robot.joint_names))
    c.reset(_sensors(robot, 0.0, q, 1.5), np.random.default_rng(0))
    first = c.plan
    t = first.stabilize_from + 0.01
    for dt in (0.0, c.params.fall_time, c.params.fall_time + c.params.limp_time + 0.01):
        c.step(_sensors(robot, t + dt, q, 1.5))  # never leaves the floor: a fall, limp, then a retry
    assert (c.plan.direction, c.status, c.tries) == ("front", "working", 2)
    squat = c.params.time_to_squat
    assert c.plan.stabilize_from - squat == pytest.approx(slowdown * (first.stabilize_from - squat))
    assert c.plan.duration - c.plan.stabilize_from == pytest.approx(first.duration - first.stabilize_from)


@pytest.mark.parametrize("slowdown", [None, 1.0])
def test_wolfgang_retries_slower_and_stands_up_with_a_loaded_torso(slowdown: float | None) -> None:
    """0.5 kg on the torso: the first front try at the tuned timing falls (the feet are not under
    the body when the arms push); Wolfgang's retry, slower before the squat (its default), stands
    up, where retries at the tuned timing (1.0) fall the same way each time."""
    conditions = get_conditions("lab").changed({"torso_mass": [0.5, 0.5]})
    policy = resolve_policy("spline", {} if slowdown is None else {"retry_slowdown_front": slowdown})
    record = run_episodes("upright/WolfgangGetUp-v0", policy, 1, progress=False, env_kwargs={
        "start": "prone", "conditions": conditions, "max_episode_seconds": 14.0}).records[0]
    assert record["falls"] >= 1 and record["stood_up"] == (slowdown is None), record


def test_fail_safe_gives_up_after_max_tries_and_can_be_switched_off() -> None:
    robot = get_robot("wolfgang")
    c = SplineStandUp(robot, SplineParams.load("wolfgang").with_overrides({"max_tries": 1, "limp_time": 0.0}))
    q = np.zeros(len(robot.joint_names))
    c.reset(_sensors(robot, 0.0, q, 1.5), np.random.default_rng(0))
    t = c.plan.stabilize_from + 0.01
    c.step(_sensors(robot, t, q, 1.5))
    c.step(_sensors(robot, t + c.params.fall_time, q, 1.5))
    c.step(_sensors(robot, t + c.params.fall_time + 0.01, q, 1.5))
    assert c.status == "failed"
    off = SplineStandUp(robot, SplineParams.load("wolfgang").with_overrides({"fail_safe": False}))
    off.reset(_sensors(robot, 0.0, q, 1.5), np.random.default_rng(0))
    t = off.plan.stabilize_from + 0.01
    off.step(_sensors(robot, t, q, 1.5))
    off.step(_sensors(robot, t + off.params.fall_time, q, 1.5))
    assert off.status == "working"


def test_lying_direction() -> None:
    assert lying_direction(np.array([1.4, 0.0, 0.0, 1.0]), 0.8) == "front"
    assert lying_direction(np.array([-1.4, 0.0, 0.0, 1.0]), 0.8) == "back"
    assert lying_direction(np.array([0.1, 0.1, 0.0, 1.0]), 0.8) == "rise"
    assert lying_direction(np.array([-0.1, 0.1, 0.0, -1.0]), 0.8) == "back"  # upside down: by the pitch sign
    side = np.array([-0.1, 1.4, 0.0, 1.0])  # on its side, trunk pitched slightly backwards
    assert lying_direction(side, 0.8) == "back"
    assert lying_direction(side, 0.8, front_pitch=-0.2) == "front"
    assert lying_direction(np.array([-1.4, 0.0, 0.0, 1.0]), 0.8, front_pitch=-0.2) == "back"


def test_front_pitch_parameter_chooses_the_front_stand_up_for_a_slight_backward_pitch() -> None:
    robot = get_robot("wolfgang")
    q = np.zeros(len(robot.joint_names))
    plans = {}
    for front_pitch in (0.0, -0.2):
        c = SplineStandUp(robot, SplineParams.load("wolfgang").with_overrides({"front_pitch": front_pitch}))
        on_side = dataclasses.replace(_sensors(robot, 0.0, q, -0.1), fused=np.array([-0.1, 1.4, 0.0, 1.0]))
        c.reset(on_side, np.random.default_rng(0))
        plans[front_pitch] = c.plan.direction
    assert plans == {0.0: "back", -0.2: "front"}


# ---------------------------------------------------------------- registry, IK goals, real stand-ups
def test_registered_for_both_robots_with_an_unstabilised_variant() -> None:
    assert make_controller("spline", get_robot("nao"), "getup").params.stabilizing
    assert not make_controller("spline_nostab", get_robot("wolfgang"), "getup").params.stabilizing


@pytest.mark.parametrize("robot,start", [("wolfgang", "prone"), ("wolfgang", "supine")])
def test_leg_ik_output_meets_the_controllers_foot_goals(robot: str, start: str) -> None:
    """Along a real stand-up, FK of the legs' samples reaches the controller's foot goals within
    1 mm and 0.01 rad wherever the leg IK reported them reachable, also with the stabiliser's
    corrections of that run (up to 0.25 rad) applied through the precomputed sensitivities; between
    samples the commanded legs stay within 2 cm of the goals (chords of the path-parameter
    interpolation)."""
    import gymnasium as gym

    env = gym.make({"wolfgang": "upright/WolfgangGetUp-v0", "nao": "upright/NaoGetUp-v0"}[robot], start=start)
    base = env.unwrapped
    c = SplineStandUp(base.robot)
    _, info = env.reset(seed=0)
    c.reset(info["sensors"], np.random.default_rng(0))
    legs, corrections, between = c.legs, [], []

    def errors(q_legs: np.ndarray, t: float, correction: np.ndarray | None) -> tuple[float, float]:
        q = c.joint_goal.copy()
        q[c._leg_index] = q_legs
        worst = (0.0, 0.0)
        for side, (pos, rot) in c.foot_goals(t, correction).items():
            fk_pos, fk_rot = c.kin.foot_pose(side, q)
            worst = max(worst[0], np.linalg.norm(fk_pos - pos)), max(worst[1], Rotation.from_matrix(fk_rot.T @ rot).magnitude())
        return worst

    for _ in range(int((c.plan.duration + 1.0) / base.robot.control_period)):
        targets = c.step(info["sensors"])
        t = info["sensors"].time - c._t0
        assert c.status != "waiting" and c.legs is legs  # the first try stands up
        k, _ = legs.weights(t)
        if t < c.plan.duration and legs.reachable[k] and legs.reachable[k + 1]:
            stabilised = t >= c.plan.stabilize_from
            between.append(errors(c.joint_goal[c._leg_index], t, c.correction if stabilised else None)[0])
            if stabilised and np.any(c.correction != 0):
                corrections.append((t, c.correction.copy()))
        _, _, _, _, info = env.step(base.action_from_targets(targets))
    checked = corrected = 0
    for k in np.flatnonzero(legs.reachable[: legs.solved]):
        t = legs.times[k]
        assert max(errors(legs.joints[k], t, None)) < 1e-3, t
        checked += 1
        # the run's correction nearest in time; the Taylor step is checked for moderate corrections
        correction = min(corrections, key=lambda c_t: abs(c_t[0] - t))[1] if corrections else np.zeros(2)
        if t >= c.plan.stabilize_from and 0 < np.abs(correction).max() <= 0.25:
            interval, w = (k, 0.0) if k < len(legs.times) - 1 else (k - 1, 1.0)
            q = legs.joints_at(interval, w, correction)
            pos_error, rot_error = errors(q, t, correction)
            assert pos_error < 1e-3 and rot_error < 0.01, (t, correction, pos_error, rot_error)
            corrected += 1
    assert checked >= 5 and corrected >= 3, (checked, corrected)
    assert max(between) < 0.02, max(between)


@pytest.mark.parametrize("start", ["prone", "supine"])
def test_wolfgang_stands_up_in_the_lab(start: str) -> None:
    run = run_episodes("upright/WolfgangGetUp-v0", "spline", 1,
                       env_kwargs={"start": start, "conditions": "lab", "max_episode_seconds": 8.0}, progress=False)
    record = run.records[0]
    assert record["success"], record
    assert record["time_to_stand"] < 6.0
