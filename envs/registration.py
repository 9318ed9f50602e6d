"""Gymnasium ids of the environments; :func:`register_envs` runs when ``upright`` is imported, with
the controller factory that builds a named prior (``upright.baselines.make_controller``).

Every id's entry point is a :class:`TaskMaker`: it splits ``gym.make``'s keywords into the task's
config, the residual's arguments, the robot's model and the environment class's own, and composes
them, so that the keywords stay flat for a user while the task and the residual stay apart."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, fields
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import WrapperSpec, load_env_creator
from gymnasium.wrappers import TimeLimit

from upright.envs.base import DEFAULT_EPISODE_SECONDS, UprightEnv, episode_steps
from upright.envs.residual import PriorFactory, make_residual, set_prior_factory
from upright.envs.robots import ROBOT_NAMES, get_robot, with_model
from upright.envs.tasks import TASK_ENTRIES


@dataclass(frozen=True)
class EnvEntry:
    """One registered environment: its entry point, the robot it is made for and its task."""

    entry_point: str  # "module:Class": the environment class, which the id's TaskMaker composes
    robot: str  # one of ROBOT_NAMES
    task: str  # one of upright.envs.tasks.TASKS


#: id → entry: every task for every robot, ``upright/<Robot><Task>-v0``.
ENVIRONMENTS: dict[str, EnvEntry] = {
    f"upright/{robot.capitalize()}{word}-v0": EnvEntry(entry_point, robot, task)
    for task, (entry_point, word) in TASK_ENTRIES.items() for robot in ROBOT_NAMES
}


def env_id(robot: str, task: str) -> str:
    """The id of ``robot``'s environment for ``task`` (one of :data:`~upright.envs.tasks.TASKS`); ValueError naming a
    bad value."""
    for name, entry in ENVIRONMENTS.items():
        if entry.robot == robot and entry.task == task:
            return name
    raise ValueError(f"no environment for robot {robot!r} and task {task!r}; ids: {', '.join(ENVIRONMENTS)}")


def match_time_limit(env: gym.Env, default_steps: int) -> gym.Env:
    """The last wrapper ``gym.make`` puts around every id. The registration's ``max_episode_steps``
    (``default_steps``) counts the default ``max_episode_seconds``; an environment made with another
    gets a ``TimeLimit`` (and ``spec.max_episode_steps``) of its own count instead, so the limit a
    tool reads is the one the environment truncates at. A step count given to ``gym.make`` that
    differs from the default is kept, and ``max_episode_steps=-1`` (no ``TimeLimit``) stays without."""
    if not isinstance(env, TimeLimit) or env.spec is None or env.spec.max_episode_steps != default_steps:
        return env
    steps = env.unwrapped.max_episode_steps
    return env if steps == default_steps else TimeLimit(env.env, steps)


#: ``gym.make``'s keywords for the robot's model (:func:`~upright.envs.robots.with_model`).
MODEL_ARGUMENTS = ("model", "model_map")
#: ``gym.make``'s keywords that the environment class takes itself.
CLASS_ARGUMENTS = ("conditions", "render_mode")
#: The residual's keywords every task takes (:func:`~upright.envs.residual.make_residual`); a task
#: adds its own (:attr:`~upright.envs.base.UprightEnv.residual_options`).
COMMON_RESIDUAL_ARGUMENTS = ("prior", "residual_scale", "prior_params")


def _keyword(name: str, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)


class TaskMaker:
    """The entry point of an environment class's ids: ``gym.make(ID, **keywords)`` calls it with
    ``robot`` (set by the id) and the user's keywords, which it splits into

    * the task's config (:attr:`~upright.envs.base.UprightEnv.config_type`, its fields' names),
    * the residual's (:data:`COMMON_RESIDUAL_ARGUMENTS` and the task's
      :attr:`~upright.envs.base.UprightEnv.residual_options`, given to
      :func:`~upright.envs.residual.make_residual`),
    * the robot's model (:data:`MODEL_ARGUMENTS`) and the class's own (:data:`CLASS_ARGUMENTS`),

    and returns the environment made of them. Its signature (``inspect.signature``) lists every
    keyword with its default; an unknown keyword is a TypeError naming it, as a class's would be."""

    def __init__(self, env_class: type[UprightEnv]) -> None:
        #: The environment class.
        self.env_class = cls = env_class
        #: The class's, so that ``gym.make`` sees its render modes.
        self.metadata = cls.metadata
        residual = inspect.signature(make_residual).parameters
        own = inspect.signature(cls.__init__).parameters
        parameters = [inspect.Parameter("robot", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=own["robot"].default)]
        parameters += [_keyword(f.name, f.default) for f in fields(cls.config_type)]
        parameters += [_keyword(name, residual[name].default) for name in self._residual_arguments(cls)]
        parameters += [_keyword(name, own[name].default) for name in CLASS_ARGUMENTS]
        parameters += [_keyword(name, None) for name in MODEL_ARGUMENTS]
        self.__signature__ = inspect.Signature(parameters, return_annotation=cls.__name__)

    @staticmethod
    def _residual_arguments(cls: type[UprightEnv]) -> tuple[str, ...]:
        return (*COMMON_RESIDUAL_ARGUMENTS, *cls.residual_options)

    def __call__(self, robot: str = "nao", **keywords: Any) -> UprightEnv:
        cls = self.env_class
        valid = [p for p in self.__signature__.parameters if p != "robot"]
        for name in keywords:
            if name not in valid:
                raise TypeError(f"{cls.__name__} got an unexpected keyword argument {name!r}; "
                                f"valid: {', '.join(valid)}")

        def given(names: tuple[str, ...]) -> dict[str, Any]:
            return {name: keywords[name] for name in names if name in keywords}

        config = cls.config_type(**given(cls.config_type.keywords()))
        spec = with_model(get_robot(robot), keywords.get("model"), keywords.get("model_map"))
        residual = make_residual(spec, cls.task, **given(self._residual_arguments(cls)))
        return cls(spec, config, residual=residual, **given(CLASS_ARGUMENTS))

    def __repr__(self) -> str:
        return f"TaskMaker({self.env_class.__module__}:{self.env_class.__qualname__})"


def register_envs(prior_factory: PriorFactory | None = None) -> None:
    """Register every id once (importing ``upright`` twice is harmless); ``prior_factory`` builds
    the controller of ``prior="NAME"`` (without one, only controller objects serve as priors).
    Each registration's ``max_episode_steps`` is the default episode's control steps; a changed
    ``max_episode_seconds`` changes it too (:func:`match_time_limit`)."""
    if prior_factory is not None:
        set_prior_factory(prior_factory)
    for name, entry in ENVIRONMENTS.items():
        if name not in gym.registry:
            steps = episode_steps(DEFAULT_EPISODE_SECONDS, get_robot(entry.robot).control_period)
            matched = WrapperSpec("MatchTimeLimit", f"{__name__}:match_time_limit", {"default_steps": steps})
            gym.register(id=name, entry_point=TaskMaker(load_env_creator(entry.entry_point)),
                         kwargs={"robot": entry.robot}, max_episode_steps=steps, additional_wrappers=(matched,))
