"""The training environments: ``n_envs`` copies of the environment in a DummyVecEnv (one process:
on a few cores SubprocVecEnv's inter-process traffic costs more than it parallelises), each in a
Monitor that records ``is_success``, optionally in VecNormalize."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecNormalize

from upright.eval.runner import check_env_id


def make_train_env(env_id: str, env_kwargs: dict[str, Any], n_envs: int, seed: int, *, normalize: bool,
                   on_policy: bool, monitor_dir: Path | None = None, normalizer: Path | None = None) -> VecEnv:
    """``n_envs`` environments ``gym.make(env_id, **env_kwargs)`` seeded ``seed``, ``seed + 1``, ...
    With ``normalize`` the observations are normalised (and the rewards too for on-policy
    algorithms, as rl-baselines3-zoo does); ``normalizer`` reloads saved statistics (resume, or
    fine-tuning a trained policy)."""
    venv = make_vec_env(env_id, n_envs=n_envs, seed=seed, env_kwargs=env_kwargs, vec_env_cls=DummyVecEnv,
                        monitor_dir=None if monitor_dir is None else str(monitor_dir),
                        monitor_kwargs={"info_keywords": ("is_success",)})
    if normalizer is not None:
        loaded = VecNormalize.load(str(normalizer), venv)
        loaded.training = True  # statistics saved beside an evaluated model may have been frozen
        return loaded
    if normalize:
        return VecNormalize(venv, norm_obs=True, norm_reward=on_policy, gamma=0.99)
    return venv


def check_env(env_id: str, env_kwargs: dict[str, Any]) -> gym.Env:
    """Build one environment (ValueError naming a bad id, keyword argument or prior) and return it."""
    check_env_id(env_id)
    try:
        return gym.make(env_id, **env_kwargs)
    except TypeError as error:  # an unknown keyword argument
        raise ValueError(f"{env_id}: {error}") from None


__all__ = ["check_env", "make_train_env"]
