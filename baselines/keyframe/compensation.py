"""Joint-error compensation in position control (Reichenberg & Laue 2025, section 4, equations 1–4).

Per joint j and control cycle t (angles in degrees):

* raw error (eq. 2): δ_j,t = r_j(t − d) − m_j(t), the request sent ``d`` cycles ago (NAO: d = 3,
  36 ms of actuation delay) minus the current measurement;
* predicted error (eq. 3): δ̂_j = 3·(δ_j,t − δ_j,t−1) + δ_j,t;
* applied error (eq. 4): Δ_j = 0 if δ̂_j·δ_j,t ≤ 0; δ̂_j if |δ̂_j| < |δ_j,t|; else δ_j,t — the
  prediction may only ever *reduce* the error (never over-predict);
* application (eq. 1, with B-Human 2025's per-entry range [a, b]): each joint γ of an entry gets
  R̂_γ = R_γ + percent·p_γ·b with percent = max(0, (Δ_j − a)/(b − a)), or, when a and b have
  opposite signs, max(Δ_j/a, Δ_j/b, 0). For a = 0 this is exactly R_γ + Δ_j·p_γ (eq. 1); a ≠ 0
  is a dead band. The hip-pitch-difference entries use measured left − right hip pitch, clipped
  to percent ≤ 1 (B-Human ``KeyframePhaseJointCompensationImpl``).

Unstiffened (``off``) joints have no error.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from upright.baselines.common.joint_errors import JointErrorEstimator, applied_error
from upright.baselines.keyframe.library import CompensationEntry


def entry_percent(entry: CompensationEntry, error: float) -> float:
    """How much of an entry applies for ``error`` (deg); see the module docstring."""
    a, b = entry.a, entry.b
    if a * b < 0.0:
        percent = max(error / a, error / b, 0.0)
    else:
        percent = max(0.0, (error - a) / (b - a))
    if entry.hip_pitch_difference:
        percent = min(percent, 1.0)
    return percent


def compensation(entries: Sequence[CompensationEntry], raw: np.ndarray, applied: np.ndarray,
                 hip_pitch_difference: float, size: int, scale: float = 1.0) -> np.ndarray:
    """Offsets (deg, actuator order) that the entries add to the keyframe targets (eq. 1); ``scale``
    multiplies every factor p_γ (1 = the data file's factors)."""
    out = np.zeros(size)
    for e in entries:
        if e.hip_pitch_difference:
            error = hip_pitch_difference
        else:
            error = applied[e.joint] if e.predict else raw[e.joint]
        percent = entry_percent(e, float(error))
        if percent > 0.0:
            for joint, factor in e.apply:
                out[joint] += percent * factor * scale * e.b
    return out


__all__ = ["JointErrorEstimator", "applied_error", "compensation", "entry_percent"]
