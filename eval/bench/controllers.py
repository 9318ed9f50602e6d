"""Compute cost of the baseline controllers against the environment step, measured side by side:
``upright experiment controller-bench`` (every baseline) and ``upright experiment spline-bench``
(the spline stand-up with its IK work).

Each episode runs through the shared runner with :class:`TimedController` as the policy: every
control cycle times the controller's ``step`` (its ``reset`` counts to the first cycle) with
``time.perf_counter``, and the observer :class:`CycleTimes` times the environment's ``step``
(servo model, physics substeps, sensors, reward, metrics) from the end of the policy's ``act`` to
the observer's ``on_step`` (the runner's bookkeeping in between costs well under 1 µs), in the
same process and run, so a slower or faster machine moves both. This is what a baseline costs as a
policy or as a prior (``prior=NAME`` calls the same ``step`` inside the environment step).

With ``--set repeats=R`` each episode runs R times (same seed: the same cycles, the same work) and
every cycle keeps its smallest time of the R, for the controller and the environment alike:
preemptions and other processes inflate single cycles at random, the minimum over identical
repeats removes most of that (``timeit``'s rule).

``controller-bench``: one episode per baseline, robot and start in its task's environment for
``seconds`` (20 s, the environments' own episode; get-up: from ``prone`` and from ``supine``, a
failing controller's retries included; walk: from standing at ``command``, default 0.2 m/s
forward). Reported: the controller's time per cycle (mean, median, 95th percentile, worst), the
environment step's mean and median, and their ratios (mean / mean, median / median, worst / mean).

``spline-bench``: the spline stand-up per robot from prone and supine, with what the controller
solved (:class:`SplineWork`: IK samples, cycles that solved at least one, tries) and its time per
cycle amortised over the whole episode and over the motion (the cycles up to the first
``finished``; a failed try's cycles count). Planning is included everywhere: the controller solves
the IK of its joint trajectory one sample ahead of the motion inside the control cycles.

    upright experiment controller-bench --set repeats=3 --out results/controller_bench
    upright experiment spline-bench --set repeats=5 --out results/spline_bench
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from upright.baselines import baseline_entry, controller_names
from upright.envs.registration import env_id
from upright.envs.robots import ROBOT_NAMES
from upright.eval.experiments import ExperimentContext, register_experiment
from upright.eval.runner import Observer
from upright.eval.tables import Column, Table
from upright.policies.base import Policy
from upright.policies.builtin import ControllerPolicy

GETUP_STARTS = ("prone", "supine")


class TimedController(ControllerPolicy):
    """A :class:`ControllerPolicy` that times its controller: ``controller_seconds`` holds, per
    cycle of the current episode, the seconds of the controller's ``step`` (the first cycle also
    its ``reset``); ``acted_at`` is the ``perf_counter`` time at the end of the last ``act``."""

    def reset(self, env: gym.Env, seed: int | None) -> None:
        super().reset(env, seed)
        self._timed_env = env.unwrapped
        self._timed_seed = seed
        self._running = False
        self.controller_seconds: list[float] = []
        self.acted_at = 0.0

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        controller, sensors = self.controller, info["sensors"]
        if not self._running and "command" in info and hasattr(controller, "set_command"):
            controller.set_command(np.array(info["command"], dtype=float))
        t0 = time.perf_counter()
        if not self._running:
            controller.reset(sensors, np.random.default_rng(self._timed_seed))
            self._running = True
        targets = controller.step(sensors)
        self.controller_seconds.append(time.perf_counter() - t0)
        action = self._timed_env.action_from_targets(targets)
        self.acted_at = time.perf_counter()
        return action


class CycleTimes(Observer):
    """The environment step's seconds per cycle (from the end of a :class:`TimedController`'s
    ``act`` to this hook): the record gets ``controller_seconds`` and ``env_seconds`` (lists, one
    per cycle)."""

    def on_reset(self, env: gym.Env, policy: Policy, info: dict[str, Any]) -> None:
        self._env_seconds: list[float] = []

    def on_step(self, env: gym.Env, policy: Policy, action: np.ndarray, info: dict[str, Any]) -> None:
        self._env_seconds.append(time.perf_counter() - policy.acted_at)

    def on_episode_end(self, env: gym.Env, policy: Policy, record: dict[str, Any]) -> dict[str, Any]:
        return {"controller_seconds": list(policy.controller_seconds), "env_seconds": self._env_seconds}


class SplineWork(Observer):
    """The spline stand-up's work per cycle, read after each step: ``ik_samples`` solved (legs and
    arms, over every try), ``solving_cycles`` (cycles that solved at least one), ``tries`` and
    ``motion_cycles`` (cycles up to the first ``finished``; None when it never finished)."""

    def on_reset(self, env: gym.Env, policy: Policy, info: dict[str, Any]) -> None:
        self._tries, self._solved, self._samples, self._solving = 0, 0, 0, 0
        self._cycles, self._motion = 0, None

    def on_step(self, env: gym.Env, policy: Policy, action: np.ndarray, info: dict[str, Any]) -> None:
        controller = policy.controller
        solved = controller.legs.solved + controller.arms.solved
        new = solved - (self._solved if controller.tries == self._tries else 0)  # a new try starts from 0
        self._samples += new
        self._solving += new > 0
        self._tries, self._solved = controller.tries, solved
        self._cycles += 1
        if self._motion is None and controller.status == "finished":
            self._motion = self._cycles

    def on_episode_end(self, env: gym.Env, policy: Policy, record: dict[str, Any]) -> dict[str, Any]:
        return {"ik_samples": self._samples, "solving_cycles": self._solving, "tries": self._tries,
                "motion_cycles": self._motion}


def cycle_minimum(runs: Sequence[dict[str, Any]], what: str) -> tuple[np.ndarray, np.ndarray]:
    """Per cycle, the smallest controller and environment time (s) over identical runs (records
    with ``controller_seconds`` and ``env_seconds``); ``what`` names them in the error when the runs
    differ in length (not deterministic)."""
    if not runs:
        raise ValueError("cycle_minimum needs at least one run")
    if any(len(r["controller_seconds"]) != len(runs[0]["controller_seconds"]) for r in runs):
        raise RuntimeError(f"{what}: the repeats differ (not deterministic), cannot take minima")
    return (np.min([r["controller_seconds"] for r in runs], axis=0),
            np.min([r["env_seconds"] for r in runs], axis=0))


def timing_summary(ctrl: np.ndarray, step: np.ndarray) -> dict[str, float]:
    """Controller and environment times per cycle (µs) and their ratios, from per-cycle seconds."""
    env_mean = float(step.mean())
    return {"cycles": int(ctrl.size),
            "ctrl_mean_us": 1e6 * float(ctrl.mean()), "ctrl_median_us": 1e6 * float(np.median(ctrl)),
            "ctrl_p95_us": 1e6 * float(np.percentile(ctrl, 95)), "ctrl_max_us": 1e6 * float(ctrl.max()),
            "env_mean_us": 1e6 * env_mean, "env_median_us": 1e6 * float(np.median(step)),
            "ratio_mean": float(ctrl.mean()) / env_mean, "ratio_median": float(np.median(ctrl) / np.median(step)),
            "ratio_worst": float(ctrl.max()) / env_mean}


def check_repeats(repeats: Any) -> int:
    """``repeats`` if it is a positive integer; ValueError naming it otherwise."""
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    return repeats


def timed_runs(ctx: ExperimentContext, controller: str, robot: str, env_kwargs: dict[str, Any], repeats: int,
               observers: Sequence[Observer] = ()) -> list[dict[str, Any]]:
    """``repeats`` identical episodes (seed ``--seed``) of ``controller`` on ``robot`` in its task's
    environment with ``env_kwargs``: their records, with the per-cycle times."""
    task = baseline_entry(controller).task
    return [ctx.run(env_id(robot, task), TimedController(controller), env_kwargs, 1,
                    observers=[CycleTimes(), *observers]).records[0] for _ in range(check_repeats(repeats))]


def _slashed(digits: int = 0, percent: bool = False) -> Any:
    """A format for a list of numbers as ``a / b / c`` (``percent``: fractions as % with one
    decimal, the last, a worst case, with none)."""
    def cell(values: Sequence[float] | None) -> str:
        if values is None:
            return "—"
        if percent:
            return " / ".join([*(f"{100 * v:.1f} %" for v in values[:-1]), f"{100 * values[-1]:.0f} %"])
        return " / ".join(f"{v:.{digits}f}" for v in values)

    return cell


def _one_episode(ctx: ExperimentContext, name: str) -> None:
    """Benchmarks time one episode per row (``repeats`` runs it again); ``--episodes`` does not apply."""
    if ctx.episodes not in (None, 1):
        raise ValueError(f"{name} times one episode per row (use --set repeats=R); --episodes {ctx.episodes} "
                         "does not apply")


def _repeats_note(repeats: int) -> str:
    return f"Times per cycle: minimum over {repeats} identical runs." if repeats > 1 else "Times per cycle: single run."


@register_experiment("controller-bench", "every baseline's compute per control cycle against the env step",
                     options={"controllers": (), "robots": (), "seconds": 20.0, "repeats": 1,
                              "command": (0.2, 0.0, 0.0), "conditions": "lab"})
def controller_bench(ctx: ExperimentContext) -> list[Table]:
    """``--set controllers=keyframe,lipm robots=nao seconds=20 repeats=3 command=0.2,0,0``."""
    _one_episode(ctx, "controller-bench")
    o = ctx.options
    repeats = check_repeats(o["repeats"])
    rows = []
    robots = ctx.option_names("robots", ROBOT_NAMES) or ROBOT_NAMES
    cells = [(name, entry, robot, start)
             for name in ctx.option_names("controllers", controller_names()) or controller_names()
             for entry in [baseline_entry(name)] for robot in robots if robot in entry.robots
             for start in (GETUP_STARTS if entry.task == "getup" else (None,))]
    ctx.plan(len(cells) * repeats)
    for name, entry, robot, start in cells:
        kwargs: dict[str, Any] = {"conditions": o["conditions"], "max_episode_seconds": float(o["seconds"])}
        if entry.task == "walk":
            kwargs["command"] = tuple(float(v) for v in o["command"])
        else:
            kwargs["start"] = start
        runs = timed_runs(ctx, name, robot, kwargs, repeats)
        ctrl, step = cycle_minimum(runs, f"{name} {robot} {start or 'walk'}")
        rows.append({"controller": name, "robot": robot, "task": entry.task, "start": start or "standing",
                     "repeats": repeats, **timing_summary(ctrl, step)})
    ctx.data["rows"] = rows
    shown = [{"controller": r["controller"], "robot": r["robot"], "start": r["start"],
              "controller_us": [r["ctrl_mean_us"], r["ctrl_median_us"], r["ctrl_p95_us"], r["ctrl_max_us"]],
              "env_us": [r["env_mean_us"], r["env_median_us"]],
              "ratios": [r["ratio_mean"], r["ratio_median"], r["ratio_worst"]]} for r in rows]
    return [Table("Controller compute per cycle against the environment step",
                  [Column("controller", "controller"), Column("robot", "robot"), Column("episode", "start"),
                   Column("controller per cycle: mean / median / p95 / worst (µs)", "controller_us", _slashed()),
                   Column("env step mean / median (µs)", "env_us", _slashed()),
                   Column("controller / env step: mean / median / worst", "ratios", _slashed(percent=True))],
                  shown, notes=_repeats_note(repeats))]


@register_experiment("spline-bench", "the spline stand-up's compute per cycle and IK work against the env step",
                     options={"robots": (), "seconds": 20.0, "repeats": 1, "conditions": "lab"})
def spline_bench(ctx: ExperimentContext) -> list[Table]:
    """``--set robots=wolfgang seconds=20 repeats=5 conditions=lab``; starts prone and supine."""
    _one_episode(ctx, "spline-bench")
    o = ctx.options
    repeats = check_repeats(o["repeats"])
    rows = []
    robots = ctx.option_names("robots", ROBOT_NAMES) or ROBOT_NAMES
    ctx.plan(len(robots) * len(GETUP_STARTS) * repeats)
    for robot in robots:
        for start in GETUP_STARTS:
            kwargs = {"start": start, "conditions": o["conditions"], "max_episode_seconds": float(o["seconds"])}
            runs = timed_runs(ctx, "spline", robot, kwargs, repeats, observers=[SplineWork()])
            if any(r["ik_samples"] != runs[0]["ik_samples"] for r in runs):
                raise RuntimeError(f"{robot} {start}: the repeats differ (not deterministic), cannot take minima")
            c, s = cycle_minimum(runs, f"{robot} {start}")
            first = runs[0]
            motion = c[: first["motion_cycles"] or len(c)]
            summary = timing_summary(c, s)
            rows.append({"robot": robot, "start": start, "conditions": o["conditions"], "repeats": repeats, **summary,
                         "motion_cycles": int(motion.size), "tries": first["tries"], "ik_samples": first["ik_samples"],
                         "solving_cycles": first["solving_cycles"], "ctrl_motion_mean_us": 1e6 * float(motion.mean()),
                         "ratio_episode": summary["ratio_mean"], "ratio_motion": float(motion.mean()) / float(s.mean()),
                         "success": bool(first["success"])})
    ctx.data["rows"] = rows
    shown = [{"robot": r["robot"], "start": r["start"], "conditions": r["conditions"], "tries": r["tries"],
              "cycles": f"{r['cycles']} ({r['motion_cycles']})",
              "ik": f"{r['ik_samples']} ({r['solving_cycles']})", "success": "yes" if r["success"] else "no",
              "controller_us": [r["ctrl_mean_us"], r["ctrl_motion_mean_us"], r["ctrl_median_us"], r["ctrl_p95_us"],
                                r["ctrl_max_us"]],
              "env_us": [r["env_mean_us"], r["env_median_us"]],
              "ratios": [r["ratio_episode"], r["ratio_motion"], r["ratio_median"], r["ratio_worst"]]} for r in rows]
    return [Table("Spline stand-up compute per cycle against the environment step",
                  [Column("robot", "robot"), Column("start", "start"), Column("conditions", "conditions"),
                   Column("cycles (motion)", "cycles"), Column("tries", "tries"),
                   Column("IK samples (cycles solving)", "ik"), Column("stood up", "success"),
                   Column("controller per cycle: mean episode / mean motion / median / p95 / worst (µs)",
                          "controller_us", _slashed()),
                   Column("env step mean / median (µs)", "env_us", _slashed()),
                   Column("controller / env step: episode / motion / medians / worst", "ratios",
                          _slashed(percent=True))],
                  shown, notes=_repeats_note(repeats))]
