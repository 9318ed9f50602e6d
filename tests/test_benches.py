"""The compute benchmarks (controller-bench, spline-bench, kinematics-bench) through the registry:
real controllers in real environments, timed side by side (short episodes).

Times themselves are not asserted (they depend on the machine); what is checked is that the
benchmarks time what they say: every cycle, the work counted, the summaries consistent."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import last_bar
from upright.envs.robots import get_robot
from upright.eval.bench.controllers import cycle_minimum, timing_summary
from upright.eval.experiments import run_experiment


def _rows(out) -> list[dict]:
    return json.loads((out / "results.json").read_text())["data"]["rows"]


def test_timing_summary_and_cycle_minimum():
    us = 1e-6
    runs = [{"controller_seconds": np.array([3.0, 1.0, 2.0]) * us, "env_seconds": np.array([10.0, 30.0, 20.0]) * us},
            {"controller_seconds": np.array([1.0, 2.0, 2.0]) * us, "env_seconds": np.array([20.0, 10.0, 20.0]) * us}]
    ctrl, step = cycle_minimum(runs, "test")
    np.testing.assert_allclose(ctrl * 1e6, [1.0, 1.0, 2.0])
    np.testing.assert_allclose(step * 1e6, [10.0, 10.0, 20.0])
    summary = timing_summary(ctrl, step)
    assert summary["cycles"] == 3
    assert summary["ctrl_mean_us"] == pytest.approx(4.0 / 3.0)
    assert summary["ratio_mean"] == pytest.approx((4.0 / 3.0) / (40.0 / 3.0))
    assert summary["ratio_median"] == pytest.approx(1.0 / 10.0)
    assert summary["ratio_worst"] == pytest.approx(2.0 / (40.0 / 3.0))
    with pytest.raises(RuntimeError, match="not deterministic"):
        cycle_minimum([runs[0], {"controller_seconds": ctrl[:2], "env_seconds": step[:2]}], "test")


@pytest.mark.parametrize("repeats", [0, -1, 1.5])
def test_bad_repeats_named(tmp_path, repeats):
    with pytest.raises(ValueError, match="repeats"):
        run_experiment("controller-bench", tmp_path, progress=False,
                       settings={"controllers": "lipm", "robots": "nao", "seconds": 0.2, "repeats": repeats})


def test_controller_bench_times_every_cycle(tmp_path, capsys):
    run_experiment("controller-bench", tmp_path / "walk", progress=False,
                   settings={"controllers": "step_adjust", "robots": "nao", "seconds": 0.5, "repeats": 2})
    (row,) = _rows(tmp_path / "walk")
    assert row["task"] == "walk" and row["start"] == "standing"
    assert row["cycles"] == round(0.5 / get_robot("nao").control_period)
    assert 0 < row["ctrl_median_us"] <= row["ctrl_max_us"] and row["env_mean_us"] > 0
    assert row["ratio_mean"] == pytest.approx(row["ctrl_mean_us"] / row["env_mean_us"])
    capsys.readouterr()
    run_experiment("controller-bench", tmp_path / "getup",
                   settings={"controllers": "keyframe", "robots": "wolfgang", "seconds": 0.3})
    assert last_bar(capsys.readouterr().err, "controller-bench") == (2, 2)  # one episode per start
    assert [(r["controller"], r["start"]) for r in _rows(tmp_path / "getup")] == [("keyframe", "prone"),
                                                                                  ("keyframe", "supine")]
    assert "| keyframe | wolfgang | prone |" in (tmp_path / "getup" / "results.md").read_text()


def test_spline_bench_counts_the_ik_samples(tmp_path, capsys):
    run_experiment("spline-bench", tmp_path, settings={"robots": "wolfgang", "seconds": 1.0})
    assert last_bar(capsys.readouterr().err, "spline-bench") == (2, 2)  # prone and supine
    row = next(r for r in _rows(tmp_path) if r["start"] == "supine")
    assert row["tries"] == 1 and row["cycles"] == round(1.0 / get_robot("wolfgang").control_period)
    # samples are solved lazily inside the cycles: some cycles solve, each at least one sample
    assert 0 < row["solving_cycles"] <= row["ik_samples"]
    assert row["solving_cycles"] < row["cycles"]
    assert row["motion_cycles"] == row["cycles"]  # not finished within 1 s
    assert row["ratio_episode"] == pytest.approx(row["ctrl_mean_us"] / row["env_mean_us"])


def test_kinematics_bench_times_every_function(tmp_path):
    run_experiment("kinematics-bench", tmp_path, progress=False, settings={"n": 20, "robots": "nao"})
    (row,) = json.loads((tmp_path / "results.json").read_text())["tables"][0]["rows"]
    assert row["robot"] == "nao"
    assert all(row[key] > 0.0 for key in ("leg_ik_us", "legs_ik_us", "legs_walk_us", "foot_fk_us", "com_us",
                                          "arm_ik_local_us", "arm_ik_from_stand_us"))
    with pytest.raises(ValueError, match="n must be"):
        run_experiment("kinematics-bench", tmp_path, progress=False, settings={"n": 0, "robots": "nao"})


def test_speed_bench_replays_every_episode_of_the_environment_to_the_bit():
    """The raw loop of `upright bench` is the environment's own physics: on turf (a new field every
    episode) the zero action falls and resets, and each episode replayed on its own model ends in
    the environment's state; replayed on the last episode's field they do not."""
    import copy
    import dataclasses

    import gymnasium as gym

    from upright.eval.bench.speed import _raw_rate, _run_env

    env = gym.make("upright/NaoWalk-v0", conditions="turf")
    sim = env.unwrapped.sim
    _, trajectory = _run_env(env, np.zeros(env.action_space.shape, dtype=np.float32), 150, record=True)
    last = max(trajectory.starts)
    assert last > 0 and len(trajectory.ends) == len(trajectory.starts)  # episodes ended and restarted
    assert not np.array_equal(trajectory.models[0].hfield_data, trajectory.models[last].hfield_data)
    rate, exact = _raw_rate(copy.copy(sim.data), sim.n_substeps, trajectory)
    assert rate > 0 and exact
    one_field = dataclasses.replace(trajectory, models={i: trajectory.models[last] for i in trajectory.models})
    assert not _raw_rate(copy.copy(sim.data), sim.n_substeps, one_field)[1]
    env.close()


def test_speed_bench_replay_is_exact_when_an_episode_ends_on_the_last_step():
    """An episode that ends on the run's last step (here at its time limit) starts no episode of
    the trajectory: the replay has its ends, one per episode, and reproduces them to the bit."""
    import copy

    import gymnasium as gym

    from upright.eval.bench.speed import _raw_rate, _run_env

    env = gym.make("upright/WolfgangGetUp-v0", max_episode_seconds=0.5)  # 50 control periods
    sim = env.unwrapped.sim
    _, trajectory = _run_env(env, np.zeros(env.action_space.shape, dtype=np.float32), 100, record=True)
    assert sorted(trajectory.starts) == [0, 50] and len(trajectory.ends) == 2
    assert _raw_rate(copy.copy(sim.data), sim.n_substeps, trajectory)[1]
    env.close()


def test_parts_profile_times_every_part_of_a_real_step_and_puts_the_classes_back():
    """`upright bench --parts`: every part of PARTS that the environment has is timed on every step
    (walk: the heading motion too, get-up: not), the glue is what the parts and the physics leave of
    the step, and the timing wrappers are gone afterwards (a later environment steps through the
    class's methods). No bound relates parts to step: the parts are wall-clock time, the step CPU
    time, and a loaded machine puts wall-clock time above CPU time."""
    import gymnasium as gym

    from upright.envs.base import UprightEnv
    from upright.eval.bench.speed import PARTS, format_parts, time_parts

    rows = [time_parts("upright/NaoWalk-v0", "lab", 120), time_parts("upright/WolfgangGetUp-v0", "lab", 60)]
    walk, getup = rows
    labels = set(PARTS)
    assert set(walk.parts) == labels  # the zero action falls, so the walk resets too
    assert set(getup.parts) == labels - {"heading motion", "resets"}  # a get-up episode lasts 20 s
    for row in rows:
        assert all(value > 0 for value in row.parts.values()) and row.physics > 0
        assert row.step == pytest.approx(row.physics + sum(row.parts.values()) + row.glue)
    table = format_parts(rows)
    assert "NaoWalk lab" in table and "heading motion" in table and "glue" in table
    env = gym.make("upright/NaoWalk-v0")
    assert "_reward_terms" not in vars(env.unwrapped) and "step" not in vars(env.unwrapped.sim)
    assert type(env.unwrapped)._observe is UprightEnv._observe
    env.close()


def test_bench_fits_an_80_column_terminal_and_its_page_keeps_the_full_tables(tmp_path, monkeypatch, capsys):
    """``upright bench --parts`` in an 80-column terminal: every line fits (the environment table in
    its narrow form, the parts table in blocks of environments); ``--out`` writes the full tables."""
    from upright.cli import main

    monkeypatch.setenv("COLUMNS", "80")
    page = tmp_path / "speed.md"
    assert main(["bench", "--steps", "1", "--parts", "--out", str(page)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == f"wrote {page}"  # a path is not wrapped: the one line that may be longer
    assert max(map(len, out[:-1])) <= 80, max(out[:-1], key=len)
    heads = [line for line in out if line.startswith("µs per control step")]
    assert len(heads) >= 2 and all(any(env in head for head in heads) for env in ("NaoGetUp lab", "WolfgangWalk turf"))
    text = page.read_text()
    assert max(map(len, text.splitlines())) > 80 and "upright/NaoGetUp-v0        lab" in text
