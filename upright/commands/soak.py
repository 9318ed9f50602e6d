"""``upright soak``: random and extreme actions in every environment, preset, start and prior,
counting exceptions, non-finite values and physics blow-ups."""

from __future__ import annotations

import argparse
from pathlib import Path

from upright.commands import Subparsers
from upright.envs.files import writable_folder
from upright.eval.soak import check_soak, print_result, soak, write


def register(subparsers: Subparsers) -> None:
    p = subparsers.add_parser("soak", help="random and extreme actions in every environment, preset, start and "
                                           "prior; count exceptions, non-finite values and physics blow-ups (exit 1 "
                                           "on the first two)")
    p.add_argument("--steps", type=int, default=1_000_000,
                   help="environment steps per environment, split over its cells (default: 1000000, hours)")
    p.add_argument("--workers", type=int, default=1, help="worker processes (default: 1, in this process)")
    p.add_argument("--seed", type=int, default=0, help="base seed (cell k: seed + k * 1000000)")
    p.add_argument("--env", nargs="+", default=None, metavar="ID", help="only these environments")
    p.add_argument("--conditions", nargs="+", default=None, metavar="NAME",
                   help="only these conditions (the presets and ramp, obstacles, worst)")
    p.add_argument("--start", nargs="+", default=None, metavar="START", help="only these get-up starts")
    p.add_argument("--prior", nargs="+", default=None, metavar="NAME", help="only these priors (none: no prior)")
    p.add_argument("--out", default=None, help="output directory (default: results/soak); OUT/cells.jsonl grows "
                                               "by one line per finished cell")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True, help="progress bar")
    p.add_argument("--docs", action="store_true", help="also write docs/results/soak.md")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Exit 1 on an exception or a non-finite value, 130 when interrupted."""
    out = Path(args.out) if args.out else Path("results", "soak")
    writable_folder(out)
    check_soak(args.steps, workers=args.workers, seed=args.seed, envs=args.env, conditions=args.conditions,
               starts=args.start, priors=args.prior)  # bad input leaves no folder behind
    out.mkdir(parents=True, exist_ok=True)
    (out / "cells.jsonl").unlink(missing_ok=True)
    result = soak(args.steps, workers=args.workers, seed=args.seed, envs=args.env, conditions=args.conditions,
                  starts=args.start, priors=args.prior, progress=args.progress, log=out / "cells.jsonl")
    print_result(result)
    write(result, out, command=args.command_line, docs=Path("docs", "results") if args.docs else None)
    print(f"wrote {out / 'results.json'} and {out / 'results.md'}" + (" and docs/results/soak.md" if args.docs else ""))
    if result.interrupted:
        return 130
    return 1 if result.failed else 0


__all__ = ["register", "run"]
