"""The servo model: delay, force and velocity limits, strength, play, lag, stuck windows."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import assert_hyp_coupled, hold
from upright import Conditions, Simulation, Wear

JOINT = {"nao": "HeadYaw", "wolfgang": "HeadPan"}


def _joint_state(sim: Simulation, name: str) -> tuple[float, float]:
    j = sim.model.joint(name)
    return float(sim.data.qpos[j.qposadr[0]]), float(sim.data.qvel[j.dofadr[0]])


def _step_response(sim: Simulation, name: str, delta: float, seconds: float):
    """Command `delta` rad on joint `name` once and record position, speed, force each physics step."""
    act = sim.model.actuator(name).id
    targets = sim.data.ctrl.copy()
    q0, _ = _joint_state(sim, name)
    targets[act] = q0 + delta
    pos, vel, force = [], [], []
    for _ in range(int(round(seconds / sim.robot.control_period))):
        sim.step(targets)
        q, v = _joint_state(sim, name)
        pos.append(q)
        vel.append(v)
        force.append(float(sim.data.actuator_force[act]))
        assert_hyp_coupled(sim)
    return q0, np.array(pos), np.array(vel), np.array(force)


def test_delay_matches_robot(robot):
    sim = Simulation(robot)
    sim.reset(seed=0)
    hold(sim, 0.5)
    delay = sim.robot.delay_cycles
    q0, pos, _, _ = _step_response(sim, JOINT[robot], 0.5, 0.3)
    # For `delay` control cycles after the command the joint does not move, in the next it does.
    if delay:
        assert np.max(np.abs(pos[:delay] - q0)) < 1e-3
    assert abs(pos[delay] - q0) > 5e-3
    if robot == "nao":
        assert delay * sim.robot.control_period == pytest.approx(0.036)


def test_force_and_velocity_limits(robot):
    sim = Simulation(robot)
    sim.reset(seed=0)
    hold(sim, 0.3)
    name = JOINT[robot]
    m = sim.model
    force_limit = float(m.actuator(name).forcerange[1])
    speed_limit = force_limit / float(m.dof_damping[m.joint(name).dofadr[0]])
    q0, pos, vel, force = _step_response(sim, name, 1.2, 1.0)
    assert np.max(np.abs(force)) <= force_limit + 1e-9
    assert np.max(np.abs(force)) > 0.95 * force_limit  # the step saturates the motor
    assert np.max(np.abs(vel)) <= 1.03 * speed_limit
    assert pos[-1] == pytest.approx(q0 + 1.2, abs=0.05)  # and the joint gets there


def test_strength_halves_maximum_torque(robot):
    name = JOINT[robot]
    peaks = []
    for strength in (1.0, 0.5):
        sim = Simulation(robot, Conditions(wear={name: Wear(strength=strength)}))
        sim.reset(seed=0)
        hold(sim, 0.3)
        _, _, _, force = _step_response(sim, name, 1.2, 0.3)
        peaks.append(np.max(np.abs(force)))
    assert peaks[1] == pytest.approx(0.5 * peaks[0], rel=0.01)


def test_stuck_window_holds_joint_while_target_moves(robot):
    name = JOINT[robot]
    sim = Simulation(robot, Conditions(wear={name: Wear(stuck=((0.2, 0.5),))}))
    sim.reset(seed=0)
    hold(sim, 0.24)  # the window has begun
    q_stuck, _ = _joint_state(sim, name)
    q0, pos, _, _ = _step_response(sim, name, 0.6, 0.3)  # t = 0.24 .. 0.54: inside the window
    assert np.max(np.abs(pos - q_stuck)) < 0.01
    act = sim.model.actuator(name).id
    targets = sim.data.ctrl.copy()
    targets[act] = q0 + 0.6
    hold(sim, 0.6, targets)  # window over at 0.7 s: the joint follows again
    q_after, _ = _joint_state(sim, name)
    assert q_after == pytest.approx(q0 + 0.6, abs=0.05)


def test_play_is_a_dead_band(robot):
    name = JOINT[robot]
    sim = Simulation(robot, Conditions(wear={name: Wear(play=0.2)}))
    sim.reset(seed=0)
    hold(sim, 0.3)
    q0, pos, _, _ = _step_response(sim, name, 0.08, 0.5)  # inside half the play: no torque
    assert abs(pos[-1] - q0) < 0.01
    q0, pos, _, _ = _step_response(sim, name, 0.5, 1.0)  # beyond: stops half the play short
    assert pos[-1] - q0 == pytest.approx(0.5 - 0.1, abs=0.03)


def test_lag_is_a_first_order_filter():
    sim = Simulation("nao", Conditions(wear={"HeadYaw": Wear(lag=0.12)}))
    sim.reset(seed=0)
    act = sim.model.actuator("HeadYaw").id
    targets = sim.data.ctrl.copy()
    start = targets[act]
    targets[act] += 0.5
    delay = sim.robot.delay_cycles
    for _ in range(delay + 10):  # 10 cycles = 0.12 s after arrival = one time constant
        sim.step(targets)
    progress = (sim.setpoint[act] - start) / 0.5
    assert progress == pytest.approx(1 - np.exp(-1.0), abs=0.01)
