"""Closed-form pieces of the 3D linear inverted pendulum (Graf & Röfer 2011, equations 1–9, 17–20).

Pure numpy/SciPy, shared by the walks that plan the centre of mass (CoM) with a linear inverted
pendulum (``lipm``, ``step_adjust``). Units: m, s, m/s. Positions are relative to the pendulum
origin (pivot) unless a name says otherwise; ``k = sqrt(g / h)`` (1/s) for the pendulum height ``h``.

The walk is a sequence of single-support phases, each with its own frame ``Q`` (origin between the
feet). The current phase's pendulum has its origin at ``r`` in ``Q``; the next phase's frame ``Q̄``
lies at ``s̄`` (the step) from ``Q`` and its origin at ``r̄`` in ``Q̄``. Time ``t = 0`` of a phase is
the apex of the lateral swing (lateral velocity zero); a phase runs from ``tb < 0`` to ``te > 0``.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq

#: Standard gravity (m/s²).
GRAVITY = 9.80665


def omega(height: float, gravity: float = GRAVITY) -> float:
    """The pendulum constant ``k = sqrt(g / h)`` (1/s) for a CoM height ``h`` (m) above the pivot."""
    if not height > 0.0:
        raise ValueError(f"pendulum height must be > 0 m, got {height!r}")
    return float(np.sqrt(gravity / height))


def propagate(x0: np.ndarray | float, v0: np.ndarray | float, k: float, t: float) -> tuple[np.ndarray, np.ndarray]:
    """Position and velocity at time ``t`` (s) of a pendulum with state ``x0``, ``v0`` at ``t = 0``
    (equations 1 and 2); works per axis on arrays."""
    c, s = np.cosh(k * t), np.sinh(k * t)
    x0, v0 = np.asarray(x0, dtype=float), np.asarray(v0, dtype=float)
    return x0 * c + v0 * s / k, x0 * k * s + v0 * c


def next_begin_time(x0y: float, k: float, te: float, x0y_next: float, k_next: float) -> float:
    """The next phase's begin time ``t̄b`` at which its lateral velocity equals the current phase's
    lateral velocity at ``te`` (equation 6)."""
    return float(np.arcsinh(x0y * k * np.sinh(k * te) / (x0y_next * k_next)) / k_next)


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

    def mismatch(te: float) -> float:
        tb_next = next_begin_time(x0y, k, te, x0y_next, k_next)
        return x0y * np.cosh(k * te) - x0y_next * np.cosh(k_next * tb_next) - gap

    lo = max(t_now, 0.0)
    f_lo, f_hi = mismatch(lo), mismatch(t_max)
    if np.sign(f_lo) == np.sign(f_hi):
        raise ValueError(
            f"no support switch in ({lo:.3f}, {t_max:.3f}] s for x0y={x0y:.4f}, x0y_next={x0y_next:.4f}, "
            f"lateral gap {gap:.4f} m"
        )
    te = float(brentq(mismatch, lo, t_max, xtol=1e-7))
    return te, next_begin_time(x0y, k, te, x0y_next, k_next)


def _connection_rows(k: float, t: float, te: float, k_next: float, tb_next: float) -> np.ndarray:
    """Coefficients of equations (9) for the unknowns (r, x0, v0, v̄0) of one axis."""
    c, s = np.cosh(k * t), np.sinh(k * t)
    ce, se = np.cosh(k * te), np.sinh(k * te)
    cn, sn = np.cosh(k_next * tb_next), np.sinh(k_next * tb_next)
    return np.array([
        [1.0, c, s / k, 0.0],  # r + x(t) = x_t
        [0.0, k * s, c, 0.0],  # ẋ(t) = ẋ_t
        [0.0, k * se, ce, -cn],  # ẋ(te) − x̄̇(t̄b) = x̄0·k̄·sinh(k̄ t̄b)
        [1.0, ce, se / k, -sn / k_next],  # r + x(te) − x̄(t̄b) = s̄ + r̄ + x̄0·cosh(k̄ t̄b)
    ])


def connect(k: float, t: float, x_t: float, v_t: float, te: float, k_next: float, tb_next: float,
            step: float, r_next: float, x0_next: float = 0.0) -> tuple[float, float, float, float]:
    """Solve the linear system (9) on one axis for the current origin ``r`` and state ``(x0, v0)``
    and the next phase's velocity at its apex ``v̄0``.

    Given: the CoM position ``x_t`` (in ``Q``) and velocity ``v_t`` at time ``t`` of the current
    phase, its end ``te``, the next phase's begin ``t̄b``, the step ``s̄``, the next origin ``r̄``
    (in ``Q̄``) and the next phase's position at its apex ``x̄0`` (the paper plans ``x̄0 = 0``: CoM
    over the next origin at ``t̄ = 0``). Returns ``(r, x0, v0, v̄0)``.
    """
    a = _connection_rows(k, t, te, k_next, tb_next)
    b = np.array([x_t, v_t, x0_next * k_next * np.sinh(k_next * tb_next),
                  step + r_next + x0_next * np.cosh(k_next * tb_next)])
    r, x0, v0, v0_next = np.linalg.solve(a, b)
    return float(r), float(x0), float(v0), float(v0_next)


def connect_with_origin(k: float, t: float, x_t: float, v_t: float, r: float, te: float, k_next: float,
                        tb_next: float, r_next: float, x0_next: float = 0.0) -> tuple[float, float, float, float]:
    """The same system (9) with the current origin ``r`` given (e.g. capped) and the step ``s̄``
    unknown instead: returns ``(s̄, x0, v0, v̄0)``."""
    a = _connection_rows(k, t, te, k_next, tb_next)
    # Move r to the right-hand side and s̄ (coefficient -1 in the last row) to the left.
    a[:, 0] = [0.0, 0.0, 0.0, -1.0]
    b = np.array([x_t - r, v_t, x0_next * k_next * np.sinh(k_next * tb_next),
                  r_next + x0_next * np.cosh(k_next * tb_next) - r])
    step, x0, v0, v0_next = np.linalg.solve(a, b)
    return float(step), float(x0), float(v0), float(v0_next)


def lateral_apex(x_rel: float, v: float, k: float, min_offset: float) -> tuple[float, float]:
    """The lateral pendulum that passes through position ``x_rel`` (relative to its origin, m) with
    velocity ``v`` (m/s): its apex offset ``x0y'`` and the current time ``t'`` (equations 19, 20).

    When the state has enough energy to pass over the origin (no apex exists), the offset is held at
    ``min_offset`` (m) on the side of ``x_rel`` and the time matches the velocity.
    """
    side = 1.0 if x_rel >= 0.0 else -1.0
    radicand = x_rel * x_rel - (v / k) ** 2
    x0y = side * max(np.sqrt(max(radicand, 0.0)), min_offset)
    return float(x0y), float(np.arcsinh(v / (k * x0y)) / k)
