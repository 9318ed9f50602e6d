"""The spline stand-up's motion: quintic pose splines and the key-pose sequences front, back, rise.

A :class:`PoseSpline` interpolates a pose ``(x, y, z, roll, pitch, yaw)`` (m, rad; orientation as
fixed-axis roll-pitch-yaw, ``R = Rz(yaw) Ry(pitch) Rx(roll)``) through knots with zero velocity and
acceleration: every segment is a rest-to-rest quintic (the reference engine's SmoothSpline,
``bitbots_splines/smooth_spline.cpp``), built with SciPy's ``BPoly.from_derivatives`` for its derivatives. A
rest-to-rest quintic moves on the straight line between its knots with the path parameter
:func:`smoothstep5`, so poses are evaluated in that closed form (the same values, ~20x cheaper than
the ``BPoly`` call; the controller evaluates them at every IK sample).

:func:`plan_motion` turns a direction and a :class:`~upright.baselines.spline.params.SplineParams`
into four splines whose first knot is the measured current pose (the engine's knot lists, ``dynup_engine.cpp``, cited per knot):

* ``l_hand``, ``r_hand``: hand position relative to the shoulder joint, torso orientation;
* ``r_foot``: right sole in the torso frame;
* ``l_foot``: left sole in the right-sole frame (always ``(0, foot_distance, 0, 0, 0, 0)`` after t0).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from functools import cached_property

import mujoco
import numpy as np
from scipy.interpolate import BPoly
from scipy.spatial.transform import Rotation

from upright.baselines.spline.params import SplineParams

DIRECTIONS = ("front", "back", "rise")
EFFECTORS = ("l_hand", "r_hand", "l_foot", "r_foot")
#: Knots closer in time than this (s) are separated by it: a zero-duration phase is a jump, as in
#: the reference engine (which drops segments shorter than 1e-5 s).
MIN_SEGMENT = 1e-5


def smoothstep5(x: np.ndarray | float) -> np.ndarray | float:
    """The path parameter of a rest-to-rest quintic at normalised time ``x`` in [0, 1]:
    ``10x³ − 15x⁴ + 6x⁵`` (zero velocity and acceleration at both ends)."""
    return x * x * x * (10.0 + x * (-15.0 + 6.0 * x))


def pose_vector(pos: np.ndarray, rot: np.ndarray) -> np.ndarray:
    """``(x, y, z, roll, pitch, yaw)`` of a position (m) and rotation matrix (via MuJoCo's
    quaternion: SciPy's ``from_matrix`` orthogonalises and costs ~2.5x more)."""
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(rot, dtype=float).ravel())
    return np.concatenate([pos, Rotation.from_quat(quat[[1, 2, 3, 0]]).as_euler("xyz")])  # (x, y, z, w)


def pose_matrix(vec: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Position (m) and rotation matrix of a pose vector ``(x, y, z, roll, pitch, yaw)``
    (MuJoCo's ``mju_euler2Quat`` with fixed axes ``XYZ``: SciPy's ``from_euler("xyz")``, ~10x cheaper)."""
    quat, rot = np.empty(4), np.empty((3, 3))
    mujoco.mju_euler2Quat(quat, np.asarray(vec[3:6], dtype=float), "XYZ")
    mujoco.mju_quat2Mat(rot.ravel(), quat)
    return np.asarray(vec[:3], dtype=float), rot


class PoseSpline:
    """Piecewise quintic, rest-to-rest interpolation of a 6-D pose through timed knots.

    ``times`` (s, non-decreasing; a repeated time becomes a jump of :data:`MIN_SEGMENT`),
    ``poses`` (n, 6). Angles are unwrapped knot to knot (each knot's angle is taken within π of the
    previous one), so a spline never turns the long way round. Evaluation clamps t to the knots.
    """

    def __init__(self, times: list[float], poses: list[np.ndarray]) -> None:
        if len(times) != len(poses) or not times:
            raise ValueError(f"a PoseSpline needs as many times as poses (>= 1), got {len(times)} and {len(poses)}")
        t = np.array(times, dtype=float)
        p = np.array(poses, dtype=float)
        if p.shape[1:] != (6,) or not np.all(np.isfinite(p)) or not np.all(np.isfinite(t)):
            raise ValueError(f"PoseSpline poses must be finite (n, 6) with finite times, got shape {p.shape}")
        if np.any(np.diff(t) < 0):
            raise ValueError(f"PoseSpline knot times must not decrease, got {t.tolist()}")
        for k in range(1, len(t)):
            t[k] = max(t[k], t[k - 1] + MIN_SEGMENT)
            p[k, 3:] = p[k - 1, 3:] + np.angle(np.exp(1j * (p[k, 3:] - p[k - 1, 3:])))
        if len(t) == 1:  # a constant pose
            t, p = np.array([t[0], t[0] + MIN_SEGMENT]), np.vstack([p, p])
        self.times = t
        self.knots = p
        self._times = t.tolist()  # plain list: bisect on single evaluations

    @cached_property
    def _poly(self) -> BPoly:
        """The piecewise quintic with zero velocity and acceleration at the knots, for the
        derivatives (built on first use: the controller only evaluates poses)."""
        derivatives = np.zeros((len(self.times), 3, 6))
        derivatives[:, 0, :] = self.knots
        return BPoly.from_derivatives(self.times, derivatives)

    @property
    def duration(self) -> float:
        """Time of the last knot (s)."""
        return float(self.times[-1])

    def __call__(self, t: float) -> np.ndarray:
        """The pose at time ``t`` (s), clamped to the knot range: the segment's knots blended by
        :func:`smoothstep5` (equal to the ``BPoly``; a new array)."""
        times = self._times
        k = min(max(bisect.bisect_right(times, t) - 1, 0), len(times) - 2)
        x = min(max((t - times[k]) / (times[k + 1] - times[k]), 0.0), 1.0)
        a = self.knots[k]
        return a + smoothstep5(x) * (self.knots[k + 1] - a)

    def velocity(self, t: float) -> np.ndarray:
        """First time derivative at ``t`` (m/s, rad/s)."""
        return self._poly.derivative()(min(max(t, self.times[0]), self.times[-1]))

    def acceleration(self, t: float) -> np.ndarray:
        """Second time derivative at ``t`` (m/s², rad/s²)."""
        return self._poly.derivative(2)(min(max(t, self.times[0]), self.times[-1]))


@dataclass(frozen=True)
class Plan:
    """One stand-up motion: the four splines and its key instants (s from the motion's start)."""

    direction: str
    splines: dict[str, PoseSpline]
    #: From here on the stabiliser runs (the squat is reached; rise: from the start).
    stabilize_from: float
    #: From here on the head is commanded to its final tilt.
    head_zero_at: float
    #: End of the last knot.
    duration: float

    def poses(self, t: float) -> dict[str, np.ndarray]:
        """Every effector's pose vector at time ``t`` (s)."""
        return {name: spline(t) for name, spline in self.splines.items()}


def _mirror(left: np.ndarray) -> np.ndarray:
    """The right hand's knot from the left hand's: y, roll and yaw change sign."""
    x, y, z, roll, pitch, yaw = left
    return np.array([x, -y, z, -roll, pitch, -yaw])


#: A foot knot that repeats both feet's measured start poses (FRONT #2).
START = "start"


def _phases(direction: str, p: SplineParams) -> list[tuple[float, np.ndarray | None, np.ndarray | str | None]]:
    """The key poses after t0: ``(duration, left-hand knot or None, right-foot knot, START or None)``.

    Knot by knot the key poses of Bit-Bots ``dynup_engine.cpp`` (FRONT #0-#7, BACK #0-#4, rise R)."""
    L, half = p.arm_extended_length, -p.foot_distance / 2.0
    pi = np.pi
    rise = (
        p.rise_time,
        np.array([p.hand_walkready_x, p.hand_walkready_y, p.hand_walkready_height, 0.0, p.hand_walkready_pitch, 0.0]),
        np.array([-p.trunk_x_final, half, -p.trunk_height, 0.0, -p.trunk_pitch, 0.0]),
    )
    if direction == "rise":
        return [rise]
    if direction == "front":
        hp, mla, lmin, tx = p.hands_pitch, p.max_leg_angle, p.leg_min_length_front, p.trunk_x_front
        a = -p.trunk_overshoot_angle_front
        side = p.arm_side_offset_front
        hands_down = np.array([0.0, side, -L, 0.0, pi / 2, 0.0])
        feet_ground = np.array([lmin * np.sin(mla) - tx, half, -lmin * np.cos(mla), 0.0, -mla, 0.0])
        return [
            (p.time_hands_side, np.array([0.0, L, 0.0, 0.0, 0.0, pi / 2]), None),  # 0 arms sideways
            (p.time_hands_rotate, np.array([0.0, L, 0.0, -pi / 2, 0.0, pi / 2]), None),  # 1 rotate hands
            (p.time_hands_front, np.array([np.sin(hp) * 0.005, side, np.cos(hp) * L, 0.0, -pi / 2 + hp, 0.0]),
             START),  # 2 hands over the head, feet still
            (p.time_foot_close, None, np.array([-tx, half, -lmin, 0.0, 0.0, 0.0])),  # 3 legs pulled in
            (p.time_foot_ground_front, None, feet_ground),  # 4 feet under the body
            (p.time_torso_45, np.array([L, side, 0.0, 0.0, 0.0, 0.0]), feet_ground),  # 5 torso to 45 deg
            (p.time_to_squat, hands_down,
             np.array([-np.cos(a) * tx, half, -np.sin(a) * tx - np.cos(a) * lmin, 0.0, a, 0.0])),  # 6 squat
            (p.wait_in_squat_front, hands_down, np.array([-tx, half, -lmin, 0.0, -p.trunk_pitch, 0.0])),  # 7
            rise,
        ]
    if direction == "back":
        side, ab, d = p.arm_side_offset_back, p.arms_angle_back, L / np.sqrt(2.0)
        squat = np.array([-p.com_shift_2, half, -p.trunk_height_back, 0.0, -p.trunk_pitch, 0.0])
        return [
            (p.time_legs_close, np.array([-p.hands_behind_back_x, side, -p.hands_behind_back_z, 0.0, pi / 2, 0.0]),
             np.array([0.0, half, -p.leg_min_length_back, 0.0, 0.0, 0.0])),  # 0 legs in, hands behind
            (p.time_foot_ground_back, np.array([-np.sin(ab) * d, 0.0, -np.cos(ab) * d, 0.0, ab, 0.0]),
             np.array([-p.trunk_height_back, half, -p.com_shift_1, 0.0, p.foot_angle, 0.0])),  # 1 torso up
            (p.time_full_squat_hands, np.array([-L, 0.0, 0.0, 0.0, pi, 0.0]), None),  # 2 arms extended back
            (p.time_full_squat_legs, None,
             np.array([-p.com_shift_2, half, -p.trunk_height_back, 0.0, -p.trunk_overshoot_angle_back, 0.0])),  # 3
            (p.wait_in_squat_back, np.array([0.0, side, -L, 0.0, pi / 2, 0.0]), squat),  # 4 settle
            rise,
        ]
    raise ValueError(f"unknown stand-up direction {direction!r}; valid: {', '.join(DIRECTIONS)}")


#: Phases (counted from 0) whose end starts the stabiliser: the squat is reached.
_SQUAT_PHASE = {"front": 6, "back": 3, "rise": -1}


def plan_motion(direction: str, params: SplineParams, start: dict[str, np.ndarray], slowdown: float = 1.0) -> Plan:
    """The stand-up ``direction`` (``front``, ``back`` or ``rise``) from the measured poses ``start``
    (pose vectors of :data:`EFFECTORS`, frames as in the module docstring); the phases before the
    squat (the unstabilised part) take ``slowdown`` (>= 1) times their durations."""
    missing = set(EFFECTORS) - set(start)
    if missing:
        raise ValueError(f"plan_motion needs start poses of {sorted(missing)}")
    if not slowdown >= 1.0:
        raise ValueError(f"plan_motion's slowdown must be >= 1, got {slowdown!r}")
    phases = _phases(direction, params)
    squat = _SQUAT_PHASE[direction]
    phases = [(duration * slowdown if i < squat else duration, hand, foot)
              for i, (duration, hand, foot) in enumerate(phases)]
    knots: dict[str, tuple[list[float], list[np.ndarray]]] = {
        name: ([0.0], [np.asarray(start[name], dtype=float)]) for name in EFFECTORS
    }
    l_foot_rel = np.array([0.0, params.foot_distance, 0.0, 0.0, 0.0, 0.0])
    t = 0.0
    ends = []
    for duration, hand, foot in phases:
        if duration < 0:
            raise ValueError(f"phase durations must be >= 0, got {duration!r}")
        t += duration
        ends.append(t)
        if hand is not None:
            for name, pose in (("l_hand", hand), ("r_hand", _mirror(hand))):
                knots[name][0].append(t)
                knots[name][1].append(pose)
        if foot is not None:
            for name, pose in (("r_foot", foot), ("l_foot", l_foot_rel)):
                knots[name][0].append(t)
                knots[name][1].append(knots[name][1][0] if isinstance(pose, str) else pose)
    splines = {name: PoseSpline(*knots[name]) for name in EFFECTORS}
    stabilize_from = ends[squat] if squat >= 0 else 0.0
    wait = {"front": params.wait_in_squat_front, "back": params.wait_in_squat_back, "rise": 0.0}[direction]
    head_zero_at = stabilize_from + wait + 0.5 * params.rise_time
    return Plan(direction, splines, stabilize_from, head_zero_at, t)
