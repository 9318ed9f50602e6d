"""The walks' joint targets stay what they were: ``lipm`` and ``step_adjust`` on both robots give,
cycle by cycle over whole episodes, the recorded targets within 1e-9 rad (recorded before the
compute speed-ups of issue 16, and again after its odometry change, from that change's own code:
the speed-ups merged with it give the same floats; again after lipm's landing offset, which
changed Wolfgang's lipm only: the other three cases came out the same, as after the later
speed-ups; again after Wolfgang's lipm took its leg IK every other cycle (``ik_period: 2``), its
case only: the other three recomputed equal to the bit; again after NAO's lipm took a lower CoM, a
shorter cycle, its shared hip every other cycle (``hip_period: 2``) and its odometry every other
cycle (``feedback.period: 2``) and Wolfgang's step_adjust its leg IK every other cycle (``ik_period:
2``), on an AMD EPYC: the two unchanged cases came out within 1.1e-16 rad (step_adjust, NAO) and
3.6e-15 rad (lipm, Wolfgang) of the old recording, as the code before these changes does there).

The recording (``tests/data/walk_targets.npz``, written by ``python tests/test_walk_targets.py``)
holds each case's targets (rad, actuator order) per cycle. The test drives the environment with the
recorded targets, so every cycle's sensors are those of the recording whatever the controller
answers, and compares the controller's answer to those sensors with the recorded one. A deliberate
change of a walk (its parameters, its algorithm) or of the environments changes the targets: record
again, and say so in the commit.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import upright  # noqa: F401  (registers the ids)
from upright.baselines import make_controller
from upright.envs.registration import env_id

RECORDING = Path(__file__).with_name("data") / "walk_targets.npz"
#: Whole episodes under ``competition`` (noisy sensors, worn servos, turf) at a command with all
#: three axes (m/s, m/s, rad/s), so the gait's sideways and turning branches run too.
SECONDS = 8.0
COMMAND = (0.15, 0.05, 0.3)
SEED = 3
CASES = [(walk, robot) for walk in ("lipm", "step_adjust") for robot in ("nao", "wolfgang")]
TOLERANCE = 1e-9  # rad


def _episode(walk: str, robot: str, recorded: np.ndarray | None = None) -> np.ndarray:
    """The controller's targets (cycles, nu) over one episode. With ``recorded`` targets the
    environment follows those (the controller's answers are only collected), else the controller's."""
    env = gym.make(env_id(robot, "walk"), conditions="competition", command=COMMAND, max_episode_seconds=SECONDS)
    _, info = env.reset(seed=SEED)
    controller = make_controller(walk, robot, "walk")
    controller.set_command(np.array(COMMAND))
    controller.reset(info["sensors"], np.random.default_rng(SEED))
    answers = []
    while True:
        answers.append(np.array(controller.step(info["sensors"]), dtype=float))
        targets = answers[-1] if recorded is None else recorded[len(answers) - 1]
        _, _, terminated, truncated, info = env.step(env.unwrapped.action_from_targets(targets))
        if terminated or truncated:
            return np.array(answers)


@pytest.mark.parametrize("walk, robot", CASES)
def test_walk_targets_equal_the_recorded_ones(walk, robot):
    recorded = np.load(RECORDING)[f"{walk}_{robot}"]
    answers = _episode(walk, robot, recorded)
    assert answers.shape == recorded.shape
    error = np.abs(answers - recorded).max(axis=1)
    worst = int(error.argmax())
    assert error[worst] <= TOLERANCE, f"cycle {worst} of {len(error)}: {error[worst]:.3e} rad"


if __name__ == "__main__":
    RECORDING.parent.mkdir(exist_ok=True)
    np.savez_compressed(RECORDING, **{f"{walk}_{robot}": _episode(walk, robot) for walk, robot in CASES})
    print(f"wrote {RECORDING}")
