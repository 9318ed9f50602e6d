"""Compute cost of every baseline controller against the environment step, measured side by side.

Each registered baseline (``upright.baselines``) runs one episode per robot and start in its task's
environment for 20 s, the environments' own episode (get-up: from ``prone`` and from ``supine``,
a failing controller's retries included; walk: from standing at the command ``--command``,
default 0.2 m/s forward); every control cycle times the controller's ``step``
(``reset`` counts to the first cycle) and the environment's ``step`` (servo model, physics
substeps, sensors, reward, metrics) with ``time.perf_counter`` in the same process and run, so a
slower or faster machine moves both. This is what a baseline costs as a policy or as a prior
(``prior=NAME`` calls the same ``step`` inside the environment step).

With ``--repeats R`` each episode runs R times (same seed: the same cycles, the same work) and
every cycle keeps its smallest time of the R, for the controller and the environment alike:
preemptions and other processes inflate single cycles at random, the minimum over identical
repeats removes most of that (``timeit``'s rule).

Reported per episode: the controller's time per cycle (mean, median, 95th percentile, worst), the
environment step's mean and median, and their ratios (mean / mean, median / median, worst / mean).
Writes ``controller_bench.json`` and ``controller_bench.md`` under ``--out`` and prints the table::

    python -m upright.eval.controller_bench --repeats 3 --out results/controller_bench
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import upright  # noqa: F401  (registers the environments)
from upright.baselines import baseline_entry, controller_names, make_controller
from upright.envs.registration import env_id
from upright.envs.robots import ROBOT_NAMES, get_robot

GETUP_STARTS = ("prone", "supine")


def timed_episode(env_id: str, controller: Any, env_kwargs: dict[str, Any], seed: int,
                  after_step: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """One episode of ``controller`` (a baseline instance) in ``env_id``: the controller's and the
    environment's time per cycle (s; arrays), the cycle count and the final ``info``.
    ``after_step(controller)`` is called after each ``controller.step``, outside the timed part."""
    env = gym.make(env_id, **env_kwargs)
    base = env.unwrapped
    try:
        _, info = env.reset(seed=seed)
        if "command" in info and hasattr(controller, "set_command"):
            controller.set_command(np.array(info["command"], dtype=float))
        t0 = time.perf_counter()
        controller.reset(info["sensors"], np.random.default_rng(seed))
        pending = time.perf_counter() - t0  # the reset counts to the first cycle
        ctrl, step = [], []
        while True:
            t0 = time.perf_counter()
            targets = controller.step(info["sensors"])
            t1 = time.perf_counter()
            if after_step is not None:
                after_step(controller)
            action = base.action_from_targets(targets)
            t2 = time.perf_counter()
            _, _, terminated, truncated, info = env.step(action)
            t3 = time.perf_counter()
            ctrl.append(t1 - t0 + pending)
            pending = 0.0
            step.append(t3 - t2)
            if terminated or truncated:
                break
    finally:
        env.close()
    return {"ctrl": np.array(ctrl), "step": np.array(step), "info": info}


def cycle_minimum(runs: list[dict[str, Any]], what: str) -> tuple[np.ndarray, np.ndarray]:
    """Per cycle, the smallest controller and environment time over identical runs (``what``
    names them in the error when the runs differ in length: not deterministic)."""
    if not runs:
        raise ValueError("cycle_minimum needs at least one run")
    if any(len(run["ctrl"]) != len(runs[0]["ctrl"]) for run in runs):
        raise RuntimeError(f"{what}: the repeats differ (not deterministic), cannot take minima")
    return np.min([run["ctrl"] for run in runs], axis=0), np.min([run["step"] for run in runs], axis=0)


def timing_summary(ctrl: np.ndarray, step: np.ndarray) -> dict[str, float]:
    """Controller and environment times per cycle (µs) and their ratios, from per-cycle seconds."""
    env_mean = float(step.mean())
    return {"cycles": int(ctrl.size),
            "ctrl_mean_us": 1e6 * float(ctrl.mean()), "ctrl_median_us": 1e6 * float(np.median(ctrl)),
            "ctrl_p95_us": 1e6 * float(np.percentile(ctrl, 95)), "ctrl_max_us": 1e6 * float(ctrl.max()),
            "env_mean_us": 1e6 * env_mean, "env_median_us": 1e6 * float(np.median(step)),
            "ratio_mean": float(ctrl.mean()) / env_mean, "ratio_median": float(np.median(ctrl) / np.median(step)),
            "ratio_worst": float(ctrl.max()) / env_mean}


def check_repeats(repeats: int) -> int:
    """``repeats`` if it is a positive integer; ValueError naming it otherwise."""
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    return repeats


def measure(controller: str, robot: str, start: str | None, *, seconds: float, repeats: int = 1, seed: int = 0,
            command: tuple[float, float, float] = (0.2, 0.0, 0.0), conditions: str = "lab") -> dict[str, Any]:
    """Time ``controller`` on ``robot`` (get-up: from ``start``; walk: ``start`` is None and the
    robot follows ``command``) over one episode of ``seconds``, each cycle's minimum over ``repeats``."""
    task = baseline_entry(controller).task
    environment = env_id(robot, task)  # names a bad robot
    kwargs: dict[str, Any] = {"conditions": conditions, "max_episode_seconds": seconds}
    if task == "walk":
        kwargs["command"] = command
    else:
        kwargs["start"] = start
    runs = [timed_episode(environment, make_controller(controller, get_robot(robot), task), kwargs, seed)
            for _ in range(check_repeats(repeats))]
    ctrl, step = cycle_minimum(runs, f"{controller} {robot} {start or 'walk'}")
    return {"controller": controller, "robot": robot, "task": task, "start": start or "standing",
            "repeats": repeats, **timing_summary(ctrl, step)}


def write_bench(out: Path, name: str, rows: list[dict[str, Any]], markdown: str, repeats: int) -> str:
    """Write ``rows`` as ``<name>.json`` and ``markdown`` (with a line on the repeats) as
    ``<name>.md`` under ``out``; return the Markdown."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(rows, indent=1))
    text = markdown + (f"\n\nTimes per cycle: minimum over {repeats} identical runs." if repeats > 1 else "")
    (out / f"{name}.md").write_text(text + "\n")
    return text


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown table of :func:`measure` results."""
    lines = ["| controller | robot | episode | controller per cycle: mean / median / p95 / worst (µs) "
             "| env step mean / median (µs) | controller / env step: mean / median / worst |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['controller']} | {r['robot']} | {r['start']} | {r['ctrl_mean_us']:.0f} / {r['ctrl_median_us']:.0f} / "
            f"{r['ctrl_p95_us']:.0f} / {r['ctrl_max_us']:.0f} | {r['env_mean_us']:.0f} / {r['env_median_us']:.0f} | "
            f"{100 * r['ratio_mean']:.1f} % / {100 * r['ratio_median']:.1f} % / {100 * r['ratio_worst']:.0f} % |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--controllers", nargs="+", default=list(controller_names()), choices=controller_names())
    parser.add_argument("--robots", nargs="+", default=list(ROBOT_NAMES), choices=ROBOT_NAMES)
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="episode length (s); 20 = the environments' own (a get-up's retries included)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs per episode; each cycle keeps its minimum time over them (1 = single run)")
    parser.add_argument("--command", type=float, nargs=3, default=(0.2, 0.0, 0.0), metavar=("VX", "VY", "WZ"),
                        help="walk command (m/s, m/s, rad/s)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    rows = []
    for name in args.controllers:
        entry = baseline_entry(name)
        for robot in args.robots:
            if robot not in entry.robots:
                continue
            for start in (GETUP_STARTS if entry.task == "getup" else (None,)):
                rows.append(measure(name, robot, start, seconds=args.seconds, repeats=args.repeats,
                                    command=tuple(args.command)))
                print(table(rows[-1:]).splitlines()[-1], flush=True)
    print(write_bench(args.out, "controller_bench", rows, table(rows), args.repeats))


if __name__ == "__main__":
    main()
