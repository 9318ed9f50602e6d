"""Micro-benchmark of the robot-side kinematics: wall-clock seconds per analytic ``leg_ik`` call.

``ik_cost(robot, n)`` solves ``n`` foot poses (both legs alternately) drawn, with a fixed seed, by
forward kinematics of random leg angles inside the joint ranges, and returns the mean time per
call. Run ``python -m upright.eval.kinematics_bench [--n N] [--out DIR]`` for a table of both
robots (leg IK, ``legs_ik`` (NAO: shared hip, mean), sole FK, CoM, arm IK from a start 0.1 rad
off the solution as when tracking, arm IK from the standing pose with 6 restarts), written as JSON
and Markdown when ``--out`` is given. Times are wall-clock on one core, so other load inflates them.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from upright.baselines.kinematics import SIDES, Kinematics
from upright.envs.robots import ROBOT_NAMES, get_robot


def _random_joints(kin: Kinematics, rng: np.random.Generator) -> np.ndarray:
    """Standing pose with every leg and arm-IK joint drawn uniformly inside its range."""
    m = kin.model
    q = m.key(kin.robot.standing_pose).qpos[[m.jnt_qposadr[m.joint(j).id] for j in kin.joint_names]].copy()
    for side in SIDES:
        for name in (*kin.leg_joint_names(side), *kin.arms[side].ik_joint_names):
            q[kin.joint_index([name])] = rng.uniform(*m.jnt_range[m.joint(name).id])
    if kin.shared_hip:
        left, right = kin.leg_joint_names("left")[0], kin.leg_joint_names("right")[0]
        q[kin.joint_index([right])] = q[kin.joint_index([left])]
    return q


def _time_per_call(calls: list[Callable[[], object]]) -> float:
    start = time.perf_counter()
    for call in calls:
        call()
    return (time.perf_counter() - start) / len(calls)


def ik_cost(robot: str, n: int = 1000, seed: int = 0) -> float:
    """Mean wall-clock seconds per :meth:`Kinematics.leg_ik` call on ``n`` random reachable foot poses."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    kin = Kinematics(get_robot(robot))
    rng = np.random.default_rng(seed)
    targets = []
    for i in range(n):
        side = SIDES[i % 2]
        targets.append((side, *kin.foot_pose(side, _random_joints(kin, rng))))
    return _time_per_call([lambda t=t: kin.leg_ik(*t) for t in targets])


def bench(robot: str, n: int = 1000, seed: int = 0) -> dict[str, float]:
    """Microseconds per call of the main kinematics functions of ``robot``."""
    kin = Kinematics(get_robot(robot))
    rng = np.random.default_rng(seed)
    poses = [_random_joints(kin, rng) for _ in range(n)]
    feet = [{s: kin.foot_pose(s, q) for s in SIDES} for q in poses]
    hands = [kin.hand_pose("left", q)[0] - kin.shoulder_pose("left")[0] for q in poses]
    stand = kin.keyframe_joints()
    ik = kin.joint_index(kin.arms["left"].ik_joint_names)
    near = [q.copy() for q in poses]  # tracking: start 0.1 rad off the solution
    for q in near:
        q[ik] += rng.uniform(-0.1, 0.1, len(ik))
    return {
        "leg_ik_us": 1e6 * ik_cost(robot, n, seed),
        "legs_ik_us": 1e6 * _time_per_call(
            [lambda f=f: kin.legs_ik(*f["left"], *f["right"], hip_yaw_pitch="mean") for f in feet]),
        "foot_fk_us": 1e6 * _time_per_call([lambda q=q: kin.foot_pose("left", q) for q in poses]),
        "com_us": 1e6 * _time_per_call([lambda q=q: kin.com(q) for q in poses]),
        "arm_ik_local_us": 1e6 * _time_per_call(
            [lambda h=h, q=q: kin.arm_ik("left", h, q) for h, q in zip(hands, near)]),
        "arm_ik_from_stand_us": 1e6 * _time_per_call(
            [lambda h=h: kin.arm_ik("left", h, stand, restarts=6) for h in hands[: max(1, n // 10)]]),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="calls per measurement")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="folder for kinematics_bench.json / .md")
    args = parser.parse_args(argv)
    rows = {robot: bench(robot, args.n, args.seed) for robot in ROBOT_NAMES}
    columns = list(next(iter(rows.values())))
    lines = ["| robot | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    lines += [f"| {robot} | " + " | ".join(f"{row[c]:.0f}" for c in columns) + " |" for robot, row in rows.items()]
    table = "\n".join(lines)
    print(table)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "kinematics_bench.json").write_text(json.dumps({"n": args.n, "seed": args.seed, "rows": rows},
                                                                    indent=2))
        (args.out / "kinematics_bench.md").write_text(
            "Kinematics micro-benchmark (µs per call, one core, `python -m upright.eval.kinematics_bench`)\n\n"
            + table + "\n")


if __name__ == "__main__":
    main()
