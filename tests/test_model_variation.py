"""Model variation as conditions: servo parameters and factors, encoder zero offsets, torso mass and
CoM, and the robot's own sensing (estimated joint velocity, filtered orientation, latency,
foot-pressure noise); and the ``model-variation`` experiment."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from conftest import hold
from upright import PRESETS, Conditions, Simulation
from upright.envs.conditions import ServoFactors, ServoParameters
from upright.envs.sensors import fused_angles


def _actuated_dofs(sim: Simulation) -> np.ndarray:
    m = sim.model
    return m.jnt_dofadr[m.actuator_trnid[:, 0]]


def test_servo_factors_scale_the_model(robot):
    """A fixed factor on every servo parameter reaches the model: gain and bias, force limit, and the
    damping, armature and friction loss of the actuated joints; the factor-1 model is ours."""
    ours = Simulation(robot)
    ours.reset(seed=0)
    factors = ServoFactors(gain=(0.5, 0.5), torque=(0.8, 0.8), damping=(2.0, 2.0), armature=(3.0, 3.0),
                           frictionloss=(0.5, 0.5))
    sim = Simulation(robot, Conditions(servo_factors={"*": factors}))
    sim.reset(seed=0)
    m, n = sim.model, ours.model
    np.testing.assert_allclose(m.actuator_gainprm[:, 0], 0.5 * n.actuator_gainprm[:, 0])
    np.testing.assert_allclose(m.actuator_biasprm[:, 1], 0.5 * n.actuator_biasprm[:, 1])
    np.testing.assert_allclose(m.actuator_forcerange, 0.8 * n.actuator_forcerange)
    dofs = _actuated_dofs(sim)
    for name, k in (("dof_damping", 2.0), ("dof_armature", 3.0), ("dof_frictionloss", 0.5)):
        np.testing.assert_allclose(getattr(m, name)[dofs], k * getattr(n, name)[dofs], err_msg=name)
    # A later episode without the factors (another Simulation's conditions) is ours again.
    assert sim.sampled.servo_factors.shape == (m.nu, 5)


def test_servo_factor_ranges_draw_per_actuator_and_seed(robot):
    conditions = Conditions(servo_factors={"*": ServoFactors(gain=(0.35, 1.5))})
    sim = Simulation(robot, conditions)
    sim.reset(seed=1)
    first = sim.sampled.servo_factors.copy()
    assert np.all((first[:, 0] >= 0.35) & (first[:, 0] <= 1.5)) and np.ptp(first[:, 0]) > 0.3
    np.testing.assert_array_equal(first[:, 1:], 1.0)
    sim.reset(seed=1)
    np.testing.assert_array_equal(sim.sampled.servo_factors, first)
    sim.reset(seed=2)
    assert not np.array_equal(sim.sampled.servo_factors, first)


def test_soft_servos_preset_sets_the_published_gains():
    """``soft-servos``: the Bit-Bots' MJX Wolfgang servos by class, HULKs' NAO gain on every joint."""
    wolfgang = Simulation("wolfgang", "soft-servos").model
    for name, kp, torque in (("LKnee", 21.0, 8.0), ("LHipPitch", 21.0, 8.0), ("HeadPan", 12.5, 5.0)):
        actuator = wolfgang.actuator(name)
        assert actuator.gainprm[0] == kp and actuator.biasprm[1] == -kp
        assert tuple(actuator.forcerange) == (-torque, torque)
    nao, ours = Simulation("nao", "soft-servos").model, Simulation("nao").model
    np.testing.assert_array_equal(nao.actuator_gainprm[:, 0], 21.1)
    np.testing.assert_array_equal(nao.actuator_forcerange, ours.actuator_forcerange)


def test_servo_keys_are_checked(robot):
    with pytest.raises(ValueError, match="unknown servos.*mx107"):
        Simulation(robot, Conditions(servo_parameters={f"{robot}/mx107": ServoParameters(gain=1.0)}))
    with pytest.raises(ValueError, match="unknown robot 'wolfgnag'"):
        Conditions(servo_factors={"wolfgnag/*": ServoFactors()})
    with pytest.raises(ValueError, match="ServoFactors.gain"):
        ServoFactors(gain=(0.0, 1.0))
    with pytest.raises(ValueError, match="unknown orientation 'kalman'"):
        Conditions(orientation="kalman")
    with pytest.raises(ValueError, match="sensor_latency_cycles"):
        Conditions(sensor_latency_cycles=-1)
    with pytest.raises(ValueError, match=r"servo_factors\['\*'\].*gian"):
        Conditions.from_dict({"servo_factors": {"*": {"gian": [1, 2]}}})


def test_zero_offset_shifts_what_the_servo_holds(robot):
    """A miscalibrated encoder reads the true angle minus its offset, and the servo drives the
    encoder angle to the target: the true joint settles near target + offset."""
    sim = Simulation(robot, Conditions(zero_offset=0.05))
    s = sim.reset(seed=3)
    offset = sim.sampled.zero_offset
    assert offset.shape == (sim.model.nu,) and np.all(np.abs(offset) <= 0.05) and np.ptp(offset) > 0.02
    m = sim.model
    qadr = m.jnt_qposadr[m.actuator_trnid[:, 0]]
    joint_index = np.array(sim.robot.actuated_joint_index)
    np.testing.assert_allclose(s.joint_pos[joint_index], sim.data.qpos[qadr] - offset, atol=1e-12)
    # Hanging in the air, a light joint (the head's yaw) settles at target + offset.
    name = {"nao": "HeadYaw", "wolfgang": "HeadPan"}[robot]
    i = m.actuator(name).id
    hold(sim, 1.0)
    assert sim.data.qpos[qadr[i]] == pytest.approx(sim.data.ctrl[i], abs=1e-3)  # friction loss's dead band
    assert sim.data.ctrl[i] == pytest.approx(s.joint_target[i] + offset[i])


def test_torso_mass_and_com(robot):
    ours = Simulation(robot)
    sim = Simulation(robot, Conditions(torso_mass=(0.5, 0.5), torso_com_offset=0.03))
    ours.reset(seed=0)
    sim.reset(seed=0)
    torso = sim.model.body(sim.robot.torso_body).id
    assert sim.model.body_mass[torso] == pytest.approx(ours.model.body_mass[torso] + 0.5)
    shift = sim.model.body_ipos[torso] - ours.model.body_ipos[torso]
    np.testing.assert_allclose(shift, sim.sampled.torso_com_offset)
    assert np.all(np.abs(shift) <= 0.03) and np.any(np.abs(shift) > 0.005)
    with pytest.raises(ValueError, match="without mass"):
        Simulation(robot, Conditions(torso_mass=(-50.0, -50.0))).reset(seed=0)


def test_estimated_joint_velocity_is_the_encoder_difference(robot):
    sim = Simulation(robot, Conditions(joint_velocity="difference", joint_noise=0.002))
    before = sim.reset(seed=0)
    np.testing.assert_array_equal(before.joint_vel, 0.0)
    targets = sim.data.ctrl.copy() + 0.05
    for _ in range(5):
        after = sim.step(targets)
        np.testing.assert_allclose(after.joint_vel, (after.joint_pos - before.joint_pos) / sim.robot.control_period)
        before = after
    # Noise of 0.002 rad on both angles, 12 or 10 ms apart: about 0.2-0.3 rad/s of velocity noise.
    true = sim.data.qvel[sim._sensor_adr[1]]
    assert 0.05 < np.std(after.joint_vel - true) < 0.6


def test_filtered_orientation_follows_the_truth_and_drifts_in_yaw(robot):
    """The complementary filter: tilt within a few hundredths of a radian of the truth while the
    robot stands and after it has fallen and lies still; yaw from the noisy gyro alone."""
    conditions = Conditions(orientation="filter", gyro_noise=0.01, accel_noise=0.05)
    sim = Simulation(robot, conditions)
    s = sim.reset(seed=0)
    np.testing.assert_allclose(s.quat, sim.sensors().quat)  # a second read in the same cycle changes nothing
    hold(sim, 1.0)
    s = sim.sensors()
    true = fused_angles(sim.torso_pose()[1])
    assert abs(s.fused[0] - true[0]) < 0.03 and abs(s.fused[1] - true[1]) < 0.03
    # Let it fall over: limp servos.
    sim.model.actuator_gainprm[:, 0] = 0.0
    sim.model.actuator_biasprm[:, 1] = 0.0
    hold(sim, 4.0)
    s = sim.sensors()
    true = fused_angles(sim.data.sensordata[sim._quat])
    assert abs(true[0]) > 0.5 or abs(true[1]) > 0.5  # it fell
    assert abs(s.fused[0] - true[0]) < 0.05 and abs(s.fused[1] - true[1]) < 0.05
    assert not np.array_equal(s.quat, sim.data.sensordata[sim._quat])


def test_sensor_latency_delays_every_reading_but_the_clock(robot):
    """With L cycles of latency, cycle t reads what cycle t - L measured (noise-free conditions, so
    both simulations are the same trajectory); the time and the last command are now's."""
    latency = 2
    now, late = Simulation(robot), Simulation(robot, Conditions(sensor_latency_cycles=latency))
    readings = [now.reset(seed=0)]
    delayed = [late.reset(seed=0)]
    targets = now.data.ctrl.copy() + 0.1
    for _ in range(6):
        readings.append(now.step(targets))
        delayed.append(late.step(targets))
    for t, s in enumerate(delayed):
        expected = readings[max(0, t - latency)]
        np.testing.assert_array_equal(s.joint_pos, expected.joint_pos)
        np.testing.assert_array_equal(s.quat, expected.quat)
        assert s.time == readings[t].time
        np.testing.assert_array_equal(s.joint_target, readings[t].joint_target)


def test_pressure_noise_stays_non_negative(robot):
    sim = Simulation(robot, Conditions(pressure_noise=0.01))
    s = sim.reset(seed=0)
    clean = Simulation(robot)
    c = clean.reset(seed=0)
    assert np.all(s.foot_pressure >= 0.0) and not np.array_equal(s.foot_pressure, c.foot_pressure)
    assert np.max(np.abs(s.foot_pressure - c.foot_pressure)) < 5 * 0.01 * sim.weight


def test_sim2real_round_trips_and_keeps_the_observation_layout(robot):
    """The preset goes through JSON and back, draws every factor, and an environment under it
    observes the same layout as under ``lab`` (so shipped policies still load)."""
    preset = PRESETS["sim2real"]
    assert Conditions.from_dict(json.loads(json.dumps(preset.to_dict()))) == preset
    env_id = f"upright/{robot.capitalize()}Walk-v0"
    lab, varied = gym.make(env_id), gym.make(env_id, conditions="sim2real")
    assert lab.observation_space == varied.observation_space
    obs, _ = varied.reset(seed=5)
    assert obs.shape == lab.observation_space.shape and np.all(np.isfinite(obs))
    sampled = varied.unwrapped.sim.sampled
    assert sampled.servo_factors is not None and sampled.zero_offset is not None and sampled.torso_mass != 0.0
    assert 1 <= sampled.sensor_latency_cycles <= 3
    for _ in range(20):
        obs, *_ = varied.step(np.zeros(varied.action_space.shape))
    assert np.all(np.isfinite(obs))


def test_model_variation_strength_moves_the_draw_toward_our_model(robot):
    """``set_model_variation(s)`` keeps s of each reset's model draw under ``sim2real``: servo
    factors 1 + s (f − 1), zero offsets, torso load and latency times s, from the same random
    numbers; 0 is our own model (the servos as ``competition``'s), 1 the preset's draw; a fraction
    outside [0, 1] is refused by name."""
    env_id = f"upright/{robot.capitalize()}Walk-v0"
    full, half, none = (gym.make(env_id, conditions="sim2real") for _ in range(3))
    half.unwrapped.set_model_variation(0.5)
    none.unwrapped.set_model_variation(0.0)
    for env in (full, half, none):
        env.reset(seed=7)
    f, h, z = (env.unwrapped.sim.sampled for env in (full, half, none))
    np.testing.assert_allclose(h.servo_factors, 1.0 + 0.5 * (f.servo_factors - 1.0))
    np.testing.assert_allclose(h.zero_offset, 0.5 * f.zero_offset)
    assert h.torso_mass == pytest.approx(0.5 * f.torso_mass) and h.wear == f.wear
    np.testing.assert_allclose(h.torso_com_offset, 0.5 * f.torso_com_offset)
    assert h.sensor_latency_cycles == round(0.5 * f.sensor_latency_cycles)
    assert np.all(z.servo_factors == 1.0) and np.all(z.zero_offset == 0.0) and z.torso_mass == 0.0
    assert z.sensor_latency_cycles == 0 and z.mass_scale == f.mass_scale
    competition = Simulation(robot, PRESETS["competition"])
    competition.reset(seed=7)  # the same wear: drawn before the model factors
    np.testing.assert_allclose(none.unwrapped.sim.model.actuator_gainprm, competition.model.actuator_gainprm)
    with pytest.raises(ValueError, match="model variation must be a fraction in \\[0, 1\\], got 1.5"):
        full.unwrapped.set_model_variation(1.5)


def test_changed_parses_plain_data():
    changed = PRESETS["lab"].changed({"servo_factors": {"nao/*": {"gain": [0.5, 0.5]}}, "torso_mass": [1, 1]})
    assert changed.servo_factors["nao/*"].gain == (0.5, 0.5) and changed.torso_mass == (1.0, 1.0)
    with pytest.raises(ValueError, match="unknown field"):
        PRESETS["lab"].changed({"servo_factor": {}})


def test_model_variation_experiment_writes_table_and_picture(tmp_path):
    """Two cells of one row, one short episode each: a results table with a rate per cell, and the
    picture."""
    from upright.eval.experiments import run_experiment

    tables = run_experiment("model-variation", tmp_path, episodes=1, progress=False,
                            settings={"only": "NaoGetUp keyframe", "cells": ["ours", "gain-x0.35"],
                                      "max_episode_seconds": 2.0})
    rows = tables[0].rows
    assert [r["cell"] for r in rows] == ["ours", "gain-x0.35"] and all(r["rate"][1] == 1 for r in rows)
    assert (tmp_path / "model-variation.png").stat().st_size > 5000
    done = json.loads((tmp_path / "NaoGetUp-keyframe" / "gain-x0.35" / "results.json").read_text())
    assert done["conditions"]["servo_factors"] == {"*": {"gain": [0.35, 0.35], "torque": [1.0, 1.0],
                                                         "damping": [1.0, 1.0], "armature": [1.0, 1.0],
                                                         "frictionloss": [1.0, 1.0]}}


def test_a_cell_changes_fields_of_the_preset_it_names():
    """``{preset: sim2real, FIELD: …}`` is sim2real with that field changed (the sim2real-without-*
    cells take one group out of it); a field alone changes the base; a bad field is named."""
    from upright.eval.experiments.model_variation import DATA, cell_conditions

    base = PRESETS["lab"]
    without_torso = cell_conditions({"preset": "sim2real", "torso_mass": [0.0, 0.0], "torso_com_offset": 0.0},
                                    "nao", base)
    assert without_torso == PRESETS["sim2real"].with_(torso_mass=(0.0, 0.0), torso_com_offset=0.0)
    assert without_torso != PRESETS["sim2real"]
    assert cell_conditions({"preset": "sim2real"}, "nao", base) == PRESETS["sim2real"]
    assert cell_conditions({"torso_mass": [1.0, 1.0]}, "nao", base) == base.with_(torso_mass=(1.0, 1.0))
    assert cell_conditions(DATA["cells"]["sim2real-without-wear"], "wolfgang", base).random_wear is None
    with pytest.raises(ValueError, match="torso_mas"):
        cell_conditions({"preset": "sim2real", "torso_mas": [0.0, 0.0]}, "nao", base)
