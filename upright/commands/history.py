"""``upright history``: the record of every training run (``DOCS_DIR/training/``), printed, added
to from finished run folders, or written as its page with the learning curves."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from upright.commands import Subparsers
from upright.eval.history import (DEFAULT_DOCS_DIR, add_run, read_curves, read_runs, record_paths, runs_tables,
                                   write_docs)
from upright.eval.tables import print_tables


def register(subparsers: Subparsers) -> None:
    p = subparsers.add_parser("history", help="the record of every training run (DOCS_DIR/training/): print it, "
                                              "add finished run folders to it, write its page and learning curves")
    p.add_argument("--add", nargs="+", default=[], metavar="RUN_DIR",
                   help="record these run folders of upright train (config, command, learning curve, the "
                        "prior's evaluation, selection.json)")
    p.add_argument("--verdict", default="", help="--add: what became of the run, e.g. 'not shipped: below the prior'")
    p.add_argument("--shipped", default="", help="--add: the zoo entry and checkpoint it was shipped as, if any")
    p.add_argument("--changed", default="", help="--add: what the run changed against the runs before it")
    p.add_argument("--round", type=int, default=None, help="--add: the round of runs it belongs to")
    p.add_argument("--docs", action="store_true",
                   help="write DOCS_DIR/training-runs.md and the learning-curve PNGs of curves.yaml")
    p.add_argument("--docs-dir", default=str(DEFAULT_DOCS_DIR), metavar="DOCS_DIR",
                   help="the folder holding the record (DOCS_DIR/training/: runs.csv, curves.csv, curves.yaml) "
                        "and its page; default: docs/results of the current directory")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    record, page = record_paths(args.docs_dir)
    for run_dir in args.add:
        row = add_run(run_dir, record, verdict=args.verdict, shipped=args.shipped, changed=args.changed,
                      round_=args.round)
        print(f"recorded {row['name']} in {record / 'runs.csv'} and {record / 'curves.csv'}")
    if args.docs:
        own_dir = Path(args.docs_dir) != DEFAULT_DOCS_DIR
        command = "upright history --docs" + (f" --docs-dir {args.docs_dir}" if own_dir else "")
        for path in write_docs(page, record, command=command):
            print(f"wrote {path}")
    elif not args.add:  # the terminal's short form: the page has every column
        table = runs_tables(read_runs(record), read_curves(record))[0]
        short = ("name", "env", "prior", "algo", "steps", "periodic", "prior_alone", "shipped")
        print_tables([replace(table, columns=[c for c in table.columns if c.key in short])])
    return 0


__all__ = ["register", "run"]
