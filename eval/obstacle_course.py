"""The obstacle-course experiment of Reichenberg & Röfer, "Step Adjustment for a Robust Humanoid
Walk" (section 6, Tables 1 and 2), on the ``obstacles`` terrain (:data:`~upright.envs.terrain.OBSTACLE_COURSE`).

NAO walks along +x across the course with the step_adjust walk in the configurations Old (no
stabilisation), WSA (step adjustment only), SFL (swing-foot leveling only) and New (both). Each run
is one simulated robot: the seed draws its wear, sensor noise, mass and friction (:data:`ROBOTS`,
the competition preset's robot variations without turf and pushes; run ``i`` uses the same robot in
every configuration). Like the paper's robots, a robot that falls is counted at the obstacle under
its torso and put back standing at that spot (on the course's centre line, facing +x) as the same
robot with its clock running on (:meth:`Simulation.place`: a stuck-joint window that felled it
does not recur); the run ends
when it has crossed the course or after :data:`TIME_FACTOR` times the nominal crossing time.

The paper's robots walked to targets on the field with their own localisation; here the walk's
yaw-rate command steers back to the centre line from the simulator's torso pose (a stand-in for
localisation, ``STEER_GAIN``), which only the experiment sees.

    python -m upright.eval.obstacle_course --runs 8 --out results/obstacle_course

Table 1: Old / WSA / SFL / New at 250 mm/s; Table 2: Old and New at 300 and 350 mm/s (commands
above the walk's ``max_forward`` are clipped by the walk, NAO: 0.3 m/s, rUNSWift's MAX_FORWARD;
``--param max_forward=0.35`` raises that cap so the walk really commands 350 mm/s).
``--only New@0.25 ...`` runs some columns, ``--merge a.json b.json`` builds the tables from saved runs. Writes
``obstacle_course.json`` and ``obstacle_course.md`` under ``--out`` and prints both tables.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from scipy.stats import wilcoxon
from upright.baselines.step_adjust import CONFIGURATIONS, StepAdjustWalk, load_params
from upright.envs.conditions import Conditions, RandomWear
from upright.envs.terrain import OBSTACLE_COURSE, obstacle_at
from upright.eval.walk_experiments import parse_params, with_params

#: The robots of the runs: the competition preset's robot variations on the obstacle course.
ROBOTS = Conditions(
    terrain="obstacles", random_wear=RandomWear(), delay_jitter_cycles=1, joint_noise=0.002, gyro_noise=0.01,
    accel_noise=0.05, mass_scale=(0.95, 1.05), com_offset=0.005, friction_scale=(0.7, 1.2),
)
COURSE_END = OBSTACLE_COURSE[-1].x_end
#: A run may last this many times the nominal crossing time (course length / speed) plus 5 s.
TIME_FACTOR = 2.0
#: Steering (the localisation stand-in): yaw-rate command (rad/s) per rad of heading error towards
#: a point 1 m ahead on the centre line, limited to MAX_STEER.
STEER_GAIN = 1.5
MAX_STEER = 0.5
TABLE1 = (0.25, ("Old", "WSA", "SFL", "New"))
TABLE2 = ((0.30, 0.35), ("Old", "New"))


def _yaw(quat: np.ndarray) -> float:
    w, x, y, z = quat
    return float(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))


def run_course(configuration: str, speed: float, seed: int, changes: dict[str, Any] | None = None) -> dict[str, Any]:
    """One robot (``seed``) crossing the course at ``speed`` m/s: the x (m) and obstacle of every
    fall, whether it reached the end, and the simulated time. ``changes``: fields of the walk's
    params changed before the configuration is applied (e.g. ``{"max_forward": 0.35}``)."""
    env = gym.make("upright/NaoWalk-v0", command=(speed, 0.0, 0.0), conditions=ROBOTS, max_episode_seconds=1e6)
    base = env.unwrapped
    walk = StepAdjustWalk(base.robot, with_params(load_params("nao"), changes or {}).with_configuration(configuration))
    _, info = env.reset(seed=seed)
    sim = base.sim
    start_qpos, start_ctrl = sim.data.qpos.copy(), sim.data.ctrl.copy()
    budget = TIME_FACTOR * COURSE_END / speed + 5.0
    falls: list[dict[str, Any]] = []
    elapsed, reached = 0.0, False

    def restart(sensors: Any) -> None:
        walk.set_command(np.array([speed, 0.0, 0.0]))
        walk.reset(sensors, np.random.default_rng(seed))

    restart(info["sensors"])
    while elapsed < budget:
        sensors = info["sensors"]
        pos, quat = sim.torso_pose()
        heading_error = np.arctan2(-pos[1], 1.0) - _yaw(quat)
        heading_error = (heading_error + np.pi) % (2 * np.pi) - np.pi
        walk.set_command(np.array([speed, 0.0, float(np.clip(STEER_GAIN * heading_error, -MAX_STEER, MAX_STEER))]))
        _, _, terminated, _, info = env.step(base.action_from_targets(walk.step(sensors)))
        elapsed += base.robot.control_period
        pos, _ = sim.torso_pose()
        if pos[0] >= COURSE_END:
            reached = True
            break
        if terminated:
            x = float(pos[0])
            pitch, roll = base.posture().fused_pitch, base.posture().fused_roll
            direction = ("forward" if pitch > 0 else "backward") if abs(pitch) >= abs(roll) else (
                "right" if roll > 0 else "left")
            falls.append({"x": x, "obstacle": obstacle_at(x) or "beyond the course", "time": elapsed,
                          "direction": direction})
            qpos = start_qpos.copy()
            qpos[0] = x
            sensors = sim.place(qpos, start_ctrl)
            info = {"sensors": sensors}
            restart(sensors)
    env.close()
    return {"configuration": configuration, "speed": speed, "seed": seed, "params": dict(changes or {}), "falls": falls,
            "reached_end": reached, "seconds": elapsed}


def _run_task(task: tuple[str, float, int, dict[str, Any]]) -> dict[str, Any]:
    return run_course(*task)


def falls_table(runs: list[dict[str, Any]], columns: list[tuple[str, float]]) -> list[list[str]]:
    """Rows ``obstacle, falls per column..., sum`` like the paper's tables, then a ``sum`` row and
    a ``runs reaching the end`` row."""
    names = [ob.name for ob in OBSTACLE_COURSE] + ["beyond the course"]
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
    rows = []
    for n in names:
        if n == "beyond the course" and not any(counts[c][n] for c in columns):
            continue
        values = [counts[c][n] for c in columns]
        rows.append([n, *map(str, values), str(sum(values))])
    totals = [sum(counts[c].values()) for c in columns]
    rows.append(["sum", *map(str, totals), str(sum(totals))])
    rows.append(["runs reaching the end", *(f"{finished[c][0]}/{finished[c][1]}" for c in columns), ""])
    return rows


def against_old(runs: list[dict[str, Any]], columns: list[tuple[str, float]]) -> list[list[str]]:
    """Rows ``configuration@speed, falls per run, change against Old, paired Wilcoxon p, falls
    forward or backward / sideways, robots`` for every
    column with an Old column at the same speed: the runs with the same seed are the same simulated
    robot, so the comparison pairs them (scipy's signed-rank test, two-sided; "–" when every pair
    ties)."""
    def falls(col: tuple[str, float]) -> dict[int, int]:
        return {r["seed"]: len(r["falls"]) for r in runs if (r["configuration"], r["speed"]) == col}

    def sagittal(col: tuple[str, float]) -> str:  # falls forward or backward / sideways
        directions = [f["direction"] for r in runs if (r["configuration"], r["speed"]) == col for f in r["falls"]]
        n = sum(d in ("forward", "backward") for d in directions)
        return f"{n} / {len(directions) - n}"

    rows = []
    for col in columns:
        old = falls(("Old", col[1]))
        if col[0] == "Old" or not old:
            continue
        new = falls(col)
        seeds = sorted(set(old) & set(new))
        a, b = np.array([new[s] for s in seeds]), np.array([old[s] for s in seeds])
        p = f"{wilcoxon(a, b).pvalue:.3f}" if np.any(a != b) else "–"
        change = f"{(a.sum() - b.sum()) / b.sum():+.0%}" if b.sum() else "–"
        rows.append([f"{col[0]} {round(col[1] * 1000)} mm/s", f"{a.mean():.2f} (Old {b.mean():.2f})", change, p,
                     f"{sagittal(col)} (Old {sagittal(('Old', col[1]))})", str(len(seeds))])
    return rows


def markdown(title: str, columns: list[tuple[str, float]], rows: list[list[str]],
             comparison: list[list[str]] | None = None) -> str:
    header = ["obstacle", *(f"{c} {round(v * 1000)} mm/s" for c, v in columns), "sum"]
    lines = [f"**{title}**", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    if comparison:
        lines += ["", "| against Old (same robots) | falls per run | change | paired Wilcoxon p "
                      "| falls front-to-back / sideways | robots |", "|---|---|---|---|---|---|"]
        lines += ["| " + " | ".join(row) + " |" for row in comparison]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=8, help="runs (robots) per configuration and speed")
    parser.add_argument("--seed", type=int, default=0, help="run i uses seed + i")
    parser.add_argument("--tables", nargs="+", default=["1", "2"], choices=["1", "2"])
    parser.add_argument("--only", nargs="+", default=None, metavar="CONFIG@SPEED",
                        help="run only these columns (e.g. New@0.25); the tables show what was run")
    parser.add_argument("--merge", nargs="+", default=None, metavar="JSON",
                        help="run nothing: build the tables from the runs in these obstacle_course.json files")
    parser.add_argument("--param", nargs="+", default=[], metavar="KEY=VALUE",
                        help="change fields of the walk's params, e.g. max_forward=0.35 to really command 350 mm/s")
    parser.add_argument("--workers", type=int, default=1, help="worker processes")
    parser.add_argument("--out", default="results/obstacle_course")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.workers < 1:
        raise ValueError(f"--runs and --workers must be >= 1, got {args.runs!r}, {args.workers!r}")
    jobs: list[tuple[str, float]] = []
    if "1" in args.tables:
        jobs += [(c, TABLE1[0]) for c in TABLE1[1]]
    if "2" in args.tables:
        jobs += [(c, v) for v in TABLE2[0] for c in TABLE2[1]]
    if args.only is not None:
        wanted = {(c, float(v)) for c, _, v in (item.partition("@") for item in args.only)}
        jobs = [job for job in jobs if job in wanted]
    changes = parse_params(args.param)
    with_params(load_params("nao"), changes)  # bad names fail before any run
    tasks = [(configuration, speed, args.seed + i, changes) for configuration, speed in jobs for i in range(args.runs)]
    runs = []
    if args.merge is not None:
        tasks = []
        for path in args.merge:
            runs += json.loads(Path(path).read_text())["runs"]
    with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
        for result in pool.imap(_run_task, tasks):
            runs.append(result)
            print(f"{result['configuration']} {result['speed']:.2f} m/s seed {result['seed']}: "
                  f"{len(result['falls'])} falls {[(f['obstacle'], f['direction']) for f in result['falls']]}, "
                  f"end reached: {result['reached_end']}", flush=True)
    md = []
    ran = {(r["configuration"], r["speed"]) for r in runs}

    def shown(columns: list[tuple[str, float]]) -> list[tuple[str, float]]:  # --only/--merge: the columns run
        return columns if args.only is None and args.merge is None else [c for c in columns if c in ran]

    def per_column(columns: list[tuple[str, float]]) -> str:
        counts = sorted({sum((r["configuration"], r["speed"]) == c for r in runs) for c in columns})
        return "/".join(map(str, counts))

    suffix = f"; params {' '.join(f'{k}={v}' for k, v in changes.items())}" if changes else ""
    if "1" in args.tables:
        cols = shown([(c, TABLE1[0]) for c in TABLE1[1]])
        md.append(markdown(f"Table 1: falls per obstacle at 250 mm/s, {per_column(cols)} runs per configuration{suffix}", cols,
                           falls_table(runs, cols), against_old(runs, cols)))
    if "2" in args.tables:
        cols = shown([(c, v) for v in TABLE2[0] for c in TABLE2[1]])
        md.append(markdown(f"Table 2: falls per obstacle at 300 and 350 mm/s, {per_column(cols)} runs per configuration{suffix}",
                           cols, falls_table(runs, cols), against_old(runs, cols)))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "obstacle_course.json").write_text(json.dumps({"runs_per_configuration": args.runs, "seed": args.seed,
                                                          "params": changes,
                                                          "configurations": {k: list(v) for k, v in CONFIGURATIONS.items()},
                                                          "runs": runs}, indent=2) + "\n")
    (out / "obstacle_course.md").write_text("\n".join(md))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
