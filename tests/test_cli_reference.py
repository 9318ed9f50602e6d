"""``docs/cli.md`` is the reference that :mod:`upright.cli_reference` generates from the parser,
so a changed option shows up in the docs the moment it is made."""

from __future__ import annotations

import argparse
import difflib

from upright.cli_reference import PAGE, main, reference


def test_the_committed_cli_reference_is_the_generated_one():
    generated = reference()
    committed = PAGE.read_text(encoding="utf-8")
    diff = "\n".join(difflib.unified_diff(committed.splitlines(), generated.splitlines(), "docs/cli.md",
                                          "reference()", lineterm="", n=1))
    assert committed == generated, f"docs/cli.md is out of date: run python -m upright.cli_reference\n{diff}"


def test_every_command_and_option_is_in_the_reference():
    from upright.cli import build_parser

    page = reference()
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    for name, sub in commands.items():
        assert f"## `upright {name}`" in page
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
                continue
            for flag in action.option_strings:
                assert f"`{flag}`" in page, (name, flag)


def test_a_small_parser_renders_its_table_and_check_names_a_stale_page(tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="tool", description="A tool.")
    sub = parser.add_subparsers(dest="command")
    p = sub.add_parser("run", help="run it")
    p.add_argument("target", help="what to run")
    p.add_argument("--times", type=int, default=3, help="how often (default: %(default)s)")
    p.add_argument("--mode", choices=["a", "b"], default="a", help="a | b")
    p.add_argument("--fast", action="store_true", help="skip the checks")
    page = reference(parser)
    assert "| [`run`](#tool-run) | run it |" in page
    assert "```\ntool run target [options]\n```" in page
    assert "| `--times` | `TIMES` | `3` | how often (default: 3) |" in page
    assert "| `--mode` | `{a,b}` | `a` | a \\| b |" in page
    assert "| `--fast` |  |  | skip the checks |" in page
    stale = tmp_path / "cli.md"
    stale.write_text("old\n")
    assert main(["--check", "--out", str(stale)]) == 1
    assert "out of date" in capsys.readouterr().out
    assert main(["--out", str(stale)]) == 0 and main(["--check", "--out", str(stale)]) == 0
