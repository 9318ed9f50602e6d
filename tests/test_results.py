"""``results.json``: custom conditions written faithfully and read back, the schema pinned, Ctrl-C
through the command, and bad input at every public entry point."""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from types import MappingProxyType

import gymnasium as gym
import numpy as np
import pytest

import upright  # noqa: F401  (registers the ids)
from upright import Conditions, Impulse, RandomWear, Wear
from upright.cli import main
from upright.eval.results import aggregate, result_conditions, write_results
from upright.eval.runner import run_episodes
from upright.eval.tables import Column, Table, write_tables

# ---------------------------------------------------------------- conditions in results.json

CUSTOM = Conditions(
    terrain="turf", push_force=30.0, push_reference_mass=7.5,
    impulses=(Impulse(0.05, (20.0, -5.0), 0.05),),
    wear=MappingProxyType({"LKneePitch": Wear(strength=0.6, play=0.01, lag=0.02, stuck=((0.1, 0.2),))}),
    random_wear=RandomWear(p_worn=0.5, play=(0.0, 0.01)), delay_jitter_cycles=1, joint_noise=0.003,
    mass_scale=(0.9, 1.1), com_offset=0.004, friction_scale=(0.8, 1.0))


def _written(tmp_path, env_kwargs, policy="random", episodes=2):
    run = run_episodes("upright/NaoGetUp-v0", policy, episodes, env_kwargs=env_kwargs, progress=False)
    write_results(aggregate(run), tmp_path)
    return run, json.loads((tmp_path / "results.json").read_text())


def test_custom_conditions_are_written_and_read_back_as_simulated(tmp_path):
    kwargs = {"start": "standing", "max_episode_seconds": 0.3, "conditions": CUSTOM}
    run, result = _written(tmp_path, kwargs)
    back = result_conditions(result)
    assert back == CUSTOM and type(back) is Conditions
    assert Conditions.from_dict(result["env_kwargs"]["conditions"]) == CUSTOM
    assert result["conditions"]["impulses"] == [{"time": 0.05, "force": [20.0, -5.0], "duration": 0.05}]
    assert result["conditions"]["wear"]["LKneePitch"]["stuck"] == [[0.1, 0.2]]
    # what was read back simulates the same episodes
    again = run_episodes("upright/NaoGetUp-v0", "random", 2, env_kwargs={**kwargs, "conditions": back}, progress=False)
    assert again.records == run.records


def test_a_conditions_subclass_keeps_its_class_and_a_preset_its_name(tmp_path):
    from upright.eval.experiments.keyframe import WornHipConditions

    worn = WornHipConditions(closing=(1.0, 2.5))
    kwargs = {"start": "prone", "max_episode_seconds": 0.1, "conditions": worn}
    _, result = _written(tmp_path / "worn", kwargs, "zero", 1)
    assert result["conditions"]["class"] == "upright.eval.experiments.keyframe:WornHipConditions"
    back = result_conditions(result)
    assert type(back) is WornHipConditions and back == worn
    _, result = _written(tmp_path / "preset", {"max_episode_seconds": 0.1, "conditions": "competition"}, "zero", 1)
    assert result["conditions"] == "competition" and result_conditions(result) == upright.PRESETS["competition"]
    with pytest.raises(ValueError, match="unknown conditions class 'nowhere:Nothing'"):
        Conditions.from_dict({"class": "nowhere:Nothing"})
    with pytest.raises(ValueError, match="unknown field.*gravity"):
        Conditions.from_dict({"gravity": 1.0})


# ---------------------------------------------------------------- the schema, pinned

NUMBER = (int, float)
STATS = {"mean": NUMBER, "min": NUMBER, "max": NUMBER}
RUN_KEYS = {"env": str, "task": str, "policy": str, "conditions": str, "env_kwargs": dict, "seed": int,
            "episodes": int, "episodes_requested": int, "interrupted": bool, "failed": list,
            "machine": {"cpu": str, "cores": int, "architecture": str, "python": str, "mujoco": str, "numpy": str}}
GETUP_GROUP = {"episodes": int, "successes": int, "success_rate": NUMBER, "success_ci95": [NUMBER],
               "time_to_stand": STATS, "stood_up": int, "stood_up_rate": NUMBER, "stood_up_ci95": [NUMBER],
               "time_upright": STATS, "falls": int, "tries": int, "tries_succeeded": int,
               # the pinned run starts standing: no try, so no per-try rate
               "try_success_rate": type(None), "try_success_ci95": type(None), "tries_unfinished": int,
               "sim_unstable": int}
GETUP = {**RUN_KEYS, **GETUP_GROUP, "by_start": {"standing": GETUP_GROUP}, "episodes_data": [{
    "episode": int, "seed": int, "task": str, "steps": int, "return": NUMBER, "success": bool,
    "time_to_stand": NUMBER, "stood_up": bool, "time_upright": NUMBER, "start": str, "falls": int,
    "tries": int, "tries_succeeded": int, "tries_unfinished": int, "sim_unstable": bool, "episode_seconds": NUMBER}]}
WALK_GROUP = {"episodes": int, "mean_velocity": [NUMBER], "linear_tracking_error": STATS,
              "yaw_tracking_error": STATS,
              "falls": {"total": int, "episodes_with_fall": int, "fall_rate": NUMBER, "fall_ci95": [NUMBER]},
              "distance_before_fall": STATS, "sim_unstable": int}
NONE_STATS = {"mean": type(None), "min": type(None), "max": type(None)}
WALK = {**RUN_KEYS, **WALK_GROUP, "success_rate": type(None), "success_ci95": type(None),
        "time_to_stand": NONE_STATS, "by_start": {}, "by_command": {"0.1,0,0": WALK_GROUP}, "episodes_data": [{
            "episode": int, "seed": int, "task": str, "steps": int, "return": NUMBER, "mean_velocity": [NUMBER],
            "linear_tracking_error": NUMBER, "yaw_tracking_error": NUMBER, "falls": int,
            "distance_before_fall": NUMBER, "command": [NUMBER], "sim_unstable": bool, "episode_seconds": NUMBER}]}


def _check(value, schema, where="result"):
    """``value`` has exactly the keys of ``schema`` (a dict), every list item matches its one item
    schema, and every leaf has the type(s) named."""
    if isinstance(schema, dict):
        assert isinstance(value, dict), where
        if schema:  # {} pins an empty mapping
            assert set(value) == set(schema), f"{where}: {sorted(set(value) ^ set(schema))}"
        else:
            assert value == {}, where
        for key, sub in schema.items():
            _check(value[key], sub, f"{where}.{key}")
    elif isinstance(schema, list):
        assert isinstance(value, list) and value, where
        for i, item in enumerate(value):
            _check(item, schema[0], f"{where}[{i}]")
    else:
        assert isinstance(value, schema) and not (isinstance(value, bool) and schema in (NUMBER, int)), \
            f"{where}: {type(value).__name__} {value!r}"


@pytest.mark.parametrize("env_id, kwargs, schema", [
    ("upright/NaoGetUp-v0", {"start": "standing", "max_episode_seconds": 1.3}, GETUP),
    ("upright/WolfgangWalk-v0", {"command": (0.1, 0.0, 0.0), "max_episode_seconds": 0.3}, WALK),
], ids=["getup", "walk"])
def test_results_schema_is_pinned(env_id, kwargs, schema, tmp_path):
    """A renamed, added or dropped key, or a changed type, of get-up and walk results fails here."""
    write_results(aggregate(run_episodes(env_id, "hold", 2, env_kwargs=kwargs, progress=False)), tmp_path)
    _check(json.loads((tmp_path / "results.json").read_text()), schema)


# ---------------------------------------------------------------- Ctrl-C through the command

def _interruptible() -> None:
    """In the child before it starts: Ctrl-C as a terminal's process gets it (a test runner started in
    the background of a shell without job control passes SIGINT on ignored, and Python then keeps
    ignoring it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_with_several_workers_writes_the_finished_episodes(tmp_path):
    """The whole process group gets SIGINT, as from a terminal, once some episodes have finished."""
    out = tmp_path / "interrupted"
    command = [sys.executable, "-m", "upright", "eval", "--env", "upright/WolfgangGetUp-v0", "--policy", "zero",
               "--episodes", "400", "--workers", "2", "--set", "max_episode_seconds=3.0", "--out", str(out)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                               preexec_fn=_interruptible)
    seen, done = [b""], threading.Event()

    def read_progress() -> None:
        while chunk := process.stderr.read1(1024):
            seen[0] += chunk
            finished = [int(n) for n in re.findall(rb"(\d+)/400", seen[0])]
            if finished and max(finished) >= 4:
                done.set()
        done.set()

    reader = threading.Thread(target=read_progress, daemon=True)
    reader.start()
    assert done.wait(120), seen[0].decode(errors="replace")[-2000:]
    os.killpg(process.pid, signal.SIGINT)
    stdout, _ = process.communicate(timeout=60)
    reader.join(5)
    assert process.returncode == 130, seen[0].decode(errors="replace")[-2000:]
    result = json.loads((out / "results.json").read_text())
    assert result["interrupted"] is True and 4 <= result["episodes"] < 400
    assert result["episodes_requested"] == 400 and len(result["episodes_data"]) == result["episodes"]
    # every record written is a finished episode (3 s of 10 ms steps: long enough that the 400 take
    # far longer than the interrupt needs to arrive, short enough that 4 finish soon)
    assert all(r["steps"] == 300 and "success" in r for r in result["episodes_data"])
    assert "(interrupted)" in (out / "results.md").read_text() and b"wrote" in stdout


def test_a_full_disk_leaves_the_earlier_result_files(tmp_path, monkeypatch):
    """``results.json``/``results.md`` of ``upright eval`` and of an experiment (and its docs page)
    are replaced whole: a write that fails part-way, as on a full disk, leaves the earlier files
    as they were, never a truncated one, and no temporary file."""
    result = aggregate(run_episodes("upright/NaoGetUp-v0", "zero", 1, env_kwargs={"max_episode_seconds": 0.1},
                                    progress=False))
    tables = [Table("t", [Column("a", "a")], [{"a": 1}])]
    write_results(result, tmp_path / "eval")
    write_tables(tables, tmp_path / "experiment", "t", docs=tmp_path / "docs")
    before = {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()}
    assert len(before) == 5

    def full_disk(path: Path, data: str, *args, **kwargs) -> int:
        path.open("w").close()  # opened for writing, nothing fits
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(Path, "write_text", full_disk)
    with pytest.raises(OSError):
        write_results(result, tmp_path / "eval")
    with pytest.raises(OSError):
        write_tables(tables, tmp_path / "experiment", "t", docs=tmp_path / "docs")
    monkeypatch.undo()
    assert {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()} == before


# ---------------------------------------------------------------- bad input, every entry point

def test_run_episodes_bad_input_names_the_value():
    for kwargs, message in (({"episodes": 0}, "episodes must be >= 1, got 0"),
                            ({"workers": 0}, "workers must be >= 1, got 0"),
                            ({"env_id": "upright/NaoFly-v0"}, "unknown environment 'upright/NaoFly-v0'"),
                            ({"policy": "hodl"}, "unknown policy 'hodl'"),
                            ({"env_kwargs": {"start": "handstand"}}, "unknown start 'handstand'")):
        args = {"env_id": "upright/NaoGetUp-v0", "policy": "zero", "episodes": 1, **kwargs}
        with pytest.raises(ValueError, match=re.escape(message)):
            run_episodes(args.pop("env_id"), args.pop("policy"), args.pop("episodes"), progress=False, **args)


@pytest.mark.parametrize("args, named", [
    (["eval", "--env", "upright/NaoGetUp-v0", "--policy", "zero", "--episodes", "0"], "episodes must be >= 1, got 0"),
    (["eval", "--env", "upright/NaoGetUp-v0", "--policy", "zero", "--workers", "0"], "workers must be >= 1, got 0"),
    (["soak", "--steps", "0"], "steps must be >= 1, got 0"),
    (["soak", "--steps", "10", "--workers", "0"], "workers must be >= 1, got 0"),
    (["soak", "--steps", "10", "--conditions", "moon"], "unknown conditions moon"),
    (["soak", "--steps", "10", "--env", "upright/NaoGetUp-v0", "--prior", "lipm"], "no cell left"),
])
def test_cli_bad_counts_are_refused_by_name(args, named, capsys, tmp_path):
    assert main([*args, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err


def test_impulse_and_random_wear_validate_their_fields():
    for kwargs, message in (({"time": -0.1, "force": (1.0, 0.0)}, "Impulse.time must be a finite time >= 0"),
                            ({"time": 0.0, "force": (1.0,)}, "Impulse.force must be two finite numbers"),
                            ({"time": 0.0, "force": (np.nan, 0.0)}, "Impulse.force must be two finite numbers"),
                            ({"time": 0.0, "force": "push"}, "Impulse.force must be two"),
                            ({"time": 0.0, "force": (1.0, 0.0), "duration": 0.0}, "Impulse.duration must be"),
                            ({"time": "soon", "force": (1.0, 0.0)}, "Impulse.time and duration must be numbers")):
        with pytest.raises(ValueError, match=re.escape(message)):
            Impulse(**kwargs)
    assert Impulse(0.5, [np.float64(3.0), 4]).force == (3.0, 4.0)  # normalised: equal and hashable
    for kwargs, message in (({"p_worn": 1.5}, "RandomWear.p_worn must be a probability in [0, 1], got 1.5"),
                            ({"p_stuck": -0.1}, "RandomWear.p_stuck must be a probability"),
                            ({"strength": (0.9, 0.5)}, "RandomWear.strength must be a range"),
                            ({"strength": (0.0, 1.0)}, "RandomWear.strength must be a range within (0, 1]"),
                            ({"play": (-0.01, 0.0)}, "RandomWear.play must be a range (low, high) with 0.0 <= low"),
                            ({"lag": 0.1}, "RandomWear.lag must be a range (low, high), got 0.1"),
                            ({"stuck_duration": (1.0, 0.5)}, "RandomWear.stuck_duration must be a range")):
        with pytest.raises(ValueError, match=re.escape(message)):
            RandomWear(**kwargs)


@pytest.mark.parametrize("env_id", ["upright/NaoGetUp-v0", "upright/WolfgangWalk-v0"])
def test_step_before_reset_is_refused(env_id):
    action = np.zeros(gym.make(env_id).action_space.shape, dtype=np.float32)
    with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
        gym.make(env_id).unwrapped.step(action)
    with pytest.raises(gym.error.ResetNeeded):
        gym.make(env_id).step(action)


def _walk_result(policy: str, command: tuple[float, float, float]) -> dict:
    """A walk aggregate with what :func:`plot_walk_tracking` reads."""
    episodes = [{"mean_velocity": [0.1, 0.0, 0.0], "command": list(command)}] * 3
    return {"task": "walk", "policy": policy, "env": "upright/WolfgangWalk-v0", "conditions": "competition",
            "env_kwargs": {"command": list(command)}, "episodes": 3, "falls": {"episodes_with_fall": 0},
            "episodes_data": episodes}


def test_walk_tracking_x_labels_never_overlap(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from upright.eval.comparison import plot_walk_tracking

    figures = []
    monkeypatch.setattr(plt, "close", figures.append)
    results = [_walk_result(name, (0.25, -0.05, 0.3)) for name in
               ("nao-walk-residual-step_adjust", "wolfgang-walk-residual-step_adjust", "step_adjust", "lipm")]
    plot_walk_tracking(results, tmp_path / "walk_tracking.png")
    (fig,) = figures
    fig.canvas.draw()
    boxes = [label.get_window_extent() for label in fig.axes[-1].get_xticklabels() if label.get_text()]
    assert len(boxes) == 4 and not any(a.overlaps(b) for a, b in zip(boxes, boxes[1:]))


def test_a_table_too_wide_for_the_terminal_is_printed_stacked_with_every_title_and_cell_whole(monkeypatch, capsys):
    from upright.eval.tables import Column, Table, print_tables

    monkeypatch.setenv("COLUMNS", "80")
    columns = [Column(f"long column title {i} (s) mean / min / max", f"k{i}") for i in range(8)]
    rows = [{f"k{i}": f"{r}/20 ({i} %) [0.{i}0, 0.66]" for i in range(8)} for r in range(2)]
    narrow = [Column("start", "k0"), Column("success", "k1")]
    print_tables([Table("wide", columns, rows), Table("narrow", narrow, rows)])
    out = capsys.readouterr().out
    assert max(map(len, out.splitlines())) <= 80 and "…" not in out
    assert all(c.title in out for c in columns) and all(v in out for row in rows for v in row.values())
    assert re.search(r"┃ start +┃ success +┃", out[out.index("narrow"):])  # a grid that fits stays a grid


def test_upright_eval_prints_its_table_within_80_columns(tmp_path, monkeypatch, capsys):
    from upright.cli import main

    monkeypatch.setenv("COLUMNS", "80")
    assert main(["eval", "--env", "upright/NaoGetUp-v0", "--policy", "zero", "--episodes", "1", "--workers", "1",
                 "--set", "max_episode_seconds=0.12", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    table = [line for line in out.splitlines() if not line.startswith("wrote ")]  # the paths are the user's
    assert max(map(len, table)) <= 80 and "…" not in out
    assert "stood up (no stillness)" in out and "time to stand (s) mean / min / max" in out


def test_the_report_prints_its_bench_table_within_80_columns_and_keeps_the_page_form():
    from upright.eval.bench.speed import BenchRow, format_bench

    rows = [BenchRow("HumanoidStandup-v5", "-", 0.015, 583.0, None, None, None, 1.0, None),
            BenchRow("upright/WolfgangGetUp-v0", "sim2real-push", 0.010, 838.0, 1399.0, 0.6, 0.4, 1.44, False)]
    narrow = format_bench(rows, width=80)
    assert max(map(len, narrow.splitlines())) <= 80
    assert "WolfgangGetUp-v0 " in narrow and "sim2real-push" in narrow and "nearby" in narrow
    assert format_bench(rows) == format_bench(rows, width=200)
    assert "upright/WolfgangGetUp-v0" in format_bench(rows)  # the page keeps the whole id
