"""Support-rectangle calibration of the step_adjust walk (Reichenberg & Röfer, section 4), run by the
robot in simulation: ``upright experiment step-adjust-calibration [--set robot=wolfgang] --out DIR``.

The robot stands on both feet in its walking posture and shifts its torso slowly in one of four
directions (by moving both feet the other way in the torso frame) until its gyroscope sees the
beginning of a fall; the CoM it measures at that moment (joint angles + IMU orientation, projected
onto the foot plane, relative to the sole origins) is that border of the support rectangle. On the
real robot a person catches it; here the robot falls on and the episode ends. Everything the robot
uses is its own ``Sensors`` and model (``StepAdjustWalk.com_offset``); the simulator only plays the
world.

Each direction is one episode of the walk environment (``lab``, command zero) through the shared
runner, with the probe (:class:`SupportProbe`, robot-side code with the ``Controller`` interface)
as the environment's prior and the ``zero`` policy, so the servos get the probe's targets exactly.
The probe notes the edge itself; :class:`ProbeResult` copies it into the episode's record.

Writes ``results.json`` / ``results.md`` under ``--out``; copy ``support_back`` /
``support_front`` into the robot's ``step_adjust`` YAML.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from upright.baselines import make_controller
from upright.envs.registration import env_id
from upright.envs.robots import get_robot
from upright.envs.sensors import Sensors
from upright.eval.experiments import ExperimentContext, register_experiment
from upright.eval.runner import Observer
from upright.eval.tables import Column, Table, number
from upright.policies.base import Policy

#: Torso shift speed (m/s), gyro rate that marks the beginning of a fall (rad/s), largest shift (m),
#: time standing still in the walking posture before the shift starts (s).
SHIFT_SPEED = 0.01
FALL_GYRO = 0.1
MAX_SHIFT = 0.15
HOLD_SECONDS = 0.5
#: Directions of the torso shift: unit vector in the walk frame (the feet move the other way), gyro
#: axis (IMU frame) that sees the fall.
DIRECTIONS: dict[str, tuple[tuple[float, float], int]] = {
    "front": ((1.0, 0.0), 1), "back": ((-1.0, 0.0), 1), "left": ((0.0, 1.0), 0), "right": ((0.0, -1.0), 0)}
#: The step_adjust parameter each direction calibrates.
PARAMETERS = {"back": "support_back", "front": "support_front", "left": "support_left", "right": "support_right"}


class SupportProbe:
    """The calibration as robot-side code with the ``Controller`` interface (``reset``, ``step``,
    ``status``): the step_adjust walk of ``robot`` moves into its walking posture (its
    ``start_time``), stands still for :data:`HOLD_SECONDS`, then the torso shifts towards
    ``direction`` by :data:`SHIFT_SPEED` until the gyro axis of that direction exceeds
    :data:`FALL_GYRO` (``status`` "finished") or the shift reaches :data:`MAX_SHIFT` ("failed");
    :attr:`edge` holds the result from then on, and the feet keep that shift."""

    def __init__(self, robot: str, direction: str) -> None:
        if direction not in DIRECTIONS:
            raise ValueError(f"unknown direction {direction!r}; valid: {', '.join(DIRECTIONS)}")
        self.direction = direction
        self.walk = make_controller("step_adjust", get_robot(robot), "walk")
        dt = self.walk.robot.control_period
        self._start_cycles = int(round(self.walk.params.start_time / dt))
        self._shift_from = self._start_cycles + int(round(HOLD_SECONDS / dt))
        #: An episode long enough for the whole shift (s).
        self.episode_seconds = self._shift_from * dt + MAX_SHIFT / SHIFT_SPEED + 1.0
        self.status = "waiting"
        #: Once finished or failed: ``edge`` (m; x relative to the sole origins for front/back, y
        #: relative to the sole on that side for left/right; None when failed), ``torso_shift`` (m)
        #: and ``time`` (s since reset) of the measurement.
        self.edge: dict[str, float | None] | None = None

    def reset(self, sensors: Sensors, rng: np.random.Generator) -> None:
        """Start from the measured standing pose."""
        self.walk.reset(sensors, rng)
        self._hold = self.walk.stance_targets(np.zeros(2))
        self._cycle = 0
        self._shift = 0.0
        self.edge = None
        self.status = "working"

    def step(self, sensors: Sensors) -> np.ndarray:
        """Joint targets (rad, actuator order) for the next cycle from the measurements after the last."""
        cycle = self._cycle
        self._cycle += 1
        if cycle < self._start_cycles:
            return self.walk.step(sensors)
        if cycle < self._shift_from:
            return self._hold
        unit, gyro_axis = DIRECTIONS[self.direction]
        if cycle > self._shift_from and self.status == "working":  # measured after a shifted cycle
            if abs(float(sensors.gyro[gyro_axis])) > FALL_GYRO:
                self.edge = {"edge": self._edge(sensors), "torso_shift": self._shift, "time": sensors.time}
                self.status = "finished"
            elif self._shift >= MAX_SHIFT:
                self.edge = {"edge": None, "torso_shift": self._shift, "time": sensors.time}
                self.status = "failed"
        if self.status == "working":
            self._shift += SHIFT_SPEED * self.walk.robot.control_period
        return self.walk.stance_targets(-np.asarray(unit) * self._shift)

    def _edge(self, sensors: Sensors) -> float:
        """The measured CoM (m) across the edge of this direction."""
        if self.direction in ("left", "right"):
            return float(self.walk.com_offset(sensors, self.direction)[1])
        both = 0.5 * (self.walk.com_offset(sensors, "left") + self.walk.com_offset(sensors, "right"))
        return float(both[0])


class ProbeResult(Observer):
    """Ends the episode once the probe (the environment's prior) has its result and copies it into
    the record: ``edge`` (m or None), ``torso_shift`` (m), ``time`` (s)."""

    def on_step(self, env: gym.Env, policy: Policy, action: np.ndarray, info: dict[str, Any]) -> bool:
        return env.unwrapped.prior.edge is not None

    def on_episode_end(self, env: gym.Env, policy: Policy, record: dict[str, Any]) -> dict[str, Any]:
        probe = env.unwrapped.prior
        return dict(probe.edge) if probe.edge is not None else {"edge": None, "torso_shift": None, "time": None}


def _edge_cell(value: float | None) -> str:
    return "not reached" if value is None else f"{value:.4f} m"


@register_experiment("step-adjust-calibration", "support rectangle of the step_adjust walk, measured by tilting "
                     "the robot until its gyro sees the fall (step-adjustment paper, section 4)",
                     options={"robot": "nao"})
def step_adjust_calibration(ctx: ExperimentContext) -> list[Table]:
    """One episode per direction (seed ``--seed``; ``--set robot=wolfgang``); ``--episodes`` and
    ``--workers`` do not apply (the four runs are single deterministic episodes)."""
    if ctx.episodes not in (None, 1):
        raise ValueError(f"the calibration runs one episode per direction; --episodes {ctx.episodes} does not apply")
    robot = str(ctx.options["robot"])
    rows = []
    ctx.plan(len(PARAMETERS))
    for direction, parameter in PARAMETERS.items():
        probe = SupportProbe(robot, direction)
        env_kwargs = {"command": (0.0, 0.0, 0.0), "conditions": "lab", "prior": probe,
                      "max_episode_seconds": probe.episode_seconds}
        (record,) = ctx.run(env_id(robot, "walk"), "zero", env_kwargs, 1, observers=[ProbeResult()]).records
        rows.append({"parameter": parameter, "direction": direction, "edge": record["edge"],
                     "torso_shift": record["torso_shift"], "time": record["time"]})
    ctx.data.update({"robot": robot, "seed": ctx.seed, "shift_speed": SHIFT_SPEED, "fall_gyro": FALL_GYRO,
                     **{row["parameter"]: row["edge"] for row in rows}})
    notes = (f"Torso shifted at {SHIFT_SPEED * 1000:g} mm/s until the gyro exceeds {FALL_GYRO:g} rad/s; edges "
             "relative to the sole origins (x: both soles, y: the sole on that side). Copy `support_back` and "
             f"`support_front` into the {robot} step_adjust parameters.")
    return [Table(f"Support rectangle of the step_adjust walk, {robot}",
                  [Column("parameter", "parameter"), Column("torso shift towards", "direction"),
                   Column("measured CoM at the fall's start", "edge", _edge_cell),
                   Column("torso shift", "torso_shift", number(4, "m")), Column("time", "time", number(3, "s"))],
                  rows, notes)]
