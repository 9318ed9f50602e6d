"""Gymnasium ids of the environments; :func:`register_envs` runs when ``upright`` is imported."""

from __future__ import annotations

import gymnasium as gym

#: id → (entry point, robot)
ENVIRONMENTS = {
    "upright/NaoGetUp-v0": ("upright.envs.getup:GetUpEnv", "nao"),
    "upright/WolfgangGetUp-v0": ("upright.envs.getup:GetUpEnv", "wolfgang"),
    "upright/NaoWalk-v0": ("upright.envs.walk:WalkEnv", "nao"),
    "upright/WolfgangWalk-v0": ("upright.envs.walk:WalkEnv", "wolfgang"),
}


def env_id(robot: str, task: str) -> str:
    """The id of ``robot``'s environment for ``task`` (``"getup"`` or ``"walk"``, the modules of the
    entry points); ValueError naming a bad value."""
    for name, (entry_point, env_robot) in ENVIRONMENTS.items():
        if env_robot == robot and entry_point.split(":")[0].rsplit(".", 1)[-1] == task:
            return name
    raise ValueError(f"no environment for robot {robot!r} and task {task!r}; ids: {', '.join(ENVIRONMENTS)}")


def register_envs() -> None:
    """Register every id once (importing ``upright`` twice is harmless)."""
    for env_id, (entry_point, robot) in ENVIRONMENTS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, kwargs={"robot": robot})
