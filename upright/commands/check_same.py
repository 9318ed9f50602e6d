"""``upright check-same``: a refactoring's check, the environment cases at a git revision and in
the working tree agreeing to the last bit on this machine."""

from __future__ import annotations

import argparse

from upright.commands import Subparsers
from upright.eval.same_machine import CASES, check_same


def register(subparsers: Subparsers) -> None:
    p = subparsers.add_parser("check-same", help="refactoring check: the environment cases at a git revision and in "
                                                 "the working tree, on this machine, must agree to the last bit")
    p.add_argument("--against", default="HEAD", help="git revision to compare with (default: HEAD)")
    p.add_argument("--steps", type=int, default=200, help="control steps per case (default: 200)")
    p.add_argument("--case", nargs="+", default=None, metavar="NAME", help="only these cases (--list names them)")
    p.add_argument("--list", action="store_true", help="list the cases, one line each")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Exit 1 when a case differs."""
    if args.list:
        for name, (env_id, kwargs, scale) in CASES.items():
            print(f"{name:<42} {env_id} {kwargs} actions ±{scale}")
        return 0
    commit, differences = check_same(args.against, args.case, steps=args.steps)
    cases = len(args.case or CASES)
    if not differences:
        print(f"identical to the bit: {cases} cases, {args.steps} steps each, at {args.against} ({commit[:12]}) "
              "and in the working tree")
        return 0
    for difference in differences:
        print(difference)
    print(f"{len(differences)} of {cases} cases differ from {args.against} ({commit[:12]})")
    return 1


__all__ = ["register", "run"]
