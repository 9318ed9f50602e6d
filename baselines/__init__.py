"""Classical controllers (robot-side code: they see only ``Sensors`` and the robot's own model).

Each baseline registers a factory under its name with :func:`register_controller`, saying which
robots and which task (``"getup"`` or ``"walk"``) it supports; :func:`make_controller` builds one
for a robot (used by ``prior=NAME`` and the policy loader) and names the bad value when the robot
or task is not supported. A baseline module is registered by importing it at the end of this file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from upright.baselines.controller import Controller
from upright.envs.robots import RobotSpec

TASKS = ("getup", "walk")


@dataclass(frozen=True)
class BaselineEntry:
    """A registered baseline: its factory, the robots it has parameters for and its task."""

    factory: Callable[[RobotSpec], Controller]
    robots: tuple[str, ...]
    task: str


_ENTRIES: dict[str, BaselineEntry] = {}


def register_controller(name: str, factory: Callable[[RobotSpec], Controller], *,
                        robots: tuple[str, ...], task: str) -> None:
    """Make ``factory(robot)`` available as the baseline ``name`` for ``robots`` and ``task``."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    _ENTRIES[name] = BaselineEntry(factory, tuple(robots), task)


def controller_names() -> tuple[str, ...]:
    """Names of the registered baselines."""
    return tuple(sorted(_ENTRIES))


def baseline_entry(name: str) -> BaselineEntry:
    """The registration of ``name``; a clear error for unknown names."""
    try:
        return _ENTRIES[name]
    except KeyError:
        valid = ", ".join(controller_names()) or "none registered yet"
        raise ValueError(f"unknown baseline {name!r}; valid baselines: {valid}") from None


def make_controller(name: str, robot: RobotSpec, task: str | None = None) -> Controller:
    """Build the baseline ``name`` for ``robot``; with ``task`` given, also check the task."""
    entry = baseline_entry(name)
    if robot.name not in entry.robots:
        raise ValueError(f"baseline {name!r} supports robots {entry.robots}, not {robot.name!r}")
    if task is not None and task != entry.task:
        raise ValueError(f"baseline {name!r} is a {entry.task} controller, not for the {task!r} task")
    return entry.factory(robot)


__all__ = ["TASKS", "BaselineEntry", "Controller", "baseline_entry", "controller_names", "make_controller",
           "register_controller"]

# Baseline modules register themselves on import (one line each, below).
from upright.baselines import keyframe  # noqa: E402,F401  (registers 'keyframe')
from upright.baselines import lipm  # noqa: E402,F401  (registers 'lipm')
from upright.baselines import spline  # noqa: E402,F401  (registers 'spline', 'spline_nostab')
from upright.baselines import step_adjust  # noqa: E402,F401  (registers 'step_adjust')
