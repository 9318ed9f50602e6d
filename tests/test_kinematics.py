"""Robot-side kinematics: FK against the simulation, analytic leg IK, shared NAO hip, arm IK, CoM."""

from __future__ import annotations


import mujoco
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from upright import Simulation
from upright.baselines.kinematics import Kinematics
from upright.baselines.kinematics.forward import solve_spd
from upright.envs.robots import ROBOT_NAMES, get_robot

POSES_PER_LEG = 250
POS_TOL = 1e-3  # m
ROT_TOL = 0.01  # rad


def rotation(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation matrix of ``angle`` rad about the unit vector ``axis``."""
    return Rotation.from_rotvec(np.asarray(axis, dtype=float) * angle).as_matrix()


@pytest.fixture(scope="module", params=ROBOT_NAMES)
def kin(request) -> Kinematics:
    return Kinematics(get_robot(request.param))


def _standing(kin: Kinematics) -> np.ndarray:
    return kin.keyframe_joints()


def _random_leg(kin: Kinematics, side: str, rng: np.random.Generator, base: np.ndarray) -> np.ndarray:
    leg = kin.legs[side]
    q = base.copy()
    q[kin.joint_index(leg.joint_names)] = rng.uniform(leg.lower, leg.upper)
    return q


def _rot_error(a: np.ndarray, b: np.ndarray) -> float:
    """Angle (rad) of the rotation between ``a`` and ``b``."""
    return float(np.arccos(np.clip((np.trace(a.T @ b) - 1.0) / 2.0, -1.0, 1.0)))


def _pose_error(kin: Kinematics, side: str, q: np.ndarray, pos: np.ndarray, rot: np.ndarray) -> tuple[float, float]:
    p, r = kin.foot_pose(side, q)
    return float(np.linalg.norm(p - pos)), _rot_error(r, rot)


@pytest.mark.parametrize("side", ["left", "right"])
def test_leg_ik_reaches_random_reachable_foot_poses(kin, side):
    rng = np.random.default_rng(11)
    base = _standing(kin)
    idx = kin.joint_index(kin.leg_joint_names(side))
    worst = (0.0, 0.0)
    for _ in range(POSES_PER_LEG):
        q = _random_leg(kin, side, rng, base)
        pos, rot = kin.foot_pose(side, q)
        angles, reachable = kin.leg_ik(side, pos, rot)
        assert reachable, f"{kin.robot.name} {side}: {q[idx]} reported unreachable"
        leg = kin.legs[side]
        assert np.all(angles >= leg.lower) and np.all(angles <= leg.upper)
        solved = base.copy()
        solved[idx] = angles
        err = _pose_error(kin, side, solved, pos, rot)
        worst = (max(worst[0], err[0]), max(worst[1], err[1]))
    assert worst[0] < POS_TOL and worst[1] < ROT_TOL, f"worst error {worst}"


def test_leg_ik_standing_pose_round_trip(kin):
    """The standing keyframe's feet give back the keyframe's leg angles (the preferred branch)."""
    q = _standing(kin)
    for side in ("left", "right"):
        angles, reachable = kin.leg_ik(side, *kin.foot_pose(side, q))
        assert reachable
        np.testing.assert_allclose(angles, q[kin.joint_index(kin.leg_joint_names(side))], atol=1e-3)


@pytest.mark.parametrize("mode", ["left", "right", "mean"])
def test_nao_legs_ik_with_shared_hip_yaw_pitch(mode):
    kin = Kinematics(get_robot("nao"))
    rng = np.random.default_rng(5)
    base = _standing(kin)
    left, right = kin.leg_joint_names("left"), kin.leg_joint_names("right")
    for _ in range(POSES_PER_LEG if mode == "mean" else 60):
        q = _random_leg(kin, "right", rng, _random_leg(kin, "left", rng, base))
        q[kin.joint_index([right[0]])] = q[kin.joint_index([left[0]])]  # one motor
        targets = {s: kin.foot_pose(s, q) for s in ("left", "right")}
        angles, reachable = kin.legs_ik(*targets["left"], *targets["right"], hip_yaw_pitch=mode)
        assert reachable
        assert angles[left[0]] == angles[right[0]]
        solved = kin.with_joints(base, angles)
        for side in ("left", "right"):
            pos_err, rot_err = _pose_error(kin, side, solved, *targets[side])
            assert pos_err < POS_TOL and rot_err < ROT_TOL, (mode, side, pos_err, rot_err)


def test_nao_legs_ik_conflicting_hip_yaw_keeps_positions_and_sole_normals():
    """Feet yawed differently need two HipYawPitch values; with one shared value the positions and
    sole normals are still reached (the yaw about the normal is what gives)."""
    kin = Kinematics(get_robot("nao"))
    base = _standing(kin)
    pl, rl = kin.foot_pose("left", base)
    pr, rr = kin.foot_pose("right", base)
    rl = rotation(np.array([0.0, 0.0, 1.0]), 0.3) @ rl
    angles, reachable = kin.legs_ik(pl, rl, pr, rr, hip_yaw_pitch="right")
    assert reachable
    solved = kin.with_joints(base, angles)
    for side, (p, r) in (("left", (pl, rl)), ("right", (pr, rr))):
        p2, r2 = kin.foot_pose(side, solved)
        assert np.linalg.norm(p2 - p) < POS_TOL
        assert np.arccos(np.clip(r2[:, 2] @ r[:, 2], -1, 1)) < ROT_TOL
    # the right leg (chosen) is exact, so the left foot's yaw is what is off
    assert _rot_error(kin.foot_pose("right", solved)[1], rr) < 1e-9
    assert _rot_error(kin.foot_pose("left", solved)[1], rl) > 0.05


def test_wolfgang_legs_ik_is_two_independent_legs():
    kin = Kinematics(get_robot("wolfgang"))
    q = _standing(kin)
    targets = {s: kin.foot_pose(s, q) for s in ("left", "right")}
    angles, reachable = kin.legs_ik(*targets["left"], *targets["right"])
    assert reachable
    for side in ("left", "right"):
        single, _ = kin.leg_ik(side, *targets[side])
        np.testing.assert_array_equal([angles[j] for j in kin.leg_joint_names(side)], single)


def test_unreachable_foot_gives_stretched_leg_and_no_nan(kin):
    base = _standing(kin)
    pos, rot = kin.foot_pose("left", base)
    hip = kin.legs["left"].hip_point
    far = hip + 3.0 * (pos - hip)  # three leg lengths away
    angles, reachable = kin.leg_ik("left", far, rot)
    assert not reachable
    assert np.all(np.isfinite(angles))
    leg = kin.legs["left"]
    assert np.all(angles >= leg.lower) and np.all(angles <= leg.upper)
    # the closest reachable solution: the foot ends up as far towards the target as the leg goes
    reached, _ = kin.foot_pose("left", kin.with_joints(base, dict(zip(leg.joint_names, angles))))
    assert np.linalg.norm(far - reached) <= np.linalg.norm(far - pos) + 1e-6
    ankle_reached = reached + kin.foot_pose("left", base)[1] @ leg.ankle_in_sole
    assert np.linalg.norm(ankle_reached - hip) >= leg.thigh_length + leg.shank_length - 1e-3  # stretched
    angles, reachable = kin.leg_ik("left", hip, rot)  # foot at the hip: too close
    assert not reachable and np.all(np.isfinite(angles))
    # in reach, but the foot yawed 2 rad needs a hip (yaw) angle beyond its range: clipped, reported
    yawed = rotation(np.array([0.0, 0.0, 1.0]), 2.0) @ rot
    angles, reachable = kin.leg_ik("left", pos, yawed)
    assert not reachable and np.all(np.isfinite(angles))
    assert np.all(angles >= leg.lower) and np.all(angles <= leg.upper)


def test_bad_input_raises_naming_it(kin):
    q = _standing(kin)
    for call in (lambda: kin.foot_pose("middle", q), lambda: kin.hand_pose("up", q),
                 lambda: kin.shoulder_pose("centre"), lambda: kin.leg_joint_names("l"),
                 lambda: kin.leg_ik("both", np.zeros(3), np.eye(3)),
                 lambda: kin.arm_ik("x", np.zeros(3), q)):
        with pytest.raises(ValueError, match="side"):
            call()
    with pytest.raises(ValueError, match="position"):
        kin.leg_ik("left", np.array([np.nan, 0.0, 0.0]), np.eye(3))
    with pytest.raises(ValueError, match="rotation"):
        kin.leg_ik("left", np.zeros(3), 2.0 * np.eye(3))
    with pytest.raises(ValueError, match="joint vector"):
        kin.set_joints(np.zeros(3))
    with pytest.raises(ValueError, match="hip_yaw_pitch"):
        kin.legs_ik(np.zeros(3), np.eye(3), np.zeros(3), np.eye(3), hip_yaw_pitch="both")
    with pytest.raises(ValueError, match="unknown joint 'Tail'"):
        kin.with_joints(q, {"Tail": 0.0})
    with pytest.raises(ValueError, match="unknown site"):
        kin.site_pose("nose")
    with pytest.raises(ValueError, match="unknown keyframe 'sitting'"):
        kin.keyframe_joints("sitting")


def _sim_sites_in_torso(sim: Simulation, names: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    pos, quat = sim.torso_pose()
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, quat)
    rot = rot.reshape(3, 3)
    out = {}
    for name in names:
        i = sim.model.site(name).id
        out[name] = (rot.T @ (sim.data.site_xpos[i] - pos), rot.T @ sim.data.site_xmat[i].reshape(3, 3))
    return out


def test_private_fk_and_com_agree_with_the_simulation(kin):
    robot = kin.robot
    sim = Simulation(robot.name, "lab")
    rng = np.random.default_rng(3)
    sites = [*robot.sole_sites, robot.imu_site, robot.head_top_site, *robot.pressure_sensors[:2]]
    for random in (False, True):
        sensors = sim.reset(robot.standing_pose, seed=0)
        if random:
            qpos = sim.data.qpos.copy()
            lo, hi = sim.model.jnt_range[1:].T
            joints = rng.uniform(lo, hi)
            qpos[7:] = joints
            if kin.shared_hip:  # one motor: the right joint equals the left
                m = sim.model
                qpos[m.jnt_qposadr[m.joint("RHipYawPitch").id]] = qpos[m.jnt_qposadr[m.joint("LHipYawPitch").id]]
            sensors = sim.reset(robot.standing_pose, seed=0, qpos=qpos)
        truth = _sim_sites_in_torso(sim, sites)
        kin.set_joints(sensors.joint_pos)
        for name in sites:
            p, r = kin.site_pose(name)
            np.testing.assert_allclose(p, truth[name][0], atol=1e-9, err_msg=name)
            np.testing.assert_allclose(r, truth[name][1], atol=1e-9, err_msg=name)
        # CoM: the simulation's (world) CoM in the torso frame
        pos, quat = sim.torso_pose()
        rot = np.zeros(9)
        mujoco.mju_quat2Mat(rot, quat)
        rot = rot.reshape(3, 3)
        np.testing.assert_allclose(kin.com(sensors.joint_pos), rot.T @ (sim.com() - pos), atol=1e-9)
        # rotated by the IMU orientation: the world-frame offset of the CoM from the torso origin
        np.testing.assert_allclose(kin.com_world_aligned(sensors.joint_pos, sensors.quat), sim.com() - pos,
                                   atol=1e-6)


def test_hand_and_shoulder_frames(kin):
    """Shoulder at the shoulder-pitch anchor; the hand point at its documented offset from the
    last arm body (robots.md)."""
    q = np.zeros(len(kin.joint_names))
    for side, sign in (("left", 1.0), ("right", -1.0)):
        pos, rot = kin.shoulder_pose(side)
        np.testing.assert_array_equal(rot, np.eye(3))
        assert sign * pos[1] > 0.07 and pos[2] > 0.09
        hand, _ = kin.hand_pose(side, q)
        if kin.robot.name == "nao":  # straight arm pointing forward at q = 0: 105 + 55.95 + 57.75 mm
            np.testing.assert_allclose(hand - pos, [0.105 + 0.05595 + 0.05775, sign * 0.015, -0.0123], atol=2e-4)
        elif kin.robot.name == "wolfgang":  # upper arm hangs down 144 mm, forearm points forward to the wrist frame
            assert hand[0] - pos[0] > 0.2 and pos[2] - hand[2] > 0.14


@pytest.mark.parametrize("side", ["left", "right"])
def test_arm_ik_reaches_random_reachable_hand_positions(kin, side):
    rng = np.random.default_rng(17)
    m = kin.model
    arm = kin.arms[side]
    ik = kin.joint_index(arm.ik_joint_names)
    ids = [m.joint(j).id for j in arm.ik_joint_names]
    lo, hi = m.jnt_range[ids].T
    base = _standing(kin)
    shoulder, _ = kin.shoulder_pose(side)
    errors, local_errors = [], []
    for _ in range(60):
        q = base.copy()
        q[ik] = rng.uniform(lo, hi)
        hand, _ = kin.hand_pose(side, q)
        # from the standing arms, anywhere in the workspace: with restarts
        angles = kin.arm_ik(side, hand - shoulder, base, iterations=60, restarts=6)
        solved = kin.with_joints(base, dict(zip(arm.joint_names, angles)))
        errors.append(np.linalg.norm(kin.hand_pose(side, solved)[0] - hand))
        held = [j for j in arm.joint_names if j not in arm.ik_joint_names]
        np.testing.assert_array_equal(solved[kin.joint_index(held)], base[kin.joint_index(held)])
        # tracking: from a start near the solution, plain local DLS
        start = q.copy()
        start[ik] = np.clip(q[ik] + rng.uniform(-0.3, 0.3, 3), lo, hi)
        angles = kin.arm_ik(side, hand - shoulder, start)
        assert np.all(angles[[arm.joint_names.index(j) for j in arm.ik_joint_names]] >= lo - 1e-12)
        local_errors.append(np.linalg.norm(kin.hand_pose(side, kin.with_joints(start, dict(zip(
            arm.joint_names, angles))))[0] - hand))
    assert max(local_errors) < 3e-3, max(local_errors)
    assert max(errors) < 3e-3, sorted(errors)[-3:]


@pytest.mark.parametrize("side", ["left", "right"])
def test_arm_closed_form_matches_dls_and_is_exact(kin, side):
    """The closed-form arm IK (both robots' shoulder axes meet) reaches reachable targets exactly and
    gives the solution that DLS converges to from a nearby start; out of reach, the closest point."""
    assert kin._arm_center[side] is not None
    rng = np.random.default_rng(5)
    m = kin.model
    arm = kin.arms[side]
    ik = kin.joint_index(arm.ik_joint_names)
    in_arm = [arm.joint_names.index(j) for j in arm.ik_joint_names]
    lo, hi = m.jnt_range[[m.joint(j).id for j in arm.ik_joint_names]].T
    base = _standing(kin)
    shoulder, _ = kin.shoulder_pose(side)
    for _ in range(40):
        q = base.copy()
        q[ik] = rng.uniform(lo + 0.2, hi - 0.2)
        hand, _ = kin.hand_pose(side, q)
        start = q.copy()
        start[ik] += rng.uniform(-0.1, 0.1, 3)
        closed = kin.arm_ik(side, hand - shoulder, start)
        np.testing.assert_allclose(kin.hand_pose(side, kin.with_joints(start, dict(zip(arm.joint_names, closed))))[0],
                                   hand, atol=1e-9)
        dls = kin.arm_ik(side, hand - shoulder, start, closed_form=False, iterations=200, tolerance=1e-7)
        np.testing.assert_allclose(closed[in_arm], dls[in_arm], atol=1e-3)
    # far out of reach, straight ahead of the shoulder: the hand stops at the closest point it reaches
    far = np.array([1.0, 0.0, 0.0])
    closed = kin.arm_ik(side, far, base)
    dls = kin.arm_ik(side, far, base, closed_form=False, iterations=400)
    reached = [kin.hand_pose(side, kin.with_joints(base, dict(zip(arm.joint_names, a))))[0] - shoulder
               for a in (closed, dls)]
    assert np.linalg.norm(reached[0] - far) <= np.linalg.norm(reached[1] - far) + 1e-4


def test_targets_from_joints_and_joint_names(kin):
    q = np.arange(len(kin.joint_names), dtype=float)
    targets = kin.targets_from_joints(q)
    assert targets.shape == (len(kin.robot.actuator_names),)
    for i, name in enumerate(kin.robot.actuator_names):
        assert targets[i] == q[kin.robot.joint_names.index(name)]
    for side in ("left", "right"):
        assert len(kin.leg_joint_names(side)) == 6
        assert set(kin.leg_joint_names(side)) <= set(kin.joint_names)
        assert set(kin.arm_joint_names(side)) <= set(kin.joint_names)


def test_leg_geometry_is_read_from_the_model():
    nao = Kinematics("nao").legs["left"]  # a robot name works as well as a RobotSpec
    assert nao.thigh_length == pytest.approx(0.100) and nao.shank_length == pytest.approx(0.1029)
    np.testing.assert_allclose(nao.hip_point, [0.0, 0.05, -0.085], atol=1e-12)
    np.testing.assert_allclose(nao.ankle_in_sole, [0.0, 0.0, 0.04519], atol=1e-12)
    wolfgang = Kinematics(get_robot("wolfgang")).legs["left"]
    # robots.md 2(a): hip roll/pitch intersection 23.1 mm forward of the yaw axis, 41.4 mm below it
    np.testing.assert_allclose(wolfgang.hip_point, [0.0231, 0.055, -0.0414], atol=1e-9)
    assert wolfgang.thigh_length == pytest.approx(0.169, abs=1e-3)
    assert wolfgang.shank_length == pytest.approx(0.170, abs=1e-3)


def test_leg_that_does_not_fit_the_closed_form_is_refused_by_name():
    """The closed form turns the hip roll about the torso's x axis and the pitch joints about its y
    axis; a leg read with hip roll and hip pitch swapped fits neither and is refused, naming both."""
    kin = Kinematics(get_robot("nao"))
    names = list(kin.legs["left"].joint_names)
    names[1], names[2] = names[2], names[1]
    with pytest.raises(ValueError, match="pitch axes are not along the torso's y axis.*hip roll axis is not the torso's x"):
        kin._leg_geometry("left", names)


def test_hip_split_recovers_the_angles(kin):
    """Step 3 of the closed form: from a sole rotation ``R(e0, q0) Rx(q1) Ry(θ) R(e5, q5) S0`` and the
    ankle roll ``q5``, one of the two hip rolls gives back joint 0, hip roll and the pitch sum ``θ``;
    the hip roll nearer zero comes first."""
    rng = np.random.default_rng(0)
    x, y = np.eye(3)[0], np.eye(3)[1]
    for side in ("left", "right"):
        leg, solver = kin.legs[side], kin.legs[side].solver
        for _ in range(100):
            q0, q1, theta, q5 = rng.uniform(-1.2, 1.2, 4)
            rot = (rotation(leg.axes[0], q0) @ rotation(x, q1) @ rotation(y, theta) @ rotation(leg.axes[5], q5)
                   @ leg.sole_rot0)
            goal = tuple(map(tuple, rot.tolist()))
            rest_x, rest_y = solver.rest_x(goal, q5), solver.rest_y(goal, q5)
            rolls = solver.hip_rolls(rest_y)
            assert abs(rolls[0]) <= abs(rolls[1])
            found = []
            for roll in rolls:
                first = solver.first_joint(rest_y, roll)
                found.append((first, roll, solver.pitch_sum(rest_x, first, roll)))
            for a, b, c in found:  # both branches are the same rotation ...
                np.testing.assert_allclose(rotation(leg.axes[0], a) @ rotation(x, b) @ rotation(y, c),
                                           rotation(leg.axes[0], q0) @ rotation(x, q1) @ rotation(y, theta), atol=1e-9)
            # ... one of them this one
            assert min(np.max(np.abs(np.subtract(f, (q0, q1, theta)))) for f in found) < 1e-9


def test_leg_ik_targets_move_the_simulated_robot_as_commanded(kin):
    """Closed loop through the real physics: lowering both feet targets by 3 cm (a squat) with
    ``legs_ik`` and sending the angles as servo targets lowers the standing torso by ~3 cm
    (plus servo sag under the robot's weight) and keeps it upright."""
    sim = Simulation(kin.robot.name, "lab")
    sensors = sim.reset(seed=0)
    start = sensors.joint_pos.copy()
    height0, tilt0 = sim.torso_pose()[0][2], sim.torso_tilt()
    feet = {side: kin.foot_pose(side, start) for side in ("left", "right")}
    up = np.array([0.0, 0.0, 0.03])
    angles, reachable = kin.legs_ik(feet["left"][0] + up, feet["left"][1], feet["right"][0] + up, feet["right"][1])
    assert reachable
    goal = kin.with_joints(start, angles)
    ramp = int(round(0.5 / kin.robot.control_period))
    for i in range(3 * ramp):
        blend = min(1.0, (i + 1) / ramp)
        sensors = sim.step(kin.targets_from_joints((1.0 - blend) * start + blend * goal))
    drop = height0 - sim.torso_pose()[0][2]
    assert abs(drop - 0.03) < 0.012, drop
    assert abs(sim.torso_tilt() - tilt0) < 0.1
    for side in ("left", "right"):  # measured joint angles put the feet near the targets
        assert np.linalg.norm(kin.foot_pose(side, sensors.joint_pos)[0] - (feet[side][0] + up)) < 0.015


def test_solve_spd_matches_numpy():
    rng = np.random.default_rng(2)
    for n in (3, 6):
        j = rng.normal(size=(n, n))
        a, b = j @ j.T + 1e-8 * np.eye(n), rng.normal(size=n)
        kept = a.copy()
        np.testing.assert_allclose(solve_spd(a, b), np.linalg.solve(a, b), rtol=1e-9, atol=1e-9)
        np.testing.assert_array_equal(a, kept)
