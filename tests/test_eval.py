"""Evaluation: Wilson interval, aggregation, ``--set`` parsing, the parallel runner, ``upright eval``
and ``upright video`` on the real environments (few, short episodes)."""

from __future__ import annotations

import contextlib
import json
import math
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import gymnasium as gym
import pytest

from conftest import no_gl
from upright.commands import episodes
from upright.cli import main
from upright.eval.comparison import prior_alone, prior_label
from upright.eval.results import aggregate
from upright.eval.runner import EvalRun, Observer, WorkerDied, overall_progress, run_episodes
from upright.eval.settings import env_settings, parse_settings, parse_value, split_settings
from upright.eval.tables import wilson_interval
from upright.policies.builtin import ControllerPolicy, ZeroPolicy

from failing import FailingPolicy, OutlivingPolicy, ResetFailingPolicy
from interrupting import InterruptingPolicy

SHORT = ["--set", "max_episode_seconds=1.5"]


@pytest.mark.parametrize(("k", "n", "low", "high"), [
    (0, 10, 0.0, 0.2775),  # upper = z² / (n + z²)
    (5, 10, 0.2366, 0.7634),
    (8, 10, 0.4902, 0.9433),
    (10, 10, 0.7225, 1.0),
    (1, 1, 0.2065, 1.0),
])
def test_wilson_interval_known_values(k, n, low, high):
    assert wilson_interval(k, n) == pytest.approx((low, high), abs=1e-4)


def _wilson_by_formula(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval written out (centre ± half width, clipped to [0, 1])."""
    p = k / n
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def test_wilson_interval_is_scipys_and_agrees_with_the_formula():
    from scipy.stats import binomtest

    for n in range(1, 41):
        for k in range(n + 1):
            ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
            assert wilson_interval(k, n) == (ci.low, ci.high)
            assert wilson_interval(k, n) == pytest.approx(_wilson_by_formula(k, n), abs=1e-15)


def test_wilson_interval_rejects_impossible_counts():
    for k, n in ((0, 0), (3, 2), (-1, 5)):
        with pytest.raises(ValueError):
            wilson_interval(k, n)


def test_set_values_are_parsed():
    assert parse_settings(["command=0.25,0,0", "max_episode_seconds=1.5", "start=prone", "residual_scale=1",
                           "prior=none", "flag=true"]) == {
        "command": (0.25, 0.0, 0.0), "max_episode_seconds": 1.5, "start": "prone", "residual_scale": 1,
        "prior": None, "flag": True}
    assert parse_value("-0.1,0,0.5") == (-0.1, 0.0, 0.5) and parse_value("1e-3") == 0.001
    for bad, message in ((["noequals"], "noequals"), (["a=1", "a=2"], "twice"), (["=3"], "=3"),
                         (["command=0.1,x"], "0.1,x")):
        with pytest.raises(ValueError, match=message):
            parse_settings(bad)


def test_dotted_settings_split_into_env_kwargs_and_params():
    settings = parse_settings(["start=prone", "params.player.max_step_forward=0.15", "params.compensation=false"])
    assert split_settings(settings) == ({"start": "prone"},
                                        {"player.max_step_forward": 0.15, "compensation": False})
    for bad in (["params.=1"], ["a..b=1"], ["player.1x=2"]):
        with pytest.raises(ValueError, match="KEY=VALUE"):
            parse_settings(bad)


def test_dotted_env_settings_nest_and_reach_the_reward():
    env_kwargs, _ = split_settings(parse_settings(["reward_scales.head_height=2", "reward_scales.still=3", "start=prone"]))
    assert env_kwargs == {"reward_scales": {"head_height": 2, "still": 3}, "start": "prone"}
    env = gym.make("upright/NaoGetUp-v0", **env_kwargs)
    assert env.unwrapped.config.reward_scales.head_height == 2.0 and env.unwrapped.config.reward_scales.still == 3.0
    env.close()
    with pytest.raises(ValueError, match="start"):
        split_settings({"start": "prone", "start.x": 1})


def _getup_record(episode: int, start: str, success: bool, tts: float | None) -> dict:
    return {"episode": episode, "seed": episode, "task": "getup", "steps": 10, "return": 1.0, "success": success,
            "time_to_stand": tts, "start": start, "falls": int(not success), "tries": 1 + int(not success),
            "tries_succeeded": 1, "tries_unfinished": 0, "sim_unstable": False, "episode_seconds": 5.0}


def test_aggregate_getup_records():
    records = [_getup_record(0, "prone", True, 2.0), _getup_record(1, "prone", False, None),
               _getup_record(2, "supine", True, 4.0), _getup_record(3, "supine", True, 3.0)]
    result = aggregate(EvalRun("upright/NaoGetUp-v0", "p", {}, "lab", 7, 5, records, interrupted=True))
    assert (result["episodes"], result["episodes_requested"], result["interrupted"]) == (4, 5, True)
    assert result["success_rate"] == 0.75 and result["success_ci95"] == pytest.approx(wilson_interval(3, 4))
    assert result["time_to_stand"] == {"mean": 3.0, "min": 2.0, "max": 4.0}
    assert result["by_start"]["prone"]["success_rate"] == 0.5
    assert result["by_start"]["prone"]["time_to_stand"] == {"mean": 2.0, "min": 2.0, "max": 2.0}
    assert result["by_start"]["supine"]["time_to_stand"]["mean"] == 3.5
    assert result["falls"] == 1 and result["episodes_data"] == records
    # per try: every episode one try that stood up, the failed one a fall and a failed try before it
    assert (result["tries"], result["tries_succeeded"]) == (5, 4) and result["try_success_rate"] == 0.8
    assert result["try_success_ci95"] == pytest.approx(wilson_interval(4, 5))
    assert (result["by_start"]["prone"]["tries"], result["by_start"]["supine"]["try_success_rate"]) == (3, 1.0)
    json.dumps(result)


def test_aggregate_walk_records():
    records = [{"episode": i, "seed": i, "task": "walk", "steps": 10, "return": 1.0, "mean_velocity": [v, 0.0, 0.1],
                "linear_tracking_error": e, "yaw_tracking_error": e / 2, "falls": f, "distance_before_fall": d,
                "command": [0.2, 0.0, 0.0], "sim_unstable": False, "episode_seconds": 5.0}
               for i, (v, e, f, d) in enumerate([(0.1, 0.2, 0, 1.0), (0.3, 0.4, 1, 0.5)])]
    result = aggregate(EvalRun("upright/NaoWalk-v0", "p", {}, "lab", 0, 2, records))
    assert result["mean_velocity"] == pytest.approx([0.2, 0.0, 0.1])
    assert result["task"] == "walk"
    assert result["linear_tracking_error"] == pytest.approx({"mean": 0.3, "min": 0.2, "max": 0.4})
    assert result["yaw_tracking_error"] == pytest.approx({"mean": 0.15, "min": 0.1, "max": 0.2})
    assert result["falls"]["total"] == 1 and result["falls"]["episodes_with_fall"] == 1
    assert list(result["by_command"]) == ["0.2,0,0"] and result["success_rate"] is None


def test_parallel_and_serial_runs_are_identical():
    kwargs = {"start": "random", "max_episode_seconds": 1.0}
    serial = run_episodes("upright/WolfgangGetUp-v0", "random", 3, env_kwargs=kwargs, seed=5, progress=False)
    parallel = run_episodes("upright/WolfgangGetUp-v0", "random", 3, env_kwargs=kwargs, seed=5, workers=2,
                            progress=False)
    assert [r["seed"] for r in serial.records] == [5, 6, 7]
    assert serial.records == parallel.records and not parallel.interrupted


def test_an_overall_bar_counts_the_episodes_of_many_runs_on_one_line(capsys):
    """Inside ``overall_progress`` the runs (in this process and on workers) advance one bar with
    an ETA and show none of their own."""
    kwargs = {"max_episode_seconds": 0.12}
    with overall_progress(5, "three runs") as bar:
        run_episodes("upright/NaoGetUp-v0", "zero", 2, env_kwargs=kwargs)
        run_episodes("upright/NaoGetUp-v0", "zero", 2, env_kwargs=kwargs, seed=2, workers=2)
        run_episodes("upright/NaoGetUp-v0", "zero", 1, env_kwargs=kwargs, seed=4, progress=False)
        assert bar.n == 5
    err = capsys.readouterr().err
    assert "three runs" in err and "5/5" in err and "· zero" not in err, err
    run_episodes("upright/NaoGetUp-v0", "zero", 1, env_kwargs=kwargs)  # outside it, a run's own bar again
    assert "upright/NaoGetUp-v0 · zero" in capsys.readouterr().err


def test_ctrl_c_keeps_the_finished_episodes():
    run = run_episodes("upright/NaoGetUp-v0", InterruptingPolicy(), 5, env_kwargs={"max_episode_seconds": 0.3},
                       progress=False)
    assert run.interrupted and [r["episode"] for r in run.records] == [0, 1]
    assert aggregate(run)["episodes"] == 2


class _CountSteps(Observer):
    """Counts the steps it sees and the torso height at the end; stops after ``stop_after`` steps."""

    def __init__(self, stop_after: int | None = None) -> None:
        self.stop_after = stop_after
        self.steps = 0

    def on_reset(self, env, policy, info) -> None:
        self.steps = 0

    def on_step(self, env, policy, action, info) -> bool:
        self.steps += 1
        return self.stop_after is not None and self.steps >= self.stop_after

    def on_episode_end(self, env, policy, record) -> dict:
        return {"observed_steps": self.steps, "policy_seen": policy.name}


def test_observers_add_fields_in_workers_and_in_process():
    kwargs = {"start": "prone", "max_episode_seconds": 0.24}
    serial = run_episodes("upright/NaoGetUp-v0", "zero", 2, env_kwargs=kwargs, progress=False, observers=[_CountSteps()])
    parallel = run_episodes("upright/NaoGetUp-v0", "zero", 2, env_kwargs=kwargs, progress=False, workers=2,
                            observers=[_CountSteps()])
    assert serial.records == parallel.records
    for r in serial.records:
        assert r["task"] == "getup" and r["observed_steps"] == r["steps"] == 20 and r["policy_seen"] == "zero"


class _UnpicklablePolicy(ZeroPolicy):
    """Pickles in the parent, but a worker cannot unpickle it (as a class the worker cannot import)."""

    def __setstate__(self, state: dict) -> None:
        raise RuntimeError("this policy does not unpickle")


def test_a_worker_that_cannot_set_up_fails_the_run_instead_of_hanging():
    with pytest.raises(RuntimeError, match="could not set up its episodes: RuntimeError: this policy does not unpickle"):
        run_episodes("upright/NaoGetUp-v0", _UnpicklablePolicy(), 2, env_kwargs={"max_episode_seconds": 0.12},
                     progress=False, workers=2)


@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Fail the test if the block runs longer than ``seconds``, instead of hanging the suite."""
    def expire(signum: int, frame: object) -> None:
        pytest.fail(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


FAILING = {"env_id": "upright/NaoGetUp-v0", "episodes": 4, "env_kwargs": {"max_episode_seconds": 0.12}, "seed": 10,
           "progress": False}


def test_a_dead_worker_fails_the_run_naming_its_episode():
    with deadline(120), pytest.raises(WorkerDied, match=r"episode 1 \(seed 11\) died with exit code 1"):
        run_episodes(policy=FailingPolicy(11, "exit"), workers=2, **FAILING)


def test_a_worker_that_dies_before_reading_its_episode_is_a_dead_worker(tmp_path):
    """A script without the ``if __name__ == "__main__"`` guard makes every spawned worker fail while
    it starts, with the episode the parent sent it unread: the run still ends in WorkerDied."""
    script = tmp_path / "unguarded.py"
    script.write_text("from upright.eval.runner import run_episodes\n"
                      "run_episodes('upright/NaoGetUp-v0', 'zero', 2, workers=2, progress=False,\n"
                      "             env_kwargs={'max_episode_seconds': 0.12})\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    last_line = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1 and last_line.startswith("upright.eval.runner.WorkerDied: "), done.stderr[-2000:]


def test_a_dead_worker_stops_the_run_and_keeps_the_finished_episodes():
    with deadline(120):
        run = run_episodes(policy=FailingPolicy(11, "exit"), workers=2, keep_failed=True, **FAILING)
    (failure,) = run.failed
    assert failure["episode"] == 1 and failure["seed"] == 11 and failure["error"].startswith("WorkerDied: ")
    finished = [r["episode"] for r in run.records]
    assert 0 in finished and set(finished) <= {0, 2, 3} and not run.interrupted


def test_no_episode_starts_after_a_worker_died(tmp_path):
    """A dead worker stops the run: the other worker finishes the episode it runs and starts no
    further one. Episode 1's worker dies while episode 0 runs on the other (it waits for the death)."""
    with deadline(120):
        run = run_episodes(policy=OutlivingPolicy(11, str(tmp_path / "dying")), workers=2, keep_failed=True,
                           **{**FAILING, "episodes": 6})
    assert [failure["episode"] for failure in run.failed] == [1]
    assert [record["episode"] for record in run.records] == [0]


@pytest.mark.parametrize("workers", [1, 2])
def test_an_episode_that_raises_is_reported_beside_the_finished_ones(workers):
    with deadline(120):
        run = run_episodes(policy=FailingPolicy(12), workers=workers, keep_failed=True, **FAILING)
    assert [r["episode"] for r in run.records] == [0, 1, 3] and [r["seed"] for r in run.records] == [10, 11, 13]
    assert run.failed == [{"episode": 2, "seed": 12, "error": "ValueError: policy broke in the episode of seed 12"}]
    assert aggregate(run)["episodes"] == 3 and not run.interrupted


@pytest.mark.parametrize("workers", [1, 2])
def test_an_episode_that_raises_fails_the_run_with_its_own_exception(workers):
    with deadline(120), pytest.raises(ValueError, match="seed 12") as raised:
        run_episodes(policy=FailingPolicy(12), workers=workers, **FAILING)
    assert raised.value.__notes__ == ["in episode 2 (seed 12) of upright/NaoGetUp-v0 · zero"]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_policy_that_refuses_the_environment_stops_the_run_even_when_keeping_failures(workers):
    policy = ControllerPolicy("keyframe", params={"no_such_parameter": 1})
    with deadline(120), pytest.raises(ValueError, match="no_such_parameter"):
        run_episodes(policy=policy, workers=workers, keep_failed=True, **FAILING)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_reset_that_raises_after_a_finished_episode_fails_that_episode_only(workers):
    """Episodes ran with the policy, so its reset raising later is no refusal of the environment:
    the finished episodes stay, the one whose reset raised is a failure."""
    with deadline(120):
        run = run_episodes(policy=ResetFailingPolicy(12), workers=workers, keep_failed=True, **FAILING)
    assert [r["seed"] for r in run.records] == [10, 11, 13]
    assert run.failed == [{"episode": 2, "seed": 12, "error": "RuntimeError: reset broke in the episode of seed 12"}]


def test_sigterm_keeps_the_finished_episodes_as_ctrl_c_does(tmp_path):
    """A run stopped by SIGTERM (``kill``, a job scheduler) returns its finished episodes, and
    ``upright eval`` writes them (exit 130), instead of dying with nothing written."""
    code = ("import sys; sys.path.insert(0, %r); from interrupting import TerminatingPolicy; from upright import cli; "
            "from upright.commands import episodes; "
            "episodes.resolve_policy = lambda name, params=None: TerminatingPolicy(2); "
            "sys.exit(cli.main(['eval', '--env', 'upright/NaoGetUp-v0', '--policy', 'zero', '--episodes', '5', "
            "'--set', 'max_episode_seconds=0.12', '--out', %r]))") % (str(Path(__file__).parent), str(tmp_path / "out"))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 130, done.stderr
    result = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [r["episode"] for r in result["episodes_data"]] == [0, 1]


def test_the_report_skips_a_baseline_that_does_not_fit_but_refuses_a_bad_setting_before_any_episode(
        tmp_path, monkeypatch, capsys):
    from upright.eval import report

    def never(*args, **kwargs):
        raise AssertionError("an episode ran")

    cells = [("upright/NaoWalk-v0", "keyframe", {}),  # a get-up controller on a walk: skipped, said so
             ("upright/NaoGetUp-v0", "zero", {"conditions": "foo"})]  # every episode would fail: refused
    monkeypatch.setattr(report, "comparison_cells", lambda *args: cells)
    monkeypatch.setattr(report, "run_episodes", never)
    with pytest.raises(ValueError, match="'foo'"):
        report.evaluate_all(tmp_path, episodes=1)
    assert capsys.readouterr().out == ""  # the skipped pairs are counted in one line once every cell passed its check


def test_the_report_says_in_one_line_how_many_pairs_it_skipped_and_starts_no_episode_for_them(
        tmp_path, monkeypatch, capsys):
    from upright.eval import report

    def never(*args, **kwargs):
        raise AssertionError("an episode (and its progress bar) started for a skipped pair")

    cells = [("upright/NaoWalk-v0", "keyframe", {}), ("upright/WolfgangGetUp-v0", "lipm", {}),
             ("upright/NaoGetUp-v0", "lipm", {}), ("upright/WolfgangWalk-v0", "spline", {})]
    monkeypatch.setattr(report, "comparison_cells", lambda *args: cells)
    monkeypatch.setattr(report, "run_episodes", never)
    assert report.evaluate_all(tmp_path, episodes=1) == []
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["skipped 4 baseline-environment pairs that do not fit (another robot or task)"]
    assert captured.err == ""


def test_eval_writes_the_finished_episodes_and_names_the_failed_one(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(episodes, "resolve_policy", lambda name, params=None: FailingPolicy(3))  # what `upright eval` calls
    out = tmp_path / "failing"
    assert main(["eval", "--env", "upright/NaoGetUp-v0", "--policy", "zero", "--episodes", "3", "--seed", "2",
                 "--set", "max_episode_seconds=0.12", "--out", str(out)]) == 1
    result = json.loads((out / "results.json").read_text())
    assert [r["seed"] for r in result["episodes_data"]] == [2, 4] and result["episodes"] == 2
    assert result["failed"] == [{"episode": 1, "seed": 3, "error": "ValueError: policy broke in the episode of seed 3"}]
    err = [line for line in capsys.readouterr().err.splitlines() if "upright eval" in line]
    assert err == ["upright eval: episode 1 (seed 3) failed: ValueError: policy broke in the episode of seed 3"]


def test_an_unpicklable_wrapper_is_named_before_workers_start():
    with pytest.raises(ValueError, match="workers > 1 need a picklable"):
        run_episodes("upright/NaoGetUp-v0", "zero", 2, env_kwargs={"max_episode_seconds": 0.12}, progress=False,
                     workers=2, wrappers=[lambda env: env])


def test_an_observer_can_end_an_episode_early():
    run = run_episodes("upright/WolfgangWalk-v0", "zero", 1, env_kwargs={"max_episode_seconds": 1.0},
                       progress=False, observers=[_CountSteps(stop_after=7)])
    (record,) = run.records
    assert record["task"] == "walk" and record["stopped"] and record["steps"] == 7 and "falls" not in record


def test_eval_writes_consistent_results(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # a wide console, so rich does not wrap the header
    out = tmp_path / "hold"
    assert main(["eval", "--env", "upright/NaoGetUp-v0", "--policy", "hold", "--episodes", "3", "--start",
                 "standing", "--seed", "2", "--set", "max_episode_seconds=2.0", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "success" in printed and "stood up (no stillness)" in printed
    result = json.loads((out / "results.json").read_text())
    records = result["episodes_data"]
    assert {k: result[k] for k in ("env", "policy", "conditions", "episodes", "seed")} == {
        "env": "upright/NaoGetUp-v0", "policy": "hold", "conditions": "lab", "episodes": 3, "seed": 2}
    assert [r["seed"] for r in records] == [2, 3, 4]
    successes = [r["success"] for r in records]
    assert result["success_rate"] == pytest.approx(np.mean(successes)) and any(successes)
    assert result["success_ci95"] == pytest.approx(wilson_interval(sum(successes), 3))
    times = [r["time_to_stand"] for r in records if r["success"]]
    assert result["time_to_stand"] == pytest.approx({"mean": np.mean(times), "min": min(times), "max": max(times)})
    assert result["by_start"]["standing"]["episodes"] == 3
    k = sum(successes)
    assert f"| standing | 3 | {k}/3 ({100 * k / 3:.0f} %) [" in (out / "results.md").read_text()


def test_eval_walk_reports_walk_metrics(tmp_path):
    out = tmp_path / "walk"
    assert main(["eval", "--env", "upright/WolfgangWalk-v0", "--policy", "zero", "--episodes", "2",
                 "--set", "command=0.25,0,0", "max_episode_seconds=0.5", "--out", str(out)]) == 0
    result = json.loads((out / "results.json").read_text())
    assert result["task"] == "walk"
    assert {"mean_velocity", "linear_tracking_error", "yaw_tracking_error", "falls"} <= set(result)
    assert all(r["command"] == [0.25, 0.0, 0.0] for r in result["episodes_data"])
    assert result["mean_velocity"] == pytest.approx(np.mean([r["mean_velocity"] for r in result["episodes_data"]], axis=0))


def test_video_writes_an_mp4_or_says_why(tmp_path, capsys):
    import imageio.v3 as iio

    out = tmp_path / "hold.mp4"
    code = main(["video", "--env", "upright/NaoGetUp-v0", "--policy", "hold", "--out", str(out), "--start", "standing",
                 "--set", "max_episode_seconds=0.5"])
    if code == 3:
        err = capsys.readouterr().err
        assert "OpenGL" in err
        no_gl(err.strip())
    assert code == 0 and out.stat().st_size > 0
    frames = iio.imread(out, index=None)
    assert frames.shape[0] >= 10 and frames.shape[-1] == 3 and frames.std() > 5


def _posture(t: float, angular_speed: float, upright: bool = True):
    from upright.envs.metrics import Posture

    return Posture(time=t, fused_pitch=0.0 if upright else 1.2, fused_roll=0.0, hemisphere=1.0,
                   tilt=0.0 if upright else 1.3, head_height=0.5 if upright else 0.1, angular_speed=angular_speed)


def test_stood_up_counts_an_upright_robot_that_is_not_still():
    from upright.envs.metrics import GetUpTracker, StandingReference

    ref = StandingReference(fused_pitch=0.0, fused_roll=0.0, head_height=0.5)
    shaken = GetUpTracker(ref, "prone")
    for i in range(200):  # lying for 0.5 s, then upright but shaking (0.3 rad/s > 0.15) for 1.5 s
        t = i * 0.01
        shaken.update(_posture(t, 0.3, upright=t >= 0.5))
    m = shaken.episode_metrics(2.0, sim_unstable=False)
    assert m["success"] is False and m["time_to_stand"] is None
    assert m["stood_up"] is True and m["time_upright"] == pytest.approx(0.5)
    still = GetUpTracker(ref, "prone")
    for i in range(200):
        still.update(_posture(i * 0.01, 0.05))
    assert still.episode_metrics(2.0, sim_unstable=False)["success"] is True
    fell = GetUpTracker(ref, "prone")
    for i in range(300):  # upright 1.5 s, then a fall cancels both notions
        fell.update(_posture(i * 0.01, 0.3, upright=i < 150))
    m = fell.episode_metrics(3.0, sim_unstable=False)
    assert m["stood_up"] is False and m["falls"] == 1


def test_a_fall_or_a_blow_up_cancels_the_success():
    """Standing still for the hold time is a success only while the robot has not fallen since and
    the physics has not blown up: a later fall cancels the success itself (not only ``stood_up``),
    and a blow-up cancels it in the episode's metrics."""
    from upright.envs.metrics import GetUpTracker, StandingReference

    ref = StandingReference(fused_pitch=0.0, fused_roll=0.0, head_height=0.5)
    fell = GetUpTracker(ref, "prone")
    for i in range(300):  # upright and still for 1.5 s (a success after 1 s), then fallen
        fell.update(_posture(i * 0.01, 0.05, upright=i < 150))
    m = fell.episode_metrics(3.0, sim_unstable=False)
    assert not fell.success and m["success"] is False and m["time_to_stand"] is None and m["falls"] == 1
    stood = GetUpTracker(ref, "prone")
    for i in range(200):
        stood.update(_posture(i * 0.01, 0.05))
    assert stood.episode_metrics(2.0, sim_unstable=False)["success"] is True
    m = stood.episode_metrics(2.0, sim_unstable=True)
    assert m["success"] is False and m["time_to_stand"] is None and m["stood_up"] is False


@pytest.mark.parametrize("upright_at, expected", [
    # (times the robot is upright: the rest of each 0.01 s step is lying) -> (tries, succeeded, unfinished)
    ([], (0, 0, 0)),  # never rises: no try
    ([(0.5, 0.9)], (1, 0, 0)),  # up for 0.4 s, fallen again: one failed try
    ([(0.5, 0.9), (1.2, 2.5)], (2, 1, 0)),  # a failed try, then one held for 1 s
    ([(0.5, 0.9), (1.2, 2.5), (2.6, 2.8)], (3, 1, 0)),  # stood, fell, rose and fell: a new, failed try
    ([(0.5, 0.9), (2.6, 3.0)], (1, 0, 1)),  # the second rise is under way at the end (3 s)
])
def test_a_try_is_a_rise_that_ends_standing_or_fallen(upright_at, expected):
    from upright.envs.metrics import GetUpTracker, StandingReference

    ref = StandingReference(fused_pitch=0.0, fused_roll=0.0, head_height=0.5)
    tracker = GetUpTracker(ref, "prone")
    for i in range(300):
        t = i * 0.01
        tracker.update(_posture(t, 0.3, upright=any(a <= t < b for a, b in upright_at)))
    m = tracker.episode_metrics(3.0, sim_unstable=False)
    assert (m["tries"], m["tries_succeeded"], m["tries_unfinished"]) == expected
    assert m["tries"] - m["tries_succeeded"] <= m["falls"]  # every failed try ended in a fall
    standing = GetUpTracker(ref, "standing")  # upright from the start: standing is no try
    for i in range(300):
        standing.update(_posture(i * 0.01, 0.3, upright=True))
    assert standing.episode_metrics(3.0, sim_unstable=False)["tries"] == 0


def test_table_cells_share_one_format():
    from upright.eval.tables import MISSING, Column, Table, mean_min_max, number, rate

    assert rate((18, 20)) == "18/20 (90 %) [0.70, 0.97]" and rate((0, 0)) == MISSING and rate(None) == MISSING
    assert mean_min_max()({"mean": 2.5, "min": 1.0, "max": 4.0}) == "2.50 / 1.00 / 4.00"
    assert mean_min_max()({"mean": None, "min": None, "max": None}) == MISSING == "—"
    assert number(1, "°")(14.66) == "14.7 °" and number()(None) == MISSING
    table = Table("T", [Column("start", "start"), Column("success", "success", rate)],
                  [{"start": "prone", "success": (3, 4)}, {"start": "supine"}], notes="n")
    assert table.markdown() == ("### T\n\n| start | success |\n|---|---|\n| prone | 3/4 (75 %) [0.30, 0.95] |\n"
                                "| supine | — |\n\nn\n")
    assert table.to_json()["rows"] == [{"start": "prone", "success": [3, 4]}, {"start": "supine"}]


def test_write_tables_writes_json_markdown_and_the_docs_page(tmp_path):
    from upright.eval.tables import Column, Table, write_tables

    table = Table("T", [Column("x", "x")], [{"x": 1}])
    paths = write_tables([table], tmp_path / "out", "demo", command="upright experiment demo", data={"a": (1, 2)},
                         docs=tmp_path / "docs")
    assert [p.name for p in paths] == ["results.json", "results.md", "demo.md"]
    result = json.loads(paths[0].read_text())
    assert result["name"] == "demo" and result["data"] == {"a": [1, 2]} and result["tables"][0]["rows"] == [{"x": 1}]
    assert "upright experiment demo" in paths[1].read_text() and paths[1].read_text() == paths[2].read_text()
    # the machine it ran on (timing ratios and the physics' last bits depend on the CPU)
    from upright.eval.machine import cpu_model, machine_line

    assert result["machine"]["cpu"] == cpu_model() and result["machine"]["cores"] >= 1
    assert machine_line(result["machine"]) in paths[1].read_text().splitlines()


def test_eval_passes_params_to_the_controller(tmp_path):
    out = tmp_path / "kf"
    args = ["eval", "--env", "upright/NaoGetUp-v0", "--policy", "keyframe", "--episodes", "1", "--start", "prone",
            "--set", "max_episode_seconds=0.5", "params.compensation=false", "--out", str(out)]
    assert main(args) == 0
    assert json.loads((out / "results.json").read_text())["policy"] == "keyframe"
    assert main([*args[:-2], "params.no_such_parameter=1", "--out", str(out)]) == 2


def test_params_for_a_policy_without_parameters_are_refused(capsys, tmp_path):
    assert main(["eval", "--env", "upright/NaoGetUp-v0", "--policy", "zero", "--episodes", "1",
                 "--set", "params.gain=1", "--out", str(tmp_path)]) == 2
    assert "zero" in capsys.readouterr().err


def test_eval_reads_controller_params_from_a_file(tmp_path, capsys):
    params = tmp_path / "best_params.yaml"
    params.write_text("no_such_parameter: 1\n")
    assert main(["eval", "--env", "upright/NaoGetUp-v0", "--policy", "keyframe", "--episodes", "1",
                 "--params", str(params), "--set", "max_episode_seconds=0.3", "--out", str(tmp_path / "out")]) == 2
    assert "no_such_parameter" in capsys.readouterr().err
    assert main(["eval", "--env", "upright/NaoGetUp-v0", "--policy", "keyframe", "--episodes", "1",
                 "--params", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "out")]) == 2
    assert "missing.yaml" in capsys.readouterr().err


def test_the_prior_alone_drops_what_only_a_residual_means():
    """A residual's environment arguments that need a prior (its step residual, the observation of
    the prior's gait and odometry) are dropped with the prior, so the prior runs alone as a policy on
    the same conditions; the conditions stay."""
    kwargs = {"prior": "step_adjust", "residual_scale": 0.3, "residual_on": "steps", "observe_gait": True,
              "observe_odometry": True, "conditions": "competition", "max_episode_seconds": 0.5}
    policy, alone = prior_alone(kwargs)
    assert policy == "step_adjust"  # a baseline name (no parameter overrides)
    assert alone == {"conditions": "competition", "max_episode_seconds": 0.5}
    run = run_episodes("upright/NaoWalk-v0", policy, 1, env_kwargs=alone, seed=5, progress=False)
    assert len(run.records) == 1 and run.records[0]["steps"] > 0
    with pytest.raises(ValueError, match="no prior in the environment arguments"):
        prior_alone({"conditions": "lab"})


def test_the_prior_label_names_its_parameter_overrides():
    """A table row and a result of a re-parameterised prior say so; a prior with its defaults is
    named plainly."""
    assert prior_label({"prior": "spline", "conditions": "thesis"}) == "prior (spline)"
    kwargs = {"prior": "spline", "prior_params": {"time_hands_front": 0.3, "trunk_overshoot_angle_front": -0.7}}
    assert prior_label(kwargs) == "prior (spline, time_hands_front=0.3, trunk_overshoot_angle_front=-0.7)"
    policy, alone = prior_alone(kwargs)  # a controller with the overrides, named with them in results
    assert policy.name == "spline (time_hands_front=0.3, trunk_overshoot_angle_front=-0.7)" and alone == {}


def test_prior_parameter_settings_keep_the_trained_ones_they_do_not_name(tmp_path):
    """``--set prior_params.KEY=V`` and ``--set params.KEY=V`` on a policy trained on a re-parameterised
    prior change that one parameter and keep the others it was trained with; a parameter file given
    as ``prior_params`` replaces the saved ones, with ``params.*`` over it."""
    trained = {"prior": "step_adjust", "prior_params": {"period": 0.19}, "conditions": "competition"}
    kwargs, params = split_settings(parse_settings(["prior_params.period_forward_factor=0.5"]))
    assert env_settings(kwargs, params, trained)["prior_params"] == {"period": 0.19, "period_forward_factor": 0.5}
    kwargs, params = split_settings(parse_settings(["params.period_forward_from=0.2"]))
    assert env_settings(kwargs, params, trained)["prior_params"] == {"period": 0.19, "period_forward_from": 0.2}
    assert env_settings({}, {}, trained) == trained
    file = tmp_path / "p.yml"
    file.write_text("period: 0.21\n")
    assert env_settings({"prior_params": str(file)}, {}, trained)["prior_params"] == str(file)
    merged = env_settings({"prior_params": str(file)}, {"foot_lift": 0.02}, trained)
    assert merged["prior_params"] == {"period": 0.21, "foot_lift": 0.02}
