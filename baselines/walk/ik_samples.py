"""The walks' leg IK at fewer control cycles than the walk runs (the walks' compute).

A walk solves its legs' inverse kinematics for the posture it wants every control cycle; on a
robot whose control cycle is short against what the IK and the posture behind it cost (Wolfgang:
100 Hz, where the IK alone is about a fifth of the environment step) the walk may solve only every
``period``-th cycle and continue the joint targets linearly in between: the change per cycle of the
last two solutions, carried on from the last one. The posture of a walk changes smoothly over a
step (tens of cycles), so the continued targets stay close to the ones the IK would give; what a
cycle in between does not get is that cycle's own feedback (gyro, CoM correction), which the next
solution takes in. ``period`` 1 (the default) solves every cycle: the targets are the IK's.
``lipm`` on Wolfgang solves every other cycle (``ik_period`` in ``baselines/data/lipm_wolfgang.yaml``),
``step_adjust`` on Wolfgang too (``baselines/data/step_adjust_wolfgang.yaml``); ``lipm`` on NAO solves
its legs every cycle and only NAO's shared hip yaw-pitch joint every other cycle (``hip_period``): the
legs are solved for the continued hip angle, so the feet's positions and sole normals stay exact and
only their yaw follows the continued hip.
"""

from __future__ import annotations

import numpy as np


class SampledJoints:
    """Joint targets (rad, an array of any fixed order and length, or one joint's float) solved
    every ``period`` control cycles and continued linearly in the cycles between (see the module
    docstring).

    Every control cycle calls :meth:`due`; when it answers True the walk solves and hands the
    joints to :meth:`solved`, else it takes :meth:`continued`. Until two solutions exist every
    cycle solves.
    """

    def __init__(self, period: int) -> None:
        if not isinstance(period, int) or isinstance(period, bool) or period < 1:
            raise ValueError(f"the IK period must be an integer >= 1 (control cycles), got {period!r}")
        self.period = period
        self.reset()

    def reset(self) -> None:
        """Forget the solutions: the next two cycles solve."""
        self._last: np.ndarray | None = None
        #: The change per control cycle (rad) between the last two solutions; None before two.
        self._rate: np.ndarray | None = None
        #: Control cycles since the last solution.
        self._age = 0

    def due(self) -> bool:
        """Begin a control cycle: whether it solves the IK (then :meth:`solved`) or continues
        (:meth:`continued`)."""
        if self.period == 1:
            return True
        self._age += 1
        return self._rate is None or self._age >= self.period

    def solved(self, joints: np.ndarray | float) -> None:
        """This cycle's solution (an array is copied; with ``period`` 1 nothing is kept)."""
        if self.period == 1:
            return
        if self._last is not None:
            self._rate = (joints - self._last) / self._age
        self._last, self._age = joints.copy() if isinstance(joints, np.ndarray) else joints, 0

    def continued(self) -> np.ndarray | float:
        """This cycle's joints (a new array, or a float for a single joint): the last solution plus
        the change per cycle times the cycles since it."""
        return self._last + self._age * self._rate


__all__ = ["SampledJoints"]
