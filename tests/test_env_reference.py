"""Every environment reproduces, bit for bit, what it returned when ``tests/data/env_reference.json``
was recorded: per step a digest of the observation, reward, termination flags and the whole
``info`` (sensors, reward terms, metrics, ``episode_metrics`` at an episode's end), and the reward
itself (to show where a difference starts). The cases cover both robots and tasks, with and without a
prior, under ``lab``, ``competition`` (turf, wear with play, noise, randomisation, random starts),
``thesis`` (random pushes) and scheduled impulses, over several episodes each, among them get-up
successes and walk falls.

It guards refactorings of the environment code against changing what is simulated. The digests
depend on floating-point results, so they hold for the MuJoCo and NumPy versions, architecture, SIMD
targets and CPU model they were recorded with (:func:`platform_key`): the fixture holds one recording
per platform, and the test skips, saying so, on a platform it has none for. Two CPUs with the same
SIMD targets (an Intel and an AMD EPYC) were seen to differ in the last bits of some steps.
``python tests/test_env_reference.py`` adds (or replaces) this platform's recording: only from code
that still reproduces an existing recording on its platform; re-record all of them only for an
intended change of behaviour (``--all-platforms-changed`` drops the others).
"""

from __future__ import annotations

import hashlib
import json
import platform
import struct
import sys
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import mujoco
import numpy as np
import pytest

import upright  # noqa: F401  (registers the ids)
from upright.envs.conditions import Conditions, Impulse
from upright.eval.machine import cpu_model

FIXTURE = Path(__file__).parent / "data" / "env_reference.json"
#: Control steps recorded per case (episodes restart with the next seed when they end).
STEPS = 200
#: Episode length (s): every case ends at least one episode, so ``episode_metrics`` is covered
#: (with successes, falls and truncations among them).
EPISODE_SECONDS = 1.0
IMPULSES = Conditions(impulses=(Impulse(0.1, (15.0, -10.0), 0.05), Impulse(0.3, (-20.0, 5.0), 0.031)))

#: name → (environment id, keyword arguments, action scale): the actions are uniform in
#: ±scale (beyond ±1 without a prior, so the clipping is exercised), seeded per case.
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
    "nao-walk-lab": ("upright/NaoWalk-v0", {}, 1.2),
    "nao-walk-competition": ("upright/NaoWalk-v0", {"conditions": "competition", "tracking_window": 0.1}, 1.2),
    "nao-walk-step-adjust-lab": ("upright/NaoWalk-v0", {"prior": "step_adjust", "command": (0.2, 0.0, 0.1)}, 0.5),
    "nao-walk-lipm-competition": ("upright/NaoWalk-v0", {"prior": "lipm", "conditions": "competition"}, 0.5),
    "wolfgang-walk-lab": ("upright/WolfgangWalk-v0", {"conditions": IMPULSES}, 1.2),
    "wolfgang-walk-competition": ("upright/WolfgangWalk-v0", {"conditions": "competition"}, 1.2),
    "wolfgang-walk-lipm-lab": ("upright/WolfgangWalk-v0", {"prior": "lipm", "tracking_window": 0.2}, 0.5),
    "wolfgang-walk-step-adjust-competition": ("upright/WolfgangWalk-v0",
                                              {"prior": "step_adjust", "conditions": "competition"}, 0.5),
}


def _feed(h: "hashlib._Hash", value: Any) -> None:
    """Hash ``value`` canonically: mappings by sorted key, arrays with dtype, shape and bytes,
    numbers by type (bool, int, float) and exact value, dataclasses (``Sensors``) by field."""
    if isinstance(value, dict):
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


def record(case: str) -> dict[str, list]:
    """Run ``case`` for :data:`STEPS` steps: the digest of the first reset and of every step, and
    every step's reward."""
    env_id, kwargs, scale = CASES[case]
    env = gym.make(env_id, max_episode_seconds=EPISODE_SECONDS, **kwargs)
    rng = np.random.default_rng(sum(case.encode()))
    seed = 3
    observation, info = env.reset(seed=seed)
    digests, rewards = [digest(observation, info)], []
    for _ in range(STEPS):
        action = rng.uniform(-scale, scale, env.action_space.shape).astype(np.float32)
        observation, reward, terminated, truncated, info = env.step(action)
        digests.append(digest(observation, reward, terminated, truncated, info))
        rewards.append(reward)
        if terminated or truncated:
            seed += 1
            observation, info = env.reset(seed=seed)
            digests.append(digest(observation, info))
    env.close()
    return {"digests": digests, "rewards": rewards}


def platform_key() -> dict[str, Any]:
    """What the recorded floating-point results depend on beyond the code: the MuJoCo and NumPy
    versions, the architecture, the SIMD targets NumPy dispatches to on this CPU (its
    transcendental functions round differently on some) and the CPU model."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # NumPy 1
        from numpy.core import _multiarray_umath as umath
    simd = sorted(name for name in umath.__cpu_dispatch__ if umath.__cpu_features__.get(name))
    return {"mujoco": mujoco.__version__, "numpy": np.__version__, "machine": platform.machine(), "simd": simd,
            "cpu": cpu_model()}


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    recordings = json.loads(FIXTURE.read_text())["recordings"]
    for recording in recordings:
        if recording["platform"] == platform_key():
            return recording["cases"]
    pytest.skip(f"no reference recorded on this platform ({platform_key()}); recorded on "
                f"{[recording['platform'] for recording in recordings]}")


@pytest.mark.parametrize("case", list(CASES))
def test_environment_reproduces_the_recorded_steps(case, reference):
    expected, actual = reference[case], record(case)
    for step, (want, got) in enumerate(zip(expected["rewards"], actual["rewards"])):
        assert got == want, f"{case}: reward of step {step} is {got!r}, recorded {want!r}"
    for index, (want, got) in enumerate(zip(expected["digests"], actual["digests"])):
        assert got == want, f"{case}: digest {index} (observation, reward, flags, info) differs from the recording"
    assert len(actual["digests"]) == len(expected["digests"])


if __name__ == "__main__":
    FIXTURE.parent.mkdir(exist_ok=True)
    keep = [] if "--all-platforms-changed" in sys.argv[1:] or not FIXTURE.exists() else [
        recording for recording in json.loads(FIXTURE.read_text())["recordings"]
        if recording["platform"] != platform_key()]
    cases = {name: record(name) for name in CASES}
    recordings = keep + [{"platform": platform_key(), "cases": cases}]
    FIXTURE.write_text(json.dumps({"recordings": recordings}, separators=(",", ":")) + "\n")
    print(f"wrote {FIXTURE}: {len(cases)} cases on {platform_key()}, {len(keep)} other platform(s) kept")
