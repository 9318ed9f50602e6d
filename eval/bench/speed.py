"""Speed benchmark: environment steps per second of every environment under every conditions preset,
against raw physics of the same model and against Gymnasium's ``HumanoidStandup-v5``, in one run.

For each environment id and preset the environment is made with ``gym.make`` (the wrappers a user
gets), reset with seed 0 and stepped with the zero action (no prior); a raw loop of
``mujoco.mj_step(model, data, nstep=substeps)`` over a copy of the same model and the same start
state, with the controls the zero action commands, is timed alternately with it. A
``HumanoidStandup-v5`` ``env.step`` loop with the zero action is timed in the same process. All
rates are control steps per second of this process's CPU time (``time.process_time``; everything
timed is single-threaded, so on an idle machine this is wall-clock time, and on a shared one other
processes' load does not count); the ratios, taken within one run, do not depend on the machine.

Targets (the training-speed issue): environment ≥ 0.85 of raw physics in ``lab``, every preset
≥ 0.7 of ``lab``, environment ≥ 1.0 of ``HumanoidStandup-v5`` (steps per second).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import gymnasium as gym
import mujoco
import numpy as np

from upright.envs.conditions import PRESETS
from upright.envs.registration import ENVIRONMENTS, register_envs
from upright.eval.machine import machine_line

#: The reference environment, stepped through its own ``env.step``.
REFERENCE = "HumanoidStandup-v5"


@dataclass(frozen=True)
class BenchRow:
    """One environment under one preset (``conditions`` is ``"-"`` for the reference).

    ``env_steps_per_s``: ``env.step`` calls per second; ``raw_steps_per_s``: control periods of
    raw ``mj_step`` physics per second (None for the reference); ``control_period`` in s;
    ``ratio_raw`` = env / raw, ``ratio_lab`` = env / the same environment in ``lab``,
    ``ratio_reference`` = env / ``HumanoidStandup-v5`` ``env.step`` (steps per second).
    """

    env_id: str
    conditions: str
    control_period: float
    env_steps_per_s: float
    raw_steps_per_s: float | None
    ratio_raw: float | None
    ratio_lab: float | None
    ratio_reference: float


def _env_rate(env: gym.Env, action: np.ndarray, steps: int) -> float:
    """``env.step`` calls per second over ``steps`` steps (resetting with the next seed at an episode's end)."""
    seed = 1
    start = time.process_time()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset(seed=seed)
            seed += 1
    return steps / (time.process_time() - start)


def _raw_rate(model: mujoco.MjModel, data: mujoco.MjData, substeps: int, steps: int) -> float:
    """Control periods per second of ``mj_step(nstep=substeps)`` from ``data``'s state."""
    start = time.process_time()
    for _ in range(steps):
        mujoco.mj_step(model, data, nstep=substeps)
    return steps / (time.process_time() - start)


def reference_rate(steps: int) -> tuple[float, float]:
    """``HumanoidStandup-v5`` ``env.step`` calls per second with the zero action, and its step (s)."""
    env = gym.make(REFERENCE)
    env.reset(seed=0)
    action = np.zeros(env.action_space.shape, dtype=env.action_space.dtype)
    _env_rate(env, action, min(100, steps))  # warm-up
    rate = _env_rate(env, action, steps)
    dt = float(env.unwrapped.dt)
    env.close()
    return rate, dt


def measure(env_id: str, conditions: str, steps: int) -> tuple[float, float, float]:
    """(env steps/s, raw control periods/s, control period in s) of one environment and preset."""
    env = gym.make(env_id, conditions=conditions)
    env.reset(seed=0)
    sim = env.unwrapped.sim
    action = np.zeros(env.action_space.shape, dtype=np.float32)
    model, data = copy.copy(sim.model), copy.copy(sim.data)
    data.ctrl[:] = env.unwrapped.targets_from_action(action)
    _env_rate(env, action, min(50, steps))  # warm-up
    env_rate = _env_rate(env, action, steps)
    raw_rate = _raw_rate(model, data, sim.n_substeps, steps)
    period = sim.robot.control_period
    env.close()
    return env_rate, raw_rate, period


def run_bench(steps: int = 400, env_ids: tuple[str, ...] | None = None,
              presets: tuple[str, ...] | None = None) -> list[BenchRow]:
    """Measure ``env_ids`` (default: every registered environment) under ``presets`` (default:
    every preset, ``lab`` first) for ``steps`` control steps each, and the reference; the
    reference is the first row."""
    register_envs()
    env_ids = tuple(ENVIRONMENTS) if env_ids is None else env_ids
    presets = tuple(PRESETS) if presets is None else presets
    if "lab" in presets:
        presets = ("lab", *(p for p in presets if p != "lab"))
    ref_rate, ref_dt = reference_rate(steps)
    rows = [BenchRow(REFERENCE, "-", ref_dt, ref_rate, None, None, None, 1.0)]
    for env_id in env_ids:
        lab_rate = None
        for preset in presets:
            env_rate, raw_rate, period = measure(env_id, preset, steps)
            if preset == "lab":
                lab_rate = env_rate
            rows.append(BenchRow(env_id, preset, period, env_rate, raw_rate, env_rate / raw_rate,
                                 env_rate / lab_rate if lab_rate else None, env_rate / ref_rate))
    return rows


def format_bench(rows: list[BenchRow]) -> str:
    """A plain-text table: rates and the three ratios with their targets."""
    def ratio(value: float | None) -> str:
        return f"{value:>8.2f}" if value is not None else f"{'-':>8}"

    lines = [
        f"{'environment':<26} {'conditions':<12} {'step (ms)':>9} {'env steps/s':>11} {'raw steps/s':>11} "
        f"{'/ raw':>8} {'/ lab':>8} {'/ ref':>8}",
    ]
    for r in rows:
        raw = f"{r.raw_steps_per_s:>11.0f}" if r.raw_steps_per_s is not None else f"{'-':>11}"
        lines.append(
            f"{r.env_id:<26} {r.conditions:<12} {r.control_period * 1e3:>9.1f} {r.env_steps_per_s:>11.0f} {raw} "
            f"{ratio(r.ratio_raw)} {ratio(r.ratio_lab)} {ratio(r.ratio_reference)}"
        )
    lines.append(
        "steps/s = control steps (env.step calls) per CPU second of this process; raw = mj_step(nstep=substeps) loop of the "
        f"same model from the same start; ref = {REFERENCE} env.step, same run. Targets: / raw >= 0.85 in lab, "
        "/ lab >= 0.7, / ref >= 1.0."
    )
    lines.append(machine_line())
    return "\n".join(lines)


def summary(rows: list[BenchRow]) -> dict[str, float]:
    """Lowest ratio per kind over the measured rows: ``raw_lab`` (lab rows only), ``lab`` and ``reference``."""
    measured = rows[1:]
    return {
        "raw_lab": min(r.ratio_raw for r in measured if r.conditions == "lab"),
        "lab": min(r.ratio_lab for r in measured),
        "reference": min(r.ratio_reference for r in measured),
    }
