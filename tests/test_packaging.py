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


def _pins() -> dict[str, str]:
    """constraints.txt as canonical package name → pinned version."""
    from packaging.utils import canonicalize_name

    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version
    return pins


def test_the_lock_holds_rl_zoo3_and_every_pin_meets_the_pinned_packages_requirements():
    """``pip install -c constraints.txt rl_zoo3`` resolves: rl_zoo3 is in the test extra and the
    lock, and no pin excludes what another pinned package requires (python-dateutil < 3 for
    pytablewriter's typepy)."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    assert "rl-zoo3" in {canonicalize_name(Requirement(r).name) for r in extra}
    pins = _pins()
    assert "rl-zoo3" in pins
    needs: dict[str, list[Requirement]] = {}
    for name in pins:
        try:
            needs[name] = [Requirement(text) for text in requires(name) or []]
        except PackageNotFoundError:  # pinned for a platform or extra not installed here
            pass
    wanted = {name: {""} for name in pins}  # the extras some pinned package asks of each
    for name, requirements in needs.items():
        for need in requirements:
            if need.marker is None or need.marker.evaluate({"extra": ""}):
                wanted.setdefault(canonicalize_name(need.name), {""}).update(need.extras)
    broken = []
    for name, requirements in needs.items():
        version = pins[name]
        for need in requirements:
            if need.marker is not None and not any(need.marker.evaluate({"extra": e}) for e in wanted[name]):
                continue
            pinned = pins.get(canonicalize_name(need.name))
            if pinned is not None and not need.specifier.contains(pinned, prereleases=True):
                broken.append(f"{name}=={version} needs {need}, the lock pins {pinned}")
    assert broken == []
