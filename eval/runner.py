"""The one episode runner: evaluation episodes in parallel worker processes, with a progress bar
and observers.

Episode ``i`` of a run is seeded ``seed + i`` (environment and policy), so its result does not
depend on the number of workers or on which worker ran it. Each worker builds the environment and
the policy once and reuses them for its episodes. Ctrl-C stops the run and keeps the episodes that
had finished (``EvalRun.interrupted``).

Everything that runs episodes (``upright eval``, ``upright video``, ``upright report``, the
protocols of :mod:`upright.eval.experiments`) goes through :func:`run_episodes`; what a protocol
measures beyond the environment's ``episode_metrics`` it measures with an :class:`Observer`.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm import tqdm

from upright.envs.conditions import PRESETS, Conditions
from upright.policies.base import Policy
from upright.policies.builtin import ControllerPolicy
from upright.policies.registry import load_policy

#: An environment wrapper: a picklable callable ``env -> env``.
Wrap = Callable[[gym.Env], gym.Env]


class Observer:
    """Watches the episodes of a run and adds fields to their records; the hooks do nothing by
    default, so a subclass defines only the ones it needs.

    An observer must be picklable: every worker process gets its own copy (with ``workers=1`` the
    run uses the object itself). It keeps per-episode state (reset it in :meth:`on_reset`) and
    hands its results back only through :meth:`on_episode_end`. ``policy`` is the episode's
    :class:`~upright.policies.base.Policy` after its ``reset`` (for example a
    :class:`~upright.policies.builtin.ControllerPolicy` whose ``controller`` can be read).
    """

    def on_reset(self, env: gym.Env, policy: Policy, info: dict[str, Any]) -> None:
        """Called once per episode after ``env.reset`` and ``policy.reset``; ``info`` is the
        reset's info."""

    def on_step(self, env: gym.Env, policy: Policy, action: np.ndarray, info: dict[str, Any]) -> bool | None:
        """Called after every ``env.step(action)`` with the step's ``info``. Return True to end
        the episode now (its record then has ``stopped: True`` and no ``episode_metrics``)."""
        return None

    def on_episode_end(self, env: gym.Env, policy: Policy, record: dict[str, Any]) -> dict[str, Any]:
        """Called once at the end of an episode with its record so far; returns the fields to add
        to it (the default: none)."""
        return {}


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
    """One environment, one policy and the observers, reused for every episode a process runs."""

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], policy: str | Policy, seed: int,
                 observers: Sequence[Observer], wrappers: Sequence[Wrap]) -> None:
        self.env = gym.make(env_id, **env_kwargs)
        for wrap in wrappers:
            self.env = wrap(self.env)
        self.policy = load_policy(policy) if isinstance(policy, str) else policy
        self.seed = seed
        self.observers = tuple(observers)

    def run(self, index: int) -> dict[str, Any]:
        """Episode ``index`` (seed ``seed + index``): ``episode``, ``seed``, ``task`` (``getup`` or
        ``walk``), ``steps`` and ``return`` (the undiscounted sum of rewards), the environment's
        ``episode_metrics`` (unless an observer stopped the episode: then ``stopped: True``) and
        the observers' fields."""
        seed = self.seed + index
        observation, info = self.env.reset(seed=seed)
        self.policy.reset(self.env, seed)
        for observer in self.observers:
            observer.on_reset(self.env, self.policy, info)
        total, steps = 0.0, 0
        record: dict[str, Any] = {"episode": index, "seed": seed, "task": self.env.unwrapped.task}
        while True:
            action = self.policy.act(observation, info)
            observation, reward, terminated, truncated, info = self.env.step(action)
            total += float(reward)
            steps += 1
            stop = [observer.on_step(self.env, self.policy, action, info) for observer in self.observers]
            if terminated or truncated:
                record |= {"steps": steps, "return": total, **info["episode_metrics"]}
                break
            if any(stop):
                record |= {"steps": steps, "return": total, "stopped": True}
                break
        for observer in self.observers:
            record.update(observer.on_episode_end(self.env, self.policy, dict(record)))
        return record

    def close(self) -> None:
        self.policy.close()
        self.env.close()


_worker: _Episodes | None = None
#: Why this worker process could not set up its episodes (then every task fails with it).
_worker_error: str | None = None


def _init_worker(setup: bytes) -> None:
    """Set up a worker process from the pickled ``(env_id, env_kwargs, policy, seed, observers,
    wrappers)``: Ctrl-C is the parent's business; one BLAS/torch thread each. The arguments arrive
    pickled and are unpickled here, so that a failure (a policy class the worker cannot import, an
    environment that does not build) fails the run's tasks instead of killing the process, which
    the pool would restart for ever."""
    global _worker, _worker_error
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        _worker = _Episodes(*pickle.loads(setup))
    except Exception as error:  # reported by every task of this worker
        _worker_error = f"{type(error).__name__}: {error}"


def _run_in_worker(index: int) -> dict[str, Any]:
    if _worker is None:
        raise RuntimeError(f"a worker process could not set up its episodes: {_worker_error}")
    return _worker.run(index)


def resolve_policy(name: str, params: Mapping[str, Any] | None = None, label: str | None = None) -> str | Policy:
    """The policy ``name`` with controller parameter overrides ``params`` (dotted keys, e.g. from
    ``--set params.KEY=VALUE``): a baseline becomes a
    :class:`~upright.policies.builtin.ControllerPolicy` (named ``label`` in the results, default
    ``name``); without overrides or label any name is returned as it is (loaded by the runner). A
    policy that is no controller takes no overrides (ValueError naming it)."""
    from upright.baselines import controller_names

    if not params and label is None:
        return name
    if name not in controller_names():
        raise ValueError(f"policy {name!r} is no controller and takes no params, got {dict(params or {})}")
    return ControllerPolicy(name, params=dict(params) if params else None, label=label)


def conditions_label(conditions: Conditions) -> str | dict[str, Any]:
    """The preset name of ``conditions``, or its fields (and class) when it is no preset, as
    :meth:`Conditions.to_dict <upright.envs.conditions.Conditions.to_dict>` writes them."""
    return next((name for name, preset in PRESETS.items() if preset == conditions), None) or conditions.to_dict()


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
    observers: Sequence[Observer] = (),
    wrappers: Sequence[Wrap] = (),
) -> EvalRun:
    """Run ``episodes`` episodes of ``policy`` (a name, an SB3 ``.zip`` or a picklable
    :class:`Policy`) in ``gym.make(env_id, **env_kwargs)`` on ``workers`` processes (1 = in this
    process), watched by ``observers`` (see :class:`Observer`). ``wrappers`` are picklable callables
    ``env -> env`` applied in order after ``gym.make`` (e.g. a ``gym.Wrapper`` subclass). Bad names
    and arguments fail here, before any worker starts."""
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes!r}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers!r}")
    check_env_id(env_id)
    env_kwargs = dict(env_kwargs or {})
    local = _Episodes(env_id, env_kwargs, policy, seed, observers, wrappers)  # validates the arguments
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
            try:
                setup = pickle.dumps((env_id, env_kwargs, policy, seed, tuple(observers), tuple(wrappers)))
            except (pickle.PicklingError, AttributeError, TypeError) as error:
                raise ValueError(f"workers > 1 need a picklable policy, observers and wrappers: {error}") from None
            pool = context.Pool(min(workers, episodes), _init_worker, (setup,))
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


__all__ = ["EvalRun", "Observer", "Wrap", "check_env_id", "conditions_label", "resolve_policy", "run_episodes"]
