"""The observation's layout table (``envs/observation.py``): the environments' observations are
its blocks in order, and ``docs/environments.md`` and the docstrings show its rendering."""

from __future__ import annotations

import difflib
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import upright  # noqa: F401  (registers the environments)
from upright.envs import base
from upright.envs.getup import GetUpEnv
from upright.envs.observation import OBSERVATION, PLACEHOLDER, docstring_table, markdown_table
from upright.envs.walk import WalkEnv

ROOT = Path(__file__).resolve().parents[1]
#: One environment of each robot, task and option (prior, odometry): every block of the table.
CASES = [
    ("upright/NaoGetUp-v0", {}), ("upright/NaoGetUp-v0", {"prior": "keyframe"}),
    ("upright/WolfgangGetUp-v0", {}), ("upright/WolfgangGetUp-v0", {"prior": "spline"}),
    ("upright/NaoWalk-v0", {}), ("upright/NaoWalk-v0", {"prior": "step_adjust", "observe_odometry": True}),
    ("upright/WolfgangWalk-v0", {}), ("upright/WolfgangWalk-v0", {"prior": "lipm", "command": (0.1, 0.0, 0.2)}),
    ("upright/NaoWalk-v0", {"prior": "lipm", "observe_odometry": True, "observe_gait": True}),
]


def test_observations_are_the_tables_blocks():
    seen = set()
    for env_id, kwargs in CASES:
        env = gym.make(env_id, **kwargs).unwrapped
        obs, info = env.reset(seed=1)
        slices, sensors = env.observation_slices(), info["sensors"]
        bounds = [(part.start, part.stop) for part in slices.values()]
        assert [start for start, _ in bounds] == [0] + [stop for _, stop in bounds[:-1]], (env_id, bounds)
        assert obs.shape == env.observation_space.shape == (bounds[-1][1],), (env_id, kwargs)
        blocks = {name: obs[part] for name, part in slices.items()}
        for name in ("joint_pos", "joint_vel", "joint_target", "gyro", "accel", "foot_pressure"):
            np.testing.assert_array_equal(blocks[name], getattr(sensors, name).astype(np.float32), err_msg=name)
        np.testing.assert_array_equal(blocks["fused"], sensors.fused[[0, 1, 3]].astype(np.float32))
        assert abs(np.linalg.norm(blocks["gravity"]) - 1.0) < 1e-5
        if env.task == "walk":
            np.testing.assert_array_equal(blocks["command"], env.command.astype(np.float32))
        assert ("odometry" in slices) == bool(kwargs.get("observe_odometry"))
        assert ("gait" in slices) == bool(kwargs.get("observe_gait"))
        if "gait" in slices:  # the prior's clock before it walks
            np.testing.assert_array_equal(blocks["gait"], np.array(env.prior.gait, dtype=np.float32))
        if env.prior is not None:
            np.testing.assert_array_equal(blocks["prior_target"], info["prior_targets"].astype(np.float32))
        seen |= set(slices)
    assert seen == {block.name for block in OBSERVATION}


def test_docs_and_docstrings_show_the_rendered_table():
    """``docs/environments.md`` holds :func:`markdown_table` (the table and the sizes line after
    it); the docstrings hold :func:`docstring_table`, rendered at import."""
    table = markdown_table().splitlines()
    lines = (ROOT / "docs/environments.md").read_text().splitlines()
    start = lines.index(table[0]) if table[0] in lines else len(lines)
    end = next((k for k in range(start, len(lines)) if not lines[k].startswith("|")), len(lines))
    shown = lines[start:end + 2]
    diff = "\n".join(difflib.unified_diff(shown, table, "docs/environments.md", "markdown_table()", lineterm=""))
    assert shown == table, f"docs/environments.md's observation table is not markdown_table()'s:\n{diff}"
    for doc, task in ((base.__doc__, None), (GetUpEnv.__doc__, "getup"), (WalkEnv.__doc__, "walk")):
        assert PLACEHOLDER not in doc
        rendered = "\n".join(line.strip() for line in docstring_table(task).splitlines())
        assert rendered in "\n".join(line.strip() for line in doc.splitlines()), task


def test_the_table_alone_orders_the_observation_and_the_readings(monkeypatch):
    """The observation's order lives in :data:`OBSERVATION` only: with its blocks reordered (the
    prior's targets first, the sensor blocks reversed) the environments' observations and the
    simulation's read-out follow the new order with the same values, the compiled kernels taking
    their offsets from the table."""
    from functools import cache

    from upright.envs import observation, sensors, simulation

    cases = (("upright/NaoWalk-v0", {"prior": "lipm", "observe_odometry": True}),
             ("upright/WolfgangGetUp-v0", {"prior": "spline"}))

    def observe() -> list[dict[str, np.ndarray]]:
        seen = []
        for env_id, kwargs in cases:
            env = gym.make(env_id, **kwargs).unwrapped
            obs, _ = env.reset(seed=4)
            for _ in range(3):
                obs, *_ = env.step(np.zeros(env.action_space.shape, np.float32))
            seen.append({name: obs[part] for name, part in env.observation_slices().items()})
        return seen

    def read() -> dict[str, np.ndarray]:
        sim = simulation.Simulation("nao")
        sim.reset("prone", seed=2)
        readings = sim.step(sim.data.ctrl.copy())
        return {name: getattr(readings, name) for name in ("joint_pos", "joint_vel", "gyro", "accel", "quat",
                                                            "fused", "foot_pressure")}

    before, readings_before = observe(), read()
    table = observation.OBSERVATION
    sensor_blocks = tuple(reversed(observation.SENSOR_BLOCKS))
    reordered = (table[-1], *sensor_blocks, *(b for b in table[:-1] if b not in sensor_blocks))
    assert reordered[0].name == "prior_target" and sorted(b.name for b in reordered) == sorted(b.name for b in table)
    monkeypatch.setattr(observation, "OBSERVATION", reordered)
    monkeypatch.setattr(observation, "SENSOR_BLOCKS", sensor_blocks)
    monkeypatch.setattr(simulation, "READINGS", tuple(reversed(observation.READINGS)))
    monkeypatch.setattr(sensors, "_layout", cache(sensors._layout.__wrapped__))
    after = observe()
    for old, new in zip(before, after):
        assert list(new)[:2] == ["prior_target", "foot_pressure"] and list(old)[0] == "joint_pos"
        assert old.keys() == new.keys()
        for name in old:
            np.testing.assert_array_equal(new[name], old[name], err_msg=name)
    readings_after = read()
    for name, values in readings_before.items():
        np.testing.assert_array_equal(readings_after[name], values, err_msg=name)


def test_pressure_sensors_come_in_the_number_and_split_of_the_description():
    """A description with two sensors under the left foot and three under the right (NAO's, fewer
    of them): the readings, the observation's block and size, the walk's slip term and the stepping
    walk's foot loads follow the description, walking as NAO does."""
    import dataclasses

    import mujoco

    from upright.baselines import make_controller
    from upright.envs.kernels import walk_effort_terms
    from upright.envs.robots import NAO

    left, right = NAO.foot_pressure_sensors
    fewer = dataclasses.replace(NAO, foot_pressure_sensors=(left[:2], right[1:]))
    assert fewer.pressure_sensors == (*left[:2], *right[1:]) and fewer.pressure_sensor_feet == (0, 0, 1, 1, 1)
    sizes, weight_share, velocity = [], [], np.zeros(6)
    for robot in (NAO, fewer):
        env = WalkEnv(robot)
        walk = make_controller("step_adjust", robot, "walk")
        walk.set_command(np.array([0.2, 0.0, 0.0]))
        obs, info = env.reset(seed=3)
        walk.reset(info["sensors"], np.random.default_rng(3))
        m, d, sim = env.sim.model, env.sim.data, env.sim
        slipping = 0
        for _ in range(100):
            targets = walk.step(info["sensors"])
            obs, _, terminated, _, info = env.step(env.action_from_targets(targets))
            assert not terminated
            pressure = info["sensors"].foot_pressure
            slip = 0.0
            for site, foot in zip(env._sole_sites, robot.foot_pressure_slices):
                if pressure[foot].sum() > 0.1 * sim.weight:
                    mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_SITE, int(site), velocity, 0)
                    slip += velocity[3] ** 2 + velocity[4] ** 2
            a = sim.actuation
            _, kernel_slip = walk_effort_terms(a.force, a.qvel, a.qvel_adr, pressure, 0.1 * sim.weight,
                                               *env._slip_arrays)
            assert kernel_slip == pytest.approx(slip, rel=1e-9, abs=1e-15)
            slipping += slip > 0.0
        assert slipping > 10
        np.testing.assert_array_equal(obs[env.observation_slices()["foot_pressure"]], pressure.astype(np.float32))
        loads = walk._foot_sampler.loads(pressure)
        assert loads == pytest.approx([pressure[part].sum() for part in robot.foot_pressure_slices], rel=1e-12)
        sizes.append((pressure.size, env.observation_space.shape[0]))
        weight_share.append(sum(loads) / sim.weight)
    assert sizes[1] == (5, sizes[0][1] - 3) and sizes[0][0] == 8
    assert 0.3 < weight_share[1] < weight_share[0] <= 1.2
