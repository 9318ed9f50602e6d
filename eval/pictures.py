"""Pictures of a robot in a pose (``upright view``)."""

from __future__ import annotations

from pathlib import Path

import imageio.v3 as iio

from upright.envs.conditions import Conditions
from upright.envs.render import Camera
from upright.envs.simulation import Simulation


def render_pose(
    robot: str,
    pose: str | None,
    terrain: str,
    out: Path,
    *,
    settle: float = 0.0,
    width: int = 640,
    height: int = 480,
) -> Path:
    """Render ``robot`` in ``pose`` on ``terrain`` to the PNG file ``out`` after ``settle`` seconds
    of simulation with the servos holding the pose."""
    if settle < 0:
        raise ValueError(f"settle must be >= 0 seconds, got {settle!r}")
    sim = Simulation(robot, Conditions(terrain=terrain))
    sim.reset(pose, seed=0)
    hold = sim.data.ctrl.copy()
    for _ in range(int(round(settle / sim.robot.control_period))):
        sim.step(hold)
    camera = Camera(sim.model, width, height)
    try:
        image = camera.render(sim.data)
    finally:
        camera.close()
    out.parent.mkdir(parents=True, exist_ok=True)
    iio.imwrite(out, image)
    return out
