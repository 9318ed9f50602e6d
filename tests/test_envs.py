"""The Gymnasium environments: API checks, vector envs, SB3, success/fall metrics, residual prior,
determinism, bad input."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import upright  # noqa: F401  (registers the ids)
from upright import Conditions, Impulse

IDS = ["upright/NaoGetUp-v0", "upright/WolfgangGetUp-v0", "upright/NaoWalk-v0", "upright/WolfgangWalk-v0"]
GETUP_IDS = IDS[:2]


def _hold(env) -> np.ndarray:
    return env.unwrapped.action_from_targets(env.unwrapped.standing_targets)


def _run(env, policy, seed: int):
    obs, info = env.reset(seed=seed)
    while True:
        obs, reward, terminated, truncated, info = env.step(policy(obs))
        if terminated or truncated:
            return info


@pytest.mark.parametrize("env_id", IDS)
def test_gymnasium_and_sb3_env_checkers(env_id):
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = gym.make(env_id, max_episode_seconds=0.5)
    check_env(env.unwrapped, skip_render_check=True)
    sb3_check_env(gym.make(env_id, max_episode_seconds=0.5).unwrapped, warn=True)


def test_make_without_prior_import():
    import subprocess
    import sys

    code = "import gymnasium as gym; e = gym.make('upright:upright/NaoGetUp-v0'); print(e.reset(seed=0)[0].shape)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "(91,)"


@pytest.mark.parametrize("vector", ["sync", "async"])
def test_vector_envs_run_all_ids(vector):
    for env_id in IDS:
        fns = [lambda env_id=env_id: gym.make(env_id, max_episode_seconds=0.2) for _ in range(2)]
        envs = gym.vector.SyncVectorEnv(fns) if vector == "sync" else gym.vector.AsyncVectorEnv(fns)
        obs, _ = envs.reset(seed=0)
        for _ in range(25):  # past the end of an episode: autoreset works
            obs, rewards, terminated, truncated, infos = envs.step(envs.action_space.sample())
        assert obs.shape[0] == 2 and np.all(np.isfinite(obs))
        envs.close()


@pytest.mark.parametrize("env_id", GETUP_IDS)
def test_short_ppo_run(env_id, tmp_path):
    from stable_baselines3 import PPO

    env = gym.make(env_id, max_episode_seconds=2.0)
    model = PPO("MlpPolicy", env, n_steps=512, batch_size=128, n_epochs=2, seed=0, device="cpu")
    model.learn(total_timesteps=2048)
    model.save(tmp_path / "ppo")
    action, _ = PPO.load(tmp_path / "ppo").predict(env.reset(seed=1)[0], deterministic=True)
    assert action.shape == env.action_space.shape


@pytest.mark.parametrize("env_id", GETUP_IDS)
def test_hold_standing_succeeds_within_1_5_s(env_id):
    env = gym.make(env_id, start="standing", max_episode_seconds=1.5)
    info = _run(env, lambda obs: _hold(env), seed=0)
    metrics = info["episode_metrics"]
    assert metrics["success"] is True
    assert metrics["time_to_stand"] == pytest.approx(0.0, abs=0.1)


@pytest.mark.parametrize("env_id", GETUP_IDS)
def test_zero_policy_from_prone_never_succeeds(env_id):
    env = gym.make(env_id, start="prone", max_episode_seconds=4.0)
    info = _run(env, lambda obs: np.zeros(env.action_space.shape), seed=0)
    assert info["episode_metrics"]["success"] is False
    assert info["episode_metrics"]["time_to_stand"] is None


@pytest.mark.parametrize("env_id", GETUP_IDS)
def test_pushed_over_while_standing_is_a_fall(env_id):
    robot = gym.make(env_id).unwrapped.robot
    push = Impulse(time=0.3, force=(60.0 * (1 if robot.name == "nao" else 2), 0.0), duration=0.25)
    env = gym.make(env_id, start="standing", conditions=Conditions(impulses=(push,)), max_episode_seconds=3.0)
    info = _run(env, lambda obs: _hold(env), seed=0)
    assert info["fallen"] is True
    assert info["episode_metrics"]["falls"] == 1
    assert info["episode_metrics"]["success"] is False


class _TestController:
    """A controller that moves every joint on a slow sine around the standing pose."""

    status = "working"

    def __init__(self, standing: np.ndarray) -> None:
        self.standing = standing
        self.k = 0

    def reset(self, sensors, rng) -> None:
        self.k = 0

    def step(self, sensors) -> np.ndarray:
        self.k += 1
        return self.standing + 0.05 * np.sin(0.1 * self.k + np.arange(self.standing.size))


@pytest.mark.parametrize("env_id", ["upright/NaoGetUp-v0", "upright/WolfgangWalk-v0"])
def test_zero_residual_reproduces_the_prior_exactly(env_id):
    standing = gym.make(env_id).unwrapped.standing_targets
    env = gym.make(env_id, prior=_TestController(standing), start="standing")
    obs, info = env.reset(seed=0)
    zero = np.zeros(env.action_space.shape, dtype=np.float32)
    for _ in range(20):
        expected = info["prior_targets"]
        obs, _, _, _, info = env.step(zero)
        np.testing.assert_array_equal(info["sensors"].joint_target, expected)
    # the prior's targets are part of the observation
    np.testing.assert_allclose(obs[-standing.size:], info["prior_targets"], rtol=1e-6)


def test_same_seed_same_episode():
    def episode(seed):
        env = gym.make("upright/NaoGetUp-v0", start="random", conditions="competition", max_episode_seconds=0.6)
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(0)
        out = [obs]
        for _ in range(50):
            out.append(env.step(rng.uniform(-0.3, 0.3, 23))[0])
        return np.array(out)

    a, b, c = episode(5), episode(5), episode(6)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_competition_varies_between_seeds():
    env = gym.make("upright/NaoGetUp-v0", conditions="competition")
    sampled = []
    for seed in range(5):
        env.reset(seed=seed)
        sampled.append(env.unwrapped.sim.sampled)
    assert len({s.mass_scale for s in sampled}) == 5
    assert len({s.friction_scale for s in sampled}) == 5
    assert len({s.wear for s in sampled}) == 5
    assert len({s.extra_delay_cycles for s in sampled}) == 2


@pytest.mark.parametrize("start", ["side", "fall", "random"])
def test_other_starts_begin_lying(start):
    env = gym.make("upright/NaoGetUp-v0", start=start)
    for seed in range(2):
        _, info = env.reset(seed=seed)
        assert info["time"] == 0.0
        assert np.rad2deg(env.unwrapped.sim.torso_tilt()) > 45


def test_bad_input_is_clear():
    with pytest.raises(gym.error.Error, match="NaoFly"):
        gym.make("upright/NaoFly-v0")
    with pytest.raises(ValueError, match="unknown start 'sitting'.*prone, supine"):
        gym.make("upright/NaoGetUp-v0", start="sitting")
    with pytest.raises(ValueError, match="unknown conditions 'mars'"):
        gym.make("upright/NaoGetUp-v0", conditions="mars")
    with pytest.raises(ValueError, match="unknown baseline 'magic'"):
        gym.make("upright/NaoGetUp-v0", prior="magic")
    with pytest.raises(ValueError, match="command must be three"):
        gym.make("upright/NaoWalk-v0", command=(1.0, 2.0))
    env = gym.make("upright/NaoGetUp-v0").unwrapped
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action must have shape \(23,\)"):
        env.step(np.zeros(5))
    with pytest.raises(ValueError, match="non-finite"):
        env.step(np.full(23, np.nan))


@pytest.mark.parametrize("env_id", ["upright/WolfgangGetUp-v0", "upright/NaoWalk-v0"])
def test_physics_blow_up_ends_episode_with_flag(env_id):
    env = gym.make(env_id)
    env.reset(seed=0)
    env.unwrapped.sim.data.qvel[:] = 1e7
    obs, reward, terminated, truncated, info = env.step(np.zeros(env.action_space.shape, dtype=np.float32))
    assert terminated and not truncated
    assert info["sim_unstable"] is True and info["episode_metrics"]["sim_unstable"] is True
    assert reward == 0.0
