"""Every kind of configuration file, its schema and the files of it this repository holds; the JSON
schemas published in ``docs/schemas/`` so that an editor checks the files as they are typed.

``python -m upright.training.schemas`` writes ``docs/schemas/NAME.json`` for each kind of
:func:`config_files` and ``docs/schemas/README.md`` (which file takes which schema, and how to
tell an editor); ``--check`` writes nothing and exits 1 naming the files that are not current
(``tests/test_config_schemas.py`` runs it). The schemas are the ones the project checks the files
with (:mod:`upright.envs.schema`), so an editor and ``upright`` refuse the same typos.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from upright.baselines import controller_names
from upright.baselines.common.params import Params, data_file_schema
from upright.baselines.keyframe.library import LibraryFile, load_library
from upright.baselines.kinematics.forward import RobotChains, chain_data
from upright.envs.robots import ROBOT_NAMES, get_robot
from upright.envs.robots.user_model import map_schema
from upright.envs.schema import json_schema, load_config
from upright.eval.experiments import protocol_data
from upright.eval.experiments.schemas import PROTOCOL_SCHEMAS
from upright.policies.algorithms import ALGOS
from upright.policies.feedback import FeedbackSpec, load_feedback_spec
from upright.training.config import hyperparameter_schema, load_hyperparams
from upright.training.sweep import SweepSpace, load_sweep_space
from upright.tuning.space import SearchSpace

#: The repository root (the files' globs are relative to it) and the schemas' folder in it.
ROOT = Path(__file__).resolve().parents[1]
SCHEMAS_DIR = Path("docs", "schemas")
#: The JSON Schema dialect pydantic writes.
DIALECT = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True)
class ConfigFiles:
    """One kind of configuration file: ``docs/schemas/<name>.json`` is its JSON schema
    (``schema()``), ``files`` the globs (relative to the repository root) of the files of this kind
    that the repository holds, and ``check(path)`` loads one of them the way the project does
    (ValueError naming what its schema refuses)."""

    name: str
    description: str
    schema: Callable[[], dict[str, Any]]
    files: tuple[str, ...]
    check: Callable[[Path], object]


def _params_families() -> list[type[Params]]:
    """The parameter sets of the registered baselines that have data files."""
    controller_names()  # every baseline registered, so every family's Params class imported
    found: list[type[Params]] = []
    pending = list(Params.__subclasses__())
    while pending:
        cls = pending.pop()
        pending += cls.__subclasses__()
        if cls.DATA_FILE is not None and cls not in found:
            found.append(cls)
    return sorted(found, key=lambda cls: str(cls.DATA_FILE))


def _robot(path: Path) -> str:
    """The robot of a data file named ``<family>_<robot>.yaml``."""
    return path.stem.rsplit("_", 1)[1]


def _check_space(path: Path) -> object:
    return load_config(SearchSpace, path, "search space file")


def _check_hyperparams(algo: str) -> Callable[[Path], object]:
    """The check of ``algo``'s hyperparameter files: every block, and ``default`` merged."""
    return lambda path: load_hyperparams(algo, "default", None, path)


def config_files() -> tuple[ConfigFiles, ...]:
    """Every kind of configuration file of the project."""
    kinds = [ConfigFiles(f"baselines-{cls.DATA_FILE.split('_{')[0]}",  # type: ignore[union-attr]
                         f"{cls.__name__}: a baseline's parameters for one robot (keys ending in _deg: degrees)",
                         lambda cls=cls: data_file_schema(cls), (f"baselines/data/{cls.DATA_FILE.format(robot='*')}",),
                         lambda path, cls=cls: cls.load(_robot(path)))
             for cls in _params_families()]
    kinds += [
        ConfigFiles("baselines-keyframe", "The keyframe get-up's motion library for one robot (degrees, ms, mm)",
                    lambda: json_schema(LibraryFile), ("baselines/data/keyframe_*.yaml",),
                    lambda path: load_library(get_robot(_robot(path)), path)),
        ConfigFiles("baselines-kinematics", "The baselines' limb chains and hand points of one robot",
                    lambda: json_schema(RobotChains), ("baselines/data/kinematics_*.yaml",),
                    lambda path: chain_data(_robot(path))),
        ConfigFiles("search-space", "A search space of `upright optimize` (tuning/spaces/)",
                    lambda: json_schema(SearchSpace), ("tuning/spaces/*.yaml", "tuning/spaces/*/*.yaml"), _check_space),
        ConfigFiles("sweep", "A search space of `upright train --sweep` (training/sweeps/)",
                    lambda: json_schema(SweepSpace), ("training/sweeps/*.yml",), load_sweep_space),
        ConfigFiles("feedback", "A hand-designed residual (feedback:NAME, policies/feedback/)",
                    lambda: json_schema(FeedbackSpec), ("policies/feedback/*.yml",),
                    lambda path: load_feedback_spec(str(path))),
    ]
    kinds += [ConfigFiles(f"hyperparams-{algo}", f"{algo.upper()} hyperparameters: blocks default, <env id> and "
                                                 "<env id>:<prior> (training/hyperparams/)",
                          lambda algo=algo: json_schema(dict[str, hyperparameter_schema(algo) | None]),
                          (f"training/hyperparams/{algo}.yml", f"training/hyperparams/{algo}-*.yml"),
                          _check_hyperparams(algo))
              for algo in ALGOS]
    kinds += [ConfigFiles(f"experiment-{name}", f"The cells of `upright experiment` protocols ({name}.py)",
                          lambda schema=schema: json_schema(schema), (f"eval/experiments/{name}.yaml",),
                          lambda path: protocol_data(f"upright.eval.experiments.{path.stem}"))
              for name, schema in sorted(PROTOCOL_SCHEMAS.items())]
    kinds += [ConfigFiles(f"model-map-{robot}", f"A model map of a user's MJCF of a {robot} (--set model_map=FILE)",
                          lambda robot=robot: json_schema(map_schema(get_robot(robot))), (), lambda path: None)
              for robot in ROBOT_NAMES]
    return tuple(kinds)


def committed_files(kind: ConfigFiles, root: Path = ROOT) -> list[Path]:
    """The files of ``kind`` under ``root``, sorted."""
    return sorted({path for pattern in kind.files for path in root.glob(pattern)})


def published(kind: ConfigFiles) -> str:
    """The text of ``docs/schemas/<name>.json`` for ``kind``."""
    schema = {"$schema": DIALECT, "title": kind.name, "description": kind.description, **kind.schema()}
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def readme(kinds: Sequence[ConfigFiles]) -> str:
    """The text of ``docs/schemas/README.md``: each schema, the files it checks, and an editor's
    settings that apply them."""
    lines = ["# Schemas of the configuration files", "",
             "Written by `python -m upright.training.schemas` from the schemas `upright` checks the files with",
             "(`upright/envs/schema.py`); do not edit them by hand. A typo in a file is an error of one line",
             "naming the file, the key and the valid keys, in `upright` (exit 2) and in an editor that reads",
             "these schemas.", "", "| schema | files | what |", "| --- | --- | --- |"]
    lines += [f"| [{kind.name}.json]({kind.name}.json) | {', '.join(f'`{f}`' for f in kind.files) or '(yours)'} "
              f"| {kind.description} |" for kind in kinds]
    mapping = {f"./docs/schemas/{kind.name}.json": list(kind.files) for kind in kinds if kind.files}
    lines += ["", "With the YAML extension of VS Code (`redhat.vscode-yaml`), in `.vscode/settings.json`:", "",
              "```json", json.dumps({"yaml.schemas": mapping}, indent=2), "```", "",
              "Or in a file of your own (a model map, a search space), as its first line:", "",
              "```yaml", "# yaml-language-server: $schema=<path to docs/schemas>/model-map-nao.json", "```", ""]
    return "\n".join(lines)


def expected(kinds: Sequence[ConfigFiles]) -> dict[Path, str]:
    """Every file of ``docs/schemas/`` (relative to the repository root) and its text."""
    files = {SCHEMAS_DIR / f"{kind.name}.json": published(kind) for kind in kinds}
    files[SCHEMAS_DIR / "README.md"] = readme(kinds)
    return files


def stale(root: Path = ROOT) -> list[Path]:
    """The files of ``docs/schemas/`` under ``root`` that are missing, differ from what
    :func:`expected` makes, or are left over from a kind that is gone."""
    files = expected(config_files())
    folder = root / SCHEMAS_DIR
    left_over = [path.relative_to(root) for path in folder.glob("*") if path.relative_to(root) not in files]
    differ = [path for path, text in files.items()
              if not (root / path).is_file() or (root / path).read_text() != text]
    return sorted(differ + left_over)


def write(root: Path = ROOT) -> list[Path]:
    """Write ``docs/schemas/`` under ``root`` (leftovers removed); the files written."""
    files = expected(config_files())
    folder = root / SCHEMAS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for path in folder.glob("*"):
        if path.relative_to(root) not in files:
            path.unlink()
    for path, text in files.items():
        (root / path).write_text(text)
    return sorted(files)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m upright.training.schemas", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if docs/schemas/ is not current")
    args = parser.parse_args(argv)
    if args.check:
        out_of_date = stale()
        for path in out_of_date:
            print(f"{path} is not current: run python -m upright.training.schemas", file=sys.stderr)
        return 1 if out_of_date else 0
    for path in write():
        print(path)
    return 0


__all__ = ["ConfigFiles", "DIALECT", "ROOT", "SCHEMAS_DIR", "committed_files", "config_files", "expected", "main",
           "published", "readme", "stale", "write"]


if __name__ == "__main__":
    raise SystemExit(main())
