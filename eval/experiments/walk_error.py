"""Where a walk's tracking error comes from (``walk_error.yaml``).

``walk-error-parts`` — a walk baseline on commands drawn from the walk environment's default
ranges (one per episode seed), in each of ``conditions``. Beside the environment's own errors
(velocity averaged over a 1 s window against the command, :class:`~upright.envs.metrics.WalkTracker`),
the same errors recomputed three ways from the episode's velocities: without the first
``skip_seconds`` (the start from standing, where the walk accelerates), with a ``long_seconds``
window instead of 1 s (the lateral sway of a step cycle that a 1 s window does not average out: a
cycle of 0.55 s leaves 0.2 cycle of sway in the window), and the bias, the distance of the
episode's mean velocity after the start from the command. What a learned residual on the walk can
remove is bounded by this split: the bias and slow drifts, not the sway that balancing needs.

    upright experiment walk-error-parts --episodes 20 --workers 2 --docs
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from upright.envs.metrics import WalkTracker
from upright.envs.registration import env_id
from upright.eval.experiments import ExperimentContext, protocol_data, register_experiment
from upright.eval.runner import Observer
from upright.eval.tables import Column, Table, number, text
from upright.policies.base import Policy

DATA = protocol_data(__name__)


class ErrorParts(Observer):
    """Adds ``error_parts`` to a walk episode's record: the linear (m/s) and yaw (rad/s) tracking
    errors after ``skip_seconds``, with a ``long_seconds`` window after ``skip_seconds``, and the
    bias |mean velocity − command| after ``skip_seconds`` (None for an episode that did not last
    past ``skip_seconds`` plus one long window)."""

    def __init__(self, skip_seconds: float, long_seconds: float) -> None:
        if skip_seconds < 0.0 or long_seconds <= 0.0:
            raise ValueError(f"skip_seconds must be >= 0 and long_seconds > 0, got {skip_seconds!r}, {long_seconds!r}")
        self.skip_seconds, self.long_seconds = skip_seconds, long_seconds

    def on_reset(self, env: gym.Env, policy: Policy, info: dict[str, Any]) -> None:
        self._velocities: list[np.ndarray] = []
        self._period = env.unwrapped.robot.control_period
        self._command = np.asarray(info["command"], dtype=float)

    def on_step(self, env: gym.Env, policy: Policy, action: np.ndarray, info: dict[str, Any]) -> None:
        self._velocities.append(np.asarray(info["velocity"], dtype=float))

    def on_episode_end(self, env: gym.Env, policy: Policy, record: dict[str, Any]) -> dict[str, Any]:
        skip = round(self.skip_seconds / self._period)
        long_window = max(1, round(self.long_seconds / self._period))
        after = self._velocities[skip:]
        if len(after) < long_window:
            return {"error_parts": None}
        short = WalkTracker.for_period(self._command, self._period)
        long = WalkTracker(self._command, long_window)
        short.velocities = long.velocities = after
        parts = {}
        for name, tracker in (("after_start", short), ("long_window", long)):
            metrics = tracker.episode_metrics(0.0, False)
            parts[name] = [metrics["linear_tracking_error"], metrics["yaw_tracking_error"]]
        bias = np.mean(after, axis=0) - self._command
        parts["bias"] = [float(np.linalg.norm(bias[:2])), float(abs(bias[2]))]
        return {"error_parts": parts}


def _pair(value: list[float] | None) -> str:
    return "—" if value is None else f"{value[0]:.3f} / {value[1]:.3f}"


@register_experiment("walk-error-parts", "a walk's tracking error split into start, sway within the window, "
                     "drift and bias", options={"policy": "step_adjust", "robot": "nao",
                                                "conditions": ("lab", "competition")})
def walk_error_parts(ctx: ExperimentContext) -> list[Table]:
    """One run per conditions preset, the same seeds (and so the same commands) in each."""
    policy, robot = ctx.options["policy"], ctx.options["robot"]
    episodes = ctx.episodes_or(DATA["episodes"])
    rows = []
    presets = ctx.option_names("conditions")
    ctx.plan(len(presets) * episodes)
    for conditions in presets:
        result = ctx.run_cell(f"{policy}-{robot}-{conditions}", env_id(robot, "walk"), ctx.policy(policy),
                              {"conditions": conditions}, episodes,
                              observers=[ErrorParts(DATA["skip_seconds"], DATA["long_seconds"])])
        records = result["episodes_data"]
        parts = [r["error_parts"] for r in records if r.get("error_parts") is not None]

        def mean(key: str) -> list[float] | None:
            return np.mean([p[key] for p in parts], axis=0).tolist() if parts else None

        metric = [np.mean([r["linear_tracking_error"] for r in records]),
                  np.mean([r["yaw_tracking_error"] for r in records])]
        rows.append({"conditions": conditions, "episodes": len(records),
                     "falls": sum(r["falls"] for r in records) / max(len(records), 1), "metric": metric,
                     "after_start": mean("after_start"), "long_window": mean("long_window"), "bias": mean("bias"),
                     "counted": len(parts)})
    columns = [Column("conditions", "conditions", text), Column("episodes", "episodes"),
               Column("falls / episode", "falls", number(2)),
               Column("1 s window (the metric)", "metric", _pair),
               Column(f"1 s window, after {DATA['skip_seconds']:g} s", "after_start", _pair),
               Column(f"{DATA['long_seconds']:g} s window, after {DATA['skip_seconds']:g} s", "long_window", _pair),
               Column("bias after the start", "bias", _pair),
               Column("episodes in the parts", "counted")]
    notes = (f"{policy} on {robot}, commands drawn from the walk environment's default ranges, seeds from "
             f"{ctx.seed} (the same commands in every row). Each cell: linear (m/s) / yaw (rad/s) error, the "
             "mean over episodes; the parts leave out episodes that fell before the start plus one long window.")
    return [Table(f"Tracking error of {policy} on {robot}, split", columns, rows, notes)]
