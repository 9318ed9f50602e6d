"""The baselines inside the environments: a controller acting as a policy and the same controller as
a prior with a zero residual drive the same episode; the step adjustment of ``step_adjust`` acts
only when switched on, in the direction of a push."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import upright  # noqa: F401  (registers the ids)
from upright import Conditions, Impulse
from upright.policies.builtin import ControllerPolicy


@pytest.mark.parametrize("env_id, name, kwargs", [
    ("upright/NaoGetUp-v0", "keyframe", {"start": "prone"}),
    ("upright/WolfgangGetUp-v0", "spline", {"start": "supine"}),
    ("upright/NaoWalk-v0", "lipm", {"command": (0.2, 0.0, 0.0)}),
    ("upright/WolfgangWalk-v0", "step_adjust", {"command": (0.1, 0.0, 0.1)}),
])
def test_controller_policy_and_prior_with_zero_residual_agree(env_id, name, kwargs):
    """The same joint targets every step and the same trajectory, up to the float32 rounding of the
    policy's normalised action (about 1e-7 rad). In ``lab``: under ``competition`` that rounding
    flips a discrete decision after a fraction of a second (keyframe: 0.3 s) and the episodes part."""
    kwargs = {**kwargs, "conditions": "lab", "max_episode_seconds": 2.0}
    env, policy = gym.make(env_id, **kwargs), ControllerPolicy(name)
    observation, info = env.reset(seed=4)
    policy.reset(env, 4)
    as_policy = []
    while True:
        observation, _, terminated, truncated, info = env.step(policy.act(observation, info))
        as_policy.append((info["sensors"].joint_target, env.unwrapped.sim.data.qpos.copy()))
        if terminated or truncated:
            break
    prior = gym.make(env_id, prior=name, **kwargs)
    prior.reset(seed=4)
    zero = np.zeros(prior.action_space.shape, dtype=np.float32)
    as_prior = []
    while True:
        _, _, terminated, truncated, prior_info = prior.step(zero)
        as_prior.append((prior_info["sensors"].joint_target, prior.unwrapped.sim.data.qpos.copy()))
        if terminated or truncated:
            break
    assert len(as_policy) == len(as_prior)
    for (targets, qpos), (prior_targets, prior_qpos) in zip(as_policy, as_prior):
        np.testing.assert_allclose(targets, prior_targets, rtol=0, atol=1e-6)
        np.testing.assert_allclose(qpos, prior_qpos, rtol=0, atol=1e-5)
    assert info["episode_metrics"].keys() == prior_info["episode_metrics"].keys()
    for key, value in info["episode_metrics"].items():
        assert value == pytest.approx(prior_info["episode_metrics"][key], abs=1e-4), key


def _adjustments(on: bool, push: float, t0: float = 2.0, seconds: float = 3.0) -> tuple[np.ndarray, np.ndarray]:
    """The step adjustment (m: the change Algorithm 1 made to the planned swing-foot x, w̄ − w) at
    every step of NAO walking at 0.15 m/s with a 0.1 s push of ``push`` N along x at ``t0``."""
    impulses = (Impulse(t0, (push, 0.0), 0.1),) if push else ()
    env = gym.make("upright/NaoWalk-v0", command=(0.15, 0.0, 0.0), conditions=Conditions(impulses=impulses),
                   max_episode_seconds=seconds)
    policy = ControllerPolicy("step_adjust", params={"step_adjustment": on})
    observation, info = env.reset(seed=0)
    policy.reset(env, 0)
    times, adjustment = [], []
    while True:
        observation, _, terminated, truncated, info = env.step(policy.act(observation, info))
        walk = policy.controller
        # the controller keeps the last planned (w) and adjusted (w̄) swing-foot x of Algorithm 1
        adjustment.append(walk._w_bar_prev - walk._w_plan_prev)
        times.append(info["time"])
        if terminated or truncated:
            assert info["episode_metrics"]["falls"] == 0
            return np.array(times), np.array(adjustment)


def test_step_adjustment_acts_only_when_switched_on_and_follows_the_push():
    for push in (0.0, -20.0):
        _, off = _adjustments(False, push)
        assert not off.any()  # switched off: never an adjustment, pushed or not
    t, calm = _adjustments(True, 0.0)
    _, ahead = _adjustments(True, 20.0)
    _, behind = _adjustments(True, -20.0)
    before, after = t < 2.0, (t >= 2.0) & (t < 3.0)
    np.testing.assert_array_equal(ahead[before], calm[before])  # nothing before the push
    np.testing.assert_array_equal(behind[before], calm[before])
    # after a push forward the swing foot goes further forward than the walk alone ever puts it,
    # after a push back it steps shorter than the walk alone ever does (by millimetres)
    assert ahead[after].max() > calm.max() + 0.003
    assert behind[after].min() < calm.min() - 0.005
