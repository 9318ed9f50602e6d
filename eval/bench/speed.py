"""Speed benchmark: our models against Gymnasium's ``HumanoidStandup-v5`` model, in one run.

For each model and pose, a raw ``mujoco.mj_step`` loop with constant controls measures physics
steps per wall-clock second; multiplied by the model's timestep this gives simulated seconds per
wall-clock second, the figure that matters for training throughput. ``Simulation.step`` (servo
model, sensors, stability check) is timed the same way. Ratios are ours / HumanoidStandup-v5,
measured side by side in the same process, so they do not depend on the machine.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import mujoco
import numpy as np

from upright.envs.robots import ROBOT_NAMES
from upright.envs.simulation import Simulation


@dataclass(frozen=True)
class BenchRow:
    """One measured configuration."""

    model: str
    pose: str
    timestep: float
    steps_per_s: float
    sim_s_per_s: float
    sim_step_sim_s_per_s: float | None  # through Simulation.step; None for the reference model


def _raw_rate(model: mujoco.MjModel, data: mujoco.MjData, steps: int) -> float:
    mujoco.mj_step(model, data, nstep=min(200, steps))  # warm-up: contacts established
    start = time.perf_counter()
    for _ in range(steps // 100):
        mujoco.mj_step(model, data, nstep=100)
    return (steps // 100) * 100 / (time.perf_counter() - start)


def _simulation_rate(sim: Simulation, pose: str, seconds: float) -> float:
    sim.reset(pose, seed=0)
    hold = sim.data.ctrl.copy()
    n = int(seconds / sim.robot.control_period)
    start = time.perf_counter()
    for _ in range(n):
        sim.step(hold)
    return n * sim.robot.control_period / (time.perf_counter() - start)


def reference_row(steps: int) -> BenchRow:
    """Raw ``mj_step`` rate of Gymnasium's HumanoidStandup-v5 model (starts lying on its back)."""
    import gymnasium as gym

    env = gym.make("HumanoidStandup-v5")
    env.reset(seed=0)
    model, data = env.unwrapped.model, env.unwrapped.data
    rate = _raw_rate(model, data, steps)
    env.close()
    return BenchRow("HumanoidStandup-v5", "lying", model.opt.timestep, rate, rate * model.opt.timestep, None)


def run_bench(steps: int = 20_000) -> list[BenchRow]:
    """Measure every robot standing and lying, and the reference model."""
    rows = [reference_row(steps)]
    for robot in ROBOT_NAMES:
        sim = Simulation(robot, "lab")
        for pose in (sim.robot.standing_pose, "prone"):
            sim.reset(pose, seed=0)
            rate = _raw_rate(sim.model, sim.data, steps)
            dt = sim.model.opt.timestep
            sim_rate = _simulation_rate(sim, pose, steps * dt)
            rows.append(BenchRow(robot, pose, dt, rate, rate * dt, sim_rate))
    return rows


def format_bench(rows: list[BenchRow]) -> str:
    """A plain-text table with the ratios to the reference."""
    ref = rows[0].sim_s_per_s
    lines = [
        f"{'model':<20} {'pose':<10} {'dt (ms)':>7} {'mj_step/s':>10} {'sim s/s':>8} {'ratio':>6} {'Simulation.step sim s/s':>24} {'ratio':>6}",
    ]
    for r in rows:
        sim_cols = (
            f"{r.sim_step_sim_s_per_s:>24.1f} {r.sim_step_sim_s_per_s / ref:>6.2f}"
            if r.sim_step_sim_s_per_s is not None
            else f"{'-':>24} {'-':>6}"
        )
        lines.append(
            f"{r.model:<20} {r.pose:<10} {r.timestep * 1e3:>7.1f} {r.steps_per_s:>10.0f} {r.sim_s_per_s:>8.1f} "
            f"{r.sim_s_per_s / ref:>6.2f} {sim_cols}"
        )
    lines.append("ratio = simulated seconds per wall-clock second, ours / HumanoidStandup-v5, same run.")
    return "\n".join(lines)


def summary(rows: list[BenchRow]) -> dict[str, float]:
    """Lowest ratio per robot over its poses (raw mj_step), for a quick pass/fail reading."""
    ref = rows[0].sim_s_per_s
    out: dict[str, float] = {}
    for r in rows[1:]:
        out[r.model] = min(out.get(r.model, np.inf), r.sim_s_per_s / ref)
    return out
