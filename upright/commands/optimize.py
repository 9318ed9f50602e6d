"""``upright optimize``: a controller's parameters tuned with Optuna (the spline paper's method;
docs/optimize.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from upright.commands import Subparsers
from upright.envs.files import writable_folder
from upright.envs.robots import ROBOT_NAMES
from upright.eval.settings import parse_settings


def register(subparsers: Subparsers) -> None:
    p = subparsers.add_parser("optimize",
                              help="optimise a controller's parameters with Optuna (the spline paper's method)")
    p.add_argument("--controller", default=None, help="baseline name: spline, keyframe, lipm, step_adjust")
    p.add_argument("--robot", default=None, choices=ROBOT_NAMES)
    p.add_argument("--start", default=None, help="get-up start: front (= prone), back (= supine), side, fall, random")
    p.add_argument("--conditions", default=None, help="conditions preset (default: the search space's)")
    p.add_argument("--sampler", default="motpe", choices=("tpe", "motpe", "cmaes", "random"))
    p.add_argument("--objective", default=None,
                   help="letters: get-up S success, T time, H head, P pitch (default STH); walk F falls, "
                        "E linear error, Y yaw error, V speed shortfall (default FE)")
    p.add_argument("--trials", type=int, default=100, help="finished trials the study should have (default: 100)")
    p.add_argument("--repetitions", type=int, default=3, help="episodes per trial, each with its own seed (default: 3)")
    p.add_argument("--storage", default=None,
                   help="Optuna storage URL: sqlite:///F.db, postgresql://user@host/db, journal:FILE "
                        "(default: OUT/study.db, or OUT/study.journal with --workers > 1)")
    p.add_argument("--study", default=None, help="study name (default: controller-robot-start-sampler-objective)")
    p.add_argument("--workers", type=int, default=1, help="local worker processes on the study (default: 1)")
    p.add_argument("--seed", type=int, default=0, help="sampler seed and base of the episode seeds")
    p.add_argument("--out", default=None,
                   help="output folder (default: results/optimize/CONTROLLER-ROBOT[-START]-SAMPLER)")
    p.add_argument("--space", default=None, help="search space YAML (default: the shipped one)")
    p.add_argument("--startup", type=int, default=None, help="random trials before the sampler's model")
    p.add_argument("--prune", action="store_true", help="median pruning between repetitions (single objective)")
    p.add_argument("--no-hand-tuned", action="store_true", help="do not enqueue the hand-tuned parameters first")
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="environment keyword arguments and params.KEY overrides held fixed in every trial")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from upright.tuning import OptimizeConfig, optimize  # optuna: only this command

    if not args.controller or not args.robot:
        raise ValueError("give --controller and --robot")
    out = Path(args.out) if args.out else Path("results", "optimize", f"{args.controller}-{args.robot}"
                                                + (f"-{args.start}" if args.start else "") + f"-{args.sampler}")
    writable_folder(out)
    config = OptimizeConfig(
        controller=args.controller, robot=args.robot, start=args.start, conditions=args.conditions,
        sampler=args.sampler, objective=args.objective, trials=args.trials, repetitions=args.repetitions,
        storage=args.storage, study=args.study, workers=args.workers, seed=args.seed, out=out, space=args.space,
        startup=args.startup, prune=args.prune, hand_tuned=not args.no_hand_tuned, settings=parse_settings(args.set))
    summary = optimize(config)
    best = summary["best"]
    if best:
        print(f"best trial {best['number']}: {best['successes']}/{best['episodes']} repetitions succeeded, "
              f"components {', '.join(f'{k} {v:.1f}' for k, v in best['components'].items())}")
    print(f"wrote {out / 'summary.md'} and {out / 'best_params.yaml'} (study {summary['study']} in {summary['storage']})")
    return 0


__all__ = ["register", "run"]
