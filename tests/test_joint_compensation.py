"""Joint-error compensation (the stand-up paper's equations 1–4) in the walks and in the keyframe
stand-up's rise from the squat: what it computes, and that it keeps the priors working on the
softer servos of other published models (``soft-servos``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from upright import PRESETS
from upright.baselines import make_controller
from upright.baselines.common.joint_errors import (JointCompensation, JointCompensationParams, compensation_gains,
                                                   compensation_offset)
from upright.envs.robots import get_robot
from upright.envs.sensors import Sensors


def _sensors(joint_pos: np.ndarray, joint_target: np.ndarray) -> Sensors:
    zeros = np.zeros(3)
    return Sensors(0.0, joint_pos, np.zeros_like(joint_pos), joint_target, zeros, zeros, np.array([1.0, 0, 0, 0]),
                   np.zeros(4), np.zeros(8))


def test_offset_has_a_dead_band():
    applied = np.array([-0.1, -0.02, 0.0, 0.03, 0.2])
    np.testing.assert_allclose(compensation_offset(applied, np.full(5, 2.0), 0.0), 2.0 * applied)
    np.testing.assert_allclose(compensation_offset(applied, np.full(5, 2.0), 0.05), [-0.1, 0.0, 0.0, 0.0, 0.3])


def test_a_steady_error_is_given_back_and_a_residual_is_not_taken_for_one():
    """A joint that stays 0.1 rad below what was sent: after the robot's delay the compensated
    request is the plan plus p times the error (eq. 4's prediction is the error itself when it is
    steady). An offset added after the walk (a residual's) that the joint follows is no error."""
    robot = get_robot("wolfgang")
    nu = len(robot.actuator_names)
    knee = robot.actuator_names.index("LKnee")
    joint = robot.actuated_joint_index[knee]
    plan = np.zeros(nu)
    plan[knee] = 1.0
    for residual, lag in ((0.0, 0.1), (0.2, 0.0)):
        comp = JointCompensation(JointCompensationParams(gain=0.5, joints=("LKnee",)), robot)
        measured = np.zeros(len(robot.joint_names))
        sent = np.zeros(nu)
        comp.reset(_sensors(measured, sent))
        for _ in range(robot.delay_cycles + 3):
            sent = comp.apply(_sensors(measured, sent), plan)
            sent[knee] += residual
            measured[joint] = plan[knee] + residual - lag
        np.testing.assert_array_equal(np.delete(sent, knee), 0.0)
        assert sent[knee] == pytest.approx(1.0 + residual + 0.5 * lag)
    # Off (gain 0): the plan itself, the same object.
    off = JointCompensation(JointCompensationParams(), robot)
    off.reset(_sensors(measured, sent))
    assert off.apply(_sensors(measured, sent), plan) is plan
    with pytest.raises(ValueError, match="LKnees"):
        compensation_gains(JointCompensationParams(gain=1.0, joints=("LKnees",)), robot)


#: The softer published servos with a robot's sensor noise: each seed a different episode, so that
#: the outcomes below are counts over draws, not one chaotic trajectory (which another machine's
#: last bits would change).
NOISY_SOFT_SERVOS = PRESETS["soft-servos"].with_(joint_noise=0.002, gyro_noise=0.01, accel_noise=0.05)
SEEDS = range(3)


def _episode_end(env: gym.Env, seed: int) -> dict:
    env.reset(seed=seed)
    while True:
        *_, terminated, truncated, info = env.step(np.zeros(env.action_space.shape))
        if terminated or truncated:
            return info


@pytest.mark.parametrize("prior", ["step_adjust", "lipm"])
def test_wolfgang_walks_stay_up_on_softer_servos_with_their_compensation(prior):
    """On the Bit-Bots' MJX servos (a third of our gain) the walk falls in most 15 s walks without
    its compensation and in at most one with it."""
    def falls(gain: float) -> int:
        env = gym.make("upright/WolfgangWalk-v0", prior=prior, prior_params={"compensation.gain": gain},
                       command=(0.2, 0.0, 0.0), conditions=NOISY_SOFT_SERVOS, max_episode_seconds=15.0)
        return sum(_episode_end(env, seed)["episode_metrics"]["falls"] > 0 for seed in SEEDS)

    assert make_controller(prior, "wolfgang").params.compensation.gain == 1.0
    assert falls(0.0) >= 2
    assert falls(1.0) <= 1


def test_nao_rises_from_the_squat_on_softer_servos_with_its_self_compensation():
    """On HULKs' NAO gain (21.1 against our 50) the keyframe stand-up from supine tips over
    backwards while rising from the squat without the fromSitting block's self-compensation, and
    stands up with it. The back stand-up alone: without the roll onto the front, which would stand
    up from the front after the failed try."""
    def successes(scale: float) -> int:
        env = gym.make("upright/NaoGetUp-v0", prior="keyframe",
                       prior_params={"self_compensation_scale": scale, "roll_over": False},
                       start="supine", conditions=NOISY_SOFT_SERVOS)
        return sum(bool(_episode_end(env, seed)["is_success"]) for seed in SEEDS)

    assert successes(1.0) >= 2
    assert successes(0.0) <= 1
