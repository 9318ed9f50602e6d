"""The files a user hands in and the folders results go to, checked with one kind of error: a
ValueError whose one line names the file and what is wrong with it, which the command line prints
(exit 2) instead of a traceback.

- :func:`read_yaml` and :func:`read_yaml_mapping`: YAML (parameter and hyperparameter files,
  search spaces, a run's ``config.yml``, specs), malformed YAML or a list where a mapping belongs
  named with its file;
- :func:`writable_folder` and :func:`writable_file`: an output path checked before any work
  starts (not a file where a folder belongs, its nearest existing folder writable), so a run of
  many episodes never ends in an error while writing its results.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml


def _yaml_problem(error: yaml.YAMLError) -> str:
    """The first line of a YAML error: what is wrong and on which line (1-based)."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    return f"line {mark.line + 1}: {problem}" if mark is not None else problem


def read_yaml(path: str | Path, what: str = "file") -> Any:
    """The YAML document in ``path`` (``what`` names the kind of file in messages); ValueError for a
    missing file, a folder, a file that is no text or no valid YAML. Read with the safe loader."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{what} {str(path)!r} " + ("is a folder" if path.is_dir() else "does not exist"))
    try:
        return yaml.safe_load(path.read_text())
    except UnicodeDecodeError:
        raise ValueError(f"{what} {str(path)!r} is not a text file") from None
    except yaml.YAMLError as error:
        raise ValueError(f"{what} {str(path)!r} is not valid YAML ({_yaml_problem(error)})") from None


def read_yaml_mapping(path: str | Path, what: str = "file") -> dict[str, Any]:
    """:func:`read_yaml` of a file that holds a mapping (``KEY: VALUE`` lines; an empty file is
    ``{}``); ValueError naming the file when it holds a list or a single value instead."""
    data = read_yaml(path, what)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{what} {str(path)!r} must hold a mapping (KEY: VALUE lines), not a "
                         f"{type(data).__name__}")
    return data


def _nearest_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists."""
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def writable_folder(path: str | Path, option: str = "--out") -> None:
    """ValueError (naming ``option``) unless ``path`` is a folder, or can be made as one, in which
    this process can write: an existing file there, a file among its parents, or a nearest existing
    folder that refuses a new file (read-only, no permission) are refused. Creates nothing that
    stays (a probe file is made and deleted in the nearest existing folder)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{option} {str(path)!r} is a file, not a folder")
    existing = _nearest_existing(path)
    if not existing.is_dir():
        raise ValueError(f"{option} {str(path)!r} cannot be made: {str(existing)!r} is a file, not a folder")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        raise ValueError(f"{option} {str(path)!r} is not writable: no file can be made in {str(existing)!r} "
                         f"({error.strerror or error})") from None


def writable_file(path: str | Path, option: str = "--out") -> None:
    """ValueError (naming ``option``) unless ``path`` can be written as a file: not a folder, in a
    folder that :func:`writable_folder` accepts."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{option} {str(path)!r} is a folder; give a file name")
    writable_folder(path.parent, option)


__all__ = ["read_yaml", "read_yaml_mapping", "writable_file", "writable_folder"]
