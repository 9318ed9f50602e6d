"""MJCF robot models written from the numbers in the project's reference notes.

The models live beside this file as package data; :func:`model_path` finds them both in a
checkout and in an installed wheel.
"""

from __future__ import annotations

from pathlib import Path

ASSETS_DIR = Path(__file__).resolve().parent

ROBOT_FILES = {
    "nao": ASSETS_DIR / "nao" / "nao.xml",
    "wolfgang": ASSETS_DIR / "wolfgang" / "wolfgang.xml",
}


def model_path(robot: str) -> Path:
    """Return the path of the MJCF file of ``robot`` (``"nao"`` or ``"wolfgang"``)."""
    try:
        return ROBOT_FILES[robot]
    except KeyError:
        raise ValueError(
            f"unknown robot {robot!r}; valid robots: {', '.join(sorted(ROBOT_FILES))}"
        ) from None
