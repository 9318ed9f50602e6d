"""The interface every classical controller implements (robot-side code).

A controller sees only :class:`~upright.envs.sensors.Sensors` and the robot's own description and
kinematic model — never the simulator's state.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from upright.baselines.common.params import Params
from upright.envs.sensors import Sensors


@runtime_checkable
class Controller(Protocol):
    """``reset`` at the start of an episode, then ``step`` once per control cycle.

    Walk controllers also have ``set_command(command)``: the velocity command (vx m/s, vy m/s,
    yaw rate rad/s, torso frame) that the walk environment gives; it is called before ``reset``
    and whenever the command changes.
    """

    #: Every tunable number and switch (the family's frozen
    #: :class:`~upright.baselines.common.params.Params`, given by ``make_controller``).
    params: Params
    #: A short word for what the controller is doing: working / waiting / finished / failed / help.
    status: str

    def reset(self, sensors: Sensors, rng: np.random.Generator) -> None:
        """Start a new episode from the first measurements."""

    def step(self, sensors: Sensors) -> np.ndarray:
        """Joint position targets (rad) in the robot's actuator order for this control cycle."""
