"""The compiled inner loop (``envs/kernels.py``) against readable references on real MuJoCo states:
MuJoCo's own ``mj_contactForce`` (through ``Simulation.contact_forces``), SciPy's rotation
matrices and NumPy expressions. Agreement is to rounding, the kernels' stated contract."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import gymnasium as gym
from upright.envs import kernels
from upright.envs.conditions import PRESETS
from upright.envs.simulation import MAX_SANE_VELOCITY, Simulation

ROBOTS = ("nao", "wolfgang")


def _random_quats(n: int = 300) -> np.ndarray:
    rng = np.random.default_rng(1)
    quats = rng.normal(size=(n, 4)) * rng.uniform(0.5, 2.0, (n, 1))  # not normalised on purpose
    special = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1], [np.cos(0.7), 0, np.sin(0.7), 0], [0.5, 0.5, 0.5, 0.5]]
    return np.vstack([quats, special])


def test_fused_angles_follow_their_definition_on_scipys_rotation_matrix():
    for quat in _random_quats():
        w, x, y, z = quat
        R = Rotation.from_quat([x, y, z, w]).as_matrix()
        pitch, roll, yaw, hemisphere = kernels.fused_angles(w, x, y, z)
        assert pitch == pytest.approx(np.arcsin(np.clip(-R[2, 0], -1, 1)), abs=1e-12)
        assert roll == pytest.approx(np.arcsin(np.clip(R[2, 1], -1, 1)), abs=1e-12)
        expected_yaw = np.angle(np.exp(2j * np.arctan2(z, w)))  # 2·atan2(z, w) wrapped to (-π, π]
        assert np.angle(np.exp(1j * (yaw - expected_yaw))) == pytest.approx(0.0, abs=1e-12)
        assert -np.pi < yaw <= np.pi
        assert hemisphere == (1.0 if R[2, 2] >= 0 else -1.0)


def _flailing(robot: str, conditions: str = "lab", steps: int = 250, seed: int = 0):
    """A simulation of ``robot`` falling under changing joint targets: per step, the simulation
    after it (many contacts between the body, arms, head and the ground)."""
    sim = Simulation(robot, conditions)
    sim.reset(seed=seed)
    low, high = sim.model.actuator_ctrlrange.T
    for i in range(steps):
        phase = np.sin(0.05 * i + np.arange(sim.model.nu))
        sim.step(low + (high - low) * (0.5 + 0.5 * phase))
        yield sim


@pytest.mark.parametrize("robot", ROBOTS)
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_hardest_ground_force_is_the_largest_of_mujocos_per_body_contact_forces(robot, cone):
    sim = Simulation(robot, "turf")
    if cone == "elliptic":
        sim.model.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    m = sim.model
    feet = {m.body(m.site_bodyid[m.site(s).id]).name for s in sim.robot.sole_sites}
    counted = np.isin(np.arange(m.nbody), sim.robot_bodies)
    counted[[m.body(f).id for f in feet]] = False
    checked = 0
    for sim in _flailing(robot, "turf"):
        forces = sim.contact_forces(exclude=feet)
        reference = max((np.linalg.norm(f) for f in forces.values()), default=0.0)
        assert sim.hardest_ground_force(counted) == pytest.approx(reference, rel=1e-9, abs=1e-9)
        checked += reference > 1.0
    assert checked > 50  # the body touched the ground with force on most steps


@pytest.mark.parametrize("robot", ROBOTS)
def test_sensors_and_posture_equal_the_arrays_they_read(robot):
    for sim in _flailing(robot, steps=60):
        d, r = sim.data, sim.robot
        s = sim.sensors()
        np.testing.assert_array_equal(s.joint_pos, [d.joint(j).qpos[0] for j in r.joint_names])
        np.testing.assert_array_equal(s.joint_vel, [d.joint(j).qvel[0] for j in r.joint_names])
        np.testing.assert_array_equal(s.gyro, d.sensor(r.gyro_sensor).data)
        np.testing.assert_array_equal(s.accel, d.sensor(r.accel_sensor).data)
        np.testing.assert_array_equal(s.quat, d.sensor(r.quat_sensor).data)
        np.testing.assert_array_equal(s.foot_pressure, [d.sensor(p).data[0] for p in r.pressure_sensors])
        np.testing.assert_array_equal(s.fused, kernels.fused_angles(*s.quat))
        p = sim.posture()
        torso = d.body(r.torso_body)
        pitch, roll, _, hemisphere = kernels.fused_angles(*torso.xquat)
        assert (p.fused_pitch, p.fused_roll, p.hemisphere) == (pitch, roll, hemisphere)
        assert p.tilt == pytest.approx(np.arccos(np.clip(torso.xmat[8], -1, 1)), abs=1e-12)
        assert p.head_height == d.site(r.head_top_site).xpos[2]
        assert p.angular_speed == pytest.approx(np.linalg.norm(d.sensor(r.gyro_sensor).data), rel=1e-14)
    # the sensors are fresh arrays, not views of MuJoCo's or of each other's
    before = s.joint_pos.copy()
    sim.step(sim.setpoint)
    np.testing.assert_array_equal(s.joint_pos, before)


def test_effort_power_and_action_change_are_the_numpy_expressions():
    for sim in _flailing("nao", steps=80):
        m, d = sim.model, sim.data
        load = d.actuator_force / m.actuator_forcerange[:, 1]
        q = d.qpos[m.jnt_qposadr[m.actuator_trnid[:, 0]]]
        low, high = m.actuator_ctrlrange.T
        near_low, near_high = low + 0.1 * (high - low), high - 0.1 * (high - low)
        torque, near = sim.effort(near_low, near_high)
        assert torque == pytest.approx(np.mean(load**2), rel=1e-12)
        assert near == np.mean((q < near_low) | (q > near_high))
        assert sim.absolute_power() == pytest.approx(np.sum(np.abs(sim.actuator_power())), rel=1e-12)
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=23), rng.normal(size=23)
    assert kernels.mean_squared_difference(a, b) == pytest.approx(np.mean((a - b) ** 2), rel=1e-12)


def test_heading_motion_rotates_the_world_velocity_by_the_yaw():
    env = gym.make("upright/NaoWalk-v0", command=(0.2, 0.05, 0.3), prior="lipm")
    env.reset(seed=3)
    sim = env.unwrapped.sim
    torso = sim.data.body(sim.robot.torso_body)
    for _ in range(150):
        x0, y0 = torso.xpos[:2].tolist()
        env.step(np.zeros(env.action_space.shape, dtype=np.float32))
        vx, vy, wz, moved, x, y = sim.heading_motion(x0, y0)
        velocity = np.zeros(6)
        mujoco.mj_objectVelocity(sim.model, sim.data, mujoco.mjtObj.mjOBJ_BODY, torso.id, velocity, 0)
        yaw = Rotation.from_quat(np.roll(torso.xquat, -1)).as_euler("ZYX")[0]
        c, s = np.cos(yaw), np.sin(yaw)
        np.testing.assert_allclose([vx, vy, wz], [c * velocity[3] + s * velocity[4], -s * velocity[3] + c * velocity[4],
                                                  velocity[2]], atol=1e-12)
        assert moved == pytest.approx(np.hypot(torso.xpos[0] - x0, torso.xpos[1] - y0), abs=1e-15)
        assert (x, y) == tuple(torso.xpos[:2])
    env.close()


def test_clipping_kernels_are_np_clip_and_flag_non_finite_values():
    rng = np.random.default_rng(4)
    for dtype in (np.float32, np.float64):  # actions arrive as float32 from policies
        a = (rng.normal(size=30) * 2).astype(dtype)
        clipped, finite = kernels.clip_between(a, -np.ones(30), np.ones(30))
        assert finite and clipped.dtype == np.float64
        np.testing.assert_array_equal(clipped, np.clip(a.astype(float), -1, 1))
    low, high = -rng.uniform(size=30), rng.uniform(size=30)
    values = rng.normal(size=30)
    clipped, finite = kernels.clip_between(values, low, high)
    assert finite
    np.testing.assert_array_equal(clipped, np.clip(values, low, high))
    for bad in (np.nan, np.inf, -np.inf):
        values[7] = bad
        assert not kernels.clip_between(values, low, high)[1]
        assert not kernels.clip_between(values.astype(np.float32), low, high)[1]


def test_blew_up_catches_nan_positions_and_fast_or_nan_velocities():
    qpos, qvel = np.zeros(10), np.zeros(9)
    assert not kernels.blew_up(qpos, qvel, MAX_SANE_VELOCITY)
    for array, value in ((qpos, np.nan), (qpos, np.inf), (qvel, np.nan), (qvel, -1.01 * MAX_SANE_VELOCITY)):
        saved = array[3]
        array[3] = value
        assert kernels.blew_up(qpos, qvel, MAX_SANE_VELOCITY)
        array[3] = saved
    qvel[2] = MAX_SANE_VELOCITY  # the limit itself is still sane
    assert not kernels.blew_up(qpos, qvel, MAX_SANE_VELOCITY)


@pytest.mark.parametrize("env_id", ["upright/NaoGetUp-v0", "upright/WolfgangWalk-v0"])
def test_env_actions_map_onto_targets_as_documented(env_id):
    """No prior: -1 → lower limit, +1 → upper limit, linear between; with a prior the target is
    prior + residual_scale · action · half range, so the zero action gives the prior's targets."""
    prior = "keyframe" if "GetUp" in env_id else "lipm"
    for kwargs in ({}, {"prior": prior, "residual_scale": 0.3}):
        env = gym.make(env_id, conditions=PRESETS["lab"], **kwargs)
        env.reset(seed=0)
        u = env.unwrapped
        low, high = u.sim.model.actuator_ctrlrange.T
        action = np.linspace(-1.5, 1.5, u.action_space.shape[0]).astype(np.float32)
        targets = u.targets_from_action(action)
        clipped = np.clip(action.astype(float), -1, 1)
        base = (low + high) / 2 if not kwargs else u._prior_targets
        scale = (high - low) / 2 * (0.3 if kwargs else 1.0)
        np.testing.assert_allclose(targets, base + scale * clipped, rtol=0, atol=1e-12)
        if kwargs:
            np.testing.assert_array_equal(u.targets_from_action(np.zeros_like(action)), u._prior_targets)
        with pytest.raises(ValueError, match="non-finite"):
            env.step(np.full(u.action_space.shape, np.nan, dtype=np.float32))
        env.close()
