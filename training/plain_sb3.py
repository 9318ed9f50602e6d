"""A trained policy as plain stable-baselines3 files: an actor-only model that ``PPO.load`` (or
``A2C.load``) rebuilds without importing upright, its ``VecNormalize`` statistics, and the
``gym.make`` arguments of the environment it acts in (``upright export --sb3``, and ``sb3/`` in
every zoo entry that ``upright ship`` writes).

Why a second model file: a policy trained with a privileged critic (``hp.privileged_critic``,
:mod:`upright.policies.asymmetric`) saves upright's ``AsymmetricActorCriticPolicy``, whose model
observes the robot's observation followed by privileged simulator state; plain SB3 then imports
upright to rebuild it and refuses the environment's observation ("Unexpected observation shape").
The actor-only model is SB3's own ``ActorCriticPolicy`` whose observation space is the actor's
(the environment's): its actor (policy network, action network, log-std) is the trained one,
weight for weight. Its value network is the trained one when that read the same observation;
after a privileged critic it is zeroed (a value of 0 everywhere), as ``predict`` and
``evaluate_policy`` never read it; training on from this file starts the critic afresh, so
fine-tuning with upright takes ``zoo:NAME`` instead, whose critic is kept. The normaliser keeps the
statistics of the actor's entries (the first ones) and is saved for evaluation (``training`` and
``norm_reward`` off, so ``evaluate_policy`` reports the environment's rewards).

Files (:func:`write_plain_sb3`): :data:`MODEL_FILE`, :data:`NORMALIZER_FILE` and :data:`ENV_FILE`
(``id`` and ``kwargs``: the environment the policy was evaluated in, prior included), assembled in
a temporary folder beside the target and renamed into place. ``policies/zoo/README.md`` shows the
plain-SB3 use.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import yaml

from upright.eval.runner import overall_progress
from upright.eval.tables import jsonable
from upright.policies.folders import recover_folder, replace_folder, temporary_folder
from upright.policies.run import (ZOO_PREFIX, is_run_policy, load_run_policy, run_env_kwargs, run_model, user_zoo,
                                  zoo_entry, zoo_names)
from upright.policies.run_folder import load_run_config
from upright.policies.sb3 import actor_size

#: The folder of a zoo entry that holds its plain-SB3 files.
SB3_DIR = "sb3"
MODEL_FILE = "model.zip"
NORMALIZER_FILE = "vecnormalize.pkl"
ENV_FILE = "env.yml"
#: The state-dict prefixes of an SB3 actor-critic's value network.
_CRITIC = ("mlp_extractor.value_net.", "value_net.")


class _Spaces(gym.Env):
    """An environment that only has spaces: what a ``VecNormalize`` is built on before it is saved
    without its environment."""

    def __init__(self, observation_space: gym.spaces.Box, action_space: gym.spaces.Space) -> None:
        self.observation_space = observation_space
        self.action_space = action_space


def actor_space(model: Any) -> gym.spaces.Box:
    """The observation space of ``model``'s actor: its first :func:`~upright.policies.sb3.actor_size`
    entries (all of them for a symmetric actor-critic)."""
    space = model.observation_space
    size = actor_size(model)
    return gym.spaces.Box(space.low[:size], space.high[:size], dtype=space.dtype)


def actor_only_model(model: Any) -> Any:
    """A copy of the SB3 actor-critic ``model`` (PPO, A2C) whose policy is SB3's ``ActorCriticPolicy``
    on :func:`actor_space`: the actor's weights as trained, the critic's when it read that space
    too and zeros otherwise (the module docstring says why). ValueError for another policy (SAC,
    TD3: their actors need their own classes, which plain SB3 has)."""
    import torch  # loaded with the model already
    from stable_baselines3.common.policies import ActorCriticPolicy

    policy = model.policy
    if not isinstance(policy, ActorCriticPolicy):
        raise ValueError(f"an actor-only SB3 model is written for actor-critic policies (PPO, A2C), not "
                         f"{type(model).__name__}'s {type(policy).__name__}")
    space = actor_space(model)
    kwargs = {key: value for key, value in model.policy_kwargs.items() if key != "actor_size"}
    plain = ActorCriticPolicy(space, model.action_space, model.lr_schedule, use_sde=model.use_sde, **kwargs)
    trained = policy.state_dict()
    symmetric = space.shape == model.observation_space.shape
    state = {}
    for key, value in plain.state_dict().items():
        critic = key.startswith(_CRITIC)
        if critic and not symmetric:
            state[key] = torch.zeros_like(value)
        elif key in trained and trained[key].shape == value.shape:
            state[key] = trained[key].detach().clone()
        else:
            theirs = tuple(trained[key].shape) if key in trained else None
            raise ValueError(f"the trained policy's {key} has shape {theirs}, SB3's actor-critic on the actor's "
                             f"observation has {tuple(value.shape)}")
    plain.load_state_dict(state)
    result = copy.copy(model)  # the hyperparameters, step count and schedules as they were
    result.policy = plain.to(model.device)
    result.policy_class = ActorCriticPolicy
    result.policy_kwargs = kwargs
    result.observation_space = space
    return result


def actor_only_normalizer(normalizer: Any, space: gym.spaces.Box, action_space: gym.spaces.Space) -> Any:
    """A ``VecNormalize`` for evaluation on ``space`` (the actor's observation, the first entries of
    ``normalizer``'s) with ``normalizer``'s statistics of those entries, its clip and epsilon,
    ``training`` and ``norm_reward`` off."""
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize  # loaded with the model already

    size = space.shape[0]
    result = VecNormalize(DummyVecEnv([lambda: _Spaces(space, action_space)]), training=False,
                          norm_obs=normalizer.norm_obs, norm_reward=False, clip_obs=normalizer.clip_obs,
                          clip_reward=normalizer.clip_reward, gamma=normalizer.gamma, epsilon=normalizer.epsilon)
    result.obs_rms.mean = np.array(normalizer.obs_rms.mean[:size], dtype=np.float64)
    result.obs_rms.var = np.array(normalizer.obs_rms.var[:size], dtype=np.float64)
    result.obs_rms.count = normalizer.obs_rms.count
    result.ret_rms = copy.deepcopy(normalizer.ret_rms)
    return result


def write_plain_sb3(name: str, out: str | Path) -> Path:
    """Write the trained policy ``name`` (a run folder, one of its ``.zip`` files or ``zoo:NAME``)
    as plain SB3 files into the folder ``out`` (replaced whole; the module docstring lists the
    files); returns ``out``. ValueError naming a policy that is no trained run, or a folder
    ``out`` that holds something else."""
    if not is_run_policy(name):
        raise ValueError(f"{name!r} is no run folder of upright train, .zip file of one or zoo:NAME: there is no "
                         "trained SB3 model to write")
    out = Path(out)
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / ENV_FILE).is_file())):
        raise ValueError(f"--out {str(out)!r} exists and is no plain-SB3 export; give a new or empty folder")
    policy = load_run_policy(name)
    run_dir, _ = run_model(name)
    plain = actor_only_model(policy.model)
    environment = {"id": load_run_config(run_dir).env_id, "kwargs": jsonable(run_env_kwargs(name))}
    out.parent.mkdir(parents=True, exist_ok=True)
    recover_folder(out)
    building = temporary_folder(out)
    building.mkdir()
    try:
        plain.save(building / MODEL_FILE)
        if policy.normalizer is not None:
            actor_only_normalizer(policy.normalizer, plain.observation_space, plain.action_space).save(
                building / NORMALIZER_FILE)
        (building / ENV_FILE).write_text(yaml.safe_dump(environment, sort_keys=False))
        replace_folder(building, out)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return out


def zoo_sb3_dir(name: str) -> Path:
    """The plain-SB3 folder of the zoo policy ``name``: ``sb3/`` in its entry
    (:func:`~upright.policies.run.zoo_entry`)."""
    return zoo_entry(name) / SB3_DIR


def write_zoo_sb3() -> list[Path]:
    """Write the plain-SB3 files of every policy of the user's zoo
    (:func:`~upright.policies.run.user_zoo`) beside it (:func:`zoo_sb3_dir`), under one progress bar."""
    names = zoo_names(user_zoo())
    paths = []
    with overall_progress(len(names), "export --zoo --sb3", unit="policy") as bar:
        for name in names:
            paths.append(write_plain_sb3(ZOO_PREFIX + name, zoo_sb3_dir(name)))
            bar.update()
    return paths


__all__ = ["ENV_FILE", "MODEL_FILE", "NORMALIZER_FILE", "SB3_DIR", "actor_only_model", "actor_only_normalizer",
           "actor_space", "write_plain_sb3", "write_zoo_sb3", "zoo_sb3_dir"]
