"""A stable-baselines3 model (``.zip``) as a :class:`~upright.policies.base.Policy`.

The algorithm is read from the zip's ``data`` record (the attributes each algorithm saves), so a
file from any source loads without being told what made it; actions are deterministic.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from upright.policies.algorithms import ALGORITHMS as _ROWS
from upright.policies.base import Policy

#: The SB3 class names of every algorithm a model file may come from.
ALGORITHMS = tuple(a.sb3_name for a in _ROWS.values())


def detect_algorithm(path: str | Path) -> str:
    """Name of the SB3 algorithm (one of :data:`ALGORITHMS`) that saved the model file ``path``.

    Decided from attributes only that algorithm saves: SAC ``target_entropy``; TD3 and DDPG
    ``policy_delay`` (DDPG is TD3 with ``policy_delay = 1`` and ``target_noise_clip = 0``, its
    definition in SB3); PPO ``clip_range``; A2C the remaining on-policy case (``gae_lambda``).
    """
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as archive:
            data: dict[str, Any] = json.loads(archive.read("data"))
    except FileNotFoundError:
        raise ValueError(f"SB3 model file {str(path)!r} does not exist") from None
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError) as error:
        raise ValueError(f"{str(path)!r} is not a stable-baselines3 model file ({error})") from None
    if "target_entropy" in data:
        return "SAC"
    if "policy_delay" in data:
        is_ddpg = data["policy_delay"] == 1 and data.get("target_noise_clip") == 0.0
        return "DDPG" if is_ddpg else "TD3"
    if "clip_range" in data:
        return "PPO"
    if "gae_lambda" in data:
        return "A2C"
    raise ValueError(f"cannot tell which algorithm saved {str(path)!r}; supported: {', '.join(ALGORITHMS)}")


class ModelPolicy(Policy):
    """Deterministic actions of an in-memory SB3 ``model``; observations are normalised first
    with ``normalizer`` (a VecNormalize whose statistics are used frozen), when given."""

    def __init__(self, model: Any, normalizer: Any = None, name: str = "model") -> None:
        self.model = model
        self.normalizer = normalizer
        self.name = name

    def reset(self, env: gym.Env, seed: int | None) -> None:
        for kind, ours, theirs in (("observation", env.observation_space, self.model.observation_space),
                                   ("action", env.action_space, self.model.action_space)):
            if ours.shape != theirs.shape:
                raise ValueError(f"policy {self.name!r} was trained with {kind} shape {theirs.shape}, "
                                 f"the environment has {ours.shape} (another robot, task or prior?)")

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        if self.normalizer is not None:
            observation = self.normalizer.normalize_obs(observation)
        action, _ = self.model.predict(observation, deterministic=True)
        return np.asarray(action, dtype=np.float32)


class SB3Policy(ModelPolicy):
    """Deterministic actions of an SB3 model loaded on the CPU from ``path`` (no normalisation)."""

    def __init__(self, path: str | Path) -> None:
        import stable_baselines3  # SB3 (and torch): only when a model loads

        self.path = Path(path)
        self.algorithm = detect_algorithm(self.path)
        super().__init__(getattr(stable_baselines3, self.algorithm).load(self.path, device="cpu"), name=self.path.stem)


__all__ = ["ALGORITHMS", "ModelPolicy", "SB3Policy", "detect_algorithm"]
