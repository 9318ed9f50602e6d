"""The soak (``upright soak``): random and extreme actions in every environment, under every
condition preset, from every start, with and without every prior, in episodes of random length;
counts what must never happen (exceptions, non-finite observations or rewards) and the physics
blow-ups (``info["sim_unstable"]``, which end an episode by design but each one is a model bug a
user could hit).

The episodes run through the one runner (:func:`~upright.eval.runner.run_episodes`), one run per
*cell* (environment × conditions × start × prior), with:

* :class:`SoakPolicy`: per episode (from its seed) one action mode of :data:`MODES` and a length
  (half the episodes run to the environment's own end, the others stop after a uniform number of
  steps);
* :class:`SoakWrapper`: catches any exception of ``reset`` or ``step`` (the episode ends and its
  record names the exception) and counts the non-finite observations and rewards;
* :class:`SoakObserver`: stops an episode at its length and adds the counts to its record.

Every cell gets ``steps / cells`` steps (more episodes are run until it has them), so each
environment gets at least ``steps`` steps. Episode ``i`` of a cell is seeded ``cell seed + i``;
a problem episode is reproduced with :func:`replay` from the ``env``, ``env_kwargs``, ``seed``
and ``cap`` of its entry in ``problems``.

    upright soak --steps 1000000 --workers 2 --out results/soak
"""

from __future__ import annotations

import json
import math
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from upright.baselines import baseline_entry, controller_names
from upright.envs.conditions import PRESETS, Conditions, Impulse, RandomWear
from upright.envs.getup import STARTS
from upright.envs.registration import ENVIRONMENTS
from upright.envs.robots import get_robot
from upright.eval.runner import Observer, run_episodes
from upright.eval.tables import Column, Table, jsonable, print_tables, write_tables
from upright.policies.base import Policy

#: Action modes, one drawn per episode: ``uniform`` U[-1, 1] every step; ``bang`` every component
#: ±1, redrawn every step (the hardest chatter a policy can send); ``held`` ±1 held for 5–50
#: steps; ``zero`` (the prior exactly, or mid-range targets); ``sine`` full-range sines of random
#: frequency (0.2–5 Hz) and phase per component.
MODES = ("uniform", "bang", "held", "zero", "sine")

#: Conditions beyond the presets: the terrains no preset uses, and everything at once, strongly.
EXTRA_CONDITIONS: dict[str, Conditions] = {
    "ramp": Conditions(terrain="ramp", ramp_tilt_deg=3.0),
    "obstacles": Conditions(terrain="obstacles"),
    "worst": Conditions(
        terrain="turf",
        push_force=100.0,
        push_reference_mass=7.5,
        impulses=(Impulse(1.0, (40.0, 0.0), 0.1), Impulse(4.0, (0.0, -40.0), 0.2), Impulse(8.0, (-80.0, 30.0), 0.05)),
        random_wear=RandomWear(p_worn=1.0, strength=(0.3, 1.0), play=(0.0, 0.05), lag=(0.0, 0.05), p_stuck=0.5,
                               stuck_start=(0.0, 10.0), stuck_duration=(0.2, 3.0)),
        delay_jitter_cycles=3,
        joint_noise=0.01,
        gyro_noise=0.05,
        accel_noise=0.25,
        mass_scale=(0.8, 1.2),
        com_offset=0.02,
        friction_scale=(0.4, 1.5),
    ),
}

#: Seeds of one cell: cell ``k`` starts at ``seed + k * CELL_SEEDS``.
CELL_SEEDS = 1_000_000
#: An episode record's problem flags and the :class:`CellResult` counter each adds to.
PROBLEM_COUNTS = {"exception": "exceptions", "nonfinite_obs": "nonfinite_obs",
                  "nonfinite_reward": "nonfinite_reward", "sim_unstable": "sim_unstable"}


def all_conditions() -> dict[str, Conditions]:
    """The presets and :data:`EXTRA_CONDITIONS`, by name."""
    return {**PRESETS, **EXTRA_CONDITIONS}


@dataclass(frozen=True)
class Cell:
    """One soak run: an environment and its keyword arguments (``conditions`` by name)."""

    env: str
    conditions: str
    start: str | None
    prior: str | None

    @property
    def name(self) -> str:
        parts = [self.env.split("/")[-1], self.conditions, self.start or "-", self.prior or "none"]
        return ":".join(parts)

    def env_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"conditions": all_conditions()[self.conditions]}
        if self.start is not None:
            kwargs["start"] = self.start
        if self.prior is not None:
            kwargs["prior"] = self.prior
        return kwargs


def cells(envs: Sequence[str] | None = None, conditions: Sequence[str] | None = None,
          starts: Sequence[str] | None = None, priors: Sequence[str] | None = None) -> list[Cell]:
    """Every cell (environment × conditions × start × prior, the priors being ``none`` and every
    baseline for the environment's robot and task), restricted to the names given (ValueError
    naming an unknown one)."""
    valid_conditions = all_conditions()
    valid_priors = ("none", *controller_names())
    for given, valid, what in ((envs, ENVIRONMENTS, "environment"), (conditions, valid_conditions, "conditions"),
                               (starts, STARTS, "start"), (priors, valid_priors, "prior")):
        unknown = [name for name in given or () if name not in valid]
        if unknown:
            raise ValueError(f"unknown {what} {', '.join(unknown)}; valid: {', '.join(valid)}")
    out = []
    for env in envs or ENVIRONMENTS:
        entry = ENVIRONMENTS[env]
        fits = [name for name in controller_names()
                if baseline_entry(name).task == entry.task and entry.robot in baseline_entry(name).robots]
        env_priors = [None, *fits]
        env_starts = STARTS if entry.task == "getup" else (None,)
        for c in conditions or valid_conditions:
            for start in env_starts:
                if starts and start not in starts:
                    continue
                for prior in env_priors:
                    if priors and (prior or "none") not in priors:
                        continue
                    out.append(Cell(env, c, start, prior))
    if not out:
        raise ValueError("no cell left after the filters")
    return out


class SoakPolicy(Policy):
    """Random and extreme actions; per episode (from its seed) one of :data:`MODES` and a length
    (:attr:`length` steps, None = to the environment's own end), at most ``cap`` steps."""

    name = "soak"

    def __init__(self, cap: int | None = None) -> None:
        self.cap = cap
        self.mode = MODES[0]
        self.length: int | None = None
        self._rng = np.random.default_rng()
        self._shape: tuple[int, ...] = ()
        self._t = 0
        self._held = np.zeros(0)
        self._switch = 0
        self._freq = self._phase = np.zeros(0)
        self._dt = 0.01

    def reset(self, env: gym.Env, seed: int | None) -> None:
        rng = self._rng = np.random.default_rng(seed)
        self._shape = env.action_space.shape
        self.mode = MODES[int(rng.integers(len(MODES)))]
        base = env.unwrapped
        self._dt = base.robot.control_period
        most = int(math.ceil(base.max_episode_seconds / self._dt))
        self.length = None if rng.random() < 0.5 else int(rng.integers(1, most + 1))
        if self.cap is not None:
            self.length = min(self.length or self.cap, self.cap)
        self._freq = rng.uniform(0.2, 5.0, self._shape)
        self._phase = rng.uniform(0.0, 2 * np.pi, self._shape)
        self._t = 0
        self._switch = 0

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        rng, shape = self._rng, self._shape
        self._t += 1
        if self.mode == "uniform":
            action = rng.uniform(-1.0, 1.0, shape)
        elif self.mode == "bang":
            action = rng.choice([-1.0, 1.0], shape)
        elif self.mode == "held":
            if self._t > self._switch:
                self._held = rng.choice([-1.0, 1.0], shape)
                self._switch = self._t + int(rng.integers(5, 51))
            action = self._held
        elif self.mode == "sine":
            action = np.sin(2 * np.pi * self._freq * self._t * self._dt + self._phase)
        else:
            action = np.zeros(shape)
        return np.asarray(action, dtype=np.float32)


class SoakWrapper(gym.Wrapper):
    """Counts the non-finite observations and rewards of an episode and turns an exception of
    ``reset`` or ``step`` into the end of the episode (``info["episode_metrics"]`` then holds
    ``exception``: its type, message and the last traceback line)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.error: str | None = None
        self.steps = 0
        self.nonfinite_obs = 0
        self.nonfinite_reward = 0

    @staticmethod
    def _describe(error: BaseException) -> str:
        frame = traceback.extract_tb(error.__traceback__)[-1]
        return f"{type(error).__name__}: {error} ({Path(frame.filename).name}:{frame.lineno})"

    def _count(self, observation: Any, reward: float | None = None) -> None:
        obs = np.asarray(observation)
        if obs.shape != self.observation_space.shape or not np.isfinite(obs).all():
            self.nonfinite_obs += 1
        if reward is not None and not math.isfinite(float(reward)):
            self.nonfinite_reward += 1

    def reset(self, **kwargs: Any):
        self.error, self.steps, self.nonfinite_obs, self.nonfinite_reward = None, 0, 0, 0
        try:
            observation, info = self.env.reset(**kwargs)
        except Exception as error:  # counted, reported with the episode's seed
            self.error = "reset: " + self._describe(error)
            return np.zeros(self.observation_space.shape, np.float32), {}
        self._count(observation)
        return observation, info

    def step(self, action: Any):
        if self.error is None:
            try:
                observation, reward, terminated, truncated, info = self.env.step(action)
            except Exception as error:
                self.error = "step: " + self._describe(error)
            else:
                self.steps += 1
                self._count(observation, reward)
                return observation, reward, terminated, truncated, info
        return (np.zeros(self.observation_space.shape, np.float32), 0.0, True, False,
                {"episode_metrics": {"exception": self.error}, "sim_unstable": False})


class SoakObserver(Observer):
    """Ends an episode after the :class:`SoakPolicy`'s length and adds to its record: ``mode``,
    ``length``, ``steps`` (the environment steps that ran), ``exception`` (None or its text),
    ``nonfinite_obs``, ``nonfinite_reward``, ``sim_unstable`` and ``time`` (s, simulated)."""

    def __init__(self) -> None:
        self.steps = 0
        self.unstable = False

    def on_reset(self, env: gym.Env, policy: Policy, info: dict[str, Any]) -> None:
        self.steps = 0
        self.unstable = False

    def on_step(self, env: gym.Env, policy: Policy, action: np.ndarray, info: dict[str, Any]) -> bool:
        self.steps += 1
        self.unstable = bool(info.get("sim_unstable", False))
        return policy.length is not None and self.steps >= policy.length

    def on_episode_end(self, env: gym.Env, policy: Policy, record: dict[str, Any]) -> dict[str, Any]:
        return {"mode": policy.mode, "length": policy.length, "steps": env.steps, "exception": env.error,
                "nonfinite_obs": env.nonfinite_obs, "nonfinite_reward": env.nonfinite_reward,
                "sim_unstable": self.unstable, "time": float(env.unwrapped.sim.time)}


@dataclass
class CellResult:
    """What a cell ran: episodes, steps, and its problem episodes (records with ``cell``, ``env``,
    ``env_kwargs``, ``seed``, ``cap``)."""

    cell: Cell
    episodes: int = 0
    steps: int = 0
    exceptions: int = 0
    nonfinite_obs: int = 0
    nonfinite_reward: int = 0
    sim_unstable: int = 0
    seconds: float = 0.0
    problems: list[dict[str, Any]] = field(default_factory=list)


def run_cell(cell: Cell, steps: int, *, seed: int = 0, workers: int = 1) -> tuple[CellResult, bool]:
    """Run ``cell`` until it has at least ``steps`` environment steps (episodes seeded ``seed``,
    ``seed + 1``, ...); returns its result and whether the run was interrupted (Ctrl-C)."""
    result = CellResult(cell)
    started = time.perf_counter()
    kwargs = cell.env_kwargs()
    policy = SoakPolicy(cap=steps)
    mean = None
    budget = 0  # steps, and one for an episode that ended before its first step (an exception)
    while budget < steps:
        left = steps - budget
        # The first batch guesses from the longest episode (half run to the end, half stop after a
        # uniform number of steps), the next ones from what they saw.
        guess = mean or 0.75 * _max_steps(cell)
        episodes = max(1, min(int(math.ceil(left / max(guess, 1.0))), 10_000))
        if workers > 1:
            episodes = max(episodes, workers)
        run = run_episodes(cell.env, policy, episodes, env_kwargs=kwargs, seed=seed + result.episodes,
                           workers=workers, progress=False, observers=[SoakObserver()], wrappers=[SoakWrapper])
        for record in run.records:
            result.episodes += 1
            result.steps += int(record["steps"])
            budget += max(int(record["steps"]), 1)
            what = [problem for problem in PROBLEM_COUNTS if record[problem]]
            for problem in what:
                counter = PROBLEM_COUNTS[problem]
                setattr(result, counter, getattr(result, counter) + 1)
            if what:
                result.problems.append({"cell": cell.name, "env": cell.env, "conditions": cell.conditions,
                                        "start": cell.start, "prior": cell.prior, "seed": record["seed"], "cap": steps,
                                        "what": what, **{k: record.get(k) for k in (
                                            "mode", "length", "steps", "time", "exception", "nonfinite_obs",
                                            "nonfinite_reward")}})
        if run.interrupted:
            result.seconds = time.perf_counter() - started
            return result, True
        mean = budget / max(result.episodes, 1)
    result.seconds = time.perf_counter() - started
    return result, False


def _max_steps(cell: Cell) -> float:
    robot = ENVIRONMENTS[cell.env].robot
    return 20.0 / get_robot(robot).control_period


def replay(problem: dict[str, Any]) -> dict[str, Any]:
    """Run the episode of a ``problems`` entry again (same cell, seed and cap) in this process and
    return its record (the same as in the soak: the episode is determined by its seed)."""
    cell = Cell(problem["env"], problem["conditions"], problem["start"], problem["prior"])
    run = run_episodes(cell.env, SoakPolicy(cap=problem["cap"]), 1, env_kwargs=cell.env_kwargs(),
                       seed=problem["seed"], progress=False, observers=[SoakObserver()], wrappers=[SoakWrapper])
    return run.records[0]


@dataclass
class SoakResult:
    """The cells' results, whether the soak was interrupted, and the settings it ran with."""

    cells: list[CellResult]
    interrupted: bool
    steps: int
    seed: int
    workers: int

    @property
    def failed(self) -> bool:
        """Whether anything that must never happen happened (an exception, a non-finite value)."""
        return any(c.exceptions or c.nonfinite_obs or c.nonfinite_reward for c in self.cells)


def check_soak(steps: int, *, workers: int = 1, seed: int = 0, envs: Sequence[str] | None = None,
               conditions: Sequence[str] | None = None, starts: Sequence[str] | None = None,
               priors: Sequence[str] | None = None) -> list[Cell]:
    """The cells of a :func:`soak` with these arguments; ValueError naming a count below one, a
    negative seed or an unknown name (checked before a soak writes anything)."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps!r}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers!r}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed!r}")
    return cells(envs, conditions, starts, priors)


def soak(steps: int, *, workers: int = 1, seed: int = 0, envs: Sequence[str] | None = None,
         conditions: Sequence[str] | None = None, starts: Sequence[str] | None = None,
         priors: Sequence[str] | None = None, progress: bool = True, log: Path | None = None) -> SoakResult:
    """At least ``steps`` steps per environment, split evenly over the cells (see :func:`cells`
    for the filters); cell ``k`` seeds its episodes from ``seed + k * CELL_SEEDS``. With ``log``
    (a file), every finished cell's counts and problem episodes are appended to it as one JSON
    line, so a long soak can be read while it runs."""
    todo = check_soak(steps, workers=workers, seed=seed, envs=envs, conditions=conditions, starts=starts,
                      priors=priors)
    per_env = {env: sum(c.env == env for c in todo) for env in {c.env for c in todo}}
    from tqdm import tqdm  # tqdm: only when progress is shown

    results: list[CellResult] = []
    interrupted = False
    bar = tqdm(total=len(todo), unit="cell", desc="soak", disable=not progress)
    try:
        for k, cell in enumerate(todo):
            bar.set_postfix_str(cell.name)
            result, interrupted = run_cell(cell, int(math.ceil(steps / per_env[cell.env])),
                                           seed=seed + k * CELL_SEEDS, workers=workers)
            results.append(result)
            if log is not None:
                with open(log, "a") as f:
                    f.write(json.dumps(jsonable(_cell_json(result) | {"problems": result.problems})) + "\n")
            bar.update()
            if interrupted:
                break
    finally:
        bar.close()
    return SoakResult(results, interrupted, steps, seed, workers)


def summary_rows(result: SoakResult) -> list[dict[str, Any]]:
    """One row per environment (and ``all``): cells, episodes, steps, the counts, wall seconds."""
    keys = ("episodes", "steps", "exceptions", "nonfinite_obs", "nonfinite_reward", "sim_unstable", "seconds")
    rows: dict[str, dict[str, Any]] = {}
    for c in result.cells:
        for name in (c.cell.env, "all"):
            row = rows.setdefault(name, {"env": name, "cells": 0, **{k: 0 for k in keys}})
            row["cells"] += 1
            for k in keys:
                row[k] += getattr(c, k)
    all_row = rows.pop("all", None)
    return [*sorted(rows.values(), key=lambda r: r["env"]), *([all_row] if all_row else [])]


def tables(result: SoakResult) -> list[Table]:
    """The summary table and the table of problem episodes."""
    note = " (interrupted)" if result.interrupted else ""
    summary = Table(
        f"Soak: random and extreme actions, at least {result.steps} steps per environment{note}",
        [Column("env", "env", lambda v: v.split("/")[-1]), Column("cells", "cells"),
         Column("episodes", "episodes"), Column("steps", "steps"), Column("exceptions", "exceptions"),
         Column("NaN obs", "nonfinite_obs"), Column("NaN reward", "nonfinite_reward"),
         Column("unstable", "sim_unstable"), Column("wall s", "seconds", lambda v: f"{v:.0f}")],
        summary_rows(result),
        notes=f"Cells: environment × conditions ({', '.join(all_conditions())}) × start × prior (none and every "
              f"baseline of the environment's task); action modes {', '.join(MODES)}; seed {result.seed}, "
              f"{result.workers} worker(s). Counts of episodes: NaN obs / NaN reward = with a non-finite "
              "observation / reward, unstable = ended by a physics blow-up (info['sim_unstable']).")
    problems = [p for c in result.cells for p in c.problems]
    listed = Table("Problem episodes (reproduce one with upright.eval.soak.replay)",
                   [Column("cell", "cell"), Column("seed", "seed"), Column("what", "what", lambda v: ", ".join(v)),
                    Column("mode", "mode"), Column("steps", "steps"),
                    Column("sim time (s)", "time", lambda v: f"{v:.2f}"),
                    Column("exception", "exception")], problems)
    return [summary, listed] if problems else [summary]


def _cell_json(c: CellResult) -> dict[str, Any]:
    return {"cell": c.cell.name, "episodes": c.episodes, "steps": c.steps, "exceptions": c.exceptions,
            "nonfinite_obs": c.nonfinite_obs, "nonfinite_reward": c.nonfinite_reward, "sim_unstable": c.sim_unstable,
            "seconds": c.seconds}


def write(result: SoakResult, out: Path, command: str | None = None, docs: Path | None = None) -> list[Path]:
    """``out/results.json`` (tables, every cell's counts and the problem episodes) and ``results.md``
    (and ``DOCS/soak.md``, the same page, with a ``docs`` folder, e.g. ``docs/results``)."""
    data = {"interrupted": result.interrupted, "steps_per_environment": result.steps, "seed": result.seed,
            "workers": result.workers,
            "cells": [_cell_json(c) for c in result.cells],
            "problems": [p for c in result.cells for p in c.problems]}
    return write_tables(tables(result), out, "soak", command=command, data=jsonable(data), docs=docs)


def print_result(result: SoakResult) -> None:
    """Print the tables."""
    print_tables(tables(result))


__all__ = ["CELL_SEEDS", "EXTRA_CONDITIONS", "MODES", "Cell", "CellResult", "SoakObserver", "SoakPolicy",
           "SoakResult", "SoakWrapper", "all_conditions", "cells", "check_soak", "print_result", "replay", "run_cell", "soak",
           "summary_rows", "tables", "write"]
