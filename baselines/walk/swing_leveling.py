"""Swing-foot leveling (Reichenberg & Röfer, "Step Adjustment for a Robust Humanoid Walk", section 5;
B-Human code release 2021 ``WalkingEngine::modifySwingFootRotation``).

The support sole's measured pitch (forward kinematics of the measured joint angles) minus its
requested pitch is the unintended tilt of the robot over its support foot; that deviation is added
to the swing foot's pitch so the swing sole stays parallel to the ground and its tip does not hit
the ground early. It is applied only when the torso is tilted by a relevant amount, in and out
of it the offset moves at a limited rate, and over the last quarter of the step the applied pitch is
interpolated linearly back to the swing foot's normal pitch (paper: so the foot lands with as little
rotation as possible); each step starts from no offset. Pitch angles in rad, positive = toes down (rotation about the torso's +y axis); torso pitch
positive = leaning forward.
"""

from __future__ import annotations

from dataclasses import dataclass

from upright.baselines.kinematics.vectors import clip



@dataclass(frozen=True)
class LevelingParams:
    """Parameters (values per robot in ``baselines/data/step_adjust_<robot>.yaml``; NAO: B-Human
    code release 2021, ``walkingEngineCommon.cfg``)."""

    #: Torso tilt (rad) at which the leveling is fully on (soleCompensationMinTorsoRotation 5 deg).
    min_torso_rotation: float
    #: Support-sole pitch error (rad) at which the leveling is fully on (…MinSupportSoleRotation 3 deg).
    min_support_sole_rotation: float
    #: Step phase after which the offset returns linearly to zero (paper: last 25 %).
    return_zero_ratio: float
    #: Rate (rad/s) at which the offset shrinks; it grows at twice this (soleRotationOffsetSpeed 40 deg/s).
    offset_speed: float
    #: Per-frame decrease / increase of the direction factors (soleCompensationReduction / Increasement).
    factor_reduction: float
    factor_increase: float
    #: Backward case: only while the swing foot is less than this far ahead of the support foot
    #: (soleBackwardsCompensationFeetShift −10 mm, …FeetXDifference 30 mm).
    backward_feet_shift: float
    backward_feet_x_difference: float


class SwingFootLeveling:
    """The swing-foot pitch offset (rad), updated once per control frame with :meth:`update`."""

    def __init__(self, params: LevelingParams) -> None:
        self.params = params
        self.reset()

    def reset(self) -> None:
        """No offset, both direction factors fully on."""
        self.offset = 0.0
        self._forwards = 1.0
        self._backwards = 1.0

    def start_step(self) -> None:
        """A new step: the new swing foot starts from its normal pitch (no offset)."""
        self.offset = 0.0

    def target(self, torso_pitch: float, sole_error: float, feet_dx: float) -> float:
        """The offset (rad) the leveling aims at this frame, before rate limiting.

        ``torso_pitch``: measured torso tilt forward (rad, relative to the walk's nominal trunk
        pitch); ``sole_error``: measured minus requested support-sole pitch (rad); ``feet_dx``:
        swing-foot x minus support-foot x (m).
        """
        p = self.params
        if torso_pitch > 0.0:
            error = min(sole_error, 0.0)
            torso_scale = clip(torso_pitch / p.min_torso_rotation, 0.0, 1.0)
            direction = self._forwards
            feet_scale = 1.0
        else:
            error = max(sole_error, 0.0)
            torso_scale = clip((torso_pitch / -p.min_torso_rotation) ** 2, 0.0, 1.0)
            direction = self._backwards
            feet_scale = 1.0 - clip((feet_dx - p.backward_feet_shift) / p.backward_feet_x_difference, 0.0, 1.0)
        error_scale = clip((error / p.min_support_sole_rotation) ** 2, 0.0, 1.0)
        return error * error_scale * torso_scale * direction * feet_scale

    def update(self, torso_pitch: float, sole_error: float, step_ratio: float, swing_dx: float,
               feet_dx: float, dt: float) -> float:
        """Advance one frame of ``dt`` s and return the pitch (rad) to add to the swing foot's:
        the rate-limited offset, faded out linearly over the last part of the step. ``step_ratio``:
        phase of the step (0 at the start, 1 at the nominal end); ``swing_dx``: how far (m) the
        swing foot moved forward this frame; the other arguments as in :meth:`target`."""
        p = self.params
        step_f = -p.factor_reduction if swing_dx < 0.0 else p.factor_increase
        step_b = -p.factor_reduction if swing_dx > 0.0 else p.factor_increase
        self._forwards = clip(self._forwards + step_f, 0.0, 1.0)
        self._backwards = clip(self._backwards + step_b, 0.0, 1.0)
        goal = self.target(torso_pitch, sole_error, feet_dx)
        rate = (2.0 if abs(goal) > abs(self.offset) else 1.0) * p.offset_speed * dt
        self.offset += clip(goal - self.offset, -rate, rate)
        return self.offset * clip((1.0 - step_ratio) / (1.0 - p.return_zero_ratio), 0.0, 1.0)
