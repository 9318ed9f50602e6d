"""Reward scales as data: one frozen dataclass per task, passed to an environment as ``reward_scales=``.

Every field is the weight of the reward term of the same name in ``info["reward_terms"]``; the
step's reward is the sum of the terms. Reward terms are ``weight × quantity``; penalty terms are
``−weight × cost`` (the weights of penalties are positive numbers, as Gymnasium's ``*_cost_weight``
arguments). The defaults are the weights the environments have always used; what each quantity is
(and its unit) is written in the environment's docstring and in ``docs/environments.md``.

An environment accepts ``None`` (the defaults), an instance of its task's class, or a mapping of
field names to weights that replace the defaults (``{"torque": 0.1}``); an unknown name is a
``ValueError`` naming it and listing the valid ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, TypeVar

_Scales = TypeVar("_Scales", bound="RewardScales")


@dataclass(frozen=True)
class RewardScales:
    """Base class of the per-task weights (dimensionless multipliers of each term)."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"reward scale {f.name!r} must be a finite number, got {value!r}")
            object.__setattr__(self, f.name, float(value))

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The term names, in the order the terms appear in ``info["reward_terms"]``."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def resolve(cls: type[_Scales], value: Any) -> _Scales:
        """``None`` → the defaults; an instance of ``cls`` → itself; a mapping → the defaults with
        those weights replaced. ValueError for an unknown name or any other value."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            unknown = [key for key in value if key not in cls.names()]
            if unknown:
                raise ValueError(f"unknown reward scale {unknown[0]!r} for {cls.__name__}; "
                                 f"valid: {', '.join(cls.names())}")
            return replace(cls(), **value)
        raise ValueError(f"reward_scales must be None, a {cls.__name__} or a mapping of its fields "
                         f"({', '.join(cls.names())}), got {value!r}")


@dataclass(frozen=True)
class GetUpRewardScales(RewardScales):
    """Weights of the get-up reward terms (see :class:`~upright.envs.getup.GetUpEnv`)."""

    head_progress: float = 10.0  #: × rise of the head this step / standing head height
    head_height: float = 0.5  #: × head height / standing head height, capped at 1
    upright: float = 0.5  #: × (1 + cos tilt) / 2
    still: float = 1.0  #: × exp(−|ω|²) while upright with the head high
    torque: float = 0.05  #: −weight × mean squared actuator torque / force limit
    action_rate: float = 0.05  #: −weight × mean squared change of the action
    joint_limits: float = 0.1  #: −weight × fraction of joints within 2 % of a limit
    impact: float = 0.5  #: −weight × (hardest non-foot contact force / weight − 3), when positive
    fall: float = 0.0  #: −weight on each step on which a new fall is counted (off by default)


@dataclass(frozen=True)
class WalkRewardScales(RewardScales):
    """Weights of the walk reward terms (see :class:`~upright.envs.walk.WalkEnv`)."""

    tracking_xy: float = 1.0  #: × exp(−|v_xy − command_xy|² / 0.25²)
    tracking_yaw: float = 0.5  #: × exp(−(ω_z − command_yaw)² / 0.5²)
    upright: float = 0.2  #: × (1 + cos tilt) / 2
    energy: float = 0.001  #: −weight × Σ |τ · q̇| (W)
    foot_slip: float = 0.5  #: −weight × Σ horizontal speed² of the soles that carry weight
    fall: float = 10.0  #: −weight on the step the robot falls (the episode ends)
