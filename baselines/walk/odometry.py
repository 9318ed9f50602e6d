"""Walking-speed feedback from the robot's own odometry (ours; shared by the walks).

A walk that plans its steps for the commanded velocity does not make that velocity on the robot:
the servos lag their targets, a swing foot lands before it reaches its target, the feet slip, a
balance correction shortens a step. :class:`SpeedFeedback` measures what each step really made
and adds an integral correction to the velocity the walk plans with, so that the measured
velocity follows the command (per axis: forward, sideways, turning).

What a step made is measured from the robot's own sensors, the way a robot's odometry does (legged
odometry, e.g. B-Human's from the leg kinematics): during a step the support foot stands still on
the ground, so the motion of the torso relative to the support foot — joint angles through the
robot's model, turned into the gravity frame by the IMU — is the robot's motion over the ground
(the torso's, as the walk environments measure the velocity: a torso a few cm from the turning
centre moves sideways while the robot turns, its CoM less). Per step: the displacement of the
torso relative to the support foot's position from the step's first cycle to its last, in the IMU's yaw frame (not the foot's: a foot spins a little on the
ground when the robot turns), turned into the torso's heading at mid-step and scaled by ``scale``
(the support foot slips back a little as it pushes: B-Human's odometryScale, calibrated per
robot), and the turn of the IMU's yaw over the step (B-Human, too, takes odometry rotation from
the IMU). The
velocity of every two steps (a full cycle: the lateral sway and a turn made by one foot cancel) is
compared with the command; the correction integrates ``gain`` times that error per cycle,
limited to ``limit`` per axis, and is held (not integrated) for the first ``warmup`` steps after
the start or a change of command (the walk is still accelerating).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class FeedbackParams:
    """Gains of :class:`SpeedFeedback` (m/s, rad/s)."""

    #: On/off (off: the walk plans with the command as given).
    enabled: bool = True
    #: Fraction of a full cycle's velocity error added to the correction per cycle.
    gain: float = 0.3
    #: Largest correction per axis: forward (m/s), sideways (m/s), turning (rad/s).
    limit: tuple[float, float, float] = (0.1, 0.05, 0.3)
    #: Steps after the start or a command change before the correction integrates.
    warmup: int = 4
    #: Factor on the measured CoM displacement per step, forward and sideways (1: no slip).
    scale: tuple[float, float] = (1.0, 1.0)


def _turn(x: float, y: float, angle: float) -> tuple[float, float]:
    c, s = math.cos(angle), math.sin(angle)
    return c * x - s * y, s * x + c * y


class SpeedFeedback:
    """The integral speed correction of a walk (see the module docstring).

    Call :meth:`observe` every control cycle with the CoM relative to the current support foot and
    the torso's yaw relative to it, and :meth:`planned` for the velocity to plan with.
    """

    def __init__(self, params: FeedbackParams) -> None:
        self.params = params
        self.reset()

    def reset(self) -> None:
        """No correction, no measured step."""
        self.correction = [0.0, 0.0, 0.0]
        #: Velocity (m/s, m/s, rad/s) measured over the last full cycle (two steps), None before.
        self.measured: tuple[float, float, float] | None = None
        self._command: tuple[float, float, float] | None = None
        self._steps = 0
        self._support: int | None = None
        self._first: tuple[float, float, float] | None = None
        self._start_time = 0.0
        self._previous: tuple[float, float, float, float] | None = None

    def planned(self, command) -> tuple[float, float, float]:
        """The velocity to plan with for ``command`` (vx, vy, wz): command plus the correction."""
        command = (float(command[0]), float(command[1]), float(command[2]))
        if command != self._command:
            self._command, self._steps = command, 0
        if not self.params.enabled:
            return command
        c = self.correction
        return command[0] + c[0], command[1] + c[1], command[2] + c[2]

    def observe(self, time: float, support: int, left: tuple[float, float], right: tuple[float, float],
                yaw: float) -> None:
        """One cycle: ``support`` the current support foot (+1 left, −1 right, 0 both), the torso
        (m, x and y) relative to the ``left`` and to the ``right`` sole in the torso's heading frame
        (gravity-aligned, turned by the torso's yaw) and that yaw (rad, from the IMU). A change of
        ``support`` ends a step, measured up to this cycle against the old support foot (so the
        steps tile the time; a cycle without a change costs nothing)."""
        if support == self._support:
            return
        c, s = math.cos(yaw), math.sin(yaw)

        def sample(rel: tuple[float, float]) -> tuple[float, float, float]:  # the relative CoM in the yaw frame
            return c * rel[0] - s * rel[1], s * rel[0] + c * rel[1], yaw

        if self._support in (1, -1) and self._first is not None:
            end = sample(left if self._support == 1 else right)
            self._step_done(self._first, end, time - self._start_time)
        self._support, self._start_time = support, time
        self._first = sample(left if support == 1 else right) if support in (1, -1) else None

    def _step_done(self, first: tuple[float, float, float], last: tuple[float, float, float],
                   duration: float) -> None:
        if duration <= 0.0:
            return
        dyaw = math.atan2(math.sin(last[2] - first[2]), math.cos(last[2] - first[2]))
        # the CoM's displacement over the step, turned into the torso's heading at mid-step
        dx, dy = _turn(last[0] - first[0], last[1] - first[1], -(first[2] + 0.5 * dyaw))
        sx, sy = self.params.scale
        step = (sx * dx, sy * dy, dyaw, duration)
        if self._previous is None:
            self._previous = step
            return
        # a full cycle (two steps, not overlapping the last cycle)
        total = step[3] + self._previous[3]
        self.measured = tuple((step[i] + self._previous[i]) / total for i in range(3))  # type: ignore[assignment]
        self._previous = None
        self._steps += 2
        p = self.params
        if p.enabled and self._command is not None and self._steps > p.warmup:
            for i in range(3):
                error = self._command[i] - self.measured[i]
                self.correction[i] = min(max(self.correction[i] + p.gain * error, -p.limit[i]), p.limit[i])


__all__ = ["FeedbackParams", "SpeedFeedback"]
