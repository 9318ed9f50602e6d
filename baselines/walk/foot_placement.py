"""Foot placement by step adjustment (Reichenberg & Röfer, "Step Adjustment for a Robust Humanoid
Walk", Algorithm 1) and the CoM prediction it uses over the actuation delay (the closed-form LIPM of
:mod:`upright.baselines.walk.pendulum`).

All positions are forward (x) components in the robot's torso frame, in metres. ``w`` is the swing
foot's x, ``u`` the support foot's x as the base walk plans them; a bar marks the adjusted values,
``t`` the current control frame and ``t - 1`` the previous one (the paper's notation).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from upright.baselines.kernels import step_adjustment
from upright.baselines.kinematics.vectors import clip
from upright.baselines.walk.pendulum import omega


class StepAdjustment(NamedTuple):
    """Result of one frame of Algorithm 1 (a named tuple: a frozen dataclass costs ~1 µs more to
    build, every control cycle)."""

    #: Adjusted swing-foot x (m).
    swing_x: float
    #: Adjusted support-foot x (m).
    support_x: float
    #: The signed violation δ of the tolerance range by the CoM (m; 0 inside the range).
    violation: float


def adjust_step(w_t: float, w_prev: float, w_bar_prev: float, u_t: float, m: float, p_max: float,
                t_min: float, t_max: float) -> StepAdjustment:
    """Algorithm 1 of the paper for one control frame.

    Args:
        w_t, w_prev: the planned swing-foot x of this and the previous frame (m).
        w_bar_prev: the adjusted swing-foot x of the previous frame (m).
        u_t: the planned support-foot x of this frame (m).
        m: the CoM projected onto the foot plane, x (m), same frame as the feet.
        p_max: the largest change of the adjustment per frame (m), > 0.
        t_min, t_max: the tolerance range relative to the sole origins (m), ``t_min <= t_max``.

    Line by line as printed, with one reading made explicit: lines 5, 6, 8 and 9 use
    ``ŵ_t + Δŵ_{t-1}`` (the swing position after the decay of the old adjustment), and line 10 adds
    the clipped δ to that same position. With line 10 taken literally (``ŵ_t`` without the decay) an
    adjustment never returns to zero and the per-frame speed limit of lines 8-9 would not hold;
    B-Human's code (code release 2021, ``WalkStepAdjustment::addBalance``) includes
    the decay. The lines run compiled (:func:`~upright.baselines.kernels.step_adjustment`): a dozen
    ``min``, ``max`` and clips every control cycle.
    """
    if not p_max > 0.0:
        raise ValueError(f"p_max must be > 0, got {p_max!r}")
    if t_min > t_max:
        raise ValueError(f"tolerance range must have t_min <= t_max, got ({t_min!r}, {t_max!r})")
    return StepAdjustment._make(step_adjustment(w_t, w_prev, w_bar_prev, u_t, m, p_max, t_min, t_max))


def predict_com(x: float, v: float, support_back: float, support_front: float, height: float,
                horizon: float) -> float:
    """The CoM x (m) ``horizon`` s ahead, relative to the support sole origin, as the step
    adjustment uses it to bridge the actuation delay (paper section 3; B-Human code release 2021
    ``predictRotation``): the robot tips about the edge of its support rectangle
    ``[support_back, support_front]`` (m) that the CoM is beyond; inside the rectangle it is
    statically stable (no tipping torque) and the CoM moves on at its measured velocity. Beyond
    it, the closed-form pendulum of :func:`upright.baselines.walk.pendulum.propagate` with the pivot at
    the edge and the pendulum ``height`` (m); with ``height <= 0`` (CoM not above the sole) the
    velocity alone."""
    pivot = clip(x, support_back, support_front)
    if pivot == x or not height > 0.0:
        # inside the rectangle; or the CoM is not above the sole (the robot lies tipped over its
        # raised support leg, e.g. pushed by a residual): no pendulum to tip about, the CoM moves on
        return x + v * horizon
    k = omega(height)
    return pivot + ((x - pivot) * math.cosh(k * horizon) + v * math.sinh(k * horizon) / k)


def tolerance_range(support_back: float, support_front: float, foot_area: tuple[float, float]
                    ) -> tuple[float, float]:
    """The tolerance range (T_min, T_max) in m relative to the sole origin: the fractions
    ``foot_area`` of the calibrated support rectangle's length, counted from its back edge
    (paper section 3 and Fig. 4; B-Human 2021 ``desiredFootArea``)."""
    lo, hi = foot_area
    if not 0.0 <= lo <= hi <= 1.0:
        raise ValueError(f"foot_area must be fractions 0 <= lo <= hi <= 1, got {foot_area!r}")
    if not support_back < support_front:
        raise ValueError(f"support rectangle back {support_back!r} must lie behind front {support_front!r}")
    length = support_front - support_back
    return support_back + lo * length, support_back + hi * length
