"""The walk of two alternating 3D linear inverted pendulums without double support
(Graf & Röfer 2011, section 2) and its correction from the observed CoM (section 3.2).

A :class:`PendulumPlayer` holds the current single-support phase, the plan of the next one and the
time within the phase; it plans each phase when it begins (step durations by the iterative method,
the sagittal origin from the linear system (9) with the capped origin offset), advances in time,
and re-determines the current phase from a filtered CoM state. Plain Python floats (it runs every
control cycle, where numpy's per-call cost on two-element vectors would dominate); the gait target it
describes (:class:`GaitTarget`: CoM, feet, torso yaw) is in the current phase frame ``Q`` (x forward,
y left, m, rad).

Sides: ``+1`` left support, ``-1`` right support, ``0`` the start phase on both feet, whose pendulum
origin lies under the foot that will swing first, so the CoM starts moving onto the first support
foot from rest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

from upright.baselines.kinematics.vectors import clip
from upright.baselines.walk import pendulum


@dataclass(frozen=True)
class PlayerParams:
    """Pendulum and step parameters of one robot (m, s, rad)."""

    #: Pendulum height h (m), k = sqrt(g / h); may differ from the real CoM height (paper sec. 4).
    pendulum_height: float
    #: Half the lateral distance between the feet in ``Q`` (m).
    foot_y: float
    #: Optimal pendulum origin in ``Q``: x (m, along the foot) and |y| (m, under the foot).
    ref_x: float
    ref_y: float
    #: Nominal duration of a full cycle, two single-support phases (s); sets the apex offset
    #: ``|x0y| = ref_y / cosh(k · step_duration / 4)`` so that in place the CoM meets the midline
    #: at the support switch.
    step_duration: float
    #: Largest allowed |r_x − ref_x| (m) when a phase is planned: the capped origin offset of
    #: section 2.3 (it limits acceleration).
    origin_x_cap: float
    #: Largest allowed |r_x − ref_x| (m) when a phase is re-planned by the correction (B-Human 2013
    #: separates the two: walkRefXPlanningLimit [−2, 3] mm, walkRefXLimit ±30 mm).
    correction_origin_x_cap: float
    #: Lateral origin offset (m) of the start phase, under the foot that swings first.
    start_origin_y: float
    #: Step limits per phase: forward, backward (m, both >= 0), sideways per full cycle (m),
    #: turn per full cycle (rad).
    max_step_forward: float
    max_step_backward: float
    max_step_sideways: float
    max_turn: float
    #: Smallest lateral apex offset (m) the correction may produce; a filtered state closer to
    #: crossing over the origin (equation 19's root near zero or imaginary) is not adopted.
    min_apex: float = 0.005
    #: A correction that would make the phase last longer than this multiple of the nominal phase
    #: (step_duration / 2) is not adopted.
    max_phase_scale: float = 1.5
    #: Largest change of the velocity the steps are planned for, per phase (m/s, m/s, rad/s): the
    #: walk ramps up to a new command (B-Human 2013 limits the step size change, speedMaxChange).
    #: None: no ramp.
    max_acceleration: tuple[float, float, float] | None = None
    #: Where the swing foot is put down relative to its planned landing point, along the phase
    #: frame's x (m, + forward), blended in over the swing: the loaded support leg's servos sag,
    #: the unloaded swing leg's much less, so a swing foot placed relative to the sagging body
    #: lands ahead of the point the next phase stands on. 0: on the planned point.
    landing_offset_x: float = 0.0

    @property
    def k(self) -> float:
        """Pendulum constant (1/s)."""
        return pendulum.omega(self.pendulum_height)

    @property
    def apex_y(self) -> float:
        """|x0y| (m): lateral CoM offset from the origin at the apex."""
        return self.ref_y / math.cosh(self.k * self.step_duration / 4.0)


@dataclass(slots=True)
class Phase:
    """One single-support phase (or the start phase). Vectors are ``[x, y]`` lists in its frame ``Q``."""

    support: int
    r: list[float]
    x0: list[float]
    v0: list[float]
    tb: float
    te: float = 0.0
    #: Step (s̄x, s̄y, turn) from ``Q`` to the next phase's frame, as achieved after capping.
    step: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    #: The step the command asked for (before capping the origin offset).
    desired_step: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    #: Swing foot (x, y, yaw) in ``Q`` when the phase begins.
    swing_start: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])

    def copy(self) -> Phase:
        """A copy with its own lists (a correction or a prediction changes them in place)."""
        return Phase(self.support, self.r[:], self.x0[:], self.v0[:], self.tb, self.te, self.step[:],
                     self.desired_step[:], self.swing_start[:])

    def com(self, t: float, k: float) -> tuple[list[float], list[float]]:
        """CoM position (in ``Q``) and velocity at phase time ``t``."""
        c, s = math.cosh(k * t), math.sinh(k * t)
        x0, v0 = self.x0, self.v0
        return ([self.r[0] + (x0[0] * c + v0[0] * s / k), self.r[1] + (x0[1] * c + v0[1] * s / k)],
                [x0[0] * k * s + v0[0] * c, x0[1] * k * s + v0[1] * c])


class GaitTarget(NamedTuple):
    """Where the walk wants the body at one instant, in the phase frame ``Q`` (m, rad)."""

    support: int
    com_xy: list[float]
    torso_yaw: float
    #: Feet (x, y, z, yaw) of the sole frames, left and right.
    left: tuple[float, float, float, float]
    right: tuple[float, float, float, float]
    #: Phase progress in [0, 1].
    ratio: float


class PendulumPlayer:
    """Plays the alternating pendulums for a velocity command (vx m/s, vy m/s, yaw rate rad/s)."""

    def __init__(self, params: PlayerParams) -> None:
        self.p = params
        self.k = params.k
        self._apex_y = params.apex_y
        self.command = (0.0, 0.0, 0.0)
        #: The velocity the steps are planned for: the command, ramped per phase (``max_acceleration``).
        self.speed = (0.0, 0.0, 0.0)
        self.phase: Phase | None = None
        self.t = 0.0
        #: Next phase: (support, r̄, x̄0, v̄0, t̄b).
        self.next: tuple[int, list[float], list[float], list[float], float] | None = None
        self.phase_count = 0

    # ------------------------------------------------------------------ planning
    def start(self, first_support: int, com_x: float) -> None:
        """Begin on both feet with the CoM at rest at (``com_x``, 0) in ``Q``; the first single-support
        phase stands on ``first_support`` (+1 left, −1 right)."""
        if first_support not in (1, -1):
            raise ValueError(f"first_support must be +1 (left) or -1 (right), got {first_support!r}")
        r = [self.p.ref_x, -first_support * self.p.start_origin_y]
        x0 = [com_x - r[0], -r[1]]
        self.phase = Phase(0, r, x0, [0.0, 0.0], tb=0.0, swing_start=[0.0, -first_support * self.p.foot_y, 0.0])
        self._first_support = first_support
        self.t = 0.0
        self.phase_count = 0
        self.speed = (0.0, 0.0, 0.0)
        self._ramp()
        self._plan(self.phase, 0.0)

    def _desired_step(self, phase: Phase) -> list[float]:
        """The step (s̄x, s̄y, turn) the command asks of ``phase`` (its swing foot is −support), from
        the nominal durations; :meth:`_plan` replaces s̄x by the command times the phase's actual
        duration (which changes with every correction)."""
        if phase.support == 0:
            return [0.0, 0.0, 0.0]
        vx, vy, wz = self.speed
        p = self.p
        cycle = p.step_duration
        swing = -phase.support
        sx = clip(vx * cycle / 2.0, -p.max_step_backward, p.max_step_forward)
        # Sideways and turning: the foot on the side of the motion leads, the other one closes up.
        sy = clip(vy * cycle, -p.max_step_sideways, p.max_step_sideways) if vy * swing > 0 else 0.0
        turn = clip(wz * cycle, -p.max_turn, p.max_turn) if wz * swing > 0 else 0.0
        return [sx, sy, turn]

    def _plan(self, phase: Phase, t: float, cap: float | None = None, replan: bool = False) -> None:
        """Plan ``phase`` from time ``t`` on: its end ``te``, the next phase's begin, the sagittal
        origin and state (equation 9, origin offset capped to ``cap``, default the planning cap) and
        the step actually made. ``replan``: ``phase`` was planned before (a correction of a
        single-support phase); its sideways step and turn are taken from its ``desired_step``
        instead of asked of the planned velocity again (they depend only on that velocity and the
        support side, both fixed for a phase: the same numbers)."""
        p, k = self.p, self.k
        support_next = self._first_support if phase.support == 0 else -phase.support  # the next phase's
        r_next = [p.ref_x, support_next * p.ref_y]
        x0y_next = -support_next * self._apex_y
        if replan:  # desired[0] is set below (single support)
            planned = phase.desired_step
            desired = [0.0, planned[1], planned[2]]
        else:
            desired = self._desired_step(phase)
        te, tb_next = pendulum.switch_times(phase.x0[1], phase.r[1], k, x0y_next, r_next[1], k, desired[1], t)
        if phase.support != 0:  # the CoM covers the sagittal step in this phase's duration
            desired[0] = clip(self.speed[0] * (te - phase.tb), -p.max_step_backward, p.max_step_forward)
        # the sagittal CoM at t (Phase.com's x, the same operations)
        c, s = math.cosh(k * t), math.sinh(k * t)
        x0, v0 = phase.x0[0], phase.v0[0]
        pos, vel = phase.r[0] + (x0 * c + v0 * s / k), x0 * k * s + v0 * c
        r, x0, v0, v0_next = pendulum.connect(k, t, pos, vel, te, k, tb_next, desired[0], r_next[0])
        step_x = desired[0]
        cap = p.origin_x_cap if cap is None else cap
        if abs(r - p.ref_x) > cap:
            r = p.ref_x + math.copysign(cap, r - p.ref_x)
            step_x, x0, v0, v0_next = pendulum.connect_with_origin(k, t, pos, vel, r, te, k, tb_next, r_next[0])
        phase.r[0], phase.x0[0], phase.v0[0] = r, x0, v0
        phase.te = te
        phase.desired_step = desired
        phase.step = [step_x, desired[1], desired[2]]
        self.next = (support_next, r_next, [0.0, x0y_next], [v0_next, 0.0], tb_next)

    def _switch(self) -> None:
        """Begin the planned next phase; the old support foot becomes the swing foot."""
        old = self.phase
        support, r, x0, v0, tb = self.next
        s = old.step
        if old.support != 0:
            # the old support foot (0, ±foot_y) in the new frame: turned back by the turn, after the step
            c, sn = math.cos(-s[2]), math.sin(-s[2])
            dx, dy = 0.0 - s[0], old.support * self.p.foot_y - s[1]
            swing_start = [c * dx + -sn * dy, sn * dx + c * dy, -s[2]]
        else:
            swing_start = [0.0, -support * self.p.foot_y, 0.0]
        self.phase = Phase(support, r[:], x0[:], v0[:], tb, swing_start=swing_start)
        self.t = tb + (self.t - old.te)
        self.phase_count += 1
        self._ramp()
        self._plan(self.phase, self.phase.tb)

    def _ramp(self) -> None:
        """A new phase: the planned velocity moves towards the command by at most ``max_acceleration``."""
        c0, c1, c2 = self.command
        command = (float(c0), float(c1), float(c2))
        limit = self.p.max_acceleration
        if limit is None:
            self.speed = command
        else:
            (s0, s1, s2), (a0, a1, a2) = self.speed, limit
            self.speed = (s0 + clip(command[0] - s0, -a0, a0), s1 + clip(command[1] - s1, -a1, a1),
                          s2 + clip(command[2] - s2, -a2, a2))

    def advance(self, dt: float) -> None:
        """Move on by ``dt`` (s), switching the support leg when the phase ends."""
        self.t += dt
        while self.t >= self.phase.te:
            self._switch()

    def advanced(self, dt: float) -> "PendulumPlayer":
        """A copy moved on by ``dt`` (s): the prediction over the actuation delay (equation 21)."""
        other = PendulumPlayer.__new__(PendulumPlayer)
        # The parameters and the state are shared: advancing rebinds the copy's phase, next phase,
        # speed and time and changes only the new phase's lists in place (a switch builds the new
        # phase from copies of the planned next one), so this player stays as it was.
        other.__dict__.update(self.__dict__)
        other.advance(dt)
        return other

    # ------------------------------------------------------------------ state and correction
    def expected(self) -> tuple[list[float], list[float]]:
        """Expected CoM position (in ``Q``) and velocity now (equation 10 and ẋ(tᵢ))."""
        return self.phase.com(self.t, self.k)

    def correct(self, position, velocity) -> bool:
        """Re-determine the current phase so that it passes through the filtered CoM ``position``
        (in ``Q``) with ``velocity`` (equations 15–20), then re-plan its end and the sagittal
        origin. Returns False (and changes nothing) in the start phase or when the corrected
        pendulums cannot meet."""
        phase = self.phase
        if phase.support == 0:
            return False
        px, py = float(position[0]), float(position[1])
        vx, vy = float(velocity[0]), float(velocity[1])
        x_rel = py - phase.r[1]
        if x_rel * x_rel - (vy / self.k) ** 2 < self.p.min_apex**2:
            return False
        x0y, t = pendulum.lateral_apex(x_rel, vy, self.k, self.p.min_apex)
        if (x0y > 0.0) != (phase.x0[1] > 0.0) or x0y == 0.0 or phase.x0[1] == 0.0:
            return False
        # Sagittal state at t = 0 of the pendulum at (position, velocity) at time t: the system (9) is
        # solved from it.
        x0x, v0x = pendulum.propagate_scalar(px - phase.r[0], vx, self.k, -t)
        # The phase clock shifted so that its begin keeps its distance from the corrected time. The
        # trial shares the step lists, which _plan replaces (it changes only r, x0 and v0 in place).
        trial = Phase(phase.support, phase.r[:], [x0x, x0y], [v0x, 0.0], phase.tb + (t - self.t), phase.te,
                      phase.step, phase.desired_step, phase.swing_start)
        planned_next = self.next
        try:
            self._plan(trial, t, self.p.correction_origin_x_cap, replan=True)
        except ValueError:
            self.next = planned_next
            return False
        if trial.te - trial.tb > self.p.max_phase_scale * self.p.step_duration / 2.0:
            self.next = planned_next
            return False
        self.phase, self.t = trial, t
        return True

    # ------------------------------------------------------------------ gait target
    def target(self, lift_height: float, ahead: float = 0.0) -> GaitTarget:
        """The gait target now, or ``ahead`` s from now (the prediction over the delay, equation 21:
        in the phase frame of that time, :meth:`advanced`): CoM (x, y), feet and torso yaw in ``Q``;
        the swing foot moves along a cosine blend and lifts by ``lift_height`` (m) at mid-phase."""
        if ahead > 0.0:
            t = self.t + ahead
            if t >= self.phase.te:  # into the next phase: the player has to switch
                return self.advanced(ahead).target(lift_height)
        else:
            t = self.t
        phase = self.phase
        k = self.k
        c, s = math.cosh(k * t), math.sinh(k * t)  # the CoM (Phase.com's position, the same operations)
        x0, v0, r = phase.x0, phase.v0, phase.r
        com = [r[0] + (x0[0] * c + v0[0] * s / k), r[1] + (x0[1] * c + v0[1] * s / k)]
        duration = phase.te - phase.tb
        ratio = clip((t - phase.tb) / max(duration, 1e-6), 0.0, 1.0)
        w = self.p.foot_y
        if phase.support == 0:
            return GaitTarget(0, com, 0.0, (0.0, w, 0.0, 0.0), (0.0, -w, 0.0, 0.0), ratio)
        s = phase.step
        c, sn = math.cos(s[2]), math.sin(s[2])
        wy = -phase.support * w
        tx, ty = s[0] + -sn * wy, s[1] + c * wy  # the swing foot's end: s̄ + R(turn) (0, −support·w)
        b = 0.5 - 0.5 * math.cos(math.pi * ratio)  # B-Human's swing blend, smooth 0 → 1; the lift: of 2·ratio
        a = phase.swing_start
        x, y, yaw = a[0] + b * (tx + self.p.landing_offset_x - a[0]), a[1] + b * (ty - a[1]), a[2] + b * (s[2] - a[2])
        swing = (x, y, lift_height * (0.5 - 0.5 * math.cos(math.pi * (2.0 * ratio))), yaw)
        support = (0.0, phase.support * w, 0.0, 0.0)
        torso_yaw = 0.5 * (a[2] + b * (s[2] - a[2]))
        left, right = (support, swing) if phase.support == 1 else (swing, support)
        return GaitTarget(phase.support, com, torso_yaw, left, right, ratio)
