"""The classical controllers answer recorded inputs with the recorded joint targets.

For each controller on each robot it has parameters for (``keyframe`` and ``spline`` get-ups,
``lipm`` and ``step_adjust`` walks, on NAO and Wolfgang), ``tests/data/controller_targets.npz``
holds one ``competition`` episode (noisy sensors, worn servos, turf, so the controllers' filters,
feedback and recovery branches run) cycle by cycle: the controller's inputs, i.e. every field of the
:class:`~upright.envs.sensors.Sensors` it was given (float64, as given), the walk command given
to ``set_command`` and the seed of the generator given to ``reset``, and its output, the joint
targets (rad, actuator order). The test feeds the recorded inputs to a fresh controller, calling
``set_command``, ``reset`` and ``step`` as :class:`~upright.policies.builtin.ControllerPolicy` does
in the environments, and asserts every cycle's targets within 1e-9 rad of the recorded ones. No
physics runs in the test, so the check does not depend on the machine's floating point last bits
amplified over an episode; the tolerance leaves room for the last-bit differences of the
controllers' own arithmetic (trigonometry, the model's kinematics) between CPUs. Recording and
replay are :mod:`upright.policies.controller_record`'s, with which ``upright export`` also writes
a trained residual's prior vectors.

A deliberate change of a controller (its parameters, its algorithm) changes the targets: record
again with ``python tests/test_controller_targets.py`` and say so in the commit. A change of the
environments alone (physics, sensors, conditions) leaves the test passing; record again when the
recorded episodes should show the new environments' inputs.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import upright  # noqa: F401  (registers the ids)
from upright.baselines import baseline_entry, make_controller
from upright.envs.registration import env_id
from upright.policies.controller_record import ControllerEpisode, record_controller_episode

RECORDING = Path(__file__).with_name("data") / "controller_targets.npz"
SEED = 3
#: The walks' command (m/s, m/s, rad/s): all three axes, so the sideways and turning branches run.
COMMAND = (0.15, 0.05, 0.3)
CONTROLLERS = ("keyframe", "spline", "lipm", "step_adjust")
#: Per controller and robot: the episode's length (s) and, for a get-up, the lying start. With this
#: seed a get-up goes through its motion's phases to a failed try and into the next one (keyframe
#: on Wolfgang: through the first nine keyframes of its motion); a walk moves into its posture (1 s)
#: and takes about seven steps.
EPISODES: dict[tuple[str, str], tuple[float, str | None]] = {
    ("keyframe", "nao"): (4.0, "prone"),
    ("keyframe", "wolfgang"): (3.0, "supine"),
    ("spline", "nao"): (3.8, "prone"),
    ("spline", "wolfgang"): (4.2, "supine"),
    ("lipm", "nao"): (3.0, None),
    ("lipm", "wolfgang"): (3.0, None),
    ("step_adjust", "nao"): (3.0, None),
    ("step_adjust", "wolfgang"): (3.0, None),
}
TOLERANCE = 1e-9  # rad


def _key(name: str, robot: str, item: str) -> str:
    return f"{name}.{robot}.{item}"


def _record(name: str, robot: str) -> dict[str, np.ndarray]:
    """Run the controller on its robot in a ``competition`` episode (its targets drive the
    environment) and return the inputs it was given and its targets, keyed by :func:`_key`."""
    task = baseline_entry(name).task
    seconds, start = EPISODES[name, robot]
    options = {"start": start} if task == "getup" else {"command": COMMAND}
    env = gym.make(env_id(robot, task), conditions="competition", max_episode_seconds=seconds, **options)
    try:
        return record_controller_episode(env, make_controller(name, robot, task), SEED).arrays(_key(name, robot, ""))
    finally:
        env.close()


def _replay(name: str, robot: str, recording) -> np.ndarray:
    """A fresh controller's targets (cycles, nu) for the recorded inputs, fed as
    :class:`~upright.policies.builtin.ControllerPolicy` feeds them: the command (walks), then
    ``reset`` with the first cycle's sensors, then ``step`` every cycle."""
    episode = ControllerEpisode.from_arrays(recording, _key(name, robot, ""))
    return episode.replay(make_controller(name, robot, baseline_entry(name).task))


@pytest.mark.parametrize("name, robot", list(EPISODES))
def test_controller_targets_equal_the_recorded_ones(name, robot):
    with np.load(RECORDING) as recording:
        recorded = recording[_key(name, robot, "targets")]
        answers = _replay(name, robot, recording)
    assert answers.shape == recorded.shape
    error = np.abs(answers - recorded).max(axis=1)
    worst = int(error.argmax())
    assert error[worst] <= TOLERANCE, f"cycle {worst} of {len(error)}: {error[worst]:.3e} rad"


def test_each_controller_is_recorded_on_every_robot_it_supports():
    """A robot added to one of the controllers is recorded too (record again)."""
    assert set(EPISODES) == {(name, robot) for name in CONTROLLERS for robot in baseline_entry(name).robots}


if __name__ == "__main__":
    RECORDING.parent.mkdir(exist_ok=True)
    np.savez_compressed(RECORDING, **{k: v for case in EPISODES for k, v in _record(*case).items()})
    print(f"wrote {RECORDING} ({RECORDING.stat().st_size / 1e6:.2f} MB)")
