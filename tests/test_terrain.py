"""Scenes built with MjSpec: turf, ramp and the obstacle course."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from conftest import hold
from upright import Conditions, Simulation
from upright.envs.terrain import OBSTACLE_COURSE, obstacle_at


def _ground_height(sim: Simulation, x: float, y: float = 0.0) -> float:
    """Height of the ground under (x, y): a ray cast down that sees only world geoms."""
    geomid = np.zeros(1, dtype=np.int32)
    groups = np.array([1] * 6, dtype=np.uint8)
    distance = mujoco.mj_ray(sim.model, sim.data, np.array([x, y, 1.0]), np.array([0, 0, -1.0]),
                             groups, 1, sim.model.body(sim.robot.torso_body).id, geomid)
    assert distance >= 0, f"no ground under ({x}, {y})"
    return 1.0 - distance


def test_obstacle_course_heights():
    sim = Simulation("nao", Conditions(terrain="obstacles"))
    sim.reset(seed=0)
    expected = {1.5: 0.0, 3.3: 0.003, 3.9: 0.006, 4.5: 0.006, 5.25: 0.01, 6.15: 0.01}
    for x, height in expected.items():
        assert _ground_height(sim, x) == pytest.approx(height, abs=2e-4), x
    # ramps rise gradually: half-way up the first ramp the ground is at half height
    assert _ground_height(sim, 4.9 + 0.15) == pytest.approx(0.005, abs=5e-4)
    blocks3 = [o for o in OBSTACLE_COURSE if o.name == "3 mm wooden blocks"][0]
    heights = [_ground_height(sim, x, y) for x in np.linspace(blocks3.x_start, blocks3.x_end, 40)
               for y in np.linspace(-0.3, 0.3, 13)]
    assert max(heights) == pytest.approx(0.003, abs=2e-4) and min(heights) == pytest.approx(0.0, abs=1e-6)
    assert obstacle_at(3.3) == "3 mm edge" and obstacle_at(-1.0) is None


def test_ramp_tilt():
    sim = Simulation("nao", Conditions(terrain="ramp", ramp_tilt_deg=3.0))
    sim.reset(seed=0)
    rise = _ground_height(sim, 2.0) - _ground_height(sim, 1.0)  # (the robot stands at x = 0)
    assert rise == pytest.approx(np.tan(np.deg2rad(3.0)), rel=1e-3)


def test_turf_is_redrawn_per_seed_and_bounded():
    sim = Simulation("nao", "turf")
    sim.reset(seed=1)
    a = sim.model.hfield_data.copy()
    sim.reset(seed=2)
    b = sim.model.hfield_data.copy()
    sim.reset(seed=1)
    assert np.array_equal(a, sim.model.hfield_data) and not np.array_equal(a, b)
    heights = [_ground_height(sim, x, y) for x in np.linspace(1.0, 2.0, 11) for y in np.linspace(-0.5, 0.5, 11)]
    assert -0.0101 < min(heights) and max(heights) <= 1e-6 and max(heights) - min(heights) > 0.004


def test_coarse_turf_field_samples_the_same_draw():
    """The collision field of a coarser ``turf_cell`` holds the 2 cm draw's heights at its vertices
    (filtered by ``coarse_turf``, within a few hundredths of the range), uses the same random
    numbers (the episode's later draws are unchanged), and MuJoCo's surface between its vertices
    is the linear interpolation the equivalence protocol evaluates."""
    from upright.envs.terrain import coarse_turf
    from upright.eval.experiments.turf import surface_on_draw_grid

    fine, coarse = Simulation("nao", "turf"), Simulation("nao", Conditions(terrain="turf", turf_cell=0.04))
    fine.reset(seed=5)
    coarse.reset(seed=5)
    assert fine.conditions.turf_cell == 0.02
    f, c = (sim.model.hfield_data.reshape(n, n) for sim, n in ((fine, 401), (coarse, 201)))
    assert np.allclose(c, coarse_turf(f.astype(float), 2), rtol=0.0, atol=1e-6)
    assert 0.0 <= c.min() and c.max() <= 1.0 and np.abs(c - f[::2, ::2]).max() < 0.05
    assert fine.rng.random() == coarse.rng.random()
    surface = surface_on_draw_grid(c.astype(float), 2) * 0.01 - 0.01
    for row, col in ((225, 251), (226, 251), (227, 252), (228, 253), (226, 254)):
        x, y = -4.0 + 0.02 * col, -4.0 + 0.02 * row
        assert _ground_height(coarse, x, y) == pytest.approx(surface[row, col], abs=1e-6), (row, col)


@pytest.mark.parametrize("turf_cell", [0.03, 0.07, 8.02])
def test_turf_cell_must_fit_the_draw_grid(turf_cell):
    with pytest.raises(ValueError, match="turf_cell"):
        Simulation("nao", Conditions(terrain="turf", turf_cell=turf_cell))
    with pytest.raises(ValueError, match="turf_cell"):
        Conditions(terrain="turf", turf_cell=0.0)


@pytest.mark.parametrize("terrain", ["turf", "ramp", "obstacles"])
def test_robot_stands_on_every_terrain(robot, terrain):
    sim = Simulation(robot, Conditions(terrain=terrain, ramp_tilt_deg=3.0))
    sim.reset(seed=0)
    assert sim.floor_penetration() < 1e-3
    hold(sim, 3.0)
    assert not sim.unstable
    assert np.rad2deg(sim.torso_tilt()) < 25
    assert sim.sensors().foot_pressure.sum() > 0.8 * sim.total_mass * 9.81
