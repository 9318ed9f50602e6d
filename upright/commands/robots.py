"""``upright info``, ``upright check-model`` and ``upright view``: a robot's description, a user's
MJCF of it against ours, and a picture of it in a pose."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from upright.commands import Subparsers
from upright.envs.conditions import TERRAINS
from upright.envs.render import RenderingUnavailable
from upright.envs.robots import ROBOT_NAMES
from upright.eval.check_model import check_model
from upright.eval.pictures import render_pose
from upright.eval.robot_info import robot_info


def register(subparsers: Subparsers) -> None:
    p = subparsers.add_parser("info", help="print a robot's joints, limits, servos, masses and total mass")
    p.add_argument("robot", choices=ROBOT_NAMES)
    p.set_defaults(func=run_info)

    p = subparsers.add_parser("check-model", help="what a user's MJCF of a robot does differently from ours: "
                                                  "kinematics, masses, inertias, servos, simulation settings "
                                                  "(docs/your-robot.md)")
    p.add_argument("model", help="the user's MJCF file")
    p.add_argument("--robot", required=True, choices=ROBOT_NAMES)
    p.add_argument("--map", default=None, help="the model map (YAML): names, zero offsets, signs, sensors")
    p.set_defaults(func=run_check_model)

    p = subparsers.add_parser("view", help="render a picture of a robot in a named pose on a terrain")
    p.add_argument("robot", choices=ROBOT_NAMES)
    p.add_argument("--pose", default=None, help="keyframe name (default: the standing pose)")
    p.add_argument("--scene", default="flat", choices=TERRAINS, help="terrain (default: flat)")
    p.add_argument("--out", required=True, help="output PNG file")
    p.add_argument("--settle", type=float, default=0.0, help="simulate this many seconds first (servos hold the pose)")
    p.add_argument("--width", type=int, default=640)
    p.add_argument("--height", type=int, default=480)
    p.set_defaults(func=run_view)


def run_info(args: argparse.Namespace) -> int:
    print(robot_info(args.robot))
    return 0


def run_check_model(args: argparse.Namespace) -> int:
    print(check_model(args.model, args.robot, args.map))
    return 0


def run_view(args: argparse.Namespace) -> int:
    """Exit 3 (one line saying what is missing) where MuJoCo cannot render."""
    try:
        path = render_pose(args.robot, args.pose, args.scene, Path(args.out), settle=args.settle,
                           width=args.width, height=args.height)
    except RenderingUnavailable as error:
        print(f"upright view: {error}", file=sys.stderr)
        return 3
    print(f"wrote {path}")
    return 0


__all__ = ["register", "run_check_model", "run_info", "run_view"]
