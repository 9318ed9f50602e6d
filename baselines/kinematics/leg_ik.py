"""Analytic inverse kinematics of the 6-DoF legs on the robot's own model (torso frame: x
forward, y left, z up; metres and radians).

Leg geometry is read from the model at construction (joint anchors and axes at q = 0), not typed in
twice. The analytic leg IK covers the 6-DoF legs of both robots with one algorithm:

* joint 0 (NAO HipYawPitch about its 45° axis, Wolfgang HipYaw) is attached to the torso;
* joints 1/2 (hip roll, hip pitch) have intersecting axes; the intersection ``H`` may sit off the
  joint-0 axis (Wolfgang: 23 mm forward, 41 mm down) as long as that offset lies in the plane of the
  joint-0 and hip-roll axes;
* joints 2, 3, 4 (hip pitch, knee, ankle pitch) are parallel; links may be offset along them
  (Wolfgang: ~1.5 mm) and the shank may be tilted relative to the thigh at q = 0 (Wolfgang: 15°);
* joints 4/5 (ankle pitch, ankle roll) intersect at the ankle point ``A``.

Solution order (closed form, no iteration): the ankle point from the sole target; the ankle roll
from the lateral offset along the pitch axes (``a cos q5 + b sin q5 = δ``); joint 0, hip roll and the
total pitch from the remaining rotation (an Euler-angle split about the model's axes); the hip
point ``H`` from joint 0; the knee from the law of cosines in the sagittal plane of the leg; hip
pitch from the direction ``H → A``; ankle pitch as the rest of the total pitch. Of the up to eight
branches the first inside the joint ranges is taken (ankle roll and hip roll nearer zero, knee
nearer the middle of its range first). The NAO model's axes meet exactly, so the closed form is
exact (~1e-15 m). The Wolfgang MJCF's offsets are rounded to 0.1 mm, so its ankle axes miss each
other by 28 µm; there the closed-form result is polished by a few damped Newton steps on the
sole-site Jacobian (``mj_jacSite``), which also fixes the ill-conditioned hip-yaw / pitch split at
hip roll ±90°.

NAO's two HipYawPitch joints are one motor: :meth:`LegIK.legs_ik` chooses one value (default
the mean of the two legs' free solutions, or one leg's) and solves each other leg for that given
value (position and sole normal exact, the foot's yaw about its sole normal follows), the B-Human
way of sharing the joint.

The closed form runs in plain Python floats (:mod:`upright.baselines.kinematics.vectors`): the leg's
constant vectors and products are computed once (:class:`LegSolver`), and the controllers solve
legs every control cycle (walks) or several goal pairs per sample (spline stand-up).
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
from upright.baselines.kinematics.specialize import specialize
from upright.baselines.kinematics.vectors import (Mat, Vec, add, angle_about, cross, dot, matvec, pose_error_floats, rotate,
                                                  solve_cos_sin, tmatvec, vec, wrap)
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


# ---------------------------------------------------------------------- rotation split
def split_rotation(rot_b: Vec, rot_c: Vec, a: Vec, b: Vec, c: Vec, roots: tuple[float, float],
                   branch: int) -> tuple[float, float, float]:
    """Angles ``(x, y, z)`` with ``rot = R(a, x) R(b, y) R(c, z)`` for unit axes ``a ⊥ b``, ``b ⊥ c``,
    from the rotation's images of ``b`` and ``c`` (``rot_b = rot b``, ``rot_c = rot c``; the rest
    of ``rot`` does not enter) and the roots of :func:`split_roots`.

    ``branch`` 0 has the middle angle nearer zero, 1 the other. At gimbal lock (``R(b, y) c``
    parallel to ``a``) ``x = 0`` and ``z`` takes the whole rotation.
    """
    y = roots[branch]
    m = rotate(b, y, c)
    mp = add(m, a, -dot(m, a))
    x = 0.0 if dot(mp, mp) < 1e-18 else angle_about(a, m, rot_c)
    rest_b = rotate(b, -y, rotate(a, -x, rot_b))  # = R(c, z) b
    return x, y, angle_about(c, b, rest_b)


PI, TWO_PI = math.pi, 2.0 * math.pi  # one global read each (math.pi is two) in the hot paths


def _first_root(rho: float, phi: float, c: float) -> tuple[float, bool]:
    """The first root of :func:`~upright.baselines.kinematics.vectors.solve_cos_sin` (tolerance
    ``REACH_TOL``) and whether the roots exist, the same operations, for ``a cos x + b sin x = c``
    given as ``rho = hypot(a, b)``, ``phi = atan2(b, a)`` (constants where ``a`` and ``b`` are).
    The clip to [-1, 1] is written out: the same floats as ``min(1.0, max(-1.0, ratio))``, NaN
    included, for a fraction of the builtins' cost."""
    ratio = c / rho if rho > 1e-12 else math.copysign(math.inf, c)
    ratio = ratio if ratio > -1.0 else -1.0
    d = math.acos(ratio if ratio < 1.0 else 1.0)
    x1 = (phi + d + PI) % TWO_PI - PI
    x2 = (phi - d + PI) % TWO_PI - PI
    return (x1 if abs(x1) <= abs(x2) else x2), abs(c) <= rho + REACH_TOL


def split_roots(rot_c: Vec, a: Vec, b: Vec, c: Vec) -> tuple[float, float]:
    """The two middle angles ``y`` of :func:`split_rotation` (``a · R(b, y) c = a · rot c``)."""
    return solve_cos_sin(dot(a, c), dot(a, cross(b, c)), dot(a, rot_c), REACH_TOL)[0]



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
    #: Common direction of the pitch axes (= the ankle-pitch axis) and each pitch joint's sign on it.
    pitch_axis: np.ndarray
    pitch_signs: np.ndarray
    #: A point on the joint-0 axis; the hip point H0 = yaw_point + hip_axial * axes[0] + hip_forward * axes[1].
    yaw_point: np.ndarray
    hip_axial: float
    hip_forward: float
    hip_point: np.ndarray
    knee_point: np.ndarray
    ankle_point: np.ndarray
    #: Thigh (H → knee) and shank (knee → A) vectors normal to the pitch axis, and the offset of H from A along it.
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

    def clip(self, q) -> np.ndarray:
        """The angles ``q`` clipped to the joint ranges, as an array (6,)."""
        return np.array([min(max(x, lo), hi) for x, lo, hi in zip(q, self._lower, self._upper)])

    def inside(self, q: Sequence[float]) -> bool:
        """Whether the six angles ``q`` lie inside the joint ranges."""
        l0, h0, l1, h1, l2, h2, l3, h3, l4, h4, l5, h5 = self._bounds
        q0, q1, q2, q3, q4, q5 = q
        return (l0 <= q0 <= h0 and l1 <= q1 <= h1 and l2 <= q2 <= h2 and l3 <= q3 <= h3 and l4 <= q4 <= h4
                and l5 <= q5 <= h5)

    @cached_property
    def _bounds(self) -> tuple[float, ...]:
        """The ranges flat, (lower, upper) per joint, for :meth:`inside` (one unpack)."""
        return tuple(x for pair in zip(self._lower, self._upper) for x in pair)

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
    """The closed-form leg IK of one :class:`LegGeometry`, with its constants as floats.

    :meth:`candidates` and :meth:`candidates_given_first` yield the up to eight solutions lazily
    (a caller usually stops at the first inside the joint ranges).
    """

    def __init__(self, leg: LegGeometry) -> None:
        e = [vec(a) for a in leg.axes]
        self.e0, self.e1, self.e5 = e[0], e[1], e[5]
        n = self.n = vec(leg.pitch_axis)
        self.s2, self.s3, self.s4 = (float(s) for s in leg.pitch_signs)
        #: the point H0 − hip_forward e1 on the joint-0 axis
        self.yaw_hip = vec(leg.yaw_point + leg.hip_axial * leg.axes[0])
        self.hip_forward, self.lateral = float(leg.hip_forward), float(leg.lateral)
        self.sole_rot0: Mat = tuple(vec(r) for r in leg.sole_rot0)  # type: ignore[assignment]
        self.ankle_in_sole = vec(leg.ankle_in_sole)
        self.thigh, self.shank = vec(leg.thigh), vec(leg.shank)
        self.l1, self.l2 = leg.thigh_length, leg.shank_length
        self.u1 = vec(leg.thigh / leg.thigh_length)
        self.u2 = cross(n, self.u1)
        self.offset = self._angle(self.thigh) - self._angle(self.shank)
        self.knee_mid = 0.5 * float(leg.lower[3] + leg.upper[3])
        self.e5_x_n, self.e1_x_n = cross(self.e5, n), cross(self.e1, n)
        self.normal0 = vec(leg.sole_rot0[:, 2])
        self.n_normal0, self.n_e5_x_normal0 = dot(n, self.normal0), dot(n, cross(self.e5, self.normal0))
        # Constant parts of the rotations of :meth:`first` (each ``rotate(axis, angle, v)`` with a
        # constant axis and vector: ``v cos + (axis × v) sin + axis (axis · v)(1 − cos)``).
        e0, e1, e5 = self.e0, self.e1, self.e5
        self._c51, self._d51 = cross(e5, e1), dot(e5, e1)
        self._c5n, self._d5n = cross(e5, n), dot(e5, n)
        self._c1n, self._d1n = cross(e1, n), dot(e1, n)
        self._c01, self._d01 = cross(e0, e1), dot(e0, e1)
        self._cns, self._dns = cross(n, self.shank), dot(n, self.shank)
        self._c5o, self._d5o = cross(e5, self.normal0), dot(e5, self.normal0)
        a, b = dot(e0, n), dot(e0, cross(e1, n))  # split_roots' first two coefficients, polar (_first_root)
        self._split = (math.hypot(a, b), math.atan2(b, a))
        self._normal_root = (math.hypot(self.n_normal0, self.n_e5_x_normal0),
                             math.atan2(self.n_e5_x_normal0, self.n_normal0))
        self._e1_in_n = add(e1, n, -dot(e1, n))  # angle_about(n, e1, ·)'s first vector
        l1, l2 = self.l1, self.l2
        self._reach = (abs(l1 - l2) - REACH_TOL, l1 + l2 + REACH_TOL)
        self._ll = (l1 * l1, l2 * l2, 2.0 * l1 * l2)
        # Each written-out function's constants in one flat tuple: one unpack instead of an
        # attribute read and an unpack per vector (~7 % of a leg's solve).
        self._hip_k = (*e0, *e1, *self._c01, self._d01, self.hip_forward, *self.yaw_hip)
        self._sagittal_k = (*n, *e1, *self._reach, *self._ll, self.s2, self.s3, self.knee_mid, self.offset, *self.u1,
                            *self.u2, self._dns, *self.shank, *self._cns, *self.thigh)
        self._first_k = (*n, *e0, *e1, *e5, *self.sole_rot0[0], *self.sole_rot0[1], *self.sole_rot0[2],
                         *self.ankle_in_sole, *self.yaw_hip, *self.e5_x_n, self.lateral, self._d51, *self._c51,
                         self._d5n, *self._c5n, *self._split, self._d1n, *self._c1n, *self._e1_in_n, self.s2, self.s3,
                         self.s4)
        self._given_k = (*n, *e0, *e1, *e5, *self.ankle_in_sole, *self.e1_x_n, self.lateral, self.s2, self.s3, self.s4,
                         *self._normal_root, self._d5o, *self.normal0, *self._c5o)
        # The hot paths compiled for this leg's constants: the products with its zero and unit
        # components left out (the same floats; :mod:`~upright.baselines.kinematics.specialize`).
        for name in ("_hip_to_ankle_floats", "_sagittal_first", "_first", "first_given_first"):
            setattr(self, name, specialize(getattr(LegSolver, name), self))

    def _angle(self, x: Vec) -> float:
        """Angle (rad) of ``x`` in the sagittal plane, from the thigh direction."""
        return math.atan2(dot(x, self.u2), dot(x, self.u1))

    def _ankle(self, pos: Vec, rot: Mat) -> Vec:
        return add(pos, matvec(rot, self.ankle_in_sole))

    def _hip_to_ankle(self, ankle: Vec, q0: float) -> Vec:
        """``R(e0, q0)ᵀ (ankle − H)``: the hip-to-ankle vector in the frame after joint 0, with the
        hip point H where joint 0 at ``q0`` puts it."""
        hip = add(self.yaw_hip, rotate(self.e0, q0, self.e1), self.hip_forward)
        return rotate(self.e0, -q0, add(ankle, hip, -1.0))

    def _hip_to_ankle_floats(self, x: float, y: float, z: float, c: float, s: float, cm: float, sm: float) -> Vec:
        """:meth:`_hip_to_ankle` written out (the same operations) for the ankle ``(x, y, z)``, with
        ``c, s = cos(q0), sin(q0)`` and ``cm, sm = cos(−q0), sin(−q0)`` (the callers have them)."""
        a0, a1, a2, b0, b1, b2, w0, w1, w2, d01, f, h0, h1, h2 = self._hip_k
        k = d01 * (1.0 - c)
        # hip = yaw_hip + hip_forward · rotate(e0, q0, e1); d = ankle − hip (x − y is x + −1.0 · y, exactly)
        d0 = x - (h0 + f * (b0 * c + w0 * s + a0 * k))
        d1 = y - (h1 + f * (b1 * c + w1 * s + a1 * k))
        d2 = z - (h2 + f * (b2 * c + w2 * s + a2 * k))
        c, s = cm, sm
        k = (a0 * d0 + a1 * d1 + a2 * d2) * (1.0 - c)
        return (d0 * c + (a1 * d2 - a2 * d1) * s + a0 * k, d1 * c + (a2 * d0 - a0 * d2) * s + a1 * k,
                d2 * c + (a0 * d1 - a1 * d0) * s + a2 * k)

    def _sagittal(self, v0: Vec, q0: float, q1: float) -> Iterator[tuple[list[float], bool]]:
        """Given joint 0 and hip roll, hip pitch and knee that bring the ankle point to where
        ``v0`` (:meth:`_hip_to_ankle` at ``q0``) points.

        Both knee branches: first the knee angle nearer the middle of its range, then the other.
        Each: the six angles with entries 0-3 filled and whether the distance was reachable.
        """
        n = self.n
        v = rotate(self.e1, -q1, v0)
        v = add(v, n, -dot(v, n))
        l1, l2 = self.l1, self.l2
        dist = math.sqrt(dot(v, v))
        reachable = abs(l1 - l2) - REACH_TOL <= dist <= l1 + l2 + REACH_TOL
        bend = math.acos(min(1.0, max(-1.0, (dist * dist - l1 * l1 - l2 * l2) / (2.0 * l1 * l2))))
        s3, mid = self.s3, self.knee_mid
        k1, k2 = s3 * wrap(self.offset + bend), s3 * wrap(self.offset - bend)
        if abs(k2 - mid) < abs(k1 - mid):
            k1, k2 = k2, k1
        direction = self._angle(v)
        for knee in (k1, k2):
            reach = add(self.thigh, rotate(n, s3 * knee, self.shank))
            phi2 = direction - self._angle(reach) if dist > 1e-12 else 0.0
            yield [q0, q1, self.s2 * wrap(phi2), knee, 0.0, 0.0], reachable

    def _sagittal_first(self, v0: Vec, q0: float, q1: float, c: float, s: float) -> tuple[list[float], bool]:
        """The first of :meth:`_sagittal` (the knee nearer the middle of its range), written out
        (the same operations, so the same floats, as :meth:`_sagittal`); ``c, s = cos(−q1), sin(−q1)``."""
        (n0, n1, n2, b0, b1, b2, lo, hi, l11, l22, l12, s2, s3, mid, offset, u10, u11, u12, u20, u21, u22, dns,
         h0, h1, h2, w0, w1, w2, r0, r1, r2) = self._sagittal_k
        x0, x1, x2 = v0
        # v = rotate(e1, -q1, v0), then its part normal to n
        k = (b0 * x0 + b1 * x1 + b2 * x2) * (1.0 - c)
        v0_, v1_, v2_ = (x0 * c + (b1 * x2 - b2 * x1) * s + b0 * k, x1 * c + (b2 * x0 - b0 * x2) * s + b1 * k,
                         x2 * c + (b0 * x1 - b1 * x0) * s + b2 * k)
        dn = -(v0_ * n0 + v1_ * n1 + v2_ * n2)
        v0_, v1_, v2_ = v0_ + dn * n0, v1_ + dn * n1, v2_ + dn * n2
        dist = math.sqrt(v0_ * v0_ + v1_ * v1_ + v2_ * v2_)
        reachable = lo <= dist <= hi
        cos_bend = (dist * dist - l11 - l22) / l12
        cos_bend = cos_bend if cos_bend > -1.0 else -1.0  # min(1.0, max(-1.0, ·)) written out (_first_root)
        bend = math.acos(cos_bend if cos_bend < 1.0 else 1.0)
        knee = s3 * ((offset + bend + PI) % TWO_PI - PI)
        k2 = s3 * ((offset - bend + PI) % TWO_PI - PI)
        if abs(k2 - mid) < abs(knee - mid):
            knee = k2
        if dist > 1e-12:
            # reach = thigh + rotate(n, s3 knee, shank)
            c, s = math.cos(s3 * knee), math.sin(s3 * knee)
            k = dns * (1.0 - c)
            g0 = r0 + (h0 * c + w0 * s + n0 * k)  # 1.0 · x is x, exactly
            g1 = r1 + (h1 * c + w1 * s + n1 * k)
            g2 = r2 + (h2 * c + w2 * s + n2 * k)
            phi2 = (math.atan2(v0_ * u20 + v1_ * u21 + v2_ * u22, v0_ * u10 + v1_ * u11 + v2_ * u12)
                    - math.atan2(g0 * u20 + g1 * u21 + g2 * u22, g0 * u10 + g1 * u11 + g2 * u12))
        else:
            phi2 = 0.0
        return [q0, q1, s2 * ((phi2 + PI) % TWO_PI - PI), knee, 0.0, 0.0], reachable

    def first(self, pos: Vec, rot: Mat) -> tuple[list[float], bool]:
        """The first of :meth:`candidates` (the one a walk almost always takes), written out: the
        same operations as the generator (so the same floats) with the products of constant
        vectors computed once; ~2x faster."""
        return self._first(pos, rot, False)  # type: ignore[return-value]

    def first_yaw(self, pos: Vec, rot: Mat) -> float:
        """Joint 0 (rad) of :meth:`first`, without the rest of that candidate."""
        return self._first(pos, rot, True)  # type: ignore[return-value]

    def _first(self, pos: Vec, rot: Mat, yaw_only: bool) -> tuple[list[float], bool] | float:
        (n0, n1, n2, a0, a1, a2, b0, b1, b2, f0, f1, f2, s00, s01, s02, s10, s11, s12, s20, s21, s22, k0, k1, k2,
         h0, h1, h2, m0, m1, m2, lateral, d51, c510, c511, c512, d5n, c5n0, c5n1, c5n2, split_rho, split_phi, d1n,
         c1n0, c1n1, c1n2, i0, i1, i2, s2, s3, s4) = self._first_k
        (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = rot
        # g = rot @ sole_rot0ᵀ: the six joints' rotation
        g00, g01, g02 = (s00 * r00 + s01 * r01 + s02 * r02, s10 * r00 + s11 * r01 + s12 * r02,
                         s20 * r00 + s21 * r01 + s22 * r02)
        g10, g11, g12 = (s00 * r10 + s01 * r11 + s02 * r12, s10 * r10 + s11 * r11 + s12 * r12,
                         s20 * r10 + s21 * r11 + s22 * r12)
        g20, g21, g22 = (s00 * r20 + s01 * r21 + s02 * r22, s10 * r20 + s11 * r21 + s12 * r22,
                         s20 * r20 + s21 * r21 + s22 * r22)
        # the ankle (x + 1.0 · y is x + y and x + −1.0 · y is x − y, exactly)
        an0 = pos[0] + (r00 * k0 + r01 * k1 + r02 * k2)
        an1 = pos[1] + (r10 * k0 + r11 * k1 + r12 * k2)
        an2 = pos[2] + (r20 * k0 + r21 * k1 + r22 * k2)
        d0, d1, d2 = h0 - an0, h1 - an1, h2 - an2
        w0 = g00 * d0 + g10 * d1 + g20 * d2
        w1 = g01 * d0 + g11 * d1 + g21 * d2
        w2 = g02 * d0 + g12 * d1 + g22 * d2
        a, b = w0 * n0 + w1 * n1 + w2 * n2, -(w0 * m0 + w1 * m1 + w2 * m2)
        q5, ok_roll = _first_root(math.hypot(a, b), math.atan2(b, a), lateral)
        # rest_c = g rotate(e5, -q5, n); rest_b = g rotate(e5, -q5, e1) below (not for the yaw alone)
        c5, s5 = math.cos(-q5), math.sin(-q5)
        om = 1.0 - c5
        k = d5n * om
        u0, u1, u2 = n0 * c5 + c5n0 * s5 + f0 * k, n1 * c5 + c5n1 * s5 + f1 * k, n2 * c5 + c5n2 * s5 + f2 * k
        rc0, rc1, rc2 = (g00 * u0 + g01 * u1 + g02 * u2, g10 * u0 + g11 * u1 + g12 * u2,
                         g20 * u0 + g21 * u1 + g22 * u2)
        # split_rotation(rest_b, rest_c, e0, e1, n, split_roots(...), branch 0)
        y, _ = _first_root(split_rho, split_phi, a0 * rc0 + a1 * rc1 + a2 * rc2)
        c, s = math.cos(y), math.sin(y)
        k = d1n * (1.0 - c)
        m0, m1, m2 = n0 * c + c1n0 * s + b0 * k, n1 * c + c1n1 * s + b1 * k, n2 * c + c1n2 * s + b2 * k
        dm = -(m0 * a0 + m1 * a1 + m2 * a2)
        p0, p1, p2 = m0 + dm * a0, m1 + dm * a1, m2 + dm * a2
        if p0 * p0 + p1 * p1 + p2 * p2 < 1e-18:
            q0 = 0.0
        else:  # angle_about(e0, m, rest_c)
            dv = -(rc0 * a0 + rc1 * a1 + rc2 * a2)
            v0, v1, v2 = rc0 + dv * a0, rc1 + dv * a1, rc2 + dv * a2
            q0 = math.atan2(a0 * (p1 * v2 - p2 * v1) + a1 * (p2 * v0 - p0 * v2) + a2 * (p0 * v1 - p1 * v0),
                            p0 * v0 + p1 * v1 + p2 * v2)
        if yaw_only:
            return q0
        k = d51 * om
        u0, u1, u2 = b0 * c5 + c510 * s5 + f0 * k, b1 * c5 + c511 * s5 + f1 * k, b2 * c5 + c512 * s5 + f2 * k
        rb0, rb1, rb2 = (g00 * u0 + g01 * u1 + g02 * u2, g10 * u0 + g11 * u1 + g12 * u2,
                         g20 * u0 + g21 * u1 + g22 * u2)
        # rest = rotate(e1, -y, rotate(e0, -q0, rest_b)); theta = angle_about(n, e1, rest)
        c0, s0 = math.cos(-q0), math.sin(-q0)
        k = (a0 * rb0 + a1 * rb1 + a2 * rb2) * (1.0 - c0)
        x0 = rb0 * c0 + (a1 * rb2 - a2 * rb1) * s0 + a0 * k
        x1 = rb1 * c0 + (a2 * rb0 - a0 * rb2) * s0 + a1 * k
        x2 = rb2 * c0 + (a0 * rb1 - a1 * rb0) * s0 + a2 * k
        c, s = math.cos(-y), math.sin(-y)
        k = (b0 * x0 + b1 * x1 + b2 * x2) * (1.0 - c)
        v0 = x0 * c + (b1 * x2 - b2 * x1) * s + b0 * k
        v1 = x1 * c + (b2 * x0 - b0 * x2) * s + b1 * k
        v2 = x2 * c + (b0 * x1 - b1 * x0) * s + b2 * k
        dv = -(v0 * n0 + v1 * n1 + v2 * n2)
        v0, v1, v2 = v0 + dv * n0, v1 + dv * n1, v2 + dv * n2
        theta = math.atan2(n0 * (i1 * v2 - i2 * v1) + n1 * (i2 * v0 - i0 * v2) + n2 * (i0 * v1 - i1 * v0),
                           i0 * v0 + i1 * v1 + i2 * v2)  # i: e1 normal to n
        v = self._hip_to_ankle_floats(an0, an1, an2, math.cos(q0), math.sin(q0), c0, s0)
        q, ok_leg = self._sagittal_first(v, q0, y, c, s)
        q[4] = s4 * ((theta - s2 * q[2] - s3 * q[3] + PI) % TWO_PI - PI)
        q[5] = q5
        return q, ok_roll and ok_leg

    def first_given_first(self, pos: Vec, rot: Mat, first: float) -> tuple[list[float], bool]:
        """The first of :meth:`candidates_given_first`, written out (same floats)."""
        (n0, n1, n2, a0, a1, a2, b0, b1, b2, f0, f1, f2, k0, k1, k2, m0, m1, m2, lateral, s2, s3, s4, normal_rho,
         normal_phi, d5o, l0, l1, l2, c5o0, c5o1, c5o2) = self._given_k
        (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = rot
        c, s = math.cos(-first), math.sin(-first)
        # the ankle (x + 1.0 · y is x + y, exactly)
        an0, an1, an2 = (pos[0] + (r00 * k0 + r01 * k1 + r02 * k2), pos[1] + (r10 * k0 + r11 * k1 + r12 * k2),
                         pos[2] + (r20 * k0 + r21 * k1 + r22 * k2))
        v0 = self._hip_to_ankle_floats(an0, an1, an2, math.cos(first), math.sin(first), c, s)
        a, b = v0[0] * n0 + v0[1] * n1 + v0[2] * n2, v0[0] * m0 + v0[1] * m1 + v0[2] * m2
        q1, ok_roll = _first_root(math.hypot(a, b), math.atan2(b, a), -lateral)
        # the goal's sole normal turned back by joint 0
        x0, x1, x2 = r02, r12, r22
        k = (a0 * x0 + a1 * x1 + a2 * x2) * (1.0 - c)
        o0 = x0 * c + (a1 * x2 - a2 * x1) * s + a0 * k
        o1 = x1 * c + (a2 * x0 - a0 * x2) * s + a1 * k
        o2 = x2 * c + (a0 * x1 - a1 * x0) * s + a2 * k
        c, s = math.cos(-q1), math.sin(-q1)
        q, ok_leg = self._sagittal_first(v0, first, q1, c, s)
        # target = rotate(n, -(pitch sum), rotate(e1, -q1, normal))
        k = (b0 * o0 + b1 * o1 + b2 * o2) * (1.0 - c)
        x0 = o0 * c + (b1 * o2 - b2 * o1) * s + b0 * k
        x1 = o1 * c + (b2 * o0 - b0 * o2) * s + b1 * k
        x2 = o2 * c + (b0 * o1 - b1 * o0) * s + b2 * k
        pitch = -(s2 * q[2] + s3 * q[3])
        c, s = math.cos(pitch), math.sin(pitch)
        k = (n0 * x0 + n1 * x1 + n2 * x2) * (1.0 - c)
        t0 = x0 * c + (n1 * x2 - n2 * x1) * s + n0 * k
        t1 = x1 * c + (n2 * x0 - n0 * x2) * s + n1 * k
        t2 = x2 * c + (n0 * x1 - n1 * x0) * s + n2 * k
        q5, ok_normal = _first_root(normal_rho, normal_phi, n0 * t0 + n1 * t1 + n2 * t2)
        # q4 = s4 · angle_about(n, rotate(e5, q5, normal0), target); l: normal0
        c, s = math.cos(q5), math.sin(q5)
        k = d5o * (1.0 - c)
        u0, u1, u2 = l0 * c + c5o0 * s + f0 * k, l1 * c + c5o1 * s + f1 * k, l2 * c + c5o2 * s + f2 * k
        d = -(u0 * n0 + u1 * n1 + u2 * n2)
        u0, u1, u2 = u0 + d * n0, u1 + d * n1, u2 + d * n2
        d = -(t0 * n0 + t1 * n1 + t2 * n2)
        t0, t1, t2 = t0 + d * n0, t1 + d * n1, t2 + d * n2
        q[4] = s4 * math.atan2(n0 * (u1 * t2 - u2 * t1) + n1 * (u2 * t0 - u0 * t2) + n2 * (u0 * t1 - u1 * t0),
                                    u0 * t0 + u1 * t1 + u2 * t2)
        q[5] = q5
        return q, ok_roll and ok_leg and ok_normal

    def candidates(self, pos: Vec, rot: Mat) -> Iterator[tuple[list[float], bool]]:
        """The solutions for the sole goal ``pos``, ``rot``, in the order: ankle roll nearer zero,
        hip roll nearer zero (Euler split), knee nearer the middle of its range; each with whether
        it reaches the goal (joint ranges not checked)."""
        n, e0, e1, e5 = self.n, self.e0, self.e1, self.e5
        g = tuple(matvec(self.sole_rot0, r) for r in rot)  # rot @ sole_rot0ᵀ: the six joints' rotation
        ankle = self._ankle(pos, rot)
        # ankle roll: the offset of H from A along the pitch axes is fixed (the hip's forward
        # offset is normal to the pitch axes and drops out)
        w = tmatvec(g, add(self.yaw_hip, ankle, -1.0))
        rolls, ok_roll = solve_cos_sin(dot(w, n), -dot(w, self.e5_x_n), self.lateral, REACH_TOL)
        for q5 in dict.fromkeys(rolls):
            # joint 0, hip roll and the sum of the pitch angles from the rest g R(e5, -q5)
            rest_b, rest_c = matvec(g, rotate(e5, -q5, e1)), matvec(g, rotate(e5, -q5, n))
            roots = split_roots(rest_c, e0, e1, n)
            for branch in (0, 1):
                q0, q1, theta = split_rotation(rest_b, rest_c, e0, e1, n, roots, branch)
                for q, ok_leg in self._sagittal(self._hip_to_ankle(ankle, q0), q0, q1):
                    q[4] = self.s4 * wrap(theta - self.s2 * q[2] - self.s3 * q[3])
                    q[5] = q5
                    yield q, ok_roll and ok_leg

    def candidates_given_first(self, pos: Vec, rot: Mat, first: float) -> Iterator[tuple[list[float], bool]]:
        """The solutions with joint 0 fixed to ``first`` (rad): the five remaining joints reach the
        sole position and the sole normal exactly where the goal allows; the foot's rotation about
        its sole normal is what it comes out as. Order: hip roll, knee, ankle roll."""
        n, e0, e1, e5 = self.n, self.e0, self.e1, self.e5
        v0 = self._hip_to_ankle(self._ankle(pos, rot), first)
        hip_rolls, ok_roll = solve_cos_sin(dot(v0, n), dot(v0, self.e1_x_n), -self.lateral, REACH_TOL)
        normal = rotate(e0, -first, (rot[0][2], rot[1][2], rot[2][2]))  # the goal's sole normal
        for q1 in dict.fromkeys(hip_rolls):
            for q, ok_leg in self._sagittal(v0, first, q1):
                # the sole normal in the shank frame: R(n, pitch sum)ᵀ R(e1, q1)ᵀ R(e0, q0)ᵀ normal
                target = rotate(n, -(self.s2 * q[2] + self.s3 * q[3]), rotate(e1, -q1, normal))
                rolls, ok_normal = solve_cos_sin(self.n_normal0, self.n_e5_x_normal0, dot(n, target), REACH_TOL)
                for q5 in dict.fromkeys(rolls):
                    out = q.copy()
                    out[4] = self.s4 * angle_about(n, rotate(e5, q5, self.normal0), target)
                    out[5] = q5
                    yield out, ok_roll and ok_leg and ok_normal


def pick(leg: LegGeometry, candidates, polish=None) -> tuple[np.ndarray, bool]:
    """The first reachable candidate inside the joint ranges; else the reachable one that leaves
    its ranges least (accepted as reachable up to ``LIMIT_TOL``); else the least bad one. Always
    clipped to the ranges.

    ``polish(q, ok, excess)``, where given, may replace a candidate first and returns
    ``(q, ok, excess)`` (the Newton polish of legs whose model geometry is not exact).
    """
    best: tuple[tuple[bool, float], list[float]] | None = None
    lower, upper = leg._lower, leg._upper
    for q, ok in candidates:
        if ok and polish is None and all(lo <= x <= hi for x, lo, hi in zip(q, lower, upper)):
            return np.array(q), True  # the common case: the first candidate, inside the ranges
        excess = leg.limit_excess(q)
        if polish is not None:
            q, ok, excess = polish(q, ok, excess)
        if ok and excess <= 1e-12:
            return leg.clip(q), True
        score = (not ok, excess)
        if best is None or score < best[0]:
            best = (score, q)
    assert best is not None
    (not_ok, excess), q = best
    return leg.clip(q), not not_ok and excess <= LIMIT_TOL


# ---------------------------------------------------------------------- on the robot's model
class LegIK(ForwardKinematics):
    """Leg IK of one robot (:class:`ForwardKinematics` with its two legs' geometry, read from the
    model at construction and checked against the closed form's assumptions)."""

    def __init__(self, robot: RobotSpec | str) -> None:
        super().__init__(robot)
        chains = chain_data(self.robot.name)
        self.legs = {side: self._leg_geometry(side, chains["legs"][side]) for side in SIDES}
        for leg in self.legs.values():
            leg.solver  # built (and its hot paths compiled) here, not in a controller's first cycle
        #: Per leg (left, right): its geometry, its compiled first candidate and range check, for
        #: the walks' call of :meth:`legs_ik_values` (no attribute reads on the way).
        self._first_paths = tuple((leg, leg.solver._first, leg.inside) for leg in self.legs.values())
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
        n = axes[4]
        signs = np.array([axes[k] @ n for k in (2, 3, 4)])
        problems = []
        if np.any(np.abs(np.abs(signs) - 1.0) > GEOMETRY_TOL):
            problems.append("hip pitch, knee and ankle pitch axes are not parallel")
        for a, b, what in ((0, 1, "joint 0 / hip roll"), (1, 4, "hip roll / pitch"), (5, 4, "ankle roll / pitch")):
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
            joint_names=tuple(names), axes=axes, pitch_axis=n, pitch_signs=np.sign(signs),
            yaw_point=yaw_point, hip_axial=hip_axial, hip_forward=hip_forward,
            hip_point=hip, knee_point=knee, ankle_point=ankle,
            thigh=normal(knee - hip), shank=normal(ankle - knee), lateral=float((hip - ankle) @ n),
            sole_rot0=sole_rot, ankle_in_sole=sole_rot.T @ (ankle - sole_pos),
            lower=limits[:, 0].copy(), upper=limits[:, 1].copy(),
            exact=max(gap_hip, gap_ankle, plane_miss) < 1e-9, sole_site=sole,
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

    def leg_ik(self, side: str, pos: np.ndarray, R: np.ndarray) -> tuple[np.ndarray, bool]:
        """Leg angles (6,) (order :meth:`leg_joint_names`) that put the sole of ``side`` at ``pos``, ``R``.

        Closed form (see the module docstring; :class:`~upright.baselines.kinematics.leg_ik.LegSolver`). Of
        the up to eight solutions the first inside the joint ranges is returned, in the order:
        ankle roll nearer zero, hip roll nearer zero, knee nearer the middle of its range.
        ``reachable`` is False when the target is out of reach (then the leg is stretched / folded
        towards it, orientation kept) or when no solution lies inside the joint ranges (then the
        least violating one is clipped); the angles are always finite and inside the ranges.
        """
        return self._leg_ik(self.legs[check_side(side)], *self._check_pose(pos, R))

    def _leg_ik(self, leg: LegGeometry, pos: np.ndarray, rot: np.ndarray) -> tuple[np.ndarray, bool]:
        """:meth:`leg_ik` for a checked goal."""
        q, ok = self._solve_leg(leg, pos.tolist(), rot.tolist())
        return np.array(q), ok

    def _solve_leg(self, leg: LegGeometry, pos: list, rot: list, polish: bool = True) -> tuple[list[float], bool]:
        """:meth:`leg_ik` for a goal as nested lists of floats; the angles as a list. The first
        candidate is tried directly (:meth:`LegSolver.first`, the common case; on a leg whose
        geometry is not exact with its polish), the others only when it is not taken (:func:`pick`
        on all of them, with the same result as without the shortcut). ``polish=False`` treats
        the leg as exact (the closed form alone, see :meth:`legs_ik_values`)."""
        q, ok = leg.solver._first(pos, rot, False)  # LegSolver.first
        if leg.exact or not polish:
            if ok and leg.inside(q):
                return q, True
            best, reachable = pick(leg, leg.solver.candidates(pos, rot))
            return best.tolist(), reachable
        lower, upper = leg._lower, leg._upper
        excess = leg.limit_excess(q)
        if (ok and excess <= POLISH_MARGIN) or abs(math.cos(q[1])) < GIMBAL_COS:  # as the polisher
            q, residual = self._newton(leg, q, pos, rot)
            ok, excess = ok or residual < 1e-6, leg.limit_excess(q)
        if ok and excess <= 1e-12:
            return [min(max(x, lo), hi) for x, lo, hi in zip(q, lower, upper)], True
        best, reachable = pick(leg, leg.solver.candidates(pos, rot), self._polisher(leg, np.array(pos), np.array(rot)))
        return best.tolist(), reachable

    def _polisher(self, leg: LegGeometry, pos: np.ndarray, rot: np.ndarray):
        """The candidate polish for :func:`~upright.baselines.kinematics.leg_ik.pick` on a leg whose model
        geometry is not exact (:meth:`_polish`): the reachable candidates within ``POLISH_MARGIN``
        of the joint ranges, and the unreachable ones near hip roll ±90°, where the closed form's
        joint-0 / pitch split is degenerate and the polish finds the solution."""
        pos_l, rot_l = pos.tolist(), rot.tolist()

        def polish(q: list[float], ok: bool, excess: float) -> tuple[list[float], bool, float]:
            if (ok and excess <= POLISH_MARGIN) or abs(math.cos(q[1])) < GIMBAL_COS:
                polished, residual = self._newton(leg, q, pos_l, rot_l)
                return polished, ok or residual < 1e-6, leg.limit_excess(polished)
            return q, ok, excess

        return polish

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
        leg = self.legs[check_side(side)]
        p, rot = self._check_pose(pos, R)
        if not math.isfinite(first):
            raise ValueError(f"first joint angle must be finite, got {first}")
        return self._leg_ik_given_first(leg, p, rot, float(first))

    @staticmethod
    def _leg_ik_given_first(leg: LegGeometry, pos: np.ndarray, rot: np.ndarray, first: float) -> tuple[np.ndarray, bool]:
        """:meth:`leg_ik_given_first` for a checked goal (no polish)."""
        q, ok = LegIK._solve_leg_given_first(leg, pos.tolist(), rot.tolist(), first)
        return np.array(q), ok

    @staticmethod
    def _solve_leg_given_first(leg: LegGeometry, pos: list, rot: list, first: float) -> tuple[list[float], bool]:
        """:meth:`leg_ik_given_first` for a goal as nested lists; the first candidate directly (as
        :meth:`_solve_leg`)."""
        q, ok = leg.solver.first_given_first(pos, rot, first)
        if ok and leg.inside(q):
            return q, True
        best, reachable = pick(leg, leg.solver.candidates_given_first(pos, rot, first))
        return best.tolist(), reachable

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
        if check:
            left_pos, left_R = self._check_pose(left_pos, left_R)
            right_pos, right_R = self._check_pose(right_pos, right_R)
        values, reachable = self.legs_ik_values(np.asarray(left_pos, dtype=float).tolist(),
                                                np.asarray(left_R, dtype=float).tolist(),
                                                np.asarray(right_pos, dtype=float).tolist(),
                                                np.asarray(right_R, dtype=float).tolist(), hip_yaw_pitch)
        return dict(zip(self.legs_joint_names, values)), reachable

    @cached_property
    def legs_joint_names(self) -> tuple[str, ...]:
        """The twelve leg joints in the order of :meth:`legs_ik_values`: the left leg hip to ankle, then the right."""
        return self.legs["left"].joint_names + self.legs["right"].joint_names

    @cached_property
    def legs_joint_index(self) -> np.ndarray | slice:
        """Indices of :attr:`legs_joint_names` in the robot's joint order (a slice where they are
        consecutive, as in both robots: cheaper to assign)."""
        index = self.joint_index(self.legs_joint_names)
        return slice(int(index[0]), int(index[-1]) + 1) if np.all(np.diff(index) == 1) else index

    def legs_ik_values(self, left_pos, left_R, right_pos, right_R, hip_yaw_pitch: str = "mean",
                       polish: bool = True, quick_mean: bool = False,
                       shared_first: float | None = None) -> tuple[list[float], bool]:
        """:meth:`legs_ik` for unchecked goals given as (nested) lists or tuples of floats, the hot
        path of the walks: the twelve angles as a list in the order of :attr:`legs_joint_names`
        (put them into a joint vector with :attr:`legs_joint_index`) and whether both legs reached.

        ``polish=False`` skips the Newton polish of legs whose model geometry is not exact
        (Wolfgang: the closed form alone misses the sole goal by < 0.5 µm, because the model's
        ankle axes miss each other by 0.36 µm; the polish costs more than the closed form).

        ``quick_mean=True`` (NAO's ``"mean"``): the shared joint is the mean of the two legs'
        *first* candidates' joint 0 (:meth:`LegSolver.first_yaw`), without solving the rest of
        those free legs or checking them against the joint ranges; the legs are then solved for it
        as always. The same as without it unless a free leg's first candidate leaves its ranges or
        reach (then ``legs_ik`` takes another candidate's joint 0).

        ``shared_first`` (with ``quick_mean``, NAO): the shared joint's angle (rad) given instead of
        that mean, the legs solved for it (their positions and sole normals exact, their yaws follow)."""
        if quick_mean and self.shared_hip and hip_yaw_pitch == "mean":
            legs = self.legs
            if shared_first is not None:
                first = shared_first
            else:
                first = 0.5 * (legs["left"].solver.first_yaw(left_pos, left_R)
                               + legs["right"].solver.first_yaw(right_pos, right_R))
            left, ok_left = self._solve_leg_given_first(legs["left"], left_pos, left_R, first)
            right, ok_right = self._solve_leg_given_first(legs["right"], right_pos, right_R, first)
            return left + right, ok_left and ok_right
        if not polish and not self.shared_hip:
            # :meth:`_solve_leg`'s first candidate inline (the walks on Wolfgang, ~0.3 µs less a call);
            # a leg whose first candidate is not taken is solved again the long way
            (left_leg, left_first, left_inside), (right_leg, right_first, right_inside) = self._first_paths
            left, ok_left = left_first(left_pos, left_R, False)
            if not (ok_left and left_inside(left)):
                left, ok_left = self._solve_leg(left_leg, left_pos, left_R, False)
            right, ok_right = right_first(right_pos, right_R, False)
            if not (ok_right and right_inside(right)):
                right, ok_right = self._solve_leg(right_leg, right_pos, right_R, False)
            return left + right, ok_left and ok_right
        left, ok_left = self._solve_leg(self.legs["left"], left_pos, left_R, polish)
        right, ok_right = self._solve_leg(self.legs["right"], right_pos, right_R, polish)
        if self.shared_hip:
            first = (0.5 * (left[0] + right[0]) if hip_yaw_pitch == "mean"
                     else (left if hip_yaw_pitch == "left" else right)[0])
            if hip_yaw_pitch != "left":
                left, ok_left = self._solve_leg_given_first(self.legs["left"], left_pos, left_R, float(first))
            if hip_yaw_pitch != "right":
                right, ok_right = self._solve_leg_given_first(self.legs["right"], right_pos, right_R, float(first))
        return left + right, ok_left and ok_right


__all__ = ["GIMBAL_COS", "POLISH_MARGIN", "REACH_TOL", "LegGeometry", "LegIK", "LegSolver", "pick",
           "split_roots", "split_rotation"]
