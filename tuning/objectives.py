"""Objectives of ``upright optimize``: the spline paper's for get-up, falls and tracking for walks.

Every component is scaled to [0, 100] (lower is better) as in Stelter et al. (ICAR 2021), eqs. 5–8:

Get-up (one letter each; an objective string such as ``STH`` picks and orders them):

* ``S`` success: 0 if the episode stood up (rules below), else 100;
* ``T`` time: 10 × the settle time (s, the last instant the torso's angular speed exceeded
  ``settle_speed``; it includes shaking after getting up), clipped at 10 s; 100 on a failure;
* ``H`` head: 100 − the highest head height reached (cm), floored at 0;
* ``P`` pitch (pose/IMU stability): the smallest |fused pitch| (deg) reached in the upper hemisphere
  (90 if never), i.e. how close the torso came to upright.

Walk:

* ``F`` falls: 100 if the robot fell, else 0;
* ``E`` linear tracking error: 100 × error / commanded speed (m/s over m/s, at least 0.05 m/s),
  clipped at 100;
* ``Y`` yaw tracking error: 100 × error / max(|commanded turn|, 0.5 rad/s), clipped;
* ``V`` speed shortfall: the percentage of the commanded velocity (x, y) not reached along its direction.

A trial's value per component is the mean over its repetitions. Single-objective samplers minimise
the sum of the components; MOTPE keeps them apart.

The get-up success in a trial follows the paper's optimisation protocol, not the environment's
(which needs the episode to run to its end): the robot is upright with the head high
(:func:`upright.envs.metrics.is_upright`) and its angular speed stays below ``settle_speed`` for
``hold_seconds``; the episode then stops at once. It stops early as a failure (paper: "early
termination if the robot falls back to the ground") after the hands' ground contact + a margin when
the head is below ``head_below`` × the standing head height or the torso is pitched past
``fall_pitch_deg`` and turning further away from upright.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from upright.envs.metrics import is_upright
from upright.envs.schema import STRICT
from upright.eval.runner import Observer

GETUP_LETTERS = {"S": "success", "T": "time", "H": "head", "P": "pitch"}
WALK_LETTERS = {"F": "falls", "E": "linear_error", "Y": "yaw_error", "V": "speed_shortfall"}
#: Default objective per task when neither the command line nor the space names one.
DEFAULT_OBJECTIVE = {"getup": "STH", "walk": "FE"}


def parse_objective(text: str, task: str) -> tuple[str, ...]:
    """The component names of objective ``text`` (letters, e.g. ``STH``) for ``task``."""
    letters = GETUP_LETTERS if task == "getup" else WALK_LETTERS
    text = text.upper()
    bad = [c for c in text if c not in letters]
    if not text or bad or len(set(text)) != len(text):
        valid = ", ".join(f"{k}={v}" for k, v in letters.items())
        raise ValueError(f"objective {text!r} must be distinct letters of {valid} ({task} task)")
    return tuple(letters[c] for c in text)


@dataclass
class GetUpRules:
    """Success and early-stop rules of a get-up trial episode (the space's ``trial`` block, checked
    with the space's schema, :class:`~upright.tuning.space.SearchSpace`)."""

    __pydantic_config__ = STRICT

    hold_seconds: float = 3.0
    settle_speed: float = 0.05
    head_below: float = 0.27
    fall_pitch_deg: float = 45.0
    #: Per start, the controller's phase-duration parameters that end at the hands' ground contact
    #: (the early-stop checks start that long + ``check_margin`` s after the start; no entry: never).
    check_after: dict[str, list[str]] = field(default_factory=dict)
    check_margin: float = 0.5

    def check_time(self, start: str, params: Any) -> float:
        """When the early-stop checks begin (s): the sum of the ``check_after`` phase durations of
        ``start`` read from the controller's ``params``, plus the margin; never (inf) for a start
        without an entry (a controller that retries after falls itself, or a start the space does
        not time)."""
        if start not in self.check_after or params is None:
            return math.inf
        return self.check_margin + sum(float(getattr(params, name)) for name in self.check_after[start])


class GetUpScore(Observer):
    """Measures the paper's components during a get-up episode and stops it early (see the module
    docstring). Adds ``opt_success``, ``opt_settle_time`` (s), ``opt_min_pitch_deg``,
    ``opt_max_head_m`` and ``opt_end`` (``success`` / ``fell`` / ``timeout``) to the record."""

    def __init__(self, rules: GetUpRules) -> None:
        self.rules = rules
        self._reset_state()

    def _reset_state(self) -> None:
        self.min_pitch = 90.0
        self.max_head = 0.0
        self.last_moving = 0.0
        self.still_since: float | None = None
        self.end = "timeout"
        self.check_time = math.inf
        self._prev_pitch: float | None = None

    def on_reset(self, env: Any, policy: Any, info: dict[str, Any]) -> None:
        self._reset_state()
        base = env.unwrapped
        controller = getattr(policy, "controller", None) or getattr(base, "prior", None)
        start = info.get("start", getattr(base, "start", ""))
        self.check_time = self.rules.check_time(start, getattr(controller, "params", None))

    def on_step(self, env: Any, policy: Any, action: np.ndarray, info: dict[str, Any]) -> bool | None:
        base = env.unwrapped
        p = base.posture()
        pitch_deg = math.degrees(abs(p.fused_pitch))
        if p.hemisphere > 0:
            self.min_pitch = max(0.0, min(self.min_pitch, pitch_deg))
        self.max_head = max(self.max_head, p.head_height)
        if p.angular_speed > self.rules.settle_speed:
            self.last_moving = p.time
        upright = is_upright(p, base.standing)
        if upright and p.angular_speed <= self.rules.settle_speed:
            self.still_since = p.time if self.still_since is None else self.still_since
            if p.time - self.still_since >= self.rules.hold_seconds - 1e-9:
                self.end = "success"
                return True
        else:
            self.still_since = None
        if p.time >= self.check_time and not upright:
            moving_away = self._prev_pitch is not None and pitch_deg > self._prev_pitch
            low = p.head_height < self.rules.head_below * base.standing.head_height
            if low or (pitch_deg > self.rules.fall_pitch_deg and moving_away and p.hemisphere > 0 and
                       self.min_pitch < self.rules.fall_pitch_deg):
                self.end = "fell"
                return True
        self._prev_pitch = pitch_deg
        return None

    def on_episode_end(self, env: Any, policy: Any, record: dict[str, Any]) -> dict[str, Any]:
        return {"opt_success": self.end == "success", "opt_settle_time": self.last_moving,
                "opt_min_pitch_deg": self.min_pitch, "opt_max_head_m": self.max_head, "opt_end": self.end}


def getup_components(record: Mapping[str, Any]) -> dict[str, float]:
    """The four get-up components of one episode record (with :class:`GetUpScore`'s fields)."""
    success = bool(record["opt_success"])
    return {
        "success": 0.0 if success else 100.0,
        "time": 10.0 * min(float(record["opt_settle_time"]), 10.0) if success else 100.0,
        "head": max(0.0, 100.0 - 100.0 * float(record["opt_max_head_m"])),
        "pitch": float(record["opt_min_pitch_deg"]),
    }


def walk_components(record: Mapping[str, Any]) -> dict[str, float]:
    """The four walk components of one episode record (the walk environment's metrics)."""
    command = np.asarray(record.get("command", (0.0, 0.0, 0.0)), dtype=float)
    velocity = np.asarray(record.get("mean_velocity", (0.0, 0.0, 0.0)), dtype=float)
    speed = float(np.linalg.norm(command[:2]))
    direction = command[:2] / speed if speed > 1e-9 else np.zeros(2)
    reached = float(velocity[:2] @ direction) / speed if speed > 1e-9 else 1.0
    return {
        "falls": 100.0 if record.get("falls", 0) or record.get("stopped") else 0.0,
        "linear_error": min(100.0, 100.0 * float(record["linear_tracking_error"]) / max(speed, 0.05)),
        "yaw_error": min(100.0, 100.0 * float(record["yaw_tracking_error"]) / max(abs(command[2]), 0.5)),
        "speed_shortfall": 100.0 * min(1.0, max(0.0, 1.0 - reached)),
    }


def components(task: str, record: Mapping[str, Any]) -> dict[str, float]:
    """All components of one episode record of ``task``."""
    return getup_components(record) if task == "getup" else walk_components(record)


def mean_components(task: str, records: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Component means over a trial's repetitions."""
    rows = [components(task, r) for r in records]
    return {k: float(np.mean([row[k] for row in rows])) for k in rows[0]}


def episode_succeeded(task: str, record: Mapping[str, Any]) -> bool:
    """Whether one repetition succeeded (get-up: stood up by the trial rules; walk: no fall)."""
    if task == "getup":
        return bool(record["opt_success"])
    return not (record.get("falls", 0) or record.get("stopped"))


__all__ = ["DEFAULT_OBJECTIVE", "GETUP_LETTERS", "GetUpRules", "GetUpScore", "WALK_LETTERS", "components",
           "episode_succeeded", "getup_components", "mean_components", "parse_objective", "walk_components"]
