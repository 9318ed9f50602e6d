"""The tasks and the residual apart: ``gym.make``'s flat keywords compose a task's config and a
:class:`~upright.envs.residual.Residual`, the same environment made by hand steps identically, and a
residual is refused where the task has no place for it.

Real MuJoCo physics and real baseline priors (``lipm``, ``step_adjust``, ``keyframe``)."""

from __future__ import annotations

import inspect

import gymnasium as gym
import numpy as np
import pytest

import upright  # noqa: F401  (registers the ids)
from upright.baselines import make_controller
from upright.envs.getup import GetUpConfig, GetUpEnv
from upright.envs.registration import COMMON_RESIDUAL_ARGUMENTS
from upright.envs.residual import RESIDUAL_ARGUMENTS, Residual, StepResidual, TempoResidual, make_residual
from upright.envs.robots import get_robot
from upright.envs.walk import WalkConfig, WalkEnv
from upright.eval.runner import check_env_kwargs

NAO = get_robot("nao")


@pytest.mark.parametrize("cls", [GetUpEnv, WalkEnv])
def test_a_task_takes_at_most_eight_arguments_and_gym_make_keeps_every_keyword(cls):
    """The class takes its config and residual; the id's entry point lists every keyword the class
    did before (the config's fields, the residual's, the model's, conditions, render mode)."""
    assert len(inspect.signature(cls.__init__).parameters) - 1 <= 8
    env_id = "upright/NaoGetUp-v0" if cls is GetUpEnv else "upright/NaoWalk-v0"
    keywords = set(inspect.signature(gym.spec(env_id).entry_point).parameters)
    assert set(cls.config_type.keywords()) | set(COMMON_RESIDUAL_ARGUMENTS) | set(cls.residual_options) | {
        "robot", "conditions", "render_mode", "model", "model_map"} == keywords
    with pytest.raises(TypeError, match=f"{cls.__name__} got an unexpected keyword argument 'colour'"):
        gym.make(env_id, colour="red")
    with pytest.raises(ValueError, match="unknown keyword argument 'colour'"):
        check_env_kwargs(env_id, {"colour": "red"})


def test_the_residual_arguments_are_every_tasks_residual_keywords():
    """What running the prior alone drops (:data:`RESIDUAL_ARGUMENTS`) is every residual keyword a
    task takes, and nothing of a task's config."""
    taken = set(COMMON_RESIDUAL_ARGUMENTS) | set(GetUpEnv.residual_options) | set(WalkEnv.residual_options)
    assert set(RESIDUAL_ARGUMENTS) == taken
    assert not taken & (set(GetUpConfig.keywords()) | set(WalkConfig.keywords()))


@pytest.mark.parametrize("kwargs, kind", [
    ({"residual_scale": 0.1}, None),
    ({"prior": "lipm", "observe_gait": True, "residual_scale": 0.1}, Residual),
    ({"prior": "step_adjust", "residual_on": "steps", "observe_odometry": True}, StepResidual),  # no scale
])
def test_gym_make_splits_its_keywords_into_config_and_residual(kwargs, kind):
    env = gym.make("upright/NaoWalk-v0", command=(0.1, 0.0, 0.2), tracking_window=0.5, **kwargs).unwrapped
    assert env.config == WalkConfig(command=[0.1, 0.0, 0.2], tracking_window=0.5)  # checked, kept as floats
    if kind is None:
        assert env.residual is None and env.prior is None
    else:
        assert type(env.residual) is kind and env.prior is env.residual.prior
        assert getattr(env.residual, "scale", None) == kwargs.get("residual_scale")
        assert env.action_space.shape == (env.residual.size,)
    env.close()


def _trace(env: gym.Env, actions: np.ndarray) -> list:
    """The first observation, then every step's observation, reward and prior targets."""
    trace = [env.reset(seed=4)[0]]
    for action in actions:
        observation, reward, _, _, info = env.step(action)
        trace += [observation, reward, info["prior_targets"]]
    return trace


def test_a_walk_made_by_hand_steps_as_gym_makes_it():
    """``WalkEnv(robot, WalkConfig(...), residual=make_residual(...))`` and ``gym.make`` with the
    same keywords give the same observations, rewards and prior targets to the bit."""
    keywords = {"command": (0.2, 0.0, 0.1), "max_episode_seconds": 1.0}
    residual = {"prior": "step_adjust", "residual_on": "steps", "observe_gait": True}
    made = gym.make("upright/NaoWalk-v0", **keywords, **residual).unwrapped
    by_hand = WalkEnv(NAO, WalkConfig(**keywords), residual=make_residual(NAO, "walk", **residual))
    actions = np.random.default_rng(0).uniform(-1, 1, (60, 3)).astype(np.float32)
    ours, theirs = _trace(made, actions), _trace(by_hand, actions)
    assert len(ours) == len(theirs) == 1 + 3 * len(actions)
    assert all(np.array_equal(a, b) for a, b in zip(ours, theirs))
    assert not np.array_equal(ours[0], ours[-3])  # the robot moved


def test_a_residual_serves_one_environment_and_only_where_the_task_observes_its_blocks():
    walk = make_controller("lipm", NAO, "walk")
    residual = Residual(walk, observe_gait=True)
    with pytest.raises(ValueError, match="getup environment's observation has no place for observe_gait"):
        GetUpEnv(NAO, residual=residual)
    WalkEnv(NAO, residual=residual)
    with pytest.raises(ValueError, match="serves an environment already"):
        WalkEnv(NAO, residual=residual)


def test_each_kind_refuses_a_prior_without_what_it_needs():
    walk = make_controller("lipm", NAO, "walk")
    keyframe = make_controller("keyframe", NAO, "getup")
    with pytest.raises(ValueError, match="tempo_range needs a prior that plays a timed motion .*got prior LipmWalk"):
        TempoResidual(walk, 1.5)
    with pytest.raises(ValueError, match="needs a walk prior that exposes its step targets .*got prior LipmWalk"):
        StepResidual(walk)
    with pytest.raises(ValueError, match="observe_gait needs a walk prior with a gait clock"):
        Residual(keyframe, observe_gait=True)
    with pytest.raises(ValueError, match="prior must be a Controller"):
        Residual(object())
    with pytest.raises(ValueError, match="residual_scale must be a finite number > 0, got 0"):
        make_residual(NAO, "getup", residual_scale=0)  # checked without a prior too
    assert make_residual(NAO, "getup") is None
    with pytest.raises(ValueError, match=r"the residual serves no environment yet"):
        TempoResidual(keyframe, 1.5).names


def test_each_tasks_version_history_is_its_own():
    """The get-up's history names no walk argument, the walk's no get-up argument."""
    getup = GetUpEnv.__doc__[GetUpEnv.__doc__.index("## Version history"):]
    walk = WalkEnv.__doc__[WalkEnv.__doc__.index("## Version history"):]
    assert "tempo_range" in getup and "tracking" not in getup and "command" not in getup
    assert "tracking" in walk and "tempo_range" not in walk
