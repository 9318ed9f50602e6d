"""Gymnasium ids of the environments; :func:`register_envs` runs when ``upright`` is imported, with
the controller factory that builds a named prior (``upright.baselines.make_controller``)."""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym

from upright.envs.base import PriorFactory, set_prior_factory
from upright.envs.robots import ROBOT_NAMES
from upright.envs.tasks import TASK_ENTRIES


@dataclass(frozen=True)
class EnvEntry:
    """One registered environment: its entry point, the robot it is made for and its task."""

    entry_point: str  # "module:Class"
    robot: str  # one of ROBOT_NAMES
    task: str  # one of upright.envs.tasks.TASKS


#: id → entry: every task for every robot, ``upright/<Robot><Task>-v0``.
ENVIRONMENTS: dict[str, EnvEntry] = {
    f"upright/{robot.capitalize()}{word}-v0": EnvEntry(entry_point, robot, task)
    for task, (entry_point, word) in TASK_ENTRIES.items() for robot in ROBOT_NAMES
}


def env_id(robot: str, task: str) -> str:
    """The id of ``robot``'s environment for ``task`` (one of :data:`~upright.envs.tasks.TASKS`); ValueError naming a
    bad value."""
    for name, entry in ENVIRONMENTS.items():
        if entry.robot == robot and entry.task == task:
            return name
    raise ValueError(f"no environment for robot {robot!r} and task {task!r}; ids: {', '.join(ENVIRONMENTS)}")


def register_envs(prior_factory: PriorFactory | None = None) -> None:
    """Register every id once (importing ``upright`` twice is harmless); ``prior_factory`` builds
    the controller of ``prior="NAME"`` (without one, only controller objects serve as priors)."""
    if prior_factory is not None:
        set_prior_factory(prior_factory)
    for name, entry in ENVIRONMENTS.items():
        if name not in gym.registry:
            gym.register(id=name, entry_point=entry.entry_point, kwargs={"robot": entry.robot})
