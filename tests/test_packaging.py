"""The wheel's package list: ``pyproject.toml`` maps each top-level folder to a package through
``package-dir`` and lists the packages by hand, so a new subfolder would silently drop out of the
wheel unless it is listed. Every folder with an ``__init__.py`` under a mapped folder must be."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_in_the_wheel():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    package_dir: dict[str, str] = setuptools["package-dir"]
    listed = set(setuptools["packages"])
    found = set()
    for package, folder in package_dir.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            found.add(".".join((package, *relative.parts)))
    assert found, "no package folders found under package-dir"
    assert sorted(found - listed) == [], "package folders missing from [tool.setuptools] packages"
    assert sorted(listed - found) == [], "listed packages without a folder"
