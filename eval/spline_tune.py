"""Retune the spline stand-up's parameters for our models by simulated trials (``--help``).

The ICAR paper (section IV, reference/controllers.md A.4) tunes the dynup parameters by black-box
optimisation of simulated stand-ups with the stabiliser and any fail-safe off; this script does the
same for one robot and one direction with a (1+1) evolution strategy (one-fifth rule) started from
the values in ``baselines/data/spline_<robot>.yaml``. Objective (minimised, A.4's "SS" plus its
head score): ``100·(1 − success) + 10·time + head``, where ``time`` is the time to stand (or the
trial length on failure) and ``head`` is ``100·(1 − highest head height / standing head height)``
(0 on success). Success is the package's get-up success (``envs/metrics.py``) within the nominal
motion length plus ``--slack`` seconds. Each candidate is tried on ``--episodes`` seeds of each of
the ``--conditions`` (e.g. ``lab turf``; ``--episodes`` one count or one per condition; the mean
score counts) and must succeed on all of them to
count as successful.

Writes ``<out>/spline_tune_<robot>_<direction>_<conditions>.json`` (the best parameters, the search
trace; rewritten at every improvement) and prints the best values to copy into the data file.
When the step size has shrunk below 1 % of the ranges it restarts at 10 % around the best point.

    python -m upright.eval.spline_tune --robot wolfgang --direction back --trials 400 --out results/tune
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import gymnasium as gym
import numpy as np

import upright  # noqa: F401  (registers the environments)
from upright.baselines.spline import SplineStandUp
from upright.baselines.spline_params import SplineParams, load_params
from upright.envs.registration import env_id
from upright.envs.robots import ROBOT_NAMES
from upright.envs.metrics import HOLD_SECONDS

#: Searched parameters per direction with their ranges (reference/controllers.md A.4, angles in rad).
#: ``rise_time`` is common to both directions and searched with ``front`` only.
SEARCH: dict[str, dict[str, tuple[float, float]]] = {
    "front": {
        "time_hands_side": (0.05, 1.0), "time_hands_rotate": (0.05, 1.0), "time_hands_front": (0.05, 1.0),
        "time_foot_close": (0.0, 1.0), "time_foot_ground_front": (0.0, 1.0), "time_torso_45": (0.05, 1.0),
        "time_to_squat": (0.1, 1.5), "wait_in_squat_front": (0.0, 2.0), "rise_time": (0.2, 2.0),
        "arm_side_offset_front": (0.05, 0.2), "hands_pitch": (-np.pi / 2, 0.0), "leg_min_length_front": (0.1, 0.35),
        "max_leg_angle": (0.0, np.pi / 2), "trunk_overshoot_angle_front": (-np.pi / 4, 0.0),
        "trunk_x_front": (-0.1, 0.1),
    },
    "back": {
        "time_legs_close": (0.0, 1.0), "time_foot_ground_back": (0.0, 1.0), "time_full_squat_hands": (0.0, 1.0),
        "time_full_squat_legs": (0.0, 1.0), "wait_in_squat_back": (0.0, 2.0),
        "arm_side_offset_back": (0.05, 0.25), "arms_angle_back": (np.pi / 2, np.pi), "com_shift_1": (0.0, 0.2),
        "com_shift_2": (0.0, 0.2), "foot_angle": (0.0, np.pi / 2), "hands_behind_back_x": (0.0, 0.3),
        "hands_behind_back_z": (0.0, 0.3), "leg_min_length_back": (0.1, 0.35), "trunk_height_back": (0.0, 0.3),
        "trunk_overshoot_angle_back": (0.0, np.pi / 4),
    },
}


def trial(env: gym.Env, params: SplineParams, start: str, seed: int, slack: float,
          criterion: str = "success") -> tuple[float, bool, float]:
    """One stand-up attempt: ``(score, success, time)`` (see the module docstring). ``criterion``
    ``success``: the package's get-up success; ``stood_up``: the thesis notion, upright (torso and
    head) for :data:`~upright.envs.metrics.HOLD_SECONDS` without the stillness requirement (for
    conditions with a random force, under which the IMU is never still)."""
    base = env.unwrapped
    controller = SplineStandUp(base.robot, params)
    _, info = env.reset(seed=seed)
    controller.reset(info["sensors"], np.random.default_rng(seed))
    limit = controller.plan.duration + slack
    best_head, upright_since, success = 0.0, None, False
    while True:
        targets = controller.step(info["sensors"])
        _, _, terminated, _, info = env.step(base.action_from_targets(targets))
        best_head = max(best_head, info["head_height"])
        upright_since = (upright_since if upright_since is not None else info["time"]) if info["upright"] else None
        if criterion == "success":
            success = bool(info["success"])
        else:
            success = upright_since is not None and info["time"] - upright_since >= HOLD_SECONDS - 1e-9
        if success or terminated or info["time"] >= limit:
            break
    t = float(info["time"])
    if success:
        return 10.0 * t, True, t
    return 100.0 + 10.0 * t + 100.0 * (1.0 - min(best_head / base.standing.head_height, 1.0)), False, t


def evaluate(envs: list[gym.Env], params: SplineParams, start: str, seeds: list[list[int]],
             slack: float, criterion: str = "success") -> tuple[float, bool]:
    """Mean score over the seeds of every env (``seeds[i]`` for ``envs[i]``) and whether every
    attempt succeeded."""
    results = [trial(env, params, start, s, slack, criterion) for env, env_seeds in zip(envs, seeds) for s in env_seeds]
    return float(np.mean([r[0] for r in results])), all(r[1] for r in results)


def search(robot: str, direction: str, trials: int, conditions: list[str], episodes: list[int], seed: int,
           slack: float, out: Path | None = None, criterion: str = "success") -> dict:
    """The (1+1)-ES of the module docstring; returns the best parameters and the trace (also
    written to ``out`` after every improvement when given)."""
    rng = np.random.default_rng(seed)
    space = SEARCH[direction]
    names = list(space)
    low = np.array([space[n][0] for n in names])
    high = np.array([space[n][1] for n in names])
    params = load_params(robot).with_(fail_safe=False, stabilizing=True)
    x = np.clip(np.array([getattr(params, n) for n in names]), low, high)
    start = "prone" if direction == "front" else "supine"
    envs = [gym.make(env_id(robot, "getup"), start=start, conditions=c, max_episode_seconds=20.0) for c in conditions]
    if len(episodes) not in (1, len(conditions)):
        raise ValueError(f"give one episode count or one per condition, got {episodes} for {conditions}")
    seeds = [list(range(n)) for n in (episodes * len(conditions) if len(episodes) == 1 else episodes)]
    best, ok = evaluate(envs, params.with_(**dict(zip(names, x.tolist()))), start, seeds, slack, criterion)
    sigma, trace = 0.15, [(0, best, ok)]

    def result() -> dict:
        return {"robot": robot, "direction": direction, "conditions": conditions, "episodes": episodes,
                "best_score": best, "all_succeeded": ok, "params": dict(zip(names, x.tolist())), "trace": trace}

    for k in range(1, trials + 1):
        candidate = np.clip(x + sigma * (high - low) * rng.standard_normal(len(names)), low, high)
        score, success = evaluate(envs, params.with_(**dict(zip(names, candidate.tolist()))), start, seeds, slack, criterion)
        if score <= best:
            x, best, ok = candidate, score, success
            sigma = min(sigma * 1.5, 0.3)
            if out is not None:
                out.write_text(json.dumps(result(), indent=1))
        else:
            sigma *= 1.5 ** -0.25
            if sigma < 0.01:  # converged: restart the step size around the best point
                sigma = 0.1
        trace.append((k, best, ok))
        if k % 10 == 0:
            print(f"trial {k}: best score {best:.1f} (all succeeded: {ok}), sigma {sigma:.3f}", flush=True)
    for env in envs:
        env.close()
    return result()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robot", choices=ROBOT_NAMES, required=True)
    parser.add_argument("--direction", choices=sorted(SEARCH), required=True)
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--conditions", nargs="+", default=["lab"])
    parser.add_argument("--episodes", type=int, nargs="+", default=[1],
                        help="seeds per candidate: one count, or one per condition (e.g. 1 for lab)")
    parser.add_argument("--slack", type=float, default=3.0, help="seconds after the nominal end")
    parser.add_argument("--criterion", choices=("success", "stood_up"), default="success",
                        help="what counts as standing up (stood_up: no stillness requirement)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"spline_tune_{args.robot}_{args.direction}_{'+'.join(args.conditions)}.json"
    result = search(args.robot, args.direction, args.trials, args.conditions, args.episodes, args.seed, args.slack,
                    path, args.criterion)
    path.write_text(json.dumps(result, indent=1))
    print(f"best score {result['best_score']:.2f}, all succeeded: {result['all_succeeded']}; written {path}")
    for name, value in result["params"].items():
        print(f"{name}: {value:.4g}")


if __name__ == "__main__":
    main()
