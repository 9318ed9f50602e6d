"""``upright ship``: a trained model of a run folder copied into the user's zoo (``policies/zoo/NAME``
of the current directory, ``$UPRIGHT_ZOO`` or ``--zoo``), loadable as ``zoo:NAME``."""

from __future__ import annotations

import argparse

from upright.commands import Subparsers
from upright.training.ship import ship


def register(subparsers: Subparsers) -> None:
    p = subparsers.add_parser("ship", help="copy a trained model of a run folder into your zoo (./policies/zoo/NAME)")
    p.add_argument("run", help="run folder of upright train")
    p.add_argument("--name", required=True, help="zoo name, e.g. nao-getup-residual-keyframe")
    p.add_argument("--model", default="best",
                   help="best: the best held-out evaluation during training (default); final: the final model; "
                        "selected: the checkpoint named in the run's selection.json (upright experiment "
                        "checkpoint-selection)")
    p.add_argument("--zoo", default=None, help="zoo folder (default: $UPRIGHT_ZOO, else policies/zoo of the current "
                                               "directory; zoo:NAME looks there first, then in the package's zoo)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing entry of that name")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    entry = ship(args.run, args.name, model=args.model, zoo=args.zoo, overwrite=args.overwrite)
    print(f"wrote {entry} (load it as --policy zoo:{args.name})")
    return 0


__all__ = ["register", "run"]
