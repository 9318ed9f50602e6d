"""``upright bench``: environment steps per second against raw physics and Gymnasium's
HumanoidStandup-v5, where a step's time goes (``--parts``), or with ``--training`` the training
rates of the residual configurations and their scaling over environment copies."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from upright.commands import Subparsers
from upright.envs.files import writable_file
from upright.eval.bench.speed import format_bench, format_parts, run_bench, run_parts
from upright.eval.settings import parse_settings
from upright.training.config import VEC_ENVS, split_train_settings


def register(subparsers: Subparsers) -> None:
    p = subparsers.add_parser("bench", help="environment steps/s per environment and preset against raw physics and "
                                            "Gymnasium's HumanoidStandup-v5, side by side")
    p.add_argument("--steps", type=int, default=400, help="control steps per measurement (default: 400)")
    p.add_argument("--training", action="store_true",
                   help="instead: PPO and SAC training steps/s against the environment alone for the residual "
                        "configurations, and where PPO's time goes (--steps environment steps each; 2048 is a good "
                        "value)")
    p.add_argument("--n-envs", default=None, metavar="N,N,...",
                   help="with --training: PPO steps/s against the number of environments instead, e.g. 1,2,4, "
                        "wall-clock (an idle machine), with the efficiency over linear")
    p.add_argument("--vec-env", default=None, metavar="CLASS,...",
                   help="with --n-envs: the vector environment classes, of dummy, subproc, batched, auto "
                        "(default: dummy,subproc)")
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="hp.KEY=VALUE",
                   help="with --training: hyperparameters over the shipped ones, e.g. --set hp.update_threads=8 "
                        "(the scaling table's one-copy base row keeps one update thread)")
    p.add_argument("--parts", action="store_true",
                   help="also: where each environment's step time goes (physics and the environment's own parts, "
                        "lab and turf, µs per step; wall-clock, so on an idle machine)")
    p.add_argument("--out", help="also write the tables to this Markdown page (e.g. docs/results/speed.md, "
                                 "docs/results/training-speed.md)")
    p.set_defaults(func=run)


def _int_list(text: str, option: str) -> list[int]:
    """The comma-separated integers >= 1 of ``option``; ValueError naming a bad item."""
    values = []
    for item in text.split(","):
        try:
            value = int(item)
        except ValueError:
            value = 0
        if value < 1:
            raise ValueError(f"{option} takes integers >= 1 separated by commas, got {item!r}")
        values.append(value)
    return values


def run(args: argparse.Namespace) -> int:
    if args.steps < 1:
        raise ValueError(f"--steps must be >= 1, got {args.steps}")
    if args.out:
        writable_file(args.out)
    if not args.training and (args.n_envs is not None or args.vec_env is not None):
        raise ValueError("--n-envs and --vec-env are options of --training")
    if args.training and args.parts:
        raise ValueError("--parts is an option of the environment bench, not of --training")
    if args.set and not args.training:
        raise ValueError("--set is an option of --training (hyperparameters, hp.KEY=VALUE)")
    command = f"upright bench --steps {args.steps}"
    if args.training:
        from upright.training import bench  # torch, SB3: only this command

        env_kwargs, hp = split_train_settings(parse_settings(args.set))
        if env_kwargs:
            raise ValueError(f"upright bench --training --set takes hyperparameters (hp.KEY=VALUE), got {args.set}")

        if args.n_envs is None and args.vec_env is not None:
            raise ValueError("--vec-env goes with --n-envs (the scaling table)")
        if args.n_envs is not None:
            vec_envs = (args.vec_env or "dummy,subproc").split(",")
            for vec_env in vec_envs:
                if vec_env not in VEC_ENVS:
                    raise ValueError(f"--vec-env takes {', '.join(VEC_ENVS)} separated by commas, got {vec_env!r}")
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
            counts = _int_list(args.n_envs, "--n-envs")

            def measured(row: Any) -> None:  # the bench takes minutes: each row on stderr as it comes
                train = getattr(row, "train_steps_per_s", None)
                print(f"measured {row.env_id} {getattr(row, 'vec_env', 'processes')} x{row.n_envs}: environment "
                      f"{row.env_steps_per_s:.0f} steps/s" + (f", training {train:.0f}" if train else ""),
                      file=sys.stderr, flush=True)

            rows = bench.run_scaling_bench(args.steps, counts, vec_envs, hp_overrides=hp, report=measured)
            ceiling = bench.run_machine_ceiling(args.steps, counts, report=measured)

            def text(width: int | None) -> str:
                return (bench.format_scaling_bench(rows, load=load, width=width) + "\n\n"
                        + bench.format_machine_ceiling(ceiling, width=width))

            command += f" --training --n-envs {args.n_envs}" + (f" --vec-env {args.vec_env}" if args.vec_env else "")
        else:
            training_rows = bench.run_training_bench(args.steps, hp_overrides=hp)

            def text(width: int | None) -> str:
                return bench.format_training_bench(training_rows, width=width)

            command += " --training"
        command += "".join(f" --set {item}" for item in args.set)
    else:
        bench_rows = run_bench(args.steps)
        parts = run_parts(args.steps) if args.parts else None
        command += " --parts" * args.parts

        def text(width: int | None) -> str:
            return format_bench(bench_rows, width) + (
                "" if parts is None else "\n\nWhere the time goes:\n" + format_parts(parts, width))
    print(text(shutil.get_terminal_size().columns))  # the terminal's width; the page has the full tables
    if args.out:
        _write_bench_page(Path(args.out), text(None), command)
    return 0


def _write_bench_page(path: Path, text: str, command: str) -> None:
    """``text`` (a bench's tables) as a generated Markdown page, headed by the command that wrote it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# Speed: `{command}`\n\nGenerated by `{command} --out {path}`; one run, one machine (the tables' last "
                    f"line), ratios measured side by side.\n\n```\n{text}\n```\n")
    print(f"wrote {path}")


__all__ = ["register", "run"]
