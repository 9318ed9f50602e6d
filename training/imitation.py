"""Imitation before reinforcement learning (``hp.imitate``): the actor of a fresh PPO model is fitted
to a teacher, a hand-designed residual (``feedback:NAME``, :mod:`upright.policies.feedback`), by
regressing its mean action on the teacher's actions along the teacher's own rollouts in the training
environments; PPO then starts from the teacher and refines it (behaviour cloning as a warm start).

The rollouts are environment steps of the run: they count in its step total and wall-clock. They
also fill the observation normalisation statistics (``VecNormalize`` in training mode), which the
regression then uses as they stand, so the actor is fitted on observations as PPO will see them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from upright.policies.base import Policy
from upright.training.callbacks import actor_parameters


def collect(venv: Any, teacher: Policy, steps: int) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """Run ``teacher`` in the SB3 vector environment ``venv`` (optionally ``VecNormalize``-wrapped)
    for ``steps`` environment steps (rounded up to whole vector steps); return the raw
    observations, the teacher's actions for them and the rollout's numbers: episodes finished and
    their success and stood-up rates (get-up; None where no episode finished or the task has none)."""
    from stable_baselines3.common.vec_env import VecNormalize  # SB3 (and torch): only when a model loads

    inner = venv.unwrapped
    teacher.reset(venv.get_attr("unwrapped", indices=0)[0], None)  # stateless: the spaces and ranges
    obs = venv.reset()
    infos = list(inner.reset_infos)
    observations, actions, finished = [], [], []
    for _ in range(-(-steps // venv.num_envs)):
        raw = venv.get_original_obs() if isinstance(venv, VecNormalize) else obs
        action = np.stack([teacher.act(o, info) for o, info in zip(raw, infos)])
        observations.append(np.asarray(raw, dtype=np.float32))
        actions.append(action)
        obs, _, dones, step_infos = venv.step(action)
        if "sensors" not in step_infos[0]:
            raise ValueError("the teacher reads each step's info['sensors'], which these training environments "
                             "drop: build them with keep_info=TEACHER_INFO (upright.training.vec_env)")
        for i, done in enumerate(dones):
            if done:
                finished.append(step_infos[i].get("episode_metrics", {}))
            infos[i] = inner.reset_infos[i] if done else step_infos[i]

    def rate(key: str) -> float | None:
        values = [m[key] for m in finished if key in m]
        return float(np.mean(values)) if values else None

    return (np.concatenate(observations), np.concatenate(actions),
            {"episodes": len(finished), "success_rate": rate("success"), "stood_up_rate": rate("stood_up")})


def fit(model: Any, observations: np.ndarray, actions: np.ndarray, *, epochs: int, batch_size: int,
        learning_rate: float, seed: int) -> list[float]:
    """Regress the mean action of ``model``'s actor (PPO) on ``actions`` for the (normalised)
    ``observations`` with Adam, in shuffled minibatches; return the mean squared error of each epoch
    (normalised action units squared)."""
    import torch  # torch: only when a model is built

    policy = model.policy
    parameters = [p for p in actor_parameters(model) if p is not getattr(policy, "log_std", None)]
    optimizer = torch.optim.Adam(parameters, lr=learning_rate)
    x = torch.as_tensor(observations, dtype=torch.float32)
    y = torch.as_tensor(actions, dtype=torch.float32)
    rng = np.random.default_rng(seed)
    losses = []
    policy.set_training_mode(True)
    for _ in range(epochs):
        total = 0.0
        for batch in np.array_split(rng.permutation(len(x)), max(len(x) // batch_size, 1)):
            index = torch.as_tensor(batch)
            mean = policy.get_distribution(x[index]).distribution.mean
            loss = torch.nn.functional.mse_loss(mean, y[index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch)
        losses.append(total / len(x))
    policy.set_training_mode(False)
    return losses


def imitate(model: Any, venv: Any, teacher: Policy, *, steps: int, epochs: int, batch_size: int,
            learning_rate: float, seed: int, out: Path) -> dict[str, Any]:
    """Collect ``steps`` steps of ``teacher`` in ``venv``, fit ``model``'s actor to them (see
    :func:`fit`), set the model's step count to the steps taken and write ``out``
    (``imitation.json``: teacher, steps, seconds, rollout numbers, loss per epoch); return that record."""
    from stable_baselines3.common.vec_env import VecNormalize  # SB3 (and torch): only when a model loads

    start = time.monotonic()
    raw, actions, rollout = collect(venv, teacher, steps)
    normalised = venv.normalize_obs(raw) if isinstance(venv, VecNormalize) else raw
    losses = fit(model, normalised, actions, epochs=epochs, batch_size=batch_size, learning_rate=learning_rate,
                 seed=seed)
    model.num_timesteps = len(raw)
    record = {"teacher": teacher.name, "steps": len(raw), "seconds": round(time.monotonic() - start, 2),
              "rollout": rollout, "loss_per_epoch": losses}
    out.write_text(json.dumps(record, indent=2) + "\n")
    return record


__all__ = ["collect", "fit", "imitate"]
