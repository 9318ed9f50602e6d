"""The get-up residual's tempo entry: the keyframe's motion clock (``set_tempo``), the environment's
``tempo_range`` action entry, a trained policy without the entry widened to one, and its export spec."""

from __future__ import annotations

import dataclasses
import math

import gymnasium as gym
import numpy as np
import pytest

import upright  # noqa: F401  (registers the ids)
from upright.baselines import make_controller
from upright.envs.robots import get_robot
from upright.eval.comparison import prior_alone
from upright.eval.runner import run_episodes
from upright.policies.feedback import FeedbackResidualPolicy, FeedbackSpec
from upright.policies.registry import load_policy
from upright.policies.run_folder import TrainConfig
from upright.policies.sb3 import ModelPolicy
from upright.training.export import action_spec
from upright.training.train import init_files, new_model, resolve
from upright.training.vec_env import make_train_env

ENV = "upright/NaoGetUp-v0"
ZOO = "zoo:nao-getup-residual-keyframe"


#: The get-up priors with a tempo: environment, prior.
TIMED = [(ENV, "keyframe"), ("upright/WolfgangGetUp-v0", "spline")]


def _stand_up(action_tempo: float | None, env_id: str = ENV, prior: str = "keyframe",
              seconds: float = 9.0) -> tuple[dict, list[np.ndarray]]:
    """The episode metrics and the prior's targets of a prone start in ``lab`` with a zero joint
    residual: without a tempo entry (None) or with ``tempo_range=1.5`` and the entry held at
    ``action_tempo``."""
    kwargs = {"prior": prior, "start": "prone", "conditions": "lab", "max_episode_seconds": seconds}
    if action_tempo is not None:
        kwargs["tempo_range"] = 1.5
    env = gym.make(env_id, **kwargs)
    env.reset(seed=0)
    action = np.zeros(env.action_space.shape, dtype=np.float32)
    if action_tempo is not None:
        action[-1] = action_tempo
    targets = []
    while True:
        _, _, terminated, truncated, info = env.step(action)
        targets.append(info["prior_targets"])
        if terminated or truncated:
            env.close()
            return info["episode_metrics"], targets


@pytest.mark.parametrize("env_id, prior", TIMED)
def test_a_zero_tempo_entry_is_the_prior_to_the_bit(env_id, prior):
    """Tempo 1 (action 0) leaves the motion time on the real time: every target is the plain prior's."""
    plain, plain_targets = _stand_up(None, env_id, prior)
    zero, zero_targets = _stand_up(0.0, env_id, prior)
    assert np.array_equal(np.array(plain_targets), np.array(zero_targets))
    assert plain["success"] and zero["time_to_stand"] == plain["time_to_stand"]


def test_the_keyframe_stands_up_sooner_at_a_faster_tempo_and_later_at_a_slower_one():
    """NAO's keyframe stand-up from prone at 1.5 times its tempo and at 1 / 1.5: the waits keep
    their time, so the whole stand-up changes by less than 1.5 times."""
    plain, _ = _stand_up(None)
    fast, _ = _stand_up(1.0)
    slow, _ = _stand_up(-1.0, seconds=12.0)
    assert fast["success"] and slow["success"], (fast, slow)
    assert plain["time_to_stand"] / 1.5 < fast["time_to_stand"] < 0.9 * plain["time_to_stand"], (fast, plain)
    assert 1.1 * plain["time_to_stand"] < slow["time_to_stand"] < 1.5 * plain["time_to_stand"], (slow, plain)


def test_the_spline_plays_its_plan_at_the_tempo():
    """Before its stabiliser starts the spline's targets are its planned trajectory at the motion
    time: with the measurements held still, tempo 2 on every cycle reaches at cycle k the plain
    controller's targets of cycle 2k (the same motion time; the gain's sum rounds apart in the last
    bits). The fling into the squat is timed dynamics: on the robot even 0.9 or 1.1 times the plan's
    tempo falls from prone in `lab`, so the entry is for a residual to learn, not a knob to turn."""
    env = gym.make("upright/WolfgangGetUp-v0", start="prone", conditions="lab")
    _, info = env.reset(seed=0)
    first = info["sensors"]
    robot = env.unwrapped.robot
    dt = robot.control_period
    plain, fast = (make_controller("spline", robot, "getup") for _ in range(2))
    for controller in (plain, fast):
        controller.reset(first, np.random.default_rng(0))
    stabilize_from = plain.plan.stabilize_from
    cycles = int(stabilize_from / dt / 2) - 1
    assert cycles > 20, stabilize_from
    plain_targets = [plain.step(dataclasses.replace(first, time=first.time + k * dt)) for k in range(1, 2 * cycles + 1)]
    assert np.abs(plain_targets[cycles - 1] - plain_targets[2 * cycles - 1]).max() > 0.05  # the plan moves
    for k in range(1, cycles + 1):
        fast.set_tempo(2.0)
        targets = fast.step(dataclasses.replace(first, time=first.time + k * dt))
        np.testing.assert_allclose(targets, plain_targets[2 * k - 1], rtol=0, atol=1e-9)
    env.close()


def test_the_tempo_entry_names_and_limits_and_its_bad_values():
    env = gym.make(ENV, prior="keyframe", tempo_range=1.5).unwrapped
    nu = env.sim.model.nu
    assert env.action_space.shape == (nu + 1,)
    assert env.residual.names[-1] == "tempo" and env.residual.names[:-1] == tuple(env.robot.actuator_names)
    assert env.residual.limits[-1] == pytest.approx(math.log(1.5))
    action = env.residual_action({"tempo": math.log(1.2), "LKneePitch": 0.0})
    assert action[-1] == pytest.approx(math.log(1.2) / math.log(1.5)) and not action[:-1].any()
    with pytest.raises(ValueError, match="beyond the residual range"):
        env.residual_action({"tempo": math.log(2.0)})
    env.close()
    for bad in (1.0, 0.5, float("nan"), "fast"):
        with pytest.raises(ValueError, match=f"tempo_range must be a finite number > 1 .*got {bad!r}"):
            gym.make(ENV, prior="keyframe", tempo_range=bad)
    with pytest.raises(ValueError, match="tempo_range needs a prior that plays a timed motion .*got prior None"):
        gym.make(ENV, tempo_range=1.5)
    for robot, prior in (("nao", "keyframe"), ("wolfgang", "spline")):
        controller = make_controller(prior, get_robot(robot), "getup")
        for bad in (0.0, -1.0, float("inf")):
            with pytest.raises(ValueError, match="tempo factor must be a finite number > 0"):
                controller.set_tempo(bad)


def test_the_prior_alone_drops_the_tempo_entry_and_a_hand_designed_residual_refuses_it():
    """``tempo_range`` belongs to the residual: the prior run as a policy drops it (a plain
    keyframe episode); a hand-designed residual moves joint targets only and says so."""
    kwargs = {"prior": "keyframe", "tempo_range": 1.5, "max_episode_seconds": 0.5}
    policy, alone_kwargs = prior_alone(kwargs)
    assert policy == "keyframe" and alone_kwargs == {"max_episode_seconds": 0.5}
    alone = run_episodes(ENV, policy, 1, env_kwargs=alone_kwargs, seed=3, progress=False)
    assert alone.records[0]["episode_seconds"] == pytest.approx(0.5, abs=0.012)  # whole control periods
    env = gym.make(ENV, **kwargs)
    env.reset(seed=0)
    spec = FeedbackSpec(env_id=ENV, prior="keyframe")
    with pytest.raises(ValueError, match="action has a tempo entry"):
        FeedbackResidualPolicy(spec, "none").reset(env.unwrapped, None)
    env.close()


def test_a_trained_policy_without_the_entry_starts_a_run_with_it_as_it_was():
    """``--init`` of the shipped residual into a run with ``tempo_range``: the joint entries act
    as trained (to float32 rounding of the wider product), and the tempo entry starts at 0 (the prior's own timing) with the run's
    fresh standard deviation; the export spec describes the entry."""
    config = resolve(TrainConfig(
        env_id=ENV, prior="keyframe", algo="ppo", steps=64, n_envs=1, seed=0, init=ZOO,
        env_kwargs={"tempo_range": 1.5, "max_episode_seconds": 1.0},
        hp_overrides={"n_steps": 64, "batch_size": 64, "privileged_critic": True, "policy_kwargs.log_std_init": -1.0},
        out="unused", eval_every=0, progress=False, command="test", vec_env="dummy"))
    _, normalizer = init_files(ZOO, "ppo", True)
    venv = make_train_env(ENV, config.env_kwargs_with_prior, 1, 0, normalize=True, on_policy=True,
                          normalizer=normalizer, privileged=True)
    model = new_model(config, venv, None)
    trained = load_policy(ZOO)
    widened = ModelPolicy(model, venv, name="widened")
    env = gym.make(ENV, **config.env_kwargs_with_prior)
    observation, info = env.reset(seed=5)
    for _ in range(20):
        wide, narrow = widened.act(observation, info), trained.act(observation, info)
        assert wide.shape == (env.unwrapped.sim.model.nu + 1,)
        np.testing.assert_allclose(wide[:-1], narrow, rtol=0, atol=1e-6)  # a wider matrix product's last bits
        assert wide[-1] == 0.0
        observation, _, _, _, info = env.step(wide)
    log_std = model.policy.log_std.detach().numpy()
    assert log_std[-1] == -1.0 and np.all(log_std[:-1] != -1.0)
    spec = action_spec(env.unwrapped)
    assert spec["size"] == len(spec["joints"]) + 1 and spec["tempo"]["index"] == len(spec["joints"])
    assert spec["tempo"]["range"] == 1.5
    env.close()
    venv.close()
