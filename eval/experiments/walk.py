"""The walk papers' experiments for any walk baseline (``lipm``, ``step_adjust``, ...): seven
registered protocols, their ladders and cells in ``walk.yaml``.

    upright experiment walk-speeds --set policy=lipm params.player.max_step_forward=0.15 --out results/walk/lipm-nao
    upright experiment walk-observer --set policy=lipm speed=0.25 --out results/walk/lipm-observer
    upright experiment walk-push --set policy=step_adjust params.step_adjustment=false \\
        params.swing_leveling=false --out results/walk/step_adjust-old-push
    upright experiment walk-turf --set policy=lipm robot=wolfgang params.player.max_step_forward=0.26 --out DIR

* ``walk-speeds``: a speed ladder per direction (``directions``, default all: forward, backward,
  sideways, turning) under ``conditions`` (default ``lab``): ``--episodes`` episodes (default 1,
  seeds ``--seed`` + i) of ``seconds`` (20 s) per commanded speed, in the walk environment with the
  evaluation's policy (``upright eval --env upright/NaoWalk-v0 --policy NAME --set
  command=VX,VY,WZ max_episode_seconds=20`` runs the same episode). The **highest speed
  sustained** is the highest command of the ladder such that it and every lower command ran
  without a fall in any episode (:func:`highest_sustained`); it is reported with the velocity
  measured over the second half of its episodes (the environment's heading-frame torso velocity
  ``info["velocity"]``, :class:`LateVelocity`); the table also shows the fastest velocity measured
  at that command or below. The ladder stops at the first command with a fall, which is listed.
* ``walk-turf``: the same ladders (``directions``, default forward) on the ``turf`` preset.
* ``walk-observer``: walking forward at ``speed`` (default: the highest forward speed sustained,
  from a forward ladder run first), the lateral CoM errors of the controller's observer
  (controllers with ``diagnostics``, like ``lipm``; :class:`ObserverErrors`): measured − expected
  (the LIPM paper's 7.76 mm figure), filtered − simulator truth and measured − truth.
* ``walk-push``: walking in place, a lateral push (:class:`~upright.envs.conditions.Impulse`, 0.1 s,
  towards +y) at each push time of ``walk.yaml`` (four phases of one NAO gait cycle); impulses
  rise in ``impulse_step`` steps (from ``min_impulse``, default the step) up to ``max_impulse``;
  the result is the largest impulse survived at every push time below the first impulse with a
  fall. Run it once as configured and once with the stabilisation switched off (lipm:
  ``params.correction=false``; step_adjust: ``params.step_adjustment=false
  params.swing_leveling=false``).

* ``walk-tracking``: every walk (``policies``) on every robot (``robots``) under ``lab`` and ``turf``
  (``conditions``) at the commands of ``walk.yaml`` (up to 0.25 m/s forward, 0.1 m/s sideways,
  0.5 rad/s yaw), ``--episodes`` (default 1) of ``seconds`` each: the velocity measured over the
  second half (:class:`LateVelocity`, mean over the episodes) against the command, per axis
  (:func:`tracked`), and how many cells passed per walk, robot and condition.
* ``walk-speed-table``: the four ladders of ``walk-speeds`` for every walk and robot with the walks'
  speed caps raised (``walk.yaml``), in one table beside the LIPM paper's NAO figures.
* ``walk-conditions``: every walk on every robot under ``competition`` with one factor removed at a
  time (the variants of ``walk.yaml``: the wear, two parts of it, the turf, the body variation),
  ``--episodes`` (default 20) walks of ``seconds`` with commands from the environment's default
  ranges: walks with a fall and the tracking errors, so that what defeats a walk is measured.

``--set params.KEY=VALUE`` changes the controller's parameters (dotted into nested ones,
``params.player.max_step_forward=0.14``); it raises the walks' own speed caps so that a ladder
shows the physical limit. ``--workers`` runs the episodes of one command (or one push) in
parallel, so it helps with ``--episodes`` above 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from upright.envs.conditions import Impulse, get_conditions
from upright.envs.registration import ENVIRONMENTS, env_id
from upright.envs.robots import ROBOT_NAMES
from upright.eval.experiments import ExperimentContext, factor_removed, protocol_data, register_experiment
from upright.eval.runner import Observer
from upright.eval.settings import env_settings
from upright.eval.tables import Column, Table, count, mean_min_max, number, rate
from upright.policies.base import Policy
from upright.policies.run import ZOO_PREFIX, residual_env_kwargs, run_env_id

DATA = protocol_data(__name__)
DEFAULTS = DATA["defaults"]
#: Index of a command axis in (vx, vy, wz).
AXES = {"vx": 0, "vy": 1, "wz": 2}


@dataclass(frozen=True)
class Ladder:
    """One direction's ladder: the command ``axis`` (0 vx, 1 vy, 2 wz), its ``sign`` and the
    ``speeds`` tried, lowest first (m/s, or rad/s when ``turning``)."""

    axis: int
    sign: float
    speeds: tuple[float, ...]
    turning: bool

    def command(self, speed: float) -> tuple[float, float, float]:
        """The walk command (vx m/s, vy m/s, wz rad/s) of ``speed`` in this direction."""
        command = [0.0, 0.0, 0.0]
        command[self.axis] = float(self.sign * speed)
        return (command[0], command[1], command[2])


def ladders(robot: str) -> dict[str, Ladder]:
    """The ladders of ``robot`` from ``walk.yaml`` (turning speeds given in deg/s become rad/s
    rounded to 4 decimals)."""
    try:
        cells = DATA["ladders"][robot]
    except KeyError:
        valid = ", ".join(DATA["ladders"])
        raise ValueError(f"no walk ladders for robot {robot!r}; robots with ladders: {valid}") from None
    result = {}
    for direction, cell in cells.items():
        if "speeds_deg" in cell:
            speeds = tuple(float(np.round(np.deg2rad(float(v)), 4)) for v in cell["speeds_deg"])
        else:
            speeds = tuple(float(v) for v in cell["speeds"])
        result[direction] = Ladder(AXES[cell["axis"]], float(cell["sign"]), speeds, "speeds_deg" in cell)
    return result


def highest_sustained(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The highest-speed row such that it and every lower-speed row ran without a fall (rows carry
    ``speed`` and ``fell``); None when the lowest speed fell."""
    best = None
    for row in sorted(rows, key=lambda r: r["speed"]):
        if row["fell"]:
            break
        best = row
    return best


class LateVelocity(Observer):
    """The mean heading-frame velocity ``info["velocity"]`` (m/s, m/s, rad/s) over the steps after
    ``after`` s: the record gets ``late_velocity`` (rounded to 4 decimals; None when the episode
    ended before) and ``end_time`` (s, rounded to 3 decimals)."""

    def __init__(self, after: float) -> None:
        self.after = after

    def on_reset(self, env: gym.Env, policy: Policy, info: dict[str, Any]) -> None:
        self._velocities: list[np.ndarray] = []
        self._time = 0.0

    def on_step(self, env: gym.Env, policy: Policy, action: np.ndarray, info: dict[str, Any]) -> None:
        self._time = float(info["time"])
        if info["time"] > self.after:
            self._velocities.append(info["velocity"])

    def on_episode_end(self, env: gym.Env, policy: Policy, record: dict[str, Any]) -> dict[str, Any]:
        late = [round(float(v), 4) for v in np.mean(self._velocities, axis=0)] if self._velocities else None
        return {"late_velocity": late, "end_time": round(self._time, 3)}


class ObserverErrors(Observer):
    """Lateral CoM errors of a controller's observer (its ``diagnostics``: ``support``,
    ``support_foot``, ``expected``, ``measured``, ``filtered``, in the phase frame), every cycle
    with a measurement and a support foot, read after the step (so against the simulator truth of
    the state that step reached): the CoM relative to the support sole in the sole's yaw frame,
    offset by the controller's support-foot position. The record gets ``cycles`` and the mean
    absolute errors (mm) ``measured_minus_expected_mm``, ``filtered_minus_truth_mm`` and
    ``measured_minus_truth_mm``; all None when the controller has no ``diagnostics``."""

    def on_reset(self, env: gym.Env, policy: Policy, info: dict[str, Any]) -> None:
        self._errors: list[tuple[float, float, float]] = []
        self._has_diagnostics = True

    def on_step(self, env: gym.Env, policy: Policy, action: np.ndarray, info: dict[str, Any]) -> bool | None:
        d = getattr(getattr(policy, "controller", None), "diagnostics", None)
        if d is None:
            self._has_diagnostics = False
            return True
        if d.measured is not None and d.support != 0:
            base = env.unwrapped
            sim = base.sim
            site = sim.model.site(base.robot.sole_sites[0 if d.support > 0 else 1]).id
            sole = sim.data.site_xpos[site]
            rot = sim.data.site_xmat[site].reshape(3, 3)
            yaw = np.arctan2(rot[1, 0], rot[0, 0])
            v = sim.com() - sole
            c, s = np.cos(yaw), np.sin(yaw)
            truth = d.support_foot + np.array([c * v[0] + s * v[1], -s * v[0] + c * v[1]])
            self._errors.append((d.measured[1] - d.expected[1], d.filtered[1] - truth[1], d.measured[1] - truth[1]))
        return None

    def on_episode_end(self, env: gym.Env, policy: Policy, record: dict[str, Any]) -> dict[str, Any]:
        keys = ("measured_minus_expected_mm", "filtered_minus_truth_mm", "measured_minus_truth_mm")
        if not self._has_diagnostics:
            return {"cycles": None, **dict.fromkeys(keys)}
        e = np.abs(np.array(self._errors).reshape(-1, 3)) * 1000.0
        means = [float(e[:, i].mean()) if len(e) else None for i in range(3)]
        return {"cycles": len(self._errors), **dict(zip(keys, means))}


# ---------------------------------------------------------------------------------------- ladders


def run_ladder(ctx: ExperimentContext, policy: str | Policy, robot: str, ladder: Ladder, conditions: str,
               seconds: float, episodes: int, env_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """One direction's ladder, rising until the first command with a fall in any episode: its
    ``rows`` (speed, command, fell, end_times, late_velocity per command), ``highest_command``,
    ``highest_measured`` (the velocity measured at it along the direction) and ``fell_at``.
    ``policy``: a name (resolved with the ``--set params.*``) or a resolved policy; ``env_kwargs``:
    more environment arguments (a residual's prior and training settings) under the ladder's own."""
    rows = []
    resolved = ctx.policy(policy) if isinstance(policy, str) else policy
    for speed in ladder.speeds:
        command = ladder.command(speed)
        run = ctx.run(env_id(robot, "walk"), resolved, {**(env_kwargs or {}), "command": command,
                                                        "max_episode_seconds": seconds, "conditions": conditions},
                      episodes, observers=[LateVelocity(seconds / 2)])
        fell = any(r["falls"] for r in run.records)
        measured = [r["late_velocity"] for r in run.records if r["late_velocity"] is not None]
        late = [round(float(v), 4) for v in np.mean(measured, axis=0)] if measured else None  # None: fell early
        rows.append({"speed": speed, "command": list(command), "fell": fell,
                     "end_times": [r["end_time"] for r in run.records], "late_velocity": late})
        if fell:
            break
    best = highest_sustained(rows)
    return {"rows": rows, "highest_command": None if best is None else best["speed"],
            "highest_measured": None if best is None else ladder.sign * best["late_velocity"][ladder.axis],
            "fell_at": [r["speed"] for r in rows if r["fell"]]}


def _speed(value: float | None, turning: bool) -> list[Any] | None:
    """A speed for a table row: ``[value, unit]`` in m/s, or deg/s for turning (``value`` in rad/s)."""
    if value is None:
        return None
    return [float(np.rad2deg(value)), "deg/s"] if turning else [float(value), "m/s"]


def _speed_cell(value: list[Any] | None) -> str:
    if value is None:
        return "none"
    return f"{value[0]:.3g} deg/s" if value[1] == "deg/s" else f"{value[0]:.3f} m/s"


def _speeds_cell(value: list[list[Any]] | None) -> str:
    return ", ".join(_speed_cell(v) for v in value) if value else "none up to the last tried"


def _paper_cell(value: list[Any] | None) -> str:
    return "—" if value is None else _speed_cell(value)


def _params_text(ctx: ExperimentContext) -> str:
    params = ctx.params
    return " ".join(f"{k}={v}" for k, v in params.items()) or "default params"


def speeds_table(ctx: ExperimentContext, results: dict[str, dict[str, Any]], policy: str, robot: str,
                 conditions: str, seconds: float, episodes: int) -> Table:
    """The ladders' table: per direction the highest command sustained, the velocity measured at
    it, the fastest measured up to it, the paper's NAO figure (lab only) and the commands that fell."""
    known = ladders(robot)
    paper = DATA["paper"].get(robot, {}) if conditions == "lab" else {}
    rows = []
    for direction, r in results.items():
        ladder = known[direction]
        sustained = [row for row in r["rows"]
                     if r["highest_command"] is not None and row["speed"] <= r["highest_command"]]
        fastest = max((ladder.sign * row["late_velocity"][ladder.axis] for row in sustained), default=None)
        reference = paper.get(direction)
        if ladder.turning and f"{direction}_deg" in paper:
            reference = float(np.deg2rad(paper[f"{direction}_deg"]))
        rows.append({"direction": direction, "highest_command": _speed(r["highest_command"], ladder.turning),
                     "highest_measured": _speed(r["highest_measured"], ladder.turning),
                     "fastest_measured": _speed(fastest, ladder.turning),
                     "paper": _speed(reference, ladder.turning),
                     "fell_at": [_speed(v, ladder.turning) for v in r["fell_at"]]})
    return Table(f"Speed ladders: {policy} ({_params_text(ctx)}) on {robot}, {conditions}, {seconds:g} s episodes, "
                 f"{episodes} per command",
                 [Column("direction", "direction"), Column("highest command sustained", "highest_command", _speed_cell),
                  Column("velocity measured (2nd half)", "highest_measured", _speed_cell),
                  Column("fastest measured up to it", "fastest_measured", _speed_cell),
                  Column("paper (NAO)", "paper", _paper_cell),
                  Column("first command that fell", "fell_at", _speeds_cell)], rows)


def _ladders_protocol(ctx: ExperimentContext, conditions: str) -> list[Table]:
    o = ctx.options
    policy, robot, seconds = str(o["policy"]), str(o["robot"]), float(o["seconds"])
    episodes = ctx.episodes_or(1)
    known = ladders(robot)
    directions = ctx.option_names("directions", known) or tuple(known)
    results = {d: run_ladder(ctx, policy, robot, known[d], conditions, seconds, episodes) for d in directions}
    ctx.data.update({"policy": policy, "params": ctx.params, "robot": robot,
                     "conditions": conditions, "seconds": seconds, "episodes": episodes, "ladders": results})
    return [speeds_table(ctx, results, policy, robot, conditions, seconds, episodes)]


COMMON = {"policy": DEFAULTS["policy"], "robot": DEFAULTS["robot"], "seconds": DEFAULTS["seconds"]}


@register_experiment("walk-speeds", "highest speed sustained per direction of a walk baseline (LIPM paper, sec. 4)",
                     options={**COMMON, "conditions": DEFAULTS["conditions"], "directions": ()})
def walk_speeds(ctx: ExperimentContext) -> list[Table]:
    """The speed ladders under ``conditions`` (``--set policy=... robot=... directions=forward,...``)."""
    return _ladders_protocol(ctx, str(ctx.options["conditions"]))


@register_experiment("walk-turf", "highest speed sustained of a walk baseline on artificial turf",
                     options={**COMMON, "directions": ("forward",)})
def walk_turf(ctx: ExperimentContext) -> list[Table]:
    """The speed ladders on the ``turf`` preset (``directions`` default forward)."""
    return _ladders_protocol(ctx, "turf")


# ---------------------------------------------------------------------------------------- observer


@register_experiment("walk-observer", "lateral CoM errors of a walk's observer while walking forward (LIPM paper)",
                     options={**COMMON, "conditions": DEFAULTS["conditions"], "speed": None})
def walk_observer(ctx: ExperimentContext) -> list[Table]:
    """``--episodes`` (default 1) episodes forward at ``speed`` (m/s; default: the highest forward
    command sustained, from a forward ladder run first); errors averaged over all their cycles."""
    o = ctx.options
    policy, robot, seconds, conditions = str(o["policy"]), str(o["robot"]), float(o["seconds"]), str(o["conditions"])
    speed = o["speed"]
    ctx.data.update({"policy": policy, "params": ctx.params, "robot": robot,
                     "conditions": conditions, "seconds": seconds})
    if speed is None:  # full speed: the highest forward command sustained
        forward = run_ladder(ctx, policy, robot, ladders(robot)["forward"], conditions, seconds, 1)
        ctx.data["forward_ladder"] = forward
        speed = forward["highest_command"]
        if speed is None:
            raise ValueError("the forward ladder sustained no speed; give one with --set speed=V")
    ctx.plan(ctx.episodes_or(1))  # after the ladder, whose rungs depend on its falls
    run = ctx.run(env_id(robot, "walk"), ctx.policy(policy), {"command": (float(speed), 0.0, 0.0),
                                                              "max_episode_seconds": seconds, "conditions": conditions},
                  ctx.episodes_or(1), observers=[ObserverErrors()])
    records = run.records
    keys = ("measured_minus_expected_mm", "filtered_minus_truth_mm", "measured_minus_truth_mm")
    cycles = [r["cycles"] for r in records]
    if any(c is None for c in cycles):
        row: dict[str, Any] = {"speed": float(speed), **dict.fromkeys(keys), "cycles": None}
    else:  # pooled over the episodes' cycles
        row = {"speed": float(speed), "cycles": sum(cycles),
               **{k: sum(r[k] * r["cycles"] for r in records) / sum(cycles) if sum(cycles) else None for k in keys}}
    stopped = any(r.get("stopped") for r in records)  # no diagnostics: stopped at the first step
    row["falls"] = None if stopped else [sum(bool(r["falls"]) for r in records), len(records)]
    ctx.data["observer"] = row | {"episodes": records}
    paper = DATA["paper"]["observer_lateral_error_mm"]
    return [Table(f"CoM observer of {policy} ({_params_text(ctx)}) on {robot}: mean lateral errors at "
                  f"{float(speed):g} m/s forward, {conditions}",
                  [Column(f"measured − expected (paper: {paper:g} mm)", keys[0], number(2, "mm")),
                   Column("filtered − simulator truth", keys[1], number(2, "mm")),
                   Column("measured − truth", keys[2], number(2, "mm")), Column("cycles", "cycles"),
                   Column("episodes that fell", "falls", count)], [row],
                  notes="— : the controller has no observer diagnostics.")]


# ---------------------------------------------------------------------------------------- push


def push_limit(ctx: ExperimentContext, policy: str, robot: str, conditions: str, seconds: float, step: float,
               largest: float, smallest: float | None = None) -> dict[str, Any]:
    """The largest lateral impulse (N·s) survived at every push time while walking in place:
    ``smallest`` (default ``step``), ``smallest + step``, ... up to ``largest``, stopping at the
    first impulse with a fall (one episode per impulse and push time). A ``smallest`` above
    ``step`` refines a coarser ladder whose impulses up to ``smallest`` were all survived."""
    if not (step > 0.0 and (smallest is None or smallest > 0.0)):
        raise ValueError(f"impulse step and smallest impulse must be > 0, got {step!r}, {smallest!r}")
    push = DATA["push"]
    times, duration, direction = tuple(push["times"]), float(push["duration"]), push["direction"]
    base = get_conditions(conditions)
    rows = []
    for impulse in np.round(np.arange(smallest or step, largest + 1e-9, step), 3):
        force = float(impulse) / duration
        falls = []
        for time in times:
            pushed = base.with_(impulses=(Impulse(time, (direction[0] * force, direction[1] * force), duration),))
            run = ctx.run(env_id(robot, "walk"), ctx.policy(policy), {"command": (0.0, 0.0, 0.0),
                                                                      "max_episode_seconds": seconds,
                                                                      "conditions": pushed}, 1)
            falls.append(bool(run.records[0]["falls"]))
        rows.append({"speed": float(impulse), "fell": any(falls), "falls": falls})
        if any(falls):
            break
    best = highest_sustained(rows)
    return {"first_tried_Ns": float(smallest or step), "step_Ns": step,
            "largest_survived_Ns": None if best is None else best["speed"],
            "first_fall_Ns": next((r["speed"] for r in rows if r["fell"]), None),
            "push_times": list(times), "duration": duration,
            "rows": [{"impulse": r["speed"], "falls": r["falls"]} for r in rows]}


@register_experiment("walk-push", "largest lateral push a walk baseline survives while walking in place",
                     options={"policy": DEFAULTS["policy"], "robot": DEFAULTS["robot"],
                              "conditions": DEFAULTS["conditions"], "seconds": DEFAULTS["push_seconds"],
                              "impulse_step": DEFAULTS["impulse_step"], "min_impulse": None,
                              "max_impulse": DEFAULTS["max_impulse"]})
def walk_push(ctx: ExperimentContext) -> list[Table]:
    """The push ladder (``--set impulse_step=0.05 min_impulse=1.25`` refines a coarser one);
    ``seconds`` is the push episode's length (default 8 s); one episode per push (``--episodes``
    does not apply)."""
    if ctx.episodes not in (None, 1):
        raise ValueError(f"walk-push runs one episode per impulse and push time; --episodes {ctx.episodes} "
                         "does not apply")
    o = ctx.options
    policy, robot, conditions = str(o["policy"]), str(o["robot"]), str(o["conditions"])
    smallest = None if o["min_impulse"] is None else float(o["min_impulse"])
    p = push_limit(ctx, policy, robot, conditions, float(o["seconds"]), float(o["impulse_step"]),
                   float(o["max_impulse"]), smallest)
    ctx.data.update({"policy": policy, "params": ctx.params, "robot": robot,
                     "conditions": conditions, "seconds": float(o["seconds"]), "push": p})
    row = {"survived": p["largest_survived_Ns"], "first_fall": p["first_fall_Ns"]}
    below = f"below {p['first_tried_Ns']:g} N·s"
    return [Table(f"Lateral push while walking in place: {policy} ({_params_text(ctx)}) on {robot}, {conditions} "
                  f"({p['duration']:g} s, +y, at {p['push_times']} s; impulses from {p['first_tried_Ns']:g} N·s "
                  f"in {p['step_Ns']:g} N·s steps)",
                  [Column("largest impulse survived at every push time", "survived",
                          lambda v: below if v is None else f"{v:g} N·s"),
                   Column("first impulse with a fall", "first_fall",
                          lambda v: "none up to the last tried" if v is None else f"{v:g} N·s")], [row])]


# ---------------------------------------------------------------------------------------- tracking


def tracked(command: Sequence[float], measured: Sequence[float] | None, fell: bool,
            relative: float, floor: Sequence[float], drift: Sequence[float]) -> list[bool]:
    """Per axis (vx, vy, wz) whether ``measured`` follows ``command``: a commanded axis within
    ``max(relative · |command|, floor)``, an axis not commanded (zero) within ``drift``; every axis
    fails after a fall or without a measurement."""
    if fell or measured is None:
        return [False, False, False]
    return [abs(m - c) <= (max(relative * abs(c), f) if c != 0.0 else d)
            for c, m, f, d in zip(command, measured, floor, drift)]


def _velocity_cell(value: Sequence[float] | None) -> str:
    if value is None:
        return "fell"
    return f"{value[0]:+.3f}, {value[1]:+.3f}, {value[2]:+.2f}"


def _errors_cell(row: dict[str, Any]) -> str:
    if row["measured"] is None:
        return "—"
    marks = ["" if ok else "✗" for ok in row["axes_ok"]]
    errors = [m - c for m, c in zip(row["measured"], row["command"])]
    return f"{errors[0]:+.3f}{marks[0]}, {errors[1]:+.3f}{marks[1]}, {errors[2]:+.2f}{marks[2]}"


@register_experiment("walk-tracking", "each walk's measured velocity against its command (lab and turf, both robots)",
                     options={"policies": ("lipm", "step_adjust"), "robots": ROBOT_NAMES,
                              "conditions": ("lab", "turf"), "seconds": DEFAULTS["seconds"]})
def walk_tracking(ctx: ExperimentContext) -> list[Table]:
    """``--set policies=lipm robots=nao conditions=turf seconds=20``; ``--episodes N`` per cell."""
    o = ctx.options
    cells = DATA["tracking"]
    relative, floor, drift = float(cells["relative"]), cells["floor"], cells["drift"]
    commands = [tuple(float(v) for v in c) for c in cells["commands"]]
    seconds, episodes = float(o["seconds"]), ctx.episodes_or(1)
    rows, summary = [], []
    policies, robots = ctx.option_names("policies"), ctx.option_names("robots", DATA["ladders"])
    presets = ctx.option_names("conditions")
    ctx.plan(len(policies) * len(robots) * len(presets) * len(commands) * episodes)
    for policy in policies:
        for robot in robots:
            for conditions in presets:
                passed = 0
                for command in commands:
                    run = ctx.run(env_id(robot, "walk"), ctx.policy(policy),
                                  {"command": command, "max_episode_seconds": seconds, "conditions": conditions},
                                  episodes, observers=[LateVelocity(seconds / 2)])
                    fell = any(r["falls"] for r in run.records)
                    late = [r["late_velocity"] for r in run.records if r["late_velocity"] is not None]
                    measured = None if fell or not late else [round(float(v), 4) for v in np.mean(late, axis=0)]
                    axes = tracked(command, measured, fell, relative, floor, drift)
                    passed += all(axes)
                    rows.append({"policy": policy, "robot": robot, "conditions": conditions, "command": list(command),
                                 "measured": measured, "falls": [sum(bool(r["falls"]) for r in run.records), episodes],
                                 "axes_ok": axes, "ok": all(axes)})
                summary.append({"policy": policy, "robot": robot, "conditions": conditions,
                                "passed": [passed, len(commands)]})
    ctx.data.update({"policies": list(ctx.option_names("policies")), "params": ctx.params,
                     "seconds": seconds, "episodes": episodes, "relative": relative, "floor": floor, "drift": drift,
                     "rows": rows, "summary": summary})
    rule = (f"A commanded axis passes within max({relative:.0%} of the command, {floor[0]:g} m/s | {floor[2]:g} rad/s); "
            f"an axis not commanded within {drift[0]:g} m/s | {drift[2]:g} rad/s (✗: outside). Velocity: the torso's, "
            f"in its heading frame, mean over the second half of {episodes} episode(s) of {seconds:g} s per command.")
    return [Table(f"Tracking: cells passed per walk, robot and conditions ({_params_text(ctx)})",
                  [Column("walk", "policy"), Column("robot", "robot"), Column("conditions", "conditions"),
                   Column("commands tracked", "passed", count)], summary, notes=rule),
            Table("Tracking: measured velocity per command (vx m/s, vy m/s, wz rad/s)",
                  [Column("walk", "policy"), Column("robot", "robot"), Column("conditions", "conditions"),
                   Column("command", "command", lambda c: f"{c[0]:g}, {c[1]:g}, {c[2]:g}"),
                   Column("measured", "measured", _velocity_cell), Column("error (✗: outside)", "row", _errors_cell),
                   Column("falls", "falls", count), Column("tracked", "ok", lambda v: "yes" if v else "no")],
                  [{**r, "row": r} for r in rows], notes=rule)]


# ---------------------------------------------------------------------------------------- speed table


@register_experiment("walk-speed-table", "the LIPM paper's speed ladders for every walk and robot, caps raised",
                     options={"policies": tuple(DATA["speed_table"]["policies"]),
                              "robots": tuple(DATA["speed_table"]["robots"]),
                              "directions": (), "conditions": DEFAULTS["conditions"], "seconds": DEFAULTS["seconds"]})
def walk_speed_table(ctx: ExperimentContext) -> list[Table]:
    """``--set policies=lipm robots=nao directions=forward,turning``; ``--episodes N`` per command.
    A shipped residual walk (``policies=zoo:NAME``) climbs the ladders of its robot on its prior,
    with the prior's caps raised and the other environment arguments it was trained with: where
    it falls below the rung its prior sustains, it broke something the prior could do."""
    o = ctx.options
    conditions, seconds, episodes = str(o["conditions"]), float(o["seconds"]), ctx.episodes_or(1)
    caps = DATA["speed_table"]["params"]
    rows, results, raised = [], {}, {}
    for policy in ctx.option_names("policies"):
        # A shipped residual: the arguments it was trained with (its prior among them), its robot only.
        trained = residual_env_kwargs(policy) if policy.startswith(ZOO_PREFIX) else None
        for robot in ctx.option_names("robots", DATA["ladders"]):
            if trained is not None and ENVIRONMENTS[run_env_id(policy)].robot != robot:
                continue
            known = ladders(robot)
            directions = ctx.option_names("directions", known) or tuple(known)
            if trained is None:
                params = caps.get(policy, {}).get(robot, {})
                walker, env_kwargs = ctx.policy(policy, params), None
            else:  # on its prior with the prior's caps raised, as the prior's own ladder
                params = caps.get(trained["prior"], {}).get(robot, {})
                walker, env_kwargs = ctx.policy(policy), env_settings({}, {**params, **ctx.params}, trained)
            raised[policy, robot] = params
            paper = DATA["paper"].get(robot, {}) if conditions == "lab" else {}
            for direction in directions:
                ladder = known[direction]
                r = run_ladder(ctx, walker, robot, ladder, conditions, seconds, episodes, env_kwargs)
                results[f"{policy}/{robot}/{direction}"] = {**r, "params": params}
                reference = paper.get(direction)
                if ladder.turning and f"{direction}_deg" in paper:
                    reference = float(np.deg2rad(paper[f"{direction}_deg"]))
                sustained = [row for row in r["rows"]
                             if r["highest_command"] is not None and row["speed"] <= r["highest_command"]]
                fastest = max((ladder.sign * row["late_velocity"][ladder.axis] for row in sustained), default=None)
                rows.append({"policy": policy, "robot": robot, "direction": direction,
                             "highest_command": _speed(r["highest_command"], ladder.turning),
                             "highest_measured": _speed(r["highest_measured"], ladder.turning),
                             "fastest_measured": _speed(fastest, ladder.turning),
                             "paper": _speed(reference, ladder.turning),
                             "fell_at": [_speed(v, ladder.turning) for v in r["fell_at"]]})
    ctx.data.update({"conditions": conditions, "seconds": seconds, "episodes": episodes, "ladders": results,
                     "params": ctx.params})
    caps_text = "; ".join(f"{p} {r}: " + " ".join(f"{k}={v}" for k, v in used.items())
                          for (p, r), used in raised.items())
    return [Table(f"Speed ladders on {conditions}, {seconds:g} s episodes, {episodes} per command",
                  [Column("walk", "policy"), Column("robot", "robot"), Column("direction", "direction"),
                   Column("highest command sustained", "highest_command", _speed_cell),
                   Column("velocity measured (2nd half)", "highest_measured", _speed_cell),
                   Column("fastest measured up to it", "fastest_measured", _speed_cell),
                   Column("paper (NAO)", "paper", _paper_cell),
                   Column("first command that fell", "fell_at", _speeds_cell)], rows,
                  notes=f"Speed caps raised: {caps_text}. The highest command sustained: it and every lower command "
                        "of the ladder ran without a fall.")]


# ---------------------------------------------------------------------------------------- conditions


@register_experiment("walk-conditions", "each walk under competition with one factor removed at a time (both robots)",
                     options={"policies": ("lipm", "step_adjust"), "robots": ROBOT_NAMES,
                              "variants": tuple(DATA["conditions"]["variants"]),
                              "seconds": DATA["conditions"]["seconds"]})
def walk_conditions(ctx: ExperimentContext) -> list[Table]:
    """One results folder per cell (``POLICY_ROBOT_VARIANT``), the same seeds in every cell."""
    spec = DATA["conditions"]
    episodes, seconds = ctx.episodes_or(spec["episodes"]), float(ctx.options["seconds"])
    preset = get_conditions(spec["preset"])
    rows = []
    policies, robots = ctx.option_names("policies"), ctx.option_names("robots")
    variants = ctx.option_names("variants", spec["variants"])
    ctx.plan(len(policies) * len(robots) * len(variants) * episodes)
    for policy in policies:
        for robot in robots:
            for name in variants:
                result = ctx.run_cell(f"{policy}_{robot}_{name}", env_id(robot, "walk"), ctx.policy(policy),
                                      {"conditions": factor_removed(preset, spec["variants"][name]),
                                       "max_episode_seconds": seconds}, episodes)
                rows.append({"policy": policy, "robot": robot, "variant": name,
                             "fell": (result["falls"]["episodes_with_fall"], result["episodes"]),
                             "linear": result["linear_tracking_error"], "yaw": result["yaw_tracking_error"]})
    ctx.data.update({"params": ctx.params, "seconds": seconds, "episodes": episodes, "rows": rows})
    return [Table(f"Walks under {spec['preset']} with one factor removed ({_params_text(ctx)})",
                  [Column("walk", "policy"), Column("robot", "robot"), Column("variant", "variant"),
                   Column("walks with a fall", "fell", rate),
                   Column("linear tracking error (m/s) mean / min / max", "linear", mean_min_max(3)),
                   Column("yaw tracking error (rad/s) mean / min / max", "yaw", mean_min_max(3))], rows,
                  notes=f"{episodes} walks of {seconds:g} s per cell, seeds {ctx.seed}..{ctx.seed + episodes - 1} "
                        "(the same in every cell), commands from the walk environment's default ranges; "
                        "tracking errors on 1 s window means. wear_no_lag and wear_full_strength keep the "
                        "preset's wear with its lag, or its strength loss, removed.")]
