"""What the environments' numbers mean: each reward term's sign and size in known situations (lying,
standing still, falling, walking on command), the observation blocks against known poses, and the
residual's scaling and clipping."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import upright  # noqa: F401  (registers the ids)
from upright import Conditions, Impulse

GETUP = ["upright/NaoGetUp-v0", "upright/WolfgangGetUp-v0"]


def _held(env_id: str, start: str, seconds: float, **kwargs):
    """An episode that holds the start's joint targets: (env, rewards, terms, head heights, last info)."""
    env = gym.make(env_id, start=start, max_episode_seconds=seconds, **kwargs).unwrapped
    env.reset(seed=0)
    action = env.action_from_targets(env.sim.data.ctrl.copy())
    rewards, terms, heads = [], [], [env.sim.head_height()]
    while True:
        _, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        terms.append(info["reward_terms"])
        heads.append(env.sim.head_height())
        if terminated or truncated:
            return env, rewards, terms, heads, info


def _sums_to_the_reward(rewards, terms) -> None:
    assert all(reward == pytest.approx(sum(t.values()), rel=1e-12, abs=1e-12) for reward, t in zip(rewards, terms))


@pytest.mark.parametrize("env_id", GETUP)
def test_getup_terms_lying_and_standing_still(env_id):
    for start in ("prone", "supine", "standing"):
        env, rewards, terms, _, info = _held(env_id, start, 1.0)
        _sums_to_the_reward(rewards, terms)
        t = terms[-1]  # at rest
        assert abs(t["head_progress"]) < 1e-3 and t["action_rate"] == 0.0 and t["impact"] == 0.0
        assert -0.01 < t["torque"] <= 0.0 and t["joint_limits"] <= 0.0
        if start == "standing":  # head at its standing height (capped), upright, still
            assert t["head_height"] == pytest.approx(0.5, abs=0.005)
            assert t["upright"] == pytest.approx(0.5, abs=0.01) and t["still"] > 0.99
            assert rewards[-1] > 1.98
        else:  # head near the floor, torso horizontal, no stillness bonus lying down
            assert 0.0 < t["head_height"] < 0.1
            assert t["upright"] == pytest.approx(0.25, abs=0.02) and t["still"] == 0.0
            assert rewards[-1] < 0.4
        assert bool(info["upright"]) == (start == "standing")


@pytest.mark.parametrize("env_id", GETUP)
def test_getup_terms_falling(env_id):
    """Pushed over while standing: head progress sums to the net fall of the head (potential-based),
    the landing is penalised as an impact, and the stillness bonus goes."""
    force = 60.0 if "Nao" in env_id else 120.0
    conditions = Conditions(impulses=(Impulse(time=0.3, force=(force, 0.0), duration=0.25),))
    env, rewards, terms, heads, info = _held(env_id, "standing", 3.0, conditions=conditions)
    _sums_to_the_reward(rewards, terms)
    h = env.standing.head_height
    assert sum(t["head_progress"] for t in terms) == pytest.approx(10.0 * (heads[-1] - heads[0]) / h, rel=1e-9)
    assert sum(t["head_progress"] for t in terms) < -8.0  # the head fell most of its height
    assert min(t["head_progress"] for t in terms) < 0.0 and min(t["impact"] for t in terms) < 0.0
    assert terms[0]["still"] > 0.99 and terms[-1]["still"] == 0.0 and info["fallen"]


def test_getup_action_rate_is_the_mean_squared_change_of_the_clipped_action():
    env = gym.make("upright/NaoGetUp-v0").unwrapped
    env.reset(seed=0)
    a = np.zeros(23, dtype=np.float32)
    assert env.step(a)[4]["reward_terms"]["action_rate"] == 0.0
    b = a.copy()
    b[:10] = 0.4
    assert env.step(b)[4]["reward_terms"]["action_rate"] == pytest.approx(-0.05 * 10 * 0.16 / 23)
    c = b.copy()
    c[0] = 7.0  # counts as 1
    assert env.step(c)[4]["reward_terms"]["action_rate"] == pytest.approx(-0.05 * 0.36 / 23)


def _walk_terms(command, policy="hold", seconds=2.0, prior=None, **kwargs):
    env = gym.make("upright/NaoWalk-v0", command=command, prior=prior, max_episode_seconds=seconds, **kwargs).unwrapped
    env.reset(seed=0)
    hold = env.action_from_targets(env.standing_targets) if prior is None else np.zeros(23, np.float32)
    action = hold if policy == "hold" else np.zeros(23, np.float32)
    rewards, terms = [], []
    while True:
        _, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        terms.append(info["reward_terms"])
        if terminated or truncated:
            _sums_to_the_reward(rewards, terms)
            return terms, info


def test_walk_terms_standing_still_walking_and_falling():
    still, _ = _walk_terms((0.0, 0.0, 0.0))
    t = still[-1]
    assert t["tracking_xy"] > 0.99 and t["tracking_yaw"] > 0.495 and t["upright"] > 0.199
    assert t["fall"] == 0.0 and -1e-3 < t["foot_slip"] <= 0.0 and -0.5 < t["energy"] <= 0.0
    # standing still on a command: the Gaussians at one width away
    asked, _ = _walk_terms((0.25, 0.0, 0.5))
    assert asked[-1]["tracking_xy"] == pytest.approx(np.exp(-1.0), abs=0.03)
    assert asked[-1]["tracking_yaw"] == pytest.approx(0.5 * np.exp(-1.0), abs=0.02)
    narrow, _ = _walk_terms((0.25, 0.0, 0.5), tracking_widths=(0.125, 1.0))  # half and twice the widths
    assert narrow[-1]["tracking_xy"] == pytest.approx(np.exp(-4.0), abs=0.01)
    assert narrow[-1]["tracking_yaw"] == pytest.approx(0.5 * np.exp(-0.25), abs=0.01)
    with pytest.raises(ValueError, match="tracking_widths"):
        gym.make("upright/NaoWalk-v0", tracking_widths=(0.1, 0.0))
    with pytest.raises(ValueError, match="tracking_window"):
        gym.make("upright/NaoWalk-v0", tracking_window=-1.0)
    # walking on the command (the LIPM walk, zero residual) tracks better than standing still
    walked, info = _walk_terms((0.2, 0.0, 0.0), prior="lipm", seconds=5.0)
    stood, _ = _walk_terms((0.2, 0.0, 0.0), seconds=5.0)
    late = slice(-200, None)  # the last 2.4 s, walking
    assert info["episode_metrics"]["falls"] == 0
    walking = np.mean([t["tracking_xy"] for t in walked[late]])
    standing = np.mean([t["tracking_xy"] for t in stood[late]])
    assert standing == pytest.approx(np.exp(-0.64), abs=0.05) and walking > standing + 0.15
    # with a 1 s window the tracking reward sees the window's mean velocity, as the metrics do:
    # the step cycle's sway no longer costs (the walk is paid more), the same steps otherwise
    windowed, windowed_info = _walk_terms((0.2, 0.0, 0.0), prior="lipm", seconds=5.0, tracking_window=1.0)
    assert windowed_info["episode_metrics"] == info["episode_metrics"]
    assert np.mean([t["tracking_xy"] for t in windowed[late]]) > walking + 0.02
    assert [t["upright"] for t in windowed] == [t["upright"] for t in walked]
    assert all(t["fall"] == 0.0 for t in walked)
    # falling: the fall penalty once, on the step that ends the episode
    fell, info = _walk_terms((0.2, 0.0, 0.0), policy="zero", seconds=5.0)
    assert info["fallen"] and fell[-1]["fall"] == -10.0 and all(t["fall"] == 0.0 for t in fell[:-1])


# ---------------------------------------------------------------- observation blocks


def _blocks(env, obs: np.ndarray) -> dict[str, np.ndarray]:
    """Split an observation by the layout table (envs/observation.py)."""
    slices = env.observation_slices()
    assert obs.shape == (max(part.stop for part in slices.values()),)
    return {name: obs[part] for name, part in slices.items()}


@pytest.mark.parametrize("env_id, sizes", [("upright/NaoGetUp-v0", (91, 114)), ("upright/WolfgangGetUp-v0", (80, 100))])
def test_observation_blocks_against_known_poses(env_id, sizes):
    for start, gravity, fused in (("standing", (0, 0, -1), (0, 0, 1)), ("prone", (1, 0, 0), (np.pi / 2, 0, None)),
                                  ("supine", (-1, 0, 0), (-np.pi / 2, 0, None)), ("side", None, None)):
        env = gym.make(env_id, start=start).unwrapped
        obs, info = env.reset(seed=2)
        for _ in range(40):
            obs, _, _, _, info = env.step(env.action_from_targets(env.sim.data.ctrl.copy()))
        b, s = _blocks(env, obs), info["sensors"]
        assert obs.shape == (sizes[0],)
        for name in ("joint_pos", "joint_vel", "joint_target", "gyro", "accel", "foot_pressure"):
            np.testing.assert_array_equal(b[name], getattr(s, name).astype(np.float32), err_msg=name)
        assert np.linalg.norm(b["gravity"]) == pytest.approx(1.0, abs=1e-5)
        # gravity and fused angles from the same orientation: g = (sin pitch, −sin roll, −hemisphere·…)
        pitch, roll, hemisphere = b["fused"].astype(float)
        np.testing.assert_allclose(b["gravity"][:2], [np.sin(pitch), -np.sin(roll)], atol=1e-5)
        assert np.sign(b["gravity"][2]) in (0.0, -hemisphere) or abs(b["gravity"][2]) < 1e-3
        if start == "side":  # lying (NAO rolls onto its back from the side, Wolfgang stays on it)
            assert abs(b["gravity"][2]) < 0.2
            if "Wolfgang" in env_id:
                assert abs(b["gravity"][1]) > 0.9 and abs(roll) > 1.2
            continue
        np.testing.assert_allclose(b["gravity"], gravity, atol=0.25, err_msg=start)
        np.testing.assert_allclose(b["fused"][:2], fused[:2], atol=0.3, err_msg=start)
        if fused[2] is not None:  # lying, the torso's z axis is horizontal: either hemisphere
            assert b["fused"][2] == fused[2]
        if start == "standing":
            weight = env.sim.total_mass * 9.81
            assert b["accel"][2] == pytest.approx(9.81, abs=0.3)
            assert b["foot_pressure"].sum() == pytest.approx(weight, rel=0.1)
    with_prior = gym.make(env_id, prior="keyframe" if "Nao" in env_id else "spline").unwrapped
    obs, info = with_prior.reset(seed=0)
    assert obs.shape == (sizes[1],)
    np.testing.assert_array_equal(_blocks(with_prior, obs)["prior_target"], info["prior_targets"].astype(np.float32))


def test_walk_observation_carries_the_command_before_the_prior_targets():
    env = gym.make("upright/WolfgangWalk-v0", command=(0.1, -0.05, 0.3), prior="lipm").unwrapped
    obs, info = env.reset(seed=0)
    b = _blocks(env, obs)
    np.testing.assert_array_equal(b["command"], np.float32([0.1, -0.05, 0.3]))
    np.testing.assert_array_equal(b["prior_target"], info["prior_targets"].astype(np.float32))
    drawn = gym.make("upright/WolfgangWalk-v0").unwrapped
    obs, info = drawn.reset(seed=5)
    np.testing.assert_array_equal(_blocks(drawn, obs)["command"], info["command"].astype(np.float32))
    assert np.any(info["command"] != 0.0)


def test_walk_observation_can_carry_the_priors_odometry():
    """``observe_odometry``: the prior's last measured cycle velocity and its feedback correction,
    zeros until the walk has measured a cycle; an error without a prior that has them."""
    env = gym.make("upright/NaoWalk-v0", command=(0.2, 0.0, 0.3), prior="step_adjust", observe_odometry=True,
                   conditions="turf").unwrapped
    obs, _ = env.reset(seed=1)
    assert not _blocks(env, obs)["odometry"].any()
    measured = []
    for _ in range(400):  # 4.8 s: the walk has started, measured cycles and begun to correct
        obs, *_ = env.step(np.zeros(env.action_space.shape, dtype=np.float32))
        b = _blocks(env, obs)
        feedback = env.prior.feedback
        if feedback.measured is not None:
            np.testing.assert_array_equal(b["odometry"][:3], np.float32(feedback.measured))
            measured.append(feedback.measured)
        np.testing.assert_array_equal(b["odometry"][3:], np.float32(feedback.correction))
        np.testing.assert_array_equal(b["command"], np.float32([0.2, 0.0, 0.3]))
    assert len(set(measured)) > 3 and 0.1 < measured[-1][0] < 0.3  # new cycles, walking forward
    assert any(feedback.correction)
    assert env.observation_space.shape == (123,)  # 117 + 6
    with pytest.raises(ValueError, match="observe_odometry needs a walk prior with speed feedback"):
        gym.make("upright/NaoWalk-v0", observe_odometry=True)


# ---------------------------------------------------------------- residual scaling and clipping


class _Fixed:
    """A prior with fixed targets."""

    status = "working"

    def __init__(self, targets: np.ndarray) -> None:
        self.targets = targets

    def reset(self, sensors, rng) -> None:
        pass

    def step(self, sensors) -> np.ndarray:
        return self.targets.copy()


@pytest.mark.parametrize("env_id", ["upright/NaoGetUp-v0", "upright/WolfgangWalk-v0"])
def test_residual_is_scaled_by_half_the_joint_range_and_clipped(env_id):
    probe = gym.make(env_id).unwrapped
    low, high = probe.sim.model.actuator_ctrlrange.T
    prior, half = probe.standing_targets, (high - low) / 2
    rng = np.random.default_rng(0)
    for scale in (0.1, 0.3):
        env = gym.make(env_id, prior=_Fixed(prior), residual_scale=scale, start="standing").unwrapped
        env.reset(seed=0)
        action = rng.uniform(-1, 1, half.size).astype(np.float32)
        commanded = env.step(action)[4]["sensors"].joint_target
        expected = np.clip(prior + scale * action.astype(float) * half, low, high)
        np.testing.assert_allclose(commanded, expected, rtol=0, atol=1e-12)
        assert np.abs(commanded - prior).max() > 0.5 * scale * half.min()  # it did move the targets
        # beyond ±1 the action counts as ±1
        big = np.where(action > 0, 5.0, -5.0).astype(np.float32)
        np.testing.assert_allclose(env.step(big)[4]["sensors"].joint_target,
                                   np.clip(prior + scale * np.sign(big).astype(float) * half, low, high), atol=1e-12)
    # a residual past the joint range stops at the range
    env = gym.make(env_id, prior=_Fixed(prior), residual_scale=2.0, start="standing").unwrapped
    env.reset(seed=0)
    np.testing.assert_array_equal(env.step(np.ones(half.size, np.float32))[4]["sensors"].joint_target, high)
    np.testing.assert_array_equal(env.step(-np.ones(half.size, np.float32))[4]["sensors"].joint_target, low)
