"""Hand-designed residuals: a constant joint-target offset plus PD feedback on the IMU's fused pitch
or roll, added to a prior's targets (``feedback:NAME`` for ``policies/feedback/NAME.yml``, or any
such YAML file by its path).

They are robot-side: they read only ``info["sensors"]`` and the prior's own ``info["prior_status"]``.
They serve as baselines of their own (``upright eval --policy feedback:NAME``) and as teachers a
learned residual starts from (``upright train --set hp.imitate=feedback:NAME``).

File format (angles in rad, rates in rad/s, by actuator name; the schema :class:`FeedbackSpec`, an
unknown key an error naming it)::

    env_id: upright/WolfgangGetUp-v0
    prior: spline
    offsets: {LKnee: 0.225, RKnee: -0.225}     # constant residual (rad)
    feedback:                                  # each term adds weight · (p · (angle − reference) + d · rate)
      - angle: pitch                           # fused pitch (rate: gyro y) or fused roll (rate: gyro x)
        reference: 0.2                         # rad
        p: 0.5                                 # rad of residual per rad of angle
        d: 0.05                                # rad of residual per rad/s
        actuators: {LAnklePitch: 1.0, RAnklePitch: -1.0}
        prior_status: [finished]               # only while the prior reports one of these (omit: always)
        band: 0.5                              # only while |angle − reference| <= band (rad; omit: always)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from pydantic import Field

from upright.policies.base import Policy
from upright.envs.schema import Schema, load_config

FEEDBACK_PREFIX = "feedback:"
#: Fused angle name → (index in ``Sensors.fused``, index of its rate in ``Sensors.gyro``).
ANGLES = {"pitch": (0, 1), "roll": (1, 0)}


class FeedbackTerm(Schema):
    """``weight · (p · (angle − reference) + d · rate)`` (rad) added to each named actuator's
    residual, while the prior's status is one of ``prior_status`` (empty: any) and the angle is
    within ``band`` (rad) of the reference (None: at any angle)."""

    #: The fused angle (its rate: the gyro about the same axis), a key of :data:`ANGLES`.
    angle: Literal["pitch", "roll"]
    #: rad.
    reference: float
    #: rad of residual per rad of angle error.
    p: float
    #: rad of residual per rad/s of angular rate.
    d: float
    #: The weight of the term in each actuator's residual, by actuator name.
    actuators: dict[str, float]
    prior_status: tuple[str, ...] = ()
    band: float | None = Field(None, ge=0)


class FeedbackSpec(Schema):
    """A hand-designed residual, the schema of its file: the environment and prior it is meant for,
    constant ``offsets`` (rad by actuator name) and ``feedback`` terms."""

    env_id: str
    prior: str
    offsets: dict[str, float] = {}
    feedback: tuple[FeedbackTerm, ...] = ()


def feedback_dir() -> Path:
    """The folder of the shipped hand-designed residuals (``policies/feedback/``)."""
    return Path(__file__).parent / "feedback"


def feedback_names() -> tuple[str, ...]:
    """The shipped hand-designed residuals, as ``feedback:NAME``, sorted."""
    return tuple(sorted(FEEDBACK_PREFIX + p.stem for p in feedback_dir().glob("*.yml")))


def is_feedback_policy(name: str) -> bool:
    """Whether ``name`` is ``feedback:NAME`` or the path of a ``.yml`` file."""
    return name.startswith(FEEDBACK_PREFIX) or (name.endswith((".yml", ".yaml")) and Path(name).is_file())


def load_feedback_spec(name: str) -> FeedbackSpec:
    """The :class:`FeedbackSpec` of ``feedback:NAME`` or of a YAML file; ValueError naming an
    unknown name, or the file and its first unknown key or malformed entry."""
    if name.startswith(FEEDBACK_PREFIX):
        path = feedback_dir() / f"{name[len(FEEDBACK_PREFIX):]}.yml"
        if not path.is_file():
            raise ValueError(f"unknown hand-designed residual {name!r}; shipped: {', '.join(feedback_names()) or 'none'}")
    else:
        path = Path(name)
    return load_config(FeedbackSpec, path, "hand-designed residual")


def feedback_policy(name: str) -> FeedbackResidualPolicy:
    """The hand-designed residual ``feedback:NAME`` or of a YAML file as a policy named ``name``."""
    return FeedbackResidualPolicy(load_feedback_spec(name), name)


class FeedbackResidualPolicy(Policy):
    """Acts a :class:`FeedbackSpec` as a residual action, clipped to [−1, 1] (the residual range).
    ``reset`` raises ValueError for an environment without a prior or an actuator it lacks."""

    def __init__(self, spec: FeedbackSpec, name: str) -> None:
        self.spec = spec
        self.name = name
        self._limits = np.ones(0)
        self._offsets = np.zeros(0)
        self._terms: list[tuple[FeedbackTerm, np.ndarray]] = []

    def reset(self, env: gym.Env, seed: int | None) -> None:
        base = env.unwrapped
        if getattr(base, "prior", None) is None:
            raise ValueError(f"{self.name}: a hand-designed residual needs an environment with a prior "
                             f"(it was made for prior {self.spec.prior!r})")
        residual = base.residual
        if residual.kind == "steps":
            raise ValueError(f"{self.name}: a hand-designed residual moves joint targets; this environment's "
                             f"residual moves steps (residual_on='steps')")
        if residual.kind == "tempo":
            raise ValueError(f"{self.name}: a hand-designed residual moves joint targets only; this environment's "
                             f"action has a tempo entry (tempo_range={residual.tempo_range!r})")
        names = list(base.robot.actuator_names)
        self._limits = np.asarray(residual.limits, dtype=float)
        self._offsets = self._vector(self.spec.offsets, names)
        self._terms = [(term, self._vector(term.actuators, names)) for term in self.spec.feedback]

    def _vector(self, by_name: Mapping[str, float], names: list[str]) -> np.ndarray:
        vector = np.zeros(len(names))
        for name, value in by_name.items():
            if name not in names:
                raise ValueError(f"{self.name}: unknown actuator {name!r}; valid: {', '.join(names)}")
            vector[names.index(name)] = value
        return vector

    def residual(self, info: Mapping[str, Any]) -> np.ndarray:
        """The residual (rad, actuator order) for a step's ``info``: the offsets alone when it holds
        no sensors."""
        residual = self._offsets.copy()
        sensors = info.get("sensors")
        if sensors is None:
            return residual
        status = info.get("prior_status", "")
        for term, weights in self._terms:
            if term.prior_status and status not in term.prior_status:
                continue
            angle, rate = ANGLES[term.angle]
            error = float(sensors.fused[angle]) - term.reference
            if term.band is None or abs(error) <= term.band:
                residual += weights * (term.p * error + term.d * float(sensors.gyro[rate]))
        return residual

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        return np.clip(self.residual(info) / self._limits, -1.0, 1.0).astype(np.float32)


__all__ = ["FEEDBACK_PREFIX", "FeedbackResidualPolicy", "FeedbackSpec", "FeedbackTerm", "feedback_names",
           "feedback_policy", "is_feedback_policy", "load_feedback_spec"]
