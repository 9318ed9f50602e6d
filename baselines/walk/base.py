"""What the walks share around their own plan: the joint-error compensation of the legs
(:mod:`~upright.baselines.common.joint_errors`) completes every control cycle's joint requests."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from upright.baselines.common.joint_errors import JointCompensation, JointCompensationParams
from upright.envs.robots import RobotSpec
from upright.envs.sensors import Sensors


class CompensatedWalk(ABC):
    """A walk (a :class:`~upright.baselines.common.controller.Controller`) whose plan,
    :meth:`_plan`, the joint-error compensation completes in :meth:`step`. Its ``reset`` calls
    :meth:`_start_compensation` with the first measurements and its parameters' ``compensation``."""

    robot: RobotSpec
    status: str

    def _start_compensation(self, sensors: Sensors, params: JointCompensationParams) -> None:
        """Start the compensation ``params`` from the measurements ``sensors`` (no error yet); the
        walk works."""
        self._compensation = JointCompensation(params, self.robot)
        self._compensation.reset(sensors)
        self.status = "working"

    def step(self, sensors: Sensors) -> np.ndarray:
        """Joint targets (rad, actuator order) for this control cycle: the walk's plan, with the
        joint-error compensation (``params.compensation``) added."""
        return self._compensation.apply(sensors, self._plan(sensors))

    @abstractmethod
    def _plan(self, sensors: Sensors) -> np.ndarray:
        """The walk's joint requests (rad, actuator order) for this control cycle."""


__all__ = ["CompensatedWalk"]
