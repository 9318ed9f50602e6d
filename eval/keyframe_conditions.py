"""Which part of the ``competition`` preset defeats the ``keyframe`` stand-up (NAO).

Runs the ``keyframe`` policy under ``competition`` with one factor removed at a time, and the
``hold`` policy from ``standing`` under the same pushes (does a standing NAO survive them at all?).
Variants: ``competition`` as defined; ``no_pushes`` (``push_force = 0``); ``no_wear`` (no random
wear); ``no_pushes_no_wear``. Writes one results folder per variant and start under ``--out``,
plus ``breakdown.md`` / ``breakdown.json``, and prints the table.

``python -m upright.eval.keyframe_conditions --episodes 20 --out results/keyframe_conditions``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from upright.envs.conditions import PRESETS, Conditions
from upright.eval.results import aggregate, write_results
from upright.eval.runner import run_episodes

VARIANTS: dict[str, dict[str, Any]] = {
    "competition": {},
    "no_pushes": {"push_force": 0.0},
    "no_wear": {"random_wear": None},
    "no_pushes_no_wear": {"push_force": 0.0, "random_wear": None},
}


def variant(name: str) -> Conditions:
    """The ``competition`` preset with the changes of ``VARIANTS[name]``."""
    return PRESETS["competition"].with_(**VARIANTS[name])


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--episodes N --out DIR --workers W --variants ... --starts ...``."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--episodes", type=int, default=20)
    p.add_argument("--out", type=Path, default=Path("results/keyframe_conditions"))
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    p.add_argument("--starts", nargs="+", default=["prone", "supine"])
    args = p.parse_args(argv)
    rows, summary = [], {}
    for name in args.variants:
        runs = [("keyframe", s) for s in args.starts] + [("hold", "standing")]
        for policy, start in runs:
            result = aggregate(run_episodes("upright/NaoGetUp-v0", policy, args.episodes, workers=args.workers,
                                            env_kwargs={"start": start, "conditions": variant(name)}))
            result["env_kwargs"]["conditions"] = f"competition variant {name}"
            write_results(result, args.out / f"{name}_{policy}_{start}")
            tts = result["time_to_stand"]
            summary[f"{name}/{policy}/{start}"] = {k: result[k] for k in ("episodes", "successes", "success_rate", "success_ci95")}
            rows.append(f"| {name} | {policy} | {start} | {result['successes']}/{result['episodes']} | "
                        f"[{result['success_ci95'][0]:.2f}, {result['success_ci95'][1]:.2f}] | "
                        + ("—" if tts["mean"] is None else f"{tts['mean']:.2f}") + " |")
    table = "\n".join(["| variant | policy | start | success | 95 % CI | mean time to stand (s) |",
                       "|---|---|---|---|---|---|", *rows])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "breakdown.md").write_text(table + "\n")
    (args.out / "breakdown.json").write_text(json.dumps(summary, indent=2))
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
