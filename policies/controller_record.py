"""Test vectors of a classical controller: one episode of its inputs and outputs, cycle by cycle,
and a fresh controller's answers to the recorded inputs.

A controller (``upright.baselines``) is a function of its inputs alone: the walk command given to
``set_command`` before ``reset``, the seed of the generator given to ``reset``, every cycle's
:class:`~upright.envs.sensors.Sensors` (all fields, float64, as given) and, for a residual that
acts inside its prior, the per-cycle calls :data:`CYCLE_INPUTS`. Its output is every cycle's joint
targets (rad, actuator order). :class:`RecordingController` records them while a controller runs
in an environment, either driving it (:func:`record_controller_episode`, for
``tests/test_controller_targets.py``) or as the prior of a trained residual
(:func:`record_prior_episode`, for ``upright export``'s ``prior_vectors.npz``);
:meth:`ControllerEpisode.replay` feeds the recorded inputs to a fresh controller in the order the
environments call it: ``set_command``, ``reset`` with the first cycle's sensors, then per cycle the
cycle inputs and ``step``. No physics runs in a replay, so comparing its targets with the recorded
ones checks the controller alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from upright.envs.sensors import Sensors
from upright.policies.base import Policy

#: The :class:`~upright.envs.sensors.Sensors` fields in their order: a controller's inputs per cycle.
SENSOR_FIELDS: tuple[str, ...] = tuple(Sensors.__dataclass_fields__)
#: The calls through which a residual acts inside its prior, each made before that cycle's
#: ``step``: a get-up's tempo factor (``tempo_range``) and a walk's step-target offsets
#: (``residual_on="steps"``: m, m, rad).
CYCLE_INPUTS: tuple[str, ...] = ("set_tempo", "set_step_residual")


@dataclass(frozen=True)
class ControllerEpisode:
    """One episode of a controller: its inputs and its joint targets, cycle by cycle.

    ``sensors`` maps each :data:`SENSOR_FIELDS` name to its values stacked over the cycles
    (float64; ``time`` has shape ``(cycles,)``); ``targets`` is ``(cycles, nu)`` (rad, actuator
    order); ``inputs`` maps a :data:`CYCLE_INPUTS` name that was called to its argument per cycle,
    NaN in the cycles without a call."""

    seed: int
    command: np.ndarray | None
    sensors: dict[str, np.ndarray]
    targets: np.ndarray
    inputs: dict[str, np.ndarray]

    @property
    def cycles(self) -> int:
        """The number of control cycles."""
        return len(self.targets)

    def sensors_at(self, cycle: int) -> Sensors:
        """The :class:`Sensors` of ``cycle`` (copies of the recorded arrays)."""
        return Sensors(**{f: (float(v[cycle]) if f == "time" else v[cycle].copy()) for f, v in self.sensors.items()})

    def arrays(self, prefix: str = "") -> dict[str, np.ndarray]:
        """The episode as NPZ arrays, each key ``prefix`` + ``seed``, ``command`` (walks), a
        Sensors field, ``targets`` or a cycle input."""
        out = {f"{prefix}seed": np.array(self.seed)}
        if self.command is not None:
            out[f"{prefix}command"] = self.command
        out.update({f"{prefix}{f}": values for f, values in self.sensors.items()})
        out[f"{prefix}targets"] = self.targets
        out.update({f"{prefix}{name}": values for name, values in self.inputs.items()})
        return out

    @classmethod
    def from_arrays(cls, data: Mapping[str, np.ndarray], prefix: str = "") -> ControllerEpisode:
        """The episode :meth:`arrays` wrote under ``prefix`` into ``data`` (an NPZ file or a dict)."""
        command = f"{prefix}command"
        return cls(seed=int(data[f"{prefix}seed"]),
                   command=np.asarray(data[command], dtype=float) if command in data else None,
                   sensors={f: np.asarray(data[f"{prefix}{f}"]) for f in SENSOR_FIELDS},
                   targets=np.asarray(data[f"{prefix}targets"]),
                   inputs={name: np.asarray(data[f"{prefix}{name}"]) for name in CYCLE_INPUTS
                           if f"{prefix}{name}" in data})

    def replay(self, controller: Any) -> np.ndarray:
        """The targets ``(cycles, nu)`` (rad) of the fresh ``controller`` fed the recorded inputs
        as the environments feed a prior: the command (walks), ``reset`` with the first cycle's
        sensors and a generator of :attr:`seed`, then every cycle its inputs and ``step``."""
        if self.command is not None:
            controller.set_command(self.command.copy())
        controller.reset(self.sensors_at(0), np.random.default_rng(self.seed))
        targets = []
        for cycle in range(self.cycles):
            for name, values in self.inputs.items():
                if not np.isnan(values[cycle]).any():
                    getattr(controller, name)(values[cycle].copy() if values.ndim > 1 else float(values[cycle]))
            targets.append(np.array(controller.step(self.sensors_at(cycle)), dtype=np.float64))
        return np.array(targets)


class RecordingController:
    """``controller`` with every input it is given and every target it returns recorded.

    Anything else (``status``, ``gait``, parameters) is the controller's. ``reset`` gives the
    controller a generator of ``seed`` instead of the one it is passed, so the recording names
    the seed that reproduces it; a second ``reset`` or a command change after it is refused (one
    episode is recorded from its start)."""

    def __init__(self, controller: Any, seed: int) -> None:
        self.controller = controller
        self.seed = int(seed)
        self._command: np.ndarray | None = None
        self._started = False
        self._sensors: dict[str, list[np.ndarray]] = {f: [] for f in SENSOR_FIELDS}
        self._targets: list[np.ndarray] = []
        self._pending: dict[str, np.ndarray] = {}
        self._inputs: dict[str, dict[int, np.ndarray]] = {}

    def __getattr__(self, name: str) -> Any:
        if name in CYCLE_INPUTS:
            method = getattr(self.controller, name)

            def record_call(value: Any) -> None:
                self._pending[name] = np.array(value, dtype=np.float64)
                method(value)

            return record_call
        return getattr(self.controller, name)

    def set_command(self, command: np.ndarray) -> None:
        """The walk command (vx m/s, vy m/s, yaw rate rad/s), before ``reset`` only."""
        if self._started:
            raise ValueError("the command changed after reset: a recording holds one command per episode")
        self._command = np.array(command, dtype=np.float64)
        self.controller.set_command(command)

    def reset(self, sensors: Sensors, rng: np.random.Generator | None = None) -> None:
        """Start the controller from ``sensors`` with a generator of :attr:`seed` (``rng`` is not used)."""
        if self._started:
            raise ValueError("the controller was reset twice: a recording holds one episode from its start")
        self._started = True
        self.controller.reset(sensors, np.random.default_rng(self.seed))

    def step(self, sensors: Sensors) -> np.ndarray:
        """The controller's targets for ``sensors``, recorded with them (copied before the
        controller sees them) and with the cycle inputs given since the last step."""
        cycle = len(self._targets)
        for f in SENSOR_FIELDS:
            self._sensors[f].append(np.array(getattr(sensors, f), dtype=np.float64))
        for name, value in self._pending.items():
            self._inputs.setdefault(name, {})[cycle] = value
        self._pending = {}
        targets = self.controller.step(sensors)
        self._targets.append(np.array(targets, dtype=np.float64))
        return targets

    def episode(self) -> ControllerEpisode:
        """What was recorded, as an episode."""
        inputs = {}
        for name, calls in self._inputs.items():
            shape = next(iter(calls.values())).shape
            values = np.full((len(self._targets), *shape), np.nan)
            for cycle, value in calls.items():
                values[cycle] = value
            inputs[name] = values
        return ControllerEpisode(seed=self.seed, command=self._command,
                                 sensors={f: np.array(v) for f, v in self._sensors.items()},
                                 targets=np.array(self._targets), inputs=inputs)


def record_controller_episode(env: gym.Env, controller: Any, seed: int) -> ControllerEpisode:
    """One episode of ``env`` (without a prior) from ``env.reset(seed=seed)`` in which
    ``controller``'s targets drive the robot, called as
    :class:`~upright.policies.builtin.ControllerPolicy` calls it; its inputs and targets."""
    recorder = RecordingController(controller, seed)
    _, info = env.reset(seed=seed)
    if "command" in info:
        recorder.set_command(np.array(info["command"], dtype=float))
    recorder.reset(info["sensors"])
    while True:
        targets = recorder.step(info["sensors"])
        _, _, terminated, truncated, info = env.step(env.unwrapped.action_from_targets(targets))
        if terminated or truncated:
            return recorder.episode()


def record_prior_episode(env: gym.Env, policy: Policy, seed: int) -> ControllerEpisode:
    """One episode of ``env`` (with a prior) from ``env.reset(seed=seed)`` in which the residual
    ``policy`` acts; the inputs the environment gave its prior and the prior's targets, every
    cycle from the first (the environment's own calls, recorded as they happen)."""
    base = env.unwrapped
    residual = base.residual
    if residual is None:
        raise ValueError(f"{base.spec.id if base.spec else type(base).__name__} has no prior to record")
    prior = residual.prior
    recorder = RecordingController(prior, seed)
    residual.prior = recorder
    try:
        observation, info = env.reset(seed=seed)
        policy.reset(env, seed)
        while True:
            observation, _, terminated, truncated, info = env.step(policy.act(observation, info))
            if terminated or truncated:
                return recorder.episode()
    finally:
        residual.prior = prior


__all__ = ["CYCLE_INPUTS", "SENSOR_FIELDS", "ControllerEpisode", "RecordingController", "record_controller_episode",
           "record_prior_episode"]
