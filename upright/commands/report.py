"""``upright report``: the main job, both robots simulated and rendered, benchmarked and
evaluated, written as one report; ``--robot`` and ``--set`` narrow it to one robot on a team's model."""

from __future__ import annotations

import argparse
from pathlib import Path

from upright.commands import Subparsers
from upright.envs.files import writable_folder
from upright.envs.robots import ROBOT_NAMES
from upright.eval.report import write_report
from upright.eval.settings import parse_settings, split_settings


def register(subparsers: Subparsers) -> None:
    p = subparsers.add_parser("report", help="the main job: simulate and render both robots, benchmark, write a report")
    p.add_argument("--out", default="results", help="output directory (default: results)")
    p.add_argument("--bench-steps", type=int, default=400, help="control steps per bench measurement (default: 400)")
    p.add_argument("--episodes", type=int, default=8, help="episodes per environment and policy (default: 8)")
    p.add_argument("--episode-seconds", type=float, default=None,
                   help="cap every evaluated episode at this many seconds (default: each environment's own length)")
    p.add_argument("--robot", nargs="+", default=None, choices=ROBOT_NAMES, metavar="ROBOT",
                   help=f"only these robots' environments, checks and pictures ({', '.join(ROBOT_NAMES)}; "
                        "default: all)")
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="environment keyword arguments of every evaluated cell, e.g. a team's model of the robot "
                        "(with --robot): --set model=ours.xml model_map=map.yml (docs/your-robot.md)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings, params = split_settings(parse_settings(args.set))
    if params:
        raise ValueError(f"--set params.{next(iter(params))}: the report runs every baseline with its own parameters; "
                         "give environment settings only")
    writable_folder(args.out)
    path = write_report(Path(args.out), bench_steps=args.bench_steps, episodes=args.episodes,
                        episode_seconds=args.episode_seconds, robots=tuple(args.robot or ROBOT_NAMES),
                        settings=settings)
    print(f"wrote {path}")
    return 0


__all__ = ["register", "run"]
