"""``upright export --measure``: the shipped exports (``policies/zoo/NAME/onnx/``) against the SB3
policies they were exported from, written to ``OUT/results.md`` (and ``docs/results/export.md``
with ``--docs``):

- **parity**: on every observation of whole episodes from the held-out seed
  (:data:`~upright.training.export.HELD_OUT_SEED`, at least ``observations`` per policy, the SB3
  policy acting under the policy's own conditions), the largest difference between the action of
  the ONNX graph (one call per observation, as on a robot) and the SB3 policy's deterministic action;
- **episodes**: ``onnx:DIR`` and the SB3 policy through the one runner on the same held-out seeds:
  success, stood-up and fall counts side by side, and how many episodes ended differently from the
  SB3 policy's; beside them the SB3 policy with every action moved by one float32 unit in the last
  place (:class:`Nudged`), a change of the size of the parity differences, which shows how many
  episodes rounding alone turns;
- **time per call** on one thread (onnxruntime; SB3 with one torch thread for comparison; the
  prior's own ``step`` per cycle), median and 99th percentile, against the control period.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from upright.eval.results import aggregate
from upright.eval.runner import Observer, run_episodes
from upright.eval.tables import Column, Table, number, write_tables
from upright.policies.base import Policy
from upright.policies.onnx_policy import ONNX_PREFIX, ExportedActor, export_env
from upright.policies.registry import load_policy
from upright.policies.run import ZOO_PREFIX, load_run_policy, zoo_names
from upright.training.export import HELD_OUT_SEED, Recorder, zoo_export_dir

#: Calls left out of the timings at the start of each measurement (the first calls allocate).
WARM_UP = 20


class Nudged(Policy):
    """The policy ``name`` with every action moved by one float32 unit in the last place towards
    +inf. Loaded on its first ``reset``, so that only the name travels to a worker process."""

    def __init__(self, name: str) -> None:
        self.policy_name = name
        self.name = f"{name} +1 ulp"
        self.policy: Policy | None = None

    def reset(self, env: gym.Env, seed: int | None) -> None:
        if self.policy is None:
            self.policy = load_policy(self.policy_name)
        self.policy.reset(env, seed)

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        assert self.policy is not None, "reset() first"
        return np.nextafter(self.policy.act(observation, info), np.float32(np.inf))


class _PriorTimer(Observer):
    """Times every ``step`` of the environment's prior (s per cycle), by wrapping the prior's own
    method for the episode."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def on_reset(self, env: gym.Env, policy: Policy, info: dict[str, Any]) -> None:
        prior = env.unwrapped.prior
        step = type(prior).step

        def timed(sensors: Any) -> np.ndarray:
            start = time.perf_counter()
            targets = step(prior, sensors)
            self.seconds.append(time.perf_counter() - start)
            return targets

        prior.step = timed


def _timed(call: Callable[[np.ndarray], np.ndarray], observations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``call`` on each observation alone: the actions and the seconds of each call."""
    actions, seconds = [], []
    for observation in observations:
        start = time.perf_counter()
        actions.append(call(observation))
        seconds.append(time.perf_counter() - start)
    return np.stack(actions), np.asarray(seconds)


def _us(seconds: np.ndarray | list[float], q: float) -> float:
    """The ``q`` quantile of ``seconds`` after the warm-up, in µs."""
    return float(np.quantile(np.asarray(seconds)[WARM_UP:], q) * 1e6)


def _outcome(record: dict[str, Any]) -> tuple[Any, ...]:
    """What an episode's counts see of it: get-up success, stood up and falls; walk falls."""
    return (record.get("success"), record.get("stood_up"), record["falls"])


def measure_policy(name: str, *, episodes: int, observations: int, workers: int) -> dict[str, Any]:
    """The parity, episode and timing numbers of zoo policy ``name`` (see the module docstring)."""
    import torch  # torch: only when a model is built

    directory = zoo_export_dir(name)
    onnx_name = ONNX_PREFIX + str(directory)
    env_id, env_kwargs = export_env(onnx_name)
    sb3 = load_run_policy(ZOO_PREFIX + name)
    recorder, timer = Recorder(sb3), _PriorTimer()
    seed = HELD_OUT_SEED
    while len(recorder.observations) < observations:
        run_episodes(env_id, recorder, 1, env_kwargs=env_kwargs, seed=seed, progress=False, observers=[timer])
        seed += 1
    recorded = np.stack(recorder.observations)
    actor = ExportedActor(directory, threads=1)
    onnx_actions, onnx_seconds = _timed(actor, recorded)
    torch.set_num_threads(1)
    _, sb3_seconds = _timed(lambda observation: sb3.act(observation, {}), recorded)
    difference = np.abs(onnx_actions - np.stack(recorder.actions))
    runs = {label: run_episodes(env_id, policy, episodes, env_kwargs=env_kwargs, seed=HELD_OUT_SEED, workers=workers,
                                progress=False)
            for label, policy in (("onnx", onnx_name), ("sb3", ZOO_PREFIX + name),
                                  ("sb3 +1 ulp", Nudged(ZOO_PREFIX + name)))}
    differing = {label: sum(_outcome(a) != _outcome(b) for a, b in zip(run.records, runs["sb3"].records))
                 for label, run in runs.items()}
    period = actor.spec["timing"]["control_period_s"]
    return {
        "policy": name, "env": env_id, "control_period_ms": period * 1e3,
        "observations": len(recorded), "parity_episodes": seed - HELD_OUT_SEED, "seeds_from": HELD_OUT_SEED,
        "max_abs_difference": float(difference.max()), "mean_abs_difference": float(difference.mean()),
        "episodes": episodes, "differing_episodes": differing,
        "counts": {label: _counts(aggregate(run)) for label, run in runs.items()},
        "onnx_median_us": _us(onnx_seconds, 0.5), "onnx_p99_us": _us(onnx_seconds, 0.99),
        "sb3_median_us": _us(sb3_seconds, 0.5), "sb3_p99_us": _us(sb3_seconds, 0.99),
        "prior_median_us": _us(timer.seconds, 0.5), "prior_p99_us": _us(timer.seconds, 0.99),
        "onnx_p99_share_of_period": _us(onnx_seconds, 0.99) * 1e-6 / period,
    }


def _counts(result: dict[str, Any]) -> dict[str, Any]:
    """The counts of an aggregated run: get-up successes, stood up and falls; walk falls and
    episodes with a fall."""
    if result["task"] == "walk":
        return {"success": None, "stood_up": None, "falls": result["falls"]["total"],
                "episodes_with_fall": result["falls"]["episodes_with_fall"]}
    return {"success": result["successes"], "stood_up": result["stood_up"], "falls": result["falls"],
            "episodes_with_fall": None}


def measure(out: Path, *, episodes: int, observations: int, workers: int = 1, docs: bool = False,
            command: str | None = None, names: tuple[str, ...] | None = None) -> list[Path]:
    """Measure every shipped export (or those of ``names``) and write the tables; returns the
    paths written."""
    rows = [measure_policy(name, episodes=episodes, observations=observations, workers=workers)
            for name in (names or zoo_names())]
    episode_rows = [{"policy": row["policy"], "runtime": label, "episodes": row["episodes"], **counts,
                     "differing": row["differing_episodes"][label]}
                    for row in rows for label, counts in row["counts"].items()]
    us = number(0, "µs")
    tables = [
        Table("Action parity: ONNX graph against the SB3 policy's deterministic action",
              [Column("policy", "policy"), Column("observations", "observations"),
               Column("episodes", "parity_episodes"), Column("max abs Δ", "max_abs_difference", _sci),
               Column("mean abs Δ", "mean_abs_difference", _sci)], rows,
              f"Every observation of whole episodes on held-out seeds from {HELD_OUT_SEED} (episode i: seed + i), the "
              "SB3 policy acting under the policy's own conditions; the graph called once per observation (batch 1, "
              "onnxruntime, one thread). Δ: ONNX action minus SB3 action, in normalised action units (1 = the "
              "residual's full range). Required: below 1e-5."),
        Table("Episodes through the runner: onnx:DIR and the SB3 policy on the same seeds",
              [Column("policy", "policy"), Column("runtime", "runtime"), Column("episodes", "episodes"),
               Column("success", "success"), Column("stood up", "stood_up"), Column("falls", "falls"),
               Column("episodes with a fall", "episodes_with_fall"),
               Column("episodes ending unlike sb3's", "differing")], episode_rows,
              f"Seeds from {HELD_OUT_SEED}, the environment of each export's spec; an episode ends unlike the SB3 "
              "policy's when its success, stood-up or number of falls differs. Why one may: onnxruntime and torch add "
              "the float32 products in another order, so the actions differ in the last bits (the parity table), and "
              "a get-up or a stumble is chaotic (contacts, falls): a difference of 1e-7 can grow over hundreds of "
              "cycles into another outcome. `sb3 +1 ulp` is the SB3 policy with every action moved by one float32 "
              "unit in the last place, a change of that size made on purpose. Tolerance: onnx's counts are as far "
              "from sb3's as those of `sb3 +1 ulp` are (the same statistical noise), not exactly equal."),
        Table("Time per call, one thread",
              [Column("policy", "policy"), Column("control period", "control_period_ms", number(0, "ms")),
               Column("ONNX median", "onnx_median_us", us), Column("ONNX p99", "onnx_p99_us", us),
               Column("ONNX p99 / period", "onnx_p99_share_of_period", _percent),
               Column("SB3 median", "sb3_median_us", us), Column("SB3 p99", "sb3_p99_us", us),
               Column("prior median", "prior_median_us", us), Column("prior p99", "prior_p99_us", us)], rows,
              f"ONNX: ExportedActor on one observation (onnxruntime, one thread, conversion included); SB3: the "
              "policy's act (normalisation + predict, one torch thread); prior: its step per control cycle in the "
              f"parity episodes. The first {WARM_UP} calls of each are left out. On this machine's CPU, not the "
              "robot's: the ratios carry over, the microseconds do not."),
    ]
    return write_tables(tables, out, "export", command=command, data=rows,
                        docs=Path("docs", "results") if docs else None)


def _sci(value: float) -> str:
    return f"{value:.1e}"


def _percent(value: float) -> str:
    return f"{100 * value:.2f} %"


__all__ = ["WARM_UP", "measure", "measure_policy"]
