"""Gymnasium ids of the environments; :func:`register_envs` runs when ``upright`` is imported, with
the controller factory that builds a named prior (``upright.baselines.make_controller``)."""

from __future__ import annotations

from dataclasses import dataclass

import gymnasium as gym
from gymnasium.envs.registration import WrapperSpec
from gymnasium.wrappers import TimeLimit

from upright.envs.base import DEFAULT_EPISODE_SECONDS, PriorFactory, episode_steps, set_prior_factory
from upright.envs.robots import ROBOT_NAMES, get_robot
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


def match_time_limit(env: gym.Env, default_steps: int) -> gym.Env:
    """The last wrapper ``gym.make`` puts around every id. The registration's ``max_episode_steps``
    (``default_steps``) counts the default ``max_episode_seconds``; an environment made with another
    gets a ``TimeLimit`` (and ``spec.max_episode_steps``) of its own count instead, so the limit a
    tool reads is the one the environment truncates at. A step count given to ``gym.make`` that
    differs from the default is kept, and ``max_episode_steps=-1`` (no ``TimeLimit``) stays without."""
    if not isinstance(env, TimeLimit) or env.spec is None or env.spec.max_episode_steps != default_steps:
        return env
    steps = env.unwrapped.max_episode_steps
    return env if steps == default_steps else TimeLimit(env.env, steps)


def register_envs(prior_factory: PriorFactory | None = None) -> None:
    """Register every id once (importing ``upright`` twice is harmless); ``prior_factory`` builds
    the controller of ``prior="NAME"`` (without one, only controller objects serve as priors).
    Each registration's ``max_episode_steps`` is the default episode's control steps; a changed
    ``max_episode_seconds`` changes it too (:func:`match_time_limit`)."""
    if prior_factory is not None:
        set_prior_factory(prior_factory)
    for name, entry in ENVIRONMENTS.items():
        if name not in gym.registry:
            steps = episode_steps(DEFAULT_EPISODE_SECONDS, get_robot(entry.robot).control_period)
            matched = WrapperSpec("MatchTimeLimit", f"{__name__}:match_time_limit", {"default_steps": steps})
            gym.register(id=name, entry_point=entry.entry_point, kwargs={"robot": entry.robot},
                         max_episode_steps=steps, additional_wrappers=(matched,))
