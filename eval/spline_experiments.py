"""Issue 5's experiments with the spline stand-up, each cell exactly an ``upright eval`` run.

Cells (``--only`` picks some by name):

* ``wolfgang-lab``: Wolfgang, ``lab``, prone and supine, policy ``spline``;
* ``wolfgang-thesis``: Wolfgang, ``thesis`` (turf + random torso force up to 100 N every physics
  step), prone and supine, ``spline`` (stabiliser on) and ``spline_nostab`` (off);
* ``nao-lab``, ``nao-competition``: NAO with its parameter set, prone and supine.

Each cell is the same as
``upright eval --env ENV --policy POLICY --start START --conditions C --episodes N --workers W --out OUT/CELL``
(the command is printed and stored); its ``results.json``/``results.md`` go to ``OUT/<cell>``. At the
end a table of success (95 % Wilson interval) and time to stand (min/mean/max) per cell is printed
and written to ``OUT/spline_experiments.md`` next to the thesis' and the paper's reference numbers.

    python -m upright.eval.spline_experiments --episodes 100 --workers 2 --out results/spline
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import gymnasium as gym
import numpy as np

from upright.baselines import make_controller
from upright.eval.metrics import HOLD_SECONDS, is_upright
from upright.eval.results import aggregate, wilson_interval, write_results
from upright.eval.runner import run_episodes

ENV_IDS = {"wolfgang": "upright/WolfgangGetUp-v0", "nao": "upright/NaoGetUp-v0"}
#: (robot, conditions, policies) per experiment name.
EXPERIMENTS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "wolfgang-lab": ("wolfgang", "lab", ("spline",)),
    "wolfgang-thesis": ("wolfgang", "thesis", ("spline", "spline_nostab")),
    "nao-lab": ("nao", "lab", ("spline",)),
    "nao-competition": ("nao", "competition", ("spline",)),
}
#: What the sources report for comparison (Wolfgang, simulation).
REFERENCE = (
    "Reference: ICAR 2021 paper, simulation: 2.7 s (front), 2.1 s (back); thesis (Gazebo, 100 N "
    "pushes, 10 tries per direction): spline with stabiliser 18/20, without 16/20, Bit-Bots keyframe "
    "14/20 at 9.3 s (front) / 8.0 s (back)."
)


def command(env: str, policy: str, start: str, conditions: str, episodes: int, workers: int, out: Path) -> str:
    """The ``upright eval`` command line of one cell."""
    return (f"upright eval --env {env} --policy {policy} --start {start} --conditions {conditions} "
            f"--episodes {episodes} --workers {workers} --out {out}")


def run_cell(robot: str, conditions: str, policy: str, start: str, episodes: int, workers: int,
             out: Path) -> dict:
    """Run one cell like ``upright eval`` and return its row for the summary table."""
    env = ENV_IDS[robot]
    cell = out / f"{robot}-{conditions}-{policy}-{start}"
    cmd = command(env, policy, start, conditions, episodes, workers, cell)
    print(cmd, flush=True)
    run = run_episodes(env, policy, episodes, env_kwargs={"start": start, "conditions": conditions},
                       workers=workers)
    result = aggregate(run)
    result["command"] = cmd
    write_results(result, cell)
    t = result["time_to_stand"]
    return {"robot": robot, "conditions": conditions, "policy": policy, "start": start,
            "successes": result["successes"], "episodes": result["episodes"], "ci95": result["success_ci95"],
            "time_min": t["min"], "time_mean": t["mean"], "time_max": t["max"], "command": cmd}


def stood_up(robot: str, conditions: str, policy: str, start: str, episodes: int, seed: int = 0) -> dict:
    """The thesis' own success notion for comparison: the robot reached an upright posture (torso
    upright, head high: :func:`~upright.eval.metrics.is_upright`) and held it for
    :data:`~upright.eval.metrics.HOLD_SECONDS` at least once, and was upright at the episode's end —
    without the package's stillness requirement (under ``thesis`` pushes even a robot holding its
    standing pose rarely keeps the IMU below 0.15 rad/s for a second). Same seeds as ``upright eval``."""
    env = gym.make(ENV_IDS[robot], start=start, conditions=conditions)
    base = env.unwrapped
    controller = make_controller(policy, base.robot, "getup")
    hits, times = 0, []
    for index in range(episodes):
        _, info = env.reset(seed=seed + index)
        controller.reset(info["sensors"], np.random.default_rng(seed + index))
        since, first, up = None, None, False
        while True:
            targets = controller.step(info["sensors"])
            _, _, terminated, truncated, info = env.step(base.action_from_targets(targets))
            up = is_upright(base.posture(), base.standing)
            since = (since if since is not None else info["time"]) if up else None
            if first is None and since is not None and info["time"] - since >= HOLD_SECONDS - 1e-9:
                first = since
            if terminated or truncated:
                break
        if first is not None and up:
            hits += 1
            times.append(first)
    env.close()
    lo, hi = wilson_interval(hits, episodes)
    return {"robot": robot, "conditions": conditions, "policy": policy, "start": start, "successes": hits,
            "episodes": episodes, "ci95": [lo, hi], "time_min": min(times, default=None),
            "time_mean": float(np.mean(times)) if times else None, "time_max": max(times, default=None),
            "command": f"python -m upright.eval.spline_experiments --stood-up --episodes {episodes}"}


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def table(rows: list[dict]) -> str:
    """Markdown summary of the cells."""
    lines = ["| robot | conditions | policy | start | success | 95 % CI | time to stand min / mean / max (s) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lo, hi = r["ci95"]
        lines.append(f"| {r['robot']} | {r['conditions']} | {r['policy']} | {r['start']} | "
                     f"{r['successes']}/{r['episodes']} | {100 * lo:.0f}–{100 * hi:.0f} % | "
                     f"{_cell(r['time_min'])} / {_cell(r['time_mean'])} / {_cell(r['time_max'])} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=sorted(EXPERIMENTS), default=sorted(EXPERIMENTS))
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--stood-up", action="store_true",
                        help="count the thesis' success notion (upright held 1 s and at the end, no stillness "
                             "requirement; see stood_up) instead of running upright eval")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    rows = []
    for name in args.only:
        robot, conditions, policies = EXPERIMENTS[name]
        for policy in policies:
            for start in ("prone", "supine"):
                if args.stood_up:
                    rows.append(stood_up(robot, conditions, policy, start, args.episodes))
                    print(table(rows[-1:]), flush=True)
                else:
                    rows.append(run_cell(robot, conditions, policy, start, args.episodes, args.workers, args.out))
    args.out.mkdir(parents=True, exist_ok=True)
    name = "spline_stood_up" if args.stood_up else "spline_experiments"
    text = table(rows) + "\n\n" + REFERENCE + "\n"
    (args.out / f"{name}.md").write_text(text)
    (args.out / f"{name}.json").write_text(json.dumps(rows, indent=1))
    print(text)


if __name__ == "__main__":
    main()
