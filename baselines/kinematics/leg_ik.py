"""Closed-form inverse kinematics of a 6-DoF leg, in plain Python floats.

The algorithm is described in the module docstring of :mod:`upright.baselines.kinematics`; this
module holds its arithmetic. Every quantity is a 3-D vector or a handful of angles, where each NumPy
call costs about a microsecond of overhead for a few nanoseconds of work, so vectors here are
tuples of floats and the leg's constant vectors and products are computed once
(:class:`LegSolver`): a NAO leg costs ~30 µs instead of ~100 µs with NumPy arrays
(``python -m upright.eval.kinematics_bench``), and the controllers solve legs every control cycle
(walks) or several goal pairs per sample (spline stand-up).

Frames and units: the torso frame (x forward, y left, z up), metres and radians. Rotation matrices
are tuples of three rows.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np

#: Targets this far (m) beyond the leg's reach still count as reachable (stretched leg); covers the
#: model's rounding (see ``kinematics.GEOMETRY_TOL``).
REACH_TOL = 1e-4
#: Joint angles may exceed a limit by this much (rad) before the IK reports clipping (they are
#: clipped anyway); covers the model's rounding.
LIMIT_TOL = 1e-3

Vec = tuple[float, float, float]
Mat = tuple[Vec, Vec, Vec]


# ---------------------------------------------------------------------- float vector algebra
def dot(a: Vec, b: Vec) -> float:
    """``a · b``."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def cross(a: Vec, b: Vec) -> Vec:
    """``a × b``."""
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def add(a: Vec, b: Vec, s: float = 1.0) -> Vec:
    """``a + s b``."""
    return (a[0] + s * b[0], a[1] + s * b[1], a[2] + s * b[2])


def matvec(m: Mat, v: Vec) -> Vec:
    """``m v``."""
    (a, b, c), (d, e, f), (g, h, i) = m
    x, y, z = v
    return (a * x + b * y + c * z, d * x + e * y + f * z, g * x + h * y + i * z)


def tmatvec(m: Mat, v: Vec) -> Vec:
    """``mᵀ v``."""
    return (m[0][0] * v[0] + m[1][0] * v[1] + m[2][0] * v[2],
            m[0][1] * v[0] + m[1][1] * v[1] + m[2][1] * v[2],
            m[0][2] * v[0] + m[1][2] * v[1] + m[2][2] * v[2])


def rotate(axis: Vec, angle: float, v: Vec) -> Vec:
    """``R(axis, angle) v`` for a unit ``axis`` (Rodrigues; written out: the leg IK's inner loop)."""
    c, s = math.cos(angle), math.sin(angle)
    ax, ay, az = axis
    x, y, z = v
    k = (ax * x + ay * y + az * z) * (1.0 - c)
    return (x * c + (ay * z - az * y) * s + ax * k, y * c + (az * x - ax * z) * s + ay * k,
            z * c + (ax * y - ay * x) * s + az * k)


def wrap(angle: float) -> float:
    """``angle`` wrapped to [-π, π)."""
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


def solve_cos_sin(a: float, b: float, c: float, tol: float = REACH_TOL) -> tuple[tuple[float, float], bool]:
    """Both roots of ``a cos x + b sin x = c`` (the one nearer zero first), and whether they exist.

    Without a root, the ``x`` that brings the left side closest to ``c`` is returned twice; a miss
    of at most ``tol`` (in the units of ``c``) still counts as a root.
    """
    rho = math.hypot(a, b)
    phi = math.atan2(b, a)
    ratio = c / rho if rho > 1e-12 else math.copysign(math.inf, c)
    d = math.acos(min(1.0, max(-1.0, ratio)))
    x1, x2 = wrap(phi + d), wrap(phi - d)
    return ((x1, x2) if abs(x1) <= abs(x2) else (x2, x1)), abs(c) <= rho + tol


def angle_about(axis: Vec, u: Vec, v: Vec) -> float:
    """Signed angle (rad) about unit ``axis`` that turns ``u`` onto ``v`` (components normal to the axis)."""
    up = add(u, axis, -dot(u, axis))
    vp = add(v, axis, -dot(v, axis))
    return math.atan2(dot(axis, cross(up, vp)), dot(up, vp))


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


def split_roots(rot_c: Vec, a: Vec, b: Vec, c: Vec) -> tuple[float, float]:
    """The two middle angles ``y`` of :func:`split_rotation` (``a · R(b, y) c = a · rot c``)."""
    return solve_cos_sin(dot(a, c), dot(a, cross(b, c)), dot(a, rot_c))[0]


def vec(v) -> Vec:
    """A 3-vector as a tuple of floats."""
    return tuple(np.asarray(v, dtype=float).tolist())  # type: ignore[return-value]


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
        return sum(max(lo - x, 0.0) + max(x - hi, 0.0) for x, lo, hi in zip(q, self._lower, self._upper))

    def clip(self, q) -> np.ndarray:
        """The angles ``q`` clipped to the joint ranges, as an array (6,)."""
        return np.array([min(max(x, lo), hi) for x, lo, hi in zip(q, self._lower, self._upper)])

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
        rolls, ok_roll = solve_cos_sin(dot(w, n), -dot(w, self.e5_x_n), self.lateral)
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
        hip_rolls, ok_roll = solve_cos_sin(dot(v0, n), dot(v0, self.e1_x_n), -self.lateral)
        normal = rotate(e0, -first, (rot[0][2], rot[1][2], rot[2][2]))  # the goal's sole normal
        for q1 in dict.fromkeys(hip_rolls):
            for q, ok_leg in self._sagittal(v0, first, q1):
                # the sole normal in the shank frame: R(n, pitch sum)ᵀ R(e1, q1)ᵀ R(e0, q0)ᵀ normal
                target = rotate(n, -(self.s2 * q[2] + self.s3 * q[3]), rotate(e1, -q1, normal))
                rolls, ok_normal = solve_cos_sin(self.n_normal0, self.n_e5_x_normal0, dot(n, target))
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
