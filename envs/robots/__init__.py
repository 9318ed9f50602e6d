"""Robot descriptions: everything robot-specific outside the MJCF files.

A :class:`RobotSpec` names the joints and actuators in the robot's own order, the control period
and actuation delay of the real robot, the named poses (MJCF keyframes), the sites the simulation
reads, and reference heights used by the tests and the metrics. Get one with :func:`get_robot`.
"""

from __future__ import annotations

from upright.envs.robots.nao import NAO
from upright.envs.robots.spec import RobotSpec
from upright.envs.robots.user_model import with_model
from upright.envs.robots.wolfgang import WOLFGANG


#: robot name → description: the one list of the robots this package models (each also needs its
#: MJCF file ``assets/<name>/<name>.xml``).
ROBOTS: dict[str, RobotSpec] = {r.name: r for r in (NAO, WOLFGANG)}
#: The robots' names.
ROBOT_NAMES = tuple(ROBOTS)


def get_robot(name: str) -> RobotSpec:
    """Return the description of robot ``name`` (one of :data:`ROBOT_NAMES`)."""
    try:
        return ROBOTS[name]
    except KeyError:
        raise ValueError(f"unknown robot {name!r}; valid robots: {', '.join(ROBOT_NAMES)}") from None


__all__ = ["NAO", "ROBOTS", "ROBOT_NAMES", "WOLFGANG", "RobotSpec", "get_robot", "with_model"]
