"""rl-baselines3-zoo both ways: our hyperparameters as its ``--conf-file`` (``upright zoo-conf``),
and its run folders (``LOG/ppo/ENV_N/``: the last model, ``ENV/args.yml``, ``ENV/config.yml``,
``ENV/vecnormalize.pkl``) as policies of ``upright eval`` and ``upright export``."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import yaml

import upright  # noqa: F401  (registers the ids)
from upright.cli import main
from upright.envs.registration import ENVIRONMENTS
from upright.policies.registry import load_policy
from upright.policies.run import run_env_id, run_env_kwargs
from upright.training.zoo_conf import zoo_conf_text

ENV = "upright/NaoGetUp-v0"
FOLDER = "upright-NaoGetUp-v0"  # rl_zoo3's name of the id: "/" as "-"


def _zoo_run(root: Path, env_kwargs: dict, *, normalize: bool = True) -> Path:
    """An rl_zoo3 run folder as its train script leaves it (untrained PPO; statistics from a few
    random steps, so that normalising changes the observations)."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    venv = VecNormalize(DummyVecEnv([lambda: gym.make(ENV, **env_kwargs)]), gamma=0.99)
    venv.seed(0)
    venv.reset()
    for _ in range(20):
        venv.step(np.zeros((1, *venv.action_space.shape), dtype=np.float32))
    folder = root / "logs" / "ppo" / f"{FOLDER}_1"
    params = folder / FOLDER
    params.mkdir(parents=True)
    model = PPO("MlpPolicy", venv, n_steps=64, batch_size=32, seed=0, device="cpu")
    model.save(folder / f"{FOLDER}.zip")
    venv.save(params / "vecnormalize.pkl")
    args = OrderedDict([("algo", "ppo"), ("env", ENV), ("env_kwargs", dict(env_kwargs)), ("n_timesteps", 64),
                        ("seed", 3)])
    config = OrderedDict([("n_envs", 1), ("n_timesteps", 1000), ("normalize", normalize), ("policy", "MlpPolicy")])
    for name, data in (("args.yml", args), ("config.yml", config)):
        (params / name).write_text(yaml.dump(data))  # rl_zoo3's own writing: OrderedDicts as python/object tags
    return folder


def test_a_zoo_run_loads_with_its_env_kwargs_and_its_normalisation(tmp_path):
    folder = _zoo_run(tmp_path, {"max_episode_seconds": 0.2, "prior": "keyframe"})
    assert run_env_id(str(folder)) == ENV
    assert run_env_kwargs(str(folder)) == {"max_episode_seconds": 0.2, "prior": "keyframe"}
    for name in (str(folder), str(folder / f"{FOLDER}.zip")):
        policy = load_policy(name)
        assert policy.normalizer is not None and policy.normalizer.training is False
        env = gym.make(ENV, **run_env_kwargs(name))
        obs, info = env.reset(seed=0)
        policy.reset(env, 0)
        expected, _ = policy.model.predict(policy.normalizer.normalize_obs(obs), deterministic=True)
        np.testing.assert_allclose(policy.act(obs, info), expected, atol=1e-6)


def test_a_zoo_run_without_its_statistics_names_where_they_were_looked_for(tmp_path):
    folder = _zoo_run(tmp_path, {"max_episode_seconds": 0.2})
    stats = folder / FOLDER / "vecnormalize.pkl"
    stats.unlink()
    for name in (str(folder), str(folder / f"{FOLDER}.zip")):
        with pytest.raises(ValueError, match="normalised its observations") as error:
            load_policy(name)
        assert str(stats) in str(error.value)


def test_upright_eval_and_export_take_a_zoo_run_folder(tmp_path, capsys):
    folder = _zoo_run(tmp_path, {"max_episode_seconds": 0.1})
    out = tmp_path / "eval"
    assert main(["eval", "--env", ENV, "--policy", str(folder), "--episodes", "1", "--workers", "1",
                 "--out", str(out)]) == 0
    result = json.loads((out / "results.json").read_text())
    assert result["env_kwargs"]["max_episode_seconds"] == 0.1, result["env_kwargs"]
    assert main(["export", str(folder), "--out", str(tmp_path / "export")]) == 0
    spec = yaml.safe_load((tmp_path / "export" / "policy.yml").read_text())
    assert spec["environment"]["id"] == ENV and spec["policy"]["model_file"] == f"{FOLDER}.zip"
    assert "in the graph" in spec["observation"]["normalisation"]


def test_zoo_conf_writes_a_complete_block_per_id_in_rl_zoo3s_form():
    import torch

    table = yaml.safe_load(zoo_conf_text("ppo"))
    assert set(table) == set(ENVIRONMENTS)
    for block in table.values():
        assert {"n_timesteps", "policy", "n_envs", "normalize"} <= set(block)
        kwargs = eval(block["policy_kwargs"], {"nn": torch.nn})  # as rl_zoo3 reads it
        assert kwargs["activation_fn"] is torch.nn.ReLU and kwargs["net_arch"] == {"pi": [128, 128], "vf": [128, 128]}
    residual = yaml.safe_load(zoo_conf_text("ppo", "keyframe", [ENV]))[ENV]
    assert residual["env_kwargs"] == {"prior": "keyframe"} and residual["learning_rate"] == 1e-4
    assert "warmup_steps" not in residual and "zero_init" not in residual


@pytest.mark.slow
def test_rl_zoo3_trains_on_our_ids_and_upright_evaluates_its_folder(tmp_path):
    """The round trip: ``upright zoo-conf``, ``python -m rl_zoo3.train ... --gym-packages upright``
    for a thousand steps, then ``upright eval`` of the run folder it left."""
    pytest.importorskip("rl_zoo3")
    conf = tmp_path / "ppo.yml"
    assert main(["zoo-conf", "--env", ENV, "--out", str(conf)]) == 0
    subprocess.run([sys.executable, "-m", "rl_zoo3.train", "--algo", "ppo", "--env", ENV, "--gym-packages", "upright",
                    "--conf-file", str(conf), "-n", "512", "-f", str(tmp_path / "logs"), "--seed", "1",
                    "--eval-freq", "-1", "--hyperparams", "n_envs:1", "n_steps:256", "batch_size:64", "n_epochs:1",
                    "--env-kwargs", "max_episode_seconds:0.5"],
                   check=True, capture_output=True, text=True, timeout=600)
    folder = tmp_path / "logs" / "ppo" / f"{FOLDER}_1"
    assert (folder / FOLDER / "vecnormalize.pkl").is_file()
    out = tmp_path / "eval"
    assert main(["eval", "--env", ENV, "--policy", str(folder), "--episodes", "2", "--workers", "1",
                 "--out", str(out)]) == 0
    result = json.loads((out / "results.json").read_text())
    assert result["env_kwargs"]["max_episode_seconds"] == 0.5
