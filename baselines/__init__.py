"""Classical controllers (robot-side code: they see only ``Sensors`` and the robot's own model).

Each baseline registers a factory under its name with :func:`register_controller`;
:func:`make_controller` builds one for a robot (used by ``prior=NAME`` and the policy loader).
"""

from __future__ import annotations

from typing import Callable

from upright.baselines.controller import Controller
from upright.envs.robots import RobotSpec

_FACTORIES: dict[str, Callable[[RobotSpec], Controller]] = {}


def register_controller(name: str, factory: Callable[[RobotSpec], Controller]) -> None:
    """Make ``factory(robot)`` available as the baseline ``name``."""
    _FACTORIES[name] = factory


def controller_names() -> tuple[str, ...]:
    """Names of the registered baselines."""
    return tuple(sorted(_FACTORIES))


def make_controller(name: str, robot: RobotSpec) -> Controller:
    """Build the baseline ``name`` for ``robot``; a clear error for unknown names."""
    try:
        factory = _FACTORIES[name]
    except KeyError:
        valid = ", ".join(controller_names()) or "none registered yet"
        raise ValueError(f"unknown baseline {name!r}; valid baselines: {valid}") from None
    return factory(robot)


__all__ = ["Controller", "controller_names", "make_controller", "register_controller"]
