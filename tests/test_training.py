"""upright train: zero-initialised residual = prior, run folder, resume (its settings kept, conflicts
refused), Ctrl-C, SIGTERM and SIGKILL, saves cut off midway, divergence, loading, bad configs.

Real (tiny) trainings on WolfgangGetUp with the spline prior and 1.5 s episodes.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import yaml

import upright  # noqa: F401  (registers the ids)
from upright.cli import main
from upright.eval.runner import run_episodes
from upright.policies.registry import load_policy, policy_names
from upright.policies.run import is_run_policy, load_normalizer, model_steps, run_env_id, run_env_kwargs
from upright.policies.run_folder import SELECTION_NUMBERS, TrainConfig, read_manifest
from upright.policies.sb3 import ModelPolicy, SB3Policy
from upright.training.vec_env import EPISODE_REWARD_TERMS, TEACHER_INFO, TRAINING_INFO, make_train_env
from upright.training.ship import ship
from upright.training.train import TrainingInterrupted, new_model, init_files, resolve, train

ENV = "upright/WolfgangGetUp-v0"
SHORT = {"max_episode_seconds": 1.5}
TINY_PPO = {"n_steps": 64, "batch_size": 64, "n_epochs": 1, "policy_kwargs.net_arch": (16, 16)}
#: ``upright train`` options of a tiny PPO run (with --env and --steps): 128 steps per rollout.
#: DummyVecEnv on every machine (a later --vec-env replaces it).
TINY_CLI = ["--prior", "spline", "--n-envs", "2", "--vec-env", "dummy", "--no-progress", "--eval-every", "0",
            "--checkpoint-every", "128", "--set", "max_episode_seconds=1.5", "hp.n_steps=64", "hp.batch_size=64",
            "hp.n_epochs=1", "hp.policy_kwargs.net_arch=16,16"]
RESUME = ["train", "--no-progress", "--resume"]


def _config(tmp_path: Path, **changes) -> TrainConfig:
    base = dict(env_id=ENV, prior="spline", algo="ppo", steps=256, n_envs=2, seed=0, env_kwargs=dict(SHORT),
                hp_overrides=dict(TINY_PPO), out=str(tmp_path / "runs"), eval_every=128, eval_episodes=1,
                checkpoint_every=128, progress=False, command="test", vec_env="dummy")
    return TrainConfig(**{**base, **changes})


def _records(run) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in ("episode",)} for r in run.records]


@pytest.mark.parametrize("algo, hp", [("ppo", TINY_PPO), ("sac", {"policy_kwargs.net_arch": (16, 16)}),
                                      ("td3", {"policy_kwargs.net_arch": (16, 16)})])
def test_zero_initialised_residual_is_exactly_the_prior(tmp_path, algo, hp):
    config = resolve(_config(tmp_path, algo=algo, hp_overrides=hp))
    venv = make_train_env(ENV, config.env_kwargs_with_prior, 1, 0, normalize=True, on_policy=algo == "ppo")
    model = new_model(config, venv, tmp_path / "tb")
    policy = ModelPolicy(model, venv, name="step0")
    residual = run_episodes(ENV, policy, 2, env_kwargs=config.env_kwargs_with_prior, seed=7, progress=False)
    prior = run_episodes(ENV, "zero", 2, env_kwargs=config.env_kwargs_with_prior, seed=7, progress=False)
    assert _records(residual) == _records(prior)
    observation = venv.reset()
    assert np.array_equal(model.predict(observation, deterministic=True)[0], np.zeros((1, 20), dtype=np.float32))
    venv.close()


@pytest.mark.parametrize("vec_env", ["dummy", "subproc"])
def test_training_infos_carry_the_episode_not_every_step(vec_env):
    """Training environments hand over only what training reads: per step the episode-end entries,
    at an episode's end the reward terms' sums, equal to summing the plain environment's
    ``info["reward_terms"]`` over the same seeded episode; ``keep_info`` keeps a teacher's entries."""
    kwargs = {**SHORT, "prior": "spline"}
    venv = make_train_env(ENV, kwargs, 1, 3, normalize=False, on_policy=True, vec_env=vec_env)
    action = np.full((1, 20), 0.3, dtype=np.float32)
    venv.reset()
    done, infos, steps = [False], [{}], 0
    while not done[0]:
        _, _, done, infos = venv.step(action)
        steps += 1
        if not done[0]:
            assert set(infos[0]) <= set(TRAINING_INFO) | {"TimeLimit.truncated"}
    venv.close()
    env = gym.make(ENV, **kwargs)
    env.reset(seed=3)
    sums: dict[str, float] = {}
    for _ in range(steps):
        info = env.step(action[0])[4]
        for term, value in info["reward_terms"].items():
            sums[term] = sums.get(term, 0.0) + float(value)
    assert "episode_metrics" in infos[0] and "episode" in infos[0]
    assert infos[0][EPISODE_REWARD_TERMS] == sums and len(sums) > 3
    kept = make_train_env(ENV, kwargs, 1, 3, normalize=False, on_policy=True, keep_info=TEACHER_INFO)
    kept.reset()
    info = kept.step(action)[3][0]
    assert {"sensors", "prior_status"} <= set(info) and "reward_terms" not in info
    kept.close()


def test_a_run_that_focuses_its_walk_commands_is_evaluated_on_the_plain_ranges(tmp_path):
    """Training that draws half its walk commands from ``command_focus`` is evaluated (periodic
    evaluation, checkpoint-selection, a shipped manifest: ``eval_kwargs_with_prior``) on the plain
    command ranges: the same commands as an environment without any focus, seed by seed. An
    explicit ``--eval-set command_focus_share`` is kept."""
    walk = dict(env_id="upright/WolfgangWalk-v0", prior="step_adjust")
    focus = {"command_focus": (0.15, 0.3, -0.1, 0.1, -0.5, 0.5), "command_focus_share": 0.5}
    config = resolve(_config(tmp_path, **walk, env_kwargs={**SHORT, **focus}))
    assert config.eval_env_kwargs == {"command_focus_share": 0.0}
    envs = {name: gym.make(config.env_id, **kwargs).unwrapped for name, kwargs in (
        ("training", config.env_kwargs_with_prior), ("evaluation", config.eval_kwargs_with_prior),
        ("plain", {**SHORT, "prior": "step_adjust"}))}
    commands = {name: [] for name in envs}
    for seed in range(20):
        for name, env in envs.items():
            env.reset(seed=seed)
            commands[name].append(env.command.copy())
    np.testing.assert_array_equal(commands["evaluation"], commands["plain"])
    assert not np.array_equal(commands["training"], commands["plain"])
    kept = resolve(_config(tmp_path, **walk, env_kwargs={**SHORT, **focus}, eval_env_kwargs={"command_focus_share": 0.5}))
    assert kept.eval_env_kwargs == {"command_focus_share": 0.5}
    assert resolve(_config(tmp_path, **walk, env_kwargs=dict(SHORT))).eval_env_kwargs == {}


def test_initial_residual_starts_the_policy_at_a_given_correction(tmp_path):
    """``hp.initial_residual``: the deterministic action is the residual of those joint offsets
    (the actuators' order of the robot), the rest stays zero; bad uses are refused by resolve."""
    bend = {"LKnee": 0.2, "RKnee": -0.2, "LAnklePitch": -0.1}
    config = resolve(_config(tmp_path, hp_overrides={**TINY_PPO, "initial_residual": bend}))
    venv = make_train_env(ENV, config.env_kwargs_with_prior, 1, 0, normalize=True, on_policy=True)
    model = new_model(config, venv, tmp_path / "tb")
    action = model.predict(venv.reset(), deterministic=True)[0][0]
    env = venv.envs[0].unwrapped
    names = env.robot.actuator_names
    assert names == tuple(env.sim.model.actuator(i).name for i in range(env.sim.model.nu))
    offsets = env.targets_from_action(action) - env.targets_from_action(np.zeros_like(action))
    np.testing.assert_allclose(offsets, [bend.get(name, 0.0) for name in names], atol=1e-7)
    venv.close()
    with pytest.raises(ValueError, match="unknown actuator 'LKnie'"):
        resolve(_config(tmp_path, hp_overrides={**TINY_PPO, "initial_residual": {"LKnie": 0.1}}))
    with pytest.raises(ValueError, match="beyond the residual range"):
        resolve(_config(tmp_path, hp_overrides={**TINY_PPO, "initial_residual": {"LKnee": 1.0}}))
    with pytest.raises(ValueError, match="initial_residual needs PPO, a prior"):
        resolve(_config(tmp_path, algo="sac", hp_overrides={"initial_residual": bend}))
    with pytest.raises(ValueError, match="initial_residual needs PPO, a prior"):
        resolve(_config(tmp_path, prior=None, hp_overrides={**TINY_PPO, "initial_residual": bend}))
    with pytest.raises(ValueError, match="residual_action needs a prior"):
        gym.make(ENV).unwrapped.residual_action(bend)


def test_imitation_fits_the_actor_to_a_hand_designed_residual(tmp_path):
    """``hp.imitate``: the teacher's rollouts count in the run's steps, the regression's error falls,
    and afterwards the deterministic policy acts as the teacher does, on observations of its own
    episodes, far closer than the fresh (zero) policy; bad uses are refused by resolve."""
    from upright.policies.feedback import feedback_policy
    from upright.training.imitation import imitate

    teacher_name = "feedback:wolfgang-getup-bend-ankle"
    hp = {**TINY_PPO, "imitate": teacher_name, "imitate_steps": 600, "imitate_epochs": 30,
          "imitate_batch_size": 64, "policy_kwargs.net_arch": (64, 64)}
    config = resolve(_config(tmp_path, hp_overrides=hp))
    assert config.extras.imitate_learning_rate == 1e-3  # the defaults fill what is not set
    venv = make_train_env(ENV, config.env_kwargs_with_prior, 2, 0, normalize=True, on_policy=True,
                          keep_info=TEACHER_INFO)
    model = new_model(config, venv, tmp_path / "tb")
    teacher = feedback_policy(teacher_name)
    slim = make_train_env(ENV, config.env_kwargs_with_prior, 1, 0, normalize=False, on_policy=True)
    with pytest.raises(ValueError, match="keep_info=TEACHER_INFO"):  # a teacher blind to the sensors
        imitate(model, slim, teacher, steps=10, epochs=1, batch_size=8, learning_rate=1e-3, seed=0,
                out=tmp_path / "blind.json")
    slim.close()
    record = imitate(model, venv, teacher, steps=600, epochs=30, batch_size=64, learning_rate=1e-3, seed=0,
                     out=tmp_path / "imitation.json")
    assert model.num_timesteps == record["steps"] == 600 and record["rollout"]["episodes"] >= 2
    assert record["loss_per_epoch"][-1] < 0.2 * record["loss_per_epoch"][0]
    env = gym.make(ENV, **config.env_kwargs_with_prior)
    obs, info = env.reset(seed=11)
    teacher.reset(env, 11)
    gaps = []
    for _ in range(100):
        wanted = teacher.act(obs, info)
        acted = model.predict(venv.normalize_obs(obs), deterministic=True)[0]
        gaps.append((np.mean((acted - wanted) ** 2), np.mean(wanted ** 2)))
        obs, _, _, _, info = env.step(wanted)
    imitated, zero = np.mean(gaps, axis=0)
    assert imitated < 0.1 * zero
    env.close()
    venv.close()
    with pytest.raises(ValueError, match="imitate needs PPO, a prior"):
        resolve(_config(tmp_path, prior=None, hp_overrides={**TINY_PPO, "imitate": teacher_name}))
    with pytest.raises(ValueError, match="imitate needs PPO, a prior"):
        resolve(_config(tmp_path, hp_overrides={**TINY_PPO, "imitate": teacher_name, "initial_residual": {"LKnee": 0.1}}))
    with pytest.raises(ValueError, match="unknown hand-designed residual 'feedback:nope'"):
        resolve(_config(tmp_path, hp_overrides={**TINY_PPO, "imitate": "feedback:nope"}))
    with pytest.raises(ValueError, match="was made for upright/WolfgangGetUp-v0 with prior 'spline'"):
        resolve(_config(tmp_path, prior="keyframe", hp_overrides={**TINY_PPO, "imitate": teacher_name}))


def test_an_imitating_run_starts_its_curve_at_the_teacher_steps(tmp_path):
    run_dir = train(_config(tmp_path, steps=384, hp_overrides={**TINY_PPO, "imitate": "feedback:wolfgang-getup-bend-ankle",
                                                               "imitate_steps": 200, "imitate_epochs": 2}))
    rows = list(csv.DictReader((run_dir / "learning_curve.csv").open()))
    assert [int(r["steps"]) for r in rows][:1] == [200]  # the imitated policy, evaluated before PPO
    assert int(rows[-1]["steps"]) >= 384 and float(rows[0]["wall_seconds"]) > 0
    assert yaml.safe_load((run_dir / "config.yml").read_text())["extras"]["imitate_steps"] == 200
    assert {"model_200_steps.zip", "model_vecnormalize_200_steps.pkl"} <= {p.name for p in (run_dir / "checkpoints").iterdir()}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A PPO run of 256 steps continued to 640 with --resume."""
    tmp = tmp_path_factory.mktemp("train")
    run_dir = train(_config(tmp))
    assert run_dir == tmp / "runs" / "WolfgangGetUp-v0" / "ppo-spline-1"
    assert main(["train", "--resume", str(run_dir), "--steps", "640", "--eval-every", "128", "--eval-episodes", "1",
                 "--no-progress"]) == 0
    return run_dir


def test_run_folder_holds_everything(run_dir):
    names = {p.name for p in run_dir.iterdir()}
    assert {"config.yml", "command.txt", "tb", "checkpoints", "model.zip", "best_model.zip", "vecnormalize.pkl",
            "eval", "learning_curve.csv"} <= names
    config = yaml.safe_load((run_dir / "config.yml").read_text())
    assert config["prior"] == "spline" and config["env_kwargs"] == SHORT and config["hyperparams"]["n_steps"] == 64
    head = subprocess.run(["git", "-C", str(Path(upright.__file__).resolve().parents[1]), "rev-parse", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    assert config["code"].removesuffix("-dirty") == head  # which code trained ("" outside a git checkout)
    assert (run_dir / "eval" / "prior" / "results.json").is_file()
    assert (run_dir / "checkpoints" / "model_256_steps.zip").is_file()
    if importlib.util.find_spec("matplotlib") is not None:
        assert (run_dir / "learning_curve.png").stat().st_size > 0


def test_resume_continues_steps_curve_and_tensorboard(run_dir):
    from stable_baselines3 import PPO
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    assert PPO.load(run_dir / "model.zip", device="cpu").num_timesteps == 640
    first, resumed = (run_dir / "command.txt").read_text().splitlines()  # both commands that trained it
    assert first == "test" and "--resume" in resumed
    assert "# resumed from model.zip (256 steps) on code" in resumed and resumed.endswith("; changed steps 256 -> 640")
    curve = (run_dir / "learning_curve.csv").read_text().splitlines()
    steps = [int(line.split(",")[0]) for line in curve[1:]]
    assert steps == [128, 256, 384, 512, 640]
    assert [p.name for p in (run_dir / "tb").iterdir()] == ["run_1"]
    events = EventAccumulator(str(run_dir / "tb" / "run_1"))
    events.Reload()
    tags = events.Tags()["scalars"]
    assert {"eval/success_rate", "eval/success_ci_low", "prior/success_rate", "reward/upright"} <= set(tags)
    tb_steps = [e.step for e in events.Scalars("eval/success_rate")]
    assert tb_steps == sorted(tb_steps) and tb_steps[-1] == 640 and tb_steps[0] == 128
    rows = list(csv.DictReader(io.StringIO("\n".join(curve))))
    scores = [(float(r["success_rate"]), float(r["mean_return"])) for r in rows]
    best = int(rows[scores.index(max(scores))]["steps"])  # the first evaluation with the best score, resume or not
    assert PPO.load(run_dir / "best_model.zip", device="cpu").num_timesteps == best


def test_tensorboard_has_the_training_episodes_metrics_and_the_hyperparameters(run_dir):
    """The event file holds the training episodes' get-up metrics (``episode/*``: the means of
    ``info["episode_metrics"]`` over the episodes of each log, booleans as rates) and the run's
    settings and hyperparameters as TensorBoard's HParams."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

    events = EventAccumulator(str(run_dir / "tb" / "run_1"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"episode/success", "episode/stood_up", "episode/falls", "episode/tries", "episode/episode_seconds"} <= tags
    assert all(0.0 <= e.value <= 1.0 for e in events.Scalars("episode/stood_up"))
    assert {e.value for e in events.Scalars("episode/episode_seconds")} == {SHORT["max_episode_seconds"]}
    (start,) = [data.session_start_info for data in map(HParamsPluginData.FromString,
                                                        events.PluginTagToContent("hparams").values())
                if data.HasField("session_start_info")]  # one tag for the run and its resumption
    values = {key: getattr(value, value.WhichOneof("kind")) for key, value in start.hparams.items()}
    assert values["algo"] == "ppo" and values["prior"] == "spline" and values["env.max_episode_seconds"] == 1.5
    assert values["n_steps"] == 64 and values["policy_kwargs.net_arch"] == "[16, 16]" and values["steps"] in (256, 640)
    assert "None" not in values.values()


def test_eval_video_logs_a_clip_of_the_policy_at_each_evaluation(run_dir, tmp_path, capsys):
    """``--eval-video``: every periodic evaluation adds a TensorBoard video ``eval/video`` at its
    step, an animated GIF of the clip's size starting from the first evaluation seed; a run
    without it (``run_dir``) logs none."""
    from PIL import Image
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from conftest import no_gl
    from upright.eval.video import CLIP_SIZE

    out = tmp_path / "runs"
    code = main(["train", "--env", ENV, "--steps", "256", *TINY_CLI, "--eval-every", "128", "--eval-episodes", "1",
                 "--eval-set", "max_episode_seconds=0.5", "--eval-video", "--out", str(out)])
    if code == 3:
        no_gl(capsys.readouterr().err)
    assert code == 0
    video_run = out / "WolfgangGetUp-v0" / "ppo-spline-1"
    assert yaml.safe_load((video_run / "config.yml").read_text())["eval_video"] is True
    events = EventAccumulator(str(video_run / "tb" / "run_1"))
    events.Reload()
    clips = events.Images("eval/video")
    assert [clip.step for clip in clips] == [128, 256]
    for clip in clips:
        gif = Image.open(io.BytesIO(clip.encoded_image_string))
        assert gif.format == "GIF" and gif.size == CLIP_SIZE == (clip.width, clip.height)
        assert gif.n_frames == 3  # 0.5 s episodes at 100 Hz, a frame every 20 steps: steps 0, 20, 40
    assert [e.step for e in events.Scalars("eval/success_rate")] == [128, 256]
    without = EventAccumulator(str(run_dir / "tb" / "run_1"))
    without.Reload()
    assert without.Tags()["images"] == [] and without.Scalars("eval/success_rate")


def test_run_folder_evaluates_through_upright_eval(run_dir, tmp_path):
    assert run_env_kwargs(str(run_dir)) == {**SHORT, "prior": "spline"}
    out = tmp_path / "eval"
    assert main(["eval", "--env", ENV, "--policy", str(run_dir / "best_model.zip"), "--episodes", "1",
                 "--out", str(out)]) == 0
    result = yaml.safe_load((out / "results.json").read_text())
    assert result["env_kwargs"] == {**SHORT, "prior": "spline"} and result["episodes"] == 1


def test_params_of_a_run_policy_override_its_prior(run_dir, tmp_path):
    out = tmp_path / "eval"
    assert main(["eval", "--env", ENV, "--policy", str(run_dir), "--episodes", "1", "--out", str(out),
                 "--set", "params.trunk_pitch=0.1"]) == 0
    result = yaml.safe_load((out / "results.json").read_text())
    assert result["env_kwargs"] == {**SHORT, "prior": "spline", "prior_params": {"trunk_pitch": 0.1}}


def test_a_policy_in_another_environment_is_refused(run_dir):
    policy = load_policy(str(run_dir))
    with pytest.raises(ValueError, match="observation shape"):
        run_episodes(ENV, policy, 1, env_kwargs=SHORT, progress=False)  # no prior: smaller observation


def test_init_starts_a_new_run_from_a_trained_policy(run_dir, tmp_path):
    """--init: the new run's first policy is the trained one (same episodes, normalisation and all),
    trained on with this command's hyperparameters; a run that does not fit is refused by name."""
    init = str(run_dir / "best_model.zip")
    config = resolve(_config(tmp_path, init=init, hp_overrides={**TINY_PPO, "learning_rate": 1e-5}))
    _, normalizer = init_files(init, "ppo", True)
    venv = make_train_env(ENV, config.env_kwargs_with_prior, 1, 0, normalize=True, on_policy=True,
                          normalizer=normalizer)
    model = new_model(config, venv, tmp_path / "tb")
    assert model.learning_rate == 1e-5
    fine_tuned = run_episodes(ENV, ModelPolicy(model, venv, name="init"), 2, env_kwargs=config.env_kwargs_with_prior,
                              seed=11, progress=False)
    trained = run_episodes(ENV, load_policy(init), 2, env_kwargs=config.env_kwargs_with_prior, seed=11, progress=False)
    assert _records(fine_tuned) == _records(trained)
    assert fine_tuned.records[0]["return"] != run_episodes(ENV, "zero", 1, env_kwargs=config.env_kwargs_with_prior,
                                                           seed=11, progress=False).records[0]["return"]
    venv.close()
    with pytest.raises(ValueError, match="observation_space has shape"):
        resolve(_config(tmp_path, init=init, env_kwargs={**SHORT, "residual_scale": 0.3}, prior=None))
    with pytest.raises(ValueError, match="trained with ppo, not sac"):
        resolve(_config(tmp_path, init=init, algo="sac", hp_overrides={}))
    with pytest.raises(ValueError, match="hp.normalize is False"):
        resolve(_config(tmp_path, init=init, hp_overrides={**TINY_PPO, "normalize": False}))
    assert main(["train", "--resume", str(run_dir), "--init", init]) == 2
    run = train(_config(tmp_path, init=init, steps=64, eval_every=0))
    assert yaml.safe_load((run / "config.yml").read_text())["init"] == init
    manifest = yaml.safe_load((ship(run, "tuned", model="final", zoo=tmp_path / "zoo") / "manifest.yml").read_text())
    assert manifest["init"]["policy"] == init and manifest["init"]["total_steps"] == 640
    assert manifest["init"]["training_commands"] == (run_dir / "command.txt").read_text().strip().splitlines()


def test_zoo_policy_loads_by_name(run_dir, tmp_path, monkeypatch):
    zoo = tmp_path / "zoo"
    assert main(["ship", str(run_dir), "--name", "tiny", "--zoo", str(zoo)]) == 0
    entry = zoo / "tiny"
    assert (entry / "model.zip").read_bytes() == (run_dir / "best_model.zip").read_bytes()
    assert (entry / "vecnormalize.pkl").read_bytes() == (run_dir / "best_vecnormalize.pkl").read_bytes()
    manifest = yaml.safe_load((entry / "manifest.yml").read_text())
    curve = list(csv.DictReader((run_dir / "learning_curve.csv").open()))
    assert manifest["env_id"] == ENV and manifest["algo"] == "ppo" and manifest["model"] == "best"
    assert manifest["total_steps"] == 640 and manifest["model_steps"] in {int(r["steps"]) for r in curve}
    assert manifest["training_commands"][0] == "test" and "--resume" in manifest["training_commands"][1]
    assert manifest["env_kwargs"]["prior"] == "spline"
    monkeypatch.setenv("UPRIGHT_ZOO", str(zoo))
    policy = load_policy("zoo:tiny")
    assert policy.name == "tiny" and policy.normalizer is not None
    assert run_env_kwargs("zoo:tiny")["prior"] == "spline"
    assert run_env_id("zoo:tiny") == ENV and run_env_id("spline") is None  # upright report: its env only
    assert "zoo:tiny" in policy_names()
    best = load_policy(str(run_dir / "best_model.zip"))
    shipped = run_episodes(ENV, policy, 1, env_kwargs=run_env_kwargs("zoo:tiny"), seed=5, progress=False)
    trained = run_episodes(ENV, best, 1, env_kwargs=run_env_kwargs("zoo:tiny"), seed=5, progress=False)
    assert _records(shipped) == _records(trained)
    with pytest.raises(ValueError, match="'zoo:nope'"):
        load_policy("zoo:nope")
    assert main(["ship", str(run_dir), "--name", "tiny", "--zoo", str(zoo)]) == 2  # exists: not overwritten
    assert main(["ship", str(run_dir), "--name", "bad name", "--zoo", str(zoo)]) == 2


def test_eval_env_kwargs_evaluate_and_load_the_task_the_run_is_for(tmp_path):
    config = _config(tmp_path, steps=128, env_kwargs={**SHORT, "start": ("standing", "prone")},
                     eval_env_kwargs={"start": "supine"})
    run_dir = train(config)
    saved = yaml.safe_load((run_dir / "config.yml").read_text())
    assert saved["env_kwargs"]["start"] == ["standing", "prone"] and saved["eval_env_kwargs"] == {"start": "supine"}
    evaluated = yaml.safe_load(next((run_dir / "eval").glob("0*/results.json")).read_text())
    assert evaluated["env_kwargs"]["start"] == "supine" and evaluated["by_start"].keys() == {"supine"}
    assert run_env_kwargs(str(run_dir)) == {**SHORT, "start": "supine", "prior": "spline"}


@pytest.mark.parametrize("args, message", [
    (["--eval-set", "start=sitting"], "'sitting'"),
    (["--eval-set", "hp.gamma=0.9"], "hp.gamma"),
    (["--algo", "dqn"], "'dqn'"),
    (["--set", "hp.learning_rat=1e-3"], "--set: unknown key 'hp.learning_rat'; valid keys of hp: normalize, "),
    (["--set", "hp.policy_kwargs.net=8"], "policy_kwargs.net"),
    (["--prior", "lipm"], "'lipm'"),
    (["--set", "gravity=1"], "'gravity'"),
    (["--resume", "."], "not a run folder"),
    (["--set", "hp.policy_kwargs.net_arch=64"], "hp.policy_kwargs.net_arch: input should be a valid list or input "
                                                "should be a valid dictionary, got 64"),
    (["--set", "hp.policy_kwargs.net_arch=64.5,64"], "hp.policy_kwargs.net_arch.0: input should be a valid integer"),
    (["--checkpoint-every", "0"], "checkpoint_every must be an integer >= 1, got 0"),
    (["--eval-episodes", "0"], "eval_episodes must be an integer >= 1, got 0"),
    (["--eval-every", "-1"], "eval_every must be an integer >= 0, got -1"),
    (["--steps", "0"], "steps must be an integer >= 1, got 0"),
    (["--n-envs", "0"], "n_envs must be an integer >= 1, got 0"),
    (["--vec-env", "fast"], "vec_env must be one of auto, dummy, subproc, batched, got 'fast'"),
    (["--seed", "-1"], "seed must be an integer >= 0, got -1"),
    (["--set", "hp.learning_rate=-1e-3"], "hp.learning_rate: input should be greater than 0, got -0.001"),
    (["--set", "hp.gamma=1.5"], "hp.gamma: input should be less than or equal to 1, got 1.5"),
    (["--set", "hp.n_steps=0"], "hp.n_steps: input should be greater than or equal to 1, got 0"),
    (["--set", "hp.batch_size=1"], "hp.batch_size: input should be greater than or equal to 2, got 1"),
    (["--set", "hp.normalize=maybe"], "hp.normalize: input should be a valid boolean, unable to interpret input, "
                                      "got 'maybe'"),
    (["--set", "hp.warmup_steps=-5"], "hp.warmup_steps: input should be greater than or equal to 0, got -5"),
    (["--set", "hp.push_curriculum_start=0.5"], "push_curriculum_start and push_curriculum_steps go together; "
                                                "push_curriculum_steps is missing"),
    (["--set", "hp.model_curriculum_steps=10"], "model_curriculum_start and model_curriculum_steps go together"),
    (["--set", "hp.push_curriculum_start=1.5", "hp.push_curriculum_steps=10"],
     "hp.push_curriculum_start: input should be less than or equal to 1, got 1.5"),
    (["--set", "hp.policy_kwargs.ortho_init=3"], "hp.policy_kwargs.ortho_init: input should be a valid boolean"),
    (["--algo", "sac", "--set", "hp.train_freq=0"], "hp.train_freq: input should be greater than or equal to 1"),
    (["--algo", "sac", "--set", "hp.ent_coef=often"], "hp.ent_coef: input should be a valid number, unable to parse "
                                                      "string as a number or string should match pattern"),
    (["--set", "hp.policy_kwargs.squash_output=true"], "do not make a ppo model: squash_output=True is only"),
])
def test_bad_configurations_name_the_bad_value(args, message, tmp_path, capsys):
    """Every count and hyperparameter is checked before anything starts: exit 2, one line naming
    the key and its value, no traceback, and no run folder."""
    tiny = ["--steps", "64", "--eval-every", "0"]  # should a bad value pass: a short run (args override these)
    assert main(["train", "--env", ENV, "--out", str(tmp_path / "runs"), "--no-progress", *tiny, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("name", ["../../escaped", "{tmp}/absolute", "", ".", "sub/run"])
def test_a_run_name_is_one_folder_name(name, tmp_path, capsys):
    """``--name`` names the run folder inside ``out/<env>/``: a path, an empty name, ``.`` or ``..``
    is refused before anything starts (exit 2, one line naming it, nothing made)."""
    name = name.format(tmp=tmp_path)
    assert main(["train", "--env", ENV, "--out", str(tmp_path / "runs"), "--no-progress", "--steps", "64",
                 "--eval-every", "0", "--name", name]) == 2
    err = capsys.readouterr().err
    assert f"got {name!r}" in err and len(err.strip().splitlines()) == 1, err
    assert not any(tmp_path.iterdir())


def _interruptible() -> None:
    """In a child before it starts: Ctrl-C as a terminal's process gets it (a test runner started in
    the background of a shell without job control passes SIGINT on ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_sigint_leaves_a_loadable_run(tmp_path):
    command = [sys.executable, "-m", "upright", "train", "--env", ENV, "--prior", "spline", "--steps", "100000",
               "--out", str(tmp_path), "--no-progress", "--eval-every", "0",
               "--set", "max_episode_seconds=1.5", "hp.n_steps=64", "hp.batch_size=64", "hp.n_epochs=1"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"},
                               preexec_fn=_interruptible)
    run_dir = tmp_path / "WolfgangGetUp-v0" / "ppo-spline-1"
    deadline = time.monotonic() + 60
    while not (run_dir / "tb").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert "--resume" in err
    policy = load_policy(str(run_dir))
    assert policy.model.num_timesteps > 0


def _checkpoint_steps(run_dir: Path) -> list[int]:
    return sorted(int(p.name.split("_")[1]) for p in (run_dir / "checkpoints").glob("model_*_steps.zip"))


def _start_training(tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """A real ``upright train`` process (tiny PPO, 100000 steps), once it has written a checkpoint."""
    command = [sys.executable, "-m", "upright", "train", "--env", ENV, "--steps", "100000", "--out", str(tmp_path),
               *TINY_CLI]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    run_dir = tmp_path / "WolfgangGetUp-v0" / "ppo-spline-1"
    deadline = time.monotonic() + 60
    while not _checkpoint_steps(run_dir):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()  # a slow run would otherwise go on to its 100000 steps
            pytest.fail(f"no checkpoint within 60 s (exit {process.poll()}): {process.communicate()[1]}")
        time.sleep(0.1)
    time.sleep(0.5)
    return process, run_dir


def test_sigterm_saves_a_loadable_and_resumable_run(tmp_path, capsys):
    process, run_dir = _start_training(tmp_path)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert f"--resume {run_dir}" in err
    done = model_steps(run_dir / "model.zip")
    assert done == max(_checkpoint_steps(run_dir))  # the session's end is a checkpoint too
    policy = load_policy(str(run_dir))
    assert policy.model.num_timesteps == done and policy.normalizer is not None
    assert "using checkpoints" not in capsys.readouterr().err
    assert main([*RESUME, str(run_dir), "--steps", str(done + 128)]) == 0
    assert model_steps(run_dir / "model.zip") == done + 128


def test_sigkill_leaves_a_run_that_evaluates_and_resumes_from_its_newest_checkpoint(tmp_path, capsys):
    """A run killed outright has no model.zip: ``upright eval`` takes its newest complete checkpoint
    and says so on stderr, and ``--resume`` goes on from it."""
    process, run_dir = _start_training(tmp_path)
    process.kill()
    process.communicate(timeout=60)
    assert not (run_dir / "model.zip").exists()
    newest = max(_checkpoint_steps(run_dir))  # a model file is renamed into place after its statistics
    out = str(tmp_path / "eval")
    assert main(["eval", "--env", ENV, "--policy", str(run_dir), "--episodes", "1", "--out", out]) == 0
    assert f"using checkpoints/model_{newest}_steps.zip" in capsys.readouterr().err
    assert main([*RESUME, str(run_dir), "--steps", str(newest + 128)]) == 0
    assert model_steps(run_dir / "model.zip") == newest + 128
    resumed = (run_dir / "command.txt").read_text().splitlines()[-1]
    assert f"# resumed from checkpoints/model_{newest}_steps.zip ({newest} steps)" in resumed


@pytest.fixture(scope="module")
def short_run(tmp_path_factory) -> Path:
    """A new PPO run of 256 steps, evaluated on 2 episodes and checkpointed every 128 steps (tests
    that change it work on a copy, :func:`_copy`)."""
    return train(_config(tmp_path_factory.mktemp("short"), eval_episodes=2))


def _copy(run_dir: Path, to: Path) -> Path:
    copy = to / run_dir.name
    shutil.copytree(run_dir, copy)
    return copy


@pytest.mark.parametrize("args, message", [
    (["--steps", "512", "--algo", "sac"], "--algo sac differs from the run's ppo"),
    (["--steps", "512", "--env", "upright/NaoWalk-v0"], "--env upright/NaoWalk-v0 differs from the run's " + ENV),
    (["--steps", "512", "--set", "hp.learning_rate=0.5"], "--set hp.learning_rate=0.5 differs from the run's 0.0001"),
    (["--steps", "512", "--set", "hp.target_kl=0.02"], "--set hp.target_kl=0.02 differs from the run's (not set)"),
    (["--steps", "512", "--set", "start=prone"], "--set start=prone differs from the run's (not set)"),
    (["--steps", "512", "--set", "max_episode_seconds=3"], "--set max_episode_seconds=3 differs from the run's 1.5"),
    (["--steps", "512", "--set", "params.trunk_pitch=0.1"], "--set params.trunk_pitch=0.1 differs"),
    (["--steps", "512", "--eval-set", "start=supine"], "--eval-set start=supine differs"),
    (["--steps", "512", "--eval-episodes", "10"], "--eval-episodes 10 differs from the run's 2"),
    (["--steps", "512", "--n-envs", "4"], "--n-envs 4 differs from the run's 2"),
    (["--steps", "512", "--seed", "3"], "--seed 3 differs from the run's 0"),
    (["--steps", "512", "--prior", "keyframe"], "--prior keyframe differs from the run's spline"),
    (["--steps", "512", "--hyperparams", "other.yml"], "--hyperparams other.yml differs"),
    (["--steps", "512", "--name", "other"], "--name other differs"),
    (["--steps", "512", "--checkpoint-every", "0"], "checkpoint_every must be an integer >= 1, got 0"),
    (["--steps", "256"], "has done 256 steps: steps must exceed them to continue it, got 256"),
    (["--steps", "128"], "has done 256 steps: steps must exceed them to continue it, got 128"),
    ([], "has done 256 steps: steps must exceed them to continue it, got 256 (the run's own)"),
])
def test_a_resume_refuses_what_would_change_the_run(short_run, tmp_path, args, message, capsys):
    """--resume keeps the run's settings: an option that differs from them, or --steps no more than
    done, is refused by name (exit 2, one line) before anything is written."""
    run = _copy(short_run, tmp_path)
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    assert main([*RESUME, str(run), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before


def test_a_resume_continues_the_runs_statistics_and_settings(short_run, tmp_path):
    """A resume goes on with the run's normalisation statistics (their counts continue, not start
    again), its evaluation size and checkpoint interval; options equal to the run's are accepted,
    an allowed change is recorded in command.txt."""
    run = _copy(short_run, tmp_path)
    saved = load_normalizer(run / "vecnormalize.pkl")
    assert main([*RESUME, str(run), "--steps", "384", "--eval-every", "256", "--algo", "ppo", "--env", ENV,
                 "--set", "hp.n_steps=64", "max_episode_seconds=1.5", "hp.policy_kwargs.net_arch=16,16"]) == 0
    resumed = load_normalizer(run / "vecnormalize.pkl")
    n_envs = 2  # a reset adds one observation per environment
    assert saved.obs_rms.count + 128 <= resumed.obs_rms.count <= saved.obs_rms.count + 128 + n_envs
    assert resumed.ret_rms.count == pytest.approx(saved.ret_rms.count + 128)
    config = yaml.safe_load((run / "config.yml").read_text())
    assert config == {**yaml.safe_load((short_run / "config.yml").read_text()), "steps": 384, "eval_every": 256}
    last = (run / "command.txt").read_text().splitlines()[-1]
    assert "# resumed from model.zip (256 steps)" in last
    assert last.endswith("; changed steps 256 -> 384, eval_every 128 -> 256")
    evaluations = [yaml.safe_load(p.read_text())["episodes"] for p in (run / "eval").glob("0*/results.json")]
    assert evaluations == [2, 2, 2]  # 128, 256 and the end of the resumed session, all of the run's size
    assert _checkpoint_steps(run) == [128, 256, 384]


def test_missing_normalisation_statistics_are_an_error_naming_the_file(short_run, tmp_path, capsys):
    run = _copy(short_run, tmp_path)
    (run / "vecnormalize.pkl").unlink()
    eval_args = ["eval", "--env", ENV, "--episodes", "1", "--out", str(tmp_path / "eval"), "--policy"]
    for args in ([*eval_args, str(run)], [*eval_args, str(run / "model.zip")], [*RESUME, str(run), "--steps", "384"]):
        assert main(args) == 2
        assert "vecnormalize.pkl is missing beside model.zip" in capsys.readouterr().err
    assert _checkpoint_steps(run) == [128, 256] and not (tmp_path / "eval").exists()


def test_a_run_killed_before_it_saved_goes_on_from_its_newest_complete_checkpoint(short_run, tmp_path, capsys):
    """No model.zip (killed before the first save), the last checkpoint cut off before its model
    file and a checkpoint without statistics (SB3's own callback wrote the model first): evaluation
    and resume take the newest complete checkpoint."""
    run = _copy(short_run, tmp_path)
    for name in ("model.zip", "vecnormalize.pkl", "checkpoints/model_256_steps.zip"):
        (run / name).unlink()
    shutil.copyfile(run / "checkpoints" / "model_128_steps.zip", run / "checkpoints" / "model_384_steps.zip")
    policy = load_policy(str(run))
    assert policy.model.num_timesteps == 128
    assert "using checkpoints/model_128_steps.zip" in capsys.readouterr().err
    assert main([*RESUME, str(run), "--steps", "384"]) == 0
    assert model_steps(run / "model.zip") == model_steps(run / "checkpoints" / "model_384_steps.zip") == 384
    assert "# resumed from checkpoints/model_128_steps.zip (128 steps)" in (run / "command.txt").read_text()


def test_an_off_policy_run_goes_on_with_its_replay_buffer(tmp_path, capsys):
    """SAC: a checkpoint is complete with its replay buffer; a run killed while publishing its end
    resumes from the newest complete checkpoint with that buffer (it keeps filling, not from
    empty), and a model.zip without its buffer is refused by name."""
    run = train(_config(tmp_path, algo="sac", steps=128, eval_every=0, checkpoint_every=64,
                        hp_overrides={"policy_kwargs.net_arch": (16, 16), "buffer_size": 1000}))
    assert {"model_replay_buffer_64_steps.pkl", "model_replay_buffer_128_steps.pkl"} <= {
        p.name for p in (run / "checkpoints").iterdir()}
    killed = _copy(run, tmp_path / "killed")
    (killed / "model.zip").unlink()
    (killed / "checkpoints" / "model_128_steps.zip").unlink()
    assert main([*RESUME, str(killed), "--steps", "192"]) == 0
    assert "# resumed from checkpoints/model_64_steps.zip (64 steps)" in (killed / "command.txt").read_text()
    from stable_baselines3 import SAC

    checkpoint = SAC.load(killed / "checkpoints" / "model_64_steps.zip", device="cpu")
    checkpoint.load_replay_buffer(killed / "checkpoints" / "model_replay_buffer_64_steps.pkl")
    resumed = SAC.load(killed / "model.zip", device="cpu")
    resumed.load_replay_buffer(killed / "replay_buffer.pkl")
    assert resumed.num_timesteps == 192  # 128 more steps of 2 environments: 64 more transitions
    assert resumed.replay_buffer.pos == checkpoint.replay_buffer.pos + 64 and checkpoint.replay_buffer.pos > 0
    (run / "replay_buffer.pkl").unlink()
    assert main([*RESUME, str(run), "--steps", "192"]) == 2
    assert "replay_buffer.pkl is missing beside model.zip" in capsys.readouterr().err


def test_a_save_cut_off_midway_leaves_whole_files_and_pairs(short_run, tmp_path, monkeypatch):
    """A save that stops half-way (a model file half written, or the model not yet renamed after
    its statistics) never leaves a half file or a model beside statistics of another."""
    from stable_baselines3.common import base_class

    run = _copy(short_run, tmp_path)
    whole_save = base_class.save_to_zip_file
    calls: list[object] = []

    def cut_off(save_path, *args, **kwargs):
        calls.append(save_path)
        if len(calls) == 1:  # the first checkpoint of the resumed session
            Path(save_path).write_bytes(b"PK\x03\x04 half a model")
            raise KeyboardInterrupt
        return whole_save(save_path, *args, **kwargs)

    monkeypatch.setattr(base_class, "save_to_zip_file", cut_off)
    assert main([*RESUME, str(run), "--steps", "512", "--eval-every", "0"]) == 130  # stopped, then saved
    monkeypatch.undo()
    assert not list(run.rglob(".*.tmp"))
    for model in run.rglob("*.zip"):
        assert load_policy(str(model)).model.num_timesteps == model_steps(model)
    assert _checkpoint_steps(run) == [128, 256, 384] and model_steps(run / "model.zip") == 384
    from upright.training.callbacks import save_model_files

    best = model_steps(run / "best_model.zip")
    other = load_policy(str(run / "checkpoints" / f"model_{256 if best == 128 else 128}_steps.zip"))
    saved = run / "checkpoints" / f"model_vecnormalize_{other.model.num_timesteps}_steps.pkl"
    statistics = make_train_env(ENV, {**SHORT, "prior": "spline"}, 1, 0, normalize=True, on_policy=True,
                                normalizer=saved)
    real_replace = os.replace

    def killed_before_the_model(source, destination):
        if Path(destination).name == "best_model.zip":
            raise KeyboardInterrupt
        real_replace(source, destination)

    monkeypatch.setattr(os, "replace", killed_before_the_model)
    with pytest.raises(KeyboardInterrupt):
        save_model_files(other.model, statistics, run / "best_model.zip")
    monkeypatch.undo()
    statistics.close()
    assert model_steps(run / "best_model.zip") == best
    with pytest.raises(ValueError, match="were not saved together"):
        load_policy(str(run / "best_model.zip"))


def test_a_diverging_optimiser_fails_the_training_and_saves_nothing_of_it(tmp_path, capsys):
    """Training runs without torch's distribution checks (they would refuse the first non-finite
    action mean): the weights are checked after every update instead."""
    from torch.distributions import Distribution

    checked = Distribution._validate_args
    out = tmp_path / "runs"
    code = main(["train", "--env", ENV, "--steps", "512", "--out", str(out), *TINY_CLI,
                 "--set", "hp.learning_rate=1e12"])
    err = capsys.readouterr().err
    assert code == 1 and "the optimiser diverged at step 128" in err and "Traceback" not in err, err
    assert Distribution._validate_args is checked  # unchecked while training only
    run = out / "WolfgangGetUp-v0" / "ppo-spline-1"
    assert not (run / "model.zip").exists() and _checkpoint_steps(run) == [128]  # before the first update
    assert load_policy(str(run)).model.num_timesteps == 128


def test_a_failed_session_leaves_the_runs_models_untouched(short_run, tmp_path, monkeypatch, capsys):
    """An update that leaves non-finite weights: the training fails (exit 1, the step named) and
    model.zip, its statistics and the checkpoints are the ones from before."""
    import torch
    from stable_baselines3 import PPO

    run = _copy(short_run, tmp_path)
    before = {p: p.read_bytes() for p in run.rglob("*") if p.suffix in (".zip", ".pkl")}

    def poisoned_update(self):
        with torch.no_grad():
            for parameter in self.policy.parameters():
                parameter.fill_(float("nan"))

    monkeypatch.setattr(PPO, "train", poisoned_update)
    assert main([*RESUME, str(run), "--steps", "640"]) == 1
    assert "the optimiser diverged at step 384" in capsys.readouterr().err
    changed = {p.name for p, data in before.items() if p.read_bytes() != data}
    assert changed <= {"best_model.zip", "best_vecnormalize.pkl"}  # a best of 384 steps: evaluated before the update
    assert _checkpoint_steps(run) == [128, 256, 384]  # 384: saved before the poisoned update
    assert torch.isfinite(PPO.load(run / "checkpoints" / "model_384_steps.zip").policy.log_std).all()


def test_a_fine_tuning_run_carries_the_policy_it_started_from(short_run, tmp_path):
    """--init copies the policy into the run's init/ (with how it was trained), so shipping and
    resuming the run need nothing of the other run once it has moved away."""
    other = _copy(short_run, tmp_path / "elsewhere")
    init = str(other / "best_model.zip")
    run = train(_config(tmp_path, init=init, steps=64, eval_every=0))
    assert (run / "init" / "model.zip").read_bytes() == (other / "best_model.zip").read_bytes()
    assert (run / "init" / "vecnormalize.pkl").read_bytes() == (other / "best_vecnormalize.pkl").read_bytes()
    shutil.rmtree(other)
    manifest = read_manifest(ship(run, "tuned", model="final", zoo=tmp_path / "zoo"))
    assert manifest["init"] == {"policy": init, "training_commands": ["test"], "total_steps": 256,
                                "wall_seconds": manifest["init"]["wall_seconds"], "init": None}
    assert main([*RESUME, str(run), "--steps", "256"]) == 0


def test_only_a_run_config_beside_a_run_model_name_makes_a_run(tmp_path):
    """A ``config.yml`` of another tool beside an SB3 zip, or a zip of another name beside a run's
    config: a plain SB3 model, loaded as such."""
    from stable_baselines3 import PPO

    plain = tmp_path / "download"
    plain.mkdir()
    (plain / "config.yml").write_text("learning_rate: 0.001\nn_steps: 64\n")
    PPO("MlpPolicy", "Pendulum-v1", n_steps=8, batch_size=8, device="cpu").save(plain / "model.zip")
    shutil.copyfile(plain / "model.zip", plain / "ppo_pendulum.zip")
    run_like = tmp_path / "run"
    run_like.mkdir()
    (run_like / "config.yml").write_text(f"env_id: {ENV}\nalgo: ppo\n")
    shutil.copyfile(plain / "model.zip", run_like / "custom.zip")
    for model in (plain / "model.zip", plain / "ppo_pendulum.zip", run_like / "custom.zip"):
        assert isinstance(load_policy(str(model)), SB3Policy) and not is_run_policy(str(model))
        assert run_env_kwargs(str(model)) == {}
    assert not is_run_policy(str(plain)) and is_run_policy(str(run_like))


def _cores(monkeypatch, count: int) -> None:
    """Fake a machine whose process may use ``count`` cores."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(count)), raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: count)


def test_auto_picks_the_vector_environment_by_the_cores(monkeypatch):
    from upright.training.config import BATCHED_MIN_ENVS, SUBPROC_MIN_CORES, choose_vec_env, usable_cores

    assert choose_vec_env("auto", 4, cores=SUBPROC_MIN_CORES - 1) == "dummy"
    assert choose_vec_env("auto", BATCHED_MIN_ENVS, cores=SUBPROC_MIN_CORES - 1) == "batched"
    assert choose_vec_env("auto", BATCHED_MIN_ENVS, cores=1) == "dummy"  # one core: no worker steps beside it
    assert choose_vec_env("auto", 4, cores=SUBPROC_MIN_CORES) == "subproc"
    assert choose_vec_env("auto", 1, cores=64) == "dummy"  # one copy: nothing to step side by side
    assert choose_vec_env("dummy", 8, cores=64) == "dummy" and choose_vec_env("subproc", 1, cores=1) == "subproc"
    _cores(monkeypatch, 16)
    assert usable_cores() == 16 and choose_vec_env("auto", 4) == "subproc"
    _cores(monkeypatch, 2)
    assert usable_cores() == 2 and choose_vec_env("auto", 4) == "dummy"
    for bad in ("fast", None, 2):
        with pytest.raises(ValueError, match=f"vec_env must be one of auto, dummy, subproc, batched, got {bad!r}"):
            choose_vec_env(bad, 4)


def test_the_vector_environment_round_trips_through_config_yml(monkeypatch):
    from dataclasses import replace

    from upright.training.train import resume_config

    config = TrainConfig(env_id=ENV, prior="spline", steps=256, vec_env="subproc")
    assert TrainConfig.from_yaml(yaml.safe_load(yaml.safe_dump(config.to_yaml()))) == config
    older = {k: v for k, v in config.to_yaml().items() if k != "vec_env"}  # a run folder from before the field
    assert TrainConfig.from_yaml(older).vec_env == "auto"
    _cores(monkeypatch, 16)
    saved = replace(config, vec_env="dummy")
    # a resume keeps the run's class, takes a given one, and chooses for this machine on auto
    assert resume_config(saved, {"steps": 512}) == (replace(saved, steps=512), ["steps 256 -> 512"])
    assert resume_config(saved, {"steps": 512, "vec_env": "auto"}) == (
        replace(saved, steps=512, vec_env="subproc"), ["steps 256 -> 512", "vec_env dummy -> subproc"])
    with pytest.raises(ValueError, match="vec_env must be one of auto, dummy, subproc, batched, got 'many'"):
        resume_config(saved, {"vec_env": "many"})


def test_subproc_training_learns_what_dummy_learns(tmp_path, monkeypatch):
    """``--vec-env auto`` on a machine of many cores (faked) runs the copies in worker processes,
    records SubprocVecEnv in config.yml and learns bit for bit what DummyVecEnv learns from the same
    seed; a resume may change the class."""
    from stable_baselines3 import PPO

    dummy = train(_config(tmp_path, steps=128, eval_every=0, name="dummy"))
    _cores(monkeypatch, 16)
    assert main(["train", "--env", ENV, "--steps", "128", "--out", str(tmp_path / "runs"), "--name", "auto", *TINY_CLI,
                 "--vec-env", "auto"]) == 0
    run = dummy.parent / "auto"
    assert yaml.safe_load((run / "config.yml").read_text())["vec_env"] == "subproc"
    assert yaml.safe_load((dummy / "config.yml").read_text())["vec_env"] == "dummy"
    ours, theirs = (PPO.load(r / "model.zip", device="cpu") for r in (run, dummy))
    assert ours.num_timesteps == theirs.num_timesteps == 128
    for name, weights in theirs.policy.state_dict().items():
        assert bool((ours.policy.state_dict()[name] == weights).all()), name
    statistics = [load_normalizer(r / "vecnormalize.pkl") for r in (run, dummy)]
    np.testing.assert_array_equal(statistics[0].obs_rms.mean, statistics[1].obs_rms.mean)
    assert statistics[0].ret_rms.var == statistics[1].ret_rms.var
    assert main([*RESUME, str(run), "--steps", "256", "--vec-env", "dummy"]) == 0
    assert yaml.safe_load((run / "config.yml").read_text())["vec_env"] == "dummy"
    assert (run / "command.txt").read_text().splitlines()[-1].endswith("; changed steps 128 -> 256, vec_env subproc -> dummy")
    assert model_steps(run / "model.zip") == 256


def test_batched_workers_give_dummys_transitions(monkeypatch):
    """``batched``: 5 copies in 2 workers (2 + 3, one per core of a faked 2-core machine) give DummyVecEnv's observations, rewards, dones,
    infos and reset infos to the bit, episode ends and auto-resets included; the attribute and method
    calls reach the right copies; bad worker counts are refused."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    from upright.training.vec_env import BatchedSubprocVecEnv

    _cores(monkeypatch, 2)
    kwargs = {**SHORT, "prior": "spline", "max_episode_seconds": 0.3}
    dummy = make_train_env(ENV, kwargs, 5, 11, normalize=False, on_policy=True, vec_env="dummy")
    batched = make_train_env(ENV, kwargs, 5, 11, normalize=False, on_policy=True, vec_env="batched")
    assert isinstance(dummy, DummyVecEnv) and isinstance(batched, BatchedSubprocVecEnv)
    assert batched.starts == [0, 2, 5]
    try:
        rng = np.random.default_rng(0)
        np.testing.assert_array_equal(dummy.reset(), batched.reset())
        ends = 0
        for _ in range(40):
            action = rng.uniform(-1, 1, (5, 20)).astype(np.float32)
            ours, theirs = batched.step(action), dummy.step(action)
            for a, b in zip(ours[:3], theirs[:3]):
                assert a.dtype == b.dtype
                np.testing.assert_array_equal(a, b)
            assert [sorted(i) for i in ours[3]] == [sorted(i) for i in theirs[3]]
            ends += int(theirs[2].sum())
        assert ends >= 5  # every copy ended episodes and was reset
        assert [i["start"] for i in batched.reset_infos] == [i["start"] for i in dummy.reset_infos]
        assert batched.get_attr("max_episode_seconds", [1, 4]) == [0.3, 0.3]
        batched.set_attr("max_episode_seconds", 0.5, [3])
        assert batched.get_attr("max_episode_seconds") == [0.3, 0.3, 0.3, 0.5, 0.3]
        offsets = batched.env_method("residual_action", {"LKnee": 0.1}, indices=[0, 4])
        np.testing.assert_array_equal(offsets[1], dummy.env_method("residual_action", {"LKnee": 0.1}, indices=[4])[0])
    finally:
        dummy.close()
        batched.close()
    with pytest.raises(ValueError, match="workers must be an integer from 1 to the 2 copies, got 3"):
        BatchedSubprocVecEnv([lambda: gym.make(ENV)] * 2, workers=3)


def test_a_failing_batched_worker_reaches_the_parent(monkeypatch, capfd):
    """A copy that raises inside a ``batched`` worker ends that worker with its traceback on stderr;
    the parent's step raises instead of waiting for ever, and closing ends every worker."""
    _cores(monkeypatch, 2)
    venv = make_train_env(ENV, SHORT, 4, 0, normalize=False, on_policy=True, vec_env="batched")
    venv.reset()
    bad = np.zeros((4, 20), dtype=np.float32)
    bad[3, 0] = np.nan  # the second worker's second copy: refused by the environment
    with pytest.raises((EOFError, ConnectionResetError)):
        venv.step(bad)
    venv.close()
    assert not any(process.is_alive() for process in venv.processes)
    assert "action contains non-finite values" in capfd.readouterr().err


@pytest.mark.parametrize("vec_env", ["subproc", "batched"])
def test_ctrl_c_saves_a_subproc_run_and_ends_its_workers(tmp_path, vec_env):
    """The terminal's Ctrl-C reaches the whole process group: the workers ignore it, the parent
    saves the run and closes them (no traceback), and nothing of the group is left running."""
    command = [sys.executable, "-m", "upright", "train", "--env", ENV, "--steps", "100000", "--out", str(tmp_path),
               *TINY_CLI, "--vec-env", vec_env]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=_interruptible)
    run_dir = tmp_path / "WolfgangGetUp-v0" / "ppo-spline-1"
    deadline = time.monotonic() + 120
    while not _checkpoint_steps(run_dir):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()[1]
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130 and "Traceback" not in err, err
    assert load_policy(str(run_dir)).model.num_timesteps > 0
    assert yaml.safe_load((run_dir / "config.yml").read_text())["vec_env"] == vec_env
    deadline = time.monotonic() + 10
    while True:  # the workers (and multiprocessing's resource tracker) end with the parent
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "processes of the run are still running"
        time.sleep(0.1)


def test_training_bench_rows():
    from upright.training.bench import PARTS, TARGET_RATIO, format_scaling_bench, format_training_bench, measure

    rows = [measure("sac", ENV, "spline", 32), measure("ppo", ENV, "spline", 32, hp_overrides=TINY_PPO)]
    assert [r.algo for r in rows] == ["sac", "ppo"] and all(r.train_steps_per_s > 0 < r.env_steps_per_s for r in rows)
    assert rows[1].ratio == rows[1].train_steps_per_s / rows[1].env_steps_per_s
    sac, ppo = rows
    # SAC's shipped hyperparameters: one gradient step per vector step of TrainConfig.n_envs environments
    assert sac.steps_per_update == pytest.approx(4, rel=0.1) and sac.update_s > 0
    # k env steps and one update reach the target ratio exactly at k = needed
    k = sac.steps_per_update_for_target
    assert k / sac.env_steps_per_s / (k / sac.env_steps_per_s + sac.update_s) == pytest.approx(TARGET_RATIO)
    assert ppo.update_s is None and ppo.steps_per_update_for_target is None
    # PPO's parts add up to its training time per step; SAC's are not timed
    assert set(ppo.parts) == set(PARTS) and min(ppo.parts[p] for p in PARTS if p != "rest") > 0 and not sac.parts
    assert sum(ppo.parts.values()) == pytest.approx(1 / ppo.train_steps_per_s)
    assert (ppo.vec_env, ppo.clock, sac.vec_env, sac.clock) == ("dummy", "cpu", "dummy", "cpu")
    table = format_training_bench(rows)
    assert "train steps/s" in table and "update ms" in table and "Where the training time goes" in table
    # the scaling table has the parts too, per vector environment and number of copies
    scaling = format_scaling_bench([ppo]).splitlines()
    assert scaling[-2].split()[:5] == ["ppo", ENV, "spline", "dummy", "4"] and "Where the training time goes" in scaling[-1]
    # an 80-column terminal: every line fits, each block of columns under the columns that name the rows
    for narrow in (format_training_bench(rows, width=80), format_scaling_bench([ppo], width=80)):
        lines = narrow.splitlines()
        assert max(map(len, lines)) <= 80
        assert sum(line.split()[:3] == ["algo", "environment", "prior"] for line in lines) >= 3


@pytest.mark.parametrize("warmup, frozen", [(10**6, True), (0, False)])
def test_critic_warmup_freezes_the_actor(tmp_path, warmup, frozen):
    from stable_baselines3 import PPO

    run_dir = train(_config(tmp_path, steps=128, eval_every=0, hp_overrides={**TINY_PPO, "warmup_steps": warmup}))
    policy = PPO.load(run_dir / "model.zip", device="cpu").policy
    assert bool((policy.action_net.weight == 0).all()) is frozen  # zero-initialised, changed only by learning
    assert bool((policy.log_std == -2.5).all()) is frozen  # log_std_init of WolfgangGetUp:spline in ppo.yml


@pytest.mark.parametrize("curriculum, conditions, attribute", [
    ("push", "thesis", "push_strength"), ("model", "sim2real", "model_variation")])
def test_a_curriculum_ramps_its_strength_in_the_training_copies(tmp_path, curriculum, conditions, attribute):
    """``hp.push_curriculum_*`` (the random push) and ``hp.model_curriculum_*`` (the model
    variation) on a real PPO run: before each rollout (128 steps here) the training copies are set
    to start + (1 − start) · step / steps, capped at all of it, and TensorBoard logs each value;
    at the end the copies hold all of it."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    hp = {**TINY_PPO, f"{curriculum}_curriculum_start": 0.2, f"{curriculum}_curriculum_steps": 256}
    run_dir = train(_config(tmp_path, steps=512, eval_every=0, env_kwargs={**SHORT, "conditions": conditions},
                            hp_overrides=hp))
    events = EventAccumulator(str(run_dir / "tb" / "run_1"))
    events.Reload()
    logged = events.Scalars(f"curriculum/{attribute}")
    assert [e.step for e in logged] == [128, 256, 384, 512]  # each rollout's value, written after its update
    assert [e.value for e in logged] == pytest.approx([0.2, 0.6, 1.0, 1.0], rel=1e-6)


def test_trained_residuals_protocol_runs_residual_and_prior_on_held_out_seeds(run_dir, tmp_path, monkeypatch, capsys):
    """``upright experiment trained-residuals`` on a shipped (tiny) Wolfgang residual: every cell
    for the residual and for its prior alone, on seeds from 3000000000 (disjoint from training's
    [0, 2^31) and selection's 1000000+); the prior rows are exactly the spline's own episodes; a
    second run with --resume reads every cell back instead of running it, unless the policy shipped
    under that name has changed. The progress bar's total is the episodes each run runs."""
    from conftest import last_bar

    zoo = tmp_path / "zoo"
    name = "wolfgang-getup-residual-spline"
    assert main(["ship", str(run_dir), "--name", name, "--zoo", str(zoo)]) == 0
    monkeypatch.setenv("UPRIGHT_ZOO", str(zoo))
    out = tmp_path / "residuals"
    args = ["experiment", "trained-residuals", "--episodes", "2", "--set", f"only={name}", "--out", str(out)]
    capsys.readouterr()
    assert main(args) == 0
    assert last_bar(capsys.readouterr().err, "trained-residuals") == (8, 8)  # 2 target, 1 lab, 1 turf; each twice
    rows = json.loads((out / "results.json").read_text())["tables"][0]["rows"]
    assert [(r["runs"], r["cell"]) for r in rows] == [
        (runs, cell) for cell in ("target", "lab", "turf") for runs in ("residual", "prior (spline)")]
    target = json.loads((out / name / "target-prior" / "results.json").read_text())
    assert target["seed"] == 3_000_000_000 and target["episodes"] == 2 and "prior" not in target["env_kwargs"]
    lab = json.loads((out / name / "lab-residual" / "results.json").read_text())
    assert lab["policy"] == f"zoo:{name}" and lab["episodes"] == 1 and lab["env_kwargs"]["prior"] == "spline"
    alone = run_episodes(ENV, "spline", 2, env_kwargs={**SHORT, "conditions": "thesis", "start": "random"},
                         seed=3_000_000_000, progress=False)
    assert [{k: v for k, v in r.items() if k != "episode"} for r in target["episodes_data"]] == _records(alone)
    written = {p: p.stat().st_mtime_ns for p in out.glob(f"{name}/*/results.json")}
    assert len(written) == 6
    assert main([*args, "--resume"]) == 0
    assert {p: p.stat().st_mtime_ns for p in out.glob(f"{name}/*/results.json")} == written
    assert last_bar(capsys.readouterr().err, "trained-residuals") == (0, None)  # nothing left to run
    assert main(["ship", str(run_dir), "--name", name, "--zoo", str(zoo), "--model", "final", "--overwrite"]) == 0
    assert main([*args, "--resume"]) == 0  # the same name, another model: its cells run again, the prior's not
    assert last_bar(capsys.readouterr().err, "trained-residuals") == (4, 4)
    rerun = {p for p in written if p.stat().st_mtime_ns != written[p]}
    assert rerun == {out / name / f"{cell}-residual" / "results.json" for cell in ("target", "lab", "turf")}
    assert main([*args[:3], "3", *args[4:], "--resume"]) == 0  # another episode count: run again
    prior_file = out / name / "target-prior" / "results.json"
    assert prior_file.stat().st_mtime_ns != written[prior_file]


def test_checkpoint_selection_picks_by_score_on_selection_seeds_and_ships_it(run_dir, tmp_path, capsys):
    """``upright experiment checkpoint-selection`` evaluates a run's checkpoints on the same seeds
    (from 2500000000: disjoint from training and from the held-out 3000000000+), writes the best by
    the training's own score to ``selection.json``, and ``upright ship --model selected`` takes it."""
    import shutil

    from conftest import last_bar
    from upright.eval.results import score, summary_numbers

    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    out = tmp_path / "selection"
    args = ["experiment", "checkpoint-selection", "--episodes", "2", "--out", str(out), "--set", f"runs={run}"]
    capsys.readouterr()
    assert main([*args, "from_steps=384"]) == 0  # the resume kept the run's checkpoint_every (128)
    assert last_bar(capsys.readouterr().err, "checkpoint-selection") == (6, 6)  # three checkpoints, two episodes each
    picked = json.loads((run / "selection.json").read_text())
    assert picked["candidates"] == [384, 512, 640] and picked["seed"] == 2_500_000_000 and picked["episodes"] == 2
    results = {s: json.loads((out / "run" / str(s) / "results.json").read_text()) for s in picked["candidates"]}
    assert all(r["seed"] == 2_500_000_000 and r["env_kwargs"] == {**SHORT, "prior": "spline"} for r in results.values())
    scores = {s: score(summary_numbers(r)) for s, r in results.items()}
    assert picked["steps"] == max(scores, key=lambda s: (scores[s], -s))  # the earliest of equal scores
    chosen = summary_numbers(results[picked["steps"]])
    assert {k: picked[k] for k in SELECTION_NUMBERS} == {k: chosen[k] for k in SELECTION_NUMBERS}
    assert picked["stood_up_rate"] is not None and picked["fall_rate"] is None  # a get-up: no walk numbers
    zoo = tmp_path / "zoo"
    assert main(["ship", str(run), "--name", "picked", "--model", "selected", "--zoo", str(zoo)]) == 0
    entry = zoo / "picked"
    manifest = yaml.safe_load((entry / "manifest.yml").read_text())
    assert manifest["model"] == "selected" and manifest["model_steps"] == picked["steps"]
    assert manifest["selection"]["seed"] == 2_500_000_000 and manifest["selection"]["episodes"] == 2
    assert manifest["selection"]["stood_up_rate"] == picked["stood_up_rate"]  # the selection's numbers carried over
    checkpoint = run / "checkpoints" / f"model_{picked['steps']}_steps.zip"
    assert (entry / "model.zip").read_bytes() == checkpoint.read_bytes()
    assert (entry / "vecnormalize.pkl").read_bytes() == (
        run / "checkpoints" / f"model_vecnormalize_{picked['steps']}_steps.pkl").read_bytes()
    assert main([*args, "from_steps=1000000"]) == 2  # no checkpoint that late: named, nothing run
    assert main([*args, "steps=256", "--resume"]) == 0  # exactly the checkpoints named (read back: same cell)
    assert json.loads((run / "selection.json").read_text())["candidates"] == [256]
    assert main([*args, "steps=256,300"]) == 2  # a checkpoint that does not exist: named, nothing run
    (run / "selection.json").unlink()
    assert main(["ship", str(run), "--name", "again", "--model", "selected", "--zoo", str(zoo)]) == 2

def test_report_comparison_puts_a_shipped_residual_beside_its_prior(run_dir, tmp_path, monkeypatch):
    """The report's cells: every policy in the standard settings (a shipped one on its own
    environment only), then the shipped residual and its prior alone where it was trained; the
    table rows and the two PNGs come from real runs."""
    from upright.eval.comparison import (GETUP_SETTINGS, comparison_cells, comparison_table, plot_rates,
                                         plot_walk_tracking)
    from upright.eval.results import aggregate

    zoo = tmp_path / "zoo"
    assert main(["ship", str(run_dir), "--name", "tiny", "--zoo", str(zoo)]) == 0
    monkeypatch.setenv("UPRIGHT_ZOO", str(zoo))
    walk = "upright/NaoWalk-v0"
    cells = comparison_cells([ENV, walk], {ENV: "getup", walk: "walk"}, ["spline", "step_adjust", "zoo:tiny"])
    assert [(env, policy) for env, policy, _ in cells] == [
        (ENV, "spline"), (ENV, "step_adjust"), (ENV, "zoo:tiny"), (walk, "spline"), (walk, "step_adjust"),
        (ENV, "zoo:tiny"), (ENV, "spline")]
    assert cells[2][2] == {**SHORT, "prior": "spline", **GETUP_SETTINGS}
    assert cells[-2][2] == run_env_kwargs("zoo:tiny") and cells[-1][2] == SHORT  # trained in the defaults
    results = [aggregate(run_episodes(env, policy, 2, env_kwargs={**kwargs, "max_episode_seconds": 1.0},
                                      progress=False)) for env, policy, kwargs in (cells[0], cells[4], cells[5])]
    table = comparison_table(results)
    assert [row["policy"] for row in table.rows] == ["spline", "step_adjust", "zoo:tiny"]
    assert table.rows[0]["success"] == (results[0]["successes"], 2) and "velocity" not in table.rows[0]
    assert table.rows[1]["velocity"] == results[1]["mean_velocity"] and table.rows[1]["setting"].startswith("lab")
    for plot in (plot_rates(results, tmp_path / "rates.png"), plot_walk_tracking(results, tmp_path / "walk.png")):
        assert plot.read_bytes()[:4] == b"\x89PNG"


def test_video_beside_prior_joins_residual_and_prior_on_one_seed(run_dir, tmp_path, capsys):
    """``upright video --beside-prior``: the residual (left) and its prior alone (right), same
    seed, one frame as wide as both; the longer episode sets the length."""
    import imageio.v2 as imageio
    from conftest import no_gl

    out = tmp_path / "both.mp4"
    code = main(["video", "--env", ENV, "--policy", str(run_dir), "--beside-prior", "--seed", "3",
                 "--set", "max_episode_seconds=0.4", "--out", str(out)])
    if code == 3:
        no_gl(capsys.readouterr().err)
    assert code == 0
    parts = [imageio.mimread(tmp_path / f"both.{name}.mp4") for name in ("residual", "prior")]
    joined = imageio.mimread(out)
    assert len(joined) == max(map(len, parts))
    assert joined[0].shape[1] == parts[0][0].shape[1] + parts[1][0].shape[1]
    assert "spline" in capsys.readouterr().out
    assert main(["video", "--env", ENV, "--policy", "spline", "--beside-prior", "--out", str(out)]) == 2


def test_a_fine_tuning_curve_continues_where_its_initial_run_stood():
    """A ``curves.yaml`` entry ``{run, after, at_steps}`` is drawn shifted by the steps and
    wall-clock of the run it was fine-tuned from, read at that evaluation; a missing evaluation and
    an unrecorded run are named."""
    from upright.eval.history import _curve

    first = [{"steps": 100.0, "wall_seconds": 10.5}, {"steps": 200.0, "wall_seconds": 21.0}]
    runs = {name: {"name": name, "eval_episodes": "30", "prior_success_rate": "0.5", "prior_episodes": "30"}
            for name in ("first", "tuned")}
    curves = {"first": first, "tuned": [{"steps": 100.0, "wall_seconds": 12.0}]}
    plain = _curve("tuned", runs, curves, "success_rate")
    assert (plain.name, plain.offset_steps, plain.offset_seconds, plain.prior) == ("tuned", 0.0, 0.0, (0.5, 30))
    tuned = _curve({"run": "tuned", "after": "first", "at_steps": 200}, runs, curves, "success_rate")
    assert (tuned.offset_steps, tuned.offset_seconds, tuned.rows) == (200.0, 21.0, curves["tuned"])
    with pytest.raises(ValueError, match="no evaluation at 300 steps"):
        _curve({"run": "tuned", "after": "first", "at_steps": 300}, runs, curves, "success_rate")
    with pytest.raises(ValueError, match="names the run 'gone', which is not in runs.csv"):
        _curve("gone", runs, curves, "success_rate")


def test_history_records_a_run_folder_and_writes_its_page_and_curves(run_dir, tmp_path):
    """``add_run`` appends a run folder's row (from its config, command, learning curve and the
    prior's evaluation) and its evaluations to the record, refuses a second run of the same name,
    and ``write_docs`` writes the run into the page and its curve into a picture."""
    pytest.importorskip("matplotlib")
    from upright.eval.history import add_run, read_curves, read_runs, write_docs
    from upright.policies.run_folder import read_learning_curve

    row = add_run(run_dir, tmp_path, verdict="not shipped: a test", round_=1)
    curve = read_learning_curve(run_dir / "learning_curve.csv")
    assert read_runs(tmp_path) == [{k: str(v) for k, v in row.items()}]
    assert (row["env"], row["prior"], row["algo"], row["steps"], row["n_envs"]) == ("WolfgangGetUp-v0", "spline",
                                                                                   "ppo", 640, 2)
    assert row["wall_clock_min"] == round(curve[-1]["wall_seconds"] / 60.0, 1)
    assert row["command"].startswith("test") and row["prior_episodes"] == 1
    assert read_curves(tmp_path) == {"ppo-spline-1": curve}
    with pytest.raises(ValueError, match="a run named 'ppo-spline-1' is recorded already"):
        add_run(run_dir, tmp_path)
    (tmp_path / "curves.yaml").write_text(yaml.safe_dump({"tiny": {"title": "t", "metric": "stood_up_rate",
                                                                    "runs": {"residual": ["ppo-spline-1"]}}}))
    page, picture = write_docs(tmp_path / "training-runs.md", tmp_path)
    assert '| <a id="ppo-spline-1"></a>`ppo-spline-1` | 1 | WolfgangGetUp-v0 |' in page.read_text()
    assert "not shipped: a test" in page.read_text() and picture == tmp_path / "tiny.png"
    assert picture.stat().st_size > 0


def test_history_reads_and_writes_the_folder_it_is_given(run_dir, tmp_path, monkeypatch, capsys):
    """``upright history`` keeps the record under ``--docs-dir``, by default ``docs/results`` of the
    current directory, never in the installed package's own ``docs/``."""
    from upright.eval.history import PAGE

    committed = PAGE.read_text()
    monkeypatch.chdir(tmp_path)
    assert main(["history", "--add", str(run_dir), "--docs"]) == 0
    assert (tmp_path / "docs/results/training/runs.csv").is_file()
    assert "`ppo-spline-1`" in (tmp_path / "docs/results/training-runs.md").read_text()
    assert main(["history", "--docs-dir", "elsewhere", "--add", str(run_dir), "--docs"]) == 0
    page = (tmp_path / "elsewhere/training-runs.md").read_text()
    assert "upright history --docs --docs-dir elsewhere" in page and "`ppo-spline-1`" in page
    assert PAGE.read_text() == committed
    capsys.readouterr()
    monkeypatch.setenv("COLUMNS", "400")  # the terminal table's rows unwrapped
    assert main(["history", "--docs-dir", "elsewhere"]) == 0
    assert "ppo-spline-1" in capsys.readouterr().out


def test_the_committed_training_history_is_whole_and_its_page_current(tmp_path, capsys, monkeypatch):
    """Every recorded run has its evaluations and every pictured run is recorded; the committed
    page is what ``upright history --docs`` writes from the record."""
    from upright.eval.history import HISTORY, PAGE, curve_groups, read_curves, read_runs, write_docs

    runs = read_runs()
    curves = read_curves()
    assert len(runs) >= 50 and {r["name"] for r in runs} == set(curves)
    pictured = {entry if isinstance(entry, str) else entry["run"] for group in curve_groups().values()
                for entries in group["runs"].values() for entry in entries}
    assert pictured <= set(curves)
    written = write_docs(tmp_path / "page.md", HISTORY, pictures=False)
    assert written[0].read_text() == PAGE.read_text()
    monkeypatch.setenv("COLUMNS", "400")  # the terminal table's rows unwrapped
    assert main(["history", "--docs-dir", str(HISTORY.parent)]) == 0
    out = capsys.readouterr().out
    assert all(f"`{run['name']}`" in out for run in runs)


def test_an_interrupt_during_the_periodic_evaluation_stops_the_training(tmp_path, monkeypatch):
    """Ctrl-C or SIGTERM while the periodic evaluation runs (here the second one, at 256 steps):
    the runner keeps the finished episodes (``interrupted`` in results.json), and the training
    stops there too instead of going on; the first evaluation's learning-curve row and best model
    stay, and the partial one neither adds a row nor becomes the best model."""
    from upright.training import callbacks

    made: list[ModelPolicy] = []

    class InterruptingSecond(ModelPolicy):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

        def act(self, observation, info):
            if len(made) == 2:
                raise KeyboardInterrupt
            return super().act(observation, info)

    monkeypatch.setattr(callbacks, "ModelPolicy", InterruptingSecond)
    with pytest.raises(TrainingInterrupted):
        train(_config(tmp_path, steps=1024, eval_episodes=2))
    run_dir = tmp_path / "runs" / "WolfgangGetUp-v0" / "ppo-spline-1"
    first = yaml.safe_load((run_dir / "eval" / "000000128" / "results.json").read_text())
    assert first["episodes"] == 2 and not first.get("interrupted")
    partial = yaml.safe_load((run_dir / "eval" / "000000256" / "results.json").read_text())
    assert partial["interrupted"] is True and partial["episodes"] == 0
    rows = list(csv.DictReader((run_dir / "learning_curve.csv").open()))
    assert [int(r["steps"]) for r in rows] == [128]
    assert float(rows[0]["mean_return"]) == pytest.approx(np.mean([e["return"] for e in first["episodes_data"]]))
    assert model_steps(run_dir / "best_model.zip") == 128 and (run_dir / "best_vecnormalize.pkl").is_file()
    assert model_steps(run_dir / "model.zip") == 256  # stopped in the evaluation, saved there


def test_walk_curves_plot_the_fall_rate_against_the_prior(tmp_path):
    """``metric: fall_rate`` draws a walk's share of episodes with a fall, its Wilson band from the
    run's evaluation episodes, and the prior's fall rate; get-up curves have none."""
    pytest.importorskip("matplotlib")
    from upright.eval.learning_curves import Curve, plot_curve_comparison

    rows = [{"steps": 100.0, "wall_seconds": 10.0, "success_rate": None, "fall_rate": 0.1},
            {"steps": 200.0, "wall_seconds": 20.0, "success_rate": None, "fall_rate": 0.05}]
    walk = Curve("walk", rows, 40, prior=(0.2, 40))
    assert plot_curve_comparison("walk", {"residual": [walk]}, tmp_path / "w.png",
                                 metric="fall_rate").stat().st_size > 0
    with pytest.raises(ValueError, match="walk: no success_rate in this learning curve"):
        plot_curve_comparison("walk", {"residual": [walk]}, tmp_path / "x.png")
    with pytest.raises(ValueError, match="metric must be success_rate, stood_up_rate or fall_rate"):
        plot_curve_comparison("walk", {}, tmp_path / "y.png", metric="falls")


def test_curves_draw_every_group_past_the_colour_cycle(tmp_path, monkeypatch):
    """More groups than the ten colours: every run is drawn and in the legend, each group in its
    own colour and line style."""
    pytest.importorskip("matplotlib")
    import matplotlib.figure
    from upright.eval.learning_curves import Curve, plot_curve_comparison

    drawn = []
    legend = matplotlib.figure.Figure.legend

    def record(self, handles, labels, **kwargs):
        drawn.append((handles, labels))
        return legend(self, handles, labels, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "legend", record)
    rows = [{"steps": 100.0, "wall_seconds": 10.0, "success_rate": 0.5, "success_ci_low": 0.3, "success_ci_high": 0.7}]
    groups = {f"group {i}": [Curve(f"run-{i}", rows, 30)] for i in range(12)}
    plot_curve_comparison("twelve", groups, tmp_path / "twelve.png")
    (handles, labels), = drawn
    assert labels == [f"group {i} (run-{i})" for i in range(12)]
    assert len({(h.get_color(), h.get_linestyle()) for h in handles}) == 12


def test_update_threads_run_the_updates_on_more_threads_and_collection_on_one(tmp_path, monkeypatch):
    """``hp.update_threads``: SB3's updates see that many torch threads, every collected step one,
    and the run ends on one; 0 threads is refused by name."""
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback

    seen = {"update": [], "collect": []}
    original = PPO.train

    def train_and_count(self, *args, **kwargs):
        seen["update"].append(torch.get_num_threads())
        return original(self, *args, **kwargs)

    class CountCollection(BaseCallback):
        def _on_step(self) -> bool:
            seen["collect"].append(torch.get_num_threads())
            return True

    monkeypatch.setattr(PPO, "train", train_and_count)
    train(_config(tmp_path, eval_every=0, hp_overrides={**TINY_PPO, "update_threads": 2}), callbacks=[CountCollection()])
    assert seen["update"] == [2, 2] and set(seen["collect"]) == {1} and torch.get_num_threads() == 1
    with pytest.raises(ValueError, match="update_threads.*got 0"):
        resolve(_config(tmp_path, hp_overrides={**TINY_PPO, "update_threads": 0}))


def test_scaling_bench_keeps_its_base_row_on_one_update_thread():
    from upright.training.bench import format_scaling_bench, run_scaling_bench

    rows = run_scaling_bench(64, (2,), ("dummy",), configs=((ENV, "spline"),),
                             hp_overrides={**TINY_PPO, "update_threads": 2})
    assert [(r.vec_env, r.n_envs, r.update_threads) for r in rows] == [("dummy", 1, 1), ("dummy", 2, 2)]
    lines = format_scaling_bench(rows).splitlines()
    assert lines[0].split()[6:8] == ["update", "thr"]
    assert lines[2].split()[3:6] == ["dummy", "2", "2"] and float(lines[2].split()[7]) > 0  # x linear over the base


def test_machine_ceiling_runs_processes_side_by_side():
    """The machine's own scaling: one row per process count (1, the base, added), each the summed
    rate of that many real worker processes, formatted against one process's rate."""
    from upright.training.bench import format_machine_ceiling, run_machine_ceiling

    rows = run_machine_ceiling(40, (2,), configs=((ENV, "spline"),))
    assert [r.n_envs for r in rows] == [1, 2] and all(r.env_steps_per_s > 0 for r in rows)
    lines = format_machine_ceiling(rows).splitlines()
    assert lines[1].split()[2:] == ["1", f"{rows[0].env_steps_per_s:.0f}", "1.00"]
    assert float(lines[2].split()[4]) == pytest.approx(rows[1].env_steps_per_s / (2 * rows[0].env_steps_per_s), abs=0.006)


def test_training_bench_runs_the_shipped_training_configurations():
    """The shipped residuals' own configurations (copies, environment arguments, hyperparameters)
    without what runs before steady-state training; a row says which one it ran."""
    from dataclasses import replace

    from upright.policies.run import zoo_entry, zoo_names
    from upright.policies.run_folder import load_run_config
    from upright.training.bench import BEFORE_TRAINING, format_training_bench, measure_config, shipped_configs

    configs = dict(shipped_configs(64))
    assert set(configs) == {name for name in zoo_names() if load_run_config(zoo_entry(name)).algo == "ppo"}
    for name, config in configs.items():
        own = load_run_config(zoo_entry(name))
        assert (config.env_id, config.n_envs, config.env_kwargs, config.steps, config.vec_env, config.init) == (
            own.env_id, own.n_envs, own.env_kwargs, 64, "dummy", None)
        assert config.hp_overrides == {k: v for k, v in own.hp_overrides.items() if k not in BEFORE_TRAINING}
    wolfgang = configs["wolfgang-getup-residual-spline"]
    assert "imitate" not in wolfgang.hp_overrides and wolfgang.hp_overrides["n_steps"] == 2048
    row = measure_config(replace(wolfgang, n_envs=2, env_kwargs={**wolfgang.env_kwargs, **SHORT},
                                 hp_overrides={**wolfgang.hp_overrides, **TINY_PPO}), source="wolfgang-getup-residual-spline")
    assert row.source == "wolfgang-getup-residual-spline" and row.train_steps_per_s > 0 < row.env_steps_per_s
    assert format_training_bench([row]).splitlines()[1].endswith("  wolfgang-getup-residual-spline")


def test_an_interrupt_inside_a_checkpoint_write_is_an_interrupt(tmp_path, monkeypatch):
    """Ctrl-C or SIGTERM while a checkpoint is being written: torch's zip writer, interrupted
    mid-file, raises its own error on the way out. That is still an interrupt: the run is saved
    where it stopped, and the earlier checkpoints stay."""
    from upright.training import callbacks

    written = callbacks.save_model_files
    calls = []

    def interrupted_second(model, normalizer, model_path, **kwargs):
        calls.append(model_path.parent.name)
        if calls.count("checkpoints") == 2 and model_path.parent.name == "checkpoints":
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt:
                raise RuntimeError("[enforce fail at inline_container.cc] unexpected pos") from None
        return written(model, normalizer, model_path, **kwargs)

    monkeypatch.setattr(callbacks, "save_model_files", interrupted_second)
    with pytest.raises(TrainingInterrupted):
        train(_config(tmp_path, steps=2048, checkpoint_every=256))
    run_dir = tmp_path / "runs" / "WolfgangGetUp-v0" / "ppo-spline-1"
    assert model_steps(run_dir / "model.zip") == 512  # saved where the interrupt stopped it
    assert _checkpoint_steps(run_dir) == [256, 512]  # the session's end is a checkpoint too
