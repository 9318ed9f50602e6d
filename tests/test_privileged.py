"""The asymmetric critic: the privileged observation against the simulator it reads, and a real
(tiny) PPO run with ``hp.privileged_critic`` fine-tuned from a symmetric policy, evaluated,
and exported through the actor's observation alone."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

import upright
from upright import Conditions, Wear
from upright.cli import main
from upright.envs.privileged import PRIVILEGED, PrivilegedObservation, privileged_size, privileged_slices
from upright.policies.asymmetric import AsymmetricActorCriticPolicy
from upright.policies.onnx_policy import ExportedActor
from upright.policies.run import load_run_policy, run_model
from upright.policies.run_folder import TrainConfig, load_run_config
from upright.training.train import init_files, new_model, resolve, train, train_env

ENV = "upright/WolfgangGetUp-v0"
SHORT = {"max_episode_seconds": 1.5}
TINY_PPO = {"n_steps": 64, "batch_size": 64, "n_epochs": 1, "policy_kwargs.net_arch": (16, 16),
            "zero_init": False}


def test_privileged_observation_is_the_observation_then_simulator_truth():
    """The wrapped observation starts with the environment's own, bit for bit; the privileged
    entries are what the simulation holds: the clock, heights, the feet bearing the weight of a
    robot standing still, gravity, and the episode's wear, stuck window and delay."""
    robot = upright.get_robot("nao")
    worn = robot.actuator_names[3]
    conditions = Conditions(wear={worn: Wear(strength=0.5, play=0.01, lag=0.02, stuck=((0.1, 0.2),))},
                            extra_delay_cycles=1)
    kwargs = {"conditions": conditions, "start": "standing", "prior": "keyframe"}
    plain = gym.make("upright/NaoGetUp-v0", **kwargs)
    wrapped = PrivilegedObservation(gym.make("upright/NaoGetUp-v0", **kwargs))
    n = plain.observation_space.shape[0]
    assert wrapped.actor_size == n and wrapped.observation_space.shape == (n + privileged_size(robot),)
    assert privileged_size(robot) == 17 + 4 * len(robot.actuator_names) + 3 + 4 * len(robot.actuator_names) + 5
    assert list(privileged_slices(robot)) == [block.name for block in PRIVILEGED]
    part = {name: slice(n + s.start, n + s.stop) for name, s in privileged_slices(robot).items()}
    ours, _ = plain.reset(seed=4)
    theirs, _ = wrapped.reset(seed=4)
    k = robot.actuator_names.index(worn)
    for step in range(30):
        np.testing.assert_array_equal(theirs[:n], ours)
        sim = wrapped.unwrapped.sim
        assert theirs[part["episode_time"]][0] == np.float32(sim.time / 20.0)
        assert theirs[part["torso_height"]][0] == np.float32(sim.torso_pose()[0][2])
        assert theirs[part["head_height"]][0] == np.float32(sim.head_height())
        np.testing.assert_allclose(np.linalg.norm(theirs[part["gravity_true"]]), 1.0, atol=1e-6)
        stuck = theirs[part["stuck"]]
        assert stuck[k] == float(0.1 <= sim.time < 0.3) and stuck.sum() == stuck[k]
        zeros = np.zeros(plain.action_space.shape, np.float32)
        ours, *_ = plain.step(zeros)
        theirs, *_ = wrapped.step(zeros)
    left, right, other = theirs[part["support"]]
    assert left > 0.3 and right > 0.3 and abs(left + right - 1.0) < 0.1 and other == 0.0  # standing still
    assert theirs[part["gravity_true"]][2] < -0.95  # upright: gravity along the torso's -z
    np.testing.assert_allclose(np.linalg.norm(theirs[part["torso_velocity"]][:3]), 0.0, atol=0.05)
    for name, value in (("strength", 0.5), ("play", 0.01), ("lag", 0.02)):
        entries = theirs[part[name]]
        assert entries[k] == np.float32(value)
        assert (np.delete(entries, k) == (1.0 if name == "strength" else 0.0)).all()
    friction, mass, delay = theirs[part["episode"]]
    assert (friction, mass, delay) == (1.0, 1.0, 1.0)
    for name in ("servo_gain", "servo_torque", "servo_damping"):  # our model: every factor 1
        assert (theirs[part[name]] == 1.0).all()
    assert not theirs[part["zero_offset"]].any() and not theirs[part["torso_load"]].any()
    assert theirs[part["sensor_latency"]][0] == 0.0
    plain.close()
    wrapped.close()


def test_the_privileged_model_blocks_are_the_episodes_draw():
    """Under ``sim2real`` the critic reads the drawn servo factors, zero offsets, torso load and
    sensor latency of the episode, in their stated units."""
    robot = upright.get_robot("wolfgang")
    wrapped = PrivilegedObservation(gym.make("upright/WolfgangGetUp-v0", conditions="sim2real", prior="spline"))
    n = wrapped.actor_size
    part = {name: slice(n + s.start, n + s.stop) for name, s in privileged_slices(robot).items()}
    for seed in (1, 2):
        observation, _ = wrapped.reset(seed=seed)
        sim = wrapped.unwrapped.sim
        drawn = sim.sampled
        for column, name in enumerate(("servo_gain", "servo_torque", "servo_damping")):
            np.testing.assert_array_equal(observation[part[name]], drawn.servo_factors[:, column].astype(np.float32))
        np.testing.assert_array_equal(observation[part["zero_offset"]], (10.0 * drawn.zero_offset).astype(np.float32))
        load = observation[part["torso_load"]]
        assert load[0] == np.float32(drawn.torso_mass / sim.total_mass)
        np.testing.assert_array_equal(load[1:], (10.0 * drawn.torso_com_offset).astype(np.float32))
        assert observation[part["sensor_latency"]][0] == drawn.sensor_latency_cycles
        assert 0.35 <= observation[part["servo_gain"]].min() and observation[part["servo_gain"]].max() <= 1.5
    wrapped.close()


def _config(tmp_path: Path, **changes) -> TrainConfig:
    base = dict(env_id=ENV, prior="spline", algo="ppo", steps=128, n_envs=2, seed=0, env_kwargs=dict(SHORT),
                hp_overrides=dict(TINY_PPO), out=str(tmp_path / "runs"), eval_every=0, eval_episodes=1,
                checkpoint_every=128, progress=False, command="test", vec_env="dummy")
    return TrainConfig(**{**base, **changes})


def test_an_asymmetric_critic_fine_tunes_evaluates_resumes_and_exports_on_the_robots_observation(tmp_path):
    """A symmetric run's policy starts an asymmetric run unchanged: the same actions, and the same
    values from a critic widened with zero weights. Trained, the model's actor reads the robot's
    observation (the periodic evaluation, the run's policy and the ONNX graph take n entries), its
    critic n + privileged."""
    symmetric = train(_config(tmp_path, name="symmetric"))
    asymmetric = _config(tmp_path, name="asymmetric", init=str(symmetric), eval_every=128,
                         hp_overrides={**TINY_PPO, "privileged_critic": True})
    config = resolve(asymmetric)
    _, normalizer = init_files(str(symmetric), "ppo", True)
    venv = train_env(config, normalizer)
    model = new_model(config, venv, None)
    before = load_run_policy(str(symmetric))
    n = before.model.observation_space.shape[0]
    assert isinstance(model.policy, AsymmetricActorCriticPolicy) and model.policy.actor_size == n
    observations = venv.reset()  # normalised, privileged entries included
    assert observations.shape[1] == n + privileged_size(upright.get_robot("wolfgang"))
    with torch.no_grad():
        wide = model.policy.predict_values(torch.as_tensor(observations)).numpy()
        narrow = before.model.policy.predict_values(torch.as_tensor(observations[:, :n])).numpy()
    # the same sums with zero terms added: equal up to the accumulation order of the machine's kernels
    np.testing.assert_allclose(wide, narrow, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(model.predict(observations, deterministic=True)[0],
                               before.model.predict(observations[:, :n], deterministic=True)[0], rtol=0, atol=1e-6)
    venv.close()

    run = train(asymmetric)
    trained = load_run_policy(str(run))
    assert trained.model.policy.mlp_extractor.policy_net[0].in_features == n
    assert trained.model.policy.mlp_extractor.value_net[0].in_features == trained.model.observation_space.shape[0]
    curve = (run / "learning_curve.csv").read_text().splitlines()
    assert len(curve) == 2  # the periodic evaluation ran the actor in the plain environment

    out = tmp_path / "export"
    assert main(["export", str(run), "--out", str(out)]) == 0
    actor = ExportedActor(out)
    env = gym.make(ENV, prior="spline", **SHORT)
    observation, _ = env.reset(seed=7)
    policy = load_run_policy(str(run))
    policy.reset(env, 7)
    for _ in range(20):
        action = policy.act(observation, {})
        np.testing.assert_allclose(actor(observation[None])[0], action, rtol=0, atol=1e-5)
        observation, *_ = env.step(action)
    assert np.abs(action).max() > 1e-3  # a non-trivial actor: the parity above is not of zeros
    env.close()


def test_a_privileged_critic_needs_an_actor_critic_algorithm(tmp_path):
    with pytest.raises(ValueError, match="privileged_critic needs an actor-critic algorithm"):
        resolve(_config(tmp_path, algo="sac", hp_overrides={"privileged_critic": True,
                                                            "policy_kwargs.net_arch": (16, 16)}))


def test_a_shipped_asymmetric_policy_widens_to_the_model_blocks():
    """The shipped NAO get-up residual's critic read the privileged blocks before the model ones:
    it starts an asymmetric run under ``sim2real`` with the same actions and values, its critic
    widened by zero columns for the model blocks."""
    shipped = "zoo:nao-getup-residual-keyframe"
    before = load_run_policy(shipped)
    trained = load_run_config(run_model(shipped)[0])
    config = resolve(replace(trained, steps=64, n_envs=1, init=shipped, eval_every=0, progress=False,
                             env_kwargs={**trained.env_kwargs, "conditions": "sim2real"}, vec_env="dummy"))
    _, normalizer = init_files(shipped, "ppo", True)
    venv = train_env(config, normalizer)
    model = new_model(config, venv, None)
    old_width = before.model.observation_space.shape[0]
    assert old_width < model.observation_space.shape[0]
    observations = venv.reset()
    with torch.no_grad():
        wide = model.policy.predict_values(torch.as_tensor(observations)).numpy()
        narrow = before.model.policy.predict_values(torch.as_tensor(observations[:, :old_width])).numpy()
    np.testing.assert_allclose(wide, narrow, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(model.predict(observations, deterministic=True)[0],
                               before.model.predict(observations[:, :old_width], deterministic=True)[0],
                               rtol=0, atol=1e-6)
    venv.close()
