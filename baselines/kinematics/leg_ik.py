"""Analytic inverse kinematics of the 6-DoF legs on the robot's own model (torso frame: x
forward, y left, z up; metres and radians).

Leg geometry is read from the model at construction (joint anchors and axes at q = 0), not typed in
twice. The analytic leg IK covers the 6-DoF legs of both robots with one algorithm:

* joint 0 (NAO HipYawPitch about its 45° axis in the y-z plane, Wolfgang HipYaw about z) is
  attached to the torso;
* the hip roll turns about the torso's x axis, hip pitch, knee and ankle pitch about its y axis
  (at q = 0, both robots), so the torso frame is the leg's frame: rotations about x and y and the
  angles in the sagittal (x-z) plane are plain 2-D formulas;
* joints 1/2 (hip roll, hip pitch) have intersecting axes; the intersection ``H`` may sit off the
  joint-0 axis (Wolfgang: 23 mm forward, 41 mm down) as long as that offset lies in the plane of the
  joint-0 and hip-roll axes;
* joints 2, 3, 4 (hip pitch, knee, ankle pitch) are parallel; links may be offset along them
  (Wolfgang: ~1.5 mm) and the shank may be tilted relative to the thigh at q = 0 (Wolfgang: 15°);
* joints 4/5 (ankle pitch, ankle roll) intersect at the ankle point ``A``; the ankle roll axis
  lies in the x-z plane (Wolfgang's is tilted 15° with its foot).

Solution order (closed form, no iteration): the ankle point from the sole target; the ankle roll
from the lateral offset along the pitch axes (``a cos q5 + b sin q5 = δ``); joint 0, hip roll and the
total pitch from the remaining rotation (an Euler-angle split about the model's axes); the hip
point ``H`` from joint 0; the knee from the law of cosines in the sagittal plane of the leg; hip
pitch from the direction ``H → A``; ankle pitch as the rest of the total pitch. Of the up to eight
branches the first inside the joint ranges is taken (ankle roll and hip roll nearer zero, knee
nearer the middle of its range first): :meth:`LegIK.solve`, which every entry point calls. The NAO model's axes meet exactly, so the closed form is
exact (~1e-15 m). The Wolfgang MJCF's offsets are rounded to 0.1 mm, so its ankle axes miss each
other by 28 µm; there the closed-form result is polished by a few damped Newton steps on the
sole-site Jacobian (``mj_jacSite``), which also fixes the ill-conditioned hip-yaw / pitch split at
hip roll ±90°.

NAO's two HipYawPitch joints are one motor: :meth:`LegIK.legs_ik` chooses one value (default
the mean of the two legs' free solutions, or one leg's) and solves each other leg for that given
value (position and sole normal exact, the foot's yaw about its sole normal follows), the B-Human
way of sharing the joint; the walks' :meth:`LegIK.walk_legs` takes the mean of the two legs' first
candidates' values instead (or a value it is given).

The closed form (:class:`LegSolver`, one method per step of the derivation in its docstring) runs
in plain Python floats (:mod:`upright.baselines.kinematics.vectors`): the controllers solve legs
every control cycle (walks) or several goal pairs per sample (spline stand-up), where NumPy's
overhead per call on 3-vectors would cost more than the arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

import mujoco
import numpy as np

from upright.baselines.kinematics.forward import (GEOMETRY_TOL, LIMIT_TOL, SIDES, ForwardKinematics, chain_data,
                                                  check_side, closest_points, solve_spd)
from upright.baselines.kinematics.vectors import (Circle, Mat, Vec, add, clip, cross, dot, matvec, pose_error_floats,
                                                  rotate, solve_cos_sin, tmatvec, turn, vec, wrap)
from upright.envs.robots import RobotSpec

#: Targets this far (m) beyond the leg's reach still count as reachable (stretched leg); covers the
#: model's rounding (see :data:`~upright.baselines.kinematics.forward.GEOMETRY_TOL`).
REACH_TOL = 1e-4
#: |cos(hip roll)| below this counts as near the hip's gimbal lock (joint-0 axis parallel to the pitch axes).
GIMBAL_COS = 0.05
#: A reachable closed-form leg solution further than this (rad, summed over the joints) outside the
#: joint ranges is not polished: the polish corrects the model's rounding (well below this), so it
#: cannot bring the candidate inside the ranges (saves the Jacobian iterations per candidate).
POLISH_MARGIN = 0.05
_EYE = np.eye(3)
_EYE6 = np.eye(6)
#: A Newton polish step below this (rad, largest joint) is taken without checking it (see
#: :meth:`LegIK._newton`); the error reported for it is ``TINY_STEP_RESIDUAL`` (m / rad), a bound.
TINY_STEP = 1e-5
TINY_STEP_RESIDUAL = 1e-9


_X, _Y = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)


def down_angle(x: float, z: float) -> float:
    """The sagittal angle (rad) of a vector with x and z components ``x``, ``z``: about the torso's
    y axis (the pitch axes), from straight down (``-z``); a rotation ``Ry(φ)`` adds ``φ``."""
    return math.atan2(-x, -z)


# ---------------------------------------------------------------------- leg geometry
@dataclass(frozen=True)
class LegGeometry:
    """One 6-DoF leg, read from the model at q = 0; points and axes in the torso frame (m).

    Joint order: 0 hip yaw (NAO: HipYawPitch), 1 hip roll, 2 hip pitch, 3 knee, 4 ankle pitch,
    5 ankle roll. With all angles ``q`` the sole frame's rotation is
    ``R(axes[0], q0) ... R(axes[5], q5) @ sole_rot0`` (product of exponentials).
    """

    joint_names: tuple[str, ...]
    #: Joint axes (6, 3) at q = 0.
    axes: np.ndarray
    #: Each pitch joint's (hip pitch, knee, ankle pitch) sign on the torso's y axis.
    pitch_signs: np.ndarray
    #: A point on the joint-0 axis; the hip point H0 = yaw_point + hip_axial * axes[0] + hip_forward * axes[1].
    yaw_point: np.ndarray
    hip_axial: float
    hip_forward: float
    hip_point: np.ndarray
    knee_point: np.ndarray
    ankle_point: np.ndarray
    #: Thigh (H → knee) and shank (knee → A) vectors normal to the pitch axes (their x and z), and
    #: the offset of H from A along them (y).
    thigh: np.ndarray
    shank: np.ndarray
    lateral: float
    #: Sole frame rotation at q = 0 and the ankle point in the sole frame.
    sole_rot0: np.ndarray
    ankle_in_sole: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    #: True when the model's axes meet exactly (NAO); otherwise (Wolfgang, whose MJCF offsets are
    #: rounded to 0.1 mm so the ankle axes miss by 28 µm) the closed form is polished by Newton steps.
    exact: bool
    #: Sole site id and the leg joints' qpos / dof addresses in the private model.
    sole_site: int
    qpos_adr: np.ndarray
    dof_adr: np.ndarray

    @cached_property
    def thigh_length(self) -> float:
        """Hip-pitch axis to knee axis (m)."""
        return float(np.linalg.norm(self.thigh))

    @cached_property
    def shank_length(self) -> float:
        """Knee axis to ankle-pitch axis (m)."""
        return float(np.linalg.norm(self.shank))

    def limit_excess(self, q) -> float:
        """How far (rad, summed over the six joints) the angles ``q`` lie outside the ranges."""
        total = 0.0
        for x, lo, hi in zip(q, self._lower, self._upper):
            total += max(lo - x, 0.0) + max(x - hi, 0.0)
        return total

    def clip(self, q: Sequence[float]) -> list[float]:
        """The angles ``q`` clipped to the joint ranges."""
        return [min(max(x, lo), hi) for x, lo, hi in zip(q, self._lower, self._upper)]

    def inside(self, q: Sequence[float]) -> bool:
        """Whether the angles ``q`` lie inside the joint ranges."""
        for x, lo, hi in zip(q, self._lower, self._upper):
            if not lo <= x <= hi:
                return False
        return True

    @cached_property
    def _lower(self) -> tuple[float, ...]:
        return tuple(self.lower.tolist())

    @cached_property
    def _upper(self) -> tuple[float, ...]:
        return tuple(self.upper.tolist())

    @cached_property
    def solver(self) -> LegSolver:
        """The closed form for this leg (:class:`LegSolver`)."""
        return LegSolver(self)


class LegSolver:
    """The closed-form leg IK of one :class:`LegGeometry`, its constants as floats and float tuples.

    Notation (torso frame at q = 0: x forward, y left, z up): the hip roll turns about ``x``, the
    pitch joints about ``y`` (hip pitch, knee and ankle pitch with the signs ``s2``, ``s3``,
    ``s4`` of their axes on ``y``), joint 0 about ``e0`` in the y-z plane (NAO's HipYawPitch at 45°,
    Wolfgang's hip yaw along z), the ankle roll about ``e5`` in the x-z plane (Wolfgang's tilted
    15°). ``H`` is the hip point (hip roll and pitch axes meet), ``A`` the ankle point (ankle pitch
    and roll axes meet), ``Y`` the point of the joint-0 axis from which ``H`` lies ``hip_forward``
    along ``R(e0, q0) x``. For the sole goal ``(p, R)`` the six joints turn the sole frame by
    ``G = R S0ᵀ`` (``S0``: the sole frame at q = 0). The pitch rotations add up (product of
    exponentials, rotation part)::

        G = R(e0, q0) Rx(q1) Ry(θ) R(e5, q5),   θ = s2 q2 + s3 q3 + s4 q4.

    The steps, one method each:

    1. :meth:`ankle`: ``A = p + R a``, ``a`` the ankle point in the sole frame.
    2. :meth:`ankle_rolls`: the offset of ``H`` from ``A`` along ``y`` after joint 0 and hip roll
       is the leg's constant ``lateral`` (the hip's forward offset along ``R(e0, q0) x`` does not
       change it). Seen from the foot that axis is ``Gᵀ R(e0, q0) Rx(q1) y = R(e5, q5)ᵀ y = y cos q5
       − (e5 × y) sin q5``, so with ``w = Gᵀ (Y − A)``: ``w_y cos q5 − (w · (e5 × y)) sin q5 = lateral``.
    3. The rest ``G R(e5, q5)ᵀ = R(e0, q0) Rx(q1) Ry(θ)``, from its images of ``x`` and ``y``
       (:meth:`rest_x`, :meth:`rest_y`): ``R(e0, q0)`` keeps the part along ``e0``, so ``e0 · Rx(q1) y = e0 ·
       rest_y`` gives both hip rolls (:meth:`hip_rolls`); joint 0 turns ``Rx(q1) y`` onto
       ``rest_y`` about ``e0`` (:meth:`first_joint`); ``θ`` is the angle of ``Rx(q1)ᵀ R(e0, q0)ᵀ
       rest_x = Ry(θ) x`` about ``y`` (:meth:`pitch_sum`).
    4. :meth:`hip_to_ankle`: joint 0 places ``H`` on a circle about its axis; ``v = R(e0, q0)ᵀ (A − H)``.
    5. :meth:`knees`: ``Rx(q1)ᵀ v`` in the sagittal (x-z) plane has length ``d`` and a direction
       about ``y``; the law of cosines ``d² = l1² + l2² + 2 l1 l2 cos β`` on the thigh and shank
       gives the bend ``β`` between them, and the knee is ``β`` plus the shank's tilt against the
       thigh at q = 0 (``offset``); :meth:`hip_pitch` is that direction less the direction of the
       bent two-link chain, ``atan2(l2 sin β, l1 + l2 cos β)`` from the thigh.
    6. :meth:`angles`: the ankle pitch is the rest of ``θ``: ``q4 = s4 (θ − s2 q2 − s3 q3)``.

    Sagittal angles are about ``y`` from straight down (:func:`down_angle`). :meth:`candidates`
    yields all branches lazily (:meth:`LegIK.solve` stops at the first inside the joint ranges);
    with joint 0 given (NAO's shared HipYawPitch): :meth:`candidates_given_first`. :meth:`first`
    and :meth:`first_given_first` are their first candidates, computed straight for the walks,
    which take them nearly always (a generator costs its creation and, when it is left before its
    end, the ``GeneratorExit`` thrown into it: a microsecond or more a leg on CPython 3.11).
    """

    def __init__(self, leg: LegGeometry) -> None:
        self.e0, self.e5 = vec(leg.axes[0]), vec(leg.axes[5])
        self.s2, self.s3, self.s4 = (float(s) for s in leg.pitch_signs)
        self.lateral = float(leg.lateral)
        self.yaw_hip = vec(leg.yaw_point + leg.hip_axial * leg.axes[0])  # Y
        to_sole: Mat = tuple(vec(r) for r in leg.sole_rot0.T)  # type: ignore[assignment]
        self.ankle_in_sole = vec(leg.ankle_in_sole)
        #: step 2: ``y`` and ``e5 × y`` in the sole frame
        self.y_in_sole, self.e5_x_y_in_sole = matvec(to_sole, _Y), matvec(to_sole, cross(self.e5, _Y))
        #: step 3: ``S0ᵀ R(e5, −q5) x`` and ``S0ᵀ R(e5, −q5) y`` (the ankle roll undone, seen from
        #: the sole)
        self.x_before_roll = Circle(self.e5, _X, frame=to_sole)
        self.y_before_roll = Circle(self.e5, _Y, frame=to_sole)
        #: step 4: where joint 0 puts the hip point ``H``
        self.hip = Circle(self.e0, vec(leg.hip_forward * leg.axes[1]), origin=self.yaw_hip)
        #: step 5: thigh and shank lengths (m), the thigh's sagittal direction and its tilt against
        #: the shank at q = 0 (rad)
        self.l1, self.l2 = leg.thigh_length, leg.shank_length
        self.thigh_angle = down_angle(leg.thigh[0], leg.thigh[2])
        self.offset = self.thigh_angle - down_angle(leg.shank[0], leg.shank[2])
        self.knee_mid = 0.5 * float(leg.lower[3] + leg.upper[3])
        #: joint 0 given: the sole normal as the ankle roll turns it, and the constant coefficients
        #: of :meth:`foot_rolls`
        normal0 = vec(leg.sole_rot0[:, 2])
        self.rolled_normal = Circle(self.e5, normal0)
        self.y_normal0, self.y_e5_x_normal0 = normal0[1], cross(self.e5, normal0)[1]

    # ------------------------------------------------------------------ the steps
    def ankle(self, pos: Vec, rot: Mat) -> Vec:
        """Step 1: the ankle point ``A`` of the sole goal (m)."""
        return add(pos, matvec(rot, self.ankle_in_sole))

    def ankle_rolls(self, rot: Mat, ankle: Vec) -> tuple[tuple[float, float], bool]:
        """Step 2: both ankle rolls (rad, nearer zero first) and whether they exist.
        ``w = Gᵀ (Y − A) = S0 Rᵀ (Y − A)``; its products with ``y`` and ``e5 × y`` are those of
        ``Rᵀ (Y − A)`` with them in the sole frame."""
        w = tmatvec(rot, add(self.yaw_hip, ankle, -1.0))
        return solve_cos_sin(dot(w, self.y_in_sole), -dot(w, self.e5_x_y_in_sole), self.lateral, REACH_TOL)

    def rest_x(self, rot: Mat, q5: float) -> Vec:
        """Step 3: the rest's image of ``x``, ``R S0ᵀ R(e5, −q5) x``."""
        return matvec(rot, self.x_before_roll.at(math.cos(q5), -math.sin(q5)))

    def rest_y(self, rot: Mat, q5: float) -> Vec:
        """Step 3: the rest's image of ``y``, ``R S0ᵀ R(e5, −q5) y``."""
        return matvec(rot, self.y_before_roll.at(math.cos(q5), -math.sin(q5)))

    def hip_rolls(self, rest_y: Vec) -> tuple[float, float]:
        """Step 3: both hip rolls (rad, nearer zero first):
        ``e0 · Rx(q1) y = e0_y cos q1 + e0_z sin q1 = e0 · rest_y``."""
        e0 = self.e0
        return solve_cos_sin(e0[1], e0[2], dot(e0, rest_y), REACH_TOL)[0]

    def first_joint(self, rest_y: Vec, q1: float) -> float:
        """Step 3: joint 0 (rad): the angle about ``e0`` that turns ``m = Rx(q1) y = (0, cos q1,
        sin q1)`` onto ``rest_y``, from the parts of both normal to ``e0`` (zero at gimbal lock,
        ``m`` along ``e0``)."""
        e0 = self.e0
        m = (0.0, math.cos(q1), math.sin(q1))
        along = dot(e0, m)
        if 1.0 - along * along < 1e-18:
            return 0.0
        return math.atan2(dot(e0, cross(m, rest_y)), dot(m, rest_y) - along * dot(e0, rest_y))

    def pitch_sum(self, rest_x: Vec, q0: float, q1: float) -> float:
        """Step 3: the pitch sum ``θ`` (rad): ``Ry(θ) x = (cos θ, 0, −sin θ) = Rx(q1)ᵀ u`` for
        ``u = R(e0, q0)ᵀ rest_x``; ``Rx(q1)ᵀ`` keeps ``u_x`` and makes the z part ``u_z cos q1 − u_y sin q1``."""
        ux, uy, uz = rotate(self.e0, -q0, rest_x)
        return math.atan2(uy * math.sin(q1) - uz * math.cos(q1), ux)

    def hip_to_ankle(self, ankle: Vec, q0: float) -> Vec:
        """Step 4: ``R(e0, q0)ᵀ (A − H)``, the hip-to-ankle vector in the frame after joint 0, with
        the hip point where joint 0 at ``q0`` puts it."""
        c, s = math.cos(q0), math.sin(q0)
        return turn(self.e0, c, -s, add(ankle, self.hip.at(c, s), -1.0))

    def knees(self, v0: Vec, q1: float) -> tuple[float, float, tuple[float, float], bool]:
        """Step 5, the knee: for the hip-to-ankle vector ``v0`` (:meth:`hip_to_ankle`) and hip roll
        ``q1``, the sagittal part of ``Rx(q1)ᵀ v0``: its direction from the thigh's at q = 0 (rad)
        and its length (m); both knee angles (rad; the one nearer the middle of the knee's range
        first) and whether the length is within reach."""
        l1, l2 = self.l1, self.l2
        x, z = v0[0], v0[2] * math.cos(q1) - v0[1] * math.sin(q1)
        dist = math.hypot(x, z)
        reachable = abs(l1 - l2) - REACH_TOL <= dist <= l1 + l2 + REACH_TOL
        bend = math.acos(clip((dist * dist - l1 * l1 - l2 * l2) / (2.0 * l1 * l2), -1.0, 1.0))
        s3, mid = self.s3, self.knee_mid
        k1, k2 = s3 * wrap(self.offset + bend), s3 * wrap(self.offset - bend)
        knees = (k2, k1) if abs(k2 - mid) < abs(k1 - mid) else (k1, k2)
        return down_angle(x, z) - self.thigh_angle, dist, knees, reachable

    def hip_pitch(self, direction: float, dist: float, knee: float) -> float:
        """Step 5, the hip pitch (rad): ``direction`` (:meth:`knees`) less the direction of thigh
        plus shank bent by ``knee`` (zero for a hip-to-ankle length ``dist`` ≈ 0)."""
        if dist <= 1e-12:
            return 0.0
        bend = self.s3 * knee - self.offset
        chain = math.atan2(self.l2 * math.sin(bend), self.l1 + self.l2 * math.cos(bend))
        return self.s2 * wrap(direction - chain)

    def angles(self, q0: float, q1: float, theta: float, direction: float, dist: float, knee: float,
               q5: float) -> list[float]:
        """Step 6: the six angles (rad) from joint 0, hip roll, the pitch sum ``theta``, the
        sagittal direction and length (:meth:`knees`), the knee and the ankle roll."""
        q2 = self.hip_pitch(direction, dist, knee)
        return [q0, q1, q2, knee, self.s4 * wrap(theta - self.s2 * q2 - self.s3 * knee), q5]

    # ------------------------------------------------------------------ all six joints free
    def first_yaw(self, pos: Vec, rot: Mat) -> float:
        """Joint 0 (rad) of the first of :meth:`candidates`, without the rest of that candidate."""
        rolls, _ = self.ankle_rolls(rot, self.ankle(pos, rot))
        rest_y = self.rest_y(rot, rolls[0])
        return self.first_joint(rest_y, self.hip_rolls(rest_y)[0])

    def first(self, pos: Vec, rot: Mat) -> tuple[list[float], bool]:
        """The first of :meth:`candidates` (the first root of every step), computed straight."""
        ankle = self.ankle(pos, rot)
        rolls, ok_roll = self.ankle_rolls(rot, ankle)
        q5 = rolls[0]
        rest_x, rest_y = self.rest_x(rot, q5), self.rest_y(rot, q5)
        q1 = self.hip_rolls(rest_y)[0]
        q0 = self.first_joint(rest_y, q1)
        direction, dist, knees, ok_leg = self.knees(self.hip_to_ankle(ankle, q0), q1)
        theta = self.pitch_sum(rest_x, q0, q1)
        return self.angles(q0, q1, theta, direction, dist, knees[0], q5), ok_roll and ok_leg

    def candidates(self, pos: Vec, rot: Mat) -> Iterator[tuple[list[float], bool]]:
        """The solutions for the sole goal ``pos``, ``rot``, in the order: ankle roll nearer zero,
        hip roll nearer zero, knee nearer the middle of its range; each with whether it reaches
        the goal (joint ranges not checked). A double root yields its branches twice."""
        ankle = self.ankle(pos, rot)
        rolls, ok_roll = self.ankle_rolls(rot, ankle)
        for q5 in rolls:
            rest_x, rest_y = self.rest_x(rot, q5), self.rest_y(rot, q5)
            for q1 in self.hip_rolls(rest_y):
                q0 = self.first_joint(rest_y, q1)
                direction, dist, knees, ok_leg = self.knees(self.hip_to_ankle(ankle, q0), q1)
                theta = self.pitch_sum(rest_x, q0, q1)
                for knee in knees:
                    yield self.angles(q0, q1, theta, direction, dist, knee, q5), ok_roll and ok_leg

    # ------------------------------------------------------------------ joint 0 given
    def given_first(self, pos: Vec, rot: Mat, first: float) -> tuple[Vec, Vec, tuple[float, float], bool]:
        """With joint 0 at ``first``: the hip-to-ankle vector ``v0`` (:meth:`hip_to_ankle`), the
        goal's sole normal in the frame after joint 0, and both hip rolls with whether they exist.

        The hip roll keeps the ankle's offset along the pitch axes: ``(Rx(q1)ᵀ v0)_y = −lateral``,
        i.e. ``v0_y cos q1 + v0_z sin q1 = −lateral``."""
        v0 = self.hip_to_ankle(self.ankle(pos, rot), first)
        hip_rolls, ok_roll = solve_cos_sin(v0[1], v0[2], -self.lateral, REACH_TOL)
        normal = rotate(self.e0, -first, (rot[0][2], rot[1][2], rot[2][2]))
        return v0, normal, hip_rolls, ok_roll

    def foot_rolls(self, normal: Vec, q1: float) -> tuple[Vec, tuple[float, float], bool]:
        """The sole normal after the hip roll, ``target = Rx(q1)ᵀ normal`` (the pitch joints and
        the ankle roll remain), and the ankle rolls that tilt the sole normal to it: the pitch
        joints keep the part along ``y``, so ``(R(e5, q5) normal0)_y = target_y``, i.e.
        ``normal0_y cos q5 + (e5 × normal0)_y sin q5 = target_y``."""
        c, s = math.cos(q1), math.sin(q1)
        target = (normal[0], c * normal[1] + s * normal[2], c * normal[2] - s * normal[1])
        rolls, ok = solve_cos_sin(self.y_normal0, self.y_e5_x_normal0, target[1], REACH_TOL)
        return target, rolls, ok

    def ankle_pitch(self, target: Vec, q2: float, q3: float, q5: float) -> float:
        """The ankle pitch (rad): the pitch joints together turn the rolled sole normal
        ``r = R(e5, q5) normal0`` onto ``target`` about ``y`` (by ``atan2(r_z t_x − r_x t_z, r_x t_x
        + r_z t_z)``); the ankle takes what hip pitch and knee leave."""
        rx, _, rz = self.rolled_normal.at(math.cos(q5), math.sin(q5))
        tx, _, tz = target
        theta = math.atan2(rz * tx - rx * tz, rx * tx + rz * tz)
        return self.s4 * wrap(theta - self.s2 * q2 - self.s3 * q3)

    def first_given_first(self, pos: Vec, rot: Mat, first: float) -> tuple[list[float], bool]:
        """The first of :meth:`candidates_given_first` (the first root of every step), computed
        straight."""
        v0, normal, hip_rolls, ok_roll = self.given_first(pos, rot, first)
        q1 = hip_rolls[0]
        direction, dist, knees, ok_leg = self.knees(v0, q1)
        target, rolls, ok_normal = self.foot_rolls(normal, q1)
        knee, q5 = knees[0], rolls[0]
        q2 = self.hip_pitch(direction, dist, knee)
        return ([first, q1, q2, knee, self.ankle_pitch(target, q2, knee, q5), q5],
                ok_roll and ok_leg and ok_normal)

    def candidates_given_first(self, pos: Vec, rot: Mat, first: float) -> Iterator[tuple[list[float], bool]]:
        """The solutions with joint 0 fixed to ``first`` (rad): the five remaining joints reach the
        sole position and the sole normal exactly where the goal allows; the foot's rotation about
        its sole normal is what it comes out as. Order: hip roll, knee, ankle roll (a double root
        twice)."""
        v0, normal, hip_rolls, ok_roll = self.given_first(pos, rot, first)
        for q1 in hip_rolls:
            direction, dist, knees, ok_leg = self.knees(v0, q1)
            target, rolls, ok_normal = self.foot_rolls(normal, q1)
            for knee in knees:
                q2 = self.hip_pitch(direction, dist, knee)
                for q5 in rolls:
                    yield ([first, q1, q2, knee, self.ankle_pitch(target, q2, knee, q5), q5],
                           ok_roll and ok_leg and ok_normal)


# ---------------------------------------------------------------------- on the robot's model
class LegIK(ForwardKinematics):
    """Leg IK of one robot (:class:`ForwardKinematics` with its two legs' geometry, read from the
    model at construction and checked against the closed form's assumptions)."""

    def __init__(self, robot: RobotSpec | str) -> None:
        super().__init__(robot)
        chains = chain_data(self.robot.name)
        self.legs = {side: self._leg_geometry(side, chains["legs"][side]) for side in SIDES}
        for leg in self.legs.values():
            leg.solver  # built here, not in a controller's first cycle
        self._newton_jac = np.empty((6, 6))
        #: The shared hip joint (NAO): the right leg's first joint follows the left's.
        self.shared_hip = bool(self.robot.coupled_joints) and self.robot.coupled_joints.get(
            self.legs["right"].joint_names[0]) == self.legs["left"].joint_names[0]

    def _leg_geometry(self, side: str, names: Sequence[str]) -> LegGeometry:
        """Read one leg's axes, anchors and sole offset at q = 0 and check the IK's assumptions."""
        m, d = self.model, self.data
        if len(names) != 6:
            raise ValueError(f"{side} leg of {self.robot.name} must have 6 joints, got {names}")
        ids = [m.joint(j).id for j in names]
        axes = np.array([d.xaxis[i] for i in ids])
        anchors = np.array([d.xanchor[i] for i in ids])
        n = np.array(_Y)
        signs = np.array([axes[k] @ n for k in (2, 3, 4)])
        # the closed form turns the hip roll about x and the pitch joints about y
        misaligned = max(float(np.max(np.abs(np.abs(signs) - 1.0))), 1.0 - float(axes[1] @ _X))
        problems = []
        if np.any(np.abs(np.abs(signs) - 1.0) > GEOMETRY_TOL):
            problems.append(f"hip pitch, knee and ankle pitch axes are not along the torso's y axis: "
                            f"{axes[2:5].tolist()}")
        if 1.0 - axes[1] @ _X > GEOMETRY_TOL:
            problems.append(f"the hip roll axis is not the torso's x axis: {axes[1].tolist()}")
        for a, b, what in ((0, 1, "joint 0 / hip roll"), (5, 4, "ankle roll / pitch")):
            if abs(axes[a] @ axes[b]) > GEOMETRY_TOL:
                problems.append(f"{what} axes are not perpendicular")
        hip, gap_hip = closest_points(anchors[1], axes[1], anchors[2], axes[2])
        ankle, gap_ankle = closest_points(anchors[4], axes[4], anchors[5], axes[5])
        if gap_hip > GEOMETRY_TOL:
            problems.append(f"hip roll and pitch axes miss each other by {gap_hip:.2e} m")
        if gap_ankle > GEOMETRY_TOL:
            problems.append(f"ankle pitch and roll axes miss each other by {gap_ankle:.2e} m")
        yaw_point = anchors[0]
        offset = hip - yaw_point
        hip_axial, hip_forward = float(offset @ axes[0]), float(offset @ axes[1])
        plane_miss = float(np.linalg.norm(offset - hip_axial * axes[0] - hip_forward * axes[1]))
        if plane_miss > GEOMETRY_TOL:
            problems.append("the hip point is not in the plane of the joint-0 and hip-roll axes")
        qpos_adr = np.array([m.jnt_qposadr[i] for i in ids])
        dof_adr = np.array([m.jnt_dofadr[i] for i in ids])
        if np.any(np.diff(qpos_adr) != 1) or np.any(np.diff(dof_adr) != 1):
            problems.append("the leg's joints are not consecutive in the model")
        if problems:
            raise ValueError(f"{self.robot.name} {side} leg does not fit the analytic IK: " + "; ".join(problems))
        knee = anchors[3]

        def normal(v: np.ndarray) -> np.ndarray:
            return v - (v @ n) * n

        sole = m.site(self.robot.sole_sites[SIDES.index(side)]).id
        sole_pos, sole_rot = d.site_xpos[sole].copy(), d.site_xmat[sole].reshape(3, 3).copy()
        limits = np.array([m.jnt_range[i] for i in ids])
        return LegGeometry(
            joint_names=tuple(names), axes=axes, pitch_signs=np.sign(signs),
            yaw_point=yaw_point, hip_axial=hip_axial, hip_forward=hip_forward,
            hip_point=hip, knee_point=knee, ankle_point=ankle,
            thigh=normal(knee - hip), shank=normal(ankle - knee), lateral=float((hip - ankle) @ n),
            sole_rot0=sole_rot, ankle_in_sole=sole_rot.T @ (ankle - sole_pos),
            lower=limits[:, 0].copy(), upper=limits[:, 1].copy(),
            exact=max(gap_hip, gap_ankle, plane_miss, misaligned) < 1e-9, sole_site=sole,
            qpos_adr=qpos_adr, dof_adr=dof_adr,
        )

    def leg_joint_names(self, side: str) -> tuple[str, ...]:
        """The six leg joints of ``side`` from hip to ankle."""
        return self.legs[check_side(side)].joint_names

    def foot_pose(self, side: str, joint_pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pose of the sole site of ``side`` (``l_sole``/``r_sole``) in the torso frame."""
        sole = self.robot.sole_sites[SIDES.index(check_side(side))]
        self.set_joints(joint_pos)
        return self.site_pose(sole)

    @staticmethod
    def _check_pose(pos: np.ndarray, rot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p = np.asarray(pos, dtype=float)
        r = np.asarray(rot, dtype=float)
        if p.shape != (3,) or not np.isfinite(p).all():
            raise ValueError(f"position must be a finite (3,) vector, got {pos}")
        # NaN or inf in r fails the comparison as well
        if r.shape != (3, 3) or not float(np.abs(r.T @ r - _EYE).max()) <= 1e-4:
            raise ValueError(f"rotation must be a finite orthonormal (3, 3) matrix, got {rot}")
        return p, r

    def solve(self, side: str, pos: Sequence[float], rot: Sequence[Sequence[float]], first: float | None = None,
              polish: bool = True) -> tuple[list[float], bool]:
        """The six angles (rad, order :meth:`leg_joint_names`) that put the sole of ``side`` at
        ``pos`` (m), ``rot`` (torso frame; floats, not checked), and whether the goal was reached.

        The closed form's candidates (:meth:`LegSolver.candidates`; with joint 0 fixed to
        ``first``, :meth:`LegSolver.candidates_given_first`) are tried in their order and the first
        reachable one inside the joint ranges is taken; else the reachable one that leaves its
        ranges least (reached up to ``LIMIT_TOL``); else the least bad one. The angles are always
        clipped to the ranges. With ``polish``, on a leg whose model geometry is not exact
        (Wolfgang), a candidate within ``POLISH_MARGIN`` of its ranges, or near the hip's gimbal
        lock where the closed form's joint-0 / pitch split is degenerate, is first polished by
        Newton steps (:meth:`_newton`); not with ``first``, which the polish would move."""
        leg = self.legs[side]
        if first is None:
            candidates = leg.solver.candidates(pos, rot)
        else:
            candidates = leg.solver.candidates_given_first(pos, rot, first)
        polish = polish and first is None and not leg.exact
        best: tuple[tuple[bool, float], list[float]] | None = None
        for q, ok in candidates:
            if ok and not polish and leg.inside(q):
                return q, True  # the common case: no clipping, nothing to compare
            excess = leg.limit_excess(q)
            if polish and ((ok and excess <= POLISH_MARGIN) or abs(math.cos(q[1])) < GIMBAL_COS):
                q, residual = self._newton(leg, q, pos, rot)
                ok, excess = ok or residual < 1e-6, leg.limit_excess(q)
            if ok and excess <= 1e-12:
                return leg.clip(q), True
            if best is None or (not ok, excess) < best[0]:
                best = ((not ok, excess), q)
        assert best is not None
        (not_ok, excess), q = best
        return leg.clip(q), not not_ok and excess <= LIMIT_TOL

    def leg_ik(self, side: str, pos: np.ndarray, R: np.ndarray) -> tuple[np.ndarray, bool]:
        """Leg angles (6,) (order :meth:`leg_joint_names`) that put the sole of ``side`` at ``pos``, ``R``.

        Closed form (see the module docstring; :class:`~upright.baselines.kinematics.leg_ik.LegSolver`). Of
        the up to eight solutions the first inside the joint ranges is returned, in the order:
        ankle roll nearer zero, hip roll nearer zero, knee nearer the middle of its range.
        ``reachable`` is False when the target is out of reach (then the leg is stretched / folded
        towards it, orientation kept) or when no solution lies inside the joint ranges (then the
        least violating one is clipped); the angles are always finite and inside the ranges
        (:meth:`solve` for a checked goal).
        """
        pos, R = self._check_pose(pos, R)
        q, reachable = self.solve(check_side(side), pos.tolist(), R.tolist())
        return np.array(q), reachable

    def _polish(self, leg: LegGeometry, q: np.ndarray, pos: np.ndarray, rot: np.ndarray,
                steps: int = 8, tol: float = 1e-7, damping: float = 1e-4) -> tuple[np.ndarray, float]:
        """Damped Newton steps on the sole-site Jacobian of the private model (position m, rotation rad).

        Removes what the closed form misses because the model's axes do not meet exactly (usually
        one step reaches ``tol``; a few near the stretched-leg singularity). Returns the iterate
        with the smallest error and that error (max of m and rad; after a step below
        ``TINY_STEP`` the bound ``TINY_STEP_RESIDUAL`` instead, see :meth:`_newton`). Only the
        leg's joints are written into the private model.
        """
        best, error = self._newton(leg, np.asarray(q, dtype=float).tolist(), np.asarray(pos, dtype=float).tolist(),
                                   np.asarray(rot, dtype=float).tolist(), steps, tol, damping)
        return np.array(best), error

    def _newton(self, leg: LegGeometry, q: list[float], pos: list[float], rot: list[list[float]], steps: int = 8,
                tol: float = 1e-7, damping: float = 1e-4) -> tuple[list[float], float]:
        """:meth:`_polish` on lists. The pose error is computed in floats
        (:func:`~upright.baselines.kinematics.vectors.pose_error_floats`), the step with MuJoCo's
        Cholesky. A step whose largest joint change is below ``TINY_STEP`` (1e-5 rad) is not
        checked by another forward kinematics: what the linear model misses is then bounded by
        ~|Δq|²·(leg length) < 1e-9, far below ``tol``, so the check would accept it anyway; the
        error returned for it is the bound ``TINY_STEP_RESIDUAL``."""
        m, d = self.model, self.data
        jac = self._newton_jac
        site = leg.sole_site
        qa, qb = int(leg.qpos_adr[0]), int(leg.qpos_adr[-1]) + 1  # the leg's joints are contiguous
        da, db = int(leg.dof_adr[0]), int(leg.dof_adr[-1]) + 1
        best, best_err = q, math.inf
        for _ in range(steps + 1):
            d.qpos[qa:qb] = q
            mujoco.mj_kinematics(m, d)
            err = pose_error_floats(pos, rot, d.site_xpos[site].tolist(), d.site_xmat[site].tolist())
            size = max(abs(err[0]), abs(err[1]), abs(err[2]), abs(err[3]), abs(err[4]), abs(err[5]))
            if size < best_err:
                best, best_err = q, size
            if size < tol:
                break
            mujoco.mj_comPos(m, d)
            mujoco.mj_jacSite(m, d, self._jacp, self._jacr, site)
            jac[:3], jac[3:] = self._jacp[:, da:db], self._jacr[:, da:db]
            step = jac.T @ solve_spd(jac @ jac.T + (damping * damping) * _EYE6, np.array(err))
            q = (np.array(q) + step).tolist()
            if float(np.abs(step).max()) < TINY_STEP:
                return q, TINY_STEP_RESIDUAL
        return best, best_err

    def leg_jacobian(self, side: str, q: np.ndarray) -> np.ndarray:
        """The sole site's Jacobian (6, 6) of leg ``side`` at its angles ``q`` (order
        :meth:`leg_joint_names`): rows linear (m/rad) then angular velocity (rad/rad), torso frame."""
        leg = self.legs[check_side(side)]
        m, d = self.model, self.data
        d.qpos[leg.qpos_adr] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        mujoco.mj_jacSite(m, d, self._jacp, self._jacr, leg.sole_site)
        return np.vstack((self._jacp[:, leg.dof_adr], self._jacr[:, leg.dof_adr]))

    def leg_ik_near(self, side: str, pos: np.ndarray, R: np.ndarray, near: np.ndarray,
                    steps: int = 8) -> tuple[np.ndarray, bool]:
        """Leg angles (6,) for a sole goal close to the pose of the leg angles ``near`` (e.g. a
        solution of :meth:`leg_ik` for a slightly different goal): damped Newton steps on the
        sole-site Jacobian from ``near`` (:meth:`_polish`), cheaper than the closed form and on the
        same branch. ``reachable``: converged (1e-6) and inside the joint ranges (the result is
        clipped to them). Each leg on its own: not for NAO's shared HipYawPitch."""
        leg = self.legs[check_side(side)]
        p, rot = self._check_pose(pos, R)
        start = np.asarray(near, dtype=float)
        if start.shape != (6,) or not np.all(np.isfinite(start)):
            raise ValueError(f"near must be six finite leg angles, got {near}")
        q, residual = self._polish(leg, start, p, rot, steps=steps)
        inside = bool(np.all(q >= leg.lower - 1e-12) and np.all(q <= leg.upper + 1e-12))
        return np.clip(q, leg.lower, leg.upper), residual < 1e-6 and inside

    def leg_ik_given_first(self, side: str, pos: np.ndarray, R: np.ndarray, first: float) -> tuple[np.ndarray, bool]:
        """Leg IK of ``side`` with joint 0 (NAO HipYawPitch) fixed to ``first`` (rad).

        The five remaining joints reach the sole position and the sole normal exactly where the
        target allows; the foot's rotation about its sole normal is what it comes out as.
        (The ankle point is taken from the target rotation; for NAO it lies on the sole normal,
        so this is exact.) Branches and ``reachable`` as in :meth:`leg_ik`; no Newton polish
        (it would move joint 0), so on a model whose axes miss (Wolfgang) it is good to ~0.1 mm.
        """
        pos, R = self._check_pose(pos, R)
        if not math.isfinite(first):
            raise ValueError(f"first joint angle must be finite, got {first}")
        q, reachable = self.solve(check_side(side), pos.tolist(), R.tolist(), first=float(first))
        return np.array(q), reachable

    def legs_ik(self, left_pos: np.ndarray, left_R: np.ndarray, right_pos: np.ndarray, right_R: np.ndarray,
                hip_yaw_pitch: str = "mean", check: bool = True) -> tuple[dict[str, float], bool]:
        """Both legs: ``({joint name: angle}, reachable)``.

        Wolfgang: the legs are independent and ``hip_yaw_pitch`` is ignored. NAO: both HipYawPitch
        joints are one motor. ``"left"``/``"right"``: that leg is solved exactly and the other leg
        is solved for the same HipYawPitch (:meth:`leg_ik_given_first`: position and sole normal
        exact, its yaw follows); ``"mean"``: the mean of the two free solutions is used for both
        legs, which shares the yaw error between them.

        ``check=False`` skips the checks of the goals (float arrays of shape (3,), rotation matrices)
        for callers that build them themselves (the spline stand-up solves ~100 goal pairs per try).
        """
        if hip_yaw_pitch not in ("left", "right", "mean"):
            raise ValueError(f"hip_yaw_pitch must be 'left', 'right' or 'mean', got {hip_yaw_pitch!r}")
        goals = {"left": (left_pos, left_R), "right": (right_pos, right_R)}
        for side, (pos, rot) in goals.items():
            pos, rot = self._check_pose(pos, rot) if check else (pos, rot)
            goals[side] = (np.asarray(pos, dtype=float).tolist(), np.asarray(rot, dtype=float).tolist())
        legs = {side: self.solve(side, *goal) for side, goal in goals.items()}
        if self.shared_hip:
            first = (0.5 * (legs["left"][0][0] + legs["right"][0][0]) if hip_yaw_pitch == "mean"
                     else legs[hip_yaw_pitch][0][0])
            for side in SIDES:
                if side != hip_yaw_pitch:
                    legs[side] = self.solve(side, *goals[side], first=first)
        (left, ok_left), (right, ok_right) = legs["left"], legs["right"]
        return dict(zip(self.legs_joint_names, left + right)), ok_left and ok_right

    def walk_legs(self, left_pos: Sequence[float], left_rot: Sequence[Sequence[float]], right_pos: Sequence[float],
                  right_rot: Sequence[Sequence[float]], shared_first: float | None = None) -> tuple[list[float], bool]:
        """The walks' IK of both legs, every control cycle: the twelve angles (rad) in the order of
        :attr:`legs_joint_names` (into a joint vector with :attr:`legs_joint_index`) for sole goals
        given as floats (not checked), and whether both legs reached.

        Each leg is the closed form alone (:meth:`solve` without the polish: on Wolfgang's model,
        whose ankle axes miss each other by 0.36 µm, it misses the sole goal by < 0.5 µm). NAO's
        shared joint is ``shared_first`` (rad) where given, else the mean of the two legs' first
        candidates' joint 0 (:meth:`LegSolver.first_yaw`, without solving those free legs); both
        legs are solved for it (their positions and sole normals exact, their yaws follow)."""
        first = None
        if self.shared_hip:
            first = shared_first if shared_first is not None else 0.5 * (
                self.legs["left"].solver.first_yaw(left_pos, left_rot)
                + self.legs["right"].solver.first_yaw(right_pos, right_rot))
        left, ok_left = self._walk_leg("left", left_pos, left_rot, first)
        right, ok_right = self._walk_leg("right", right_pos, right_rot, first)
        return left + right, ok_left and ok_right

    def _walk_leg(self, side: str, pos: Sequence[float], rot: Sequence[Sequence[float]],
                  first: float | None) -> tuple[list[float], bool]:
        """:meth:`solve` without the polish, for one leg of :meth:`walk_legs` (``first``: NAO's
        shared joint, None on a leg without one): the first candidate where it reaches the goal
        inside the joint ranges, as a walking leg's does nearly always, else :meth:`solve` from the
        first candidate on."""
        leg = self.legs[side]
        q, ok = leg.solver.first(pos, rot) if first is None else leg.solver.first_given_first(pos, rot, first)
        if ok and leg.inside(q):
            return q, True
        return self.solve(side, pos, rot, first, polish=False)

    @cached_property
    def legs_joint_names(self) -> tuple[str, ...]:
        """The twelve leg joints in the order of :meth:`walk_legs`: the left leg hip to ankle, then the right."""
        return self.legs["left"].joint_names + self.legs["right"].joint_names

    @cached_property
    def legs_joint_index(self) -> np.ndarray | slice:
        """Indices of :attr:`legs_joint_names` in the robot's joint order (a slice where they are
        consecutive, as in both robots: cheaper to assign)."""
        index = self.joint_index(self.legs_joint_names)
        return slice(int(index[0]), int(index[-1]) + 1) if np.all(np.diff(index) == 1) else index


__all__ = ["GIMBAL_COS", "POLISH_MARGIN", "REACH_TOL", "LegGeometry", "LegIK", "LegSolver"]
