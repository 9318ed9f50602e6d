"""Joint errors in position control and their compensation (Reichenberg & Laue 2025, section 4,
equations 1–4), shared by the keyframe stand-up and the walks.

Per joint j and control cycle t:

* raw error (eq. 2): δ_j,t = r_j(t − d) − m_j(t), the request sent ``d`` cycles ago (the robot's
  actuation delay) minus the current measurement;
* predicted error (eq. 3): δ̂_j = 3·(δ_j,t − δ_j,t−1) + δ_j,t;
* applied error (eq. 4): Δ_j = 0 if δ̂_j·δ_j,t ≤ 0; δ̂_j if |δ̂_j| < |δ_j,t|; else δ_j,t — the
  prediction may only ever *reduce* the error (never over-predict).

The keyframe stand-up applies the errors through its motion's compensation entries
(:mod:`upright.baselines.keyframe.compensation`). A walk applies them with
:class:`JointCompensation`: eq. 1 with one factor ``p`` for every compensated joint, each joint
compensating its own error, R̂_j = R_j + p·Δ_j. A softer servo than the one a walk was tuned on
(another robot, another model of it, a worn one) lags its request by more; the compensation
gives that error back to the servo, so the joint follows the plan as a stiffer servo would.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from upright.baselines.kernels import applied_errors, joint_errors
from upright.envs.robots import RobotSpec
from upright.envs.sensors import Sensors


#: The factor of eq. 3's prediction, δ̂ = 3·(δ_t − δ_t−1) + δ_t.
PREDICTION_FACTOR = 3.0


def applied_error(raw: np.ndarray, previous_raw: np.ndarray, factor: float = PREDICTION_FACTOR) -> np.ndarray:
    """Equations 3 and 4 per joint: the predicted error, used only where it is closer to zero than
    ``raw`` (:func:`~upright.baselines.kernels.applied_joint_error`)."""
    raw = np.asarray(raw, dtype=float)
    applied = np.empty(raw.shape)
    applied_errors(raw, np.asarray(previous_raw, dtype=float), factor, applied)
    return applied


class JointErrorEstimator:
    """Keeps the requests of the last ``delay`` cycles and computes the errors of eqs. 2–4.

    Call :meth:`update` with the measured angles at the start of a cycle, then :meth:`push` with
    the request sent in that cycle (NaN where the joint is unstiffened: no error then)."""

    def __init__(self, size: int, delay: int) -> None:
        if delay < 1:
            raise ValueError(f"delay must be >= 1 cycle, got {delay!r}")
        self.size = size
        self.delay = delay
        self._requests: deque[np.ndarray] = deque(maxlen=delay)
        self.raw = np.zeros(size)
        self.previous_raw = np.zeros(size)
        self.applied = np.zeros(size)

    def reset(self, measured: np.ndarray) -> None:
        """Start with the measured angles as the past requests (no error)."""
        self._requests.clear()
        for _ in range(self.delay):
            self._requests.append(np.array(measured, dtype=float))
        self.raw = np.zeros(self.size)
        self.previous_raw = np.zeros(self.size)
        self.applied = np.zeros(self.size)

    @property
    def delayed_request(self) -> np.ndarray:
        """The request sent ``delay`` cycles ago (expected to be executed now)."""
        return self._requests[0]

    def update(self, measured: np.ndarray) -> None:
        """Equation 2 (raw error) and equations 3–4 (applied error) for this cycle, every joint in
        one compiled pass (:func:`~upright.baselines.kernels.joint_errors`; the arrays are new)."""
        self.previous_raw = self.raw
        self.raw, self.applied = np.empty(self.size), np.empty(self.size)
        joint_errors(self.delayed_request, np.asarray(measured, dtype=float), self.previous_raw, PREDICTION_FACTOR,
                     self.raw, self.applied)

    def push(self, request: np.ndarray) -> None:
        """Remember this cycle's request."""
        self._requests.append(np.array(request, dtype=float))


@dataclass(frozen=True)
class JointCompensationParams:
    """Joint-error compensation of a walk (eq. 1 with one factor for every compensated joint)."""

    #: p: the fraction of each compensated joint's applied error (eqs. 3–4, rad) added to its
    #: target (0: off). The error is measured against what was sent less the compensation itself
    #: (:class:`JointCompensation`), so a steady servo error e becomes e / (1 + p).
    gain: float = 0.0
    #: The compensated actuators, by name (empty: none).
    joints: tuple[str, ...] = ()
    #: Dead band (rad): an applied error within ±``dead_band`` is not compensated, a larger one by
    #: what exceeds it (the paper's entry range [a, b] with a = ``dead_band``). Without it the
    #: compensation's loop through the actuation delay keeps a standing robot trembling.
    dead_band: float = 0.0


def compensation_offset(applied: np.ndarray, gains: np.ndarray, dead_band: float) -> np.ndarray:
    """What the compensation adds to the requests: per joint ``gains`` times the part of the
    ``applied`` error (eq. 4) beyond ``dead_band`` (both in the same unit, rad or deg)."""
    if dead_band == 0.0:
        return gains * applied
    return gains * np.sign(applied) * np.maximum(np.abs(applied) - dead_band, 0.0)


def compensation_gains(params: JointCompensationParams, robot: RobotSpec) -> np.ndarray:
    """The factor p per actuator of ``robot`` (actuator order): ``params.gain`` on the named
    joints, 0 elsewhere; a ValueError names an unknown joint."""
    unknown = [j for j in params.joints if j not in robot.actuator_names]
    if unknown:
        raise ValueError(f"compensation joints {unknown} are no actuators of {robot.name}; valid: "
                         f"{', '.join(robot.actuator_names)}")
    return np.array([params.gain if a in params.joints else 0.0 for a in robot.actuator_names])


class JointCompensation:
    """:class:`JointCompensationParams` applied to a walk's joint requests on ``robot``.

    ``reset`` with the first measurements, then ``apply`` once per control cycle to the request
    the walk planned (rad, actuator order). The request a joint's error is measured against is
    what was sent (``Sensors.joint_target``, the last cycle's targets after everything added to
    the walk's, e.g. a residual policy's offsets) less the compensation this walk added: so a
    residual's offsets reach the joints through soft servos as the walk's own plan does, instead
    of being taken for servo errors and compensated away."""

    def __init__(self, params: JointCompensationParams, robot: RobotSpec) -> None:
        self._gain = compensation_gains(params, robot)
        self._dead_band = params.dead_band
        self.active = bool(self._gain.any())
        self._actuated = np.array(robot.actuated_joint_index)
        self._errors = JointErrorEstimator(len(robot.actuator_names), max(1, robot.delay_cycles))

    def reset(self, sensors: Sensors) -> None:
        """Start without error: the measured angles as the past requests."""
        self._errors.reset(sensors.joint_pos[self._actuated])
        self._offset = np.zeros(len(self._gain))

    def apply(self, sensors: Sensors, request: np.ndarray) -> np.ndarray:
        """``request`` (rad, actuator order) with each compensated joint's applied error times the
        gain added (the offset, kept to take it out of the next cycle's ``joint_target``)."""
        if not self.active:
            return request
        self._errors.push(sensors.joint_target - self._offset)
        self._errors.update(sensors.joint_pos[self._actuated])
        self._offset = compensation_offset(self._errors.applied, self._gain, self._dead_band)
        return request + self._offset


__all__ = ["PREDICTION_FACTOR", "JointCompensation", "JointCompensationParams", "JointErrorEstimator", "applied_error",
           "compensation_gains", "compensation_offset"]
