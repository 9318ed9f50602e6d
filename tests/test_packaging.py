"""The wheel's package list: ``pyproject.toml`` maps each top-level folder to a package through
``package-dir`` and lists the packages by hand, so a new subfolder would silently drop out of the
wheel unless it is listed. Every folder with an ``__init__.py`` under a mapped folder must be.
The lock against the pinned packages' requirements. The three installs: the bare, robot-side one
(baselines, observation builder, ONNX runtime) runs an export's robot loop without the extras'
packages, in a fresh virtual environment too; a command whose extra is missing names it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from importlib.metadata import distribution, requires
from pathlib import Path

import pytest

from upright.training.export import EXAMPLE_TOLERANCE

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


#: The robot side of an export (docs/export.md's loop) on the recorded inputs of its first prior
#: vectors' episode: the prior's targets against its test vectors, the observation and the graph's
#: action against ``example_io.npz`` where that holds the same step. Prints the largest differences
#: and the third-party packages that were imported. ``sys.argv``: the export folder, the cycles.
ROBOT_LOOP = """
import json, sys
import numpy as np
from upright.baselines import make_controller
from upright.envs.sensors import Sensors, observation_from_sensors
from upright.policies.onnx_policy import ExportedActor

folder, cycles = sys.argv[1], int(sys.argv[2])
actor = ExportedActor(folder)
spec = actor.spec
prior = make_controller(spec["prior"]["name"], spec["robot"], spec["task"], params=spec["prior"]["params"])
vectors, examples = np.load(f"{folder}/prior_vectors.npz"), np.load(f"{folder}/example_io.npz")
seed = int(vectors["episode0.seed"])
recorded = {field: vectors[f"episode0.{field}"] for field in Sensors.__dataclass_fields__}
example_at = {int(step): i for i, (s, step) in enumerate(zip(examples["seed"], examples["step"])) if s == seed}
worst = {"prior": 0.0, "observation": 0.0, "action": 0.0, "compared": 0}
for k in range(cycles):
    sensors = Sensors(**{f: float(v[k]) if f == "time" else v[k].copy() for f, v in recorded.items()})
    if k == 0:
        prior.reset(sensors, np.random.default_rng(seed))
    prior_targets = prior.step(sensors)
    worst["prior"] = max(worst["prior"], float(np.abs(prior_targets - vectors["episode0.targets"][k]).max()))
    observation = observation_from_sensors(sensors, None, prior_targets)
    action = actor(observation)
    if k in example_at:
        i = example_at[k]
        worst["observation"] = max(worst["observation"], float(np.abs(observation - examples["observation"][i]).max()))
        worst["action"] = max(worst["action"], float(np.abs(action - examples["action"][i]).max()))
        worst["compared"] += 1
worst["imported"] = sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[3].split(",")))
print(json.dumps(worst))
"""
#: What the robot side must not need: the training and environment extras' packages.
NOT_ROBOT_SIDE = ("torch", "stable_baselines3", "matplotlib", "imageio_ffmpeg", "gymnasium", "tensorboard", "optuna",
                  "onnx", "tqdm", "rich")
#: A meta-path finder that makes the packages named in ``UPRIGHT_ABSENT`` (comma-separated) missing,
#: as in an install without them; run before a test's own code (``python -c BLOCK + CODE``).
ABSENT = """
import importlib.abc, os, sys
class _Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in os.environ["UPRIGHT_ABSENT"].split(","):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, _Absent())
"""
EXPORT = ROOT / "policies" / "zoo" / "wolfgang-getup-residual-spline" / "onnx"


def _check_robot_loop(stdout: str) -> None:
    result = json.loads(stdout.strip().splitlines()[-1])
    assert result["imported"] == [], result
    assert result["compared"] >= 10 and result["prior"] <= 1e-9, result
    assert result["observation"] == 0.0 and result["action"] <= EXAMPLE_TOLERANCE, result


def test_the_robot_side_runs_without_the_extras_packages():
    """docs/export.md's robot loop with none of the environment's or training's packages there (a
    finder makes them missing): ``import upright`` registers no environment and the loop imports
    none of them, reproducing the prior's test vectors and the graph's examples."""
    code = ABSENT + ROBOT_LOOP
    env = {**os.environ, "UPRIGHT_ABSENT": ",".join(NOT_ROBOT_SIDE)}
    done = subprocess.run([sys.executable, "-c", code, str(EXPORT), "300", ",".join(NOT_ROBOT_SIDE)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    _check_robot_loop(done.stdout)


def test_a_command_whose_extra_is_missing_names_it_in_one_line():
    """Without the train extra's packages: ``train``, ``optimize`` and ``eval`` of a trained policy
    name the extra (exit 2) and ``eval`` of a baseline runs; without the environments' (the bare,
    robot-side install) every command names ``envs``."""
    code = ABSENT + """
from upright.cli import main
for argv in map(str.split, sys.argv[1:]):
    print(argv[0], main(argv), flush=True)
"""
    cases = {
        ("torch", "stable_baselines3", "optuna", "matplotlib", "onnx", "tensorboard"): [
            ("train --env upright/WolfgangGetUp-v0 --steps 64", 2, "upright train: needs the 'train' extra: "
                                                                   "pip install 'upright[train]' (no module 'torch')"),
            ("optimize --controller spline --robot wolfgang", 2, "upright optimize: needs the 'train' extra"),
            ("eval --env upright/WolfgangGetUp-v0 --policy zoo:wolfgang-getup-residual-spline --episodes 1", 2,
             "upright eval: needs the 'train' extra"),
            ("eval --env upright/WolfgangGetUp-v0 --policy spline --episodes 1 --set max_episode_seconds=0.1 "
             "--out {tmp}/eval", 0, "")],
        NOT_ROBOT_SIDE: [("info nao", 2, "upright info: needs the 'envs' extra: pip install 'upright[envs]'"),
                         ("--version", 2, "upright: needs the 'envs' extra")],
    }
    with tempfile.TemporaryDirectory() as tmp:
        for absent, runs in cases.items():
            done = subprocess.run([sys.executable, "-c", code, *(argv.format(tmp=tmp) for argv, _, _ in runs)],
                                  capture_output=True, text=True, timeout=300, cwd=tmp,
                                  env={**os.environ, "UPRIGHT_ABSENT": ",".join(absent)})
            assert done.returncode == 0, done.stderr[-3000:]
            codes = [line.split()[-1] for line in done.stdout.splitlines() if line.split()[:1] in
                     [[argv.split()[0]] for argv, _, _ in runs]]
            assert codes == [str(code) for _, code, _ in runs], done.stdout[-2000:]
            errors = [line for line in done.stderr.splitlines() if re.match(r"upright[ :]", line)]
            expected = [message for _, code, message in runs if code]
            assert len(errors) == len(expected) and all(map(str.startswith, errors, expected)), done.stderr[-2000:]


def _closure(names: list[str]) -> set[str]:
    """The installed distributions ``names`` need, with theirs, without extras (this venv's)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: set[str] = set()
    todo = [canonicalize_name(name) for name in names]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found.add(name)
        for text in requires(name) or []:
            need = Requirement(text)
            if need.marker is None or need.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(need.name))
    return found


@pytest.mark.slow
def test_the_bare_install_is_the_robot_side_in_a_fresh_venv(tmp_path):
    """``pip install upright`` without extras, offline: a fresh venv holding upright's wheel (built
    from this checkout) and the installed files of the distributions its base requirements need
    (this venv's, as pip would install them), nothing else. The robot loop runs in it; its size is
    printed, and none of the extras' packages is there to import."""
    from packaging.requirements import Requirement

    build = tmp_path / "source"
    shutil.copytree(ROOT, build, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.egg-info", "build",
                                                              "results", "runs", "tests", ".pytest_cache", "docs"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(build),
                    "-w", str(tmp_path / "wheels")], check=True, capture_output=True, timeout=600)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (wheel,) = (tmp_path / "wheels").glob("upright-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
        metadata = next(name for name in archive.namelist() if name.endswith(".dist-info/METADATA"))
        base = [Requirement(line.split(":", 1)[1]).name for line in archive.read(metadata).decode().splitlines()
                if line.startswith("Requires-Dist:") and "extra ==" not in line]
    for name in sorted(_closure(base)):
        dist = distribution(name)
        for file in dist.files or []:
            source = Path(dist.locate_file(file))
            if file.parts[0] != ".." and source.is_file():
                (site / file).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, site / file)
    size = sum(f.stat().st_size for f in site.rglob("*") if f.is_file())
    print(f"robot-side install: {len(_closure(base))} distributions, {size / 2**20:.0f} MiB in {site}")
    absent = ",".join(NOT_ROBOT_SIDE)
    done = subprocess.run([python, "-c", ROBOT_LOOP, str(EXPORT), "300", absent], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    _check_robot_loop(done.stdout)
    missing = subprocess.run([python, "-c", f"import importlib.util as u; print([m for m in {NOT_ROBOT_SIDE!r} "
                                            "if u.find_spec(m)])"], capture_output=True, text=True, check=True)
    assert missing.stdout.strip() == "[]"
