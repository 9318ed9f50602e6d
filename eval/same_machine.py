"""``upright check-same --against REV``: the refactoring check. The code at git revision ``REV`` and
the working tree run the same environment cases on this machine, and every step must agree to the
last bit.

Bit-identity holds only on one machine (MuJoCo's and NumPy's floating-point results differ in the
last bits between CPUs), so it is never a committed fixture: both sides are recorded here and now.
``REV`` is checked out into a temporary git worktree and installed (``pip install --target``, no
dependencies) into a temporary folder that is put first on ``PYTHONPATH`` of a subprocess; the
working tree is recorded by a second subprocess with the installed package. Both run *this* file as
a script, so the recording code is the same on both sides and needs nothing at ``REV`` beyond the
public interface (``gym.make`` of the registered ids, :class:`~upright.envs.conditions.Conditions`
and :class:`~upright.envs.conditions.Impulse`).

A case is an environment id, keyword arguments and an action scale: uniform random actions in
±scale (beyond ±1 without a prior, so the clipping runs), seeded per case; episodes restart with the
next seed when they end. Per step the digest covers the observation, the reward, both flags and the
whole ``info`` (sensors, reward terms, metrics, ``episode_metrics``); the reward is kept too, so a
difference is shown where it starts.

The cases are also the any-machine trajectory test's (``tests/test_trajectories.py``), which holds
them to a tolerance instead of bits.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from upright.envs.conditions import PRESETS, Conditions, Impulse  # its parent, upright, registers the ids

#: Control steps recorded per case.
STEPS = 200
#: Episode length (s): every case ends at least one episode within :data:`STEPS`, so
#: ``episode_metrics`` is covered (successes, falls and truncations among them).
EPISODE_SECONDS = 1.0
IMPULSES = Conditions(impulses=(Impulse(0.1, (15.0, -10.0), 0.05), Impulse(0.3, (-20.0, 5.0), 0.031)))
#: ``competition`` on the flat floor: wear with play, noise and randomisation without the turf, whose
#: box–height-field contacts come and go with last-bit changes (see ``tests/test_trajectories.py``).
COMPETITION_FLAT = replace(PRESETS["competition"], terrain="flat")

#: name → (environment id, keyword arguments, action scale). Both robots and tasks, with and
#: without a prior, under ``lab``, ``competition`` (turf, wear with play, noise, randomisation,
#: random starts), ``competition`` on the flat floor, ``thesis`` (random pushes) and scheduled impulses.
CASES: dict[str, tuple[str, dict[str, Any], float]] = {
    "nao-getup-lab": ("upright/NaoGetUp-v0", {"start": "prone"}, 1.2),
    "nao-getup-competition": ("upright/NaoGetUp-v0", {"start": "random", "conditions": "competition"}, 1.2),
    "nao-getup-thesis": ("upright/NaoGetUp-v0", {"start": "supine", "conditions": "thesis"}, 1.2),
    "nao-getup-keyframe-lab": ("upright/NaoGetUp-v0", {"start": "prone", "prior": "keyframe"}, 0.5),
    "nao-getup-keyframe-competition": ("upright/NaoGetUp-v0",
                                       {"start": "random", "prior": "keyframe", "conditions": "competition"}, 0.5),
    "nao-getup-keyframe-standing": ("upright/NaoGetUp-v0", {"start": "standing", "prior": "keyframe"}, 0.02),
    "wolfgang-getup-lab": ("upright/WolfgangGetUp-v0", {"start": "supine"}, 1.2),
    "wolfgang-getup-competition": ("upright/WolfgangGetUp-v0", {"start": "random", "conditions": "competition"}, 1.2),
    "wolfgang-getup-spline-lab": ("upright/WolfgangGetUp-v0", {"start": "prone", "prior": "spline"}, 0.5),
    "wolfgang-getup-spline-competition": ("upright/WolfgangGetUp-v0",
                                          {"start": "fall", "prior": "spline", "conditions": "competition"}, 0.5),
    "nao-getup-keyframe-competition-flat": ("upright/NaoGetUp-v0", {"start": "random", "prior": "keyframe",
                                                                    "conditions": COMPETITION_FLAT}, 0.5),
    "wolfgang-getup-spline-competition-flat": ("upright/WolfgangGetUp-v0", {"start": "supine", "prior": "spline",
                                                                            "conditions": COMPETITION_FLAT}, 0.5),
    "nao-walk-lab": ("upright/NaoWalk-v0", {}, 1.2),
    "nao-walk-competition": ("upright/NaoWalk-v0", {"conditions": "competition", "tracking_window": 0.1}, 1.2),
    "nao-walk-step-adjust-lab": ("upright/NaoWalk-v0", {"prior": "step_adjust", "command": (0.2, 0.0, 0.1)}, 0.5),
    "nao-walk-lipm-competition": ("upright/NaoWalk-v0", {"prior": "lipm", "conditions": "competition"}, 0.5),
    "wolfgang-walk-lab": ("upright/WolfgangWalk-v0", {"conditions": IMPULSES}, 1.2),
    "wolfgang-walk-competition": ("upright/WolfgangWalk-v0", {"conditions": "competition"}, 1.2),
    "nao-walk-lipm-competition-flat": ("upright/NaoWalk-v0", {"prior": "lipm", "conditions": COMPETITION_FLAT}, 0.5),
    "wolfgang-walk-lipm-lab": ("upright/WolfgangWalk-v0", {"prior": "lipm", "tracking_window": 0.2}, 0.5),
    "wolfgang-walk-step-adjust-competition": ("upright/WolfgangWalk-v0",
                                              {"prior": "step_adjust", "conditions": "competition"}, 0.5),
}


def _feed(h: "hashlib._Hash", value: Any) -> None:
    """Hash ``value`` canonically: mappings by sorted key, arrays with dtype, shape and bytes,
    numbers by type (bool, int, float) and exact value, dataclasses (``Sensors``) by field."""
    if isinstance(value, Mapping):
        h.update(b"{")
        for key in sorted(value):
            h.update(repr(key).encode())
            _feed(h, value[key])
        h.update(b"}")
    elif is_dataclass(value) and not isinstance(value, type):
        _feed(h, {f.name: getattr(value, f.name) for f in fields(value)})
    elif isinstance(value, np.ndarray):
        h.update(f"a{value.dtype.str}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, (list, tuple)):
        h.update(b"[")
        for item in value:
            _feed(h, item)
        h.update(b"]")
    elif isinstance(value, (bool, np.bool_)):
        h.update(b"T" if value else b"F")
    elif isinstance(value, (int, np.integer)):
        h.update(f"i{int(value)}".encode())
    elif isinstance(value, (float, np.floating)):
        h.update(b"f" + struct.pack("<d", float(value)))
    elif value is None or isinstance(value, str):
        h.update(repr(value).encode())
    else:
        raise TypeError(f"cannot hash {type(value).__name__} in an info")


def digest(*values: Any) -> str:
    """A short hex digest of ``values`` (see :func:`_feed`)."""
    h = hashlib.sha256()
    for value in values:
        _feed(h, value)
    return h.hexdigest()[:16]


#: What :func:`case_steps` yields: ``("reset", (observation, info))`` or
#: ``("step", (observation, reward, terminated, truncated, info))``, with the environment.
Event = tuple[str, tuple, gym.Env]


def case_steps(case: str, spec: tuple[str, dict[str, Any], float], steps: int,
               before_step: Callable[[gym.Env], None] | None = None) -> Iterator[Event]:
    """Run ``case`` (``spec`` = environment id, keyword arguments, action scale) for ``steps``
    control steps of its seeded random actions, an episode that ends restarting with the next seed;
    yield every reset and step as it happens. ``before_step(env)`` runs before each step (the
    any-machine test disturbs the state there)."""
    env_id, kwargs, scale = spec
    env = gym.make(env_id, max_episode_seconds=EPISODE_SECONDS, **kwargs)
    rng = np.random.default_rng(sum(case.encode()))
    seed = 3
    try:
        yield "reset", env.reset(seed=seed), env
        for _ in range(steps):
            if before_step is not None:
                before_step(env)
            action = rng.uniform(-scale, scale, env.action_space.shape).astype(np.float32)
            step = env.step(action)
            yield "step", step, env
            if step[2] or step[3]:
                seed += 1
                yield "reset", env.reset(seed=seed), env
    finally:
        env.close()


def record_case(case: str, spec: tuple[str, dict[str, Any], float], steps: int = STEPS) -> dict[str, list]:
    """The digest of every reset and step of ``case`` over ``steps`` control steps
    (:func:`case_steps`), and every step's reward."""
    digests, rewards = [], []
    for kind, values, _ in case_steps(case, spec, steps):
        digests.append(digest(*values))
        if kind == "step":
            rewards.append(float(values[1]))
    return {"digests": digests, "rewards": rewards}


@dataclass(frozen=True)
class Difference:
    """Where two recordings of one case first part: the step (or None when only the digest of a
    reset or the length differs) and what differs."""

    case: str
    step: int | None
    what: str

    def __str__(self) -> str:
        return f"{self.case}: " + (f"step {self.step}: " if self.step is not None else "") + self.what


def compare(before: Mapping[str, Mapping[str, list]], after: Mapping[str, Mapping[str, list]]) -> list[Difference]:
    """The first difference of every case that ``before`` and ``after`` do not record identically
    (empty: identical to the bit). A case recorded on one side only is a difference too."""
    found = []
    for case in sorted(set(before) | set(after)):
        if case not in before or case not in after:
            found.append(Difference(case, None, "recorded on one side only"))
            continue
        a, b = before[case], after[case]
        step = next((i for i, (x, y) in enumerate(zip(a["rewards"], b["rewards"])) if x != y), None)
        if step is not None:
            found.append(Difference(case, step, f"reward {a['rewards'][step]!r} before, {b['rewards'][step]!r} after"))
        elif a["digests"] != b["digests"]:
            index = next((i for i, (x, y) in enumerate(zip(a["digests"], b["digests"])) if x != y), None)
            what = ("the episodes end at different steps" if index is None
                    else f"digest {index} of {len(a['digests'])} (observation, flags or info) differs")
            found.append(Difference(case, None, what))
    return found


_RUN_SCRIPT = "import runpy, sys; path = sys.argv.pop(1); sys.argv[0] = path; runpy.run_path(path, run_name='__main__')"


def _run_recorder(cases: list[str], steps: int, out: Path, pythonpath: str | None, cwd: Path) -> dict[str, Any]:
    """Record ``cases`` in a subprocess that runs this file, with ``pythonpath`` (a staged
    revision) first on the import path, or the installed package; return what it wrote to ``out``."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    # Run as a script through runpy, so that this file's folder does not shadow modules on the path.
    command = [sys.executable, "-c", _RUN_SCRIPT, str(Path(__file__).resolve()), "--record", str(out), "--steps", str(steps),
               "--expect-package", pythonpath or "", *cases]
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"recording failed ({' '.join(command)}):\n{result.stderr.strip()}")
    return json.loads(out.read_text())


def _stage_revision(repo: Path, rev: str, tmp: Path) -> Path:
    """Check out ``rev`` of the git repository ``repo`` into a worktree under ``tmp`` and install it
    (no dependencies: this environment's are used) into a folder under ``tmp``; return that folder.
    ValueError naming ``rev`` when git does not know it."""
    resolved = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", f"{rev}^{{commit}}"],
                              capture_output=True, text=True)
    if resolved.returncode != 0:
        raise ValueError(f"--against {rev!r} is no commit of {repo}: {resolved.stderr.strip()}")
    tree, stage = tmp / "tree", tmp / "stage"
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "--detach", "--quiet", str(tree),
                    resolved.stdout.strip()], check=True, capture_output=True)
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                              "--disable-pip-version-check", "--target", str(stage), str(tree)],
                             capture_output=True, text=True)
    if install.returncode != 0:
        raise RuntimeError(f"could not install {rev} from its worktree:\n{install.stderr.strip()}")
    return stage


def check_same(against: str, cases: list[str] | None = None, steps: int = STEPS,
               repo: Path | None = None) -> tuple[str, list[Difference]]:
    """Record ``cases`` (default: all of :data:`CASES`) at git revision ``against`` and with the
    working tree on this machine; return the revision's commit and the differences (empty:
    identical to the bit). ValueError naming an unknown case or revision."""
    names = list(CASES) if not cases else cases
    unknown = [name for name in names if name not in CASES]
    if unknown:
        raise ValueError(f"unknown case(s) {unknown}; the cases are {list(CASES)}")
    if steps < 1:
        raise ValueError(f"--steps must be >= 1, got {steps}")
    repo = repo or Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory(prefix="upright-check-same-") as tmp_name:
        tmp = Path(tmp_name)
        stage = _stage_revision(repo, against, tmp)
        try:
            commit = subprocess.run(["git", "-C", str(tmp / "tree"), "rev-parse", "HEAD"], capture_output=True,
                                    text=True, check=True).stdout.strip()
            before = _run_recorder(names, steps, tmp / "before.json", str(stage), tmp)
            after = _run_recorder(names, steps, tmp / "after.json", None, tmp)
        finally:
            subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(tmp / "tree")],
                           capture_output=True)
    return commit, compare(before, after)


def _record_main(argv: list[str]) -> int:
    """The recorder subprocess: record the named cases and write them as JSON."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--record", required=True)
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--expect-package", default="")
    parser.add_argument("cases", nargs="+")
    args = parser.parse_args(argv)
    where = Path(inspect.getfile(Conditions)).resolve()  # the environments whose steps are recorded
    if args.expect_package and not where.is_relative_to(Path(args.expect_package).resolve()):
        print(f"imported upright's environments from {where}, not from the staged revision {args.expect_package}",
              file=sys.stderr)
        return 1
    recorded = {name: record_case(name, CASES[name], args.steps) for name in args.cases}
    Path(args.record).write_text(json.dumps(recorded))
    return 0


if __name__ == "__main__":
    sys.exit(_record_main(sys.argv[1:]))
