"""The schemas of the protocols' data files (``eval/experiments/NAME.yaml``, read by
:func:`~upright.eval.experiments.protocol_data`): what each protocol's cells, episodes and seeds
are, so that a misspelt key or a value of the wrong type stops ``upright experiment NAME`` with one
line naming the file and the key (:mod:`upright.envs.schema`) instead of a cell silently left out.

Units as in the files: m, s, m/s and rad/s, degrees only where a key says ``_deg``; conditions
changes are :class:`~upright.envs.conditions.Conditions` fields, checked where they are applied.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from upright.envs.schema import Schema

#: A count of episodes, trials or seeds.
Count = Annotated[int, Field(ge=1)]
#: Conditions changes (``Conditions`` field names and values) or environment keyword arguments.
Changes = dict[str, Any]


class Episodes(Schema):
    """A protocol's episodes per cell (``--episodes N`` overrides it)."""

    episodes: Count


class HeldOut(Episodes):
    """Episodes on seeds from ``seed`` (a protocol's own seed range: held-out or selection); all
    of ``selection.yaml``."""

    seed: int = Field(ge=0)


# -- generalisation.yaml


class Perturbation(Schema):
    """One cell of the generalisation protocol: another preset, or fields scaled or shifted."""

    preset: str | None = None
    scale: dict[str, float] | None = None
    add: dict[str, float] | None = None


class Generalisation(Episodes):
    """``generalisation.yaml``: the shipped residuals and their prior under each perturbation."""

    start: str
    policies: list[str]
    perturbations: dict[str, Perturbation]


# -- keyframe.yaml


class KeyframeAblation(Episodes):
    """The keyframe get-up's ablation on a worn hip: closing windows (s) per start, the lag (s),
    stuck duration (s) and strength ranges drawn per episode, the weakened joints."""

    starts: list[str]
    closing: dict[str, tuple[float, float]]
    worn_joint: str
    hyp_lag: tuple[float, float]
    stuck_duration: tuple[float, float]
    weak_joints: list[str]
    strength: tuple[float, float]
    check_after_closing: float


class Variants(Episodes):
    """One factor of a conditions preset removed per cell (``variants``: cell name to changes)."""

    preset: str
    variants: dict[str, Changes]


class GetUpVariants(Variants):
    """Variants of get-ups from each of ``starts``."""

    starts: list[str]


class WalkVariants(Variants):
    """Variants of walks of ``seconds`` s."""

    seconds: float = Field(gt=0)


class PerTry(Episodes):
    """Per-try success under each preset beside the paper's (tries, success %) per event."""

    presets: list[str]
    paper: dict[str, tuple[int, float]]


class Keyframe(Schema):
    """``keyframe.yaml``: the keyframe get-up's ablation, conditions and per-try protocols."""

    robot: str
    ablation: KeyframeAblation
    conditions: GetUpVariants
    per_try: PerTry


# -- model_variation.yaml and model_variants.yaml


class VariationRow(Schema):
    """A policy on an environment."""

    env: str
    policy: str


class ModelVariation(HeldOut):
    """``model_variation.yaml``: policies (rows) on models changed by one factor of ``base`` (cells)."""

    base: str
    rows: list[VariationRow]
    cells: dict[str, Changes]


class ModelVariants(HeldOut):
    """``model_variants.yaml``: the baselines and a shipped policy per robot on its variant models."""

    base: str
    #: The shipped policy run beside the baselines, by robot name.
    shipped: dict[str, str]


# -- obstacle_course.yaml


class CourseTable(Schema):
    """One table of the course: its speeds (m/s) and walker configurations."""

    speeds: list[float]
    configurations: list[str]


class ObstacleCourse(Schema):
    """``obstacle_course.yaml``: the obstacle course: its walker, conditions and steering (gain, largest turn rate in rad/s,
    look-ahead in m), the time allowed (``time_factor`` times the nominal, plus ``extra_seconds``)."""

    robot: str
    controller: str
    conditions: Changes
    params: Changes = {}
    time_factor: float = Field(gt=0)
    extra_seconds: float = Field(ge=0)
    steer_gain: float
    max_steer: float = Field(gt=0)
    lookahead: float = Field(gt=0)
    residuals: list[str] = []
    tables: dict[int, CourseTable]


# -- residuals.yaml, selection.yaml


class ResidualCells(Schema):
    """A shipped residual's cells."""

    #: Cell name to environment keyword arguments.
    cells: dict[str, Changes]


class Residuals(HeldOut):
    """``residuals.yaml``: each shipped residual's cells on the held-out seeds."""

    policies: dict[str, ResidualCells]


# -- spline.yaml


class StandUpGroup(Schema):
    """Policies run on one robot under one conditions preset."""

    robot: str
    conditions: str
    policies: list[str]


class StandUp(Episodes):
    """The spline stand-up's table: groups of policies, and the reference's figures as text."""

    starts: list[str]
    groups: dict[str, StandUpGroup]
    reference: str


class SplineTuning(Episodes):
    """The spline's parameter search: ``search`` per sequence, parameter to [low, high] (the
    parameter's unit), ``slack`` s after the nominal motion's end."""

    trials: Count
    slack: float = Field(ge=0)
    max_episode_seconds: float = Field(gt=0)
    fixed: Changes
    start: dict[str, str]
    search: dict[str, dict[str, tuple[float, float]]]


class Spline(Schema):
    """``spline.yaml``: the spline stand-up's table and its parameter search."""

    standup: StandUp
    tune: SplineTuning


# -- turf.yaml


class TurfCell(Schema):
    """A policy on one robot under one conditions preset."""

    robot: str
    policy: str
    conditions: str


class TurfGetUp(Episodes):
    """Get-ups from ``start`` in each cell."""

    start: str
    cells: dict[str, TurfCell]


class TurfWalk(Episodes):
    """Walks of ``seconds`` s at ``command`` in each cell."""

    seconds: float = Field(gt=0)
    #: vx (m/s), vy (m/s), wz (rad/s).
    command: tuple[float, float, float]
    cells: dict[str, TurfCell]


class TurfSurface(Schema):
    """The turf surface measured on ``seeds`` heightfields: half size (m), foot size (m)."""

    seeds: Count
    half_size: float = Field(gt=0)
    foot: tuple[float, float]


class Turf(Schema):
    """``turf.yaml``: get-ups and walks on turf, and the turf surface itself."""

    #: Turf cell sizes (m).
    turf_cells: list[float]
    getup: TurfGetUp
    walk: TurfWalk
    surface: TurfSurface


# -- walk.yaml, walk_error.yaml


class WalkDefaults(Schema):
    """What the walk protocols use when ``--set`` does not say otherwise: episode lengths (s),
    the push ladder's step and top (N·s)."""

    policy: str
    robot: str
    conditions: str
    seconds: float = Field(gt=0)
    push_seconds: float = Field(gt=0)
    impulse_step: float = Field(gt=0)
    max_impulse: float = Field(gt=0)


class SpeedLadder(Schema):
    """A speed ladder along one command axis: ``speeds`` (m/s) or ``speeds_deg`` (deg/s), lowest first."""

    axis: Literal["vx", "vy", "wz"]
    sign: Literal[1, -1]
    speeds: list[float] | None = None
    speeds_deg: list[float] | None = None

    @model_validator(mode="after")
    def _one_list(self) -> SpeedLadder:
        if (self.speeds is None) == (self.speeds_deg is None):
            raise ValueError("a ladder gives either speeds (m/s) or speeds_deg (deg/s)")
        return self


class WalkPaper(Schema):
    """The LIPM paper's figures: per robot the top speeds (m/s; ``turning_deg`` deg/s), and the
    observer's lateral error (mm)."""

    nao: dict[str, float] = {}
    wolfgang: dict[str, float] = {}
    observer_lateral_error_mm: float


class WalkPush(Schema):
    """Pushes at ``times`` (s after reset) for ``duration`` s along ``direction`` (x, y)."""

    times: list[float]
    duration: float = Field(gt=0)
    direction: tuple[float, float]


class WalkTracking(Schema):
    """Commands (vx m/s, vy m/s, wz rad/s) and the pass bounds per axis (same units)."""

    commands: list[tuple[float, float, float]]
    relative: float = Field(ge=0)
    floor: tuple[float, float, float]
    drift: tuple[float, float, float]


class SpeedTable(Schema):
    """The walk-speed table's policies and robots."""

    policies: list[str]
    robots: list[str]
    #: Per walk and robot, the parameters that lift the walk's speed caps.
    params: dict[str, dict[str, Changes]]


class Walk(Schema):
    """``walk.yaml``: the walk protocols' cells."""

    defaults: WalkDefaults
    #: Per robot, the ladders by direction.
    ladders: dict[str, dict[str, SpeedLadder]]
    paper: WalkPaper
    push: WalkPush
    tracking: WalkTracking
    speed_table: SpeedTable
    conditions: WalkVariants


class WalkError(Episodes):
    """``walk_error.yaml``: the walk-error measure: the first ``skip_seconds`` s left out, windows of ``long_seconds`` s."""

    skip_seconds: float = Field(ge=0)
    long_seconds: float = Field(gt=0)


#: The schema of each protocol's data file, by file stem (the protocol module's name).
PROTOCOL_SCHEMAS: dict[str, type[Schema]] = {
    "generalisation": Generalisation, "keyframe": Keyframe, "model_variation": ModelVariation,
    "model_variants": ModelVariants, "obstacle_course": ObstacleCourse, "residuals": Residuals,
    "selection": HeldOut, "spline": Spline, "turf": Turf, "walk": Walk, "walk_error": WalkError,
}


__all__ = ["PROTOCOL_SCHEMAS"]
