"""Plain-float 3-D vector algebra for the closed-form leg and arm IK.

Every quantity of the IK is a 3-D vector or a handful of angles, where each NumPy call costs about a
microsecond of overhead for a few nanoseconds of work, so vectors here are tuples of floats
(a NAO leg costs ~30 µs instead of ~100 µs with NumPy arrays; ``upright experiment
kinematics-bench``). Rotation matrices are tuples of three rows. Units follow the arguments (m, rad).
"""

from __future__ import annotations

import math

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


def solve_cos_sin(a: float, b: float, c: float, tol: float) -> tuple[tuple[float, float], bool]:
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



def vec(v) -> Vec:
    """A 3-vector as a tuple of floats."""
    return tuple(np.asarray(v, dtype=float).tolist())  # type: ignore[return-value]



__all__ = ["Mat", "Vec", "add", "angle_about", "cross", "dot", "matvec", "rotate", "solve_cos_sin", "tmatvec", "vec",
           "wrap"]
