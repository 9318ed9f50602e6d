"""The obstacle-course experiment of Reichenberg & Röfer, "Step Adjustment for a Robust Humanoid
Walk" (section 6, Tables 1 and 2), on the ``obstacles`` terrain (:data:`~upright.envs.terrain.OBSTACLE_COURSE`).

NAO walks along +x across the course with the step_adjust walk in the configurations Old (no
stabilisation), WSA (step adjustment only), SFL (swing-foot leveling only) and New (both), and
the shipped residual walk (``residuals`` in the YAML: the zoo policy on its prior in New),
compared with New. Each run
is one simulated robot: the seed draws its wear, sensor noise, mass and friction (the competition
preset's robot variations on the course instead of turf, ``obstacle_course.yaml``; run ``i`` uses
the same robot in every configuration). Like the paper's robots, a robot that falls is counted at
the obstacle under its torso and put back standing at that spot (on the course's centre line,
facing +x) as the same robot with its clock running on (:meth:`Simulation.place`: a stuck-joint
window that felled it does not recur); the run ends when it has crossed the course or after
``time_factor`` times the nominal crossing time plus ``extra_seconds``.

The paper's robots walked to targets on the field with their own localisation; here the walk's
yaw-rate command steers back to the centre line from the simulator's torso pose (a stand-in for
localisation, ``steer_gain``), which only the experiment sees.

A run is one episode of the shared runner: :class:`CourseRun` wraps the walk environment (restart
after a fall, steering command, end of the run), :class:`CourseWalker` is the walk as a policy
that follows the steering and starts afresh after each restart, and the observer
:class:`FallsPerObstacle` attributes each fall to its obstacle.

    upright experiment obstacle-course --episodes 8 --out results/obstacle_course
    upright experiment obstacle-course --set tables=2 params.max_forward=0.35 --episodes 24 --out DIR

``--episodes``: runs (robots) per configuration and speed, seeds ``--seed`` + i. Table 1: Old /
WSA / SFL / New at 250 mm/s; Table 2: Old and New at 300 and 350 mm/s (commands above the walk's
``max_forward`` are clipped by the walk, NAO: 0.3 m/s, rUNSWift's MAX_FORWARD;
``--set params.max_forward=0.35`` raises that cap so the walk really commands 350 mm/s).
``--set only=New@0.25`` runs some columns, ``--set merge=A/results.json`` adds the runs saved
there (and runs nothing else when ``only`` is not given).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from scipy.stats import wilcoxon

from upright.baselines.walk.step_adjust import CONFIGURATIONS
from upright.envs.conditions import Conditions, get_conditions
from upright.envs.registration import env_id
from upright.envs.terrain import OBSTACLE_COURSE, obstacle_at
from upright.eval.experiments import ExperimentContext, protocol_data, register_experiment
from upright.eval.runner import Observer
from upright.eval.settings import env_settings
from upright.eval.tables import Column, Table, number, text
from upright.policies.base import Policy
from upright.policies.builtin import ControllerPolicy
from upright.policies.run import ZOO_PREFIX, residual_env_kwargs, zoo_names

DATA = protocol_data(__name__)
#: Where a fall past the last obstacle is counted.
BEYOND = "beyond the course"
#: A column of the tables: (configuration, speed in m/s).
ColumnKey = tuple[str, float]


def _yaw(quat: np.ndarray) -> float:
    """Yaw (rad) of a (w, x, y, z) quaternion."""
    w, x, y, z = quat
    return float(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))


@dataclass(frozen=True)
class Course:
    """The rules of a run across the course (``obstacle_course.yaml``)."""

    #: A run may last ``time_factor`` × (course length / speed) + ``extra_seconds`` (s).
    time_factor: float
    extra_seconds: float
    #: Yaw-rate command (rad/s) per rad of heading error towards a point ``lookahead`` m ahead on
    #: the centre line (y = 0), limited to ± ``max_steer`` (rad/s).
    steer_gain: float
    max_steer: float
    lookahead: float
    #: x (m, world) where the course ends.
    end: float = OBSTACLE_COURSE[-1].x_end

    def budget(self, speed: float) -> float:
        """How long a run at ``speed`` (m/s) may last (s)."""
        return self.time_factor * self.end / speed + self.extra_seconds


COURSE = Course(DATA["time_factor"], DATA["extra_seconds"], DATA["steer_gain"], DATA["max_steer"], DATA["lookahead"])


def course_conditions() -> Conditions:
    """The robots of the runs: the preset of ``obstacle_course.yaml`` with its changes (the
    competition preset's robot variations on the ``obstacles`` terrain)."""
    changes = dict(DATA["conditions"])
    return get_conditions(changes.pop("preset")).with_(**changes)


class CourseRun(gym.Wrapper):
    """One simulated robot crossing the obstacle course, around a walk environment whose
    ``command`` is ``(speed, 0, 0)`` (m/s, speed > 0) and which does not end the episode by time
    before the run does (``max_episode_seconds`` a second past :meth:`Course.budget`; the
    environment's truncation is ignored, the run ends at its budget).

    Every step sets ``info["command"]``: the command the walk is to follow next, the speed with
    the yaw rate that steers back to the centre line. When the environment ends its episode with
    a fall, the run goes on: ``info["fall"]`` holds ``x`` (m, torso, world), ``time`` (s since the
    start) and ``direction`` (forward / backward / left / right, the larger fused angle), the robot
    is put back standing at that x on the centre line (its start pose, servos holding the start
    targets; :meth:`~upright.envs.simulation.Simulation.place`), ``info["sensors"]`` are its
    measurements then and ``info["restarted"]`` is True (the returned observation is still the
    fallen robot's: the course is walked by controllers, which read the sensors). An environment
    with a prior (a residual policy's walk) gets the steering too
    (:meth:`~upright.envs.walk.WalkEnv.set_command`), and after a restart its prior starts afresh
    and the returned observation is the restarted robot's. The run ends
    (terminated) when the torso passes the end of the course or (truncated) when the time
    budget is spent; ``info["episode_metrics"]`` then holds ``falls`` (count), ``reached_end`` and
    ``seconds`` (s), and ``info["is_success"]`` whether it reached the end.
    """

    def __init__(self, env: gym.Env, course: Course = COURSE) -> None:
        super().__init__(env)
        self.course = course
        self._speed = float(env.unwrapped.command[0])
        if not self._speed > 0.0:
            raise ValueError(f"the course is walked forward: command[0] must be > 0, got {self._speed!r}")
        #: The run's time budget (s).
        self.budget = course.budget(self._speed)

    def _command(self) -> np.ndarray:
        """The speed and the yaw rate (rad/s) that turns towards the centre line ``lookahead`` m ahead."""
        pos, quat = self.env.unwrapped.sim.torso_pose()
        c = self.course
        error = np.arctan2(-pos[1], c.lookahead) - _yaw(quat)
        error = (error + np.pi) % (2 * np.pi) - np.pi
        return np.array([self._speed, 0.0, float(np.clip(c.steer_gain * error, -c.max_steer, c.max_steer))])

    def _steer(self) -> np.ndarray:
        """The command of :meth:`_command`, also given to the environment when it has a prior (a
        residual policy's walk; it follows it from its next cycle)."""
        command = self._command()
        base = self.env.unwrapped
        if base.prior is not None:
            base.set_command(command)
        return command

    def reset(self, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        observation, info = self.env.reset(**kwargs)
        sim = self.env.unwrapped.sim
        self._start_qpos, self._start_ctrl = sim.data.qpos.copy(), sim.data.ctrl.copy()
        self._elapsed, self._falls = 0.0, 0
        info["command"] = self._steer()
        return observation, info

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        observation, reward, terminated, _, info = self.env.step(action)
        base = self.env.unwrapped
        self._elapsed += base.robot.control_period
        x = float(base.sim.torso_pose()[0][0])
        reached = x >= self.course.end
        info.pop("episode_metrics", None)  # the environment's episode is not the run
        info.pop("is_success", None)
        if terminated and not reached:
            posture = base.posture()
            pitch, roll = posture.fused_pitch, posture.fused_roll
            direction = ("forward" if pitch > 0 else "backward") if abs(pitch) >= abs(roll) else (
                "right" if roll > 0 else "left")
            info["fall"] = {"x": x, "time": self._elapsed, "direction": direction}
            self._falls += 1
            qpos = self._start_qpos.copy()
            qpos[0] = x
            info["sensors"] = base.sim.place(qpos, self._start_ctrl)
            info["restarted"] = True
            if base.prior is not None:  # the environment's own walk starts afresh, as a controller would
                observation = base.restart_prior(info["sensors"])
        info["command"] = self._steer()
        ended = reached or not self._elapsed < self.budget
        if ended:
            info["episode_metrics"] = {"falls": self._falls, "reached_end": reached, "seconds": self._elapsed}
            info["is_success"] = reached
        return observation, reward, reached, ended and not reached, info


class CourseWalker(ControllerPolicy):
    """A walk controller on the course (:class:`CourseRun`): it follows ``info["command"]`` (the
    steering) every cycle, and after each restart it starts afresh from the restarted robot's
    sensors (reset with the episode's seed, like the robot's first start)."""

    def reset(self, env: gym.Env, seed: int | None) -> None:
        super().reset(env, seed)
        self._course_env = env.unwrapped
        self._course_seed = seed
        self._walking = False

    def act(self, observation: np.ndarray, info: dict[str, Any]) -> np.ndarray:
        controller, sensors = self.controller, info["sensors"]
        if not self._walking or info.get("restarted", False):
            controller.set_command(np.array(self._course_env.command, dtype=float))
            controller.reset(sensors, np.random.default_rng(self._course_seed))
            self._walking = True
        controller.set_command(np.asarray(info["command"], dtype=float))
        return self._course_env.action_from_targets(controller.step(sensors))


class FallsPerObstacle(Observer):
    """Attributes every fall of a :class:`CourseRun` to the obstacle under the torso: the record
    gets ``fall_log``, a list of ``{x, obstacle, time, direction}`` (m, name, s, direction)."""

    def on_reset(self, env: gym.Env, policy: Policy, info: dict[str, Any]) -> None:
        self._log: list[dict[str, Any]] = []

    def on_step(self, env: gym.Env, policy: Policy, action: np.ndarray, info: dict[str, Any]) -> None:
        if "fall" in info:
            fall = info["fall"]
            self._log.append({"x": fall["x"], "obstacle": obstacle_at(fall["x"]) or BEYOND, "time": fall["time"],
                              "direction": fall["direction"]})

    def on_episode_end(self, env: gym.Env, policy: Policy, record: dict[str, Any]) -> dict[str, Any]:
        return {"fall_log": self._log}


def run_column(ctx: ExperimentContext, configuration: str, speed: float, runs: int) -> list[dict[str, Any]]:
    """``runs`` robots (seeds ``ctx.seed`` + i) crossing the course at ``speed`` (m/s) with the
    walk in ``configuration``; the protocol's ``params`` (``obstacle_course.yaml``: the paper's walk,
    without our speed feedback) and the ``--set params.*`` overrides apply under the configuration's
    switches. One dict per run: configuration, speed, seed, params, falls (the fall log),
    reached_end, seconds."""
    residuals = DATA.get("residuals", ())
    if configuration not in CONFIGURATIONS and configuration not in residuals:
        raise ValueError(f"unknown configuration {configuration!r}; valid: {', '.join([*CONFIGURATIONS, *residuals])}")
    wsa, sfl = CONFIGURATIONS.get(configuration, CONFIGURATIONS["New"])
    overrides = ctx.params
    params = {**DATA.get("params", {}), **overrides, "step_adjustment": wsa, "swing_leveling": sfl}
    env_kwargs = {"command": (speed, 0.0, 0.0), "conditions": course_conditions(),
                  "max_episode_seconds": COURSE.budget(speed) + 1.0}
    policy: Policy | str
    if configuration in residuals:  # the shipped policy on its prior, in the New configuration
        policy = f"{ZOO_PREFIX}{configuration}"
        env_kwargs = env_settings(env_kwargs, params, residual_env_kwargs(policy, DATA["controller"]))
    else:
        policy = CourseWalker(DATA["controller"], params=params, label=f"{DATA['controller']} {configuration}")
    run = ctx.run(env_id(DATA["robot"], "walk"), policy, env_kwargs, runs, observers=[FallsPerObstacle()],
                  wrappers=[CourseRun])
    return [{"configuration": configuration, "speed": speed, "seed": r["seed"], "params": overrides,
             "falls": r["fall_log"], "reached_end": r["reached_end"], "seconds": r["seconds"]} for r in run.records]


def _columns(table: int) -> list[ColumnKey]:
    """The columns of table ``table`` (1 or 2): every configuration at every speed; a shipped
    residual's only while it is in the zoo."""
    cells, shipped = DATA["tables"][table], set(zoo_names())
    return [(c, float(v)) for v in cells["speeds"] for c in cells["configurations"]
            if c in CONFIGURATIONS or c in shipped]


def _key(col: ColumnKey) -> str:
    return f"{col[0]}@{col[1]:g}"


def _heading(col: ColumnKey) -> str:
    return f"{col[0]} {round(col[1] * 1000)} mm/s"


def falls_rows(runs: Sequence[dict[str, Any]], columns: Sequence[ColumnKey]) -> list[dict[str, Any]]:
    """Rows like the paper's tables: per obstacle (``beyond the course`` only when someone fell
    there) the falls in every column (key ``CONFIG@SPEED``) and their ``sum``, then a ``sum`` row
    and a ``runs reaching the end`` row with ``[reached, runs]`` per column."""
    names = [ob.name for ob in OBSTACLE_COURSE] + [BEYOND]
    counts = {col: {n: 0 for n in names} for col in columns}
    finished = {col: [0, 0] for col in columns}
    for r in runs:
        col = (r["configuration"], r["speed"])
        if col not in counts:
            continue
        finished[col][0] += int(r["reached_end"])
        finished[col][1] += 1
        for f in r["falls"]:
            counts[col][f["obstacle"]] += 1
    rows: list[dict[str, Any]] = []
    for n in names:
        if n == BEYOND and not any(counts[c][n] for c in columns):
            continue
        values = {_key(c): counts[c][n] for c in columns}
        rows.append({"obstacle": n, **values, "sum": sum(values.values())})
    totals = {_key(c): sum(counts[c].values()) for c in columns}
    rows.append({"obstacle": "sum", **totals, "sum": sum(totals.values())})
    rows.append({"obstacle": "runs reaching the end", **{_key(c): finished[c] for c in columns}})
    return rows


def against(runs: Sequence[dict[str, Any]], columns: Sequence[ColumnKey], reference: str = "Old") -> list[dict[str, Any]]:
    """For every column (not ``reference``) with a ``reference`` column at the same speed:
    ``falls_per_run`` [this, reference], ``change`` of the falls against the reference (None when
    it did not fall), the paired Wilcoxon signed-rank ``p`` (scipy, two-sided; None when every pair
    ties: the runs with the same seed are the same simulated robot), ``directions``
    [[front-to-back, sideways] this, reference] and the number of ``robots`` paired."""
    def falls(col: ColumnKey) -> dict[int, int]:
        return {r["seed"]: len(r["falls"]) for r in runs if (r["configuration"], r["speed"]) == col}

    def directions(col: ColumnKey) -> list[int]:
        ds = [f["direction"] for r in runs if (r["configuration"], r["speed"]) == col for f in r["falls"]]
        sagittal = sum(d in ("forward", "backward") for d in ds)
        return [sagittal, len(ds) - sagittal]

    rows = []
    for col in columns:
        base = falls((reference, col[1]))
        if col[0] == reference or not base:
            continue
        new = falls(col)
        seeds = sorted(set(base) & set(new))
        a, b = np.array([new[s] for s in seeds]), np.array([base[s] for s in seeds])
        rows.append({"column": _heading(col), "falls_per_run": [float(a.mean()), float(b.mean())],
                     "change": float((a.sum() - b.sum()) / b.sum()) if b.sum() else None,
                     "p": float(wilcoxon(a, b).pvalue) if np.any(a != b) else None,
                     "directions": [directions(col), directions((reference, col[1]))], "robots": len(seeds)})
    return rows


def _falls_cell(value: Any) -> str:
    """A falls count, or ``[reached, runs]`` as ``k/n``."""
    if value is None:
        return text(None)
    return f"{value[0]}/{value[1]}" if isinstance(value, (list, tuple)) else str(value)


def _change_cell(value: float | None) -> str:
    return text(None) if value is None else f"{value:+.0%}"


def comparison_columns(reference: str) -> tuple[Column, ...]:
    """The columns of an :func:`against` table with ``reference`` named in its cells."""
    def per_run(value: list[float] | None) -> str:
        return text(None) if value is None else f"{value[0]:.2f} ({reference} {value[1]:.2f})"

    def directions(value: list[list[int]] | None) -> str:
        return text(None) if value is None else (f"{value[0][0]} / {value[0][1]} "
                                                 f"({reference} {value[1][0]} / {value[1][1]})")

    return (Column(f"against {reference} (same robots)", "column"), Column("falls per run", "falls_per_run", per_run),
            Column("change", "change", _change_cell), Column("paired Wilcoxon p", "p", number(3)),
            Column("falls front-to-back / sideways", "directions", directions), Column("robots", "robots"))


def course_tables(number_: int, runs: Sequence[dict[str, Any]], columns: Sequence[ColumnKey],
                  params: dict[str, Any]) -> list[Table]:
    """The paper's table ``number_`` from ``runs``: falls per obstacle and the comparison against Old."""
    speeds = sorted({v for _, v in columns})
    per_column = "/".join(map(str, sorted({sum((r["configuration"], r["speed"]) == c for r in runs)
                                           for c in columns})))
    suffix = f"; params {' '.join(f'{k}={v}' for k, v in params.items())}" if params else ""
    title = (f"Table {number_}: falls per obstacle at {' and '.join(str(round(v * 1000)) for v in speeds)} mm/s, "
             f"{per_column} runs per configuration{suffix}")
    tables = [Table(title, [Column("obstacle", "obstacle"), *(Column(_heading(c), _key(c), _falls_cell)
                                                              for c in columns), Column("sum", "sum", _falls_cell)],
                    falls_rows(runs, columns))]
    paper = [c for c in columns if c[0] in CONFIGURATIONS]
    for reference, compared in (("Old", paper), ("New", [c for c in columns if c[0] not in CONFIGURATIONS])):
        comparison = against(runs, compared + [c for c in columns if c[0] == reference], reference)
        if comparison:
            tables.append(Table(f"Table {number_}: against {reference}", comparison_columns(reference), comparison))
    return tables


def _table_numbers(value: Any) -> tuple[int, ...]:
    """The ``tables`` option (1, 2 or 1,2) as sorted table numbers."""
    numbers = value if isinstance(value, tuple) else (value,)
    if not numbers or not all(isinstance(n, (int, float)) and n in (1, 2) for n in numbers):
        raise ValueError(f"tables must be 1, 2 or 1,2, got {value!r}")
    return tuple(sorted({int(n) for n in numbers}))


def _column_key(item: str) -> ColumnKey:
    """``CONFIG@SPEED`` (e.g. ``New@0.25``) as a column key."""
    configuration, _, speed = item.partition("@")
    try:
        return configuration, float(speed)
    except ValueError:
        raise ValueError(f"only expects CONFIG@SPEED items such as New@0.25, got {item!r}") from None


@register_experiment("obstacle-course", "falls per obstacle of the step_adjust walk's Old/WSA/SFL/New on NAO "
                     "(step-adjustment paper, tables 1 and 2) and of the shipped residual walk against New", options={"tables": (1, 2), "only": (), "merge": ()})
def obstacle_course(ctx: ExperimentContext) -> list[Table]:
    """The paper's tables: ``--episodes`` robots (default 8) per configuration and speed;
    ``--set tables=1``, ``only=New@0.25,Old@0.25`` (run these columns), ``merge=A/results.json``
    (add the runs saved there and run nothing else unless ``only`` is given)."""
    numbers = _table_numbers(ctx.options["tables"])
    jobs = [col for n in numbers for col in _columns(n)]
    only = ctx.option_names("only")
    if only:
        wanted = {_column_key(item) for item in only}
        jobs = [job for job in jobs if job in wanted]
        if not jobs:
            raise ValueError(f"only={','.join(only)} names no column of tables {numbers}")
    merge = ctx.option_names("merge")
    runs: list[dict[str, Any]] = []
    for path in merge:
        runs += json.loads(Path(path).read_text())["data"]["runs"]
    if merge and not only:
        jobs = []
    episodes = ctx.episodes_or(8)
    ctx.plan(len(jobs) * episodes)
    for configuration, speed in jobs:
        runs += run_column(ctx, configuration, speed, episodes)
    ran = {(r["configuration"], r["speed"]) for r in runs}
    params = ctx.params
    tables: list[Table] = []
    for n in numbers:
        columns = [c for c in _columns(n) if c in ran] if only or merge else _columns(n)
        tables += course_tables(n, runs, columns, params)
    ctx.data.update({"runs_per_configuration": episodes, "seed": ctx.seed, "params": params,
                     "configurations": {k: list(v) for k, v in CONFIGURATIONS.items()}, "runs": runs})
    return tables
