"""Short trajectories agree with their recording on any machine, within a tolerance.

Every case of the same-machine check (:data:`upright.eval.same_machine.CASES`: both robots and
tasks, with and without a prior, ``lab``, ``competition`` with and without the turf, ``thesis``,
scheduled impulses) runs its seeded random actions for its horizon of control steps, and the joint
and base positions (``qpos``: m, rad, quaternion), the reward and the observation must agree with
``tests/data/trajectories.npz`` to :data:`QPOS_TOLERANCE`, :data:`REWARD_TOLERANCE` and
:data:`OBSERVATION_RTOL` / :data:`OBSERVATION_ATOL`.

Why these numbers. Two CPUs (or two builds of MuJoCo and NumPy) differ in the last bits of some
operations. The recording measures, per case, what such differences do: the same case is run again
with half of the joint velocities nudged by one unit in the last place after every control step (eight
draws of which half), a harder disturbance than a CPU's. Where the contacts are smooth the nudged run stays within about
1e-12 of the plain one for all :data:`MAX_HORIZON` steps. Where they are not, it stays within 1e-15
until one step and then jumps past 1e-6 at once: a contact of a box with the turf's height field
comes or goes, or the contact solver stops one iteration earlier. A case's horizon is half the steps
before any of its nudged runs first comes within a tenth of the tolerance (at most :data:`MAX_HORIZON`), so
last-bit differences stay below the tolerance by a factor of ten or more over twice the horizon.
On the turf that is one or two steps; ``competition`` on the flat floor covers its wear, noise and
randomisation over longer horizons.

What the tolerance catches: a reward weight changed by 1 % or every servo's strength by 0.1 % puts
the first case off by many times the tolerance within its horizon
(:func:`test_a_small_deliberate_change_exceeds_the_tolerance`).

``python tests/test_trajectories.py [CASE ...]`` records again (trajectories and horizons; every case,
or only the named ones, keeping the others): only for an intended change of behaviour, saying so in
the commit; a refactoring is checked with ``upright check-same``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from upright.envs.conditions import Conditions, Wear
from upright.envs.robots import get_robot
from upright.eval.same_machine import CASES, case_steps

RECORDING = Path(__file__).with_name("data") / "trajectories.npz"
#: Most control steps compared per case.
MAX_HORIZON = 100
QPOS_TOLERANCE = 1e-8  # m, rad (and quaternion components)
REWARD_TOLERANCE = 1e-8
#: The observation is float32: one rounding step of a value v is about 6e-8 |v|.
OBSERVATION_RTOL = 1e-6
OBSERVATION_ATOL = 1e-6
#: Nudged runs per case (each with its own draw of the nudged velocities) that set its horizon.
NUDGES = 8


def trajectory(spec: tuple[str, dict[str, Any], float], case: str, steps: int,
               nudge: np.random.Generator | None = None) -> dict[str, np.ndarray]:
    """``qpos``, reward and (float32) observation after each of ``steps`` control steps of a case
    (:func:`upright.eval.same_machine.case_steps`). With ``nudge`` half of the joint velocities
    (drawn from it) move up by one unit in the last place before every step."""
    def nudged(env: gym.Env) -> None:
        qvel = env.unwrapped.sim.data.qvel
        mask = nudge.random(qvel.shape) < 0.5
        qvel[mask] = np.nextafter(qvel[mask], np.inf)

    qpos, rewards, observations = [], [], []
    for kind, values, env in case_steps(case, spec, steps, nudged if nudge is not None else None):
        if kind == "step":
            qpos.append(env.unwrapped.sim.data.qpos.copy())
            rewards.append(float(values[1]))
            observations.append(values[0].copy())
    return {"qpos": np.array(qpos), "reward": np.array(rewards), "observation": np.array(observations)}


def deviation(actual: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per step, the largest deviation of ``actual`` from ``expected`` in units of its tolerance
    (above 1: out of tolerance), and which quantity it is in (0 qpos, 1 reward, 2 observation)."""
    n = len(actual["reward"])
    parts = np.stack([
        np.abs(actual["qpos"] - expected["qpos"][:n]).max(axis=1) / QPOS_TOLERANCE,
        np.abs(actual["reward"] - expected["reward"][:n]) / REWARD_TOLERANCE,
        (np.abs(actual["observation"].astype(float) - expected["observation"][:n])
         / (OBSERVATION_ATOL + OBSERVATION_RTOL * np.abs(expected["observation"][:n]))).max(axis=1),
    ])
    return parts.max(axis=0), parts.argmax(axis=0)


def horizon(case: str, plain: dict[str, np.ndarray]) -> int:
    """Half the control steps before any of :data:`NUDGES` nudged runs of ``case`` first comes within
    a tenth of the tolerance of its ``plain`` run, at most :data:`MAX_HORIZON`."""
    first = len(plain["reward"])
    for seed in range(NUDGES):
        nudged = trajectory(CASES[case], case, len(plain["reward"]), nudge=np.random.default_rng(seed))
        worst, _ = deviation(nudged, plain)
        over = np.nonzero(worst > 0.1)[0]
        first = min(first, int(over[0]) if len(over) else first)
    return min(first, 2 * MAX_HORIZON) // 2


QUANTITIES = ("qpos", "reward", "observation")


@pytest.fixture(scope="module")
def recording() -> Any:
    return np.load(RECORDING)


@pytest.mark.parametrize("case", list(CASES))
def test_short_trajectory_agrees_with_the_recording(case, recording):
    steps = int(recording[f"{case}/horizon"])
    assert steps >= 1, f"{case}: recorded horizon {steps}"
    expected = {name: recording[f"{case}/{name}"] for name in QUANTITIES}
    worst, which = deviation(trajectory(CASES[case], case, steps), expected)
    step = int(worst.argmax())
    assert worst[step] <= 1.0, (f"{case}: step {step} of {steps}: {QUANTITIES[which[step]]} is off by "
                                f"{worst[step]:.3g} times its tolerance")


@pytest.mark.parametrize("change", ["reward weight +1 %", "servo strength -0.1 %"])
def test_a_small_deliberate_change_exceeds_the_tolerance(change, recording):
    case = "nao-getup-lab"
    env_id, kwargs, scale = CASES[case]
    if change.startswith("reward"):
        kwargs = {**kwargs, "reward_scales": {"torque": 0.0505}}  # default 0.05
    else:
        wear = {joint: Wear(strength=0.999) for joint in get_robot("nao").actuator_names}
        kwargs = {**kwargs, "conditions": Conditions(wear=wear)}
    steps = int(recording[f"{case}/horizon"])
    worst, _ = deviation(trajectory((env_id, kwargs, scale), case, steps),
                         {name: recording[f"{case}/{name}"] for name in QUANTITIES})
    assert worst.max() > 10.0, f"{change}: largest deviation {worst.max():.3g} times the tolerance"


if __name__ == "__main__":
    # Named cases are recorded again and the others kept; no names: every case afresh.
    named = sys.argv[1:]
    unknown = [name for name in named if name not in CASES]
    if unknown:
        sys.exit(f"unknown cases: {', '.join(unknown)} (cases: {', '.join(CASES)})")
    arrays = {}
    if named and RECORDING.exists():
        with np.load(RECORDING) as kept:
            arrays = {key: kept[key] for key in kept.files if key.split("/")[0] not in named}
    for name in (named or CASES):
        plain = trajectory(CASES[name], name, 2 * MAX_HORIZON)
        steps = horizon(name, plain)
        arrays.update({f"{name}/{key}": value[:steps] for key, value in plain.items()})
        arrays[f"{name}/horizon"] = np.array(steps)
        print(f"{name}: horizon {steps} steps", flush=True)
    RECORDING.parent.mkdir(exist_ok=True)
    np.savez_compressed(RECORDING, **arrays)
    print(f"wrote {RECORDING}")
