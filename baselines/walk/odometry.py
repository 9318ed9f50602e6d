"""Walking-speed feedback from the robot's own odometry (ours; shared by the walks).

A walk that plans its steps for the commanded velocity does not make that velocity on the robot:
the servos lag their targets, a swing foot lands before it reaches its target, the feet slip, a
balance correction shortens a step. :class:`SpeedFeedback` measures what the walk really made
and adds an integral correction to the velocity the walk plans with, so that the measured
velocity follows the command (per axis: forward, sideways, turning).

What the walk made is measured from the robot's own sensors, the way a robot's odometry does
(legged odometry, e.g. B-Human's from the leg kinematics): a foot that stands on the ground does
not move, so the motion of the torso relative to it — joint angles through the robot's model,
turned into the gravity frame by the IMU — is the torso's motion over the ground. Measured is the
velocity the walk environments report: that of the torso's centre of mass (MuJoCo's body
velocity), in the torso's heading frame, and the IMU's turn rate about the vertical. Every control
cycle (:class:`FootSample` of the foot that stands, from :class:`FootSampler`):

* the foot that stands is the one that carries more of the weight (its pressure sensors) when
  the cycle begins: at the end of a step the old support foot is already unloaded and drags over
  the ground, and a swing foot that touches down early takes the weight before the walk switches
  its support; in the cycle in which a foot lands and takes the weight it still moves;
* a standing foot that is loaded may still turn on the ground (the body's twist when the robot
  turns or steps sideways): its turn over the cycle — the IMU's yaw plus the foot's yaw relative to
  the torso — is about its centre of pressure (the foot's pressure sensors), which moves the sole
  origin by the turn times the lever from the centre of pressure; that motion is added;
* with no foot on the ground (both pressure sums zero: a hop) the torso keeps its last velocity;
* the torso's displacement is turned into the heading of that cycle (not of a whole step: the
  torso's yaw sways within a step) and the turn is the vertical component of the gyro's rate
  (not the change of the heading, which differs from it while the swaying torso cones).

The velocity of every two steps (a full cycle of the walk's support feet: the lateral sway and a
turn made by one foot cancel) is compared with the command; the correction integrates ``gain``
times that error per cycle, limited to ``limit`` per axis, and is held (not integrated) for the
first ``warmup`` steps after the start or a change of command (the walk is still accelerating).
``scale`` multiplies the measured displacement (B-Human's odometryScale; 1: none).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, NamedTuple, Sequence

import numpy as np

from upright.baselines.kernels import foot_pressure_sums


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
    #: Factor on the measured displacement, forward and sideways (1: no slip).
    scale: tuple[float, float] = (1.0, 1.0)
    #: Control cycles per odometry sample within a step (1: every cycle). The motion between two
    #: samples is integrated as one piece (the feet's positions telescope); a change of the support
    #: foot is always sampled, so steps still end at their cycle.
    period: int = 1


class FootSample(NamedTuple):
    """What the robot measures of one foot in one control cycle."""

    #: The torso's centre of mass relative to the sole origin (m), in the torso's heading frame
    #: (gravity-aligned, turned by the torso's yaw).
    x: float
    y: float
    #: The sole's yaw relative to the torso's heading (rad).
    yaw: float
    #: The summed normal force of the foot's pressure sensors (N).
    load: float
    #: The centre of pressure in the sole frame (m); (0, 0) without load.
    cop_x: float
    cop_y: float


class FootSampler:
    """The robot's measurement of its feet for :meth:`SpeedFeedback.observe`, on its own model:
    where its foot-pressure sensors sit in their sole frames (``Sensors.foot_pressure`` holds the
    left foot's, then the right's: ``RobotSpec.foot_pressure_sensors``), and per control cycle the
    :class:`FootSample` of a foot, computed only for the feet the odometry uses (usually one a
    cycle).

    Each cycle: :meth:`loads` with the pressure readings, :meth:`Kinematics.fk` of the measured
    joints (torso at the origin) and :meth:`tilt`, then :meth:`sample` for a foot while the private
    model still holds that posture (inside :meth:`SpeedFeedback.observe`)."""

    def __init__(self, kin, robot) -> None:
        if not all(robot.foot_pressure_sensors):
            raise ValueError(f"{robot.name} needs foot pressure sensors under both feet for the walks' odometry, "
                             f"has {robot.foot_pressure_sensors}")
        kin.fk(kin.keyframe_joints())  # the sensors are fixed to the feet: any posture does
        d = kin.data
        sole_ids = tuple(kin.site_id(site) for site in robot.sole_sites)

        def in_sole(sole: int, name: str) -> tuple[float, float]:
            """The sensor ``name``'s x, y in the frame of the sole site ``sole`` (m)."""
            m, o, q = d.site_xmat[sole], d.site_xpos[sole], d.site_xpos[kin.site_id(name)]
            v = (q[0] - o[0], q[1] - o[1], q[2] - o[2])
            return (float(m[0] * v[0] + m[3] * v[1] + m[6] * v[2]),
                    float(m[1] * v[0] + m[4] * v[1] + m[7] * v[2]))

        #: Per foot (left, right) its sensors' (x, y) in the sole frame (m).
        self.sensors = tuple(tuple(in_sole(sole, name) for name in names)
                             for sole, names in zip(sole_ids, robot.foot_pressure_sensors))
        #: Per reading of ``Sensors.foot_pressure`` (the left foot's, then the right's) its sensor's
        #: (x, y) in its sole frame (m), and how many readings are the left foot's.
        self._reading_xy = np.array([xy for foot in self.sensors for xy in foot])
        self._left_readings = len(self.sensors[0])
        #: The torso's centre of mass in the torso frame (m): the same in every posture (the torso
        #: is the model's root, fixed at the origin).
        self._torso_com = tuple(d.xipos[kin.torso_id].tolist())
        #: Views of the sole sites' positions and orientations (left, right), current after ``fk``.
        self._sole_pos = tuple(d.site_xpos[i] for i in sole_ids)
        self._sole_rot = tuple(d.site_xmat[i] for i in sole_ids)
        self._t0: Sequence[float] = (1.0, 0.0, 0.0)
        self._t1: Sequence[float] = (0.0, 1.0, 0.0)
        #: Per foot (left, right) this cycle's summed normal force (N) and its moments Σ f x, Σ f y
        #: (N m) about the sole origin.
        self._sums = ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0))

    def loads(self, pressure: np.ndarray) -> tuple[float, float]:
        """This cycle's foot-pressure readings (N, ``Sensors.foot_pressure``, a float array);
        returns the summed normal force under each foot (left, right; N), summed in sensor order."""
        self._sums = left, right = foot_pressure_sums(pressure, self._reading_xy, self._left_readings)
        return left[0], right[0]

    def tilt(self, t0: Sequence[float], t1: Sequence[float]) -> None:
        """This cycle's tilt: ``t0``, ``t1`` the first two rows of the rotation from the torso frame
        into its heading frame (the IMU's pitch and roll)."""
        self._t0, self._t1 = t0, t1

    def sample(self, side: int) -> FootSample:
        """The :class:`FootSample` of foot ``side`` (0 left, 1 right) in the posture of the private
        model, with this cycle's tilt and pressure."""
        t0, t1 = self._t0, self._t1
        cx, cy, cz = self._torso_com
        sx, sy, sz = self._sole_pos[side].tolist()
        m = self._sole_rot[side].tolist()
        u0, u1, u2 = cx - sx, cy - sy, cz - sz
        heading_x = t0[0] * m[0] + t0[1] * m[3] + t0[2] * m[6]  # the sole's x axis in the heading frame
        heading_y = t1[0] * m[0] + t1[1] * m[3] + t1[2] * m[6]
        load, px, py = self._sums[side]
        if load > 0.0:  # the centre of pressure: the pressure-weighted mean of the sensor positions
            px, py = px / load, py / load
        else:
            px = py = 0.0
        return FootSample(t0[0] * u0 + t0[1] * u1 + t0[2] * u2, t1[0] * u0 + t1[1] * u1 + t1[2] * u2,
                          math.atan2(heading_y, heading_x), load, px, py)


class SpeedFeedback:
    """The integral speed correction of a walk (see the module docstring).

    Call :meth:`observe` every control cycle with the feet's loads and their :class:`FootSampler`,
    and :meth:`planned` for the velocity to plan with.
    """

    def __init__(self, params: FeedbackParams) -> None:
        if not isinstance(params.period, int) or isinstance(params.period, bool) or params.period < 1:
            raise ValueError(f"feedback.period must be an integer >= 1 (control cycles), got {params.period!r}")
        self.params = params
        self.reset()

    def reset(self) -> None:
        """No correction, no measured step."""
        self.correction = [0.0, 0.0, 0.0]
        #: Velocity (m/s, m/s, rad/s) measured over the last full cycle (two steps), None before.
        self.measured: tuple[float, float, float] | None = None
        #: The foot that stood in the last cycle (+1 left, −1 right), 0 before.
        self.standing = 0
        self._command: tuple[float, float, float] | None = None
        self._steps = 0
        self._support: int | None = None
        self._last: tuple | None = None  # (time, loads, [left, right] samples taken, yaw, yaw rate) of the last cycle
        self._step: list[float] | None = None  # this step's (dx, dy, dyaw, duration)
        self._previous: list[float] | None = None
        self._rate: tuple[float, float] | None = None  # the torso's last velocity over the ground (yaw frame)
        self._cycles = 0  # observed cycles, for ``period``
        self._rate_at: tuple[float, float] | None = None  # (time, turn rate) of the last cycle
        self._turn = 0.0  # the turn (rad) since the last sample

    def planned(self, command) -> tuple[float, float, float]:
        """The velocity to plan with for ``command`` (vx, vy, wz): command plus the correction."""
        command = (float(command[0]), float(command[1]), float(command[2]))
        if command != self._command:
            self._command, self._steps = command, 0
        if not self.params.enabled:
            return command
        c = self.correction
        return command[0] + c[0], command[1] + c[1], command[2] + c[2]

    def observe(self, time: float, support: int, loads: tuple[float, float], sample: Callable[[int], FootSample],
                yaw: float, yaw_rate: float) -> None:
        """One control cycle: ``support`` the walk's support foot (+1 left, −1 right, 0 both: the
        start, not measured), the summed normal force under each foot (left, right; N), ``sample``
        the :class:`FootSample` of a foot this cycle (0 left, 1 right; :meth:`FootSampler.sample`,
        asked for the feet the odometry uses only, before this method returns), the torso's yaw
        (rad, IMU) and its turn rate about the vertical (rad/s, the IMU's gyro turned into the
        world). A change of ``support`` ends a step. With ``period`` > 1 the cycles between two
        samples only add their turn (``sample`` is not asked)."""
        # the turn since the last cycle (trapezoid of the turn rates), summed up to the next sample
        rate_at, self._rate_at = self._rate_at, (time, yaw_rate)
        if rate_at is not None:
            self._turn += 0.5 * (rate_at[1] + yaw_rate) * (time - rate_at[0])
        self._cycles += 1
        if self._cycles % self.params.period and support == self._support:
            return
        turn, self._turn = self._turn, 0.0
        feet: list[FootSample | None] = [None, None]
        last = self._last
        self._last = (time, loads, feet, yaw, yaw_rate)
        if last is not None and self._step is not None:
            self._integrate(last, self._last, sample, turn)
        if support != self._support:
            if self._step is not None and self._step[3] > 0.0:
                self._step_done(self._step)
            self._support = support
            self._step = [0.0, 0.0, 0.0, 0.0] if support in (1, -1) else None
            if support not in (1, -1):
                self._previous = None
        # the foot the next cycle's motion is measured from (:meth:`_stands` of these loads)
        left, right = loads
        if not (left <= 0.0 and right <= 0.0 and self._rate is not None):
            i = 0 if self._stands(left, right) == 1 else 1
            if feet[i] is None:
                feet[i] = sample(i)

    def _stands(self, left: float, right: float) -> int:
        """The foot that stands (+1 left, −1 right) for the loads ``left``, ``right`` (N) at the
        beginning of a cycle: the one that carries more of the weight (a foot that lands takes the
        weight while it still moves); with equal loads the last one, or at first the support foot."""
        if left != right:
            return 1 if left > right else -1
        if self.standing == 0:
            return self._support if self._support in (1, -1) else 1
        return self.standing

    def _integrate(self, a: tuple, b: tuple, sample: Callable[[int], FootSample], turn: float) -> None:
        """Add the torso's motion from cycle ``a`` to cycle ``b`` (``sample``: b's feet; ``turn``:
        the torso's turn between them, rad) to the step."""
        dt = b[0] - a[0]
        if dt <= 0.0:
            return
        ya, yb = a[3], b[3]
        left, right = a[1]
        if left <= 0.0 and right <= 0.0 and self._rate is not None:
            # no foot on the ground: the torso keeps its velocity
            dx, dy = self._rate[0] * dt, self._rate[1] * dt
        else:
            self.standing = self._stands(left, right)
            i = 0 if self.standing == 1 else 1
            fa, fb = a[2][i], b[2][i]
            if fb is None:
                fb = b[2][i] = sample(i)
            # the torso's CoM relative to the foot, in the yaw frame, at both cycles
            ca, sa, cb, sb = math.cos(ya), math.sin(ya), math.cos(yb), math.sin(yb)
            dx = (cb * fb.x - sb * fb.y) - (ca * fa.x - sa * fa.y)
            dy = (sb * fb.x + cb * fb.y) - (sa * fa.x + ca * fa.y)
            # the foot's turn on the ground about its centre of pressure moves its sole origin (the
            # turns written out: (c x − s y, s x + c y))
            foot = ya + fa.yaw
            spin = yb + fb.yaw - foot
            spin = math.atan2(math.sin(spin), math.cos(spin))  # wrapped
            c, s = math.cos(foot), math.sin(foot)
            x, y = -fa.cop_x, -fa.cop_y
            lx, ly = c * x - s * y, s * x + c * y  # sole origin minus centre of pressure
            c, s = math.cos(spin), math.sin(spin)
            mx, my = c * lx - s * ly, s * lx + c * ly
            dx, dy = dx + mx - lx, dy + my - ly
            self._rate = (dx / dt, dy / dt)
        # into the heading of this cycle
        half = yb - ya
        angle = -(ya + 0.5 * math.atan2(math.sin(half), math.cos(half)))
        c, s = math.cos(angle), math.sin(angle)
        dx, dy = c * dx - s * dy, s * dx + c * dy
        step = self._step
        step[0] += dx
        step[1] += dy
        step[2] += turn
        step[3] += dt

    def _step_done(self, step: list[float]) -> None:
        sx, sy = self.params.scale
        step = [sx * step[0], sy * step[1], step[2], step[3]]
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


__all__ = ["FeedbackParams", "FootSample", "FootSampler", "SpeedFeedback"]
