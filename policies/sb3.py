"""A stable-baselines3 model (``.zip``) as a :class:`~upright.policies.base.Policy`.

The algorithm is read from the zip's ``data`` record (the attributes each algorithm saves), so a
file from any source loads without being told what made it; actions are deterministic.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any, Callable

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


def gaussian_mean(model: Any) -> Callable[[np.ndarray], np.ndarray] | None:
    """The deterministic action of ``model`` when its policy is an actor-critic with a diagonal
    Gaussian action distribution (PPO, A2C without gSDE): the mean, through the actor's layers
    alone, clipped to the action space as SB3's ``predict`` clips it. ``predict`` builds the whole
    distribution object for every call, about three times the cost of the mean at our network
    sizes; the tensor operations are the same, so the actions are too. None for every other policy
    (SAC, TD3 and gSDE actors go through ``predict``)."""
    import torch  # loaded with the model already
    from stable_baselines3.common.distributions import DiagGaussianDistribution
    from stable_baselines3.common.policies import ActorCriticPolicy

    policy = model.policy
    if not (isinstance(policy, ActorCriticPolicy) and isinstance(policy.action_dist, DiagGaussianDistribution)
            and not policy.squash_output):
        return None
    low, high = policy.action_space.low, policy.action_space.high

    def mean(observation: np.ndarray) -> np.ndarray:
        policy.set_training_mode(False)  # as predict: a model in training is switched back by SB3
        with torch.no_grad():
            batch = torch.as_tensor(observation, device=policy.device).reshape(1, -1)
            features = policy.extract_features(batch, policy.pi_features_extractor)
            action = policy.action_net(policy.mlp_extractor.forward_actor(features))
        return np.clip(action.cpu().numpy()[0], low, high)

    return mean


def actor_size(model: Any) -> int:
    """The number of observation entries ``model``'s actor reads: the ``actor_size`` of an
    asymmetric actor-critic (:mod:`upright.policies.asymmetric`, whose model also observes
    privileged entries after the robot's), else the whole observation."""
    return int(getattr(model.policy, "actor_size", model.observation_space.shape[0]))


class ModelPolicy(Policy):
    """Deterministic actions of an in-memory SB3 ``model``; observations are normalised first
    with ``normalizer`` (a VecNormalize whose statistics are used frozen), when given."""

    def __init__(self, model: Any, normalizer: Any = None, name: str = "model") -> None:
        self.model = model
        self.normalizer = normalizer
        self.name = name
        self._mean = gaussian_mean(model)
        self._model_size = int(model.observation_space.shape[0])
        self._actor_size = actor_size(model)

    def reset(self, env: gym.Env, seed: int | None) -> None:
        for kind, ours, theirs in (("observation", env.observation_space.shape, (self._actor_size,)),
                                   ("action", env.action_space.shape, self.model.action_space.shape)):
            if ours != theirs:
                raise ValueError(f"policy {self.name!r} was trained with {kind} shape {theirs}, "
                                 f"the environment has {ours} (another robot, task or prior?)")

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        if self._model_size > self._actor_size:  # zeros where the critic's privileged entries go
            observation = np.concatenate((observation, np.zeros(self._model_size - self._actor_size,
                                                                dtype=observation.dtype)))
        if self.normalizer is not None:
            observation = self.normalizer.normalize_obs(observation)
        if self._mean is not None:
            return np.asarray(self._mean(observation), dtype=np.float32)
        action, _ = self.model.predict(observation, deterministic=True)
        return np.asarray(action, dtype=np.float32)


class SB3Policy(ModelPolicy):
    """Deterministic actions of an SB3 model loaded on the CPU from ``path`` (no normalisation)."""

    def __init__(self, path: str | Path) -> None:
        import stable_baselines3  # SB3 (and torch): only when a model loads

        self.path = Path(path)
        self.algorithm = detect_algorithm(self.path)
        try:
            model = getattr(stable_baselines3, self.algorithm).load(self.path, device="cpu")
        except OSError:
            raise
        except Exception as error:  # the zip's data read, its weights or pickles not (truncated, foreign)
            raise ValueError(f"{str(self.path)!r} does not load as a {self.algorithm} model "
                             f"({type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''})"
                             ) from error
        super().__init__(model, name=self.path.stem)


__all__ = ["ALGORITHMS", "ModelPolicy", "SB3Policy", "actor_size", "detect_algorithm", "gaussian_mean"]
