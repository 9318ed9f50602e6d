"""Policies: the built-ins, baselines found by name, the SB3 wrapper, loading errors."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import upright  # noqa: F401  (registers the ids)
import upright.baselines
from upright.baselines import Params
from upright.envs.robots import ROBOT_NAMES
from upright.policies.algorithms import ALGORITHMS as ALGORITHM_ROWS
from upright.policies.algorithms import algo_class
from upright.policies.builtin import ControllerPolicy
from upright.policies.registry import load_policy, policy_names, register_policy
from upright.policies.sb3 import ALGORITHMS, SB3Policy, detect_algorithm

ENV = "upright/NaoGetUp-v0"


def _first_action(policy, env, seed: int = 0) -> np.ndarray:
    observation, info = env.reset(seed=seed)
    policy.reset(env, seed)
    return policy.act(observation, info)


@pytest.fixture(scope="module")
def env():
    env = gym.make(ENV, max_episode_seconds=0.5)
    yield env
    env.close()


def test_builtins_are_listed_and_act_in_the_action_space(env):
    assert {"zero", "random", "hold"} <= set(policy_names())
    for name in ("zero", "random", "hold"):
        action = _first_action(load_policy(name), env)
        assert action.shape == env.action_space.shape and env.action_space.contains(action), name
    assert not _first_action(load_policy("zero"), env).any()


def test_hold_commands_the_standing_targets(env):
    action = _first_action(load_policy("hold"), env)
    targets = env.unwrapped.targets_from_action(action)
    np.testing.assert_allclose(targets, env.unwrapped.standing_targets, atol=1e-5)


def test_random_is_seeded_by_reset(env):
    a, b = load_policy("random"), load_policy("random")
    assert np.array_equal(_first_action(a, env, 3), _first_action(b, env, 3))
    assert not np.array_equal(_first_action(a, env, 3), _first_action(a, env, 4))


def test_unknown_policy_names_it_and_lists_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown policy 'hodl'.*hold, (.*, )?random, (.*, )?zero"):
        load_policy("hodl")
    with pytest.raises(ValueError, match="missing.zip"):
        load_policy("missing.zip")
    with pytest.raises(ValueError, match="already taken"):
        register_policy("zero", lambda: load_policy("zero"))


class _FixedController:
    """A test controller: fixed joint targets (rad); remembers the sensors it was reset with."""

    status = "working"

    def __init__(self, targets: np.ndarray) -> None:
        self.targets = targets
        self.reset_with = None

    def reset(self, sensors, rng) -> None:
        self.reset_with = sensors

    def step(self, sensors) -> np.ndarray:
        return self.targets


def test_a_registered_baseline_is_a_policy_by_its_name(env, monkeypatch):
    targets = env.unwrapped.standing_targets + 0.01
    controllers = []
    factory = lambda robot, params: controllers.append(_FixedController(targets)) or controllers[-1]  # noqa: E731
    monkeypatch.setitem(upright.baselines._ENTRIES, "test_fixed",
                        upright.baselines.BaselineEntry(factory, Params.load, ROBOT_NAMES, "getup"))
    assert "test_fixed" in policy_names()
    policy = load_policy("test_fixed")
    assert isinstance(policy, ControllerPolicy) and policy.name == "test_fixed"
    observation, info = env.reset(seed=0)
    policy.reset(env, 0)
    action = policy.act(observation, info)
    assert controllers[0].reset_with is info["sensors"]
    np.testing.assert_allclose(env.unwrapped.targets_from_action(action), targets, atol=1e-5)


def test_a_baseline_names_the_robot_or_task_it_does_not_support(monkeypatch):
    entry = upright.baselines.BaselineEntry(lambda robot, params: _FixedController(np.zeros(1)), Params.load,
                                            ("nao",), "walk")
    monkeypatch.setitem(upright.baselines._ENTRIES, "test_walker", entry)
    with pytest.raises(ValueError, match="not 'wolfgang'"):
        gym.make("upright/WolfgangWalk-v0", prior="test_walker")
    with pytest.raises(ValueError, match="walk controller, not for the 'getup' task"):
        gym.make("upright/NaoGetUp-v0", prior="test_walker")
    with pytest.raises(ValueError, match="task must be one of"):
        upright.baselines.register_controller("bad", entry.factory, Params.load, task="dance")


class _CommandedController(_FixedController):
    """A walk test controller that records the velocity command it is given."""

    def __init__(self, targets: np.ndarray) -> None:
        super().__init__(targets)
        self.command = None

    def set_command(self, command: np.ndarray) -> None:
        self.command = command


def test_walk_controllers_receive_the_command(monkeypatch):
    made = []
    entry = upright.baselines.BaselineEntry(
        lambda robot, params: made.append(_CommandedController(np.zeros(len(robot.actuator_names))))
        or made[-1], Params.load, ("nao",), "walk")
    monkeypatch.setitem(upright.baselines._ENTRIES, "test_walker", entry)
    env = gym.make("upright/NaoWalk-v0", command=(0.1, -0.05, 0.2))
    policy = load_policy("test_walker")
    observation, info = env.reset(seed=0)
    policy.reset(env, 0)
    policy.act(observation, info)
    np.testing.assert_allclose(made[0].command, (0.1, -0.05, 0.2))
    env.close()
    made.clear()
    prior_env = gym.make("upright/NaoWalk-v0", command=(0.2, 0.0, 0.0), prior="test_walker")
    prior_env.reset(seed=0)
    np.testing.assert_allclose(made[0].command, (0.2, 0.0, 0.0))
    prior_env.close()


def test_sb3_ppo_round_trip(env, tmp_path):
    import torch
    from stable_baselines3 import PPO

    model = PPO("MlpPolicy", env, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=64)
    model.save(tmp_path / "ppo_getup")
    policy = load_policy(str(tmp_path / "ppo_getup.zip"))
    assert isinstance(policy, SB3Policy) and policy.algorithm == "PPO" and policy.name == "ppo_getup"
    observation, info = env.reset(seed=0)
    policy.reset(env, 0)
    assert policy._mean is not None  # a Gaussian actor-critic: the mean without the distribution
    for _ in range(20):  # SB3's own deterministic action, to the bit, along a real trajectory
        action = policy.act(observation, info)
        np.testing.assert_array_equal(action, model.predict(observation, deterministic=True)[0])
        observation, *_, info = env.step(action)
    with torch.no_grad():  # a mean outside the action space is clipped as predict clips it
        policy.model.policy.action_net.bias.fill_(3.0)
    action = policy.act(observation, info)
    np.testing.assert_array_equal(action, policy.model.predict(observation, deterministic=True)[0])
    np.testing.assert_array_equal(action, env.action_space.high)


def test_an_sb3_actor_without_a_gaussian_mean_acts_through_predict(env, tmp_path):
    from stable_baselines3 import SAC

    SAC("MlpPolicy", env, buffer_size=100, seed=0, device="cpu").save(tmp_path / "sac")
    policy = load_policy(str(tmp_path / "sac.zip"))
    observation, info = env.reset(seed=0)
    policy.reset(env, 0)
    assert policy._mean is None
    np.testing.assert_array_equal(policy.act(observation, info),
                                  policy.model.predict(observation, deterministic=True)[0])


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_sb3_algorithm_is_detected_from_the_file(algorithm, tmp_path):
    import stable_baselines3

    cls = getattr(stable_baselines3, algorithm)
    kwargs = {"PPO": {"n_steps": 8, "batch_size": 8}, "A2C": {"n_steps": 8}}.get(algorithm, {"buffer_size": 100})
    cls("MlpPolicy", "Pendulum-v1", device="cpu", **kwargs).save(tmp_path / "model")
    assert detect_algorithm(tmp_path / "model.zip") == algorithm


def test_sb3_model_for_another_env_is_refused(env, tmp_path):
    from stable_baselines3 import PPO

    PPO("MlpPolicy", "Pendulum-v1", n_steps=8, batch_size=8, device="cpu").save(tmp_path / "pendulum")
    with pytest.raises(ValueError, match="observation shape"):
        _first_action(load_policy(str(tmp_path / "pendulum.zip")), env)
    (tmp_path / "junk.zip").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a stable-baselines3 model"):
        load_policy(str(tmp_path / "junk.zip"))


def test_hand_designed_residual_adds_offsets_and_pitch_feedback(tmp_path):
    """``feedback:NAME``: the offsets always, the ankle feedback only in the prior status it names,
    p · (pitch − reference) + d · gyro y with the actuators' signs, clipped to the residual range;
    the joint targets move by exactly that from the prior's."""
    from dataclasses import replace

    from upright.policies.feedback import FeedbackResidualPolicy, load_feedback_spec

    name = "feedback:wolfgang-getup-bend-ankle"
    assert name in policy_names()
    policy = load_policy(name)
    assert isinstance(policy, FeedbackResidualPolicy)
    env = gym.make("upright/WolfgangGetUp-v0", prior="spline", start="prone", max_episode_seconds=0.5)
    observation, info = env.reset(seed=3)
    policy.reset(env, 3)
    names = env.unwrapped.robot.actuator_names
    knee, ankle_l, ankle_r = (names.index(n) for n in ("LKnee", "LAnklePitch", "RAnklePitch"))
    assert info["prior_status"] != "finished"
    residual = policy.residual(info)
    assert residual[knee] == 0.225 and residual[ankle_l] == -0.1125 and residual[ankle_r] == 0.1125
    action = policy.act(observation, info)
    observation, _, _, _, step_info = env.step(action)
    moved = env.unwrapped.targets_from_action(action) - env.unwrapped.targets_from_action(np.zeros_like(action))
    np.testing.assert_allclose(moved, residual, atol=1e-6)

    sensors = replace(step_info["sensors"], fused=np.array([0.3, 0.0, 0.0, 1.0]), gyro=np.array([0.0, 2.0, 0.0]))
    finished = policy.residual({"sensors": sensors, "prior_status": "finished"})
    push = 0.5 * (0.3 - 0.2) + 0.05 * 2.0
    assert finished[ankle_l] == pytest.approx(-0.1125 + push) and finished[ankle_r] == pytest.approx(0.1125 - push)
    assert finished[knee] == 0.225
    far = replace(sensors, fused=np.array([3.0, 0.0, 0.0, 1.0]))
    limits = env.unwrapped.residual.limits
    assert policy.residual({"sensors": far, "prior_status": "finished"})[ankle_l] > limits[ankle_l]
    assert policy.act(observation, {"sensors": far, "prior_status": "finished"})[ankle_l] == 1.0  # clipped

    banded = tmp_path / "banded.yml"
    banded.write_text("env_id: upright/WolfgangGetUp-v0\nprior: spline\nfeedback: [{angle: pitch, reference: 0.2, "
                      "p: 1.0, d: 0.0, actuators: {LAnklePitch: 1.0}, band: 0.15}]\n")
    near = load_policy(str(banded))
    near.reset(env, 0)
    assert near.residual({"sensors": sensors})[ankle_l] == pytest.approx(0.1)  # 0.1 rad off: inside the band
    assert near.residual({"sensors": far})[ankle_l] == 0.0  # 2.8 rad off: outside
    env.close()

    custom = tmp_path / "mine.yml"
    custom.write_text("env_id: upright/NaoGetUp-v0\nprior: keyframe\noffsets: {LKnie: 0.1}\n")
    nao = gym.make(ENV, prior="keyframe", max_episode_seconds=0.5)
    nao.reset(seed=0)
    with pytest.raises(ValueError, match="unknown actuator 'LKnie'"):
        load_policy(str(custom)).reset(nao, 0)
    nao.close()
    with pytest.raises(ValueError, match="needs an environment with a prior"):
        load_policy(name).reset(gym.make("upright/WolfgangGetUp-v0"), 0)
    with pytest.raises(ValueError, match="unknown hand-designed residual 'feedback:nope'"):
        load_policy("feedback:nope")
    custom.write_text("env_id: upright/NaoGetUp-v0\nprior: keyframe\nfeedback: [{angle: yaw, reference: 0, p: 1, d: 0, actuators: {}}]\n")
    with pytest.raises(ValueError, match="feedback.0.angle: input should be 'pitch' or 'roll', got 'yaw'"):
        load_feedback_spec(str(custom))
    custom.write_text("env_id: upright/NaoGetUp-v0\nfeedback: []\n")
    with pytest.raises(ValueError, match="mine.yml': missing key 'prior'$"):
        load_feedback_spec(str(custom))


@pytest.mark.parametrize("env_id, name", [("upright/NaoWalk-v0", "feedback:nao-walk-wide-stance"),
                                          ("upright/WolfgangWalk-v0", "feedback:wolfgang-walk-wide-stance")])
def test_the_wide_stance_puts_the_walking_feet_about_3_cm_further_apart(env_id, name):
    """The wide stances, hip roll outwards on each leg and ankle roll back: NAO's 0.08 rad (the
    start of the shipped walk residual), Wolfgang's 0.05 rad on its longer legs. Walking in place,
    the soles land about 3 cm further apart than the step_adjust walk's (measured in the
    simulation), so the signs of each robot's hip and ankle roll axes are right."""
    def soles_apart(name: str) -> np.ndarray:
        env = gym.make(env_id, prior="step_adjust", command=(0.0, 0.0, 0.0), max_episode_seconds=3.0)
        observation, info = env.reset(seed=0)
        policy = load_policy(name)
        policy.reset(env, 0)
        base, apart, done = env.unwrapped, [], False
        while not done:
            observation, _, terminated, truncated, info = env.step(policy.act(observation, info))
            done = terminated or truncated
            left, right = (base.sim.data.site(site).xpos[1] for site in base.robot.sole_sites)
            apart.append(left - right)
        assert not terminated  # no fall
        return np.array(apart[-round(1.0 / base.robot.control_period):])  # the last second (m)

    prior, wide = soles_apart("zero"), soles_apart(name)
    assert 0.025 < wide.mean() - prior.mean() < 0.04


@pytest.mark.parametrize("row", ALGORITHM_ROWS.values(), ids=lambda row: row.name)
def test_algorithm_table_rows_match_sb3(row, tmp_path):
    """Each row's facts hold for the real SB3 class: on-policy exactly for OnPolicyAlgorithm
    subclasses, the actor head and the net_arch names exist on a built model, a trainable one has
    its hyperparameter file."""
    from importlib import resources
    from operator import attrgetter

    import stable_baselines3
    import torch
    from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm

    cls = getattr(stable_baselines3, row.sb3_name)
    assert issubclass(cls, OnPolicyAlgorithm) == row.on_policy
    kwargs = {"n_steps": 8, "batch_size": 8} if row.batch_advantages else {"n_steps": 8} if row.on_policy \
        else {"buffer_size": 100}
    arch = dict(zip(row.net_arch_keys, ([8], [9])))
    model = cls("MlpPolicy", "Pendulum-v1", device="cpu", policy_kwargs={"net_arch": arch}, **kwargs)
    head = attrgetter(row.actor_head)(model.policy)
    assert [m for m in head.modules() if isinstance(m, torch.nn.Linear)][-1].in_features == 8
    assert hasattr(model.policy.actor if hasattr(model.policy, "actor") else model.policy, "log_std") \
        == (row.learned_entropy or row.on_policy)
    if row.trainable:
        assert algo_class(row.name) is cls
        assert resources.files("upright.training").joinpath("hyperparams", f"{row.name}.yml").is_file()
    else:
        with pytest.raises(ValueError, match=row.name):
            algo_class(row.name)
