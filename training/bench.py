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

For an off-policy algorithm the row also has the CPU cost of one gradient step alone
(``model.train`` after the run, :data:`UPDATE_REPEATS` steps on the filled buffer) and from it the
fewest environment steps per gradient step at which training could reach the ratio target:
``k`` env steps of ``1 / env rate`` s each and one gradient step of ``g`` s give at most
``k / env rate / (k / env rate + g)``, which is >= ``r`` from ``k = r / (1 - r) · g · env rate`` on
(a lower bound: the policy's forward pass and the buffer writes per vector step cost more still).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import numpy as np

from upright.policies.algorithms import ALGORITHMS, algorithm
from upright.policies.run_folder import TrainConfig
from upright.training.vec_env import make_train_env
from upright.training.train import new_model, resolve

#: (environment id, prior) of the residual configurations in training/hyperparams/*.yml.
CONFIGS = (("upright/NaoGetUp-v0", "keyframe"), ("upright/WolfgangGetUp-v0", "spline"),
           ("upright/NaoWalk-v0", "step_adjust"))
#: The algorithms benchmarked (their ``benched`` rows).
ALGOS = tuple(name for name, a in ALGORITHMS.items() if a.benched)
#: Targets: training / environment alone, and training steps per second.
TARGET_RATIO = 0.6
TARGET_RATE = 1000.0
#: Gradient steps timed alone for an off-policy row's update cost.
UPDATE_REPEATS = 50


@dataclass(frozen=True)
class TrainingBenchRow:
    """One algorithm on one configuration: rates in environment steps per CPU second."""

    algo: str
    env_id: str
    prior: str
    n_envs: int
    env_steps_per_s: float
    train_steps_per_s: float
    #: Environment steps per gradient step in this run (off-policy, inf without one; None for on-policy).
    steps_per_update: float | None = None
    #: CPU seconds of one gradient step alone (off-policy; None for on-policy).
    update_s: float | None = None

    @property
    def ratio(self) -> float:
        """Training rate / environment-alone rate."""
        return self.train_steps_per_s / self.env_steps_per_s

    @property
    def steps_per_update_for_target(self) -> float | None:
        """The fewest environment steps per gradient step at which training could reach
        :data:`TARGET_RATIO` of the environment alone (a lower bound, see the module docstring);
        None for on-policy rows."""
        if self.update_s is None:
            return None
        return TARGET_RATIO / (1.0 - TARGET_RATIO) * self.update_s * self.env_steps_per_s


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
    on_policy = algorithm(algo).on_policy
    overrides = {**({"learning_starts": 0} if not on_policy else {}), **(hp_overrides or {})}
    with TemporaryDirectory() as tmp:
        config = resolve(TrainConfig(env_id=env_id, prior=prior, algo=algo, steps=steps, n_envs=n_envs,
                                     hp_overrides=overrides, out=tmp, progress=False))
        venv = make_train_env(env_id, config.env_kwargs_with_prior, n_envs, config.seed,
                              normalize=bool(config.hyperparams.get("normalize")), on_policy=on_policy)
        env_rate = _env_rate(venv, steps)
        model = new_model(config, venv, Path(tmp) / "tb")
        start = time.process_time()
        model.learn(steps)
        train_rate = model.num_timesteps / (time.process_time() - start)
        steps_per_update = update_s = None
        if not on_policy:
            steps_per_update = model.num_timesteps / model._n_updates if model._n_updates else float("inf")
            start = time.process_time()
            model.train(gradient_steps=UPDATE_REPEATS, batch_size=model.batch_size)
            update_s = (time.process_time() - start) / UPDATE_REPEATS
        venv.close()
    return TrainingBenchRow(algo, env_id, prior, n_envs, env_rate, train_rate, steps_per_update, update_s)


def run_training_bench(steps: int = 2048, configs: tuple[tuple[str, str], ...] = CONFIGS,
                       algos: tuple[str, ...] = ALGOS) -> list[TrainingBenchRow]:
    """Every algorithm on every configuration, ``steps`` environment steps per measurement."""
    return [measure(algo, env_id, prior, steps) for env_id, prior in configs for algo in algos]


def format_training_bench(rows: list[TrainingBenchRow]) -> str:
    """A plain-text table of the rows with the targets."""
    def optional(value: float | None, spec: str, width: int) -> str:
        return f"{value:>{width}{spec}}" if value is not None else f"{'-':>{width}}"

    lines = [f"{'algo':<5} {'environment':<26} {'prior':<12} {'envs':>4} {'env steps/s':>11} "
             f"{'train steps/s':>13} {'/ env':>7} {'steps/update':>12} {'update ms':>9} {'needed':>7}"]
    for r in rows:
        update_ms = r.update_s * 1e3 if r.update_s is not None else None
        lines.append(f"{r.algo:<5} {r.env_id:<26} {r.prior:<12} {r.n_envs:>4} {r.env_steps_per_s:>11.0f} "
                     f"{r.train_steps_per_s:>13.0f} {r.ratio:>7.2f} {optional(r.steps_per_update, '.1f', 12)} "
                     f"{optional(update_ms, '.2f', 9)} {optional(r.steps_per_update_for_target, '.0f', 7)}")
    lines.append("steps/s = environment steps per CPU second of this process (DummyVecEnv, one torch thread, as "
                 "upright train); env = the same vector env with zero actions; SAC with learning_starts=0. "
                 f"Targets: / env >= {TARGET_RATIO}, train >= {TARGET_RATE:.0f} steps/s. Off-policy: steps/update = "
                 "environment steps per gradient step in the run, update ms = one gradient step alone (CPU), needed = "
                 f"the fewest environment steps per gradient step that could reach / env >= {TARGET_RATIO} at that cost.")
    return "\n".join(lines)


__all__ = ["ALGOS", "CONFIGS", "TARGET_RATE", "TARGET_RATIO", "UPDATE_REPEATS", "TrainingBenchRow", "format_training_bench",
           "measure", "run_training_bench"]
