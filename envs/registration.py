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


def register_envs() -> None:
    """Register every id once (importing ``upright`` twice is harmless)."""
    for env_id, (entry_point, robot) in ENVIRONMENTS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, kwargs={"robot": robot})
