"""Compute cost of the spline stand-up against the environment step, measured side by side.

For each robot and start (prone, supine) one stand-up episode runs in its get-up environment; every
control step times the controller's ``step`` (splines + stabiliser + leg and arm IK) and the
environment's ``step`` (servo model, physics substeps, sensors, metrics) with
``time.perf_counter``, in the same process and run. Reported: mean and 95th percentile per step
(µs) and the ratio of the means (issue 5's target: the controller below 10 % of an environment
step). Writes ``spline_bench.json`` and ``spline_bench.md`` under ``--out`` and prints the table.

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
    ctrl, step = [first_plan], []
    while True:
        t0 = time.perf_counter()
        targets = controller.step(info["sensors"])
        t1 = time.perf_counter()
        action = base.action_from_targets(targets)
        t2 = time.perf_counter()
        _, _, terminated, truncated, info = env.step(action)
        t3 = time.perf_counter()
        ctrl[-1] += t1 - t0
        ctrl.append(0.0)
        step.append(t3 - t2)
        if terminated or truncated:
            break
    env.close()
    c, s = np.array(ctrl[:-1]), np.array(step)
    return {"robot": robot, "start": start, "conditions": conditions, "steps": int(c.size),
            "controller_mean_us": 1e6 * float(c.mean()), "controller_p95_us": 1e6 * float(np.percentile(c, 95)),
            "env_step_mean_us": 1e6 * float(s.mean()), "env_step_p95_us": 1e6 * float(np.percentile(s, 95)),
            "controller_max_ms": 1e3 * float(c.max()), "tries": controller.tries,
            "ratio": float(c.mean() / s.mean()), "success": bool(info["episode_metrics"]["success"])}


def table(rows: list[dict]) -> str:
    """Markdown table of :func:`measure` results."""
    lines = ["| robot | start | conditions | steps | tries | stood up | controller mean (µs) | controller p95 (µs) "
             "| controller max (ms) | env step mean (µs) | env step p95 (µs) | controller / env step |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['robot']} | {r['start']} | {r['conditions']} | {r['steps']} | {r['tries']} | "
                     f"{'yes' if r['success'] else 'no'} | {r['controller_mean_us']:.0f} | "
                     f"{r['controller_p95_us']:.0f} | {r['controller_max_ms']:.1f} | {r['env_step_mean_us']:.0f} | "
                     f"{r['env_step_p95_us']:.0f} | {100 * r['ratio']:.1f} % |")
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
