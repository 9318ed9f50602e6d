"""Training speed (``upright bench --training``): end-to-end training steps per second of PPO and SAC
against the environment alone, for the residual configurations of the shipped hyperparameter files
(:data:`CONFIGS`), with the vector environment, normalisation and thread setting ``upright train``
uses (``make_train_env``: ``n_envs`` DummyVecEnv copies, VecNormalize when the hyperparameters say so;
one torch thread).

Both rates are environment steps (one per environment per ``VecEnv.step``) per CPU second of this
process (``time.process_time``, as the environment bench; other processes' load does not count).
"Environment alone" steps the same vector environment with zero actions; "training" is
``model.learn`` from a freshly built, zero-initialised model (SAC with ``learning_starts=0``, so
every step includes its gradient step, as in steady state). Targets (the training-speed issue):
training >= 0.6 of the environment alone and >= 1000 steps/s.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import numpy as np

from upright.training.config import TrainConfig
from upright.training.envs import make_train_env
from upright.training.train import ON_POLICY, _new_model, resolve

#: (environment id, prior) of the residual configurations in training/hyperparams/*.yml.
CONFIGS = (("upright/NaoGetUp-v0", "keyframe"), ("upright/WolfgangGetUp-v0", "spline"),
           ("upright/NaoWalk-v0", "step_adjust"))
ALGOS = ("ppo", "sac")
#: Targets: training / environment alone, and training steps per second.
TARGET_RATIO = 0.6
TARGET_RATE = 1000.0


@dataclass(frozen=True)
class TrainingBenchRow:
    """One algorithm on one configuration: rates in environment steps per CPU second."""

    algo: str
    env_id: str
    prior: str
    n_envs: int
    env_steps_per_s: float
    train_steps_per_s: float

    @property
    def ratio(self) -> float:
        """Training rate / environment-alone rate."""
        return self.train_steps_per_s / self.env_steps_per_s


def _env_rate(venv, steps: int) -> float:
    """Environment steps per CPU second of ``venv`` under zero actions for about ``steps`` steps."""
    action = np.zeros((venv.num_envs, *venv.action_space.shape), dtype=np.float32)
    venv.reset()
    calls = max(steps // venv.num_envs, 1)
    start = time.process_time()
    for _ in range(calls):
        venv.step(action)
    return calls * venv.num_envs / (time.process_time() - start)


def measure(algo: str, env_id: str, prior: str, steps: int, n_envs: int = TrainConfig.n_envs,
            hp_overrides: Mapping[str, Any] | None = None) -> TrainingBenchRow:
    """One row: ``steps`` environment steps alone, then ``model.learn(steps)`` (PPO rounds up to
    whole rollouts) with the shipped hyperparameters and ``hp_overrides`` (dotted keys)."""
    import torch

    torch.set_num_threads(1)
    overrides = {**({"learning_starts": 0} if algo not in ON_POLICY else {}), **(hp_overrides or {})}
    with TemporaryDirectory() as tmp:
        config = resolve(TrainConfig(env_id=env_id, prior=prior, algo=algo, steps=steps, n_envs=n_envs,
                                     hp_overrides=overrides, out=tmp, progress=False))
        venv = make_train_env(env_id, config.env_kwargs_with_prior, n_envs, config.seed,
                              normalize=bool(config.hyperparams.get("normalize")), on_policy=algo in ON_POLICY)
        env_rate = _env_rate(venv, steps)
        model = _new_model(config, venv, Path(tmp) / "tb")
        start = time.process_time()
        model.learn(steps)
        train_rate = model.num_timesteps / (time.process_time() - start)
        venv.close()
    return TrainingBenchRow(algo, env_id, prior, n_envs, env_rate, train_rate)


def run_training_bench(steps: int = 2048, configs: tuple[tuple[str, str], ...] = CONFIGS,
                       algos: tuple[str, ...] = ALGOS) -> list[TrainingBenchRow]:
    """Every algorithm on every configuration, ``steps`` environment steps per measurement."""
    return [measure(algo, env_id, prior, steps) for env_id, prior in configs for algo in algos]


def format_training_bench(rows: list[TrainingBenchRow]) -> str:
    """A plain-text table of the rows with the targets."""
    lines = [f"{'algo':<5} {'environment':<26} {'prior':<12} {'envs':>4} {'env steps/s':>11} "
             f"{'train steps/s':>13} {'/ env':>7}"]
    for r in rows:
        lines.append(f"{r.algo:<5} {r.env_id:<26} {r.prior:<12} {r.n_envs:>4} {r.env_steps_per_s:>11.0f} "
                     f"{r.train_steps_per_s:>13.0f} {r.ratio:>7.2f}")
    lines.append("steps/s = environment steps per CPU second of this process (DummyVecEnv, one torch thread, as "
                 "upright train); env = the same vector env with zero actions; SAC with learning_starts=0. "
                 f"Targets: / env >= {TARGET_RATIO}, train >= {TARGET_RATE:.0f} steps/s.")
    return "\n".join(lines)


__all__ = ["ALGOS", "CONFIGS", "TARGET_RATE", "TARGET_RATIO", "TrainingBenchRow", "format_training_bench",
           "measure", "run_training_bench"]
