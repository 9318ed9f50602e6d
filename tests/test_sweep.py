"""``upright sweep``: a study of real (tiny) PPO runs on Optuna — run folders, the
selection-seed objective, the summary, bad input, and two workers on a throwaway PostgreSQL
cluster with one killed mid-trial."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
import yaml
from optuna.trial import TrialState

from upright.cli import main
from upright.policies.run_folder import load_run_config, read_learning_curve
from upright.tuning.storage import retried_trial
from upright.training.sweep import SweepConfig, best_evaluation, open_sweep, resolve, trial_config

#: The tiny space: 256 PPO steps per run, evaluations at 128 and 256 steps of one 0.4 s walk.
TINY = Path(__file__).parent / "data" / "sweep-tiny.yml"


def _study(out: Path, name: str = "sweep-tiny") -> optuna.Study:
    return optuna.load_study(study_name=name, storage=f"sqlite:///{out}/study.db")


def test_sweep_runs_each_trial_as_a_run_then_summarises_and_resumes(tmp_path, capsys, monkeypatch):
    out = tmp_path / "sweep"
    assert main(["sweep", str(TINY), "--trials", "2", "--out", str(out), "--seed", "1"]) == 0
    study = _study(out)
    trials = study.get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 2
    runs = [Path(t.user_attrs["run_dir"]) for t in trials]
    assert runs == [out / "runs" / "NaoWalk-v0" / f"trial-{n}" for n in (0, 1)]
    for trial, run in zip(trials, runs):
        config = load_run_config(run)
        # the sampled values reached the run: hyperparameter, reward scale, environment argument
        assert config.hyperparams["learning_rate"] == pytest.approx(trial.params["hp.learning_rate"])
        assert config.env_kwargs["reward_scales"]["upright"] == pytest.approx(trial.params["reward_scales.upright"])
        assert config.env_kwargs["residual_scale"] == pytest.approx(trial.params["residual_scale"])
        assert config.eval_seed == 1_000_000 and config.steps == 256  # selection seeds, never held-out ones
        rows = read_learning_curve(run / "learning_curve.csv")
        assert [r["steps"] for r in rows] == [128, 256]
        assert trial.value == pytest.approx(best_evaluation(run)["linear_tracking_error"])
        assert trial.value in [r["linear_tracking_error"] for r in rows]
        assert trial.user_attrs["selection"]["fall_rate"] is not None
        assert (run / "command.txt").read_text().strip() == trial.user_attrs["command"]
        assert "--name" in trial.user_attrs["command"] and f"trial-{trial.number}" in trial.user_attrs["command"]
    assert trials[0].params != trials[1].params
    # --summary alone runs nothing and writes the table, the plots and the ship command
    for name in ("summary.md", "history.png", "importance.png"):
        (out / name).unlink()
    capsys.readouterr()
    assert main(["sweep", str(TINY), "--summary", "--out", str(out)]) == 0
    assert len(_study(out).get_trials()) == 2
    best = _study(out).best_trial
    page = (out / "summary.md").read_text()
    ship = f"upright ship {best.user_attrs['run_dir']} --name sweep-tiny-trial-{best.number} --model best"
    assert ship in page and ship in capsys.readouterr().out
    assert "hp.learning_rate" in page and "linear_tracking_error (objective)" in page and str(runs[1]) in page
    assert (out / "history.png").stat().st_size > 0 and (out / "importance.png").stat().st_size > 0
    assert len((out / "trials.csv").read_text().splitlines()) == 3
    # --docs: the same page under docs/results with its command, and the plots beside it
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", str(TINY), "--summary", "--out", str(out), "--docs"]) == 0
    docs = tmp_path / "docs" / "results"
    page = (docs / "sweep-sweep-tiny.md").read_text()
    assert ship in page and "--summary" in page and page.count("Machine:") == 1
    for name in ("history.png", "importance.png"):
        assert (docs / "sweeps" / f"sweep-tiny-{name}").stat().st_size > 0 and f"sweeps/sweep-tiny-{name}" in page
    # --resume continues the study: one more trial for --trials 3
    assert main(["sweep", str(TINY), "--trials", "3", "--resume", "--out", str(out)]) == 0
    trials = _study(out).get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 3
    # the continued sampler draws new values, not its first run's first ones again
    assert trials[2].params not in (trials[0].params, trials[1].params)


def test_pruning_reports_every_evaluation(tmp_path):
    space = yaml.safe_load(TINY.read_text())
    space["prune"] = {"startup_trials": 1, "warmup_steps": 0}
    path = tmp_path / "pruned.yml"
    path.write_text(yaml.safe_dump(space))
    assert main(["sweep", str(path), "--trials", "2", "--out", str(tmp_path / "out")]) == 0
    study = _study(tmp_path / "out", "pruned")
    for trial in study.get_trials():
        rows = read_learning_curve(Path(trial.user_attrs["run_dir"]) / "learning_curve.csv")
        reported = {int(r["steps"]): r["linear_tracking_error"] for r in rows}
        assert trial.intermediate_values == pytest.approx(reported)
        assert trial.state in (TrialState.COMPLETE, TrialState.PRUNED)


def test_a_sampled_combination_train_refuses_fails_its_trial_not_the_worker(tmp_path):
    """A fixed initial residual of 0.08 rad on LHipRoll needs residual_scale above about 0.137: the
    trial with 0.1 fails with the error recorded, and the worker goes on to a complete one."""
    space = yaml.safe_load(TINY.read_text())
    space["set"]["hp.initial_residual.LHipRoll"] = 0.08
    path = tmp_path / "initial.yml"
    path.write_text(yaml.safe_dump(space))
    out = tmp_path / "out"
    plan = resolve(SweepConfig(space=str(path), trials=1, out=out))
    study = open_sweep(plan)
    study.enqueue_trial({"hp.learning_rate": 1e-4, "reward_scales.upright": 1.0, "residual_scale": 0.1})
    assert main(["sweep", str(path), "--trials", "1", "--out", str(out)]) == 0
    trials = _study(out, "initial").get_trials()
    assert [t.state for t in trials] == [TrialState.FAIL, TrialState.COMPLETE]
    assert "beyond the residual range" in trials[0].user_attrs["error"]
    assert trials[1].params["residual_scale"] != 0.1


@pytest.mark.parametrize(("change", "named"), [
    pytest.param({"objectve": "fall_rate"}, ["'objectve'"], id="unknown-key"),
    pytest.param({"train": {"env_id": "upright/NaoWalk-v0", "stpes": 10}},
                 ["unknown key 'train.stpes'; valid keys of train: env_id, prior"], id="unknown-train-key"),
    pytest.param({"params": [{"name": "hp.learning_rat", "low": 0.1, "high": 0.2}]}, ["unknown key 'hp.learning_rat'"],
                 id="unknown-hyperparameter"),
    pytest.param({"params": [{"name": "reward_scales.uprite", "low": 0.1, "high": 0.2}]}, ["uprite"],
                 id="unknown-reward-term"),
    pytest.param({"objective": "success_rate"}, ["'success_rate'", "walk"], id="objective-of-another-task"),
    pytest.param({"train": {"env_id": "upright/NaoWalk-v0", "eval_every": 0}}, ["eval_every"],
                 id="no-evaluation"),
])
def test_bad_space_is_one_line_and_exit_2(tmp_path, capsys, change, named):
    space = {**yaml.safe_load(TINY.read_text()), **change}
    path = tmp_path / "bad.yml"
    path.write_text(yaml.safe_dump(space))
    assert main(["sweep", str(path), "--trials", "1", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert all(name in err for name in named), err
    assert not (tmp_path / "out").exists()


def test_shipped_space_makes_runs_that_upright_train_accepts(tmp_path, monkeypatch):
    from importlib import resources

    space = Path(str(resources.files("upright.training") / "sweeps" / "nao-walk-step_adjust.yml"))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)  # a 2-core machine
    plan = resolve(SweepConfig(str(space), out=tmp_path))  # the middle of every range, checked as a run
    assert plan.space.objective == "fall_rate" and plan.space.direction == "minimize"
    config = trial_config(plan, {p.name: p.low for p in plan.space.params}, "trial-0")
    assert config.eval_seed == 1_000_000 and config.eval_seed + config.eval_episodes < 3_000_000_000
    assert config.env_kwargs["reward_scales"]["fall"] == 10.0 and config.hp_overrides["learning_rate"] == 1e-5
    # auto chooses for a trial's share of the cores: on 2 cores one worker's 8 copies run batched,
    # two workers' trials one process each
    assert config.vec_env == "batched" and "--vec-env batched" in config.command
    two = resolve(SweepConfig(str(space), out=tmp_path, workers=2))
    assert trial_config(two, {p.name: p.low for p in two.space.params}, "trial-0").vec_env == "dummy"


def test_resume_of_a_study_that_does_not_exist_is_refused(tmp_path, capsys):
    assert main(["sweep", str(TINY), "--resume", "--out", str(tmp_path)]) == 2
    assert "no study 'sweep-tiny'" in capsys.readouterr().err


# ---------------------------------------------------------------- PostgreSQL
def _worker(url: str, out: Path, trials: int) -> subprocess.Popen:
    """A sweep worker process on the study at ``url`` (heartbeat every 1 s, dead after 2 s)."""
    code = (f"from pathlib import Path; from upright.training.sweep import SweepConfig, sweep; "
            f"sweep(SweepConfig({str(TINY)!r}, trials={trials}, storage={url!r}, out=Path({str(out)!r}), "
            f"heartbeat_interval=1, grace_period=2))")
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.slow
def test_two_workers_on_postgresql_one_killed_mid_trial(postgres_url, tmp_path):
    first, second = _worker(postgres_url, tmp_path / "a", 3), _worker(postgres_url, tmp_path / "b", 3)
    study, killed = None, None
    deadline = time.time() + 180
    while time.time() < deadline and killed is None and first.poll() is None:
        try:
            study = optuna.load_study(study_name="sweep-tiny", storage=postgres_url)
        except KeyError:  # not created yet
            time.sleep(0.2)
            continue
        for t in study.get_trials(states=(TrialState.RUNNING,)):
            run = t.user_attrs.get("run_dir")
            if t.user_attrs.get("worker", "").endswith(f":{first.pid}") and run and (Path(run) / "config.yml").is_file():
                killed = t.number  # its run has started training
        time.sleep(0.2)
    assert killed is not None, first.communicate()[0] if first.poll() is not None else "no trial of the first worker"
    first.send_signal(signal.SIGKILL)
    first.wait()
    output = second.communicate(timeout=300)[0]
    assert second.returncode == 0, output
    # the study continues from the command line (the retry of the killed trial, if still waiting, first)
    assert main(["sweep", str(TINY), "--trials", "4", "--resume", "--storage", postgres_url,
                 "--out", str(tmp_path / "c")]) == 0
    trials = study.get_trials()
    assert [t.number for t in trials] == list(range(len(trials)))  # every trial recorded once
    states = [t.state for t in trials]
    assert states.count(TrialState.FAIL) == 1 and trials[killed].state == TrialState.FAIL
    assert states.count(TrialState.COMPLETE) == 4 and len(trials) == 5
    retry = next(t for t in trials if retried_trial(t) == killed)
    assert retry.state == TrialState.COMPLETE and retry.params == trials[killed].params
    assert retry.user_attrs["run_dir"] != trials[killed].user_attrs["run_dir"]
    assert {t.user_attrs["worker"].rsplit(":", 1)[1] for t in trials} >= {str(first.pid), str(second.pid)}


def test_sweep_workers_measures_the_same_trials_per_worker_count(postgres_url, tmp_path, capsys):
    """``upright experiment sweep-workers``: a file storage is refused before anything starts; on
    PostgreSQL each worker count trains the same enqueued parameter sets to completion and the
    page reports a positive rate for each."""
    assert main(["experiment", "sweep-workers", "--set", f"storage=sqlite:///{tmp_path}/x.db",
                 "--out", str(tmp_path / "refused")]) == 2
    assert "server URL" in capsys.readouterr().err
    out = tmp_path / "measure"
    assert main(["experiment", "sweep-workers", "--set", f"storage={postgres_url}", f"space={TINY}", "trials=2",
                 "worker_counts=1,2,1", "--out", str(out)]) == 0
    data = json.loads((out / "results.json").read_text())
    rows = data["data"]["rows"]
    assert [r["workers"] for r in rows] == [1, 2, 1]  # a count may come again (its own folder)
    for row in rows:
        assert row["trials"] >= 2 and row["rate"] > 0 and row["numbers_unique"]
    studies = [s for s in optuna.get_all_study_summaries(postgres_url) if s.study_name.startswith("sweep-workers-")]
    params = [sorted((t.number, t.params["residual_scale"]) for t in
                     optuna.load_study(study_name=s.study_name, storage=postgres_url).get_trials()
                     if t.state == TrialState.COMPLETE)[:2] for s in studies]
    assert len(params) == 3 and all([v for _, v in p] == [v for _, v in params[0]] for p in params)
