"""Issue 5's experiments with the spline stand-up, each cell exactly an ``upright eval`` run.

Cells (``--only`` picks some by name):

* ``wolfgang-lab``: Wolfgang, ``lab``, prone and supine, policy ``spline``;
* ``wolfgang-thesis``: Wolfgang, ``thesis`` (turf + random torso force up to 100 N every physics
  step), prone and supine, ``spline`` (stabiliser on) and ``spline_nostab`` (off);
* ``nao-lab``, ``nao-competition``: NAO with its parameter set, prone and supine.

Each cell is the same as
``upright eval --env ENV --policy POLICY --start START --conditions C --episodes N --workers W --out OUT/CELL``
(the command is printed and stored); its ``results.json``/``results.md`` go to ``OUT/<cell>``. At the
end a table of success (95 % Wilson interval), time to stand (min/mean/max) and the thesis's
``stood_up`` notion (recorded by every run, see :mod:`upright.envs.metrics`) per cell is printed
and written to ``OUT/spline_experiments.md`` next to the thesis' and the paper's reference numbers.

    python -m upright.eval.spline_experiments --episodes 100 --workers 2 --out results/spline
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from upright.envs.registration import env_id
from upright.eval.results import aggregate, write_results
from upright.eval.runner import run_episodes

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
    env = env_id(robot, "getup")
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
            "time_min": t["min"], "time_mean": t["mean"], "time_max": t["max"],
            "stood_up": result["stood_up"], "stood_up_ci95": result["stood_up_ci95"], "command": cmd}


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def table(rows: list[dict]) -> str:
    """Markdown summary of the cells."""
    lines = [("| robot | conditions | policy | start | success | 95 % CI | time to stand min / mean / max (s) "
              "| stood up (thesis notion, no stillness) | 95 % CI |"),
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lo, hi = r["ci95"]
        lines.append(f"| {r['robot']} | {r['conditions']} | {r['policy']} | {r['start']} | "
                     f"{r['successes']}/{r['episodes']} | {100 * lo:.0f}–{100 * hi:.0f} % | "
                     f"{_cell(r['time_min'])} / {_cell(r['time_mean'])} / {_cell(r['time_max'])} | "
                     f"{r['stood_up']}/{r['episodes']} | {100 * r['stood_up_ci95'][0]:.0f}–{100 * r['stood_up_ci95'][1]:.0f} % |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=sorted(EXPERIMENTS), default=sorted(EXPERIMENTS))
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    rows = []
    for name in args.only:
        robot, conditions, policies = EXPERIMENTS[name]
        for policy in policies:
            for start in ("prone", "supine"):
                rows.append(run_cell(robot, conditions, policy, start, args.episodes, args.workers, args.out))
    args.out.mkdir(parents=True, exist_ok=True)
    name = "spline_experiments"
    text = table(rows) + "\n\n" + REFERENCE + "\n"
    (args.out / f"{name}.md").write_text(text)
    (args.out / f"{name}.json").write_text(json.dumps(rows, indent=1))
    print(text)


if __name__ == "__main__":
    main()
