"""The disturbances do what the presets promise, measured on what reaches the physics: the thesis's
random force (statistics of the applied force), pushes and impulses (momentum they give a robot),
sensor noise against simulator truth, and servo strength (gain and bias, not only the force range)."""

from __future__ import annotations

import gymnasium as gym
import mujoco
import numpy as np
import pytest
from scipy import stats

from conftest import hold
from upright import PRESETS, Conditions, Impulse, Simulation, Wear
from upright.envs.robots import ROBOT_NAMES, get_robot

#: The thesis's protocol (its listing C.1): x and y each uniform in ±100 N, redrawn every 1 ms,
#: on the 7.5 kg Wolfgang: the per-axis RMS impulse over one second is 100 N · √(0.001 s / 3).
THESIS_FORCE, THESIS_STEP, THESIS_MASS = 100.0, 0.001, 7.5
THESIS_RMS_PER_SECOND = THESIS_FORCE * np.sqrt(THESIS_STEP / 3.0)  # 1.826 N·s per axis


def _record_forces(sim: Simulation, periods: int, monkeypatch) -> np.ndarray:
    """Step ``sim`` ``periods`` control periods with the physics replaced by a clock, recording
    the torso's applied wrench of every physics step: shape (periods, n_substeps, 6)."""
    torso = sim.model.body(sim.robot.torso_body).id
    applied: list[np.ndarray] = []

    def clock(m, d, nstep=1):  # what mj_step would be given, one row per physics step
        applied.extend([d.xfrc_applied[torso].copy()] * nstep)
        d.time += nstep * m.opt.timestep

    monkeypatch.setattr(mujoco, "mj_step", clock)
    targets = sim.data.ctrl.copy()
    for _ in range(periods):
        sim.step(targets)
    monkeypatch.undo()
    return np.array(applied).reshape(periods, sim.n_substeps, 6)


def _head_pitch(robot: str) -> tuple[str, str]:
    """The joint that moves the body of the robot's head-top site, and that body (NAO: HeadPitch,
    Head; Wolfgang: HeadTilt, head)."""
    spec = get_robot(robot)
    model = mujoco.MjModel.from_xml_path(str(spec.mjcf))
    body = int(model.site_bodyid[model.site(spec.head_top_site).id])
    (joint,) = [model.joint(j).name for j in range(model.njnt) if model.jnt_bodyid[j] == body]
    return joint, model.body(body).name


@pytest.mark.parametrize("play", [False, True], ids=["thesis", "thesis-with-play"])
def test_thesis_force_has_the_documented_statistics(play, monkeypatch):
    """What ``Conditions.push_force`` documents: horizontal, a new magnitude and direction every
    control period held for the period, zero mean, isotropic, magnitude uniform in
    [0, F·m/m_ref/√n], and per axis the thesis protocol's RMS impulse per second scaled with the
    robot's mass (so both robots get the same acceleration). With servo play the periods run
    physics step by physics step (the push must survive that path)."""
    per_second = {}
    for robot in ROBOT_NAMES:
        wear = {_head_pitch(robot)[0]: Wear(play=0.01)} if play else {}
        sim = Simulation(robot, PRESETS["thesis"].with_(wear=wear))
        sim.reset(seed=3)
        assert sim.servos.has_play == play
        periods = 4000
        wrench = _record_forces(sim, periods, monkeypatch)
        assert not wrench[:, :, 2:].any()  # horizontal force only, no torque
        force = wrench[:, 0, :2]
        assert (wrench[:, :, :2] == force[:, None, :]).all()  # held for the whole control period
        assert len(np.unique(force[:, 0])) == periods  # and redrawn every period
        n, dt = sim.n_substeps, sim.model.opt.timestep
        bound = THESIS_FORCE * sim.total_mass / THESIS_MASS / np.sqrt(n)
        magnitude, angle = np.linalg.norm(force, axis=1), np.arctan2(force[:, 1], force[:, 0])
        assert magnitude.max() <= bound * (1 + 1e-12) and magnitude.max() > 0.99 * bound
        assert stats.kstest(magnitude / bound, "uniform").pvalue > 1e-3
        assert stats.kstest((angle + np.pi) / (2 * np.pi), "uniform").pvalue > 1e-3
        impulse = force * n * dt  # N·s per control period, per axis
        rms = np.sqrt(np.mean(impulse**2, axis=0))
        assert np.all(np.abs(impulse.mean(axis=0)) < 4 * rms / np.sqrt(periods))  # zero mean
        assert rms[0] == pytest.approx(rms[1], rel=0.08)  # isotropic ...
        assert abs(np.corrcoef(impulse.T)[0, 1]) < 0.07  # ... and uncorrelated
        per_second[robot] = rms * np.sqrt(1.0 / (n * dt))  # independent periods: variances add
        expected = THESIS_RMS_PER_SECOND * sim.total_mass / THESIS_MASS
        assert per_second[robot] == pytest.approx([expected, expected], rel=0.06), robot
    masses = {r: Simulation(r).total_mass for r in per_second}
    first, *others = per_second
    for other in others:
        ratio = per_second[first] / per_second[other]
        assert ratio == pytest.approx([masses[first] / masses[other]] * 2, rel=0.06), other


def test_push_strength_scales_the_random_push_from_the_same_draws():
    """``UprightEnv.set_push_strength``: the fraction of ``thesis``'s random push that acts. The
    same seed draws the same directions and magnitudes at every strength (a curriculum changes the
    force, not the episode's other random numbers), the pushes scale with it, 0 leaves none; a
    fraction outside [0, 1] is named."""
    pushes = {}
    for strength in (1.0, 0.25, 0.0):
        env = gym.make("upright/WolfgangGetUp-v0", conditions="thesis", start="standing")
        env.unwrapped.set_push_strength(strength)
        env.reset(seed=5)
        steps = []
        for _ in range(20):
            env.step(np.zeros(env.action_space.shape, dtype=np.float32))
            steps.append(env.unwrapped.sim.torso_push())
        pushes[strength] = np.array(steps)
        env.close()
    assert np.linalg.norm(pushes[1.0], axis=1).min() > 0.0
    np.testing.assert_allclose(pushes[0.25], 0.25 * pushes[1.0], rtol=1e-12, atol=1e-12)
    assert not pushes[0.0].any()
    env = gym.make("upright/WolfgangGetUp-v0", conditions="thesis")
    for bad in (1.5, -0.1, "half"):
        with pytest.raises(ValueError, match=f"push strength must be a fraction in \\[0, 1\\], got {bad!r}"):
            env.unwrapped.set_push_strength(bad)
    env.close()


def _floating(robot: str, conditions: Conditions, seed: int) -> Simulation:
    """``robot`` 1 m above the ground without gravity: only the disturbances change its momentum."""
    sim = Simulation(robot, conditions)
    sim.model.opt.gravity[:] = 0.0
    sim.reset(seed=seed, height_offset=1.0)
    return sim


def _momentum(sim: Simulation) -> np.ndarray:
    mujoco.mj_subtreeVel(sim.model, sim.data)
    torso = sim.model.body(sim.robot.torso_body).id
    return sim.total_mass * sim.data.subtree_linvel[torso].copy()


def test_random_pushes_give_the_thesis_impulse_to_a_real_robot():
    """Momentum each second of thesis pushes gives a floating robot (real physics), over seeds and
    seconds: per axis zero mean and the protocol's RMS impulse per second for the robot's mass,
    so the same velocity change for both robots; nothing vertical."""
    for robot in ROBOT_NAMES:
        changes = []
        for seed in range(3):
            sim = _floating(robot, PRESETS["thesis"], seed)
            p = _momentum(sim)
            for _ in range(8):
                hold(sim, 1.0)
                assert not sim.unstable
                now = _momentum(sim)
                changes.append(now - p)
                p = now
        changes = np.array(changes)  # 24 one-second windows
        expected = THESIS_RMS_PER_SECOND * sim.total_mass / THESIS_MASS
        assert np.abs(changes[:, 2]).max() < 0.01 * expected
        rms = np.sqrt(np.mean(changes[:, :2] ** 2))  # 48 samples: 3 standard errors ≈ 30 %
        assert rms == pytest.approx(expected, rel=0.3), (robot, rms, expected)
        assert np.abs(changes[:, :2].mean(axis=0)).max() < 4 * expected / np.sqrt(len(changes))
        velocity = rms / sim.total_mass
        assert velocity == pytest.approx(THESIS_RMS_PER_SECOND / THESIS_MASS, rel=0.3)
    # without pushes the same robot keeps its momentum
    calm = _floating("nao", PRESETS["turf"], 0)
    p = _momentum(calm)
    hold(calm, 1.0)
    assert np.abs(_momentum(calm) - p).max() < 1e-3


@pytest.mark.parametrize("force", [(0.0, 30.0), (-25.0, 0.0), (18.0, -24.0)])
def test_an_impulse_gives_its_momentum_in_its_direction_only_while_it_acts(force):
    sim = _floating("nao", Conditions(impulses=(Impulse(time=0.3, force=force, duration=0.12),)), 0)
    p0 = _momentum(sim)
    hold(sim, 0.288)  # up to the control period that starts at 0.3 s
    assert np.abs(_momentum(sim) - p0).max() < 1e-3
    hold(sim, 0.3)
    change = _momentum(sim) - p0
    np.testing.assert_allclose(change, [*np.multiply(force, 0.12), 0.0], atol=0.01 * np.hypot(*force) * 0.12)
    hold(sim, 0.2)  # over: the momentum stays
    np.testing.assert_allclose(_momentum(sim) - p0, change, atol=1e-3)


def test_an_impulse_on_a_standing_robot_moves_it_along_the_push_only():
    """NAO standing on the floor, pushed sideways: the CoM goes the push's way, hardly along x."""
    moved = []
    for seed in range(3):
        sim = Simulation("nao", Conditions(impulses=(Impulse(time=0.5, force=(0.0, 30.0), duration=0.1),)))
        sim.reset(seed=seed)
        hold(sim, 0.5)
        c0 = sim.com()
        hold(sim, 0.2)
        moved.append(sim.com() - c0)
    moved = np.array(moved)
    assert np.all(moved[:, 1] > 0.003)
    assert np.all(np.abs(moved[:, 0]) < 0.2 * moved[:, 1])


def _truth(sim: Simulation) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r, d = sim.robot, sim.data
    joints = np.array([d.qpos[sim.model.jnt_qposadr[sim.model.joint(j).id]] for j in r.joint_names])
    accel = d.sensordata[sim.model.sensor(r.accel_sensor).adr[0]:][:3].copy()
    return joints, sim.angular_velocity(), accel


def test_sensor_noise_per_channel_against_simulator_truth(robot):
    """Under ``competition`` every channel's error has zero mean and the configured standard
    deviation (±20 %); joint velocities, orientation and foot pressure are exact; in ``lab``
    everything is exact."""
    c = PRESETS["competition"]
    sim = Simulation(robot, "competition")
    sim.reset(seed=1)
    errors = {"joint": [], "gyro": [], "accel": []}
    targets = sim.data.ctrl.copy()
    for k in range(300):
        s = sim.step(targets + 0.05 * np.sin(0.05 * k))
        joints, gyro, accel = _truth(sim)
        for name, measured, true in (("joint", s.joint_pos, joints), ("gyro", s.gyro, gyro), ("accel", s.accel, accel)):
            errors[name].append(measured - true)
        dofs = [sim.model.joint(j).dofadr[0] for j in sim.robot.joint_names]
        np.testing.assert_array_equal(s.joint_vel, sim.data.qvel[dofs])
    for name, std in (("joint", c.joint_noise), ("gyro", c.gyro_noise), ("accel", c.accel_noise)):
        e = np.array(errors[name])  # (300, channels)
        assert e.std(axis=0) == pytest.approx(np.full(e.shape[1], std), rel=0.2), name
        assert np.all(np.abs(e.mean(axis=0)) < 4 * std / np.sqrt(len(e))), name
        assert np.abs(np.corrcoef(e.T) - np.eye(e.shape[1])).max() < 0.25, name  # independent channels
    lab = Simulation(robot, "lab")
    lab.reset(seed=1)
    for k in range(20):
        s = lab.step(targets + 0.05 * np.sin(0.05 * k))
        for measured, true in zip((s.joint_pos, s.gyro, s.accel), _truth(lab)):
            np.testing.assert_array_equal(measured, true)


def _loaded(robot: str, strength: float, torque: float) -> tuple[float, float, float]:
    """Steady state of the head pitch joint under an external pitch torque (N·m) on the head:
    (set-point − angle, actuator force, force limit)."""
    joint, body = _head_pitch(robot)
    sim = Simulation(robot, Conditions(wear={joint: Wear(strength=strength)}))
    sim.reset(seed=0)
    sim.data.xfrc_applied[sim.model.body(body).id, 3:] = [0.0, torque, 0.0]
    hold(sim, 2.0)
    act, adr = sim.model.actuator(joint).id, sim.model.joint(joint).qposadr[0]
    assert abs(sim.data.qvel[sim.model.joint(joint).dofadr[0]]) < 2e-3  # at rest
    return (float(sim.data.ctrl[act] - sim.data.qpos[adr]), float(sim.data.actuator_force[act]),
            float(sim.model.actuator_forcerange[act, 1]))


def test_strength_scales_the_position_gain_and_its_bias(robot):
    """``Wear.strength`` s scales the position gain: under the same load the steady-state error is
    1/s times as large; during an unsaturated step the force is s·kp·(set-point − angle) at every
    instant (gain and bias scaled alike, so no force at the set-point), within s × the limit."""
    joint = _head_pitch(robot)[0]
    new = Simulation(robot).model.actuator(joint)
    kp, new_limit = new.gainprm[0], new.forcerange[1]
    errors = {}
    for s in (1.0, 0.5):
        e0, _, _ = _loaded(robot, s, 0.0)
        e1, f1, limit = _loaded(robot, s, 0.8)
        errors[s] = e1 - e0
        assert limit == pytest.approx(s * new_limit) and abs(f1) < limit  # unsaturated
    assert errors[0.5] / errors[1.0] == pytest.approx(2.0, rel=0.06)
    for s in (1.0, 0.5):
        sim = Simulation(robot, Conditions(wear={joint: Wear(strength=s)}))
        sim.reset(seed=0)
        hold(sim, 0.2)
        m, d = sim.model, sim.data
        act, adr = m.actuator(joint).id, m.joint(joint).qposadr[0]
        targets = d.ctrl.copy()
        targets[act] += 0.03
        ratios, angles = [], []
        for _ in range(20):
            sim.step(targets)
            mujoco.mj_forward(m, d)  # the actuator force of the state now (mj_step left the one before)
            error = d.ctrl[act] - d.qpos[adr]
            if abs(error) > 1e-3:
                ratios.append(d.actuator_force[act] / error)
            assert abs(d.actuator_force[act]) < s * new_limit
            angles.append(d.qpos[adr])
        np.testing.assert_allclose(ratios, s * kp, rtol=1e-6)
        assert len(ratios) >= 3 and np.ptp(angles) > 0.02
