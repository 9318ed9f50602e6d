"""The Gymnasium environments: API checks, vector envs, SB3, success/fall metrics, residual prior,
determinism, bad input, registration records, reward scales, ``is_success``, the package boundary
and the docstrings."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import upright  # noqa: F401  (registers the ids)
from conftest import python_without
from upright import Conditions, Impulse
from upright.envs.registration import env_id
from upright.envs.robots import ROBOT_NAMES, get_robot
from upright.envs.tasks import TASKS

#: Every robot's environment for every task, from the registry (``upright/NaoGetUp-v0``, …).
IDS = [env_id(robot, task) for task in TASKS for robot in ROBOT_NAMES]
GETUP_IDS = [env_id(robot, "getup") for robot in ROBOT_NAMES]


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
    assert info["is_success"] is True


@pytest.mark.parametrize("env_id", GETUP_IDS)
def test_zero_policy_from_prone_never_succeeds(env_id):
    env = gym.make(env_id, start="prone", max_episode_seconds=4.0)
    info = _run(env, lambda obs: np.zeros(env.action_space.shape), seed=0)
    assert info["episode_metrics"]["success"] is False
    assert info["episode_metrics"]["time_to_stand"] is None
    assert info["is_success"] is False


@pytest.mark.parametrize("env_id", GETUP_IDS)
def test_pushed_over_while_standing_is_a_fall(env_id):
    robot = gym.make(env_id).unwrapped.robot
    push = Impulse(time=0.3, force=(60.0 * (1 if robot.name == "nao" else 2), 0.0), duration=0.25)
    env = gym.make(env_id, start="standing", conditions=Conditions(impulses=(push,)), max_episode_seconds=3.0)
    info = _run(env, lambda obs: _hold(env), seed=0)
    assert info["fallen"] is True
    assert info["episode_metrics"]["falls"] == 1
    # knocked down from standing and lying since: no rise, so no try
    assert (info["episode_metrics"]["tries"], info["episode_metrics"]["tries_unfinished"]) == (0, 0)
    assert info["episode_metrics"]["success"] is False
    assert info["is_success"] is False


@pytest.mark.parametrize("env_id", GETUP_IDS)
def test_standing_still_is_no_try(env_id):
    env = gym.make(env_id, start="standing", max_episode_seconds=1.5)
    metrics = _run(env, lambda obs: _hold(env), seed=0)["episode_metrics"]
    assert metrics["stood_up"] is True
    assert (metrics["tries"], metrics["tries_succeeded"], metrics["tries_unfinished"]) == (0, 0, 0)


def test_the_keyframe_retries_are_tries():
    """NAO, worn joints (``competition``), from prone, 14 s: every episode's tries agree with its
    other metrics — a rise that stood up is a succeeded try, every failed try ended in a fall — and
    the run's rate is succeeded over finished tries. These are relations, not per-seed outcomes: on
    the turf a seed's episode is not the same on every CPU (exact retry sequences are checked on
    recorded postures in ``tests/test_eval.py``)."""
    from upright.eval.results import aggregate
    from upright.eval.runner import run_episodes

    run = run_episodes("upright/NaoGetUp-v0", "keyframe", 4, env_kwargs={
        "start": "prone", "conditions": "competition", "max_episode_seconds": 14.0}, seed=0, progress=False)
    for r in run.records:
        assert 0 <= r["tries_succeeded"] <= r["tries"] and r["tries_unfinished"] in (0, 1), r
        assert r["tries"] - r["tries_succeeded"] <= r["falls"], r  # every failed try ended in a fall
        assert not r["stood_up"] or r["tries_succeeded"] >= 1, r  # lying at the start: standing took a try
    tries = sum(r["tries"] for r in run.records)
    assert tries >= 1
    result = aggregate(run)
    assert result["try_success_rate"] == sum(r["tries_succeeded"] for r in run.records) / tries


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
    prior_block = env.unwrapped.observation_slices()["prior_target"]
    np.testing.assert_allclose(obs[prior_block], info["prior_targets"], rtol=1e-6)


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


def test_a_start_list_draws_each_of_its_starts():
    env = gym.make("upright/NaoGetUp-v0", start=("standing", "prone"))
    drawn = []
    for seed in range(12):
        _, info = env.reset(seed=seed)
        tilt = np.rad2deg(env.unwrapped.sim.torso_tilt())
        assert (tilt < 20) == (info["start"] == "standing")
        drawn.append(info["start"])
    assert set(drawn) == {"standing", "prone"}
    _, again = env.reset(seed=5)
    assert again["start"] == drawn[5]


def test_bad_input_is_clear():
    with pytest.raises(gym.error.Error, match="NaoFly"):
        gym.make("upright/NaoFly-v0")
    with pytest.raises(ValueError, match="unknown start 'sitting'.*prone, supine"):
        gym.make("upright/NaoGetUp-v0", start="sitting")
    with pytest.raises(ValueError, match="unknown start 'sitting'"):
        gym.make("upright/NaoGetUp-v0", start=("random", "sitting"))
    with pytest.raises(ValueError, match=r"at least one start, got \(\)"):
        gym.make("upright/NaoGetUp-v0", start=())
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


@pytest.mark.parametrize("env_id, kwargs, message", [
    ("upright/NaoGetUp-v0", {"max_episode_seconds": math.inf}, "must be a finite number > 0, got inf"),
    ("upright/NaoWalk-v0", {"max_episode_seconds": math.nan}, "must be a finite number > 0, got nan"),
    ("upright/WolfgangGetUp-v0", {"max_episode_seconds": -1.0}, "max_episode_seconds must be a finite number > 0"),
    ("upright/NaoGetUp-v0", {"prior": "keyframe", "residual_scale": math.inf}, "residual_scale must be a finite number"),
    ("upright/NaoGetUp-v0", {"prior": "keyframe", "residual_scale": math.nan}, "residual_scale must be a finite number"),
    ("upright/NaoWalk-v0", {"command": (1e9, 0.0, 0.0)}, "command must stay within ±10 m/s (vx, vy) and ±20 rad/s"),
    ("upright/WolfgangWalk-v0", {"command": (0.0, 0.0, -25.0)}, "got (0.0, 0.0, -25.0)"),
    ("upright/NaoWalk-v0", {"command": (math.nan, 0.0, 0.0)}, "command must be three finite numbers"),
    ("upright/NaoWalk-v0", {"command_ranges": ((0.0, 1e9), (0.0, 0.0), (0.0, 0.0))}, "command_ranges must stay within"),
    ("upright/NaoWalk-v0", {"command_focus": ((0.0, 0.1), (-50.0, 0.0), (0.0, 0.0)), "command_focus_share": 0.5},
     "command_focus must stay within"),
])
def test_numbers_that_hang_or_mislead_are_refused(env_id, kwargs, message):
    """An endless episode, an infinite residual and a command no walk can follow (a unit mix-up) are
    refused by ``gym.make``, naming the value."""
    with pytest.raises(ValueError, match=re.escape(message)):
        gym.make(env_id, **kwargs)


@pytest.mark.parametrize("env_id", ["upright/WolfgangGetUp-v0", "upright/NaoWalk-v0"])
def test_physics_blow_up_ends_episode_with_flag(env_id):
    env = gym.make(env_id)
    env.reset(seed=0)
    env.unwrapped.sim.data.qvel[:] = 1e7
    obs, reward, terminated, truncated, info = env.step(np.zeros(env.action_space.shape, dtype=np.float32))
    assert terminated and not truncated
    assert info["sim_unstable"] is True and info["episode_metrics"]["sim_unstable"] is True
    assert info["is_success"] is False
    assert reward == 0.0


# ---------------------------------------------------------------- registration, package boundary, docs

ROOT = Path(__file__).resolve().parents[1]


def test_registrations_carry_robot_and_task():
    from upright.envs.registration import ENVIRONMENTS

    assert set(ENVIRONMENTS) == set(IDS) and len(IDS) == len(ROBOT_NAMES) * len(TASKS)
    assert {"upright/NaoGetUp-v0", "upright/WolfgangWalk-v0"} <= set(IDS)
    for name, entry in ENVIRONMENTS.items():
        env = gym.make(name).unwrapped
        assert (env.robot.name, env.task) == (entry.robot, entry.task) and entry.task in TASKS
        assert env_id(entry.robot, entry.task) == name
    with pytest.raises(ValueError, match="no environment for robot 'nao' and task 'swim'"):
        env_id("nao", "swim")


def test_every_robot_has_its_model_file_and_every_model_file_a_robot():
    from upright.assets import ROBOT_FILES, model_path
    from upright.envs.robots import ROBOT_NAMES, get_robot

    assert sorted(ROBOT_FILES) == sorted(ROBOT_NAMES)
    for name in ROBOT_NAMES:
        assert get_robot(name).name == name and model_path(name).name == f"{name}.xml"
    with pytest.raises(ValueError, match=f"unknown robot 'atlas'; valid robots: {', '.join(sorted(ROBOT_NAMES))}$"):
        model_path("atlas")


def test_envs_run_without_the_layers_above():
    """At run time (the import statements are checked by tests/test_architecture.py): a fresh
    interpreter imports every envs module and steps every environment without a prior, with the
    package root standing in empty, and loads no module of the layers above; a named prior then
    needs the controller factory that the package root installs."""
    code = (  # the package root stands in empty: what it re-exports and installs is not the question here
        "import importlib, importlib.util, pkgutil, sys, types, numpy as np, gymnasium as gym\n"
        "root = types.ModuleType('upright')\n"
        "root.__path__ = list(importlib.util.find_spec('upright').submodule_search_locations)\n"
        "sys.modules['upright'] = root\n"
        "import upright.envs\n"
        "for m in pkgutil.walk_packages(upright.envs.__path__, 'upright.envs.'): importlib.import_module(m.name)\n"
        "upright.envs.registration.register_envs()\n"
        f"for name in {IDS!r}:\n"
        "    env = gym.make(name, max_episode_seconds=0.05); env.reset(seed=0)\n"
        "    while not any(env.step(np.zeros(env.action_space.shape, np.float32))[2:4]): pass\n"
        "try:\n"
        "    gym.make('upright/NaoGetUp-v0', prior='keyframe')\n"
        "except ValueError as error:\n"
        "    print(error)\n"
        "above = ('baselines', 'policies', 'eval', 'training', 'cli')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[1:2] and m.split('.')[1] in above and m.startswith('upright.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    error, loaded = out.stdout.strip().splitlines()
    assert error.startswith("prior='keyframe' names a controller, but no controller factory is installed"), error
    assert loaded == "[]"


@pytest.mark.parametrize("cls_path", ["upright.envs.getup:GetUpEnv", "upright.envs.walk:WalkEnv"])
def test_env_docstrings_follow_gymnasiums_section_order(cls_path):
    import importlib

    module, name = cls_path.split(":")
    doc = getattr(importlib.import_module(module), name).__doc__
    sections = ["## Action space", "## Observation space", "## Rewards", "## Starting state", "## Episode end",
                "## Arguments", "## Version history"]
    positions = [doc.find(section) for section in sections]
    assert -1 not in positions and positions == sorted(positions), dict(zip(sections, positions))
    assert "| reward_scales " in doc
    history = doc[doc.find("## Version history"):]
    assert "max_episode_steps" in history and "reset(options=...)" in history, history


@pytest.mark.parametrize("env_id", IDS)
def test_spec_max_episode_steps_agrees_with_max_episode_seconds(env_id):
    """The registration's step limit is the default 20 s episode; a changed max_episode_seconds gives
    gym.make's TimeLimit and spec its own count, and both truncate on the environment's own step."""
    period = get_robot(upright.ENVIRONMENTS[env_id].robot).control_period
    assert gym.spec(env_id).max_episode_steps == math.ceil(20.0 / period - 1e-6)
    for seconds in (0.3, 0.36):
        inside = gym.make(env_id, max_episode_seconds=seconds, max_episode_steps=-1)  # no TimeLimit
        inside.reset(seed=0)
        steps, truncated = 0, False
        while not truncated:
            _, _, terminated, truncated, _ = inside.step(_hold(inside))
            steps += 1
            assert not terminated
        env = gym.make(env_id, max_episode_seconds=seconds)
        assert env.spec.max_episode_steps == steps == env.unwrapped.max_episode_steps, (seconds, steps)
        info = _run(env, lambda obs: _hold(env), seed=0)
        assert "episode_metrics" in info  # the environment's own end, on the TimeLimit's step
    assert gym.make(env_id, max_episode_seconds=0.3, max_episode_steps=5).spec.max_episode_steps == 5


def test_reset_options_start_and_command_hold_for_one_episode():
    env = gym.make("upright/NaoGetUp-v0", start="prone", max_episode_seconds=0.1)
    assert env.reset(seed=0, options={"start": "supine"})[1]["start"] == "supine"
    assert env.reset(seed=0, options={"start": ["side", "side"]})[1]["start"] == "side"
    assert env.reset(seed=0)[1]["start"] == "prone"
    walk = gym.make("upright/NaoWalk-v0", max_episode_seconds=0.1)
    obs, info = walk.reset(seed=0, options={"command": (0.1, 0.0, 0.2)})
    assert info["command"].tolist() == [0.1, 0.0, 0.2]
    assert obs[walk.unwrapped.observation_slices()["command"]].tolist() == pytest.approx([0.1, 0.0, 0.2])
    assert walk.reset(seed=0)[1]["command"].tolist() != [0.1, 0.0, 0.2]  # drawn again
    assert walk.reset(seed=0, options={"start": "standing"})[1]["command"].tolist() == \
        walk.reset(seed=0)[1]["command"].tolist()


@pytest.mark.parametrize("env_id, options, message", [
    ("upright/NaoGetUp-v0", {"strat": "supine"}, "unknown reset option 'strat'"),
    ("upright/NaoGetUp-v0", {"start": "sitting"}, "unknown start 'sitting'"),
    ("upright/NaoGetUp-v0", {"command": (0.1, 0.0, 0.0)}, "reset option 'command' means nothing"),
    ("upright/NaoGetUp-v0", {"conditions": "competition"}, "reset option 'conditions' is not supported"),
    ("upright/NaoWalk-v0", {"start": "prone"}, "unknown start 'prone' for a walk"),
    ("upright/NaoWalk-v0", {"command": (0.1, 0.0)}, "command must be three finite numbers"),
    ("upright/NaoWalk-v0", {"conditions": "turf"}, "reset option 'conditions' is not supported"),
])
def test_reset_refuses_options_it_cannot_honour(env_id, options, message):
    env = gym.make(env_id, max_episode_seconds=0.1)
    with pytest.raises(ValueError, match=re.escape(message)):
        env.reset(seed=0, options=options)


def test_envs_docstrings_point_only_at_files_in_the_repository():
    import re

    for path in sorted((ROOT / "envs").rglob("*.py")):
        text = path.read_text()
        assert "shared/" not in text and "../" not in text, path
        for ref in re.findall(r"``([\w./-]+\.(?:md|py|yaml|xml))``", text):
            assert (ROOT / ref).exists(), f"{path.name} points at {ref}, which is not in the repository"


# ---------------------------------------------------------------- reward scales

def _scripted_episode(env_id: str, steps: int, hold: bool, amplitude: float, seed: int = 3, **kwargs):
    """Rewards and reward terms of a short episode under seeded random actions (around the standing
    targets with ``hold``)."""
    env = gym.make(env_id, **kwargs).unwrapped
    env.reset(seed=seed)
    rng = np.random.default_rng(1)
    base = env.action_from_targets(env.standing_targets) if hold else 0.0
    rewards, terms = [], []
    for _ in range(steps):
        action = np.clip(base + rng.uniform(-amplitude, amplitude, env.action_space.shape), -1, 1)
        _, reward, terminated, truncated, info = env.step(action.astype(np.float32))
        rewards.append(reward)
        terms.append(info["reward_terms"])
        if terminated or truncated:
            break
    return rewards, terms


#: Summed over each scripted episode by the code before the weights became data (the literals in
#: ``_reward_terms``): (env id, kwargs, hold, amplitude, steps) → (steps run, reward, term sums).
#: Between them the scenarios make every term non-zero.
BEFORE_SCALES = [
    (("upright/NaoGetUp-v0", {"start": "standing"}, True, 0.3, 160), (160, 167.8545306010566, {
        "head_progress": -3.0600765229012516, "head_height": 77.94319159673387, "upright": 78.11845678410776,
        "still": 20.83929813864002, "torque": -5.2739196808147994, "action_rate": -0.46894145383938174,
        "joint_limits": -0.24347826086956534, "impact": 0.0, "fall": 0.0})),
    (("upright/NaoGetUp-v0", {"start": "prone"}, False, 1.0, 120), (120, 14.848343654327014, {
        "head_progress": -0.8577893960598758, "head_height": 6.369753539886568, "upright": 24.15609459094165,
        "still": 0.0, "torque": -5.29354866258199, "action_rate": -3.9452105541845293,
        "joint_limits": -0.052173913043478265, "impact": -5.52878195063133, "fall": 0.0})),
    (("upright/WolfgangGetUp-v0", {"start": "standing"}, True, 0.4, 160), (160, 121.98755084681672, {
        "head_progress": -8.608294140095547, "head_height": 62.69249666394625, "upright": 68.95448349008626,
        "still": 11.432955853857326, "torque": -6.193544843189613, "action_rate": -0.8071093720897402,
        "joint_limits": 0.0, "impact": -5.483436805698187, "fall": 0.0})),
    (("upright/WolfgangGetUp-v0", {"start": "side"}, False, 1.0, 120), (120, 22.999701256178035, {
        "head_progress": -0.9005600220882878, "head_height": 7.988447804591866, "upright": 26.299878814592464,
        "still": 0.0, "torque": -5.404109022192896, "action_rate": -3.8191307125178837, "joint_limits": 0.0,
        "impact": -1.164825606207212, "fall": 0.0})),
    (("upright/NaoWalk-v0", {"command": (0.2, 0.0, 0.1)}, True, 0.3, 200), (162, 47.47066701316571, {
        "tracking_xy": 47.66113376413105, "tracking_yaw": 20.95992494104589, "upright": 31.54571508766088,
        "energy": -39.926479059395575, "foot_slip": -2.769627720276504, "fall": -10.0})),
    (("upright/WolfgangWalk-v0", {"command": (0.1, 0.05, -0.2)}, True, 0.3, 200), (143, 25.832845538571924, {
        "tracking_xy": 42.142808090918386, "tracking_yaw": 16.005095585756166, "upright": 27.347830388471635,
        "energy": -44.970158455241275, "foot_slip": -4.692730071332984, "fall": -10.0})),
]


@pytest.mark.parametrize("scenario, before", BEFORE_SCALES, ids=lambda v: f"{v[0]}-{v[1]}" if len(v) == 5 else "")
def test_default_reward_scales_give_the_rewards_of_before(scenario, before):
    """The same rewards as the literal weights gave (to rounding: the bits agree on the machine the
    numbers were recorded on, but NumPy's transcendental functions may differ in the last bit
    across CPUs)."""
    env_id, kwargs, hold, amplitude, steps = scenario
    rewards, terms = _scripted_episode(env_id, steps, hold, amplitude, **kwargs)
    expected_steps, expected_reward, expected_terms = before
    assert len(rewards) == expected_steps
    assert list(terms[0]) == list(expected_terms)
    assert sum(rewards) == pytest.approx(expected_reward, rel=1e-9)
    for name, total in expected_terms.items():
        assert sum(t[name] for t in terms) == pytest.approx(total, rel=1e-9, abs=1e-12), name
    assert all(reward == sum(t.values()) for reward, t in zip(rewards, terms))


@pytest.mark.parametrize("env_id, kwargs, hold, amplitude, steps", [s for s, _ in BEFORE_SCALES[::2]])
def test_reward_scales_weight_each_term(env_id, kwargs, hold, amplitude, steps):
    from upright.envs.registration import ENVIRONMENTS
    from upright.envs.rewards import GetUpRewardScales, WalkRewardScales

    cls = {"getup": GetUpRewardScales, "walk": WalkRewardScales}[ENVIRONMENTS[env_id].task]
    defaults = cls()
    rewards, terms = _scripted_episode(env_id, steps, hold, amplitude, **kwargs)
    explicit = _scripted_episode(env_id, steps, hold, amplitude, reward_scales=cls(), **kwargs)
    assert explicit == (rewards, terms)
    factors = {name: 0.5 + i for i, name in enumerate(cls.names())}
    scaled_rewards, scaled_terms = _scripted_episode(
        env_id, steps, hold, amplitude,
        reward_scales={name: factor * getattr(defaults, name) for name, factor in factors.items()}, **kwargs)
    assert len(scaled_terms) == len(terms)  # the weights do not change the dynamics
    for before, after in zip(terms, scaled_terms):
        assert list(after) == list(cls.names())
        for name, factor in factors.items():
            assert after[name] == pytest.approx(factor * before[name], rel=1e-12, abs=1e-300), name
    zeroed = _scripted_episode(env_id, steps, hold, amplitude, reward_scales=dict.fromkeys(cls.names(), 0.0),
                               **kwargs)
    assert not any(zeroed[0])


def test_getup_fall_term_costs_each_counted_fall():
    """With a ``fall`` weight, each fall the episode metrics count costs that weight once, on the
    step it is counted; the other terms and the dynamics are those of the default weights."""
    from upright.envs.rewards import GetUpRewardScales

    scenario = ("upright/NaoGetUp-v0", 160, True, 1.0)
    rewards, terms = _scripted_episode(*scenario, start="standing")
    weighted_rewards, weighted = _scripted_episode(*scenario, start="standing", reward_scales={"fall": 4.0})
    env = gym.make("upright/NaoGetUp-v0", start="standing", reward_scales=GetUpRewardScales(fall=4.0))
    assert len(weighted) == len(terms)
    fall_steps = [i for i, t in enumerate(weighted) if t["fall"] != 0.0]
    assert fall_steps, "the scripted episode must fall for this test to mean anything"
    assert all(weighted[i]["fall"] == -4.0 for i in fall_steps)
    assert all(t["fall"] == 0.0 for t in terms)
    for before, after in zip(terms, weighted):
        assert {k: v for k, v in after.items() if k != "fall"} == {k: v for k, v in before.items() if k != "fall"}
    # the count agrees with the tracker's: the same script (``_scripted_episode``'s seeds) in a fresh env
    env = env.unwrapped
    env.reset(seed=3)
    rng = np.random.default_rng(1)
    base = env.action_from_targets(env.standing_targets)
    for _ in range(len(weighted)):
        env.step(np.clip(base + rng.uniform(-1.0, 1.0, env.action_space.shape), -1, 1).astype(np.float32))
    assert len(fall_steps) == env._tracker.falls
    assert sum(weighted_rewards) == pytest.approx(sum(rewards) - 4.0 * len(fall_steps), rel=1e-12)


def test_bad_reward_scales_are_clear():
    from upright.envs.rewards import WalkRewardScales

    with pytest.raises(ValueError, match=r"unknown reward scale 'heigth'.*valid: head_progress, head_height"):
        gym.make("upright/NaoGetUp-v0", reward_scales={"heigth": 1.0})
    with pytest.raises(ValueError, match="reward_scales must be None, a GetUpRewardScales"):
        gym.make("upright/NaoGetUp-v0", reward_scales=WalkRewardScales())
    with pytest.raises(ValueError, match="reward scale 'fall' must be a finite number, got nan"):
        gym.make("upright/NaoWalk-v0", reward_scales={"fall": float("nan")})
    with pytest.raises(ValueError, match="reward scale 'energy' must be a finite number, got '1'"):
        WalkRewardScales(energy="1")


# ---------------------------------------------------------------- walk metrics

def _walk_episode(prior, seconds: float):
    env = gym.make("upright/NaoWalk-v0", command=(0.2, 0.0, 0.0), prior=prior, max_episode_seconds=seconds)
    if prior is None:
        return _run(env, lambda obs: _hold(env), seed=0), env
    return _run(env, lambda obs: np.zeros(env.action_space.shape, dtype=np.float32), seed=0), env


def test_standing_still_tracks_worse_than_walking():
    """The old metric (mean instantaneous |v − command| with m/s and rad/s added) ranked a robot
    that holds its standing pose (0.20) above the LIPM walk at 0.2 m/s (0.30); the linear error on
    1 s window means ranks them the right way round."""
    (still, still_env), (walking, walking_env) = _walk_episode(None, 10.0), _walk_episode("lipm", 10.0)
    for info in (still, walking):
        assert info["is_success"] is True and info["episode_metrics"]["falls"] == 0
        assert "tracking_error" not in info["episode_metrics"]
    s, w = still["episode_metrics"], walking["episode_metrics"]
    assert s["linear_tracking_error"] == pytest.approx(0.2, abs=0.005)  # the whole command
    assert w["linear_tracking_error"] < 0.1
    assert w["mean_velocity"][0] > 0.1
    assert s["yaw_tracking_error"] < 1e-3 and w["yaw_tracking_error"] < 0.1

    def old_metric(env):
        v = np.array(env.unwrapped._tracker.velocities)
        return float(np.mean(np.linalg.norm(v - np.array([0.2, 0.0, 0.0]), axis=1)))

    assert old_metric(still_env) < old_metric(walking_env)  # the complaint, reproduced


def test_a_walk_that_falls_is_no_success():
    env = gym.make("upright/NaoWalk-v0", command=(0.2, 0.0, 0.0), max_episode_seconds=5.0)
    info = _run(env, lambda obs: np.zeros(env.action_space.shape, dtype=np.float32), seed=0)
    assert info["fallen"] is True and info["episode_metrics"]["falls"] == 1
    assert info["is_success"] is False


def test_walk_tracking_errors_on_window_means():
    from upright.envs.metrics import WalkTracker

    assert WalkTracker.for_period(np.zeros(3), 0.012).window == 83
    assert WalkTracker.for_period(np.zeros(3), 0.010).window == 100
    velocities = ([0.0, 0.0, 0.0], [0.4, 0.0, 1.0], [0.2, 0.2, 0.5])
    two, long = WalkTracker(np.array([0.2, 0.0, 0.5]), window=2), WalkTracker(np.array([0.2, 0.0, 0.5]), window=10)
    for v in velocities:
        two.update(np.array(v), 0.1, False)
        long.update(np.array(v), 0.1, False)
    # windows [0.2, 0, 0.5] and [0.3, 0.1, 0.75]: errors (0, √0.02) m/s and (0, 0.25) rad/s
    m = two.episode_metrics(0.036, False)
    assert m["linear_tracking_error"] == pytest.approx(np.sqrt(0.02) / 2)
    assert m["yaw_tracking_error"] == pytest.approx(0.125)
    assert m["mean_velocity"] == pytest.approx([0.2, 0.2 / 3, 0.5])
    assert m["distance_before_fall"] == pytest.approx(0.3) and m["falls"] == 0
    # shorter than a window: one window over all steps
    m = long.episode_metrics(0.036, False)
    assert m["linear_tracking_error"] == pytest.approx(0.2 / 3) and m["yaw_tracking_error"] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="window must be at least one step"):
        WalkTracker(np.zeros(3), window=0)


def test_window_means_from_running_sums_agree_with_summing_each_window():
    """The window means come from differences of running sums; over a 20 s walk's worth of steps
    they agree with the mean of each window taken directly to rounding (1e-12 m/s), with one row
    per step from the first full window on (one window over all steps when shorter)."""
    from numpy.lib.stride_tricks import sliding_window_view

    from upright.envs.metrics import WalkTracker

    rng = np.random.default_rng(7)
    for steps, window in ((2000, 100), (1667, 83), (50, 100), (1, 83)):
        tracker = WalkTracker(np.zeros(3), window=window)
        for v in 0.2 + 0.1 * rng.normal(size=(steps, 3)):
            tracker.update(v, 0.0, False)
        direct = sliding_window_view(tracker.velocities, min(window, steps), axis=0).mean(axis=-1)
        means = tracker.windowed_velocities()
        assert means.shape == direct.shape == (max(1, steps - window + 1), 3)
        np.testing.assert_allclose(means, direct, rtol=0, atol=1e-12)


def test_walk_tracker_records_every_step_and_means_the_last_ones():
    """The velocity record grows past its first buffer without losing a row; ``recent_mean`` is the
    mean of the last steps (all of them at first), as the windowed tracking rewards use it."""
    from upright.envs.metrics import WalkTracker

    tracker = WalkTracker(np.zeros(3), window=83)
    np.testing.assert_array_equal(tracker.recent_mean(83), np.zeros(3))
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(1000, 3))
    for k, v in enumerate(rows):
        tracker.update(v, 0.0, False)
        first = tracker.velocities
        np.testing.assert_allclose(tracker.recent_mean(83), rows[max(0, k - 82):k + 1].mean(axis=0), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(tracker.velocities, rows)
    tracker.update(np.ones(3), 0.0, False)
    assert len(first) == 1000 and len(tracker.velocities) == 1001  # a view of the rows so far
    tracker.velocities = rows[:10]
    np.testing.assert_array_equal(tracker.velocities, rows[:10])


def test_set_command_steers_the_prior_and_the_next_reset_restores_the_command():
    """A steering layer's command reaches the observation and the prior's walk (which then walks
    sideways); the tracking metrics keep the first command and the next reset starts from it."""
    env = gym.make("upright/NaoWalk-v0", command=(0.0, 0.0, 0.0), prior="step_adjust", max_episode_seconds=4.0)
    base = env.unwrapped
    zero = np.zeros(env.action_space.shape, dtype=np.float32)
    obs, _ = env.reset(seed=0)
    command_block = base.observation_slices()["command"]
    np.testing.assert_array_equal(obs[command_block], [0.0, 0.0, 0.0])
    base.set_command(np.array([0.0, 0.1, 0.0]))
    terminated = truncated = False
    while not (terminated or truncated):
        obs, _, terminated, truncated, info = env.step(zero)
    assert truncated  # 4 s without a fall
    np.testing.assert_allclose(obs[command_block], [0.0, 0.1, 0.0])
    assert base.sim.torso_pose()[0][1] > 0.05  # the prior walked left (m)
    assert info["episode_metrics"]["command"] == pytest.approx([0.0, 0.0, 0.0])
    obs, info = env.reset(seed=0)
    np.testing.assert_array_equal(obs[command_block], [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(info["command"], [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="command must be three finite numbers"):
        base.set_command(np.array([0.1, np.nan, 0.0]))
    restarted = base.restart_prior(base.sim.sensors())
    assert restarted.shape == env.observation_space.shape
    with pytest.raises(ValueError, match="restart_prior needs an environment with a prior"):
        gym.make("upright/NaoWalk-v0").unwrapped.restart_prior(base.sim.sensors())


def test_command_focus_draws_that_share_of_the_commands_from_its_box():
    """``command_focus_share`` p draws a command from ``command_focus`` with probability p, and
    from ``command_ranges`` otherwise; p = 0 leaves a seed's commands those of the plain ranges;
    six numbers are a box as three pairs are; bad boxes and shares are named."""
    focus = (0.2, 0.3, -0.1, 0.1, -0.5, 0.5)  # the --set form: vx 0.2..0.3 m/s
    plain = gym.make("upright/NaoWalk-v0").unwrapped
    off = gym.make("upright/NaoWalk-v0", command_focus=focus).unwrapped
    for seed in range(5):
        np.testing.assert_array_equal(plain.reset(seed=seed)[1]["command"], off.reset(seed=seed)[1]["command"])
    half = gym.make("upright/NaoWalk-v0", command_focus=focus, command_focus_share=0.5).unwrapped
    half.reset(seed=0)
    vx = np.array([half.reset()[1]["command"][0] for _ in range(200)])
    # Below 0.2 m/s only from the plain box, where 0.2..0.3 holds 1/5 of the draws: 0.4 of all.
    assert 0.3 < np.mean(vx < 0.2) < 0.5
    assert vx.min() >= -0.2 and vx.max() <= 0.3
    every = gym.make("upright/NaoWalk-v0", command_focus=((0.2, 0.3), (0, 0), (0, 0)), command_focus_share=1.0).unwrapped
    commands = np.array([every.reset(seed=seed)[1]["command"] for seed in range(20)])
    assert np.all(commands[:, 0] >= 0.2) and np.all(commands[:, 1:] == 0.0)
    with pytest.raises(ValueError, match="command_focus must be three"):
        gym.make("upright/NaoWalk-v0", command_focus=(0.3, 0.2, 0, 0, 0, 0), command_focus_share=0.5)
    with pytest.raises(ValueError, match="command_focus_share must be a probability"):
        gym.make("upright/NaoWalk-v0", command_focus=focus, command_focus_share=1.5)
    with pytest.raises(ValueError, match="needs a command_focus box"):
        gym.make("upright/NaoWalk-v0", command_focus_share=0.5)


def test_import_without_an_egl_library_leaves_the_opengl_backend_to_mujoco():
    """On a headless Linux machine without libEGL, ``import upright`` must not pick MuJoCo's EGL
    backend (whose import then fails): simulation works, MUJOCO_GL stays unset."""
    script = (
        "import ctypes\n"
        "real = ctypes.CDLL\n"
        "def no_egl(name, *args, **kwargs):\n"
        "    if 'EGL' in str(name):\n"
        "        raise OSError(f'{name}: cannot open shared object file')\n"
        "    return real(name, *args, **kwargs)\n"
        "ctypes.CDLL = no_egl\n"
        "import os, gymnasium as gym, upright\n"
        "env = gym.make('upright/NaoGetUp-v0')\n"
        "env.reset(seed=0); env.step(env.action_space.sample())\n"
        "print(os.environ.get('MUJOCO_GL'))\n")
    done = python_without(script, unset=("MUJOCO_GL", "DISPLAY"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "None"
