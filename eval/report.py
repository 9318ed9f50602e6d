"""The main job's report: it opens with one comparison table, every available policy (baselines,
shipped residuals, ``zero``/``random``/``hold``) on the four environments and each shipped policy
beside its prior where it was trained (:mod:`upright.eval.comparison`), then the success-rate,
learning-curve and walk-tracking PNGs, model summaries, pictures, standing/lying checks and the
benchmark.

Writes ``OUT/report.md`` (human-readable), ``OUT/report.json`` (numbers), ``OUT/*.png`` and one
``OUT/eval/<nn>-<env>-<policy>/results.json`` per evaluation.

``robots`` limits the report to some robots; environment ``settings`` (``upright report --set``)
reach every evaluated cell, among them a user's model of the robot (``model=``, ``model_map=``):
then the robot's checks and pictures are of that model, its section opens with ``upright
check-model``'s comparison, and a cell whose baseline (or a shipped policy's prior) needs joints
the model lacks is skipped, as one line counts.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from upright.baselines import baseline_entry, controller_names, lacking_limbs
from upright.envs.conditions import Conditions
from upright.envs.registration import ENVIRONMENTS
from upright.envs.render import RenderingUnavailable
from upright.envs.robots import ROBOT_NAMES, RobotSpec, get_robot, with_model
from upright.envs.simulation import Simulation
from upright.eval.bench.speed import format_bench, run_bench, summary
from upright.eval.check_model import check_model
from upright.eval.comparison import comparison_cells, comparison_table, plot_rates, plot_walk_tracking
from upright.eval.history import draw_learning_curves
from upright.eval.pictures import render_pose
from upright.eval.results import aggregate, write_results
from upright.eval.robot_info import robot_info
from upright.eval.runner import check_episodes, overall_progress, run_episodes
from upright.policies.feedback import is_feedback_policy
from upright.policies.registry import policy_names

#: Episodes per cell of the main job's short evaluation (the full numbers: ``upright experiment``).
REPORT_EPISODES = 8
#: Seed of episode 0 of every cell: held out from the shipped policies' training (episode seeds in
#: [0, 2^31)) and model selection (1000000 + i), like the ``trained-residuals`` protocol's.
REPORT_SEED = 3_000_000_000


def report_robots(robots: tuple[str, ...] = ROBOT_NAMES, settings: Mapping[str, Any] | None = None
                  ) -> dict[str, RobotSpec]:
    """The report's robots by name: ``robots``, each on the user's model that the environment
    ``settings`` name (``model``, ``model_map``: a model of one robot, so ``robots`` must be that
    one; ValueError otherwise, and for a model or map that does not fit)."""
    settings = settings or {}
    unknown = [r for r in robots if r not in ROBOT_NAMES]
    if unknown or not robots:
        raise ValueError(f"unknown robots {unknown or list(robots)}; valid robots: {', '.join(ROBOT_NAMES)}")
    model, model_map = settings.get("model"), settings.get("model_map")
    if (model is not None or model_map is not None) and len(robots) != 1:
        raise ValueError(f"model={model} is a model of one robot: report on that robot alone (--robot "
                         f"{'|'.join(ROBOT_NAMES)})")
    return {name: with_model(get_robot(name), model, model_map) for name in robots}


def evaluate_all(out: Path, episodes: int = REPORT_EPISODES, workers: int = 2,
                 episode_seconds: float | None = None, robots: tuple[str, ...] = ROBOT_NAMES,
                 settings: Mapping[str, Any] | None = None) -> list[dict[str, object]]:
    """Run every cell of :func:`~upright.eval.comparison.comparison_cells` on the environments of
    ``robots`` (episode i: seed :data:`REPORT_SEED` + i; ``episode_seconds``, when given, caps
    every episode's length in s; the environment ``settings`` over every cell's arguments: see
    :func:`report_robots`), writing ``out/eval/<nn>-<env>-<policy>/results.json`` each; return the
    aggregates. A baseline that does not fit an environment's robot or task, or whose limbs (or a
    shipped policy's prior's) the model lacks, is skipped (one line counts them); every other
    cell's environment and policy are built once before the first episode runs, so a setting that
    fails (ValueError) fails before any work."""
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes!r}")
    specs = report_robots(robots, settings)
    env_ids = [env_id for env_id, spec in ENVIRONMENTS.items() if spec.robot in specs]
    tasks = {env_id: spec.task for env_id, spec in ENVIRONMENTS.items()}
    cells, skipped, refused = [], 0, 0
    for i, (env_id, policy, kwargs) in enumerate(comparison_cells(env_ids, tasks, policy_names())):
        name = policy if isinstance(policy, str) else policy.name  # a re-parameterised prior is a Policy
        misfit = _misfit(name, env_id) if isinstance(policy, str) else None
        if misfit:
            skipped += 1
            continue
        kwargs = {**kwargs, **(settings or {})}
        # the baseline that acts: a baseline by name, a re-parameterised one, or a residual's prior
        baseline = (name if name in controller_names() else getattr(policy, "baseline", None)
                    or kwargs.get("prior"))
        if baseline is not None and lacking_limbs(baseline, specs[ENVIRONMENTS[env_id].robot]):
            refused += 1
            continue
        if episode_seconds is not None:
            kwargs = {**kwargs, "max_episode_seconds": min(episode_seconds, kwargs.get("max_episode_seconds",
                                                                                        episode_seconds))}
        check_episodes(env_id, policy, kwargs, seed=REPORT_SEED)
        cells.append((i, env_id, policy, name, kwargs))
    if skipped:
        print(f"skipped {skipped} baseline-environment pair{'s' * (skipped != 1)} that do not fit (another robot or "
              "task)")
    if refused:
        print(f"skipped {refused} cell{'s' * (refused != 1)} whose baseline or prior needs joints the model lacks")
    results = []
    with overall_progress(len(cells) * episodes, f"report: {len(cells)} cells", enabled=bool(cells)):  # with its ETA
        for i, env_id, policy, name, kwargs in cells:
            run = run_episodes(env_id, policy, episodes, env_kwargs=kwargs, seed=REPORT_SEED, workers=workers)
            result = aggregate(run)
            folder = re.sub(r"[^A-Za-z0-9_.+-]+", "-", name).strip("-")
            write_results(result, out / "eval" / f"{i:02d}-{env_id.split('/')[-1]}-{folder}")
            results.append(result)
            if run.interrupted:
                break
    return results


def _misfit(policy: str, env_id: str) -> str | None:
    """Why the baseline or hand-designed residual ``policy`` does not run in ``env_id``'s standard
    setting (None: it does, or ``policy`` is neither): a baseline of another robot or task, a
    residual (it needs its prior, which the standard setting has not)."""
    if is_feedback_policy(policy):
        return "a hand-designed residual needs an environment with its prior"
    if policy not in controller_names():
        return None
    entry, env = baseline_entry(policy), ENVIRONMENTS[env_id]
    if env.robot not in entry.robots:
        return f"baseline {policy!r} supports robots {entry.robots}, not {env.robot!r}"
    if env.task != entry.task:
        return f"baseline {policy!r} is a {entry.task} controller, not for the {env.task!r} task"
    return None


def hold_check(robot: str | RobotSpec, pose: str, seconds: float, height_offset: float = 0.0,
               seed: int = 0) -> dict[str, float]:
    """Hold ``pose`` for ``seconds`` on flat ground with ``robot`` (a name, or a description, e.g. on
    a user's model); return tilt change, drift, deepest floor penetration and the final kinetic
    energy."""
    sim = Simulation(robot, Conditions())
    sim.reset(pose, seed=seed, height_offset=height_offset)
    start, _ = sim.torso_pose()
    tilt0 = sim.torso_tilt()
    targets = sim.data.ctrl.copy()
    tilt = drift = depth = 0.0
    for _ in range(int(round(seconds / sim.robot.control_period))):
        sim.step(targets)
        pos, _ = sim.torso_pose()
        tilt = max(tilt, abs(sim.torso_tilt() - tilt0))
        drift = max(drift, float(np.linalg.norm(pos[:2] - start[:2])))
        depth = max(depth, sim.floor_penetration())
    return {
        "max_tilt_change_deg": float(np.rad2deg(tilt)),
        "max_drift_m": drift,
        "max_penetration_m": depth,
        "final_kinetic_energy_J": sim.kinetic_energy(),
        "unstable": sim.unstable,
    }


def write_report(out: Path, bench_steps: int = 400, episodes: int = REPORT_EPISODES,
                 episode_seconds: float | None = None, robots: tuple[str, ...] = ROBOT_NAMES,
                 settings: Mapping[str, Any] | None = None) -> Path:
    """Evaluate the policies (``episode_seconds``: a cap on every episode's length, s), run the
    checks, render the pictures and the benchmark; write the report files to ``out``. ``robots``
    and the environment ``settings``: see :func:`evaluate_all` (a user's model: ``model``,
    ``model_map``). ValueError for a count below one, an episode length that is not a finite
    number of seconds > 0, or robots and settings that do not fit, before ``out`` is made."""
    if episode_seconds is not None and not 0 < episode_seconds < math.inf:
        raise ValueError(f"--episode-seconds must be a finite number > 0, got {episode_seconds!r}")
    if episodes < 1 or bench_steps < 1:
        raise ValueError(f"--episodes and --bench-steps must be >= 1, got {episodes} and {bench_steps}")
    specs = report_robots(robots, settings)
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, object] = {"robots": {}}
    evaluations = evaluate_all(out, episodes, episode_seconds=episode_seconds, robots=robots, settings=settings)
    results["evaluations"] = evaluations
    seeds = f"{REPORT_SEED}..{REPORT_SEED + episodes - 1}"
    table = comparison_table(evaluations, f"{episodes} episodes per row, seeds {seeds} (held out from training "
                             "and model selection): a short look; "
                             "the full numbers come from `upright experiment` (e.g. `trained-residuals`, 200 "
                             "held-out episodes per row). Per-run files under `eval/`. Under a continuous random "
                             "force (`thesis`) `success` cannot be reached by its definition (the IMU still, "
                             "|ω| < 0.15 rad/s, for 1 s): read `stood up`, the time upright and the falls there.")
    plots = [plot_rates(evaluations, out / "rates.png"), plot_walk_tracking(evaluations, out / "walk_tracking.png"),
             *draw_learning_curves(out)]
    models = [f"{name} on the model {robot.model}" + (f" (map {robot.model_map})" if robot.model_map else "")
              for name, robot in specs.items() if robot.model is not None]
    md = ["# upright report", "", *([f"Every evaluation, check and picture of {models[0]}; its section compares "
                                     "it with ours (`upright check-model`).", ""] if models else []),
          table.markdown(), *[f"![{p.stem}]({p.name})" for p in plots], ""]
    pictures_note = None
    for name, robot in specs.items():
        checks = {robot.standing_pose: hold_check(robot, robot.standing_pose, 10.0)}
        for pose in robot.lying_poses:
            checks[pose] = hold_check(robot, pose, 2.0, height_offset=0.05)
        pictures = []
        for pose in robot.poses:
            for terrain in ("flat", "turf"):
                try:
                    path = render_pose(robot, pose, terrain, out / f"{name}_{pose}_{terrain}.png", settle=1.0)
                    pictures.append(path.name)
                except RenderingUnavailable as error:
                    pictures_note = str(error)
        results["robots"][name] = {"checks": checks, "pictures": pictures,
                                   "model": None if robot.model is None else str(robot.model),
                                   "model_map": None if robot.model_map is None else str(robot.model_map)}
        description = (robot_info(name) if robot.model is None else
                       check_model(robot.model, name, robot.model_map))
        md += [f"## {name}" + ("" if robot.model is None else f" on the model {robot.model}"), "", "```",
               description, "```", "",
               "| pose | seconds held | max tilt change (°) | max drift (m) | max floor penetration (mm) | final kinetic energy (J) |",
               "|---|---|---|---|---|---|"]
        for pose, c in checks.items():
            seconds = 10.0 if pose == robot.standing_pose else 2.0
            md.append(f"| {pose} | {seconds:.0f} | {c['max_tilt_change_deg']:.2f} | {c['max_drift_m']:.4f} | "
                      f"{1e3 * c['max_penetration_m']:.2f} | {c['final_kinetic_energy_J']:.4f} |")
        md.append("")
        md += [f"![{p}]({p})" for p in pictures]
        md.append("")
    if pictures_note:
        md += [f"Pictures skipped: {pictures_note}", ""]
    rows = run_bench(bench_steps)
    results["bench"] = [asdict(r) for r in rows]
    results["bench_ratio_min"] = summary(rows)
    md += ["## Benchmark", "", "```", format_bench(rows), "```", ""]
    (out / "report.json").write_text(json.dumps(results, indent=2))
    path = out / "report.md"
    path.write_text("\n".join(md))
    print(format_bench(rows, width=shutil.get_terminal_size().columns))  # COLUMNS, the terminal's, else 80
    return path
