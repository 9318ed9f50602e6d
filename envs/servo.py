"""The servo model between a controller's joint targets and MuJoCo's position actuators.

The motor itself is native MuJoCo (see the MJCF files): a position actuator whose torque is clipped
to the stall torque, plus joint damping equal to stall torque / no-load speed (the back-EMF line),
which bounds the joint speed. This module adds what MuJoCo does not have:

* the actuation delay: a command reaches the servo ``delay`` control cycles after it was sent;
* wear per actuator (:class:`~upright.envs.conditions.Wear`): ``strength`` (scales stall torque and
  gain, applied to the model), ``lag`` (first-order filter on the set-point), ``play`` (dead band:
  no torque while the joint is within half the play of its set-point) and ``stuck`` windows
  (the set-point freezes at the angle the joint had when the window began);
* the episode's model variation: factors on the position gain and the torque limit (on top of
  the strength), and the encoder's zero offset, so that the servo holds the commanded angle plus
  the offset (a miscalibrated joint).
"""

from __future__ import annotations

from collections import deque

import mujoco
import numpy as np

from upright.envs.conditions import Wear
from upright.envs.kernels import play_ctrl


class Servos:
    """Delay queue and wear of all actuators of one model; one instance per simulation."""

    def __init__(self, model: mujoco.MjModel, control_period: float) -> None:
        self._model = model
        self._period = control_period
        self._kp = model.actuator_gainprm[:, 0].copy()
        self._forcerange = model.actuator_forcerange.copy()
        #: qpos addresses of the actuated joints, actuator order.
        self._qadr = model.jnt_qposadr[model.actuator_trnid[:, 0]]
        self._queue: deque[np.ndarray] = deque()
        self._setpoint = np.zeros(model.nu)
        self._alpha = np.ones(model.nu)
        self._lagging = False
        self._half_play = np.zeros(model.nu)
        self._stuck: list[tuple[int, float, float]] = []
        #: The wear, gain factors and torque factors applied last (``None`` factors: 1).
        self._applied: tuple[tuple[Wear, ...], bytes | None, bytes | None] | None = None
        self._held: dict[int, float] = {}
        self._offset: np.ndarray | None = None
        self.has_play = False

    def reset(self, wear: tuple[Wear, ...], delay: int, initial: np.ndarray, *,
              gain: np.ndarray | None = None, torque: np.ndarray | None = None,
              offset: np.ndarray | None = None) -> None:
        """Apply one episode's wear, position-``gain`` and ``torque``-limit factors (per actuator;
        ``None``: 1) and encoder zero ``offset`` (rad per actuator; ``None``: calibrated) to the
        servos, and fill the delay queue with ``initial`` targets (rad, encoder angles)."""
        if len(wear) != self._model.nu:
            raise ValueError(f"need one Wear per actuator ({self._model.nu}), got {len(wear)}")
        applied = (wear, None if gain is None else gain.tobytes(), None if torque is None else torque.tobytes())
        if applied != self._applied:  # the model and the servos' constants are as the last such draw left them
            self._apply_wear(wear, 1.0 if gain is None else gain, 1.0 if torque is None else torque)
            self._applied = applied
        self._offset = None if offset is None or not offset.any() else np.array(offset, dtype=float)
        self._held = {}
        self._queue = deque(np.array(initial, dtype=float) for _ in range(delay))
        self._setpoint = np.array(initial, dtype=float)

    def _apply_wear(self, wear: tuple[Wear, ...], gain: np.ndarray | float, torque: np.ndarray | float) -> None:
        """Scale the model's gains by each joint's strength times ``gain`` and its force limits by
        the strength times ``torque``, and set the lag, play and stuck windows the servo model
        applies."""
        strength, lag, play = np.array([(w.strength, w.lag, w.play) for w in wear]).T
        kp = self._kp * strength * gain
        self._model.actuator_gainprm[:, 0] = kp
        self._model.actuator_biasprm[:, 1] = -kp
        self._model.actuator_forcerange[:] = self._forcerange * (strength * torque)[:, None]
        self._lagging = bool((lag > 0.0).any())
        self._alpha = (np.where(lag > 0.0, 1.0 - np.exp(-self._period / np.maximum(lag, 1e-9)), 1.0)
                       if self._lagging else np.ones(len(wear)))
        self._half_play = play / 2.0
        self.has_play = bool((self._half_play > 0.0).any())
        self._stuck = [(i, start, start + dur) for i, w in enumerate(wear) for start, dur in w.stuck]

    def refill(self, initial: np.ndarray) -> None:
        """Fill the delay queue and the set-point with ``initial`` targets, keeping the wear."""
        self._queue = deque(np.array(initial, dtype=float) for _ in range(len(self._queue)))
        self._setpoint = np.array(initial, dtype=float)
        self._held = {}

    def command(self, targets: np.ndarray, time: float, qpos: np.ndarray) -> np.ndarray:
        """Send ``targets`` (rad, encoder angles) at ``time`` (s); return the set-point (rad, true
        joint angles: the encoder's plus its zero offset) the servos follow this cycle."""
        self._queue.append(targets)
        arrived = self._queue.popleft()
        change = arrived - self._setpoint
        # Without lag every alpha is 1, and 1 · change is change exactly.
        self._setpoint = self._setpoint + (self._alpha * change if self._lagging else change)
        if not self._stuck and self._offset is None:
            return self._setpoint  # never changed in place: each command makes a new array
        setpoint = self._setpoint.copy() if self._offset is None else self._setpoint + self._offset
        for i, start, end in self._stuck:
            if start <= time < end:
                setpoint[i] = self._held.setdefault(i, float(qpos[self._qadr[i]]))
            else:
                self._held.pop(i, None)
        return setpoint

    def ctrl(self, setpoint: np.ndarray, qpos: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Actuator ``ctrl`` for the current joint angles (into ``out`` when given): the set-point,
        with the gear play's dead band applied (a joint within half the play ``h`` of its set-point
        gets no torque): with the error ``e = setpoint − q``, ``q + sign(e)·max(|e| − h, 0)``,
        compiled (:func:`~upright.envs.kernels.play_ctrl`: it runs every physics step under play;
        ``copysign`` gives ``sign(e)·x`` for the ``x >= 0`` here)."""
        if not self.has_play:
            if out is None:
                return setpoint
            out[:] = setpoint
            return out
        if out is None:
            out = np.empty_like(setpoint)
        play_ctrl(setpoint, qpos, self._qadr, self._half_play, out)
        return out
