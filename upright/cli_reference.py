"""The command-line reference, ``docs/cli.md``, generated from :func:`upright.cli.build_parser`.

Each command becomes a section with its help line, a synopsis and a table of its arguments (flags,
value, default, help), rendered from the parser's actions rather than argparse's help text, so the
page does not depend on the terminal's width or the Python version's help layout.
``tests/test_cli_reference.py`` checks that the committed page is what this module writes.

    python -m upright.cli_reference            # rewrite docs/cli.md of the source tree
    python -m upright.cli_reference --check    # exit 1 when docs/cli.md is out of date
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

#: The page in the source tree.
PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def _subcommands(parser: argparse.ArgumentParser) -> tuple[dict[str, argparse.ArgumentParser], dict[str, str]]:
    """The parser's subcommands by name, and their help lines."""
    for action in parser._actions:  # argparse keeps no public list of a parser's subparsers
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            return dict(action.choices), helps
    return {}, {}


def _value(action: argparse.Action) -> str:
    """What an argument takes: ``METAVAR``, ``{a,b}``, ``X [X ...]``, or nothing for a switch."""
    if action.nargs == 0:
        return ""
    if action.metavar is not None:
        name = action.metavar if isinstance(action.metavar, str) else " ".join(action.metavar)
    elif action.choices is not None:
        name = "{" + ",".join(str(c) for c in action.choices) + "}"
    else:
        name = action.dest.upper() if action.option_strings else action.dest
    return {"?": f"[{name}]", "*": f"[{name} ...]", "+": f"{name} [{name} ...]"}.get(action.nargs, name)


def _help(action: argparse.Action, prog: str) -> str:
    """The argument's help with argparse's ``%(default)s``-style fields filled in."""
    if not action.help:
        return ""
    fields = {**vars(action), "prog": prog}
    if action.choices is not None:
        fields["choices"] = ", ".join(str(c) for c in action.choices)
    return action.help % fields


def _cell(text: str) -> str:
    """Text for a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _default(action: argparse.Action) -> str:
    """The default worth showing (none for switches, empty values and suppressed ones)."""
    value = action.default
    if action.nargs == 0 or value in (None, argparse.SUPPRESS, [], ()) or not action.option_strings:
        return ""
    return f"`{' '.join(map(str, value)) if isinstance(value, (list, tuple)) else value}`"


def _section(name: str, parser: argparse.ArgumentParser, summary: str, level: int) -> list[str]:
    """One command's section: help, synopsis, argument table, then its own subcommands."""
    actions = [a for a in parser._actions
               if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) and a.help != argparse.SUPPRESS]
    positionals = [_value(a) for a in actions if not a.option_strings]
    children, helps = _subcommands(parser)
    synopsis = " ".join([parser.prog, *positionals, *(["COMMAND"] if children else []),
                         *(["[options]"] if any(a.option_strings for a in actions) else [])])
    lines = [f"{'#' * level} `{name}`", ""]
    if summary or parser.description:
        lines += [(summary or parser.description).strip(), ""]
    lines += ["```", synopsis, "```", ""]
    if actions:
        lines += ["| argument | value | default | what it does |", "|---|---|---|---|"]
        for action in actions:
            flags = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.dest}`"
            value = _value(action)
            lines.append(f"| {flags} | {_cell(f'`{value}`' if value else '')} | {_cell(_default(action))} | "
                         f"{_cell(_help(action, parser.prog))} |")
        lines.append("")
    for child, child_parser in children.items():
        lines += _section(f"{name} {child}", child_parser, helps.get(child, ""), level + 1)
    return lines


def reference(parser: argparse.ArgumentParser | None = None) -> str:
    """The reference page of ``parser`` (default: ``upright``'s) as Markdown."""
    if parser is None:
        from upright.cli import build_parser

        parser = build_parser()
    commands, helps = _subcommands(parser)
    lines = ["# Command-line reference", "",
             "Generated from the parser (`upright.cli.build_parser`) by `python -m upright.cli_reference`; "
             "do not edit by hand. `upright COMMAND --help` prints the same.", "",
             (parser.description or "").strip(), "",
             "| command | what it does |", "|---|---|"]
    lines += [f"| [`{name}`](#{parser.prog}-{name}) | {_cell(helps[name])} |" for name in commands]
    lines.append("")
    for name, sub in commands.items():
        lines += _section(f"{parser.prog} {name}", sub, helps[name], 2)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m upright.cli_reference", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=PAGE, help="the page to write (default: docs/cli.md)")
    parser.add_argument("--check", action="store_true", help="only compare: exit 1 when the page is out of date")
    args = parser.parse_args(argv)
    text = reference()
    if args.check:
        current = args.out.is_file() and args.out.read_text(encoding="utf-8") == text
        print(f"{args.out} is {'current' if current else 'out of date: run python -m upright.cli_reference'}")
        return 0 if current else 1
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
