"""Pictures of a robot in a pose (``upright view``)."""

from __future__ import annotations

from pathlib import Path

import imageio.v3 as iio

from upright.envs.conditions import Conditions
from upright.envs.render import Camera
from upright.envs.robots import RobotSpec
from upright.envs.simulation import Simulation
from upright.envs.files import writable_file
from upright.policies.run_folder import write_atomically

#: The longest settling before a picture (s): a pose has come to rest well before.
MAX_SETTLE_SECONDS = 60.0


def render_pose(
    robot: str | RobotSpec,
    pose: str | None,
    terrain: str,
    out: Path,
    *,
    settle: float = 0.0,
    width: int = 640,
    height: int = 480,
) -> Path:
    """Render ``robot`` (a name, or a description, e.g. on a user's model) in ``pose`` on
    ``terrain`` to the PNG file ``out`` (``width`` x ``height`` pixels) after ``settle`` seconds of
    simulation with the servos holding the pose. ValueError, before anything is simulated, for a
    settle outside [0, :data:`MAX_SETTLE_SECONDS`], a size below one pixel, or an ``out`` that
    cannot be written as a file."""
    if not 0 <= settle <= MAX_SETTLE_SECONDS:  # NaN too
        raise ValueError(f"settle must be from 0 to {MAX_SETTLE_SECONDS:g} seconds, got {settle!r}")
    if width < 1 or height < 1:
        raise ValueError(f"width and height must be >= 1 pixel, got {width} x {height}")
    writable_file(out)
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
    write_atomically(out, lambda temporary: iio.imwrite(temporary, image, extension=out.suffix))
    return out
