"""The layers of docs/architecture.md, checked by import-linter's contracts in pyproject.toml (the
layers, the package root imported by none below the command line, no import cycles, the command
groups standing alone, the robot-side code), and no import of ``upright`` inside a function below
the command line.

``upright``'s subpackages live in top-level folders (``pyproject.toml`` maps them), so the package
as Python imports it is assembled here from where each subpackage is found (the installed view,
editable or not) into a temporary folder, on which ``lint-imports`` builds its import graph: every
import statement, at module level or inside a function.
"""

from __future__ import annotations

import ast
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("importlinter", reason="install the test extra: pip install -e '.[test]'")

ROOT = Path(__file__).resolve().parents[1]
SUBPACKAGES = ("assets", "envs", "baselines", "policies", "eval", "tuning", "training")


def package_tree(dest: Path) -> Path:
    """Copy every module of ``upright`` (root and subpackages, from wherever Python finds them)
    into ``dest/upright/``, laid out as the installed package; return ``dest``."""
    sources = {Path("upright"): importlib.util.find_spec("upright").submodule_search_locations[0]}
    for name in SUBPACKAGES:
        sources[Path("upright", name)] = importlib.util.find_spec(f"upright.{name}").submodule_search_locations[0]
    for target, source in sources.items():
        for path in Path(source).rglob("*.py"):
            copied = dest / target / path.relative_to(source)
            copied.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copied)
    return dest


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with the contracts of pyproject.toml on the package in ``tree``."""
    command = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    return subprocess.run([sys.executable, "-c", command, "--no-logo", "--no-cache", str(ROOT / "pyproject.toml")],
                          cwd=tree, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return package_tree(tmp_path_factory.mktemp("package"))


def test_the_contracts_are_kept(tree):
    result = lint_imports(tree)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 6 kept, 0 broken." in result.stdout


@pytest.mark.parametrize("module, line, broken, contracts", [
    # the residual-prior hook reaching up into the baselines again, at module level (a reversed
    # layer is also a cycle between the layers)
    ("upright/envs/base.py", "from upright.baselines import make_controller",
     "upright.envs.base -> upright.baselines", 2),
    # the same inside a function: the graph has every import statement
    ("upright/policies/run.py", "def config(path):\n    from upright.training.config import load_hyperparams",
     "upright.policies.run -> upright.training.config", 2),
    # a controller reading the simulation's state instead of its sensors
    ("upright/baselines/common/controller.py", "from upright.envs.simulation import Simulation",
     "upright.baselines.common.controller -> upright.envs.simulation", 1),
    # a lower layer importing the package root
    ("upright/eval/runner.py", "import upright", "upright.eval.runner -> upright (l.", 1),
    # a cycle of two modules of one package, one side under TYPE_CHECKING
    ("upright/tuning/summary.py", "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
     "    from upright.tuning.study import run_trials", "No cycles are allowed in upright.tuning", 1),
    # one command group reaching into another
    ("upright/commands/sweep.py", "from upright.commands.train import run as run_train",
     "upright.commands.sweep -> upright.commands.train", 1),
])
def test_a_reverse_import_breaks_them(tree, tmp_path, module, line, broken, contracts):
    broken_tree = tmp_path / "package"
    shutil.copytree(tree, broken_tree)
    with (broken_tree / module).open("a") as file:
        file.write(f"\n\n{line}\n")
    result = lint_imports(broken_tree)
    assert result.returncode == 1, result.stdout + result.stderr
    assert broken in result.stdout and f"{6 - contracts} kept, {contracts} broken" in result.stdout, result.stdout


#: The command line, whose commands import torch, SB3 and Optuna inside their functions so that
#: the others start without them: the one place where imports of ``upright`` may sit in a function.
COMMAND_LINE = ("upright/cli.py", "upright/cli_reference.py", "upright/commands/")


def function_imports(tree: Path) -> list[str]:
    """Each import of ``upright`` inside a function of a module below the command line, as
    ``path:line``: the layers import at module level, so that their dependencies are there to read."""
    found = []
    for path in sorted((tree / "upright").rglob("*.py")):
        name = path.relative_to(tree).as_posix()
        if name.startswith(COMMAND_LINE):
            continue
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                modules = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                           else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0
                           else ["upright."] if isinstance(node, ast.ImportFrom) else [])
                if any(m == "upright" or m.startswith("upright.") for m in modules):
                    found.append(f"{name}:{node.lineno}")
    return sorted(set(found))


def test_no_upright_import_inside_a_function_below_the_command_line(tree, tmp_path):
    assert function_imports(tree) == []
    broken_tree = tmp_path / "package"
    shutil.copytree(tree, broken_tree)
    with (broken_tree / "upright/training/bench.py").open("a") as file:
        file.write("\n\ndef late():\n    if True:\n        from upright.training.vec_env import make_train_env\n")
    module = broken_tree / "upright/training/bench.py"
    assert function_imports(broken_tree) == [f"upright/training/bench.py:{len(module.read_text().splitlines())}"]
