"""What the get-up and walk environments share: simulation, observation, action, prior, rendering.

Observation (a flat ``Box``, built only from :class:`~upright.envs.sensors.Sensors`), in the order
of :data:`upright.envs.observation.OBSERVATION` (an environment's own blocks:
:meth:`UprightEnv.observation_slices`):

{observation table}

Action: one value in [-1, 1] per actuator. Without a residual it maps linearly onto the joint range
(-1 = lower limit, +1 = upper limit); with one (:mod:`~upright.envs.residual`) the residual's kind
says what an entry moves, e.g. ``prior + residual_scale · action · half_range``, so a zero action
reproduces the prior exactly.

An environment is made of its task's configuration (:class:`EnvConfig`, one subclass per task), the
conditions, an optional :class:`~upright.envs.residual.Residual` and a render mode;
``gym.make``'s keywords are split into these by the registration's entry point
(:class:`~upright.envs.registration.TaskMaker`).
"""

from __future__ import annotations

import math
import numbers
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from upright.envs.conditions import Conditions
from upright.envs.render import Camera, RenderingUnavailable
from upright.envs.residual import Residual
from upright.envs.robots import RobotSpec, get_robot
from upright.envs.metrics import Posture, StandingReference
from upright.envs.kernels import clip_finite
from upright.envs.observation import (ObservationBlock, block_slices, observation_blocks, observation_size,
                                      with_observation_table)
from upright.envs.sensors import Sensors, observation_from_sensors
from upright.envs.simulation import Simulation

__doc__ = with_observation_table(__doc__, None)

RENDER_SIZE = (640, 480)
#: The default ``max_episode_seconds`` of every task (s): the RoboCup limit for getting up.
DEFAULT_EPISODE_SECONDS = 20.0
#: The options ``reset(options=...)`` knows; each environment says which it honours
#: (:meth:`UprightEnv._reset_options`).
RESET_OPTIONS = ("start", "command", "conditions")


def episode_steps(max_episode_seconds: float, control_period: float) -> int:
    """The number of control steps (of ``control_period`` s) after which an episode of
    ``max_episode_seconds`` is truncated: the first step on which the clock reaches the limit, with
    the same 1 ns slack as :meth:`UprightEnv._finish_step`, so that Gymnasium's ``TimeLimit``
    (``spec.max_episode_steps``) and the environment's own truncation end on the same step."""
    return max(1, math.ceil((max_episode_seconds - 1e-9) / control_period))


@dataclass(frozen=True, kw_only=True)
class EnvConfig:
    """What configures every task (each task's config adds its own fields; ``gym.make``'s keywords of
    the same names fill them): ``max_episode_seconds``, the episode's length (s, finite, > 0), after
    which it is truncated. Frozen, checked when made: ValueError naming a bad value."""

    max_episode_seconds: float = DEFAULT_EPISODE_SECONDS

    def __post_init__(self) -> None:
        seconds = self.max_episode_seconds
        if not isinstance(seconds, numbers.Real) or not 0 < seconds < math.inf:  # an endless episode never returns
            raise ValueError(f"max_episode_seconds must be a finite number > 0, got {seconds!r}")
        object.__setattr__(self, "max_episode_seconds", float(seconds))

    @classmethod
    def keywords(cls) -> tuple[str, ...]:
        """The field names: the ``gym.make`` keywords that go to this config."""
        return tuple(f.name for f in fields(cls))


class UprightEnv(gym.Env):
    """Base class of the tasks; subclasses define the start state, reward and metrics.

    ``robot`` is a name of :data:`~upright.envs.robots.ROBOT_NAMES` or a description (a user's model
    of one through :func:`~upright.envs.robots.with_model`); ``config`` the task's
    :attr:`config_type` (None: its defaults); ``conditions`` a preset name or a
    :class:`~upright.envs.conditions.Conditions`; ``residual`` a
    :class:`~upright.envs.residual.Residual` on a prior (None: the action commands the joints
    itself), which this environment binds to its actuators; ``render_mode`` ``"rgb_array"``,
    ``"human"`` or None."""

    metadata = {"render_modes": ["rgb_array", "human"], "render_fps": 50}
    #: ``"getup"`` or ``"walk"``: which baselines may serve as this environment's prior.
    task: str = ""
    #: The task's configuration class.
    config_type: ClassVar[type[EnvConfig]] = EnvConfig
    #: The residual's ``gym.make`` keywords this task takes besides ``prior``, ``residual_scale`` and
    #: ``prior_params`` (those of :func:`~upright.envs.residual.make_residual`).
    residual_options: ClassVar[tuple[str, ...]] = ()
    #: The velocity command a walk follows (vx m/s, vy m/s, yaw rate rad/s), which its prior is
    #: given; None for a task without one.
    command: np.ndarray | None = None

    def __init__(
        self,
        robot: str | RobotSpec = "nao",
        config: EnvConfig | None = None,
        conditions: str | Conditions | None = "lab",
        residual: Residual | None = None,
        render_mode: str | None = None,
    ) -> None:
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"unknown render_mode {render_mode!r}; valid: {', '.join(self.metadata['render_modes'])}")
        config = self.config_type() if config is None else config
        if not isinstance(config, self.config_type):
            raise ValueError(f"config must be a {self.config_type.__name__}, got {config!r}")
        #: The task's settings.
        self.config = config
        self.robot = get_robot(robot) if isinstance(robot, str) else robot
        if self.robot.missing_joints:
            warnings.warn(f"{self.robot.model} lacks {len(self.robot.missing_joints)} joints of {self.robot.name}, "
                          f"held at the standing pose's angles: {', '.join(self.robot.missing_joints)}", stacklevel=2)
        self.sim = Simulation(self.robot, conditions)
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "render_fps": int(round(1.0 / self.robot.control_period))}
        m = self.sim.model
        self._low, self._high = m.actuator_ctrlrange[:, 0].copy(), m.actuator_ctrlrange[:, 1].copy()
        self._mid, self._half = (self._low + self._high) / 2, (self._high - self._low) / 2
        self.standing_targets = m.key(self.robot.standing_pose).ctrl.copy()
        self.standing = self._standing_reference()
        #: The residual on a prior (None: an action is joint targets).
        self.residual = residual
        blocks = self.observation_blocks()
        unplaced = (set() if residual is None else residual.observation_options()) - {b.option for b in blocks}
        if unplaced:
            raise ValueError(f"a {self.task} environment's observation has no place for {', '.join(sorted(unplaced))}")
        if residual is not None:
            residual.bind(self.robot.actuator_names, self._half)
        size = m.nu if residual is None else residual.size
        self._unit_low, self._unit_high = -np.ones(size), np.ones(size)  # an action's range
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(size,), dtype=np.float32)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(observation_size(blocks, self.robot),),
                                                dtype=np.float32)
        self._camera: Camera | None = None
        self._viewer = None
        self._last_action = np.zeros(size)
        self._sensors: Sensors | None = None

    @property
    def prior(self) -> Any:
        """The residual's prior (a controller), None without a residual."""
        return None if self.residual is None else self.residual.prior

    @property
    def max_episode_seconds(self) -> float:
        """The episode's length (s): the config's."""
        return self.config.max_episode_seconds

    @property
    def max_episode_steps(self) -> int:
        """Control steps after which the episode is truncated (:func:`episode_steps` of
        ``max_episode_seconds``); ``gym.make`` gives its ``TimeLimit`` and ``spec`` this count."""
        return episode_steps(self.max_episode_seconds, self.robot.control_period)

    def _reset_options(self, options: Mapping[str, Any] | None, honoured: tuple[str, ...]) -> dict[str, Any]:
        """``reset``'s ``options`` checked: a dict of those among ``honoured`` (the names of
        :data:`RESET_OPTIONS` this environment applies to one episode). ValueError naming an unknown
        option, one this task has no use for, and ``conditions``, which build the simulation's model
        (terrain, servos) and so are chosen when the environment is made."""
        options = dict(options or {})
        for name in options:
            if name == "conditions":
                raise ValueError("reset option 'conditions' is not supported: the conditions build the simulation's "
                                 "model (terrain, servos); make the environment with conditions=... instead")
            if name not in RESET_OPTIONS:
                raise ValueError(f"unknown reset option {name!r}; valid options: {', '.join(honoured)}")
            if name not in honoured:
                raise ValueError(f"reset option {name!r} means nothing to a {self.task} environment; "
                                 f"valid options: {', '.join(honoured)}")
        return options

    # ---------------------------------------------------------------- layout
    def _extra_observation(self) -> np.ndarray | None:
        """Task-specific observation block (the walk command); none by default."""
        return None

    def observation_blocks(self) -> tuple[ObservationBlock, ...]:
        """The blocks of this environment's observation in order (rows of
        :data:`~upright.envs.observation.OBSERVATION`): the task's and the residual's."""
        return observation_blocks(self.task, set() if self.residual is None else self.residual.observation_options())

    def observation_slices(self) -> dict[str, slice]:
        """Block name → the slice of the observation it occupies, e.g.
        ``obs[env.observation_slices()["command"]]`` (the walk command: vx m/s, vy m/s, yaw rate rad/s)."""
        return block_slices(self.observation_blocks(), self.robot)

    def _observe(self, s: Sensors) -> np.ndarray:
        residual = self.residual
        if residual is None:
            return observation_from_sensors(s, self._extra_observation())
        return observation_from_sensors(s, residual.task_block(self._extra_observation()), residual.targets)

    def _standing_reference(self) -> StandingReference:
        self.sim.reset(self.robot.standing_pose, seed=0)
        s = self.sim.sensors()
        return StandingReference(float(s.fused[0]), float(s.fused[1]), self.sim.head_height())

    def set_push_strength(self, fraction: float) -> None:
        """Let ``fraction`` (0 to 1) of the conditions' continuous random push act on the torso from
        the next step on; 1, the default, is the preset's ``push_force``. A training curriculum
        (``hp.push_curriculum_start``) calls it on the training copies through ``env_method``.
        ValueError for a fraction outside [0, 1]."""
        if not (isinstance(fraction, numbers.Real) and 0.0 <= fraction <= 1.0):
            raise ValueError(f"push strength must be a fraction in [0, 1], got {fraction!r}")
        self.sim.push_strength = float(fraction)

    def set_model_variation(self, fraction: float) -> None:
        """Keep ``fraction`` (0 to 1) of the conditions' model variation (servo factors, zero
        offsets, torso load, sensor latency) from the next reset on; 1, the default, is the
        preset's, 0 our own model (:meth:`SampledConditions.toward_nominal`). A training
        curriculum (``hp.model_curriculum_start``) calls it on the training copies through
        ``env_method``. ValueError for a fraction outside [0, 1]."""
        if not (isinstance(fraction, numbers.Real) and 0.0 <= fraction <= 1.0):
            raise ValueError(f"model variation must be a fraction in [0, 1], got {fraction!r}")
        self.sim.model_variation = float(fraction)

    # ---------------------------------------------------------------- actions
    def action_from_targets(self, targets: np.ndarray) -> np.ndarray:
        """The normalised action (no prior) that commands joint ``targets`` (rad, actuator order)."""
        return ((np.asarray(targets, dtype=float) - self._mid) / self._half).astype(np.float32)

    def residual_action(self, offsets: Mapping[str, float]) -> np.ndarray:
        """The action (float32) whose residual moves the named entries (the residual's
        :attr:`~upright.envs.residual.Residual.names`: actuators, rad, or a step residual's offsets)
        by ``offsets`` (the others by 0) from the prior's targets
        (:meth:`~upright.envs.residual.Residual.action`); here for ``VecEnv.env_method``.
        ValueError without a residual, for an unknown name or for an offset beyond the residual range."""
        if self.residual is None:
            raise ValueError("residual_action needs a prior: without one an action is a joint target, not a residual")
        return self.residual.action(offsets)

    def targets_from_action(self, action: np.ndarray) -> np.ndarray:
        """Joint targets (rad) an action commands, given the current prior targets."""
        return self._targets(self._clipped(action))

    def _clipped(self, action: np.ndarray) -> np.ndarray:
        """``action`` as float64 clipped to [-1, 1]; ValueError for a wrong shape or a non-finite
        value."""
        # A float32 or float64 array goes to the compiled clip as it is (each value is read as a
        # float64 there, which is exact); anything else is converted first.
        a = action if type(action) is np.ndarray and action.dtype.char in "fd" else np.asarray(action, dtype=float)
        if a.shape != self.action_space.shape:
            raise ValueError(f"action must have shape {self.action_space.shape}, got {a.shape}")
        clipped = np.empty(a.shape)
        if not clip_finite(a, self._unit_low, self._unit_high, clipped):
            raise ValueError(f"action contains non-finite values: {a}")
        return clipped

    def _targets(self, clipped: np.ndarray) -> np.ndarray:
        """Joint targets (rad) of a ``clipped`` action, given the current prior targets."""
        if self.residual is None:
            return self._mid + clipped * self._half
        return self.residual.joint_targets(clipped)

    def posture(self) -> Posture:
        """Simulator truth about the posture, for the metrics."""
        sim = self.sim
        # posture_values gives the fields after the time in Posture's order (pitch, roll, hemisphere,
        # tilt, head height, angular speed); positional construction is the cheap one.
        return Posture(sim.time, *sim.posture_values())

    # ---------------------------------------------------------------- episode plumbing
    def _start_prior(self, sensors: Sensors) -> None:
        """Start the residual's prior (if any) on the episode from ``sensors``, with a generator
        drawn from the environment's and the task's :attr:`command`."""
        if self.residual is not None:
            self.residual.start(sensors, np.random.default_rng(self.np_random.integers(2**32)), self.command)

    def restart_prior(self, sensors: Sensors) -> np.ndarray:
        """Starts the prior afresh from ``sensors`` of a robot put back mid-episode (the obstacle
        course's restart after a fall, :meth:`Simulation.place`) and returns the observation of them,
        with the prior's new targets. ValueError without a prior."""
        if self.residual is None:
            raise ValueError("restart_prior needs an environment with a prior")
        self._start_prior(sensors)
        self._sensors = sensors
        return self._observe(sensors)

    def _advance(self, action: np.ndarray) -> tuple[Sensors, np.ndarray]:
        """Command ``action`` for one control period: the sensors after it and the clipped action
        (float64, in [-1, 1])."""
        if self._sensors is None:
            raise RuntimeError("call reset() before step()")
        clipped = self._clipped(action)
        sensors = self.sim.step(self._targets(clipped))
        if self.residual is not None and not self.sim.unstable:
            self.residual.advance(sensors, clipped)
        self._sensors = sensors
        return sensors, clipped

    def _base_info(self, sensors: Sensors, posture: Posture) -> dict[str, Any]:
        """The ``info`` entries every step and reset has, for ``sensors`` and ``posture`` (now)."""
        info: dict[str, Any] = {
            "sensors": sensors,
            "time": posture.time,
            "head_height": posture.head_height,
            "torso_tilt": posture.tilt,
            "com": self.sim.com(),
            "sim_unstable": self.sim.unstable,
        }
        if self.residual is not None:
            info["prior_targets"] = self.residual.targets.copy()
            info["prior_status"] = self.residual.status
        return info

    def _finish_step(self, sensors: Sensors, posture: Posture, terms: dict[str, float], failed: bool, tracker: Any,
                     **extra: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """The step's return tuple for ``sensors`` and ``posture`` after the step: the episode
        ends on ``failed`` or a blow-up (terminated) or at
        ``max_episode_seconds`` (truncated); at the end ``info["episode_metrics"]`` from ``tracker``
        and ``info["is_success"]`` (``tracker.success`` and no blow-up; SB3's convention)."""
        unstable = self.sim.unstable
        terminated = bool(failed or unstable)
        truncated = not terminated and posture.time >= self.max_episode_seconds - 1e-9
        info = self._base_info(sensors, posture)
        info.update(reward_terms=terms, **extra)
        if terminated or truncated:
            info["episode_metrics"] = tracker.episode_metrics(self.sim.time, unstable)
            info["is_success"] = bool(tracker.success and not unstable)
        reward = 0.0 if unstable else float(sum(terms.values()))
        if self.render_mode == "human":
            self.render()
        return self._observe(sensors), reward, terminated, truncated, info

    # ---------------------------------------------------------------- rendering
    def render(self) -> np.ndarray | None:
        if self.render_mode == "rgb_array":
            if self._camera is None:
                self._camera = Camera(self.sim.model, *RENDER_SIZE)
            return self._camera.render(self.sim.data)
        if self.render_mode == "human":
            if self._viewer is None:
                import sys

                import mujoco.viewer

                display = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                if sys.platform.startswith("linux") and not display:
                    # GLFW would end the process ("could not initialize GLFW") instead of raising
                    raise RenderingUnavailable(
                        "render_mode='human' needs a display (DISPLAY or WAYLAND_DISPLAY is not set); "
                        "use render_mode='rgb_array' (or `upright video`) on a headless machine")
                try:
                    self._viewer = mujoco.viewer.launch_passive(self.sim.model, self.sim.data)
                except Exception as error:  # no display, no GLFW
                    raise RenderingUnavailable(
                        f"render_mode='human' needs a display and GLFW ({type(error).__name__}: {error}); "
                        "use render_mode='rgb_array' (or `upright video`) on a headless machine"
                    ) from error
            self._viewer.sync()
        return None

    def close(self) -> None:
        if self._camera is not None:
            self._camera.close()
            self._camera = None
        if self._viewer is not None:
            self._viewer.close()
            self._viewer = None
