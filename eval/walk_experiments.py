"""The walk papers' experiments for any walk baseline (``lipm``, ``step_adjust``, ...), issue 6 items 1, 3, 4.

    python -m upright.eval.walk_experiments --policy lipm --robot nao --out results/walk/lipm-nao
    python -m upright.eval.walk_experiments --policy step_adjust --experiments push \\
        --param step_adjustment=false swing_leveling=false --out results/walk/step_adjust-old-push
    python -m upright.eval.walk_experiments --policy lipm --robot wolfgang --experiments speeds,turf \\
        --directions forward --param player.max_step_forward=0.3 --out results/walk/lipm-wolfgang

* ``speeds``: a speed ladder per direction (forward, backward, sideways, turning) under
  ``--conditions`` (default ``lab``): ``--episodes`` episodes (seeds 0, 1, ...) of ``--seconds``
  (20 s) per commanded speed, in the walk environment with the evaluation's policy
  (``upright eval --env upright/NaoWalk-v0 --policy NAME --set command=VX,VY,WZ
  max_episode_seconds=20`` runs the same episode). The **highest speed sustained** is the highest
  command of the ladder such that it and every lower command ran without a fall in any episode
  (:func:`highest_sustained`); it is reported with the velocity measured over the second half of
  its episodes (the environment's heading-frame torso velocity ``info["velocity"]``); the table also
  shows the fastest velocity measured at that command or below. The ladder stops at the first
  command with a fall, which is listed.
* ``observer``: walking forward at the highest forward speed sustained (or ``--observer-speed``),
  the lateral CoM errors of the controller's observer (controllers with ``diagnostics``, like
  ``lipm``): measured − expected (the LIPM paper's 7.76 mm figure), filtered − simulator truth and
  measured − truth.
* ``push``: walking in place, a lateral push (:class:`~upright.envs.conditions.Impulse`, 0.1 s,
  towards +y) at :data:`PUSH_TIMES` (four phases of one NAO gait cycle); impulses rise in
  ``--impulse-step`` steps (from ``--min-impulse``) up to ``--max-impulse``; the largest impulse
  survived at every push time below the first impulse with a fall. Run it once as configured and once with the stabilisation
  switched off through ``--param`` (lipm: ``correction=false``; step_adjust:
  ``step_adjustment=false swing_leveling=false``).
* ``turf``: the speed ladders (``--directions``, default forward) on ``turf`` (Wolfgang's item).

``--param KEY=VALUE`` changes fields of the controller's ``params`` dataclass; a dotted key reaches
into a nested one (``player.max_step_forward=0.14``). It raises the walks' own speed caps so that
a ladder shows the physical limit. ``--workers`` runs ladders (one per direction) and push times in
parallel processes. Writes ``OUT/walk_experiments.json`` and ``OUT/walk_experiments.md`` and prints
the tables.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import fields, is_dataclass, replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from upright.baselines import make_controller
from upright.envs.conditions import Conditions, Impulse, get_conditions
from upright.envs.registration import env_id
from upright.envs.robots import ROBOT_NAMES, get_robot
from upright.policies.builtin import ControllerPolicy

#: (command index, sign, speeds tried) per direction; m/s for x/y, rad/s for turning. The ladders
#: reach beyond the walks' default caps: raise the caps with ``--param`` to find the physical limit.
LADDERS: dict[str, dict[str, tuple[int, float, tuple[float, ...]]]] = {
    "nao": {
        "forward": (0, 1.0, tuple(np.round(np.arange(0.05, 0.501, 0.05), 3))),
        "backward": (0, -1.0, tuple(np.round(np.arange(0.05, 0.601, 0.05), 3))),
        "sideways": (1, 1.0, tuple(np.round(np.arange(0.025, 0.401, 0.025), 3))),
        "turning": (2, 1.0, tuple(np.round(np.deg2rad(np.arange(15.0, 301.0, 15.0)), 4))),
    },
    "wolfgang": {
        "forward": (0, 1.0, tuple(np.round(np.arange(0.05, 0.801, 0.05), 3))),
        "backward": (0, -1.0, tuple(np.round(np.arange(0.05, 0.501, 0.05), 3))),
        "sideways": (1, 1.0, tuple(np.round(np.arange(0.025, 0.401, 0.025), 3))),
        "turning": (2, 1.0, tuple(np.round(np.deg2rad(np.arange(15.0, 301.0, 15.0)), 4))),
    },
}
#: The LIPM paper's NAO numbers (Graf & Röfer 2011, sec. 4), m/s and rad/s.
PAPER = {"forward": 0.31, "sideways": 0.12, "backward": 0.22, "turning": float(np.deg2rad(92.0)),
         "observer_lateral_error_mm": 7.76}
#: Push times (s after reset, the walk is under way by then): one NAO gait cycle (lipm 0.525 s,
#: step_adjust 0.5 s) in quarters; the push lasts PUSH_DURATION (s).
PUSH_TIMES = (4.0, 4.125, 4.25, 4.375)
PUSH_DURATION = 0.1


def parse_params(items: Iterable[str]) -> dict[str, Any]:
    """``KEY=VALUE`` strings to a dict (values as ``upright eval --set`` parses them)."""
    from upright.eval.settings import parse_value

    changes: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--param expects KEY=VALUE, got {item!r}")
        changes[key] = parse_value(value)
    return changes


def with_params(params: Any, changes: dict[str, Any]) -> Any:
    """A copy of the dataclass ``params`` with ``changes`` applied; ``a.b`` names field ``b`` of
    the nested dataclass in field ``a``. Unknown names raise ValueError."""
    direct: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    names = {f.name for f in fields(params)}
    for key, value in changes.items():
        head, _, rest = key.partition(".")
        if head not in names:
            raise ValueError(f"{type(params).__name__} has no field {head!r} (from {key!r}); fields: {sorted(names)}")
        if rest:
            if not is_dataclass(getattr(params, head)):
                raise ValueError(f"field {head!r} of {type(params).__name__} is not a dataclass (from {key!r})")
            nested.setdefault(head, {})[rest] = value
        else:
            if isinstance(getattr(params, head), tuple) and not isinstance(value, tuple):
                raise ValueError(f"field {head!r} expects a comma list, got {value!r}")
            direct[head] = value
    for head, sub in nested.items():
        direct[head] = with_params(getattr(params, head), sub)
    return replace(params, **direct)


class ParamPolicy(ControllerPolicy):
    """A registered walk baseline built with some fields of its ``params`` changed."""

    def __init__(self, name: str, changes: dict[str, Any] | None = None) -> None:
        super().__init__(name)
        self.changes = dict(changes or {})

    def reset(self, env: gym.Env, seed: int | None) -> None:
        fresh = self._env is not env.unwrapped
        super().reset(env, seed)
        if fresh and self.changes:  # rebuild: controllers derive parts (e.g. leveling) in __init__
            controller = self._controller
            self._controller = type(controller)(env.unwrapped.robot, with_params(controller.params, self.changes))


def highest_sustained(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The highest-speed row such that it and every lower-speed row ran without a fall (rows carry
    ``speed`` and ``fell``); None when the lowest speed fell."""
    best = None
    for row in sorted(rows, key=lambda r: r["speed"]):
        if row["fell"]:
            break
        best = row
    return best


def _command(index: int, value: float) -> tuple[float, float, float]:
    command = [0.0, 0.0, 0.0]
    command[index] = float(value)
    return (command[0], command[1], command[2])


def run_episode(policy: str, changes: dict[str, Any], robot: str, command: tuple[float, float, float],
                conditions: str | Conditions, seconds: float, seed: int) -> dict[str, Any]:
    """One walk-environment episode: whether it fell, its end time (s) and the mean heading-frame
    velocity (m/s, m/s, rad/s) over its second half (None when it ended in the first half)."""
    env = gym.make(env_id(robot, "walk"), command=command, max_episode_seconds=seconds, conditions=conditions)
    agent = ParamPolicy(policy, changes)
    obs, info = env.reset(seed=seed)
    agent.reset(env, seed)
    velocities = []
    while True:
        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
        if info["time"] > seconds / 2:
            velocities.append(info["velocity"])
        if terminated or truncated:
            break
    env.close()
    late = [round(float(v), 4) for v in np.mean(velocities, axis=0)] if velocities else None
    return {"fell": bool(info["episode_metrics"]["falls"]), "end_time": round(float(info["time"]), 3),
            "late_velocity": late}


def ladder(policy: str, changes: dict[str, Any], robot: str, direction: str, conditions: str, seconds: float,
           episodes: int) -> dict[str, Any]:
    """One direction's ladder, rising until the first command with a fall in any episode."""
    index, sign, speeds = LADDERS[robot][direction]
    rows = []
    for speed in speeds:
        command = _command(index, sign * speed)
        runs = [run_episode(policy, changes, robot, command, conditions, seconds, seed) for seed in range(episodes)]
        fell = any(r["fell"] for r in runs)
        measured = [r["late_velocity"] for r in runs if r["late_velocity"] is not None]
        late = [round(float(v), 4) for v in np.mean(measured, axis=0)] if measured else None  # None: fell early
        rows.append({"speed": float(speed), "command": list(command), "fell": fell,
                     "end_times": [r["end_time"] for r in runs], "late_velocity": late})
        print(f"  {conditions} {direction:9s} {speed:6.3f}: {'FELL' if fell else 'ok'} (ends {rows[-1]['end_times']}); "
              f"velocity (2nd half) {late}", flush=True)
        if fell:
            break
    best = highest_sustained(rows)
    return {"rows": rows, "highest_command": None if best is None else best["speed"],
            "highest_measured": None if best is None else sign * best["late_velocity"][index],
            "fell_at": [r["speed"] for r in rows if r["fell"]]}


def _call(task: tuple[Callable[..., Any], tuple[Any, ...]]) -> Any:
    function, args = task
    return function(*args)


def _map(function: Callable[..., Any], argument_lists: list[tuple[Any, ...]], workers: int) -> list[Any]:
    """``function(*args)`` for every entry, in ``workers`` spawned processes when more than one."""
    tasks = [(function, args) for args in argument_lists]
    if workers <= 1 or len(tasks) <= 1:
        return [_call(task) for task in tasks]
    with multiprocessing.get_context("spawn").Pool(min(workers, len(tasks))) as pool:
        return pool.map(_call, tasks)


def speed_ladders(policy: str, changes: dict[str, Any], robot: str, conditions: str, directions: Sequence[str],
                  seconds: float, episodes: int, workers: int) -> dict[str, Any]:
    """The ladders of ``directions`` (one process each when ``workers`` > 1)."""
    results = _map(ladder, [(policy, changes, robot, d, conditions, seconds, episodes) for d in directions], workers)
    return dict(zip(directions, results))


def observer_errors(policy: str, changes: dict[str, Any], robot: str, speed: float, conditions: str,
                    seconds: float) -> dict[str, Any] | None:
    """Mean absolute lateral CoM errors (mm) while walking forward at ``speed``; None when the
    controller has no ``diagnostics``. Simulator truth: the CoM in the support sole's yaw frame."""
    env = gym.make(env_id(robot, "walk"), command=(speed, 0.0, 0.0), max_episode_seconds=seconds, conditions=conditions)
    agent = ParamPolicy(policy, changes)
    obs, info = env.reset(seed=0)
    agent.reset(env, 0)
    sim = env.unwrapped.sim
    rows = []
    while True:
        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
        d = getattr(agent._controller, "diagnostics", None)
        if d is None:
            env.close()
            return None
        if d.measured is not None and d.support != 0:
            side = 0 if d.support > 0 else 1
            sole = sim.data.site_xpos[sim._soles[side]]
            rot = sim.data.site_xmat[sim._soles[side]].reshape(3, 3)
            yaw = np.arctan2(rot[1, 0], rot[0, 0])
            v = sim.com() - sole
            c, s = np.cos(yaw), np.sin(yaw)
            truth = d.support_foot + np.array([c * v[0] + s * v[1], -s * v[0] + c * v[1]])
            rows.append((d.measured[1] - d.expected[1], d.filtered[1] - truth[1], d.measured[1] - truth[1]))
        if terminated or truncated:
            break
    env.close()
    e = np.abs(np.array(rows)) * 1000.0
    return {"speed": speed, "fell": bool(info["episode_metrics"]["falls"]), "cycles": len(rows),
            "measured_minus_expected_mm": round(float(e[:, 0].mean()), 2),
            "filtered_minus_truth_mm": round(float(e[:, 1].mean()), 2),
            "measured_minus_truth_mm": round(float(e[:, 2].mean()), 2)}


def _push_episode(policy: str, changes: dict[str, Any], robot: str, conditions: str, impulse: float, push_time: float,
                  seconds: float) -> bool:
    force = impulse / PUSH_DURATION
    pushed = get_conditions(conditions).with_(impulses=(Impulse(push_time, (0.0, force), PUSH_DURATION),))
    return run_episode(policy, changes, robot, (0.0, 0.0, 0.0), pushed, seconds, 0)["fell"]


def push_limit(policy: str, changes: dict[str, Any], robot: str, conditions: str, seconds: float, step: float,
               largest: float, workers: int, smallest: float | None = None) -> dict[str, Any]:
    """The largest lateral impulse (N·s) survived at every push time while walking in place:
    ``smallest`` (default ``step``), ``smallest + step``, ... up to ``largest``, stopping at the
    first impulse with a fall. A ``smallest`` above ``step`` refines a coarser ladder whose
    impulses up to ``smallest`` were all survived."""
    if not (step > 0.0 and (smallest is None or smallest > 0.0)):
        raise ValueError(f"impulse step and smallest impulse must be > 0, got {step!r}, {smallest!r}")
    rows = []
    for impulse in np.round(np.arange(smallest or step, largest + 1e-9, step), 3):
        falls = _map(_push_episode, [(policy, changes, robot, conditions, float(impulse), t, seconds)
                                     for t in PUSH_TIMES], workers)
        rows.append({"speed": float(impulse), "fell": any(falls), "falls": falls})
        print(f"  push {impulse:4.2f} N·s: falls at push times {falls}", flush=True)
        if any(falls):
            break
    best = highest_sustained(rows)
    first_tried = float(smallest or step)
    return {"first_tried_Ns": first_tried, "step_Ns": step,
            "largest_survived_Ns": None if best is None else best["speed"],
            "first_fall_Ns": next((r["speed"] for r in rows if r["fell"]), None),
            "push_times": list(PUSH_TIMES), "duration": PUSH_DURATION,
            "rows": [{"impulse": r["speed"], "falls": r["falls"]} for r in rows]}


def _speed_cell(value: float | None, turning: bool) -> str:
    """A ladder speed for the tables: m/s, or deg/s for turning (``value`` in rad/s)."""
    if value is None:
        return "none"
    return f"{np.rad2deg(value):.3g} deg/s" if turning else f"{value:.3f} m/s"


def _speed_table(result: dict[str, Any], key: str, conditions: str) -> list[str]:
    lines = [f"## Speed ladders ({conditions}, {result['seconds']:g} s episodes, {result['episodes']} per command)", "",
             ("| direction | highest command sustained | velocity measured (2nd half) | fastest measured up to it | "
              "paper (NAO) | first command that fell |"),
             "|---|---|---|---|---|---|"]
    for direction, r in result[key].items():
        turning = direction == "turning"

        def cell(value: float | None, turning: bool = turning) -> str:
            return _speed_cell(value, turning)

        index, sign, _ = LADDERS[result["robot"]][direction]
        sustained = [row for row in r["rows"] if r["highest_command"] is not None and row["speed"] <= r["highest_command"]]
        fastest = max((sign * row["late_velocity"][index] for row in sustained), default=None)
        paper = PAPER.get(direction) if result["robot"] == "nao" and conditions == "lab" else None
        fell = ", ".join(cell(v) for v in r["fell_at"]) or "none up to the last tried"
        lines.append(f"| {direction} | {cell(r['highest_command'])} | {cell(r['highest_measured'])} | {cell(fastest)} | "
                     f"{'–' if paper is None else cell(paper)} | {fell} |")
    return lines + [""]


def markdown(result: dict[str, Any]) -> str:
    """The result's tables."""
    changes = " ".join(f"{k}={v}" for k, v in result["params"].items()) or "default params"
    lines = [f"# Walk experiments: policy `{result['policy']}` ({changes}), robot {result['robot']}", ""]
    if "speeds" in result:
        lines += _speed_table(result, "speeds", result["conditions"])
    if "turf" in result:
        lines += _speed_table(result, "turf", "turf")
    if result.get("observer"):
        o = result["observer"]
        lines += [f"## CoM observer, mean lateral errors at {o['speed']:g} m/s forward", "",
                  "| measured − expected (paper: 7.76 mm) | filtered − simulator truth | measured − truth | fell |",
                  "|---|---|---|---|",
                  (f"| {o['measured_minus_expected_mm']} mm | {o['filtered_minus_truth_mm']} mm | "
                   f"{o['measured_minus_truth_mm']} mm | {o['fell']} |"), ""]
    if "push" in result:
        p = result["push"]
        first = "none up to the last tried" if p["first_fall_Ns"] is None else f"{p['first_fall_Ns']:g} N·s"
        survived = f"below {p['first_tried_Ns']:g} N·s" if p["largest_survived_Ns"] is None else f"{p['largest_survived_Ns']:g} N·s"
        lines += [(f"## Lateral push while walking in place ({p['duration']:g} s, +y, at {p['push_times']} s; "
                   f"impulses from {p['first_tried_Ns']:g} N·s in {p['step_Ns']:g} N·s steps)"), "",
                  "| largest impulse survived at every push time | first impulse with a fall |", "|---|---|",
                  f"| {survived} | {first} |", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", default="lipm", help="registered walk baseline (default: lipm)")
    parser.add_argument("--robot", default="nao", choices=ROBOT_NAMES)
    parser.add_argument("--experiments", default="speeds,observer,push",
                        help="comma list of speeds, observer, push, turf (default: speeds,observer,push)")
    parser.add_argument("--param", nargs="+", default=[], metavar="KEY=VALUE",
                        help="change fields of the controller's params (dotted for nested), e.g. correction=false")
    parser.add_argument("--conditions", default="lab", help="conditions preset of speeds, observer, push (default lab)")
    parser.add_argument("--directions", default=None,
                        help="comma list of ladders (default: all for speeds, forward for turf)")
    parser.add_argument("--episodes", type=int, default=1, help="episodes (seeds 0, 1, ...) per ladder command")
    parser.add_argument("--seconds", type=float, default=20.0, help="ladder and observer episode length (s)")
    parser.add_argument("--push-seconds", type=float, default=8.0, help="push episode length (s)")
    parser.add_argument("--observer-speed", type=float, default=None, help="forward speed of the observer run (m/s)")
    parser.add_argument("--impulse-step", type=float, default=0.25, help="push ladder step (N·s)")
    parser.add_argument("--min-impulse", type=float, default=None,
                        help="first push tried (N·s, default: the step), to refine a coarser ladder")
    parser.add_argument("--max-impulse", type=float, default=4.0, help="largest push tried (N·s)")
    parser.add_argument("--workers", type=int, default=1, help="processes (ladders and push times in parallel)")
    parser.add_argument("--out", required=True, help="output folder")
    args = parser.parse_args(argv)
    experiments = tuple(e.strip() for e in args.experiments.split(",") if e.strip())
    unknown = set(experiments) - {"speeds", "observer", "push", "turf"}
    if unknown:
        raise ValueError(f"unknown experiments {sorted(unknown)}; valid: speeds, observer, push, turf")
    if args.episodes < 1 or args.workers < 1:
        raise ValueError(f"--episodes and --workers must be >= 1, got {args.episodes!r}, {args.workers!r}")
    directions = tuple(d.strip() for d in args.directions.split(",")) if args.directions else None
    for d in directions or ():
        if d not in LADDERS[args.robot]:
            raise ValueError(f"unknown direction {d!r}; valid: {', '.join(LADDERS[args.robot])}")
    changes = parse_params(args.param)
    with_params(make_controller(args.policy, get_robot(args.robot), "walk").params, changes)  # bad names fail now
    common = (args.policy, changes, args.robot)
    result: dict[str, Any] = {"policy": args.policy, "params": changes, "robot": args.robot,
                              "conditions": args.conditions, "seconds": args.seconds, "episodes": args.episodes}
    start = time.time()
    if "speeds" in experiments:
        result["speeds"] = speed_ladders(*common, args.conditions, directions or tuple(LADDERS[args.robot]),
                                         args.seconds, args.episodes, args.workers)
    if "turf" in experiments:
        result["turf"] = speed_ladders(*common, "turf", directions or ("forward",), args.seconds, args.episodes,
                                       args.workers)
    if "observer" in experiments:
        speed = args.observer_speed
        if speed is None:  # full speed: the highest forward command sustained
            speed = result.get("speeds", {}).get("forward", {}).get("highest_command")
            if speed is None:
                raise ValueError("the observer experiment needs --observer-speed or a forward ladder with a sustained speed")
        result["observer"] = observer_errors(*common, speed, args.conditions, args.seconds)
    if "push" in experiments:
        result["push"] = push_limit(*common, args.conditions, args.push_seconds, args.impulse_step, args.max_impulse,
                                    args.workers, args.min_impulse)
    result["wall_seconds"] = round(time.time() - start, 1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "walk_experiments.json").write_text(json.dumps(result, indent=2, default=float) + "\n")
    text = markdown(result)
    (out / "walk_experiments.md").write_text(text + "\n")
    print(text)
    print(f"wrote {out / 'walk_experiments.json'} and {out / 'walk_experiments.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
