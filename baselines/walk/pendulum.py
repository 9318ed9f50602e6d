"""Closed-form pieces of the 3D linear inverted pendulum (Graf & Röfer 2011, equations 1–9, 17–20).

Python floats (per-axis scalars; :func:`propagate` also on arrays) and SciPy's root finder, shared by the walks that plan the centre of mass (CoM) with a linear inverted
pendulum (``lipm``, ``step_adjust``). Units: m, s, m/s. Positions are relative to the pendulum
origin (pivot) unless a name says otherwise; ``k = sqrt(g / h)`` (1/s) for the pendulum height ``h``.

The walk is a sequence of single-support phases, each with its own frame ``Q`` (origin between the
feet). The current phase's pendulum has its origin at ``r`` in ``Q``; the next phase's frame ``Q̄``
lies at ``s̄`` (the step) from ``Q`` and its origin at ``r̄`` in ``Q̄``. Time ``t = 0`` of a phase is
the apex of the lateral swing (lateral velocity zero); a phase runs from ``tb < 0`` to ``te > 0``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

#: Standard gravity (m/s²).
GRAVITY = 9.80665


def omega(height: float, gravity: float = GRAVITY) -> float:
    """The pendulum constant ``k = sqrt(g / h)`` (1/s) for a CoM height ``h`` (m) above the pivot."""
    if not height > 0.0:
        raise ValueError(f"pendulum height must be > 0 m, got {height!r}")
    return math.sqrt(gravity / height)


def propagate(x0: np.ndarray | float, v0: np.ndarray | float, k: float, t: float) -> tuple[np.ndarray, np.ndarray]:
    """Position and velocity at time ``t`` (s) of a pendulum with state ``x0``, ``v0`` at ``t = 0``
    (equations 1 and 2); works per axis on arrays."""
    c, s = np.cosh(k * t), np.sinh(k * t)
    x0, v0 = np.asarray(x0, dtype=float), np.asarray(v0, dtype=float)
    return x0 * c + v0 * s / k, x0 * k * s + v0 * c


def propagate_scalar(x0: float, v0: float, k: float, t: float) -> tuple[float, float]:
    """:func:`propagate` on one axis in Python floats (the walks' per-cycle path)."""
    c, s = math.cosh(k * t), math.sinh(k * t)
    return x0 * c + v0 * s / k, x0 * k * s + v0 * c


def next_begin_time(x0y: float, k: float, te: float, x0y_next: float, k_next: float) -> float:
    """The next phase's begin time ``t̄b`` at which its lateral velocity equals the current phase's
    lateral velocity at ``te`` (equation 6)."""
    return math.asinh(x0y * k * math.sinh(k * te) / (x0y_next * k_next)) / k_next


def switch_times(x0y: float, ry: float, k: float, x0y_next: float, ry_next: float, k_next: float,
                 step_y: float, t_now: float, t_max: float = 2.0) -> tuple[float, float]:
    """When to switch the support leg: ``(te, t̄b)`` with continuous lateral position and velocity
    (equations 4 and 5), found iteratively for ``te`` in ``(t_now, t_max]`` (s).

    ``x0y``/``x0y_next``: lateral CoM position relative to the origin at each phase's apex (m);
    ``ry``/``ry_next``: lateral origins in ``Q``/``Q̄`` (m); ``step_y``: lateral step ``s̄y`` (m).
    Raises ValueError when no switch time exists in that interval (the pendulums never meet).
    """
    if x0y == 0.0 or x0y_next == 0.0:
        raise ValueError(f"apex offsets must be non-zero, got x0y={x0y!r}, x0y_next={x0y_next!r}")
    gap = ry_next + step_y - ry
    lo = max(t_now, 0.0)
    if k == k_next:
        # Closed form for equal pendulum constants: with S = sinh(k te), C = cosh(k te) the next
        # phase's x̄0 cosh(k t̄b) is sgn(x̄0) sqrt(x̄0² + x0² S²) (equation 6), and
        # x0 C − gap = sgn(x̄0) sqrt(x̄0² + x0² S²) squared gives C = (gap² + x0² − x̄0²) / (2 x0 gap):
        # one root for te >= 0 at most; x0 C − gap must have the sign of x̄0 (the squared equation's
        # other root has the other). Written out here (every control cycle of the walk).
        te = None
        if gap != 0.0:
            c = (gap * gap + x0y * x0y - x0y_next * x0y_next) / (2.0 * x0y * gap)
            rest = x0y * c - gap
            if c >= 1.0 and rest != 0.0 and (rest > 0.0) == (x0y_next > 0.0):
                te = math.acosh(c) / k
        if te is None or not lo <= te <= t_max:
            raise ValueError(
                f"no support switch in ({lo:.3f}, {t_max:.3f}] s for x0y={x0y:.4f}, x0y_next={x0y_next:.4f}, "
                f"lateral gap {gap:.4f} m"
            )
        return te, math.asinh(x0y * k * math.sinh(k * te) / (x0y_next * k_next)) / k_next  # next_begin_time

    def mismatch(te: float) -> float:
        tb_next = next_begin_time(x0y, k, te, x0y_next, k_next)
        return x0y * math.cosh(k * te) - x0y_next * math.cosh(k_next * tb_next) - gap

    f_lo, f_hi = mismatch(lo), mismatch(t_max)
    if (f_lo > 0.0) == (f_hi > 0.0) and (f_lo < 0.0) == (f_hi < 0.0):  # the same sign (or both zero)
        raise ValueError(
            f"no support switch in ({lo:.3f}, {t_max:.3f}] s for x0y={x0y:.4f}, x0y_next={x0y_next:.4f}, "
            f"lateral gap {gap:.4f} m"
        )
    te = float(brentq(mismatch, lo, t_max, xtol=1e-7))
    return te, next_begin_time(x0y, k, te, x0y_next, k_next)


def connect(k: float, t: float, x_t: float, v_t: float, te: float, k_next: float, tb_next: float,
            step: float, r_next: float, x0_next: float = 0.0) -> tuple[float, float, float, float]:
    """Solve the linear system (9) on one axis for the current origin ``r`` and state ``(x0, v0)``
    and the next phase's velocity at its apex ``v̄0``.

    Given: the CoM position ``x_t`` (in ``Q``) and velocity ``v_t`` at time ``t`` of the current
    phase, its end ``te``, the next phase's begin ``t̄b``, the step ``s̄``, the next origin ``r̄``
    (in ``Q̄``) and the next phase's position at its apex ``x̄0`` (the paper plans ``x̄0 = 0``: CoM
    over the next origin at ``t̄ = 0``). Returns ``(r, x0, v0, v̄0)``. Solved by elimination:
    ``v̄0`` from the velocity row at the switch, ``r`` from the position rows' difference, leaving
    two equations in ``(x0, v0)``.
    """
    c, s = math.cosh(k * t), math.sinh(k * t)
    ce, se = math.cosh(k * te), math.sinh(k * te)
    cn, sn = math.cosh(k_next * tb_next), math.sinh(k_next * tb_next)
    b3 = x0_next * k_next * sn  # k se x0 + ce v0 − cn v̄0 = b3
    b4 = step + r_next + x0_next * cn  # r + ce x0 + (se/k) v0 − (sn/k̄) v̄0 = b4
    f = sn / (k_next * cn)
    a11, a12 = ce - c - f * k * se, (se - s) / k - f * ce
    b1 = b4 - x_t - f * b3
    det = a11 * c - a12 * k * s
    if det == 0.0:
        raise ValueError("the connection system (9) is singular")
    x0 = (b1 * c - a12 * v_t) / det
    v0 = (a11 * v_t - k * s * b1) / det
    return x_t - c * x0 - s / k * v0, x0, v0, (k * se * x0 + ce * v0 - b3) / cn


def connect_with_origin(k: float, t: float, x_t: float, v_t: float, r: float, te: float, k_next: float,
                        tb_next: float, r_next: float, x0_next: float = 0.0) -> tuple[float, float, float, float]:
    """The same system (9) with the current origin ``r`` given (e.g. capped) and the step ``s̄``
    unknown instead: returns ``(s̄, x0, v0, v̄0)``. The state at ``t = 0`` is the given state
    propagated back; ``v̄0`` and ``s̄`` follow from the rows at the switch."""
    x0, v0 = propagate_scalar(x_t - r, v_t, k, -t)
    ce, se = math.cosh(k * te), math.sinh(k * te)
    cn, sn = math.cosh(k_next * tb_next), math.sinh(k_next * tb_next)
    v0_next = (k * se * x0 + ce * v0 - x0_next * k_next * sn) / cn
    step = r + ce * x0 + se / k * v0 - sn / k_next * v0_next - r_next - x0_next * cn
    return step, x0, v0, v0_next


def lateral_apex(x_rel: float, v: float, k: float, min_offset: float) -> tuple[float, float]:
    """The lateral pendulum that passes through position ``x_rel`` (relative to its origin, m) with
    velocity ``v`` (m/s): its apex offset ``x0y'`` and the current time ``t'`` (equations 19, 20).

    When the state has enough energy to pass over the origin (no apex exists), the offset is held at
    ``min_offset`` (m) on the side of ``x_rel`` and the time matches the velocity.
    """
    side = 1.0 if x_rel >= 0.0 else -1.0
    radicand = x_rel * x_rel - (v / k) ** 2
    x0y = side * max(math.sqrt(max(radicand, 0.0)), min_offset)
    return x0y, math.asinh(v / (k * x0y)) / k
