"""A policy for the tests of failing episodes: in the episode of a chosen seed it raises, or its
process dies on the spot (``os._exit``, as an out-of-memory kill would end a worker)."""

from __future__ import annotations

import os
import time
from pathlib import Path
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


class OutlivingPolicy(FailingPolicy):
    """:class:`FailingPolicy` whose process ends in the episode seeded ``seed`` while the other
    episodes run: that episode makes the file ``marker`` just before its process ends, and every
    other episode waits at its first step until the file exists and then ``linger`` s more (time
    for the parent to see the death before the episode ends)."""

    def __init__(self, seed: int, marker: str, linger: float = 0.5) -> None:
        super().__init__(seed, "exit")
        self.marker = marker
        self.linger = linger

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        if self.seed == self.fail_seed and self.steps == 4:  # the next step ends the process
            Path(self.marker).touch()
        elif self.seed != self.fail_seed and self.steps == 0:
            while not Path(self.marker).exists():
                time.sleep(0.01)
            time.sleep(self.linger)
        return super().act(observation, info)


class ResetFailingPolicy(ZeroPolicy):
    """Zero actions; its ``reset`` raises ``RuntimeError`` in the episode seeded ``seed`` (after
    other episodes ran with it: a failure of that episode, not a refusal of the environment)."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.fail_seed = seed

    def reset(self, env: gym.Env, seed: int | None) -> None:
        if seed == self.fail_seed:
            raise RuntimeError(f"reset broke in the episode of seed {seed}")
        super().reset(env, seed)
