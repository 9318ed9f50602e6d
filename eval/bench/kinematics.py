"""Micro-benchmark of the robot-side kinematics (``upright experiment kinematics-bench``): wall-clock
microseconds per call of the main functions of :class:`~upright.baselines.kinematics.Kinematics`.

For each robot, ``n`` poses (``--set n=N``, default 1000) are drawn with the seed ``--seed``: the
standing pose with every leg and arm-IK joint uniform inside its range. Timed per robot: the
analytic leg IK (``leg_ik``) on the feet of those poses, both legs alternately; ``legs_ik`` (NAO: the
shared hip yaw-pitch as the mean); the walks' per-cycle call of both legs (``walk_legs`` on goals
as floats, without the Wolfgang polish, NAO's shared hip from the first candidates) on walking-like
goals (each sole within 1 cm and 0.1 rad of yaw of where it is in the standing pose with the torso
3 cm lower, where the walks' first candidate is taken; the random poses above mostly leave the
joint ranges); the sole forward kinematics; the CoM; the arm IK from a start
0.1 rad off the solution (as when tracking) and from the standing pose with 6 restarts (on n / 10
targets). Times are wall-clock on one core, so other load inflates them. No episodes: nothing here
runs the environment.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from upright.baselines.kinematics import Kinematics
from upright.baselines.kinematics.forward import SIDES
from upright.envs.robots import ROBOT_NAMES, get_robot
from upright.eval.experiments import ExperimentContext, register_experiment
from upright.eval.tables import Column, Table, number

#: The timed functions: result key and column title.
MEASURES = {"leg_ik_us": "leg IK", "legs_ik_us": "legs IK (both)", "legs_walk_us": "legs IK, the walks' call",
            "foot_fk_us": "sole FK", "com_us": "CoM",
            "arm_ik_local_us": "arm IK, tracking", "arm_ik_from_stand_us": "arm IK from standing, 6 restarts"}


def random_joints(kin: Kinematics, rng: np.random.Generator) -> np.ndarray:
    """Standing pose (rad, the model's joint order) with every leg and arm-IK joint drawn uniformly
    inside its range (NAO: the right hip yaw-pitch equal to the left)."""
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
    """Mean wall-clock seconds per call."""
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
        targets.append((side, *kin.foot_pose(side, random_joints(kin, rng))))
    return _time_per_call([lambda t=t: kin.leg_ik(*t) for t in targets])


def bench(robot: str, n: int = 1000, seed: int = 0) -> dict[str, float]:
    """Microseconds per call of the functions of :data:`MEASURES` on ``robot``."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    kin = Kinematics(get_robot(robot))
    rng = np.random.default_rng(seed)
    poses = [random_joints(kin, rng) for _ in range(n)]
    feet = [{s: kin.foot_pose(s, q) for s in SIDES} for q in poses]
    hands = [kin.hand_pose("left", q)[0] - kin.shoulder_pose("left")[0] for q in poses]
    stand = kin.keyframe_joints()
    ik = kin.joint_index(kin.arms["left"].ik_joint_names)
    near = [q.copy() for q in poses]  # tracking: start 0.1 rad off the solution
    for q in near:
        q[ik] += rng.uniform(-0.1, 0.1, len(ik))
    crouch = {s: kin.foot_pose(s, stand) for s in SIDES}
    goals = []  # the walks' goals: per foot the position and the rotation as nested lists
    for _ in range(n):
        goal = []
        for s in SIDES:
            pos, rot = crouch[s]
            c, si = np.cos(yaw := rng.uniform(-0.1, 0.1)), np.sin(yaw)
            turn = np.array([[c, -si, 0.0], [si, c, 0.0], [0.0, 0.0, 1.0]])
            goal += [(pos + (0.0, 0.0, 0.03) + rng.uniform(-0.01, 0.01, 3)).tolist(), (turn @ rot).tolist()]
        goals.append(goal)
    return {
        "leg_ik_us": 1e6 * ik_cost(robot, n, seed),
        "legs_ik_us": 1e6 * _time_per_call(
            [lambda f=f: kin.legs_ik(*f["left"], *f["right"], hip_yaw_pitch="mean") for f in feet]),
        "legs_walk_us": 1e6 * _time_per_call(
            [lambda g=g: kin.walk_legs(*g) for g in goals]),
        "foot_fk_us": 1e6 * _time_per_call([lambda q=q: kin.foot_pose("left", q) for q in poses]),
        "com_us": 1e6 * _time_per_call([lambda q=q: kin.com(q) for q in poses]),
        "arm_ik_local_us": 1e6 * _time_per_call(
            [lambda h=h, q=q: kin.arm_ik("left", h, q) for h, q in zip(hands, near)]),
        "arm_ik_from_stand_us": 1e6 * _time_per_call(
            [lambda h=h: kin.arm_ik("left", h, stand, restarts=6) for h in hands[: max(1, n // 10)]]),
    }


@register_experiment("kinematics-bench", "microseconds per call of the robots' leg and arm IK, FK and CoM",
                     options={"n": 1000, "robots": ()})
def kinematics_bench(ctx: ExperimentContext) -> list[Table]:
    """``--set n=N`` calls per measurement, ``robots=nao`` (default every robot), seed ``--seed``."""
    n = int(ctx.options["n"])
    robots = ctx.option_names("robots", ROBOT_NAMES) or ROBOT_NAMES
    rows = [{"robot": robot, **bench(robot, n, ctx.seed)} for robot in robots]
    ctx.data.update({"n": n, "seed": ctx.seed})
    return [Table(f"Kinematics: µs per call ({n} calls each, one core)",
                  [Column("robot", "robot"), *(Column(title, key, number(0)) for key, title in MEASURES.items())],
                  rows, notes="Wall-clock time on one core; other load inflates it.")]
