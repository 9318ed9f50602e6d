"""The shared metric definitions, used by the environments' ``info``, evaluation and training.

Get-up success: the torso is upright (fused pitch and roll within
:data:`UPRIGHT_ANGLE` of the robot's standing values, hemisphere up), the head is at least
:data:`HEAD_FRACTION` of its standing height, the IMU's angular velocity is below
:data:`STILL_GYRO` (0.15 rad/s, the spline paper's criterion), all held for :data:`HOLD_SECONDS`,
and no fall afterwards until the episode ends. ``time_to_stand`` is the time from the start to the
beginning of that held window. A fall is a torso tilt above :data:`FALLEN_TILT` or the head below
:data:`FALLEN_HEAD_FRACTION` of its standing height.

Every get-up episode also records the spline thesis's own notion, ``stood_up`` (upright and head
high for :data:`HOLD_SECONDS`, no fall afterwards, no stillness requirement) with its
``time_upright``: under the thesis's continuous random torso force a robot that merely stands
rarely keeps its IMU below 0.15 rad/s for a second, so the thesis counted upright robots.

Per-try success (``tries``, ``tries_succeeded``, ``tries_unfinished``), the measure of B-Human's
competition statistics, counted from simulator truth the same way for every policy: a try is one
rise from lying to standing or to a new fall. It begins on the step the robot leaves the fallen
state (after being fallen: a standing start opens none) and ends as a success once the robot has
been upright and head high for :data:`HOLD_SECONDS` (the ``stood_up`` condition, no stillness
requirement), as a failure when it is fallen again before that. ``tries`` counts the finished
ones; a try still open when the episode ends is ``tries_unfinished`` (0 or 1) and counts neither
way. A routine that gives up before the robot ever leaves the fallen state (e.g. breaks up while
pushing on its arms) is not a try here: only what the simulator sees as a rise counts.

Walk (:class:`WalkTracker`): mean velocity, the linear (m/s) and yaw (rad/s) tracking errors on
velocities averaged over a sliding window of :data:`TRACKING_WINDOW_SECONDS`, falls and the distance
walked before the first fall. ``docs/environments.md`` lists every metric.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

UPRIGHT_ANGLE = 0.35  # rad, |fused pitch/roll − standing values|
HEAD_FRACTION = 0.85  # of the standing head height
STILL_GYRO = 0.15  # rad/s, norm of the IMU angular velocity
HOLD_SECONDS = 1.0  # s
FALLEN_TILT = np.deg2rad(60.0)  # rad, torso z axis against the vertical
FALLEN_HEAD_FRACTION = 0.5  # of the standing head height
#: Rows a walk tracker's velocity buffer starts with (it doubles when full).
_INITIAL_ROWS = 256
TRACKING_WINDOW_SECONDS = 1.0  # s, window the walk velocities are averaged over before comparing


class Posture(NamedTuple):
    """Simulator truth about the robot's posture at one instant (for metrics only); a named tuple,
    immutable and built once per control step at a tuple's cost."""

    time: float  # s since the episode start
    fused_pitch: float  # rad
    fused_roll: float  # rad
    hemisphere: float  # +1 upright half, -1 upside down
    tilt: float  # rad, torso z axis against the vertical
    head_height: float  # m above z = 0
    angular_speed: float  # rad/s, norm of the noise-free IMU angular velocity


@dataclass(frozen=True)
class StandingReference:
    """The robot's standing values the thresholds are relative to."""

    fused_pitch: float
    fused_roll: float
    head_height: float


def is_upright(p: Posture, ref: StandingReference) -> bool:
    """Torso upright and head high (no stillness requirement)."""
    return (
        p.hemisphere > 0
        and abs(p.fused_pitch - ref.fused_pitch) < UPRIGHT_ANGLE
        and abs(p.fused_roll - ref.fused_roll) < UPRIGHT_ANGLE
        and p.head_height >= HEAD_FRACTION * ref.head_height
    )


def is_standing_still(p: Posture, ref: StandingReference) -> bool:
    """Upright, head high and still: the instantaneous get-up success condition."""
    return is_upright(p, ref) and p.angular_speed < STILL_GYRO


def is_fallen(p: Posture, ref: StandingReference) -> bool:
    """Torso tilted beyond :data:`FALLEN_TILT` or head below :data:`FALLEN_HEAD_FRACTION`."""
    return p.tilt > FALLEN_TILT or p.head_height < FALLEN_HEAD_FRACTION * ref.head_height


@dataclass
class GetUpTracker:
    """Follows one get-up episode step by step and decides success, ``time_to_stand``, ``stood_up``,
    the falls and the tries (see the module docstring)."""

    ref: StandingReference
    start: str
    still_since: float | None = None
    success_time: float | None = None
    upright_since: float | None = None
    upright_time: float | None = None
    fallen: bool = True
    falls: int = 0
    tries: int = 0  # finished tries (see the module docstring)
    tries_succeeded: int = 0
    try_open: bool = False  # a rise from lying that has neither stood up nor fallen yet
    _initialised: bool = field(default=False, repr=False)

    def update(self, p: Posture) -> None:
        fallen = bool(is_fallen(p, self.ref))
        if not self._initialised:
            self.fallen, self._initialised = fallen, True
        elif fallen and not self.fallen:
            self.falls += 1
            if self.try_open:
                self.tries, self.try_open = self.tries + 1, False
        elif self.fallen and not fallen:
            self.try_open = True
        self.fallen = fallen
        if fallen:
            self.success_time = None  # a fall after standing cancels the success
            self.upright_time = None
        if is_upright(p, self.ref):
            if self.upright_since is None:
                self.upright_since = p.time
            if p.time - self.upright_since >= HOLD_SECONDS - 1e-9:
                if self.upright_time is None:
                    self.upright_time = self.upright_since
                if self.try_open:
                    self.tries, self.tries_succeeded, self.try_open = self.tries + 1, self.tries_succeeded + 1, False
        else:
            self.upright_since = None
        if is_standing_still(p, self.ref):
            if self.still_since is None:
                self.still_since = p.time
            if self.success_time is None and p.time - self.still_since >= HOLD_SECONDS - 1e-9:
                self.success_time = self.still_since
        else:
            self.still_since = None

    @property
    def success(self) -> bool:
        """Stood still for the hold time and has not fallen since."""
        return self.success_time is not None

    def episode_metrics(self, episode_seconds: float, sim_unstable: bool) -> dict[str, object]:
        """The per-episode summary (JSON-serialisable)."""
        success = bool(self.success and not sim_unstable)
        stood_up = bool(self.upright_time is not None and not sim_unstable)
        return {
            "success": success,
            "time_to_stand": self.success_time if success else None,
            "stood_up": stood_up,
            "time_upright": self.upright_time if stood_up else None,
            "start": self.start,
            "falls": self.falls,
            "tries": self.tries,
            "tries_succeeded": self.tries_succeeded,
            "tries_unfinished": int(self.try_open),
            "sim_unstable": bool(sim_unstable),
            "episode_seconds": float(episode_seconds),
        }


@dataclass
class WalkTracker:
    """Follows one walk episode: velocities in the robot's heading frame against the command.

    The tracking errors compare the command with the velocity averaged over a sliding window of
    ``window`` control steps (``round(TRACKING_WINDOW_SECONDS / control period)``: NAO 83 × 12 ms,
    Wolfgang 100 × 10 ms), so the sway within a step cycle does not count as error and standing
    still costs the full command. For every step ``t`` from the first full window on, ``v̄_t`` is the
    mean of the heading-frame velocities (vx, vy, wz) of steps ``t − window + 1 … t``;

    * ``linear_tracking_error`` (m/s) = mean over those ``t`` of ``|(v̄x, v̄y)_t − (cx, cy)|``;
    * ``yaw_tracking_error`` (rad/s) = mean over those ``t`` of ``|v̄z_t − cz|``.

    An episode shorter than one window (a fall within the first second) has the one window over all
    its steps.
    """

    command: np.ndarray  # (vx m/s, vy m/s, yaw rate rad/s)
    window: int  # control steps in the averaging window
    distance: float = 0.0
    distance_before_fall: float | None = None
    falls: int = 0
    #: The recorded velocities in the first :attr:`_count` rows of a buffer that doubles when full,
    #: so that a step appends in place and the mean of the last steps is one reduction of a slice.
    _rows: np.ndarray = field(default_factory=lambda: np.empty((_INITIAL_ROWS, 3)), repr=False,
                             compare=False)
    _count: int = field(default=0, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.window < 1:
            raise ValueError(f"window must be at least one step, got {self.window!r}")

    @property
    def velocities(self) -> np.ndarray:
        """The heading-frame velocities (vx m/s, vy m/s, yaw rate rad/s) recorded so far, ``(n, 3)``,
        one row per step (a view: later updates do not change it)."""
        return self._rows[: self._count]

    @velocities.setter
    def velocities(self, rows: Sequence[np.ndarray] | np.ndarray) -> None:
        rows = np.asarray(rows, dtype=float).reshape(-1, 3)
        self._rows = np.concatenate([rows, np.empty((_INITIAL_ROWS, 3))])
        self._count = len(rows)

    def recent_mean(self, steps: int) -> np.ndarray:
        """Mean velocity (vx m/s, vy m/s, yaw rate rad/s) of the last ``steps`` steps (all of them
        while fewer have passed); zeros before the first step."""
        count = self._count
        if count == 0:
            return np.zeros(3)
        recent = self._rows[max(0, count - steps):count]
        return np.add.reduce(recent, axis=0) / len(recent)

    @classmethod
    def for_period(cls, command: np.ndarray, control_period: float) -> WalkTracker:
        """A tracker whose window is :data:`TRACKING_WINDOW_SECONDS` at ``control_period`` (s)."""
        return cls(np.asarray(command, dtype=float), max(1, round(TRACKING_WINDOW_SECONDS / control_period)))

    def update(self, velocity: np.ndarray, step_distance: float, fallen: bool) -> None:
        """``velocity``: (vx m/s, vy m/s, yaw rate rad/s) in the heading frame; ``step_distance``:
        horizontal distance (m) the torso moved this step."""
        if self._count == len(self._rows):
            self._rows = np.concatenate([self._rows, np.empty_like(self._rows)])
        self._rows[self._count] = velocity
        self._count += 1
        self.distance += step_distance
        if fallen and self.distance_before_fall is None:
            self.falls += 1
            self.distance_before_fall = self.distance

    def windowed_velocities(self) -> np.ndarray:
        """``(n, 3)`` sliding-window means v̄_t, one row per step from the first full window on.

        Each window's sum is a difference of running sums (``O(n)``, where summing every window
        anew costs ``O(n · window)``: milliseconds at the end of a 20 s walk); it agrees with the
        direct sum to rounding (within 1e-12 m/s over thousands of steps, tested)."""
        v = self.velocities if self._count else np.zeros((1, 3))
        window = min(self.window, len(v))
        running = np.cumsum(v, axis=0)
        sums = running[window - 1:].copy()
        sums[1:] -= running[:-window]
        return sums / window

    @property
    def success(self) -> bool:
        """No fall so far (the walk's ``info["is_success"]`` at the end of an episode)."""
        return self.falls == 0

    def episode_metrics(self, episode_seconds: float, sim_unstable: bool) -> dict[str, object]:
        """The per-episode summary (JSON-serialisable)."""
        v = self.velocities if self._count else np.zeros((1, 3))
        error = self.windowed_velocities() - self.command
        return {
            "mean_velocity": v.mean(axis=0).tolist(),
            "linear_tracking_error": float(np.mean(np.linalg.norm(error[:, :2], axis=1))),
            "yaw_tracking_error": float(np.mean(np.abs(error[:, 2]))),
            "falls": self.falls,
            "distance_before_fall": float(self.distance if self.distance_before_fall is None
                                          else self.distance_before_fall),
            "command": self.command.tolist(),
            "sim_unstable": bool(sim_unstable),
            "episode_seconds": float(episode_seconds),
        }
