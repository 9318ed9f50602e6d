"""The ``upright`` commands, one module per command group (:mod:`upright.cli` lists them in
``upright --help``'s order).

A module's ``register(subparsers)`` adds its command's parser (or its group's parsers), with the
function that runs it as the parser's ``func`` default: ``run(args)`` (``run_NAME(args)`` in a
module of several commands), which returns the exit status. Bad input raises ValueError, which the
command line turns into one line and exit 2.

A module imports at its top only what starting the command line may load; what needs torch,
stable-baselines3 or Optuna it imports inside its ``run``, so ``upright --help`` and the light
commands start without them. The modules do not import one another (contract "commands" in
pyproject.toml).
"""

from __future__ import annotations

import argparse

#: What ``register`` receives: the ``upright`` parser's subparsers (``ArgumentParser.add_subparsers``).
Subparsers = argparse._SubParsersAction  # argparse names no public type for it

__all__ = ["Subparsers"]
