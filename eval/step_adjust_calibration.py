"""Support-rectangle calibration of the step_adjust walk (Reichenberg & Röfer, section 4), run by the
robot in simulation.

The robot stands on both feet in its walking posture and shifts its torso slowly in one of four
directions (by moving both feet the other way in the torso frame) until its gyroscope sees the
beginning of a fall; the CoM it measures at that moment (joint angles + IMU orientation, projected
onto the foot plane, relative to the sole origins) is that border of the support rectangle. On the
real robot a person catches it; here the run simply ends. Everything the robot uses is its own
``Sensors`` and model (``StepAdjustWalk.com_offset``); the simulator only plays the world.

    python -m upright.eval.step_adjust_calibration --robot nao --out results/calibration

prints the rectangle and writes ``calibration.json``; copy ``support_back`` / ``support_front``
into ``baselines/data/step_adjust_<robot>.yaml``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from upright.baselines.step_adjust import StepAdjustWalk
from upright.envs.robots import get_robot
from upright.envs.simulation import Simulation

#: Torso shift speed (m/s), gyro rate that marks the beginning of a fall (rad/s), largest shift (m).
SHIFT_SPEED = 0.01
FALL_GYRO = 0.1
MAX_SHIFT = 0.15
#: Directions of the torso shift: name, unit vector in the walk frame, gyro axis that sees the fall.
DIRECTIONS = {"front": ((1.0, 0.0), 1), "back": ((-1.0, 0.0), 1), "left": ((0.0, 1.0), 0), "right": ((0.0, -1.0), 0)}


def measure_edge(robot: str, direction: str, seed: int = 0) -> dict[str, float | None]:
    """Shift the torso towards ``direction`` until the fall begins; the measured CoM then (m,
    relative to the sole origins: x for front/back, y relative to the sole on that side)."""
    if direction not in DIRECTIONS:
        raise ValueError(f"unknown direction {direction!r}; valid: {', '.join(DIRECTIONS)}")
    spec = get_robot(robot)
    sim = Simulation(spec, "lab")
    sensors = sim.reset(spec.standing_pose, seed=seed)
    walk = StepAdjustWalk(spec)
    walk.reset(sensors, np.random.default_rng(seed))
    dt = spec.control_period
    hold = walk.stance_targets(np.zeros(2))
    for _ in range(int(round(walk.params.start_time / dt))):
        sensors = sim.step(walk.step(sensors))
    for _ in range(int(round(0.5 / dt))):
        sensors = sim.step(hold)
    unit, gyro_axis = DIRECTIONS[direction]
    unit = np.asarray(unit)
    side = "left" if direction == "left" else "right" if direction == "right" else None
    shift = 0.0
    while shift < MAX_SHIFT:
        shift += SHIFT_SPEED * dt
        sensors = sim.step(walk.stance_targets(-unit * shift))
        if abs(float(sensors.gyro[gyro_axis])) > FALL_GYRO:
            if side is None:
                com = 0.5 * (walk.com_offset(sensors, "left") + walk.com_offset(sensors, "right"))
                edge = float(com[0])
            else:
                edge = float(walk.com_offset(sensors, side)[1])
            return {"edge": edge, "torso_shift": shift, "time": sim.time}
    return {"edge": None, "torso_shift": shift, "time": sim.time}


def calibrate(robot: str, seed: int = 0) -> dict[str, object]:
    """All four edges: ``support_back`` / ``support_front`` (x, m, relative to the sole origins)
    and ``support_left`` / ``support_right`` (y, m, relative to the sole on that side)."""
    edges = {d: measure_edge(robot, d, seed) for d in DIRECTIONS}
    return {
        "robot": robot,
        "seed": seed,
        "shift_speed": SHIFT_SPEED,
        "fall_gyro": FALL_GYRO,
        "support_back": edges["back"]["edge"],
        "support_front": edges["front"]["edge"],
        "support_left": edges["left"]["edge"],
        "support_right": edges["right"]["edge"],
        "runs": edges,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robot", default="nao", choices=("nao", "wolfgang"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/step_adjust_calibration")
    args = parser.parse_args(argv)
    result = calibrate(args.robot, args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"calibration_{args.robot}.json").write_text(json.dumps(result, indent=2) + "\n")
    for key in ("support_back", "support_front", "support_left", "support_right"):
        value = result[key]
        print(f"{key}: {'not reached' if value is None else f'{value:.4f} m'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
