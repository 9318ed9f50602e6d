"""The ``Policy`` interface: everything that acts in an environment (built-in policies, classical
controllers, SB3 models, residual policies) is driven the same way by the evaluation runner.

Protocol of one episode::

    observation, info = env.reset(seed=seed)
    policy.reset(env, seed)
    while not done:
        action = policy.act(observation, info)
        observation, reward, terminated, truncated, info = env.step(action)
    policy.close()   # once, when the policy is no longer needed
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # robot-side code: Gymnasium only for the environments' side
    import gymnasium as gym


class Policy(ABC):
    """Maps an observation (and the step's ``info``) to an action of the environment.

    ``info["sensors"]`` is the robot's :class:`~upright.envs.sensors.Sensors` record of this step,
    the only robot-side data besides the observation that a controller may use.
    """

    #: Short name used in reports (``results.json``'s ``policy``).
    name: str

    def reset(self, env: gym.Env, seed: int | None) -> None:
        """Start an episode in ``env`` (called after ``env.reset(seed=seed)``); ``seed`` seeds any
        randomness of the policy. The default keeps no state."""

    @abstractmethod
    def act(self, observation: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        """The action (the environment's action space, normalised to [-1, 1]) for this step."""

    def close(self) -> None:
        """Release resources (models, files); the default holds none."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


__all__ = ["Policy"]
