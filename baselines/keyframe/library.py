"""Keyframe motion tables: loading the YAML data files, conditions and interpolation.

A motion library (``baselines/data/keyframe_<robot>.yaml``) holds blocks of keyframes and motions
made of blocks; the format is documented at the top of the NAO file. Everything here is
robot-agnostic: joint names come from the file and are resolved against a
:class:`~upright.envs.robots.RobotSpec`. Angles stay in degrees and times in ms here (as in the
reference tables); :mod:`upright.baselines.keyframe.controller` converts at the output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from upright.baselines.common.data import read_yaml
from upright.baselines.common.joint_errors import JointCompensationParams, compensation_gains
from upright.baselines.spline.motion import smoothstep5
from upright.envs.robots import RobotSpec
from upright.envs.schema import Schema, validate

#: Sentinels in joint tables: keep the previous request / unstiffen the joint.
IGNORE, OFF = "ign", "off"
INTERPOLATIONS = ("linear", "sin_min_to_max", "sin_zero_to_max", "quintic")
UNBOUNDED = (-2000.0, 2000.0)


def interpolate(kind: str, ratio: float) -> float:
    """Progress (0..1) of a keyframe at time ``ratio`` (0..1) of its duration.

    ``linear``: r; ``sin_min_to_max``: 0.5 sin(πr − π/2) + 0.5; ``sin_zero_to_max``: sin(πr/2)
    (B-Human's three interpolation types); ``quintic``: 10r³ − 15r⁴ + 6r⁵
    (zero velocity and acceleration at both ends: the Bit-Bots animation splines)."""
    r = min(max(ratio, 0.0), 1.0)
    if kind == "linear":
        return r
    if kind == "sin_min_to_max":
        return 0.5 * np.sin(np.pi * r - np.pi / 2) + 0.5
    if kind == "sin_zero_to_max":
        return float(np.sin(np.pi * r / 2))
    if kind == "quintic":
        return float(smoothstep5(r))
    raise ValueError(f"unknown interpolation {kind!r}; valid: {', '.join(INTERPOLATIONS)}")


@dataclass(frozen=True)
class Condition:
    """``var ∈ [lo, hi]`` (optionally negated), or an ``all``/``any`` combination of conditions."""

    var: str | None = None
    lo: float = 0.0
    hi: float = 0.0
    negate: bool = False
    op: str | None = None  # "all" or "any" for a combination
    parts: tuple[Condition, ...] = ()

    def holds(self, value: Callable[[str], float]) -> bool:
        """Evaluate with ``value(var)`` giving each variable's current value."""
        if self.op == "all":
            return all(p.holds(value) for p in self.parts)
        if self.op == "any":
            return any(p.holds(value) for p in self.parts)
        inside = self.lo <= value(self.var) <= self.hi
        return inside != self.negate

    def distance(self, value: Callable[[str], float]) -> float:
        """How far the (single) variable is from satisfying the condition (0 when it holds)."""
        if self.op is not None:
            return sum(p.distance(value) for p in self.parts)
        if self.holds(value):
            return 0.0
        v = value(self.var)
        if self.negate:
            return min(v - self.lo, self.hi - v)
        return max(self.lo - v, v - self.hi)

    def variables(self) -> set[str]:
        """Names of all variables used."""
        if self.op is not None:
            return set().union(*(p.variables() for p in self.parts))
        return {self.var}


def parse_condition(spec: dict[str, Any]) -> Condition:
    """Build a :class:`Condition` from its YAML form (checked by :class:`ConditionSpec`)."""
    for op in ("all", "any"):
        if op in spec:
            return Condition(op=op, parts=tuple(parse_condition(p) for p in spec[op]))
    var = spec["var"]
    lo, hi = (float(v) for v in spec["range"])
    return Condition(var=var, lo=min(lo, hi), hi=max(lo, hi), negate=bool(spec.get("not", False)))


@dataclass(frozen=True)
class CompensationEntry:
    """One joint-error compensation rule: the error of ``joint`` (or, with
    ``hip_pitch_difference``, measured left − right hip pitch) in ``[a, b]`` degrees is applied to
    the joints of ``apply`` (actuator index → factor p_γ)."""

    joint: int | None
    a: float
    b: float
    predict: bool
    hip_pitch_difference: bool
    apply: tuple[tuple[int, float], ...]


@dataclass(frozen=True)
class Branch:
    """Jump to a block (inserted before the rest of the motion) or to a whole motion.

    ``init_stiffness`` is kept from the reference tables; our engine always applies a started
    block's base stiffness, so it does not change the behaviour."""

    block: str | None
    motion: str | None
    pre: Condition | None
    early: Condition | None
    init_stiffness: bool
    remove_current_block: bool
    max_loops: int


@dataclass(frozen=True)
class Keyframe:
    """One keyframe: target angles (deg; NaN = ``ign``, ``off_mask`` = unstiffened), duration
    (ms), interpolation, balancer phase and annotations (see the data file's header)."""

    phase: str
    duration: float
    interpolation: str
    angles: np.ndarray  # deg, actuator order, NaN = keep the previous request
    off_mask: np.ndarray  # bool, actuator order
    goal_com: np.ndarray  # mm (x, y)
    balance_pitch: tuple[tuple[int, float], ...]
    balance_roll: tuple[tuple[int, float], ...]
    compensation: tuple[CompensationEntry, ...]
    wait: tuple[tuple[Condition, float], ...]  # (condition, max wait ms)
    branches: tuple[Branch, ...]
    breakup_start: np.ndarray | None  # [[pitch lo, hi], [roll lo, hi]] deg
    breakup_end: np.ndarray
    stiffness: dict[int, float]  # actuator index → percent (single-joint changes)
    forbid_wait_break: bool
    set_last_com: bool


@dataclass(frozen=True)
class SelfCompensation:
    """Joints that compensate their own error (eq. 1 with p_γ for γ = j): an applied error (eq. 4,
    deg) within ±``dead_band`` is not compensated, a larger one by what exceeds it."""

    #: The factor p per actuator (actuator order; 0 for the joints that do not compensate).
    gains: np.ndarray
    #: Dead band (deg, as in the file).
    dead_band: float


@dataclass(frozen=True)
class Block:
    """A list of keyframes with base stiffness per limb (percent, -1 = keep)."""

    name: str
    stiffness: np.ndarray  # percent per actuator, NaN = keep
    keyframes: tuple[Keyframe, ...]
    #: The joints that compensate their own error in this block's keyframes, or None.
    self_compensation: SelfCompensation | None = None


@dataclass(frozen=True)
class Motion:
    """Blocks played in order, then optional follow-up motions chosen by condition."""

    name: str
    blocks: tuple[str, ...]
    balance_out: bool
    getup: bool
    then: tuple[tuple[str, Condition], ...]


@dataclass(frozen=True)
class PhaseParams:
    """Balancer parameters of one phase (B-Human ``keyframeMotionParameters.cfg``); arrays [pitch, roll] × [neg, pos]
    or [pitch, roll] × [base, max additional]."""

    com_base: np.ndarray
    max_scaling: np.ndarray
    exponent: np.ndarray
    p: np.ndarray
    d: np.ndarray


@dataclass(frozen=True)
class MotionLibrary:
    """Everything loaded from one robot's data file."""

    robot: str
    engine: dict[str, Any]
    phases: dict[str, PhaseParams]
    blocks: dict[str, Block]
    motions: dict[str, Motion]
    cycle_ms: float
    delay_cycles: int
    retuned: list[Any] = field(default_factory=list)


#: Variables conditions may use (computed by the engine each frame).
CONDITION_VARIABLES = (
    "pitch", "abs_roll", "fluctuation_pitch", "shoulder_pitch_left", "shoulder_pitch_right",
    "shoulder_roll_left", "shoulder_roll_right", "wait_time", "try_counter", "hyp_difference",
    "low_com", "lying_on_arms_front", "another_front_hack",
)

# -- the file's schema (:mod:`upright.envs.schema`): units as in the file, degrees, ms and mm

#: A [low, high] range.
Range = tuple[float, float]
#: A keyframe's angle of one joint (deg), or a sentinel: :data:`IGNORE`, :data:`OFF`.
Angle = float | Literal["ign", "off"]


class ConditionSpec(Schema):
    """A condition: ``var`` in ``range`` (``not``: outside it), or ``all`` / ``any`` of conditions."""

    var: Literal[CONDITION_VARIABLES] | None = None  # type: ignore[valid-type]
    range: Range | None = None
    negate: bool = Field(False, alias="not")
    all: list[ConditionSpec] | None = None
    any: list[ConditionSpec] | None = None

    @model_validator(mode="after")
    def _one_form(self) -> ConditionSpec:
        forms = [self.all is not None, self.any is not None, self.var is not None or self.range is not None]
        if sum(forms) != 1 or (forms[2] and (self.var is None or self.range is None)):
            raise ValueError("a condition is {var, range} (with not), or {all: [...]}, or {any: [...]}")
        return self


class CompensationSpec(Schema):
    """A joint-error compensation rule (:class:`CompensationEntry`): ``range`` [a, b] in deg."""

    joint: str | None = None
    range: Range
    predict: bool = False
    hip_pitch_difference: bool = False
    apply: dict[str, float]


class WaitSpec(Schema):
    """Wait at the keyframe's end until ``condition`` holds, at most ``max_ms`` ms."""

    condition: ConditionSpec
    max_ms: float = Field(ge=0)


class BranchSpec(Schema):
    """A :class:`Branch`: to a ``block`` or a ``motion``, ``pre`` its start or ``early`` during it."""

    block: str | None = None
    motion: str | None = None
    pre: ConditionSpec | None = None
    early: ConditionSpec | None = None
    init_stiffness: bool = False
    remove_current_block: bool = False
    max_loops: int = Field(1, ge=1)


class TorsoRanges(Schema):
    """Torso pitch and roll ranges (deg)."""

    pitch: Range = UNBOUNDED
    roll: Range = UNBOUNDED


class KeyframeSpec(Schema):
    """One keyframe: the limbs' angles (deg), its ``duration`` (ms) and what acts during it."""

    phase: str = "UnknownPhase"
    duration: float = Field(gt=0)
    interpolation: Literal[INTERPOLATIONS] | None = None  # type: ignore[valid-type]
    head: list[Angle]
    larm: list[Angle]
    rarm: list[Angle]
    lleg: list[Angle]
    rleg: list[Angle]
    #: mm.
    goal_com: Range = (0.0, 0.0)
    balance_pitch: dict[str, float] | None = None
    balance_roll: dict[str, float] | None = None
    compensation: list[CompensationSpec] = []
    wait: list[WaitSpec] = []
    branches: list[BranchSpec] = []
    breakup_start: TorsoRanges | None = None
    breakup_end: TorsoRanges = TorsoRanges()
    #: Percent by joint.
    stiffness: dict[str, float] | None = None
    forbid_wait_break: bool = False
    set_last_com: bool = False


class SelfCompensationSpec(Schema):
    """A block's own joint-error compensation (:class:`SelfCompensation`; ``dead_band`` deg)."""

    gain: float
    joints: list[str]
    dead_band: float = 0.0


class BlockSpec(Schema):
    """A block of keyframes: the base stiffness per limb (percent; below 0: kept) and its default
    interpolation."""

    stiffness: tuple[float, float, float, float, float]
    interpolation: Literal[INTERPOLATIONS] = "linear"  # type: ignore[valid-type]
    self_compensation: SelfCompensationSpec | None = None
    keyframes: list[KeyframeSpec] = Field(min_length=1)


class FollowUp(Schema):
    """A motion that follows when its ``pre`` condition holds."""

    motion: str
    pre: ConditionSpec


class MotionSpec(Schema):
    """A motion: blocks in order, then the first follow-up whose condition holds."""

    blocks: list[str]
    balance_out: bool = False
    getup: bool = False
    then: list[FollowUp] = []


class PhaseSpec(Schema):
    """A balancer phase (:class:`PhaseParams`): [pitch, roll] × two values each."""

    com_base: tuple[Range, Range]
    max_scaling: tuple[Range, Range]
    exponent: tuple[Range, Range]
    p: tuple[Range, Range]
    d: tuple[Range, Range]


class SupportPolygon(Schema):
    """The sole's support polygon (mm, sole frame)."""

    front: float
    back: float
    side: float


class Oscillation(Schema):
    """The ankle-roll oscillation: period (ms), amplitude and hip error range (deg)."""

    period_ms: float = Field(gt=0)
    amplitude: float
    hyp_error: Range


class BalanceOut(Schema):
    """Balancing out after a get-up: at most ``max_ms`` ms, until the pitch (deg) settles."""

    max_ms: float = Field(ge=0)
    max_fluctuation: float
    pitch: Range
    max_d: float


class BrokenJoint(Schema):
    """A leg joint stuck this far off (deg) for this long (s) is broken."""

    error: float
    seconds: float


class EngineSpec(Schema):
    """The engine's settings (B-Human's ``keyframeMotionEngine.cfg``): angles deg, times ms."""

    #: The motions that ``decideAction`` starts: ``upright`` and ``lying``.
    decide: dict[Literal["upright", "lying"], str]
    max_tries: int = Field(ge=1)
    safe_upright: TorsoRanges
    finished_max_pitch: float
    breakup_stiffness: float
    unstiff_wait_ms: float
    breakup_ms: float
    recover_stretch_ms: float
    default_max_wait_ms: float
    wait_break_limit: int
    support_polygon: SupportPolygon
    oscillation: Oscillation
    balance_out: BalanceOut
    broken_joint: BrokenJoint
    #: Ours: the motion that rolls a robot from its back onto its front, which ``recoverGeneric``
    #: follows with for the tries after a failed back stand-up (``KeyframeParams.roll_over`` turns
    #: it off); None where the library has none.
    roll_over: str | None = None


class LimbJoints(Schema):
    """The joints of each limb, in the order of a keyframe's values."""

    head: list[str]
    larm: list[str]
    rarm: list[str]
    lleg: list[str]
    rleg: list[str]


class LibraryFile(Schema):
    """A motion library file, ``baselines/data/keyframe_<robot>.yaml`` (its head comment describes
    every field): the control cycle (ms) and delay (cycles) it was made for, default: the robot's."""

    cycle_ms: float | None = Field(None, gt=0)
    delay_cycles: int | None = Field(None, ge=0)
    limb_joints: LimbJoints
    engine: EngineSpec
    phases: dict[str, PhaseSpec]
    motions: dict[str, MotionSpec]
    blocks: dict[str, BlockSpec]
    #: Notes of what was retuned for our model.
    retuned: list[Any] = []


def _index(robot: RobotSpec, joint: str) -> int | None:
    """Actuator index of ``joint``; None for a coupled joint without actuator."""
    if joint in robot.coupled_joints:
        return None
    if joint not in robot.actuator_names:
        raise ValueError(f"unknown joint {joint!r} for robot {robot.name!r}")
    return robot.actuator_names.index(joint)


def _joint_factors(robot: RobotSpec, spec: dict[str, float] | None) -> tuple[tuple[int, float], ...]:
    out = []
    for joint, factor in (spec or {}).items():
        i = _index(robot, joint)
        if i is not None:
            out.append((i, float(factor)))
    return tuple(out)


def _ranges(spec: dict[str, Any] | None) -> np.ndarray | None:
    if spec is None:
        return None
    return np.array([[float(v) for v in spec.get("pitch", UNBOUNDED)], [float(v) for v in spec.get("roll", UNBOUNDED)]])


def load_library(robot: RobotSpec, path: str | Path | None = None) -> MotionLibrary:
    """Load and validate the motion library of ``robot`` (default ``data/keyframe_<robot>.yaml``):
    its schema :class:`LibraryFile`, then the names it refers to (joints of ``robot``, blocks,
    motions, phases) and each limb's count of values; ValueError naming the file and what is wrong."""
    source = Path(path) if path is not None else f"keyframe_{robot.name}.yaml"
    data = read_yaml(source)
    validate(LibraryFile, data, str(source) if path is not None else f"baselines/data/{source}")
    limbs: dict[str, list[str]] = data["limb_joints"]
    nu = len(robot.actuator_names)
    limb_index = {limb: [_index(robot, j) for j in joints] for limb, joints in limbs.items()}

    def keyframe(spec: dict[str, Any], default_interp: str, block: str) -> Keyframe:
        angles = np.full(nu, np.nan)
        off = np.zeros(nu, dtype=bool)
        for limb, idx in limb_index.items():
            values = spec[limb]
            if len(values) != len(idx):
                raise ValueError(f"block {block!r}: limb {limb!r} needs {len(idx)} values, got {values!r}")
            for i, v in zip(idx, values):
                if i is None:
                    continue
                if v == OFF:
                    off[i] = True
                elif v != IGNORE:
                    angles[i] = float(v)
        interp = spec.get("interpolation", default_interp)
        comp = []
        for c in spec.get("compensation", ()):
            a, b = (float(v) for v in c["range"])
            hpd = bool(c.get("hip_pitch_difference", False))
            comp.append(CompensationEntry(None if hpd else _index(robot, c["joint"]), a, b,
                                          bool(c.get("predict", False)), hpd, _joint_factors(robot, c["apply"])))
        wait = tuple((parse_condition(w["condition"]), float(w["max_ms"]))
                     for w in spec.get("wait", ()))
        branches = tuple(
            Branch(b.get("block"), b.get("motion"),
                   parse_condition(b["pre"]) if "pre" in b else None,
                   parse_condition(b["early"]) if "early" in b else None,
                   bool(b.get("init_stiffness", False)), bool(b.get("remove_current_block", False)),
                   int(b.get("max_loops", 1)))
            for b in spec.get("branches", ()))
        duration = float(spec["duration"])
        return Keyframe(
            phase=spec.get("phase", "UnknownPhase"), duration=duration, interpolation=interp,
            angles=angles, off_mask=off, goal_com=np.array(spec.get("goal_com", [0.0, 0.0]), dtype=float),
            balance_pitch=_joint_factors(robot, spec.get("balance_pitch")),
            balance_roll=_joint_factors(robot, spec.get("balance_roll")),
            compensation=tuple(comp), wait=wait, branches=branches,
            breakup_start=_ranges(spec.get("breakup_start")),
            breakup_end=_ranges(spec.get("breakup_end", {})),
            stiffness={i: float(v) for i, v in _joint_factors(robot, spec.get("stiffness"))},
            forbid_wait_break=bool(spec.get("forbid_wait_break", False)),
            set_last_com=bool(spec.get("set_last_com", False)),
        )

    blocks = {}
    for name, spec in data["blocks"].items():
        stiff = np.full(nu, np.nan)
        for limb, percent in zip(limbs, spec["stiffness"]):
            for i in limb_index[limb]:
                if i is not None and percent >= 0:
                    stiff[i] = float(percent)
        interp = spec.get("interpolation", "linear")
        own = spec.get("self_compensation")
        if own is not None:
            gains = compensation_gains(JointCompensationParams(float(own["gain"]), tuple(own["joints"])), robot)
            own = SelfCompensation(gains, float(own.get("dead_band", 0.0)))
        blocks[name] = Block(name, stiff, tuple(keyframe(k, interp, name) for k in spec["keyframes"]), own)
    motions = {}
    for name, spec in data["motions"].items():
        for b in spec["blocks"]:
            if b not in blocks:
                raise ValueError(f"motion {name!r} names unknown block {b!r}")
        then = tuple((t["motion"], parse_condition(t["pre"])) for t in spec.get("then", ()))
        motions[name] = Motion(name, tuple(spec["blocks"]), bool(spec.get("balance_out", False)),
                               bool(spec.get("getup", False)), then)
    for motion in motions.values():
        for follow_up, _ in motion.then:
            if follow_up not in motions:
                raise ValueError(f"motion {motion.name!r}: follow-up to unknown motion {follow_up!r}")
    roll_over = data["engine"].get("roll_over")
    if roll_over is not None and roll_over not in motions:
        raise ValueError(f"engine.roll_over names unknown motion {roll_over!r}")
    for block in blocks.values():
        for kf in block.keyframes:
            for br in kf.branches:
                if (br.block is not None and br.block not in blocks) or (br.motion is not None and br.motion not in motions):
                    raise ValueError(f"block {block.name!r}: branch to unknown {br.block or br.motion!r}")
    phases = {name: PhaseParams(*(np.array(p[k], dtype=float) for k in ("com_base", "max_scaling", "exponent", "p", "d")))
              for name, p in data.get("phases", {}).items()}
    for block in blocks.values():
        for kf in block.keyframes:
            if kf.phase not in phases:
                raise ValueError(f"block {block.name!r}: unknown phase {kf.phase!r}")
    return MotionLibrary(robot.name, data.get("engine", {}), phases, blocks, motions,
                         float(data.get("cycle_ms", robot.control_period * 1000)),
                         int(data.get("delay_cycles", robot.delay_cycles)), data.get("retuned", []))
