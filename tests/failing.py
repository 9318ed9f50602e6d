"""A policy for the tests of failing episodes: in the episode of a chosen seed it raises, or its
process dies on the spot (``os._exit``, as an out-of-memory kill would end a worker)."""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np

from upright.policies.builtin import ZeroPolicy


class FailingPolicy(ZeroPolicy):
    """Zero actions; at the fifth step of the episode seeded ``seed`` it raises ``ValueError`` naming
    the seed (``how="raise"``) or ends its process with exit code 1 (``how="exit"``)."""

    def __init__(self, seed: int, how: str = "raise") -> None:
        super().__init__()
        self.fail_seed = seed
        self.how = how
        self.seed: int | None = None
        self.steps = 0

    def reset(self, env: gym.Env, seed: int | None) -> None:
        super().reset(env, seed)
        self.seed, self.steps = seed, 0

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        self.steps += 1
        if self.seed == self.fail_seed and self.steps == 5:
            if self.how == "exit":
                os._exit(1)
            raise ValueError(f"policy broke in the episode of seed {self.seed}")
        return super().act(observation, info)
