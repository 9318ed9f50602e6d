"""MJCF robot models written from the numbers in the project's reference notes.

The models live beside this file as package data; :func:`model_path` finds them both in a
checkout and in an installed wheel.
"""

from __future__ import annotations

from pathlib import Path

ASSETS_DIR = Path(__file__).resolve().parent

#: robot name → its MJCF file: every folder here holding ``<folder>/<folder>.xml`` is one robot.
ROBOT_FILES = {folder.name: folder / f"{folder.name}.xml" for folder in sorted(ASSETS_DIR.iterdir())
               if (folder / f"{folder.name}.xml").is_file()}


def model_path(robot: str) -> Path:
    """Return the path of the MJCF file of ``robot`` (a key of :data:`ROBOT_FILES`)."""
    try:
        return ROBOT_FILES[robot]
    except KeyError:
        raise ValueError(
            f"unknown robot {robot!r}; valid robots: {', '.join(sorted(ROBOT_FILES))}"
        ) from None
