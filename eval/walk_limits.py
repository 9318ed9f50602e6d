"""Limits of a walk policy, measured with the evaluation runner (the machinery of ``upright eval``):

* ``speeds``: the highest forward, sideways, backward speed and turning rate the walk sustains for
  ``--seconds`` (20 s) without falling. Commands rise in fixed increments per direction; the limit is
  the last command before the first one with a fall, reported with the velocity actually measured.
* ``push``: while walking in place, a lateral push on the torso (an
  :class:`~upright.envs.conditions.Impulse` of 0.1 s) at several instants of the gait; the largest
  impulse (N·s) survived at every instant, rising in fixed increments until the first fall.

Works for any registered walk policy (``--policy``); ``--param KEY=VALUE`` changes fields of the
controller's ``params`` dataclass (e.g. ``step_adjustment=false swing_leveling=false``, the
step_adjust walk without its stabilisations)::

    python -m upright.eval.walk_limits speeds --robot nao --policy step_adjust --out results/limits
    python -m upright.eval.walk_limits push --robot nao --policy step_adjust --param step_adjustment=false \
        swing_leveling=false --out results/limits-old
    python -m upright.eval.walk_limits speeds --robot wolfgang --conditions turf --directions forward --episodes 3

Writes ``<mode>-<robot>-<conditions>.json`` and ``.md`` under ``--out`` and prints the table.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from upright.envs.conditions import Conditions, Impulse, get_conditions
from upright.eval.runner import run_episodes
from upright.policies.base import Policy
from upright.policies.builtin import ControllerPolicy
from upright.policies.registry import load_policy

#: Per direction: the command axis, its sign, and the command values tried (m/s or rad/s).
DIRECTIONS: dict[str, tuple[int, float, np.ndarray]] = {
    "forward": (0, 1.0, np.round(np.arange(0.05, 0.401, 0.05), 3)),
    "sideways": (1, 1.0, np.round(np.arange(0.025, 0.251, 0.025), 3)),
    "backward": (0, -1.0, np.round(np.arange(0.05, 0.301, 0.05), 3)),
    "turning": (2, 1.0, np.round(np.deg2rad(np.arange(15.0, 151.0, 15.0)), 4)),
}
#: Push protocol: walk in place, push at these times (s; spread over one gait cycle), 0.1 s long,
#: impulses tried (N·s), episode length (s).
PUSH_TIMES = (4.0, 4.1, 4.2, 4.3)
PUSH_DURATION = 0.1
PUSH_IMPULSES = np.round(np.arange(0.5, 4.01, 0.5), 2)
PUSH_EPISODE_SECONDS = 8.0


class ParamPolicy(ControllerPolicy):
    """A registered baseline with some fields of its ``params`` dataclass changed."""

    def __init__(self, name: str, changes: dict[str, Any]) -> None:
        super().__init__(name)
        self.changes = dict(changes)

    def reset(self, env: gym.Env, seed: int | None) -> None:
        super().reset(env, seed)
        self._controller.params = replace(self._controller.params, **self.changes)


def make_policy(name: str, changes: dict[str, Any] | None = None) -> Policy:
    """``load_policy(name)``, or a :class:`ParamPolicy` when parameters are changed."""
    return ParamPolicy(name, changes) if changes else load_policy(name)


def _env_id(robot: str) -> str:
    return {"nao": "upright/NaoWalk-v0", "wolfgang": "upright/WolfgangWalk-v0"}[robot]


def _run(robot: str, policy: Policy, episodes: int, env_kwargs: dict[str, Any], seed: int) -> dict[str, Any]:
    run = run_episodes(_env_id(robot), policy, episodes, env_kwargs=env_kwargs, seed=seed, workers=1, progress=False)
    falls = sum(int(r["falls"]) > 0 for r in run.records)
    velocity = np.mean([r["mean_velocity"] for r in run.records], axis=0)
    return {"episodes": episodes, "episodes_with_fall": falls, "mean_velocity": velocity.tolist(),
            "episode_seconds": [r["episode_seconds"] for r in run.records]}


def speed_limits(robot: str, policy: Policy, conditions: str, directions: list[str], seconds: float,
                 episodes: int, seed: int = 0) -> dict[str, Any]:
    """For each direction, the runs per command until the first fall and the limit found."""
    out: dict[str, Any] = {}
    for direction in directions:
        axis, sign, values = DIRECTIONS[direction]
        runs, limit = [], None
        for value in values:
            command = np.zeros(3)
            command[axis] = sign * value
            result = _run(robot, policy, episodes, {"command": tuple(command), "conditions": conditions,
                                                    "max_episode_seconds": seconds}, seed)
            result["command"] = command.tolist()
            runs.append(result)
            print(f"  {direction} {value:g}: falls {result['episodes_with_fall']}/{episodes}, "
                  f"measured {np.round(result['mean_velocity'], 3).tolist()}", flush=True)
            if result["episodes_with_fall"]:
                break
            limit = result
        out[direction] = {"limit_command": None if limit is None else float(sign * limit["command"][axis]),
                          "limit_measured": None if limit is None else float(limit["mean_velocity"][axis]),
                          "runs": runs}
    return out


def push_limits(robot: str, policy: Policy, conditions: str, seed: int = 0) -> dict[str, Any]:
    """The largest lateral impulse (N·s, pushing towards +y, i.e. from the robot's right) survived
    at every push time while walking in place."""
    base = get_conditions(conditions)
    runs, limit = [], None
    for impulse in PUSH_IMPULSES:
        force = float(impulse / PUSH_DURATION)
        falls = 0
        for time in PUSH_TIMES:
            pushed = base.with_(impulses=(Impulse(time, (0.0, force), PUSH_DURATION),))
            result = _run(robot, policy, 1, {"command": (0.0, 0.0, 0.0), "conditions": pushed,
                                             "max_episode_seconds": PUSH_EPISODE_SECONDS}, seed)
            falls += result["episodes_with_fall"]
        runs.append({"impulse": float(impulse), "force": force, "push_times": list(PUSH_TIMES), "falls": falls})
        print(f"  impulse {impulse:g} N·s: falls {falls}/{len(PUSH_TIMES)}", flush=True)
        if falls:
            break
        limit = float(impulse)
    return {"limit_impulse": limit, "runs": runs}


def _markdown(mode: str, meta: dict[str, Any], result: dict[str, Any]) -> str:
    title = f"**{mode}: {meta['policy']} {meta['changes'] or ''} on {meta['robot']}, conditions {meta['conditions']}**"
    if mode == "speeds":
        lines = [title, "", "| direction | highest command sustained | measured velocity | first command with a fall |",
                 "|---|---|---|---|"]
        for direction, r in result.items():
            axis = DIRECTIONS[direction][0]
            unit = "deg/s" if axis == 2 else "m/s"
            scale = np.rad2deg(1.0) if axis == 2 else 1.0
            fell = r["runs"][-1] if r["runs"] and r["runs"][-1]["episodes_with_fall"] else None
            cell = lambda v: "—" if v is None else f"{v * scale:.3f} {unit}"  # noqa: E731
            lines.append(f"| {direction} | {cell(r['limit_command'])} | {cell(r['limit_measured'])} | "
                         f"{cell(fell['command'][axis]) if fell else 'none up to the last tried'} |")
        return "\n".join(lines) + "\n"
    last = result["runs"][-1] if result["runs"] else None
    first_fail = f"{last['impulse']:g} N·s" if last and last["falls"] else "none up to the last tried"
    limit = "—" if result["limit_impulse"] is None else f"{result['limit_impulse']:g} N·s"
    return (f"{title}\n\n| largest lateral impulse survived | first impulse with a fall |\n|---|---|\n"
            f"| {limit} | {first_fail} |\n")


def main(argv: list[str] | None = None) -> int:
    from upright.cli import parse_value

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("speeds", "push"))
    parser.add_argument("--robot", default="nao", choices=("nao", "wolfgang"))
    parser.add_argument("--policy", default="step_adjust")
    parser.add_argument("--param", nargs="+", default=[], metavar="KEY=VALUE",
                        help="change fields of the controller's params, e.g. step_adjustment=false")
    parser.add_argument("--conditions", default="lab")
    parser.add_argument("--directions", nargs="+", default=list(DIRECTIONS), choices=list(DIRECTIONS))
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--episodes", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/walk_limits")
    args = parser.parse_args(argv)
    changes = {}
    for item in args.param:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--param expects KEY=VALUE, got {item!r}")
        changes[key] = parse_value(value)
    policy = make_policy(args.policy, changes)
    if args.mode == "speeds":
        result = speed_limits(args.robot, policy, args.conditions, args.directions, args.seconds, args.episodes, args.seed)
    else:
        result = push_limits(args.robot, policy, args.conditions, args.seed)
    meta = {"policy": args.policy, "changes": changes, "robot": args.robot, "conditions": args.conditions,
            "seconds": args.seconds, "episodes": args.episodes, "seed": args.seed}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{args.mode}-{args.robot}-{args.conditions}"
    (out / f"{stem}.json").write_text(json.dumps({**meta, "result": result}, indent=2) + "\n")
    md = _markdown(args.mode, meta, result)
    (out / f"{stem}.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
