"""The ``upright`` command line: the parser, made of the commands' own parsers (one module per
command group in :mod:`upright.commands`, each registering its subparsers), and :func:`main`, which
runs the chosen command and turns bad input into one line and exit 2."""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from importlib import import_module
from importlib.metadata import requires

from upright import __version__

#: The command groups (modules of :mod:`upright.commands`), in the order ``upright --help`` lists
#: their commands; imported when the parser is built, so that a missing extra is named (:func:`main`).
COMMANDS = ("robots", "bench", "report", "episodes", "experiment", "optimize", "identify", "train", "sweep", "soak",
            "check_same", "ship", "history", "export", "zoo_conf")
#: A requirement of an extra in the distribution's metadata: ``NAME[...] ...; extra == "EXTRA"``.
_EXTRA_REQUIREMENT = re.compile(r'\s*([A-Za-z0-9][A-Za-z0-9._-]*)[^;]*;.*\bextra\s*==\s*"([^"]+)"')


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="upright",
        description="Humanoid get-up and walking environments in MuJoCo (NAO V6, Wolfgang-OP).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in COMMANDS:
        import_module(f"upright.commands.{group}").register(subparsers)
    return parser


def missing_extra(error: ModuleNotFoundError) -> str | None:
    """The extra of pyproject.toml's ``optional-dependencies`` that installs the module ``error``
    could not import (read from the installed distribution's metadata; a module's name is its
    distribution's with ``-`` as ``_``): the first that lists it, the test extra last; None when no
    extra does (a module of upright itself, a broken install)."""
    module = (error.name or "").split(".")[0]
    extras = []
    for requirement in requires("upright") or []:
        match = _EXTRA_REQUIREMENT.match(requirement)
        if match and re.sub(r"[-_.]+", "_", match[1]).lower() == module.lower():
            extras.append(match[2])
    return sorted(extras, key=lambda extra: extra == "test")[0] if extras else None


def _needs_extra(command: str | None, error: ModuleNotFoundError) -> int:
    """Say in one line which extra ``command`` (None: the command line itself) needs (exit 2), or
    raise ``error`` again when no extra installs its module."""
    extra = missing_extra(error)
    if extra is None:
        raise error
    where = f"upright {command}" if command else "upright"
    print(f"{where}: needs the {extra!r} extra: pip install 'upright[{extra}]' (no module {error.name!r})",
          file=sys.stderr)
    return 2


def command_line(argv: list[str]) -> str:
    """The command ``upright ARGV`` as results, summaries and run folders record it, with the password
    of any database URL in it hidden (``--storage URL``, ``--set storage=URL``)."""
    if not any("://" in word and "@" in word for word in argv):
        return shlex.join(["upright", *argv])
    from upright.tuning.storage import shown_storage  # SQLAlchemy: only for a command line that holds a URL

    return shlex.join(["upright", *map(shown_storage, argv)])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        parser = build_parser()
    except ModuleNotFoundError as error:  # an install without the environments: every command needs them
        return _needs_extra(next((word for word in argv if not word.startswith("-")), None), error)
    args = parser.parse_args(argv)
    args.command_line = command_line(argv)
    try:
        return int(args.func(args))
    except ModuleNotFoundError as error:  # a command (or a policy it loads) of an extra that is not installed
        return _needs_extra(args.command, error)
    except ValueError as error:  # bad input: a clear message, no traceback
        print(f"upright {args.command}: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # a file that cannot be read or written, a folder another process writes
        print(f"upright {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"upright {args.command}: interrupted", file=sys.stderr)
        return 130


__all__ = ["COMMANDS", "build_parser", "command_line", "main", "missing_extra"]
