"""The ``upright`` command line: ``info``, ``view``, ``bench`` and ``report`` (the main job)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import upright  # noqa: F401  (selects the GL backend before mujoco renders)
from upright.envs.conditions import TERRAINS
from upright.envs.robots import ROBOT_NAMES


def _cmd_info(args: argparse.Namespace) -> int:
    from upright.eval.summary import model_summary

    print(model_summary(args.robot))
    return 0


def _cmd_view(args: argparse.Namespace) -> int:
    from upright.eval.pictures import render_pose
    from upright.envs.render import RenderingUnavailable

    try:
        path = render_pose(args.robot, args.pose, args.scene, Path(args.out), settle=args.settle,
                           width=args.width, height=args.height)
    except RenderingUnavailable as error:
        print(f"upright view: {error}", file=sys.stderr)
        return 3
    print(f"wrote {path}")
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from upright.eval.bench import format_bench, run_bench

    print(format_bench(run_bench(args.steps)))
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from upright.eval.report import write_report

    path = write_report(Path(args.out), bench_steps=args.bench_steps)
    print(f"wrote {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="upright",
        description="Humanoid get-up and walking environments in MuJoCo (NAO V6, Wolfgang-OP).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("info", help="print a robot's joints, limits, servos, masses and total mass")
    p.add_argument("robot", choices=ROBOT_NAMES)
    p.set_defaults(func=_cmd_info)

    p = sub.add_parser("view", help="render a picture of a robot in a named pose on a terrain")
    p.add_argument("robot", choices=ROBOT_NAMES)
    p.add_argument("--pose", default=None, help="keyframe name (default: the standing pose)")
    p.add_argument("--scene", default="flat", choices=TERRAINS, help="terrain (default: flat)")
    p.add_argument("--out", required=True, help="output PNG file")
    p.add_argument("--settle", type=float, default=0.0, help="simulate this many seconds first (servos hold the pose)")
    p.add_argument("--width", type=int, default=640)
    p.add_argument("--height", type=int, default=480)
    p.set_defaults(func=_cmd_view)

    p = sub.add_parser("bench", help="speed of our models against Gymnasium's HumanoidStandup-v5, side by side")
    p.add_argument("--steps", type=int, default=20_000, help="physics steps per measurement")
    p.set_defaults(func=_cmd_bench)

    p = sub.add_parser("report", help="the main job: simulate and render both robots, benchmark, write a report")
    p.add_argument("--out", default="results", help="output directory (default: results)")
    p.add_argument("--bench-steps", type=int, default=20_000)
    p.set_defaults(func=_cmd_report)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except ValueError as error:  # bad input: a clear message, no traceback
        print(f"upright {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"upright {args.command}: interrupted", file=sys.stderr)
        return 130


__all__ = ["main", "build_parser"]
