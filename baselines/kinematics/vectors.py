"""Plain-float 3-D vector algebra for the closed-form leg and arm IK.

Every quantity of the IK is a 3-D vector or a handful of angles, where each NumPy call costs about a
microsecond of overhead for a few nanoseconds of work, so vectors here are tuples of floats
(``upright experiment kinematics-bench`` times the IK). Rotation matrices are tuples of three rows.
:class:`Circle` is a fixed point turned about a fixed axis by a variable angle (the leg IK's
rotations of constant vectors). Units follow the arguments (m, rad).
"""

from __future__ import annotations

import math

import mujoco
import numpy as np

Vec = tuple[float, float, float]
Mat = tuple[Vec, Vec, Vec]


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


def matmul(a: Mat, b: Mat) -> Mat:
    """``a b`` (rows)."""
    (b00, b01, b02), (b10, b11, b12), (b20, b21, b22) = b
    return tuple((x * b00 + y * b10 + z * b20, x * b01 + y * b11 + z * b21, x * b02 + y * b12 + z * b22)
                 for x, y, z in a)  # type: ignore[return-value]


def tmatmul(a: Mat, b: Mat) -> Mat:
    """``aᵀ b`` (rows)."""
    (a00, a01, a02), (a10, a11, a12), (a20, a21, a22) = a
    return matmul(((a00, a10, a20), (a01, a11, a21), (a02, a12, a22)), b)


def rotate(axis: Vec, angle: float, v: Vec) -> Vec:
    """``R(axis, angle) v`` for a unit ``axis`` (Rodrigues)."""
    return turn(axis, math.cos(angle), math.sin(angle), v)


def turn(axis: Vec, c: float, s: float, v: Vec) -> Vec:
    """``R(axis, angle) v`` for a unit ``axis`` given ``c, s = cos(angle), sin(angle)``:
    ``v cos + (axis × v) sin + axis (axis · v)(1 − cos)`` (Rodrigues)."""
    ax, ay, az = axis
    x, y, z = v
    k = (ax * x + ay * y + az * z) * (1.0 - c)
    return (x * c + (ay * z - az * y) * s + ax * k, y * c + (az * x - ax * z) * s + ay * k,
            z * c + (ax * y - ay * x) * s + az * k)


class Circle:
    """The circle that a fixed point ``v`` runs through when turned about a fixed unit ``axis``
    through ``origin`` (all in one frame, optionally seen through a fixed rotation ``frame``):
    ``frame (origin + R(axis, angle) v) = centre + radial cos(angle) + tangent sin(angle)`` with
    ``centre = frame (origin + axis (axis · v))``, ``radial = frame (v − axis (axis · v))`` and
    ``tangent = frame (axis × v)`` (Rodrigues with the constant vectors computed once)."""

    __slots__ = ("centre", "radial", "tangent")

    def __init__(self, axis: Vec, v: Vec, origin: Vec = (0.0, 0.0, 0.0), frame: Mat | None = None) -> None:
        along = dot(axis, v)
        parts = (add(origin, axis, along), add(v, axis, -along), cross(axis, v))
        self.centre, self.radial, self.tangent = (parts if frame is None else
                                                  tuple(matvec(frame, p) for p in parts))

    def at(self, c: float, s: float) -> Vec:
        """The point at the angle whose cosine and sine are ``c`` and ``s``."""
        (x0, y0, z0), (x1, y1, z1), (x2, y2, z2) = self.centre, self.radial, self.tangent
        return (x0 + c * x1 + s * x2, y0 + c * y1 + s * y2, z0 + c * z1 + s * z2)


def clip(x: float, lo: float, hi: float) -> float:
    """``x`` limited to ``[lo, hi]``: the same float as ``min(max(x, lo), hi)`` (NaN stays NaN),
    written as comparisons in this one place where the IK and the walks clip their numbers (a few
    dozen a control cycle, where the builtins' calls cost more than the comparisons)."""
    x = lo if lo > x else x
    return hi if hi < x else x


TAU = 2.0 * math.pi


def wrap(angle: float) -> float:
    """``angle`` wrapped to [-π, π)."""
    return (angle + math.pi) % TAU - math.pi


def solve_cos_sin(a: float, b: float, c: float, tol: float) -> tuple[tuple[float, float], bool]:
    """Both roots of ``a cos x + b sin x = c`` (the one nearer zero first), and whether they exist.

    Without a root, the ``x`` that brings the left side closest to ``c`` is returned twice; a miss
    of at most ``tol`` (in the units of ``c``) still counts as a root.
    """
    rho = math.hypot(a, b)
    ratio = c / rho if rho > 1e-12 else math.copysign(math.inf, c)
    phi, d, pi = math.atan2(b, a), math.acos(clip(ratio, -1.0, 1.0)), math.pi
    x1, x2 = (phi + d + pi) % TAU - pi, (phi - d + pi) % TAU - pi  # wrapped to [-π, π)
    return ((x1, x2) if abs(x1) <= abs(x2) else (x2, x1)), abs(c) <= rho + tol


def angle_about(axis: Vec, u: Vec, v: Vec) -> float:
    """Signed angle (rad) about unit ``axis`` that turns ``u`` onto ``v`` (components normal to the axis)."""
    up = add(u, axis, -dot(u, axis))
    vp = add(v, axis, -dot(v, axis))
    return math.atan2(dot(axis, cross(up, vp)), dot(up, vp))



def zyx_matrix(yaw: float, pitch: float, roll: float) -> Mat:
    """``Rz(yaw) Ry(pitch) Rx(roll)`` (rows), the walks' foot orientations."""
    cz, sz = math.cos(yaw), math.sin(yaw)
    cy, sy = math.cos(pitch), math.sin(pitch)
    cx, sx = math.cos(roll), math.sin(roll)
    return ((cz * cy, cz * sy * sx - sz * cx, cz * sy * cx + sz * sx),
            (sz * cy, sz * sy * sx + cz * cx, sz * sy * cx - cz * sx),
            (-sy, cy * sx, cy * cx))


def zxy_matrix(yaw: float, roll: float, pitch: float) -> Mat:
    """``Rz(yaw) Rx(roll) Ry(pitch)`` (rows), the LIPM walk's torso orientation."""
    cz, sz = math.cos(yaw), math.sin(yaw)
    cx, sx = math.cos(roll), math.sin(roll)
    cy, sy = math.cos(pitch), math.sin(pitch)
    return ((cz * cy - sz * sx * sy, -sz * cx, cz * sy + sz * sx * cy),
            (sz * cy + cz * sx * sy, cz * cx, sz * sy - cz * sx * cy),
            (-cx * sy, sx, cx * cy))


def quat_matrix(quat) -> Mat:
    """The rotation matrix (rows) of a quaternion ``(w, x, y, z)``, normalised first (the formula
    of MuJoCo's ``mju_quat2Mat``, in floats)."""
    w, x, y, z = quat.tolist() if hasattr(quat, "tolist") else quat
    norm = math.sqrt(w * w + x * x + y * y + z * z)
    w, x, y, z = w / norm, x / norm, y / norm, z / norm
    ww, xx, yy, zz = w * w, x * x, y * y, z * z
    xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
    return ((ww + xx - yy - zz, 2.0 * (xy - zw), 2.0 * (xz + yw)),
            (2.0 * (xy + zw), ww - xx + yy - zz, 2.0 * (yz - xw)),
            (2.0 * (xz - yw), 2.0 * (yz + xw), ww - xx - yy + zz))


def pose_error_floats(pos: list[float], rot: list[list[float]], pos0: list[float], mat0: list[float]) -> list[float]:
    """:func:`~upright.baselines.kinematics.forward.pose_error` in floats: the position difference
    ``pos − pos0`` (m) and the rotation vector (rad) of ``rot @ rot0ᵀ`` (``rot`` as rows, ``rot0``
    row-major flat as MuJoCo's ``xmat``), with MuJoCo's ``mju_mat2Quat`` / ``mju_quat2Vel`` steps."""
    (a, b, c), (d, e, f), (g, h, i) = rot
    m00 = a * mat0[0] + b * mat0[1] + c * mat0[2]
    m01 = a * mat0[3] + b * mat0[4] + c * mat0[5]
    m02 = a * mat0[6] + b * mat0[7] + c * mat0[8]
    m10 = d * mat0[0] + e * mat0[1] + f * mat0[2]
    m11 = d * mat0[3] + e * mat0[4] + f * mat0[5]
    m12 = d * mat0[6] + e * mat0[7] + f * mat0[8]
    m20 = g * mat0[0] + h * mat0[1] + i * mat0[2]
    m21 = g * mat0[3] + h * mat0[4] + i * mat0[5]
    m22 = g * mat0[6] + h * mat0[7] + i * mat0[8]
    out = [pos[0] - pos0[0], pos[1] - pos0[1], pos[2] - pos0[2]]
    if m00 + m11 + m22 > 0.0:  # mju_mat2Quat's first case (w largest): always for small errors
        w = 0.5 * math.sqrt(1.0 + m00 + m11 + m22)
        x, y, z = 0.25 * (m21 - m12) / w, 0.25 * (m02 - m20) / w, 0.25 * (m10 - m01) / w
        norm = math.sqrt(w * w + x * x + y * y + z * z)
        if abs(norm - 1.0) > 1e-15:
            w, x, y, z = w / norm, x / norm, y / norm, z / norm
    else:
        quat = np.empty(4)
        mujoco.mju_mat2Quat(quat, np.array([m00, m01, m02, m10, m11, m12, m20, m21, m22]))
        w, x, y, z = quat.tolist()
    sin_half = math.sqrt(x * x + y * y + z * z)  # mju_quat2Vel
    if sin_half < 1e-15:
        return out + [0.0, 0.0, 0.0]
    angle = 2.0 * math.atan2(sin_half, w)
    if angle > math.pi:
        angle -= 2.0 * math.pi
    return out + [x / sin_half * angle, y / sin_half * angle, z / sin_half * angle]


def vec(v) -> Vec:
    """A 3-vector as a tuple of floats."""
    return tuple(np.asarray(v, dtype=float).tolist())  # type: ignore[return-value]



__all__ = ["Circle", "Mat", "Vec", "add", "angle_about", "clip", "cross", "dot", "matmul", "matvec", "pose_error_floats",
           "quat_matrix", "rotate", "solve_cos_sin", "tmatmul", "tmatvec", "turn", "vec", "wrap", "zxy_matrix",
           "zyx_matrix"]
