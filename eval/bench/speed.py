"""Speed benchmark: environment steps per second of every environment under every conditions preset,
against raw physics of the same model and against Gymnasium's ``HumanoidStandup-v5``, in one run.

For each environment id and preset the environment is made with ``gym.make`` (the wrappers a user
gets) and stepped with the zero action (no prior) from ``reset(seed=0)``, resetting with seeds 1,
2, … when an episode ends. Raw physics is the same trajectory without the environment: a first,
untimed pass records per episode a copy of the model as its reset left it (the conditions draw the
turf, masses and friction per episode) and the full MuJoCo state it started from, and per control
period the ``ctrl`` and applied forces; the timed raw loop sets those and calls
``mujoco.mj_step(model, data, nstep=substeps)`` once per period. Where the environment itself runs
one batched ``mj_step(nstep)`` per period (every preset without servo play) the replay computes
exactly the environment's physics, and the row says so (``exact``: every episode ends in the
environment's state to the bit); under servo play the environment sets ``ctrl`` every physics step
and the replay, holding the period's last ``ctrl``, is the raw physics of a nearby trajectory. A
``HumanoidStandup-v5`` ``env.step`` loop with the zero action is timed in the same process. All
rates are control steps per second of this process's CPU time (``time.process_time``; everything
timed is single-threaded, so on an idle machine this is wall-clock time, and on a shared one other
processes' load does not count); the ratios, taken within one run, do not depend on the machine.

Targets: environment ≥ 0.85 of raw physics in ``lab``, every preset
≥ 0.7 of ``lab``, environment ≥ 1.0 of ``HumanoidStandup-v5`` (steps per second).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import gymnasium as gym
import mujoco
import numpy as np

from upright.envs.conditions import PRESETS
from upright.envs.registration import ENVIRONMENTS, register_envs
from upright.eval.bench.columns import Column, text_table
from upright.eval.machine import machine_line

#: The reference environment, stepped through its own ``env.step``.
REFERENCE = "HumanoidStandup-v5"


@dataclass(frozen=True)
class BenchRow:
    """One environment under one preset (``conditions`` is ``"-"`` for the reference).

    ``env_steps_per_s``: ``env.step`` calls per second; ``raw_steps_per_s``: control periods of
    raw ``mj_step`` physics per second (None for the reference); ``control_period`` in s;
    ``ratio_raw`` = env / raw, ``ratio_lab`` = env / the same environment in ``lab``,
    ``ratio_reference`` = env / ``HumanoidStandup-v5`` ``env.step`` (steps per second);
    ``exact``: whether the raw replay ended every episode in the environment's state to the bit
    (None for the reference).
    """

    env_id: str
    conditions: str
    control_period: float
    env_steps_per_s: float
    raw_steps_per_s: float | None
    ratio_raw: float | None
    ratio_lab: float | None
    ratio_reference: float
    exact: bool | None


@dataclass
class Trajectory:
    """What the physics of an environment run needs: per episode (keyed by the index of its first
    control period) a copy of the model as the reset left it (conditions draw the turf, masses and
    friction per episode) and the full MuJoCo state (``mjSTATE_INTEGRATION``) it started from; per
    control period the ``ctrl`` and ``xfrc_applied`` it was stepped with; and the state at the end
    of every episode (the last one included), to check a replay against."""

    models: dict[int, mujoco.MjModel] = field(default_factory=dict)
    starts: dict[int, np.ndarray] = field(default_factory=dict)
    ctrl: list[np.ndarray] = field(default_factory=list)
    xfrc: list[np.ndarray] = field(default_factory=list)
    ends: list[np.ndarray] = field(default_factory=list)

    def begin(self, index: int, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        """Record an episode starting at control period ``index`` from ``data`` on ``model``."""
        self.models[index] = copy.copy(model)
        self.starts[index] = _state(model, data)


_STATE = mujoco.mjtState.mjSTATE_INTEGRATION


def _state(model: mujoco.MjModel, data: mujoco.MjData) -> np.ndarray:
    state = np.empty(mujoco.mj_stateSize(model, _STATE))
    mujoco.mj_getState(model, data, state, _STATE)
    return state


def _run_env(env: gym.Env, action: np.ndarray, steps: int, record: bool = False) -> tuple[float, Trajectory | None]:
    """``env.step`` calls per second over ``steps`` steps from ``reset(seed=0)`` (resetting with
    seeds 1, 2, … at an episode's end), and with ``record`` the trajectory (then untimed)."""
    env.reset(seed=0)
    trajectory = None
    if record:
        model, data = env.unwrapped.sim.model, env.unwrapped.sim.data
        trajectory = Trajectory()
        trajectory.begin(0, model, data)
    seed = 1
    start = time.process_time()
    for i in range(steps):
        _, _, terminated, truncated, _ = env.step(action)
        if trajectory is not None:
            trajectory.ctrl.append(data.ctrl.copy())
            trajectory.xfrc.append(data.xfrc_applied.copy())
        if terminated or truncated:
            if trajectory is not None:
                trajectory.ends.append(_state(model, data))
            env.reset(seed=seed)
            seed += 1
            if trajectory is not None and i + 1 < steps:  # an episode that ends on the last step starts none
                trajectory.begin(i + 1, model, data)
    rate = steps / (time.process_time() - start)
    if trajectory is not None and len(trajectory.ends) < len(trajectory.starts):
        trajectory.ends.append(_state(model, data))
    return rate, trajectory


def _raw_rate(data: mujoco.MjData, substeps: int, trajectory: Trajectory) -> tuple[float, bool]:
    """Control periods per second of ``mj_step(nstep=substeps)`` replaying ``trajectory`` in
    ``data`` (each episode on its model from its start state), and whether every episode ended in
    the recorded state to the bit (one ``mj_getState`` per episode is inside the timing)."""
    models, starts, ctrls, xfrcs = trajectory.models, trajectory.starts, trajectory.ctrl, trajectory.xfrc
    ends = []
    model = models[0]
    start = time.process_time()
    for i, (ctrl, xfrc) in enumerate(zip(ctrls, xfrcs)):
        if i in starts:
            if i:
                ends.append(_state(model, data))
            model = models[i]
            mujoco.mj_setState(model, data, starts[i], _STATE)
        data.ctrl[:] = ctrl
        data.xfrc_applied[:] = xfrc
        mujoco.mj_step(model, data, nstep=substeps)
    ends.append(_state(model, data))
    rate = len(ctrls) / (time.process_time() - start)
    exact = len(ends) == len(trajectory.ends) and all(map(np.array_equal, ends, trajectory.ends))
    return rate, exact


def reference_rate(steps: int) -> tuple[float, float]:
    """``HumanoidStandup-v5`` ``env.step`` calls per second with the zero action, and its step (s)."""
    env = gym.make(REFERENCE)
    action = np.zeros(env.action_space.shape, dtype=env.action_space.dtype)
    _run_env(env, action, min(100, steps))  # warm-up
    rate, _ = _run_env(env, action, steps)
    dt = float(env.unwrapped.dt)
    env.close()
    return rate, dt


def measure(env_id: str, conditions: str, steps: int) -> tuple[float, float, float, bool]:
    """(env steps/s, raw control periods/s of the same trajectory, control period in s, whether
    the replay reproduced every episode's last state to the bit) of one environment and preset."""
    env = gym.make(env_id, conditions=conditions)
    action = np.zeros(env.action_space.shape, dtype=np.float32)
    _, trajectory = _run_env(env, action, steps, record=True)  # also the warm-up
    env_rate, _ = _run_env(env, action, steps)
    sim = env.unwrapped.sim
    raw_rate, exact = _raw_rate(copy.copy(sim.data), sim.n_substeps, trajectory)
    period = sim.robot.control_period
    env.close()
    return env_rate, raw_rate, period, exact


def run_bench(steps: int = 400, env_ids: tuple[str, ...] | None = None,
              presets: tuple[str, ...] | None = None) -> list[BenchRow]:
    """Measure ``env_ids`` (default: every registered environment) under ``presets`` (default:
    every preset, ``lab`` first) for ``steps`` control steps each, and the reference; the
    reference is the first row."""
    register_envs()
    env_ids = tuple(ENVIRONMENTS) if env_ids is None else env_ids
    presets = tuple(PRESETS) if presets is None else presets
    if "lab" in presets:
        presets = ("lab", *(p for p in presets if p != "lab"))
    ref_rate, ref_dt = reference_rate(steps)
    rows = [BenchRow(REFERENCE, "-", ref_dt, ref_rate, None, None, None, 1.0, None)]
    for env_id in env_ids:
        lab_rate = None
        for preset in presets:
            env_rate, raw_rate, period, exact = measure(env_id, preset, steps)
            if preset == "lab":
                lab_rate = env_rate
            rows.append(BenchRow(env_id, preset, period, env_rate, raw_rate, env_rate / raw_rate,
                                 env_rate / lab_rate if lab_rate else None, env_rate / ref_rate, exact))
    return rows


def format_bench(rows: list[BenchRow], width: int | None = None) -> str:
    """A plain-text table: rates and the three ratios with their targets. With ``width`` (a
    terminal's columns) narrower than the page's table, the narrow form: ids without
    ``upright/``, tighter columns, the notes wrapped."""
    if width is not None and width < 116:
        return _narrow_bench(rows, width)

    def ratio(value: float | None) -> str:
        return f"{value:>8.2f}" if value is not None else f"{'-':>8}"

    lines = [
        f"{'environment':<26} {'conditions':<12} {'step (ms)':>9} {'env steps/s':>11} {'raw steps/s':>11} "
        f"{'/ raw':>8} {'/ lab':>8} {'/ ref':>8} {'replay':>7}",
    ]
    for r in rows:
        raw = f"{r.raw_steps_per_s:>11.0f}" if r.raw_steps_per_s is not None else f"{'-':>11}"
        lines.append(
            f"{r.env_id:<26} {r.conditions:<12} {r.control_period * 1e3:>9.1f} {r.env_steps_per_s:>11.0f} {raw} "
            f"{ratio(r.ratio_raw)} {ratio(r.ratio_lab)} {ratio(r.ratio_reference)} "
            f"{'-' if r.exact is None else 'exact' if r.exact else 'nearby':>7}"
        )
    lines.append(
        "steps/s = control steps (env.step calls) per CPU second of this process; raw = mj_step(nstep=substeps) loop "
        "replaying the environment's trajectory (its models, starts, ctrl and forces; exact = every episode ends in the same "
        "state to the bit, nearby = "
        f"under servo play, ctrl held per period); ref = {REFERENCE} env.step, same run. Targets: / raw >= 0.85 in lab, "
        "/ lab >= 0.7, / ref >= 1.0."
    )
    lines.append(machine_line())
    return "\n".join(lines)


def _narrow_bench(rows: list[BenchRow], width: int) -> str:
    """:func:`format_bench` in 77 columns (the notes wrapped at ``width``)."""
    import textwrap

    def number(value: float | None, size: int, digits: int) -> str:
        return f"{value:>{size}.{digits}f}" if value is not None else f"{'-':>{size}}"

    lines = [f"{'environment':<18} {'conditions':<13} {'ms':>4} {'env/s':>6} {'raw/s':>6} {'/ raw':>5} {'/ lab':>5} "
             f"{'/ ref':>5} {'replay':>6}"]
    for r in rows:
        replay = "-" if r.exact is None else "exact" if r.exact else "nearby"
        lines.append(f"{r.env_id.split('/')[-1]:<18} {r.conditions:<13} {r.control_period * 1e3:>4.0f} "
                     f"{r.env_steps_per_s:>6.0f} {number(r.raw_steps_per_s, 6, 0)} {number(r.ratio_raw, 5, 2)} "
                     f"{number(r.ratio_lab, 5, 2)} {number(r.ratio_reference, 5, 2)} {replay:>6}")
    notes = (f"env/s = control steps (env.step calls) per CPU second of this process; raw = mj_step loop replaying "
             f"the environment's trajectory (exact: every episode ends in the same state to the bit; nearby: under "
             f"servo play); ref = {REFERENCE} env.step, same run. Targets: / raw >= 0.85 in lab, / lab >= 0.7, "
             f"/ ref >= 1.0.")
    lines += textwrap.wrap(notes, max(width, 40)) + textwrap.wrap(machine_line(), max(width, 40))
    return "\n".join(lines)


#: The parts of an environment step that :func:`time_parts` times: label → the (owner, method name)
#: pairs it adds up, the owner ``"env"`` (the unwrapped environment), ``"sim"`` (its Simulation) or ``"servos"``. They do
#: not nest: ``sensors`` and the blow-up check run inside ``Simulation.step`` around the physics,
#: the observation and ``info`` inside the step's end.
PARTS: dict[str, tuple[tuple[str, str], ...]] = {
    "action → targets": (("env", "_clipped"), ("env", "_targets")),
    "servo model": (("servos", "command"),),
    "blow-up check": (("sim", "_check_stability"),),
    "sensors": (("sim", "sensors"),),
    "posture": (("env", "posture"),),
    "heading motion": (("sim", "torso_heading_motion"),),
    "reward terms": (("env", "_reward_terms"),),
    "observation": (("env", "_observe"),),
    "info": (("env", "_base_info"),),
    "resets": (("env", "reset"),),
}


@dataclass(frozen=True)
class PartsRow:
    """Where one environment's step time goes, µs per control step: ``step`` the whole ``env.step``
    (resets included, as the bench counts them) and ``physics`` the raw replay of the same
    trajectory, both in CPU time as the bench's rates; ``parts`` the parts of :data:`PARTS`
    (labels merged) in wall-clock time (so measure on an idle machine, where the two agree);
    ``glue`` the rest of the environment's own work (``step − physics − parts``: the step
    methods' own lines, the metrics trackers, the Gymnasium wrappers, the timing wrappers' own
    cost)."""

    env_id: str
    conditions: str
    step: float
    physics: float
    parts: dict[str, float]
    glue: float


def time_parts(env_id: str, conditions: str, steps: int) -> PartsRow:
    """Time the parts of :data:`PARTS` of ``env_id`` under ``conditions`` over ``steps`` control
    steps with the zero action (the bench's trajectory), each call wrapped with a wall-clock
    accumulator (``time.perf_counter``: a fraction of a microsecond per reading, where the CPU-time
    clock is a system call), and the raw physics of the same trajectory."""
    env = gym.make(env_id, conditions=conditions)
    action = np.zeros(env.action_space.shape, dtype=np.float32)
    _, trajectory = _run_env(env, action, steps, record=True)  # also the warm-up
    u = env.unwrapped
    owners = {"env": u, "sim": u.sim, "servos": u.sim.servos}
    spent: dict[str, float] = {}
    clock = time.perf_counter
    first_reset = [True]  # the run's own first reset, before its timed loop, is not counted

    def timed(label: str, method):
        def call(*args, **kwargs):
            start = clock()
            try:
                return method(*args, **kwargs)
            finally:
                if label == "resets" and first_reset[0]:
                    first_reset[0] = False
                else:
                    spent[label] = spent.get(label, 0.0) + clock() - start
        return call

    methods = [(label, owner, name) for label, where in PARTS.items() for owner, name in where]
    for label, owner, name in methods:
        if hasattr(owners[owner], name):
            setattr(owners[owner], name, timed(label, getattr(owners[owner], name)))
    env_rate, _ = _run_env(env, action, steps)
    for _, owner, name in methods:  # back to the class's methods
        owners[owner].__dict__.pop(name, None)
    sim = u.sim
    raw_rate, _ = _raw_rate(copy.copy(sim.data), sim.n_substeps, trajectory)
    env.close()
    parts = {label: value * 1e6 / steps for label, value in spent.items()}
    physics = 1e6 / raw_rate
    step = 1e6 / env_rate
    return PartsRow(env_id, conditions, step, physics, parts, step - physics - sum(parts.values()))


def run_parts(steps: int = 400, presets: tuple[str, ...] = ("lab", "turf")) -> list[PartsRow]:
    """:func:`time_parts` of every registered environment under each of ``presets``."""
    register_envs()
    return [time_parts(env_id, preset, steps) for env_id in ENVIRONMENTS for preset in presets]


def format_parts(rows: list[PartsRow], width: int | None = None) -> str:
    """A plain-text table: µs per control step of each part, one column per environment; with
    ``width`` (a terminal's columns), the environments in blocks that fit (:func:`~upright.eval.
    bench.columns.text_table`)."""
    labels = list(dict.fromkeys(label.strip() for label in PARTS))
    heads = [f"{r.env_id.removeprefix('upright/').removesuffix('-v0')} {r.conditions}" for r in rows]
    size = max(14, *(len(h) for h in heads))
    columns = [Column("µs per control step", 22, left=True), *(Column(head, size) for head in heads)]

    def line(name: str, values: list[float | None]) -> list[str]:
        return [name, *("-" if v is None else f"{v:.1f}" for v in values)]

    table = [line("env.step", [r.step for r in rows]), line("physics (raw replay)", [r.physics for r in rows]),
             line("environment's own", [r.step - r.physics for r in rows]),
             *(line("  " + label, [r.parts.get(label) for r in rows]) for label in labels),
             line("  glue", [r.glue for r in rows])]
    notes = ["Own work = env.step - physics; the parts are timed inside the steps (each call wrapped with a "
             "wall-clock accumulator, whose own cost lands in the parts and the glue); glue = the step methods' own lines, "
             "the metrics trackers and the Gymnasium wrappers; resets as often as the zero action's episodes end.",
             machine_line()]
    return "\n".join(text_table(columns, table, notes, width=width))


def summary(rows: list[BenchRow]) -> dict[str, float]:
    """Lowest ratio per kind over the measured rows: ``raw_lab`` (lab rows only), ``lab`` and ``reference``."""
    measured = rows[1:]
    return {
        "raw_lab": min(r.ratio_raw for r in measured if r.conditions == "lab"),
        "lab": min(r.ratio_lab for r in measured),
        "reference": min(r.ratio_reference for r in measured),
    }
