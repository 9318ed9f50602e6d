"""``upright optimize``: search spaces, objectives, storage, resuming, Ctrl-C, the exported
parameters, and two workers on a real PostgreSQL study (a throwaway cluster: conftest.postgres_url)."""

from __future__ import annotations

import math
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
import yaml
from optuna.trial import TrialState

from upright.baselines import default_params
from upright.cli import command_line, main
from upright.envs.residual import load_params_file
from upright.tuning import OptimizeConfig, load_space, optimize
from upright.tuning.objectives import getup_components, parse_objective, walk_components
from upright.tuning.storage import check_storage, default_storage, retried_trial, shown_storage

#: Tiny trials: 1 short episode each (the controller does not finish: every trial fails fast).
TINY = {"max_episode_seconds": 1.0}


def tiny(tmp_path: Path, **changes) -> OptimizeConfig:
    base = dict(controller="spline", robot="wolfgang", start="back", sampler="random", objective="STH", trials=2,
                repetitions=1, out=tmp_path, progress=False, settings=dict(TINY))
    return OptimizeConfig(**{**base, **changes})


# ---------------------------------------------------------------- spaces and objectives
def test_spline_space_holds_the_hand_tuned_set_and_converts_degrees():
    space = load_space("spline", "wolfgang")
    defaults = default_params("spline", "wolfgang")
    values = space.hand_tuned(defaults)
    for p in space.params:
        assert p.low <= values[p.name] <= p.high, p.name
    assert math.isclose(values["arms_angle_back"], math.degrees(defaults.arms_angle_back), abs_tol=1e-6)
    assert math.isclose(space.overrides(values)["arms_angle_back"], defaults.arms_angle_back, abs_tol=1e-9)
    front = {p.name for p in space.for_start("prone").params}
    back = {p.name for p in space.for_start("supine").params}
    assert "time_hands_side" in front - back and "time_legs_close" in back - front and "rise_time" in front & back
    # the paper: 9 time + 6 pose parameters per direction (ours: 8 + rise + 6 front, 5 + rise + 10 back)
    assert len(front) == 15 and len(back) == 16


def test_every_shipped_space_names_parameters_of_its_controller():
    """The default spaces and those of the subfolders (other conditions: ``competition/``, the
    servo distribution ``servos/``): every dotted key resolves, every conditions preset exists."""
    from upright.envs.conditions import get_conditions
    from upright.tuning.space import available_spaces, spaces_dir

    names = available_spaces()
    paths = sorted(spaces_dir().rglob("*.yaml"))
    assert len(paths) > len(names) and {p.stem for p in paths} == set(names)
    for path in paths:
        controller, robot = path.stem.rsplit("_", 1)
        space = load_space(controller, robot, path)
        defaults = default_params(controller, robot)
        space.hand_tuned(defaults)  # every dotted key resolves
        get_conditions(space.env.get("conditions", "lab"))


def test_bad_space_and_objective_are_named(tmp_path):
    with pytest.raises(ValueError, match="no search space for controller 'spline' on robot 'nao'|shipped spaces"):
        load_space("spline", "mars")
    bad = tmp_path / "s.yaml"
    bad.write_text(yaml.safe_dump({"params": [{"name": "x", "low": 0, "high": 1, "unit": "furlong"}]}))
    with pytest.raises(ValueError, match="params.0.unit: input should be 's', 'm', .* got 'furlong'"):
        load_space("spline", "wolfgang", bad)
    with pytest.raises(ValueError, match="distinct letters"):
        parse_objective("SX", "getup")
    assert parse_objective("sth", "getup") == ("success", "time", "head")
    assert parse_objective("FE", "walk") == ("falls", "linear_error")


def test_components_are_scaled_to_0_100():
    ok = getup_components({"opt_success": True, "opt_settle_time": 2.5, "opt_min_pitch_deg": 3.0, "opt_max_head_m": 0.7})
    assert ok == pytest.approx({"success": 0, "time": 25, "head": 30, "pitch": 3})
    bad = getup_components({"opt_success": False, "opt_settle_time": 12, "opt_min_pitch_deg": 90, "opt_max_head_m": 0.1})
    assert bad == pytest.approx({"success": 100, "time": 100, "head": 90, "pitch": 90})
    walk = walk_components({"falls": 0, "linear_tracking_error": 0.05, "yaw_tracking_error": 0.1,
                            "mean_velocity": (0.1, 0, 0), "command": (0.2, 0, 0)})
    assert walk == pytest.approx({"falls": 0, "linear_error": 25, "yaw_error": 20, "speed_shortfall": 50})


def test_sqlite_refuses_parallel_workers(tmp_path):
    assert default_storage(tmp_path, 1).startswith("sqlite:///")
    assert default_storage(tmp_path, 2).startswith("journal:")
    with pytest.raises(ValueError, match="database is locked"):
        check_storage(f"sqlite:///{tmp_path}/x.db", 2)


def test_a_storage_url_is_shown_without_its_password():
    assert shown_storage("postgresql://user:SECRET@host:5432/db") == "postgresql://user:***@host:5432/db"
    assert shown_storage("storage=mysql://user:SECRET@host/db") == "storage=mysql://user:***@host/db"
    assert shown_storage("postgresql://user@host/db") == "postgresql://user@host/db"
    assert shown_storage("journal:out/study.journal") == "journal:out/study.journal"
    recorded = command_line(["experiment", "optimize-workers", "--set", "storage=postgresql://u:SECRET@h/db"])
    assert "SECRET" not in recorded and "storage=postgresql://u:***@h/db" in recorded
    with pytest.raises(ValueError, match=r"u:\*\*\*@h") as refused:
        check_storage("postgresql://u:SECRET@h:port/db", 1)
    assert "SECRET" not in str(refused.value)


def test_journal_trial_of_a_dead_local_worker_is_failed_and_retried(tmp_path):
    from upright.tuning.storage import WORKER_ATTR, fail_orphans, open_storage

    study = optuna.create_study(study_name="s", storage=open_storage(f"journal:{tmp_path}/study.journal"))
    trial = study.ask()
    trial.suggest_float("x", 0.0, 1.0)
    trial.set_user_attr(WORKER_ATTR, f"{socket.gethostname()}:{2**22 + 12345}")  # above Linux's pid_max: dead
    alive = study.ask()
    alive.set_user_attr(WORKER_ATTR, f"{socket.gethostname()}:{os.getpid()}")
    assert fail_orphans(study) == [0]
    trials = study.get_trials()
    assert [t.state for t in trials] == [TrialState.FAIL, TrialState.RUNNING, TrialState.WAITING]
    assert retried_trial(trials[2]) == 0 and trials[2].params == trials[0].params



def test_trial_killed_before_its_worker_named_it_is_failed_after_the_grace_period(tmp_path):
    # A worker killed between Optuna creating its trial and the objective naming it leaves a running
    # trial with neither a heartbeat nor a worker name (seen in CI as a trial running forever).
    from upright.tuning.storage import fail_orphans, open_storage

    study = optuna.create_study(study_name="s", storage=open_storage(f"sqlite:///{tmp_path}/study.db"))
    with pytest.warns(UserWarning, match="Heartbeat"):  # Optuna: heartbeats are for Study.optimize, which asks too
        study.ask()
    assert fail_orphans(study, unnamed_after=60.0) == []  # just created: maybe alive
    time.sleep(0.3)
    assert fail_orphans(study) == []  # without unnamed_after an unnamed trial is left alone
    assert fail_orphans(study, unnamed_after=0.2) == [0]
    assert [t.state for t in study.get_trials()] == [TrialState.FAIL, TrialState.WAITING]

# ---------------------------------------------------------------- a study end to end (SQLite)
def test_study_enqueues_hand_tuned_first_exports_and_resumes(tmp_path):
    summary = optimize(tiny(tmp_path))
    study = optuna.load_study(study_name=summary["study"], storage=f"sqlite:///{tmp_path}/study.db")
    trials = study.get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 2
    assert trials[0].user_attrs["hand_tuned"] and summary["hand_tuned"]["number"] == 0
    space = load_space("spline", "wolfgang").for_start("supine")
    defaults = default_params("spline", "wolfgang")
    assert trials[0].params == pytest.approx(space.hand_tuned(defaults))
    for name in ("summary.md", "summary.json", "trials.csv", "best_params.yaml", "history.png"):
        assert (tmp_path / name).is_file(), name
    params = load_params_file(tmp_path / "best_params.yaml")
    assert set(params) == {p.name for p in space.params}
    best = study.trials[summary["best"]["number"]]
    assert params["arms_angle_back"] == pytest.approx(math.radians(best.params["arms_angle_back"]))
    # the file drives the controller as a policy and as an environment's prior
    import gymnasium as gym

    from upright.eval.runner import run_episodes
    from upright.policies.builtin import ControllerPolicy

    run = run_episodes("upright/WolfgangGetUp-v0", ControllerPolicy("spline", params=params), 1,
                       env_kwargs={"start": "supine", **TINY}, progress=False)
    assert run.records[0]["steps"] == 100
    env = gym.make("upright/WolfgangGetUp-v0", prior="spline", prior_params=str(tmp_path / "best_params.yaml"))
    assert env.unwrapped.prior.params.arms_angle_back == pytest.approx(params["arms_angle_back"])
    # resume: the same command with more trials runs only the rest
    summary = optimize(tiny(tmp_path, trials=3))
    assert summary["states"]["complete"] == 3
    with pytest.raises(ValueError, match="was made for"):
        optimize(tiny(tmp_path, trials=4, repetitions=2))


@pytest.mark.parametrize("sampler", ["tpe", "motpe", "cmaes", "random"])
def test_every_sampler_runs_past_its_startup(tmp_path, sampler):
    summary = optimize(tiny(tmp_path, sampler=sampler, trials=3, startup=1, hand_tuned=False))
    assert summary["states"]["complete"] == 3
    assert len(summary["best"]["values"]) == (3 if sampler == "motpe" else 1)


def test_prune_reports_the_running_mean_after_each_repetition(tmp_path):
    summary = optimize(tiny(tmp_path, sampler="tpe", repetitions=2, trials=3, prune=True))
    study = optuna.load_study(study_name=summary["study"], storage=f"sqlite:///{tmp_path}/study.db")
    for t in study.get_trials(states=(TrialState.COMPLETE,)):
        assert set(t.intermediate_values) == {0, 1} and t.intermediate_values[1] == pytest.approx(t.value)


def test_ctrl_c_loses_only_the_running_trial_which_is_retried(tmp_path, monkeypatch):
    import upright.tuning.study as study_module  # where the trials run their episodes

    real = study_module.run_episodes
    calls = {"n": 0}

    def interrupting(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(study_module, "run_episodes", interrupting)
    with pytest.raises(KeyboardInterrupt):
        optimize(tiny(tmp_path, trials=3))
    study = optuna.load_study(study_name="spline-wolfgang-supine-random-STH", storage=f"sqlite:///{tmp_path}/study.db")
    states = [t.state for t in study.get_trials()]
    assert states == [TrialState.COMPLETE, TrialState.FAIL, TrialState.WAITING]
    assert retried_trial(study.trials[2]) == 1
    assert study.trials[2].params == study.trials[1].params
    assert (tmp_path / "summary.md").is_file()  # written for the trials so far
    monkeypatch.setattr(study_module, "run_episodes", real)
    summary = optimize(tiny(tmp_path, trials=3))
    assert summary["states"] == {"running": 0, "complete": 3, "pruned": 0, "fail": 1, "waiting": 0}


def test_cli_runs_a_tiny_study(tmp_path, capsys):
    code = main(["optimize", "--controller", "spline", "--robot", "wolfgang", "--start", "front", "--sampler", "tpe",
                 "--objective", "ST", "--trials", "1", "--repetitions", "1", "--out", str(tmp_path),
                 "--set", "max_episode_seconds=1"])
    assert code == 0
    assert "best trial 0" in capsys.readouterr().out
    assert main(["optimize", "--controller", "spline", "--robot", "wolfgang", "--sampler", "tpe", "--workers", "2",
                 "--storage", f"sqlite:///{tmp_path}/x.db", "--out", str(tmp_path)]) == 2


def test_the_measurements_are_experiment_protocols(tmp_path, capsys):
    """``upright experiment`` lists the optimize-* protocols with their options and refuses the
    workers measurement on a file storage before it starts a study."""
    assert main(["experiment", "--list"]) == 0
    listed: dict[str, str] = {}  # name → its summary and options (indented lines below it), joined
    for line in capsys.readouterr().out.splitlines():
        if line.startswith(" "):
            listed[name] += " " + line.strip()
        else:
            name = line
            listed[name] = ""
    for name in ("optimize-figure4", "optimize-spline-thesis", "optimize-keyframe-competition", "optimize-workers"):
        assert "trials=100 repetitions=3" in listed[name]
    assert main(["experiment", "optimize-workers", "--set", f"storage=sqlite:///{tmp_path}/x.db",
                 "--out", str(tmp_path)]) == 2
    assert "server URL" in capsys.readouterr().err


# ---------------------------------------------------------------- PostgreSQL
def _python(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_a_database_password_reaches_no_output(postgres_url, tmp_path, capsys):
    """The password of a ``--storage`` URL is in nothing ``upright optimize`` prints or writes into
    ``--out``, nor in the errors that name the storage: a study of that name made for other settings,
    a sweep to resume that the database does not hold."""
    url = postgres_url.replace("postgres@", "postgres:SECRET@")  # the cluster trusts every password
    study = ["optimize", "--controller", "spline", "--robot", "wolfgang", "--start", "back", "--sampler", "random",
             "--objective", "STH", "--trials", "1", "--storage", url, "--set", "max_episode_seconds=1"]
    assert main([*study, "--repetitions", "1", "--out", str(tmp_path / "first")]) == 0
    assert main([*study, "--repetitions", "2", "--out", str(tmp_path / "other")]) == 2
    assert main(["sweep", str(Path(__file__).parent / "data" / "sweep-tiny.yml"), "--resume",
                 "--storage", url, "--out", str(tmp_path / "sweep")]) == 2
    printed = capsys.readouterr()
    assert "was made for" in printed.err and "no study" in printed.err and "postgres:***@" in printed.err
    assert "postgres:***@" in (tmp_path / "first" / "summary.md").read_text()
    for path in [p for p in tmp_path.rglob("*") if p.is_file()]:
        assert b"SECRET" not in path.read_bytes(), path
    assert "SECRET" not in printed.out + printed.err


def test_two_workers_on_one_postgresql_study(postgres_url, tmp_path):
    summary = optimize(tiny(tmp_path, storage=postgres_url, workers=2, trials=6, seed=3))
    study = optuna.load_study(study_name=summary["study"], storage=postgres_url)
    trials = study.get_trials()
    assert [t.number for t in trials] == list(range(len(trials)))  # every trial recorded once
    assert {t.state for t in trials} == {TrialState.COMPLETE} and 6 <= len(trials) <= 7
    assert len({t.user_attrs["worker"] for t in trials}) == 2  # both workers took trials
    assert len({tuple(sorted(t.params.items())) for t in trials}) == len(trials)  # no trial sampled twice


def test_killed_worker_trial_is_failed_and_retried(postgres_url, tmp_path):
    # A worker on a slow trial (the hand-tuned set standing up, 3 episodes) is killed mid-trial.
    code = (f"from pathlib import Path; from upright.tuning import OptimizeConfig, optimize; "
            f"optimize(OptimizeConfig('spline', 'wolfgang', start='back', sampler='random', objective='STH', trials=2, "
            f"repetitions=3, storage={postgres_url!r}, out=Path({str(tmp_path)!r}), progress=False, "
            f"heartbeat_interval=1, grace_period=2, settings={{'max_episode_seconds': 10.0}}))")
    worker = _python(code)
    storage_study = None
    deadline = time.time() + 120
    while time.time() < deadline and worker.poll() is None:
        try:
            storage_study = optuna.load_study(study_name="spline-wolfgang-supine-random-STH", storage=postgres_url)
            if any(t.state == TrialState.RUNNING for t in storage_study.get_trials()):
                break
        except KeyError:  # the study is not created yet
            pass
        time.sleep(0.1)
    assert worker.poll() is None, worker.communicate()[0]
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    running = [t.number for t in storage_study.get_trials() if t.state == TrialState.RUNNING]
    assert len(running) == 1
    time.sleep(3)  # past the grace period: the next process fails the silent trial and retries it
    resumed = _python(code)
    output = resumed.communicate(timeout=300)[0]
    assert resumed.returncode == 0, output
    trials = storage_study.get_trials()
    states = [t.state for t in trials]
    assert states.count(TrialState.FAIL) == 1 and states.count(TrialState.RUNNING) == 0
    retry = next(t for t in trials if retried_trial(t) == running[0])
    killed = trials[running[0]].params  # those suggested before the kill (maybe not all)
    assert retry.state == TrialState.COMPLETE and {k: retry.params[k] for k in killed} == killed
    assert states.count(TrialState.COMPLETE) == 2


@pytest.mark.parametrize("sampler, objective", [("random", "STH"), ("motpe", "ST")])
def test_optimize_shows_a_progress_bar_logs_no_trial_and_names_its_metrics(tmp_path, capsys, sampler, objective):
    """Optuna's INFO line per trial (the whole parameter dict) stays off; a bar counts the trials;
    the study carries its objective names (optuna-dashboard shows them)."""
    optuna.logging.set_verbosity(optuna.logging.INFO)
    summary = optimize(tiny(tmp_path, sampler=sampler, objective=objective, progress=True, hand_tuned=False))
    assert optuna.logging.get_verbosity() == optuna.logging.WARNING
    bar = capsys.readouterr().err
    assert "optimize spline wolfgang" in bar and "2/2" in bar and "trial" in bar
    study = optuna.load_study(study_name=summary["study"], storage=f"sqlite:///{tmp_path}/study.db")
    names = {"STH": ["success + time + head"], "ST": ["success", "time"]}[objective]
    assert study.metric_names == names
