"""The get-up starts' push and the presets' disturbances add up: a caller's torso
force survives servo play and random pushes, and scheduled impulses stay out of the pre-roll."""

import numpy as np
import pytest

from upright.envs.conditions import Conditions, Impulse, Wear
from upright.envs.simulation import Simulation

FORCE = np.array([12.0, -5.0])


def test_torso_force_survives_servo_play():
    sim = Simulation("nao", Conditions(wear={"LHipPitch": Wear(play=0.02)}))
    sim.reset(seed=0)
    sim.torso_force = FORCE.copy()
    sim.step(sim.data.ctrl.copy())
    assert sim.data.xfrc_applied[sim._torso, :2] == pytest.approx(FORCE)
    sim.torso_force = np.zeros(2)
    sim.step(sim.data.ctrl.copy())
    assert not sim.data.xfrc_applied[sim._torso, :2].any()


def test_torso_force_adds_to_random_pushes():
    sim = Simulation("wolfgang", "thesis")
    sim.reset(seed=0)
    sim.torso_force = FORCE.copy()
    bound = sim._push_scale / np.sqrt(sim.n_substeps)
    extra = []
    for _ in range(50):
        sim.step(sim.data.ctrl.copy())
        extra.append(sim.data.xfrc_applied[sim._torso, :2] - FORCE)
    extra = np.array(extra)
    assert np.linalg.norm(extra, axis=1).max() <= bound + 1e-9
    assert np.linalg.norm(extra, axis=1).min() > 0.0  # the random push is still there


def test_scheduled_impulses_wait_for_the_episode_clock():
    impulse = Impulse(time=0.0, force=(30.0, 0.0), duration=1.0)
    sim = Simulation("nao", Conditions(impulses=(impulse,)))
    sim.reset(seed=0)
    with sim.pre_roll():
        sim.step(sim.data.ctrl.copy())
        assert not sim.data.xfrc_applied[sim._torso, :2].any()
    sim.restart_clock()
    sim.step(sim.data.ctrl.copy())
    assert sim.data.xfrc_applied[sim._torso, :2] == pytest.approx([30.0, 0.0])


def _fall_start_torso(conditions: Conditions, seed: int) -> np.ndarray:
    import gymnasium as gym

    import upright  # noqa: F401

    env = gym.make("upright/NaoGetUp-v0", start="fall", conditions=conditions)
    env.reset(seed=seed)
    torso = env.unwrapped.sim.data.qpos[:3].copy()
    env.close()
    return torso


@pytest.mark.parametrize("seed", [3, 4])
def test_fall_start_is_the_same_with_negligible_play(seed):
    """Play too small to matter (1e-9 rad on every joint) switches the simulation to its per-substep
    path; the fall start, push included, must come out where it does in lab."""
    from upright.envs.robots import get_robot

    tiny = Conditions(wear={j: Wear(play=1e-9) for j in get_robot("nao").actuator_names})
    lab = _fall_start_torso(Conditions(), seed)
    assert np.linalg.norm(_fall_start_torso(tiny, seed) - lab) < 0.02
