"""The keyframe stand-up's protocols (NAO; Reichenberg & Laue 2025), cells in ``keyframe.yaml``.

``keyframe-ablation`` — the paper's claim as an ablation: joint-error compensation on versus off
with worn joints (section 3.2: a hip-yaw-pitch that lags or gets stuck by more than 20° during the
leg-closing phase, plus weak leg motors), drawn per episode from its seed by
:class:`WornHipConditions`. Both arms see exactly the same episodes (same seeds → same wear). To
check the "20–30°", the peak hip-yaw-pitch error the controller measures (request 3 cycles ago −
measured) in the leg-closing phase is recorded (:class:`PeakJointError`) for the first ``check``
episodes of the compensation-off arm. Flat floor, otherwise ``lab``.

    upright experiment keyframe-ablation --episodes 100 --out results/keyframe_ablation

``keyframe-conditions`` — which part of the ``competition`` preset defeats the stand-up: the
``keyframe`` policy under ``competition`` with one factor removed at a time (the variants), and the
``hold`` policy from ``standing`` under the same pushes (does a standing NAO survive them at all?).

    upright experiment keyframe-conditions --episodes 20 --out results/keyframe_conditions

``keyframe-per-try`` — the paper's own measure, success per try (a try: one rise from lying to
standing or to a new fall, retries counted), of ``keyframe`` from random starts under each preset
of ``presets``, beside B-Human's real robots at four competitions (paper Table 2, with Wilson
intervals from its counts), and which of those intervals each simulated rate lies in. The ``worn``
preset is the wear level calibrated to lie in the RoboCup 2024 interval (the paper's worn robots).

    upright experiment keyframe-per-try --workers 2 --docs
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import gymnasium as gym
import numpy as np

from upright.envs.conditions import PRESETS, Conditions, SampledConditions, Wear
from upright.envs.registration import env_id
from upright.eval.experiments import ExperimentContext, factor_removed, protocol_data, register_experiment
from upright.eval.runner import Observer
from upright.eval.tables import MISSING, Column, Table, mean_min_max, number, rate, text, wilson_interval
from upright.policies.base import Policy

DATA = protocol_data(__name__)
ABLATION = DATA["ablation"]
CONDITIONS = DATA["conditions"]
PER_TRY = DATA["per_try"]


def _pair(values: list[float]) -> tuple[float, float]:
    low, high = values
    return float(low), float(high)


@dataclass(frozen=True)
class WornHipConditions(Conditions):
    """``lab`` plus a worn hip-yaw-pitch and weak leg motors, drawn per episode (defaults from
    ``keyframe.yaml``): ``worn_joint`` with probability 1/2 gets a first-order lag with time
    constant drawn from ``hyp_lag`` (s), else a stuck window starting uniformly in ``closing`` (s
    after the start) lasting ``stuck_duration`` (s); every joint of ``weak_joints`` gets a strength
    factor drawn from ``strength``."""

    closing: tuple[float, float] = _pair(ABLATION["closing"]["supine"])
    worn_joint: str = ABLATION["worn_joint"]
    hyp_lag: tuple[float, float] = _pair(ABLATION["hyp_lag"])
    stuck_duration: tuple[float, float] = _pair(ABLATION["stuck_duration"])
    weak_joints: tuple[str, ...] = tuple(ABLATION["weak_joints"])
    strength: tuple[float, float] = _pair(ABLATION["strength"])

    def sample(self, joint_names: tuple[str, ...], rng: np.random.Generator,
               servo_classes: tuple[str, ...] | None = None, robot: str = "") -> SampledConditions:
        """Draw this episode's wear (see the class docstring); everything else as ``lab``."""
        base = super().sample(joint_names, rng, servo_classes, robot)
        wear = dict(zip(joint_names, base.wear))
        if rng.random() < 0.5:
            wear[self.worn_joint] = Wear(lag=float(rng.uniform(*self.hyp_lag)))
        else:
            start = float(rng.uniform(*self.closing))
            wear[self.worn_joint] = Wear(stuck=((start, float(rng.uniform(*self.stuck_duration))),))
        for joint in self.weak_joints:
            wear[joint] = Wear(strength=float(rng.uniform(*self.strength)))
        return replace(base, wear=tuple(wear[j] for j in joint_names))


def worn_hip(start: str) -> WornHipConditions:
    """The ablation's worn hip-yaw-pitch for ``start`` (``prone`` or ``supine``): the stuck window
    opens while that start's get-up closes the hips (``closing`` in ``keyframe.yaml``, s)."""
    return WornHipConditions(closing=_pair(ABLATION["closing"][start]))


class PeakJointError(Observer):
    """Peak |error| of ``joint`` as the keyframe controller measures it (its raw joint error,
    request ``delay`` cycles ago − measured, deg) while the controller's clock is within
    ``window`` (s); adds ``peak_<joint>_error_deg`` to the records of the first ``episodes``
    episodes."""

    def __init__(self, joint: str, window: tuple[float, float], episodes: int) -> None:
        self.joint = joint
        self.window = window
        self.episodes = episodes
        self.peak = 0.0

    def on_reset(self, env: gym.Env, policy: Policy, info: dict[str, Any]) -> None:
        self.peak = 0.0

    def on_step(self, env: gym.Env, policy: Policy, action: np.ndarray, info: dict[str, Any]) -> None:
        controller = policy.controller
        if self.window[0] <= controller.sensors.time <= self.window[1]:
            index = controller.robot.actuator_names.index(self.joint)
            self.peak = max(self.peak, abs(float(controller.errors.raw[index])))

    def on_episode_end(self, env: gym.Env, policy: Policy, record: dict[str, Any]) -> dict[str, Any]:
        return {f"peak_{self.joint}_error_deg": self.peak} if record["episode"] < self.episodes else {}


@register_experiment("keyframe-ablation", "keyframe stand-up: joint-error compensation on/off with a worn hip (NAO)",
                     options={"starts": tuple(ABLATION["starts"]), "arms": ("on", "off"), "check": 20})
def keyframe_ablation(ctx: ExperimentContext) -> list[Table]:
    """Both compensation arms (``arms``) for every start of ``starts``; the peak hip-yaw-pitch error
    of the first ``check`` compensation-off episodes (0: none). One results folder per cell
    (``START_ARM``)."""
    episodes = ctx.episodes_or(ABLATION["episodes"])
    check = min(int(ctx.options["check"]), episodes)
    env = env_id(DATA["robot"], "getup")
    joint = ABLATION["worn_joint"]
    starts, arms = ctx.option_names("starts", ABLATION["closing"]), ctx.option_names("arms", ("on", "off"))
    ctx.plan(len(starts) * len(arms) * episodes)
    rows, checks = [], []
    for start in starts:
        conditions = worn_hip(start)
        for arm in arms:
            policy = ctx.policy("keyframe", params={"compensation": arm == "on"}, label=f"keyframe-compensation-{arm}")
            checked = arm == "off" and check > 0
            window = (conditions.closing[0], conditions.closing[1] + ABLATION["check_after_closing"])
            result = ctx.run_cell(f"{start}_{arm}", env, policy, {"start": start, "conditions": conditions}, episodes,
                                  observers=[PeakJointError(joint, window, check)] if checked else ())
            rows.append({"start": start, "compensation": arm, "success": (result["successes"], result["episodes"]),
                         "time_to_stand": result["time_to_stand"]})
            if checked:
                peaks = [r[f"peak_{joint}_error_deg"] for r in result["episodes_data"][:check]]
                checks.append({"start": start, "episodes": len(peaks), "min": min(peaks),
                               "median": float(np.median(peaks)), "max": max(peaks), "values": peaks})
    tables = [Table("Keyframe stand-up with a worn hip: compensation on versus off",
                    [Column("start", "start"), Column("compensation", "compensation"), Column("success", "success", rate),
                     Column("time to stand (s) mean / min / max", "time_to_stand", mean_min_max())], rows,
                    notes=f"{episodes} episodes per cell, seeds {ctx.seed}..{ctx.seed + episodes - 1}, the same worn "
                          "joints in both arms.")]
    if checks:
        deg = number(1, "°")
        tables.append(Table(f"Peak {joint} error in the leg-closing phase (compensation off)",
                            [Column("start", "start"), Column("episodes", "episodes"), Column("min", "min", deg),
                             Column("median", "median", deg), Column("max", "max", deg)], checks,
                            notes="The error the controller measures: its request 3 cycles ago minus the measured angle."))
    return tables


@register_experiment("keyframe-conditions", "keyframe stand-up under competition with one factor removed at a time (NAO)",
                     options={"variants": tuple(CONDITIONS["variants"]), "starts": tuple(CONDITIONS["starts"])})
def keyframe_conditions(ctx: ExperimentContext) -> list[Table]:
    """For every variant of the ``competition`` preset: ``keyframe`` from every start of
    ``starts`` and ``hold`` from ``standing``. One results folder per cell
    (``VARIANT_POLICY_START``)."""
    episodes = ctx.episodes_or(CONDITIONS["episodes"])
    env = env_id(DATA["robot"], "getup")
    rows = []
    variants = ctx.option_names("variants", CONDITIONS["variants"])
    cells = [("keyframe", start) for start in ctx.option_names("starts")] + [("hold", "standing")]
    ctx.plan(len(variants) * len(cells) * episodes)
    for name in variants:
        conditions = factor_removed(PRESETS[CONDITIONS["preset"]], CONDITIONS["variants"][name])
        for policy, start in cells:
            result = ctx.run_cell(f"{name}_{policy}_{start}", env, ctx.policy(policy),
                                  {"start": start, "conditions": conditions}, episodes)
            rows.append({"variant": name, "policy": policy, "start": start,
                         "success": (result["successes"], result["episodes"]), "time_to_stand": result["time_to_stand"]})
    return [Table(f"Keyframe stand-up under {CONDITIONS['preset']} with one factor removed",
                  [Column("variant", "variant"), Column("policy", "policy"), Column("start", "start", text),
                   Column("success", "success", rate),
                   Column("time to stand (s) mean / min / max", "time_to_stand", mean_min_max())], rows,
                  notes=f"{episodes} episodes per cell, seeds {ctx.seed}..{ctx.seed + episodes - 1}.")]


def paper_tries() -> dict[str, tuple[int, int]]:
    """B-Human's tries per competition of ``per_try.paper`` as ``(succeeded, tries)``: the
    succeeded count is the published percentage of the tries, rounded to a whole try."""
    return {event: (round(n * percent / 100.0), int(n)) for event, (n, percent) in PER_TRY["paper"].items()}


def inside_intervals(tries: tuple[int, int], paper: dict[str, tuple[int, int]]) -> str:
    """The competitions whose 95 % Wilson interval holds the rate ``tries`` = (succeeded, tries),
    comma-separated, or "none"."""
    k, n = tries
    if n == 0:
        return MISSING
    bounds = {event: wilson_interval(*counts) for event, counts in paper.items()}
    return ", ".join(event for event, (low, high) in bounds.items() if low <= k / n <= high) or "none"


@register_experiment("keyframe-per-try", "keyframe stand-up per try (NAO, random starts) under the presets, "
                     "beside B-Human's real robots (paper Table 2)", options={"presets": tuple(PER_TRY["presets"])})
def keyframe_per_try(ctx: ExperimentContext) -> list[Table]:
    """``--set presets=lab,worn params.KEY=VALUE``: ``keyframe`` from random starts, one cell per
    preset (folder ``PRESET``)."""
    episodes = ctx.episodes_or(PER_TRY["episodes"])
    env = env_id(DATA["robot"], "getup")
    paper = paper_tries()
    rows = []
    presets = ctx.option_names("presets", PER_TRY["presets"])
    ctx.plan(len(presets) * episodes)
    for preset in presets:
        result = ctx.run_cell(preset, env, ctx.policy("keyframe"), {"start": "random", "conditions": preset}, episodes)
        tries = (result["tries_succeeded"], result["tries"])
        rows.append({"preset": preset, "tries": tries, "success": (result["successes"], result["episodes"]),
                     "time_to_stand": result["time_to_stand"], "inside": inside_intervals(tries, paper)})
    simulated = Table("Keyframe per try in simulation (NAO, random starts)",
                      [Column("preset", "preset"), Column("tries succeeded", "tries", rate),
                       Column("episodes with success", "success", rate),
                       Column("time to stand (s) mean / min / max", "time_to_stand", mean_min_max()),
                       Column("inside the interval of", "inside", text)], rows,
                      notes=f"{episodes} episodes per preset, seeds {ctx.seed}..{ctx.seed + episodes - 1}. "
                            "Tries of one episode are not independent: the intervals are a guide.")
    real = Table("B-Human's real robots per try (paper Table 2)",
                 [Column("competition", "event"), Column("tries succeeded", "tries", rate)],
                 [{"event": event, "tries": counts} for event, counts in paper.items()],
                 notes="Succeeded tries: the published percentage of the tries, rounded.")
    return [simulated, real]
