"""Compute cost of the spline stand-up against the environment step, measured side by side.

For each robot and start (prone, supine) one stand-up episode runs in its get-up environment; every
control step times the controller's ``step`` (splines + stabiliser + leg and arm IK) and the
environment's ``step`` (servo model, physics substeps, sensors, metrics) with
``time.perf_counter``, in the same process and run. Reported: per control cycle (steps in which no
try is planned: interpolation of the precomputed trajectory, stabiliser, its IK correction) mean
and 95th percentile (µs) and its ratio to the environment step's mean (issue 5's target: below
10 %); separately the planning of each try (splines and IK on the grid, ms) and the ratio of the
controller's total time, planning included, to the environment's. The ratio of the medians is
also given: on a shared machine preemptions inflate single steps and with them the means. Writes ``spline_bench.json`` and ``spline_bench.md`` under ``--out`` and prints the table.

    python -m upright.eval.spline_bench --out results/spline_bench
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import upright  # noqa: F401  (registers the environments)
from upright.baselines.spline import SplineStandUp

ENV_IDS = {"wolfgang": "upright/WolfgangGetUp-v0", "nao": "upright/NaoGetUp-v0"}


def measure(robot: str, start: str, conditions: str, seconds: float, seed: int = 0) -> dict[str, float]:
    """Per-step times (s) of the controller and of the environment over one episode."""
    env = gym.make(ENV_IDS[robot], start=start, conditions=conditions, max_episode_seconds=seconds)
    base = env.unwrapped
    controller = SplineStandUp(base.robot)
    _, info = env.reset(seed=seed)
    t0 = time.perf_counter()
    controller.reset(info["sensors"], np.random.default_rng(seed))
    first_plan = time.perf_counter() - t0
    ctrl, step, plans, planning = [first_plan], [], [first_plan], [True]
    while True:
        tries = controller.tries
        t0 = time.perf_counter()
        targets = controller.step(info["sensors"])
        t1 = time.perf_counter()
        if controller.tries != tries:
            plans.append(t1 - t0)
            planning[-1] = True
        action = base.action_from_targets(targets)
        t2 = time.perf_counter()
        _, _, terminated, truncated, info = env.step(action)
        t3 = time.perf_counter()
        ctrl[-1] += t1 - t0
        ctrl.append(0.0)
        planning.append(False)
        step.append(t3 - t2)
        if terminated or truncated:
            break
    env.close()
    c, s = np.array(ctrl[:-1]), np.array(step)
    cycle = c[~np.array(planning[:-1])]
    return {"robot": robot, "start": start, "conditions": conditions, "steps": int(c.size),
            "cycle_mean_us": 1e6 * float(cycle.mean()), "cycle_p95_us": 1e6 * float(np.percentile(cycle, 95)),
            "env_step_mean_us": 1e6 * float(s.mean()), "env_step_p95_us": 1e6 * float(np.percentile(s, 95)),
            "cycle_ratio": float(cycle.mean() / s.mean()),
            "cycle_median_ratio": float(np.median(cycle) / np.median(s)), "tries": controller.tries,
            "planning_mean_ms": 1e3 * float(np.mean(plans)), "total_ratio": float(c.mean() / s.mean()),
            "success": bool(info["episode_metrics"]["success"])}


def table(rows: list[dict]) -> str:
    """Markdown table of :func:`measure` results."""
    lines = ["| robot | start | conditions | steps | tries | stood up | cycle mean (µs) | cycle p95 (µs) "
             "| env step mean (µs) | env step p95 (µs) | cycle / env step (means) | cycle / env step (medians) "
             "| planning per try (ms) | all controller time / env time |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['robot']} | {r['start']} | {r['conditions']} | {r['steps']} | {r['tries']} | "
                     f"{'yes' if r['success'] else 'no'} | {r['cycle_mean_us']:.0f} | {r['cycle_p95_us']:.0f} | "
                     f"{r['env_step_mean_us']:.0f} | {r['env_step_p95_us']:.0f} | {100 * r['cycle_ratio']:.1f} % | "
                     f"{100 * r['cycle_median_ratio']:.1f} % | "
                     f"{r['planning_mean_ms']:.0f} | {100 * r['total_ratio']:.1f} % |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robots", nargs="+", default=sorted(ENV_IDS), choices=sorted(ENV_IDS))
    parser.add_argument("--conditions", default="lab")
    parser.add_argument("--seconds", type=float, default=20.0, help="episode length (s); 20 = the get-up episode")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    rows = [measure(robot, start, args.conditions, args.seconds)
            for robot in args.robots for start in ("prone", "supine")]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "spline_bench.json").write_text(json.dumps(rows, indent=1))
    text = table(rows)
    (args.out / "spline_bench.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
