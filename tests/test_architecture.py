"""The layers of docs/architecture.md, checked by import-linter's contracts in pyproject.toml.

``upright``'s subpackages live in top-level folders (``pyproject.toml`` maps them), so the package
as Python imports it is assembled here from where each subpackage is found (the installed view,
editable or not) into a temporary folder, on which ``lint-imports`` builds its import graph: every
import statement, at module level or inside a function.
"""

from __future__ import annotations

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
    assert "Contracts: 3 kept, 0 broken." in result.stdout


@pytest.mark.parametrize("module, line, broken", [
    # the residual-prior hook reaching up into the baselines again, at module level
    ("upright/envs/base.py", "from upright.baselines import make_controller",
     "upright.envs.base -> upright.baselines"),
    # the same inside a function: the graph has every import statement
    ("upright/policies/run.py", "def config(path):\n    from upright.training.config import load_hyperparams",
     "upright.policies.run -> upright.training.config"),
    # a controller reading the simulation's state instead of its sensors
    ("upright/baselines/common/controller.py", "from upright.envs.simulation import Simulation",
     "upright.baselines.common.controller -> upright.envs.simulation"),
])
def test_a_reverse_import_breaks_them(tree, tmp_path, module, line, broken):
    broken_tree = tmp_path / "package"
    shutil.copytree(tree, broken_tree)
    with (broken_tree / module).open("a") as file:
        file.write(f"\n\n{line}\n")
    result = lint_imports(broken_tree)
    assert result.returncode == 1, result.stdout + result.stderr
    assert broken in result.stdout and "1 broken" in result.stdout, result.stdout
