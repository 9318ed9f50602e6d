"""A walk residual on the prior's step targets (``residual_on="steps"``): the zero action is the
prior to the bit, a lateral offset moves the robot sideways, bad uses are refused by name, and a
real (tiny) PPO run trains, exports and evaluates in that action space; the prior's gait clock in
the observation (``observe_gait``) follows the support switches.

Real MuJoCo physics with the ``step_adjust`` prior on NaoWalk.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import yaml
from gymnasium.utils.env_checker import check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import upright  # noqa: F401  (registers the ids)
from upright.baselines import make_controller
from upright.cli import main
from upright.envs.robots import get_robot
from upright.training.export import SPEC_FILE

ENV = "upright/NaoWalk-v0"
STILL = (0.0, 0.0, 0.0)


def _walk(residual_on: str, action: np.ndarray, seconds: float, seed: int = 3) -> tuple[list, np.ndarray]:
    """(observation, reward) of every step and the torso's final (x, y) (m, world) of a walk in
    place under ``lab`` with the constant ``action``."""
    env = gym.make(ENV, prior="step_adjust", residual_on=residual_on, command=STILL)
    observation, _ = env.reset(seed=seed)
    steps = [(observation, 0.0)]
    for _ in range(round(seconds / env.unwrapped.robot.control_period)):
        observation, reward, terminated, truncated, _ = env.step(action)
        assert not (terminated or truncated)
        steps.append((observation, reward))
    xy = env.unwrapped.sim.torso_pose()[0][:2].copy()
    env.close()
    return steps, xy


def test_a_zero_step_residual_is_the_prior_to_the_bit():
    env = gym.make(ENV, prior="step_adjust", residual_on="steps").unwrapped
    assert env.action_space.shape == (3,)
    assert env.residual.names == ("swing_x", "swing_y", "swing_yaw")
    np.testing.assert_array_equal(env.residual.limits, [0.03, 0.03, 0.15])
    check_env(env, skip_render_check=True)
    sb3_check_env(env, warn=False)
    steps, xy = _walk("steps", np.zeros(3, dtype=np.float32), 2.0)
    joint_steps, joint_xy = _walk("joints", np.zeros(23, dtype=np.float32), 2.0)
    assert all(np.array_equal(a[0], b[0]) and a[1] == b[1] for a, b in zip(steps, joint_steps, strict=True))
    assert np.array_equal(xy, joint_xy)


def test_a_lateral_step_offset_walks_the_robot_that_way():
    """Walking in place, a constant ``swing_y`` of +1 widens every left step (the right foot's
    steps towards the support foot are dropped) and the robot drifts left; −1 drifts right."""
    duration = 4.0
    _, still = _walk("steps", np.zeros(3, dtype=np.float32), duration)
    _, left = _walk("steps", np.array([0.0, 1.0, 0.0], dtype=np.float32), duration)
    _, right = _walk("steps", np.array([0.0, -1.0, 0.0], dtype=np.float32), duration)
    # y of the world is the robot's left at the start (the standing keyframe faces +x)
    assert left[1] - still[1] > 0.02
    assert still[1] - right[1] > 0.02


def test_the_prior_refuses_a_step_residual_beyond_its_limits_or_malformed():
    walk = make_controller("step_adjust", get_robot("nao"), "walk")
    walk.set_step_residual(np.array([0.03, -0.03, 0.15]))
    with pytest.raises(ValueError, match="beyond step_residual_limits"):
        walk.set_step_residual(np.array([0.0, 0.04, 0.0]))
    with pytest.raises(ValueError, match="three finite offsets"):
        walk.set_step_residual(np.array([0.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match="three finite offsets"):
        walk.set_step_residual(np.zeros(2))


@pytest.mark.parametrize("kwargs, message", [
    ({"prior": "step_adjust", "residual_on": "feet"}, "unknown residual_on 'feet'; valid: joints, steps"),
    ({"prior": "lipm", "residual_on": "steps"}, "needs a walk prior that exposes its step targets"),
    ({"residual_on": "steps"}, "needs a walk prior that exposes its step targets"),
    ({"prior": "step_adjust", "residual_on": "steps", "prior_params": {"step_residual_limits": [0.03, 0.0, 0.1]}},
     r"step_residual_limits > 0 \(m, m, rad\), got \[0.03, 0.0, 0.1\]"),
    ({"prior": "step_adjust", "residual_on": "steps", "residual_scale": 0.5},
     "residual_scale 0.5 means nothing with residual_on='steps'.*step_residual_limits"),
])
def test_bad_step_residual_settings_name_the_value(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gym.make(ENV, **kwargs)


def test_a_step_residual_takes_the_default_scale_and_has_none_of_its_own():
    """The default ``residual_scale`` (what a saved run's arguments may hold) builds the step
    residual; its range is the prior's limits alone."""
    env = gym.make(ENV, prior="step_adjust", residual_on="steps", residual_scale=0.2).unwrapped
    assert not hasattr(env.residual, "scale")
    np.testing.assert_array_equal(env.residual.limits, [0.03, 0.03, 0.15])


def test_residual_action_takes_step_offsets_by_name():
    env = gym.make(ENV, prior="step_adjust", residual_on="steps").unwrapped
    np.testing.assert_allclose(env.residual_action({"swing_y": 0.015}), [0.0, 0.5, 0.0])
    with pytest.raises(ValueError, match="unknown step residual entry 'LKnee'"):
        env.residual_action({"LKnee": 0.1})
    with pytest.raises(ValueError, match=r"beyond the residual range ±0.03 \(the prior's step_residual_limits\)"):
        env.residual_action({"swing_x": 0.05})


def test_a_step_residual_trains_exports_and_evaluates(tmp_path):
    """A real (tiny) PPO run in the step action space, its ONNX export (whose spec says what the
    three outputs move) and ``upright eval`` of the export in the environment its spec names."""
    runs, out = tmp_path / "runs", tmp_path / "export"
    assert main(["train", "--env", ENV, "--prior", "step_adjust", "--steps", "128", "--n-envs", "2",
                 "--vec-env", "dummy", "--no-progress", "--eval-every", "0", "--out", str(runs), "--name", "steps",
                 "--set", "residual_on=steps", "max_episode_seconds=0.6", "hp.n_steps=64", "hp.batch_size=64",
                 "hp.n_epochs=1", "hp.policy_kwargs.net_arch=16,16"]) == 0
    run = runs / "NaoWalk-v0" / "steps"
    assert main(["export", str(run), "--out", str(out)]) == 0
    spec = yaml.safe_load((out / SPEC_FILE).read_text())
    action = spec["action"]
    assert (action["kind"], action["size"]) == ("step residual", 3)
    assert [(o["offset"], o["limit"]) for o in action["offsets"]] == [
        ("swing_x", 0.03), ("swing_y", 0.03), ("swing_yaw", 0.15)]
    assert spec["environment"]["kwargs"]["residual_on"] == "steps"
    assert main(["eval", "--env", ENV, "--policy", f"onnx:{out}", "--episodes", "1", "--out", str(tmp_path / "eval")]) == 0


@pytest.mark.parametrize("prior", ["step_adjust", "lipm"])
def test_the_gait_clock_counts_each_step_and_names_its_support_foot(prior):
    """``observe_gait``: the support foot alternates between +1 and −1 once walking, each step's
    phase rises from about 0 and starts again at the switch; before walking both read 0."""
    env = gym.make(ENV, prior=prior, observe_gait=True, command=(0.1, 0.0, 0.0))
    gait = env.unwrapped.observation_slices()["gait"]
    observation, _ = env.reset(seed=5)
    assert observation[gait].tolist() == [0.0, 0.0]
    clock = []
    for _ in range(round(4.0 / env.unwrapped.robot.control_period)):
        observation, *_ = env.step(np.zeros(env.action_space.shape, dtype=np.float32))
        clock.append(observation[gait].copy())
    clock = np.array(clock)
    walking = clock[clock[:, 0] != 0]
    supports = walking[:, 0]
    switches = np.flatnonzero(np.diff(supports) != 0) + 1
    assert set(supports.tolist()) == {1.0, -1.0}
    assert len(switches) >= 6  # steps of 0.25-0.3 s over the 3 s or so of walking
    # a step's phase ends above 0.6 and the next one starts below 0.2, rising in between
    assert np.all(walking[switches - 1, 1] > 0.6) and np.all(walking[switches, 1] < 0.2)
    rises = np.diff(walking[:, 1])
    assert np.all(np.delete(rises, switches - 1) > 0.0) and np.all(walking[:, 1] >= 0.0)
    with pytest.raises(ValueError, match="observe_gait needs a walk prior with a gait clock"):
        gym.make(ENV, observe_gait=True)
