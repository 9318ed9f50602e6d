"""``upright sweep SPACE.yml``: a study of ``upright train`` runs on Optuna over a space file's
``hp.*``, ``reward_scales.*`` and environment values; with ``--summary`` only the summary of its
trials so far (docs/sweeps.md). The space file's ``train`` and ``set`` blocks hold every trial
run's options, so this command takes none of ``upright train``'s."""

from __future__ import annotations

import argparse
from pathlib import Path

from upright.commands import Subparsers
from upright.envs.files import writable_folder
from upright.eval.settings import parse_settings


def register(subparsers: Subparsers) -> None:
    p = subparsers.add_parser("sweep", help="a study of training runs on Optuna over a space file's hp.*, "
                                            "reward_scales.* and environment values (docs/sweeps.md)")
    p.add_argument("space", metavar="SPACE.yml",
                   help="the space file: the searched values and every trial run's train options and set items, "
                        "e.g. training/sweeps/nao-walk-step_adjust.yml")
    p.add_argument("--trials", type=int, default=20,
                   help="finished trials the study should have, over every worker (default: 20)")
    p.add_argument("--storage", default=None,
                   help="Optuna storage URL, postgresql://user@host/db for workers on many machines "
                        "(default: OUT/study.db, or OUT/study.journal with --workers > 1)")
    p.add_argument("--study", default=None, help="study name (default: the space file's name)")
    p.add_argument("--workers", type=int, default=1, help="local worker processes (default: 1)")
    p.add_argument("--seed", type=int, default=0, help="sampler seed (default: 0)")
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="items held in every trial run over the space file's set block: environment keyword "
                        "arguments, reward_scales.*, params.* and hp.*")
    p.add_argument("--out", default=None,
                   help="folder of the trial runs and the summary (default: results/sweeps/SPACE)")
    p.add_argument("--resume", action="store_true", help="continue the study, which must exist")
    p.add_argument("--summary", action="store_true",
                   help="only write the summary of the study's trials so far (table, plots, ship command)")
    p.add_argument("--docs", action="store_true",
                   help="also write the summary to docs/results (sweep-<study>.md, and its plots in "
                        "docs/results/sweeps)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from upright.training.sweep import SweepConfig, sweep  # torch, SB3, optuna: only this command

    if args.out:
        writable_folder(args.out)
    config = SweepConfig(space=args.space, trials=args.trials, storage=args.storage, study=args.study,
                         workers=args.workers, seed=args.seed, out=Path(args.out) if args.out else None,
                         settings=parse_settings(args.set), resume=args.resume)
    summary = sweep(config, run=not args.summary, docs=Path("docs", "results") if args.docs else None,
                    command=args.command_line)
    states = summary["states"]
    print(f"study {summary['study']} in {summary['storage']}: {states['complete']} complete, {states['pruned']} "
          f"pruned, {states['fail']} failed trials")
    if summary["ship"]:
        print(f"best trial {summary['best']['number']}: {summary['objective']} {summary['best']['value']:.4g}; "
              f"ship it with: {summary['ship']}")
    return 0


__all__ = ["register", "run"]
