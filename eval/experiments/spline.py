"""The spline stand-up's protocols (Bit-Bots thesis and ICAR 2021 paper), cells in ``spline.yaml``.

``spline-standup`` — the thesis and lab cells, each exactly an ``upright eval`` run of one robot,
conditions preset, policy and start (``only`` picks groups by name): success (95 % Wilson
interval), time to stand and the thesis's ``stood_up`` notion (upright without the stillness
requirement, recorded by every run, see :mod:`upright.envs.metrics`), next to the sources'
reference numbers.

    upright experiment spline-standup --episodes 100 --workers 2 --out results/spline

``spline-tune`` — retune the spline stand-up's parameters for our models by simulated trials. The
ICAR paper (section IV) tunes the parameters by black-box
optimisation of simulated stand-ups with the stabiliser and any fail-safe off; this protocol does
the same for one robot and one direction with a (1+1) evolution strategy (one-fifth rule, seeded
with ``--seed``) started from the robot's parameter file. Objective (minimised, A.4's "SS" plus its
head score): ``100·(1 − success) + 10·time + head``, where ``time`` is the time to stand (or the
trial length on failure) and ``head`` is ``100·(1 − highest head height / standing head height)``
(0 on success). A trial ends at success, at the nominal motion length plus ``slack`` seconds, or
when the episode ends (:class:`TrialScore`). Each candidate is tried on ``--episodes`` seeds (from
``--seed``) of each of ``conditions`` (``per_condition`` gives one count per condition instead);
the mean score counts, and a candidate counts as successful only if every trial succeeded. When the
step size has shrunk below 1 % of the ranges it restarts at 10 % around the best point. The best
parameters and the trace are rewritten to ``OUT/spline_tune_ROBOT_DIRECTION_CONDITIONS.json`` at
every improvement.

    upright experiment spline-tune --set robot=wolfgang direction=back trials=400 --out results/tune
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import numpy as np
from tqdm import tqdm

from upright.baselines import default_params
from upright.envs.metrics import HOLD_SECONDS
from upright.envs.registration import env_id
from upright.envs.robots import ROBOT_NAMES
from upright.eval.experiments import ExperimentContext, protocol_data, register_experiment
from upright.eval.runner import Observer, run_episodes
from upright.eval.tables import Column, Table, mean_min_max, number, rate
from upright.policies.base import Policy
from upright.policies.builtin import ControllerPolicy

DATA = protocol_data(__name__)
STANDUP = DATA["standup"]
TUNE = DATA["tune"]


@register_experiment("spline-standup", "spline stand-up: the thesis and lab cells (Wolfgang, NAO)",
                     options={"only": tuple(STANDUP["groups"])})
def spline_standup(ctx: ExperimentContext) -> list[Table]:
    """Every cell of the groups in ``only``: both starts, every policy of the group. One results
    folder per cell (``ROBOT-CONDITIONS-POLICY-START``)."""
    episodes = ctx.episodes_or(STANDUP["episodes"])
    groups = ctx.option_names("only", STANDUP["groups"])
    ctx.plan(sum(len(STANDUP["groups"][name]["policies"]) for name in groups) * len(STANDUP["starts"]) * episodes)
    rows = []
    for name in groups:
        group = STANDUP["groups"][name]
        robot, conditions = group["robot"], group["conditions"]
        for policy in group["policies"]:
            for start in STANDUP["starts"]:
                result = ctx.run_cell(f"{robot}-{conditions}-{policy}-{start}", env_id(robot, "getup"),
                                      ctx.policy(policy), {"start": start, "conditions": conditions}, episodes)
                rows.append({"robot": robot, "conditions": conditions, "policy": policy, "start": start,
                             "success": (result["successes"], result["episodes"]),
                             "time_to_stand": result["time_to_stand"],
                             "stood_up": (result["stood_up"], result["episodes"])})
    columns = [Column("robot", "robot"), Column("conditions", "conditions"), Column("policy", "policy"),
               Column("start", "start"), Column("success", "success", rate),
               Column("time to stand (s) mean / min / max", "time_to_stand", mean_min_max()),
               Column("stood up (thesis notion, no stillness)", "stood_up", rate)]
    return [Table("Spline stand-up", columns, rows,
                  notes=f"{episodes} episodes per cell, seeds {ctx.seed}..{ctx.seed + episodes - 1}. "
                        + STANDUP["reference"])]


class TrialScore(Observer):
    """One stand-up trial of the search: ends the episode at success or at the controller's nominal
    motion length plus ``slack`` s, and adds ``score``, ``succeeded`` and ``trial_time`` (s) to the
    record (see the module docstring). ``criterion`` ``success``: the package's get-up success;
    ``stood_up``: the thesis notion, upright (torso and head) for
    :data:`~upright.envs.metrics.HOLD_SECONDS` without the stillness requirement (for conditions
    with a random force, under which the IMU is never still)."""

    def __init__(self, slack: float, criterion: str) -> None:
        if criterion not in ("success", "stood_up"):
            raise ValueError(f"criterion must be success or stood_up, got {criterion!r}")
        self.slack = slack
        self.criterion = criterion
        self._reset()

    def _reset(self) -> None:
        self.limit: float | None = None
        self.best_head = 0.0
        self.upright_since: float | None = None
        self.success = False
        self.time = 0.0

    def on_reset(self, env: gym.Env, policy: Policy, info: dict[str, Any]) -> None:
        self._reset()

    def on_step(self, env: gym.Env, policy: Policy, action: np.ndarray, info: dict[str, Any]) -> bool:
        if self.limit is None:  # the controller plans its motion at its first step
            self.limit = policy.controller.plan.duration + self.slack
        self.best_head = max(self.best_head, info["head_height"])
        if info["upright"]:
            self.upright_since = info["time"] if self.upright_since is None else self.upright_since
        else:
            self.upright_since = None
        if self.criterion == "success":
            self.success = bool(info["success"])
        else:
            self.success = self.upright_since is not None and info["time"] - self.upright_since >= HOLD_SECONDS - 1e-9
        self.time = float(info["time"])
        return self.success or self.time >= self.limit

    def on_episode_end(self, env: gym.Env, policy: Policy, record: dict[str, Any]) -> dict[str, Any]:
        t = self.time
        if self.success:
            score = 10.0 * t
        else:
            score = 100.0 + 10.0 * t + 100.0 * (1.0 - min(self.best_head / env.unwrapped.standing.head_height, 1.0))
        return {"score": score, "succeeded": self.success, "trial_time": t}


@register_experiment("spline-tune", "spline stand-up: (1+1)-ES search of the motion parameters (ICAR paper A.4)",
                     options={"robot": None, "direction": None, "trials": TUNE["trials"], "conditions": ("lab",),
                              "per_condition": None, "slack": TUNE["slack"], "criterion": "success"})
def spline_tune(ctx: ExperimentContext) -> list[Table]:
    """The (1+1)-ES of the module docstring for ``robot`` and ``direction`` (front, back); the
    best parameters as a table (to copy into the robot's parameter file), the whole search in
    ``results.json``'s ``data``."""
    o = ctx.options
    robot, direction = o["robot"], o["direction"]
    if robot not in ROBOT_NAMES or direction not in TUNE["search"]:
        raise ValueError(f"spline-tune needs --set robot={{{','.join(ROBOT_NAMES)}}} "
                         f"direction={{{','.join(TUNE['search'])}}}, got robot={robot!r} direction={direction!r}")
    conditions = ctx.option_names("conditions")
    counts = [ctx.episodes_or(TUNE["episodes"])] * len(conditions) if o["per_condition"] is None else \
        [int(n) for n in np.atleast_1d(o["per_condition"])]
    if len(counts) != len(conditions):
        raise ValueError(f"give one per_condition count per condition, got {counts} for {conditions}")
    space = TUNE["search"][direction]
    names = list(space)
    low = np.array([space[n][0] for n in names])
    high = np.array([space[n][1] for n in names])
    params = default_params("spline", robot).with_overrides(TUNE["fixed"])
    start = TUNE["start"][direction]
    env = env_id(robot, "getup")
    trial = TrialScore(float(o["slack"]), o["criterion"])

    def evaluate(x: np.ndarray) -> tuple[float, bool]:
        """Mean score over every condition's seeds, and whether every trial succeeded."""
        policy = ControllerPolicy("spline", params=params.with_overrides(dict(zip(names, x.tolist()))))
        records = [r for c, n in zip(conditions, counts)
                   for r in run_episodes(env, policy, n, seed=ctx.seed, workers=ctx.workers, progress=False,
                                         observers=[trial],
                                         env_kwargs=ctx.env_kwargs({"start": start, "conditions": c,
                                                                    "max_episode_seconds": TUNE["max_episode_seconds"]})
                                         ).records]
        return float(np.mean([r["score"] for r in records])), all(r["succeeded"] for r in records)

    ctx.plan((max(int(o["trials"]), 0) + 1) * sum(counts))  # the starting point, then one evaluation per trial
    rng = np.random.default_rng(ctx.seed)
    x = np.clip(np.array([getattr(params, n) for n in names]), low, high)
    best, ok = evaluate(x)
    sigma, trace = 0.15, [(0, best, ok)]
    path = ctx.out / f"spline_tune_{robot}_{direction}_{'+'.join(conditions)}.json"
    ctx.out.mkdir(parents=True, exist_ok=True)

    def result() -> dict[str, Any]:
        return {"robot": robot, "direction": direction, "conditions": list(conditions), "episodes": counts,
                "best_score": best, "all_succeeded": ok, "params": dict(zip(names, x.tolist())), "trace": trace}

    bar = tqdm(range(1, int(o["trials"]) + 1), desc=f"spline-tune {robot} {direction}", unit="trial",
               disable=not ctx.progress)
    for k in bar:
        candidate = np.clip(x + sigma * (high - low) * rng.standard_normal(len(names)), low, high)
        score, success = evaluate(candidate)
        if score <= best:
            x, best, ok = candidate, score, success
            sigma = min(sigma * 1.5, 0.3)
            path.write_text(json.dumps(result(), indent=1))
        else:
            sigma *= 1.5 ** -0.25
            if sigma < 0.01:  # converged: restart the step size around the best point
                sigma = 0.1
        trace.append((k, best, ok))
        bar.set_postfix(best=f"{best:.1f}", all_succeeded=ok, sigma=f"{sigma:.3f}")
    ctx.data.update(result())
    path.write_text(json.dumps(result(), indent=1))
    rows = [{"parameter": n, "value": v, "low": lo, "high": hi} for n, v, lo, hi in zip(names, x.tolist(), low, high)]
    return [Table(f"Best spline parameters, {robot} {direction} ({', '.join(conditions)})",
                  [Column("parameter", "parameter"), Column("value", "value", number(4)),
                   Column("low", "low", number(3)), Column("high", "high", number(3))], rows,
                  notes=f"Best score {best:.2f} after {o['trials']} trials; all trials succeeded: {ok}.")]
