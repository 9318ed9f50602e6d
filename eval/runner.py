"""Run evaluation episodes, in parallel worker processes, with a progress bar.

Episode ``i`` of a run is seeded ``seed + i`` (environment and policy), so its result does not
depend on the number of workers or on which worker ran it. Each worker builds the environment and
the policy once and reuses them for its episodes. Ctrl-C stops the run and keeps the episodes that
had finished (``EvalRun.interrupted``).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from dataclasses import asdict, dataclass, field
from typing import Any

import gymnasium as gym
from tqdm import tqdm

from upright.envs.conditions import PRESETS, Conditions

from upright.policies.base import Policy
from upright.policies.registry import load_policy


@dataclass(frozen=True)
class EvalRun:
    """What :func:`run_episodes` ran and the per-episode records it got, ordered by episode."""

    env_id: str
    policy: str
    env_kwargs: dict[str, Any]
    #: The episodes' conditions: a preset name, or the fields of a custom ``Conditions``.
    conditions: str | dict[str, Any]
    seed: int
    episodes_requested: int
    records: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False


class _Episodes:
    """One environment and one policy, reused for every episode a process runs."""

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], policy: str | Policy, seed: int) -> None:
        self.env = gym.make(env_id, **env_kwargs)
        self.policy = load_policy(policy) if isinstance(policy, str) else policy
        self.seed = seed

    def run(self, index: int) -> dict[str, Any]:
        """Episode ``index`` (seed ``seed + index``): its ``episode_metrics`` plus ``episode``,
        ``seed``, ``steps`` and ``return`` (the undiscounted sum of rewards)."""
        seed = self.seed + index
        observation, info = self.env.reset(seed=seed)
        self.policy.reset(self.env, seed)
        total, steps = 0.0, 0
        while True:
            action = self.policy.act(observation, info)
            observation, reward, terminated, truncated, info = self.env.step(action)
            total += float(reward)
            steps += 1
            if terminated or truncated:
                break
        return {"episode": index, "seed": seed, "steps": steps, "return": total, **info["episode_metrics"]}

    def close(self) -> None:
        self.policy.close()
        self.env.close()


_worker: _Episodes | None = None


def _init_worker(env_id: str, env_kwargs: dict[str, Any], policy: str | Policy, seed: int) -> None:
    """Set up a worker process: Ctrl-C is the parent's business; one BLAS/torch thread each."""
    global _worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ["OMP_NUM_THREADS"] = "1"
    _worker = _Episodes(env_id, env_kwargs, policy, seed)


def _run_in_worker(index: int) -> dict[str, Any]:
    assert _worker is not None, "worker not initialised"
    return _worker.run(index)


def conditions_label(conditions: Conditions) -> str | dict[str, Any]:
    """The preset name of ``conditions``, or its fields when it is no preset."""
    return next((name for name, preset in PRESETS.items() if preset == conditions), None) or asdict(conditions)


def check_env_id(env_id: str) -> None:
    """Raise a ValueError naming ``env_id`` and listing the upright environments if it is unknown."""
    import upright  # noqa: F401  (registers the environments)

    if env_id not in gym.registry:
        valid = ", ".join(sorted(k for k in gym.registry if k.startswith("upright/")))
        raise ValueError(f"unknown environment {env_id!r}; valid environments: {valid}")


def run_episodes(
    env_id: str,
    policy: str | Policy,
    episodes: int,
    *,
    env_kwargs: dict[str, Any] | None = None,
    seed: int = 0,
    workers: int = 1,
    progress: bool = True,
) -> EvalRun:
    """Run ``episodes`` episodes of ``policy`` (a name, an SB3 ``.zip`` or a picklable
    :class:`Policy`) in ``gym.make(env_id, **env_kwargs)`` on ``workers`` processes (1 = in this
    process). Bad names and arguments fail here, before any worker starts."""
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes!r}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers!r}")
    check_env_id(env_id)
    env_kwargs = dict(env_kwargs or {})
    local = _Episodes(env_id, env_kwargs, policy, seed)  # validates the arguments and the policy
    name = policy if isinstance(policy, str) else policy.name
    conditions = conditions_label(local.env.unwrapped.sim.conditions)
    records: list[dict[str, Any]] = []
    interrupted = False
    bar = tqdm(total=episodes, desc=f"{env_id} · {name}", unit="episode", disable=not progress)
    pool = None
    finished = False
    try:
        if workers == 1:
            results = map(local.run, range(episodes))
        else:
            local.close()
            context = multiprocessing.get_context("spawn")
            pool = context.Pool(min(workers, episodes), _init_worker, (env_id, env_kwargs, policy, seed))
            results = pool.imap_unordered(_run_in_worker, range(episodes))
        for record in results:
            records.append(record)
            bar.update()
        finished = True
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bar.close()
        if pool is None:
            local.close()
        elif finished:
            pool.close()
            pool.join()
        else:  # interrupted or an episode failed: stop the episodes still running
            pool.terminate()
            pool.join()
    records.sort(key=lambda r: r["episode"])
    return EvalRun(env_id, name, env_kwargs, conditions, seed, episodes, records, interrupted)


__all__ = ["EvalRun", "check_env_id", "conditions_label", "run_episodes"]
