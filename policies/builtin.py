"""Built-in policies: ``zero``, ``random`` and ``hold`` (hold the standing pose), and
``ControllerPolicy``, which drives an environment with a classical controller from
:mod:`upright.baselines`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from upright.baselines import make_controller
from upright.baselines.common.params import Params
from upright.policies.base import Policy


class ZeroPolicy(Policy):
    """Always the all-zero action: mid-range joint targets without a prior, the prior's targets
    exactly with one."""

    name = "zero"

    def __init__(self) -> None:
        self._action = np.zeros(0, dtype=np.float32)

    def reset(self, env: gym.Env, seed: int | None) -> None:
        self._action = np.zeros(env.action_space.shape, dtype=np.float32)

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        return self._action.copy()


class RandomPolicy(Policy):
    """Uniform random actions in [-1, 1], drawn from a generator seeded by ``reset``'s seed."""

    name = "random"

    def __init__(self) -> None:
        self._rng = np.random.default_rng()
        self._shape: tuple[int, ...] = ()

    def reset(self, env: gym.Env, seed: int | None) -> None:
        self._rng = np.random.default_rng(seed)
        self._shape = env.action_space.shape

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        return self._rng.uniform(-1.0, 1.0, size=self._shape).astype(np.float32)


class HoldPolicy(Policy):
    """Command the standing keyframe's joint targets every step (an environment without a prior)."""

    name = "hold"

    def __init__(self) -> None:
        self._action = np.zeros(0, dtype=np.float32)

    def reset(self, env: gym.Env, seed: int | None) -> None:
        base = env.unwrapped
        if getattr(base, "prior", None) is not None:
            raise ValueError("policy 'hold' commands absolute joint targets; use it on an environment without a prior")
        self._action = base.action_from_targets(base.standing_targets)

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        return self._action.copy()


class ControllerPolicy(Policy):
    """A classical controller (registered in :mod:`upright.baselines`) acting on its own: its joint
    targets (rad) become the action through ``env.unwrapped.action_from_targets``.

    The controller (public :attr:`controller`) is built on ``reset`` for the environment's robot
    with :attr:`params` and reset from the first step's ``info["sensors"]`` with a generator seeded
    by ``reset``'s seed.

    Args:
        name: the registered baseline.
        params: its parameters: None (the robot's defaults), a parameter set of the baseline's
            class, or a mapping of dotted overrides of the defaults (see
            :func:`upright.baselines.make_controller`).
        label: the policy's :attr:`name` in results (default: ``name``).
    """

    def __init__(self, name: str, params: Params | Mapping[str, Any] | None = None, label: str | None = None) -> None:
        #: The registered baseline's name.
        self.baseline = name
        self.name = label or name
        #: The parameters as given (None, a parameter set or dotted overrides); the controller's
        #: resolved set is ``controller.params``.
        self.params = params
        #: The controller of the current environment (None before the first ``reset``).
        self.controller: Any = None
        self._env: Any = None
        self._seed: int | None = None
        self._started = False

    def reset(self, env: gym.Env, seed: int | None) -> None:
        base = env.unwrapped
        if getattr(base, "prior", None) is not None:
            raise ValueError(f"policy {self.name!r} commands absolute joint targets; use it on an environment without a prior")
        if self._env is not base:
            self.controller = make_controller(self.baseline, base.robot, base.task, params=self.params)
            self._env = base
        self._seed = seed
        self._started = False

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        sensors = info["sensors"]
        if not self._started:
            if "command" in info and hasattr(self.controller, "set_command"):
                self.controller.set_command(np.array(info["command"], dtype=float))
            self.controller.reset(sensors, np.random.default_rng(self._seed))
            self._started = True
        return self._env.action_from_targets(self.controller.step(sensors))


__all__ = ["ControllerPolicy", "HoldPolicy", "RandomPolicy", "ZeroPolicy"]
