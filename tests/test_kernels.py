"""The compiled step kernels (``upright.envs.kernels``) against their readable NumPy/MuJoCo versions,
on states of real episodes (the ground-contact forces are in ``test_simulation.py``, the fused angles
against the rotation matrix in ``test_numeric.py``)."""

from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np
import pytest

from upright.envs.kernels import clip_finite, effort_terms, play_ctrl, sane_state, walk_effort_terms
from upright.envs.sensors import fused_angles, observation_from_sensors


def test_effort_terms_equal_the_numpy_means(robot):
    """Mean squared load, the share of joints near a limit and the mean squared action change, on a
    random-action get-up episode (joints reach their limits, actions change every step)."""
    env = gym.make(f"upright/{robot.capitalize()}GetUp-v0", start="random")
    u = env.unwrapped
    env.reset(seed=3)
    rng = np.random.default_rng(3)
    last = np.zeros(env.action_space.shape)
    near_seen = 0.0
    for _ in range(150):
        action = rng.choice([-1.0, -0.5, 0.5, 1.0], env.action_space.shape)  # targets at and near the limits
        env.step(action.astype(np.float32))
        load, q = u.sim.actuator_load(), u.sim.actuated_joint_pos()
        a = u.sim.actuation
        torque, near, rate = effort_terms(a.force, a.force_limit, a.qpos, a.qpos_adr, u._near_low, u._near_high, action,
                                          last)
        assert torque == pytest.approx(float(np.mean(load**2)), rel=1e-12)
        assert near == float(np.mean((q < u._near_low) | (q > u._near_high)))
        assert rate == pytest.approx(float(np.mean((action - last) ** 2)), rel=1e-12)
        # margins a quarter range inside the limits: the branch counts joints on both sides
        low, high = u._low + u._half / 2, u._high - u._half / 2
        _, near, _ = effort_terms(a.force, a.force_limit, a.qpos, a.qpos_adr, low, high, action, last)
        assert near == float(np.mean((q < low) | (q > high)))
        near_seen = max(near_seen, near)
        last = action
    assert near_seen > 0.0


def test_walk_effort_terms_equal_mujoco_site_velocities(robot):
    """The summed absolute power and the loaded soles' squared horizontal speed from
    ``mj_objectVelocity``, along a walk with the stepping prior (each foot loaded and unloaded)."""
    env = gym.make(f"upright/{robot.capitalize()}Walk-v0", prior="step_adjust", command=(0.25, 0.05, 0.3))
    u = env.unwrapped
    m, d, sim = u.sim.model, u.sim.data, u.sim
    env.reset(seed=5)
    velocity = np.zeros(6)
    slipping_steps = 0
    for _ in range(200):
        _, _, terminated, truncated, info = env.step(np.zeros(env.action_space.shape, np.float32))
        pressure = info["sensors"].foot_pressure
        loaded = 0.1 * sim.weight
        slip = 0.0
        for site, foot in zip(u._sole_sites, u.robot.foot_pressure_slices):
            if pressure[foot].sum() > loaded:
                mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_SITE, int(site), velocity, 0)
                slip += velocity[3] ** 2 + velocity[4] ** 2
        a = sim.actuation
        energy, kernel_slip = walk_effort_terms(a.force, a.qvel, a.qvel_adr, pressure, loaded,
                                                np.array(u.robot.pressure_sensor_feet), u._sole_sites,
                                                m.site_bodyid, m.body_rootid, d.site_xpos, d.cvel, d.subtree_com)
        assert energy == pytest.approx(float(np.abs(sim.actuator_power()).sum()), rel=1e-12)
        assert kernel_slip == pytest.approx(slip, rel=1e-9, abs=1e-15)
        slipping_steps += slip > 0.0
        assert not (terminated or truncated)
    assert slipping_steps > 50


def test_heading_motion_equals_the_torso_velocity_turned_by_its_yaw(robot):
    """The walk's heading-frame velocity and step distance against ``mj_objectVelocity`` of the
    torso turned by the yaw of its quaternion and the distance between its origins, along a turning
    walk (the yaw sweeps through more than half a radian)."""
    env = gym.make(f"upright/{robot.capitalize()}Walk-v0", prior="step_adjust", command=(0.2, 0.05, 0.5))
    sim = env.unwrapped.sim
    m, d = sim.model, sim.data
    torso = m.body(sim.robot.torso_body).id
    env.reset(seed=2)
    last_xy = d.xpos[torso, :2].copy()
    velocity = np.zeros(6)
    yaws = []
    for _ in range(300):
        env.step(np.zeros(env.action_space.shape, np.float32))
        before = last_xy.copy()
        heading, distance = sim.torso_heading_motion(last_xy)
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, torso, velocity, 0)
        w, x, y, z = d.xquat[torso]
        yaw = np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
        turned = [np.cos(yaw) * velocity[3] + np.sin(yaw) * velocity[4],
                  -np.sin(yaw) * velocity[3] + np.cos(yaw) * velocity[4], velocity[2]]
        np.testing.assert_allclose(heading, turned, rtol=1e-12, atol=1e-14)
        assert distance == pytest.approx(np.linalg.norm(d.xpos[torso, :2] - before), rel=1e-12, abs=1e-15)
        np.testing.assert_array_equal(last_xy, d.xpos[torso, :2])
        yaws.append(yaw)
    assert np.ptp(np.unwrap(yaws)) > 0.5


def _tumbling(robot: str, steps: int):
    """States of a get-up episode under random actions (the robot tumbles, the feet press and
    lift), ``(env, info)`` after each step."""
    env = gym.make(f"upright/{robot.capitalize()}GetUp-v0", start="random")
    env.reset(seed=11)
    rng = np.random.default_rng(11)
    for _ in range(steps):
        _, _, _, _, info = env.step(rng.uniform(-1.0, 1.0, env.action_space.shape).astype(np.float32))
        yield env, info


def test_sensor_read_out_and_posture_equal_the_data(robot):
    """The compiled read-out gives the data's joint, IMU and pressure values and the fused angles of
    the quaternion; the compiled posture gives the readable getters' truth."""
    for env, info in _tumbling(robot, 120):
        sim, r = env.unwrapped.sim, env.unwrapped.robot
        m, d = sim.model, sim.data
        s = info["sensors"]
        assert np.array_equal(s.joint_pos, [d.qpos[m.jnt_qposadr[m.joint(j).id]] for j in r.joint_names])
        assert np.array_equal(s.joint_vel, [d.qvel[m.jnt_dofadr[m.joint(j).id]] for j in r.joint_names])
        for field, name in (("gyro", r.gyro_sensor), ("accel", r.accel_sensor), ("quat", r.quat_sensor)):
            assert np.array_equal(getattr(s, field), d.sensor(name).data), field
        assert np.array_equal(s.foot_pressure, [d.sensor(n).data[0] for n in r.pressure_sensors])
        assert np.array_equal(s.fused, fused_angles(s.quat))
        pitch, roll, hemisphere = sim.torso_fused_tilt()
        expected = (pitch, roll, hemisphere, sim.torso_tilt(), sim.head_height(), sim.angular_speed())
        assert sim.posture_values() == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_observation_is_the_blocks_concatenated(robot):
    """``observation_from_sensors`` (compiled) against the blocks concatenated in NumPy, with and
    without the task and prior blocks."""
    rng = np.random.default_rng(2)
    for env, info in _tumbling(robot, 40):
        s = info["sensors"]
        w, x, y, z = s.quat
        gravity = [-(2 * (x * z - w * y)), -(2 * (y * z + w * x)), -(1 - 2 * (x * x + y * y))]
        base = [s.joint_pos, s.joint_vel, s.joint_target, s.gyro, s.accel, gravity, s.fused[:2], s.fused[3:],
                s.foot_pressure]
        task, prior = rng.normal(size=3), rng.normal(size=env.action_space.shape)
        for task_block, prior_targets in ((None, None), (task, None), (task, prior), (None, prior)):
            parts = base + [b for b in (task_block, prior_targets) if b is not None]
            expected = np.concatenate(parts).astype(np.float32)
            observed = observation_from_sensors(s, task_block, prior_targets)
            assert observed.dtype == np.float32 and np.array_equal(observed, expected)


def test_clip_and_sanity_checks_decide_as_numpy():
    """``clip_finite`` clips as ``np.minimum(np.maximum(·))`` and flags what ``np.isfinite`` does;
    ``sane_state`` is finite positions and speeds within the bound (a NaN is not)."""
    rng = np.random.default_rng(0)
    bound = 200.0
    cases = [rng.normal(0.0, scale, size) for size in (1, 3, 8, 25) for scale in (0.1, 2.0, 300.0)]
    cases += [np.array([np.nan, 1.0]), np.array([1.0, np.inf]), np.array([-np.inf]), np.array([1e200, -1e200]),
              np.array([bound, -bound]), np.array([np.nextafter(bound, np.inf), 0.0]), np.zeros(0)]
    for v in cases:
        low, high = -np.ones(v.size), np.full(v.size, 0.5)
        out = np.empty(v.size)
        finite = clip_finite(v, low, high, out)
        assert finite is bool(np.isfinite(v).all()), v
        if finite:
            assert np.array_equal(out, np.minimum(np.maximum(v, low), high))
        with np.errstate(invalid="ignore"):
            speeds_ok = bool(np.all(np.abs(v) <= bound))
        assert sane_state(np.zeros(3), v, bound) is speeds_ok, v
        assert sane_state(v, np.zeros(3), bound) is bool(np.isfinite(v).all()), v


def test_play_dead_band_equals_the_numpy_formula():
    """``play_ctrl`` (the servo play's ``ctrl``, every physics step) against ``q + copysign(max(|e| - h,
    0), e)`` in NumPy, bit for bit, for errors inside, at and beyond the half play, zero play, a
    float32 set-point and a NaN (which stays NaN, as ``np.maximum`` keeps it)."""
    rng = np.random.default_rng(4)
    qpos = rng.normal(0.0, 1.0, 30)
    adr = np.array([3, 7, 8, 12, 20, 21, 29])
    q = qpos[adr]
    half = np.array([0.0, 0.01, 0.01, 0.005, 0.02, 0.0, 0.01])
    for setpoint in (q + rng.normal(0.0, 0.02, adr.size), q + half, q - half, q.copy(),
                     (q + 0.1).astype(np.float32), np.where(np.arange(adr.size) == 2, np.nan, q + 0.03)):
        error = setpoint - q
        expected = q + np.copysign(np.maximum(np.abs(error) - half, 0.0), error)
        out = np.empty(adr.size)
        play_ctrl(setpoint, qpos, adr, half, out)
        np.testing.assert_array_equal(out, expected)
