"""``upright zoo-conf``: our hyperparameters as rl-baselines3-zoo's ``--conf-file``, one complete
block per environment id."""

from __future__ import annotations

import argparse
from pathlib import Path

from upright.commands import Subparsers
from upright.envs.files import writable_file
from upright.policies.algorithms import ALGOS
from upright.training.zoo_conf import zoo_conf_text


def register(subparsers: Subparsers) -> None:
    p = subparsers.add_parser("zoo-conf", help="write our hyperparameters as rl-baselines3-zoo's --conf-file (one "
                                               "complete block per environment id)")
    p.add_argument("--algo", default="ppo", choices=ALGOS, help="algorithm (default: ppo)")
    p.add_argument("--prior", default=None, help="the prior's blocks (ID:PRIOR) and env_kwargs prior=PRIOR")
    p.add_argument("--env", action="append", default=[], help="an environment id (repeat; default: all)")
    p.add_argument("--hyperparams", default=None, help="hyperparameter file (default: the shipped one)")
    p.add_argument("--out", default=None, help="YAML file to write (default: print it)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    text = zoo_conf_text(args.algo, args.prior, args.env or None, args.hyperparams)
    if args.out is None:
        print(text, end="")
        return 0
    writable_file(args.out)
    Path(args.out).write_text(text)
    print(f"wrote {args.out} (python -m rl_zoo3.train --algo {args.algo} --env ID --gym-packages upright "
          f"--conf-file {args.out})")
    return 0


__all__ = ["register", "run"]
