"""The walk papers' experiments for any walk baseline (``lipm``, ``step_adjust``, ...).

``python -m upright.eval.walk_experiments --policy lipm --robot nao --out results/walk/lipm-nao``

* ``speeds``: speed ladders per direction (forward, backward, sideways, turning) on flat ground:
  one episode of ``--seconds`` (default 20 s) per commanded speed, seed 0, the same environment,
  policy and seed as ``upright eval --env upright/NaoWalk-v0 --policy NAME --episodes 1
  --set command=VX,VY,WZ max_episode_seconds=20`` (deterministic, so the same episode); the highest
  command sustained without a fall, with the velocity measured over the second half of the episode
  (the environment's heading-frame torso velocity, ``info["velocity"]``);
* ``observer``: at the highest forward speed sustained (or ``--observer-speed``), the lateral CoM
  errors of the controller's observer (needs a controller with ``diagnostics`` like ``lipm``):
  measured − expected (the paper's 7.76 mm figure), filtered − simulator truth, and measured − truth;
* ``push``: walking in place, a lateral push (``Impulse``, 0.1 s, +y) at several phases of the gait;
  the largest impulse survived at every push time, with the controller as configured and with the
  fields named by ``--off`` switched off (its stabilisation);
* ``turf``: the forward ladder on ``turf`` (Wolfgang's item).

Everything is written to ``OUT/walk_experiments.json`` and ``OUT/walk_experiments.md`` and printed.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from upright.envs.conditions import Impulse, get_conditions
from upright.eval.runner import run_episodes
from upright.policies.builtin import ControllerPolicy

ENV_IDS = {"nao": "upright/NaoWalk-v0", "wolfgang": "upright/WolfgangWalk-v0"}
#: (command index, sign, speeds) per direction; m/s for x/y, rad/s for turning.
LADDERS: dict[str, dict[str, tuple[int, float, tuple[float, ...]]]] = {
    "nao": {
        "forward": (0, 1.0, (0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40)),
        "backward": (0, -1.0, (0.05, 0.10, 0.15, 0.20, 0.25, 0.30)),
        "sideways": (1, 1.0, (0.02, 0.04, 0.06, 0.08, 0.10, 0.12, 0.15, 0.20)),
        "turning": (2, 1.0, (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.6, 2.0)),
    },
    "wolfgang": {
        "forward": (0, 1.0, (0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.40)),
    },
}
#: Paper numbers (Graf & Röfer 2011, sec. 4) the NAO ladders are compared with.
PAPER = {"forward": 0.31, "sideways": 0.12, "backward": 0.22, "turning": np.deg2rad(92.0),
         "observer_lateral_error_mm": 7.76}
PUSH_TIMES = (4.0, 4.07, 4.14, 4.21)  # s: four phases of the gait, after walking starts
PUSH_DURATION = 0.1  # s


class VariantPolicy(ControllerPolicy):
    """A baseline with some fields of its ``params`` changed (e.g. a stabilisation switched off)."""

    def __init__(self, name: str, overrides: dict[str, Any] | None = None) -> None:
        super().__init__(name)
        self.overrides = dict(overrides or {})

    def reset(self, env: gym.Env, seed: int | None) -> None:
        super().reset(env, seed)
        if self.overrides:
            self._controller.params = replace(self._controller.params, **self.overrides)


def _command(index: int, value: float) -> tuple[float, float, float]:
    c = [0.0, 0.0, 0.0]
    c[index] = float(value)
    return tuple(c)


def _episode(policy: VariantPolicy, robot: str, command: tuple[float, float, float], seconds: float,
             conditions: Any, workers: int = 1) -> dict[str, Any]:
    """One evaluation-runner episode; returns its record plus the late-half mean velocity."""
    env_kwargs = {"command": command, "max_episode_seconds": seconds, "conditions": conditions}
    run = run_episodes(ENV_IDS[robot], policy, 1, env_kwargs=env_kwargs, workers=workers, progress=False)
    return run.records[0]


def _late_velocity(policy: VariantPolicy, robot: str, command: tuple[float, float, float], seconds: float,
                   conditions: Any) -> tuple[np.ndarray, bool, float]:
    """Run one episode directly (same env and policy) and return the mean heading-frame velocity
    over its second half, whether it fell, and the fall time."""
    env = gym.make(ENV_IDS[robot], command=command, max_episode_seconds=seconds, conditions=conditions)
    obs, info = env.reset(seed=0)
    policy.reset(env, 0)
    velocities, fell, t = [], False, 0.0
    while True:
        obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
        t = info["time"]
        if t > seconds / 2:
            velocities.append(info["velocity"])
        if terminated or truncated:
            fell = bool(info["episode_metrics"]["falls"])
            break
    env.close()
    return (np.mean(velocities, axis=0) if velocities else np.full(3, np.nan)), fell, t


def speed_ladders(policy: VariantPolicy, robot: str, seconds: float, conditions: Any,
                  directions: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Every speed of each ladder; ``best`` = highest command with no fall in its episode."""
    out: dict[str, Any] = {}
    for direction, (index, sign, speeds) in LADDERS[robot].items():
        if directions and direction not in directions:
            continue
        rows = []
        for speed in speeds:
            command = _command(index, sign * speed)
            late, fell, t_end = _late_velocity(policy, robot, command, seconds, conditions)
            rows.append({"command": command, "speed": speed, "fell": fell, "end_time": round(t_end, 3),
                         "late_velocity": [round(float(v), 4) for v in late]})
            print(f"  {direction:9s} {speed:5.2f}: {'FELL at %.1f s' % t_end if fell else 'ok'}; "
                  f"velocity (2nd half) {np.round(late, 3).tolist()}", flush=True)
        sustained = [r for r in rows if not r["fell"]]
        # The highest speed sustained: the fastest measured velocity of an episode without a fall.
        best = max(sustained, key=lambda r: sign * r["late_velocity"][index]) if sustained else None
        out[direction] = {"rows": rows, "best_command": best["speed"] if best else None,
                          "best_achieved": sign * best["late_velocity"][index] if best else None}
    return out


def observer_errors(policy: VariantPolicy, robot: str, speed: float, seconds: float) -> dict[str, Any] | None:
    """Lateral CoM errors (mm) while walking forward at ``speed`` on flat ground."""
    env = gym.make(ENV_IDS[robot], command=(speed, 0.0, 0.0), max_episode_seconds=seconds, conditions="lab")
    obs, info = env.reset(seed=0)
    policy.reset(env, 0)
    sim = env.unwrapped.sim
    rows = []
    while True:
        obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
        d = getattr(policy._controller, "diagnostics", None)
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
            fell = bool(info["episode_metrics"]["falls"])
            break
    env.close()
    e = np.abs(np.array(rows)) * 1000.0
    return {"speed": speed, "fell": fell, "cycles": len(rows),
            "measured_minus_expected_mm": round(float(e[:, 0].mean()), 2),
            "filtered_minus_truth_mm": round(float(e[:, 1].mean()), 2),
            "measured_minus_truth_mm": round(float(e[:, 2].mean()), 2)}


def push_limit(policy: VariantPolicy, robot: str, seconds: float, step: float, largest: float) -> dict[str, Any]:
    """The largest lateral impulse (N·s) survived at every push time while walking in place, trying
    ``step``, ``2·step``, ... up to ``largest`` (N·s) and stopping at the first impulse with a fall."""
    survived = 0.0
    rows = []
    for impulse in np.round(np.arange(step, largest + 1e-9, step), 3):
        force = impulse / PUSH_DURATION
        falls = []
        for t in PUSH_TIMES:
            conditions = get_conditions("lab").with_(impulses=(Impulse(t, (0.0, force), PUSH_DURATION),))
            record = _episode(policy, robot, (0.0, 0.0, 0.0), seconds, conditions)
            falls.append(bool(record["falls"]))
        rows.append({"impulse": float(impulse), "falls": falls})
        print(f"  push {impulse:4.2f} N·s: falls at push times {falls}", flush=True)
        if any(falls):
            break
        survived = float(impulse)
    return {"largest_survived_Ns": survived, "push_times": PUSH_TIMES, "duration": PUSH_DURATION, "rows": rows}


def _markdown(result: dict[str, Any]) -> str:
    lines = [f"# Walk experiments: policy `{result['policy']}`, robot {result['robot']}", ""]
    for key in ("speeds", "turf"):
        if key not in result:
            continue
        lines += [f"## Speed ladders ({'flat' if key == 'speeds' else 'turf'}, {result['seconds']} s episodes)", "",
                  "| direction | highest velocity sustained (2nd half, no fall) | its command | paper | commands that fell |",
                  "|---|---|---|---|---|"]
        for direction, r in result[key].items():
            unit = "rad/s" if direction == "turning" else "m/s"
            fell = ", ".join(f"{row['speed']:g}" for row in r["rows"] if row["fell"]) or "none"
            paper = PAPER.get(direction) if result["robot"] == "nao" and key == "speeds" else None
            best = "none" if r["best_command"] is None else f"{r['best_command']:g} {unit}"
            achieved = "–" if r["best_achieved"] is None else f"{r['best_achieved']:.3f} {unit}"
            lines.append(f"| {direction} | {achieved} | {best} | {'–' if paper is None else f'{paper:.2f} {unit}'} | {fell} |")
        lines.append("")
    if result.get("observer"):
        o = result["observer"]
        lines += [f"## CoM observer, lateral errors at {o['speed']} m/s forward", "",
                  "| measured − expected (paper: 7.76 mm) | filtered − simulator truth | measured − truth | fell |",
                  "|---|---|---|---|",
                  f"| {o['measured_minus_expected_mm']} mm | {o['filtered_minus_truth_mm']} mm | "
                  f"{o['measured_minus_truth_mm']} mm | {o['fell']} |", ""]
    if "push" in result:
        lines += ["## Lateral push while walking in place (0.1 s, +y, four push times)", "",
                  "| configuration | largest impulse survived |", "|---|---|"]
        for label, r in result["push"].items():
            lines.append(f"| {label} | {r['largest_survived_Ns']} N·s |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", default="lipm", help="walk baseline name (default: lipm)")
    parser.add_argument("--robot", default="nao", choices=tuple(ENV_IDS))
    parser.add_argument("--experiments", default="speeds,observer,push",
                        help="comma list of speeds, observer, push, turf (default: speeds,observer,push)")
    parser.add_argument("--directions", default=None, help="comma list limiting the ladders (e.g. forward)")
    parser.add_argument("--seconds", type=float, default=20.0, help="episode length for the ladders (s)")
    parser.add_argument("--push-seconds", type=float, default=8.0, help="episode length for the pushes (s)")
    parser.add_argument("--observer-speed", type=float, default=None, help="forward speed for the observer run")
    parser.add_argument("--impulse-step", type=float, default=0.25, help="push ladder step (N·s, default 0.25)")
    parser.add_argument("--max-impulse", type=float, default=4.0, help="largest push tried (N·s, default 4)")
    parser.add_argument("--off", default="correction",
                        help="comma list of boolean params switched off for the 'without stabilisation' push runs")
    parser.add_argument("--out", required=True, help="output folder")
    args = parser.parse_args(argv)
    experiments = tuple(e.strip() for e in args.experiments.split(",") if e.strip())
    unknown = set(experiments) - {"speeds", "observer", "push", "turf"}
    if unknown:
        raise ValueError(f"unknown experiments {sorted(unknown)}; valid: speeds, observer, push, turf")
    directions = tuple(args.directions.split(",")) if args.directions else None
    policy = VariantPolicy(args.policy)
    result: dict[str, Any] = {"policy": args.policy, "robot": args.robot, "seconds": args.seconds}
    start = time.time()
    if "speeds" in experiments:
        print("speed ladders, flat", flush=True)
        result["speeds"] = speed_ladders(policy, args.robot, args.seconds, "lab", directions)
    if "turf" in experiments:
        print("speed ladders, turf", flush=True)
        result["turf"] = speed_ladders(policy, args.robot, args.seconds, "turf", ("forward",))
    if "observer" in experiments:
        speed = args.observer_speed
        if speed is None:  # full speed: the command of the fastest forward run without a fall
            speed = result.get("speeds", {}).get("forward", {}).get("best_command") or 0.1
        print(f"observer errors at {speed} m/s", flush=True)
        result["observer"] = observer_errors(policy, args.robot, speed, args.seconds)
    if "push" in experiments:
        off = {name: False for name in args.off.split(",") if name}
        result["push"] = {}
        for label, variant in ((args.policy, policy), (f"{args.policy} without {args.off}", VariantPolicy(args.policy, off))):
            print(f"pushes: {label}", flush=True)
            result["push"][label] = push_limit(variant, args.robot, args.push_seconds, args.impulse_step,
                                               args.max_impulse)
    result["wall_seconds"] = round(time.time() - start, 1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "walk_experiments.json").write_text(json.dumps(result, indent=2, default=float) + "\n")
    markdown = _markdown(result)
    (out / "walk_experiments.md").write_text(markdown + "\n")
    print(markdown)
    print(f"wrote {out / 'walk_experiments.json'} and {out / 'walk_experiments.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
