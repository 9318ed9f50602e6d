"""``upright experiment``: a paper's protocol by its registered name (``--list`` names them)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from upright.commands import Subparsers
from upright.envs.files import writable_folder
from upright.eval.experiments import experiments, run_experiment
from upright.eval.settings import parse_settings


def register(subparsers: Subparsers) -> None:
    p = subparsers.add_parser("experiment", help="run a paper's protocol by name (--list names them)")
    p.add_argument("name", nargs="?", default=None, help="the protocol's registered name")
    p.add_argument("--list", action="store_true", help="list the protocols, one line each")
    p.add_argument("--episodes", type=int, default=None, help="episodes per cell (default: the protocol's)")
    p.add_argument("--workers", type=int, default=1, help="worker processes per run (default: 1, in this process)")
    p.add_argument("--seed", type=int, default=0, help="seed of the first episode of every cell (episode i: seed + i)")
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="the protocol's options, environment keyword arguments and params.KEY controller overrides")
    p.add_argument("--out", default=None, help="output directory (default: results/NAME)")
    p.add_argument("--docs", action="store_true", help="also write docs/results/NAME.md")
    p.add_argument("--resume", action="store_true",
                   help="read back the cells an earlier run into --out finished with the same settings")
    p.set_defaults(func=run)


def _setting_text(value: Any) -> str:
    """``value`` written as ``--set`` reads it (lists comma-separated, None as ``none``)."""
    if isinstance(value, (tuple, list)):
        return ",".join(map(str, value))
    return "none" if value is None else str(value)


def _wrapped(text: str, width: int = 80, indent: str = "  ", hang: str = "") -> list[str]:
    """``text`` in lines of at most ``width`` characters, each after ``indent`` (continuations also
    after ``hang``), broken after spaces and after the commas of a list setting (``a,b,c``), so
    that a long ``--set`` default stays readable at 80 columns."""
    lines, line = [], indent
    for piece in re.split(r"(?<=[ ,])", text):
        if line.strip() and len(line + piece.rstrip()) > width:
            lines.append(line.rstrip())
            line = indent + hang
        line += piece
    return [*lines, line.rstrip()] if line.strip() else lines


def run(args: argparse.Namespace) -> int:
    # Registers the optimize-* and sweep-* protocols, which sit above eval's registry (optuna: only
    # this command).
    from upright.training import sweep_workers  # noqa: F401
    from upright.tuning import protocols  # noqa: F401

    if args.list:
        for name, experiment in experiments().items():
            options = " ".join(f"{k}={_setting_text(v)}" for k, v in experiment.options.items())
            print("\n".join([name, *_wrapped(experiment.summary),
                             *(_wrapped(f"--set {options}", hang="  ") if options else [])]))
        return 0
    if args.name is None:
        raise ValueError("give an experiment NAME (upright experiment --list names them)")
    out = Path(args.out) if args.out else Path("results", args.name)
    writable_folder(out)
    run_experiment(args.name, out, episodes=args.episodes, workers=args.workers, settings=parse_settings(args.set),
                   seed=args.seed, docs=args.docs, command=args.command_line, resume=args.resume)
    print(f"wrote {out / 'results.json'} and {out / 'results.md'}")
    return 0


__all__ = ["register", "run"]
