"""What the get-up and walk environments share: simulation, observation, action, prior, rendering.

Observation (a flat ``Box``, built only from :class:`~upright.envs.sensors.Sensors`), in the order
of :data:`upright.envs.observation.OBSERVATION` (an environment's own blocks:
:meth:`UprightEnv.observation_slices`):

{observation table}

Action: one value in [-1, 1] per actuator. Without a prior it maps linearly onto the joint range
(-1 = lower limit, +1 = upper limit); with a prior the target is
``prior + residual_scale · action · half_range``, so a zero action reproduces the prior exactly.
"""

from __future__ import annotations

import math
import numbers
import os
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from upright.envs.conditions import Conditions
from upright.envs.files import read_yaml_mapping
from upright.envs.render import Camera, RenderingUnavailable
from upright.envs.robots import RobotSpec, get_robot, with_model
from upright.envs.metrics import Posture, StandingReference
from upright.envs.kernels import clip_finite
from upright.envs.observation import (ObservationBlock, block_slices, observation_blocks, observation_size,
                                      with_observation_table)
from upright.envs.sensors import Sensors, observation_from_sensors
from upright.envs.simulation import Simulation

__doc__ = with_observation_table(__doc__, None)

RENDER_SIZE = (640, 480)
#: The environment arguments that belong to a residual on a prior and mean nothing without one: the
#: prior, its parameters, the residual's range and what it moves (a get-up's tempo entry), and the
#: walk's observation of the prior's gait and odometry. Running the prior alone as a policy drops them.
PRIOR_ARGUMENTS = ("prior", "prior_params", "residual_scale", "residual_on", "observe_gait", "observe_odometry",
                   "tempo_range")

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


#: Builds the controller that ``prior="NAME"`` names: ``factory(name, robot, task, params)``, with
#: ``params`` a mapping of dotted parameter overrides or None for the defaults.
PriorFactory = Callable[[str, RobotSpec, str, Mapping[str, Any] | None], Any]
_prior_factory: PriorFactory | None = None


def set_prior_factory(factory: PriorFactory) -> None:
    """Install the controller factory behind ``prior="NAME"``. The environments are registered with
    it (:func:`~upright.envs.registration.register_envs`, by the package root, which passes
    ``upright.baselines.make_controller``), so that ``envs``, below ``baselines``, imports none of them."""
    global _prior_factory
    _prior_factory = factory


def load_params_file(path: str | Path) -> dict[str, Any]:
    """Controller parameter overrides from a YAML file: a flat mapping of dotted parameter keys to
    values in the controller's units (e.g. the best parameters that ``upright optimize``
    writes); ValueError for a missing or malformed file."""
    data = read_yaml_mapping(path, "parameter file")
    if not all(isinstance(k, str) for k in data):
        raise ValueError(f"{path}: expected a mapping of parameter names to values")
    return dict(data)


def _resolve_prior(prior: Any, robot: RobotSpec, task: str,
                   params: Mapping[str, Any] | str | Path | None = None) -> Any:
    """A baseline name → its controller for ``robot`` and ``task`` with parameter overrides
    ``params`` (a mapping of dotted keys or a YAML file, see :func:`load_params_file`), built by
    the installed :data:`PriorFactory`."""
    if prior is None or not isinstance(prior, str):
        if prior is not None and not (hasattr(prior, "reset") and hasattr(prior, "step")):
            raise ValueError(f"prior must be None, a baseline name or a Controller (reset, step), got {prior!r}")
        if params is not None:
            raise ValueError("prior_params needs prior to be a baseline name")
        return prior
    if _prior_factory is None:
        raise ValueError(f"prior={prior!r} names a controller, but no controller factory is installed "
                         "(import upright, which registers the environments with upright.baselines.make_controller)")
    if isinstance(params, (str, Path)):
        params = load_params_file(params)
    return _prior_factory(prior, robot, task, dict(params) if params else None)


class UprightEnv(gym.Env):
    """Base class of the tasks; subclasses define the start state, reward and metrics."""

    metadata = {"render_modes": ["rgb_array", "human"], "render_fps": 50}
    #: ``"getup"`` or ``"walk"``: which baselines may serve as this environment's prior.
    task: str = ""
    #: What a residual action moves: ``"joints"``, the prior's joint targets (every task), or
    #: ``"steps"``, a walk prior's step targets (:class:`~upright.envs.walk.WalkEnv`).
    residual_on: str = "joints"

    def __init__(
        self,
        robot: str,
        conditions: str | Conditions | None = "lab",
        prior: Any = None,
        residual_scale: float = 0.2,
        max_episode_seconds: float = DEFAULT_EPISODE_SECONDS,
        render_mode: str | None = None,
        prior_params: Mapping[str, Any] | str | Path | None = None,
        model: str | Path | None = None,
        model_map: str | Path | None = None,
    ) -> None:
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"unknown render_mode {render_mode!r}; valid: {', '.join(self.metadata['render_modes'])}")
        for name, value in (("max_episode_seconds", max_episode_seconds), ("residual_scale", residual_scale)):
            if not isinstance(value, numbers.Real) or not 0 < value < math.inf:  # an endless episode never returns
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        # A user's MJCF of the robot (through its map) is simulated in our names and angles.
        self.robot = with_model(get_robot(robot), model, model_map)
        if self.robot.missing_joints:
            warnings.warn(f"{self.robot.model} lacks {len(self.robot.missing_joints)} joints of {self.robot.name}, "
                          f"held at the standing pose's angles: {', '.join(self.robot.missing_joints)}", stacklevel=2)
        self.sim = Simulation(self.robot, conditions)
        self.prior = _resolve_prior(prior, self.robot, self.task, prior_params)
        self.residual_scale = float(residual_scale)
        self.max_episode_seconds = float(max_episode_seconds)
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "render_fps": int(round(1.0 / self.robot.control_period))}
        m = self.sim.model
        self._low, self._high = m.actuator_ctrlrange[:, 0].copy(), m.actuator_ctrlrange[:, 1].copy()
        self._mid, self._half = (self._low + self._high) / 2, (self._high - self._low) / 2
        self._unit_low, self._unit_high = -np.ones(m.nu), np.ones(m.nu)  # an action's range
        self.standing_targets = m.key(self.robot.standing_pose).ctrl.copy()
        self.standing = self._standing_reference()
        nu = m.nu
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(nu,), dtype=np.float32)
        size = observation_size(self.observation_blocks(), self.robot)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(size,), dtype=np.float32)
        self._camera: Camera | None = None
        self._viewer = None
        self._prior_targets = np.zeros(nu)
        self._last_action = np.zeros(nu)
        self._sensors: Sensors | None = None

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

    def _observation_options(self) -> set[str]:
        """The options of :data:`~upright.envs.observation.OPTIONS` this environment observes."""
        return {"prior"} if self.prior is not None else set()

    def observation_blocks(self) -> tuple[ObservationBlock, ...]:
        """The blocks of this environment's observation in order (rows of
        :data:`~upright.envs.observation.OBSERVATION`)."""
        return observation_blocks(self.task, self._observation_options())

    def observation_slices(self) -> dict[str, slice]:
        """Block name → the slice of the observation it occupies, e.g.
        ``obs[env.observation_slices()["command"]]`` (the walk command: vx m/s, vy m/s, yaw rate rad/s)."""
        return block_slices(self.observation_blocks(), self.robot)

    def _observe(self, s: Sensors) -> np.ndarray:
        return observation_from_sensors(s, self._extra_observation(),
                                        self._prior_targets if self.prior is not None else None)

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

    @property
    def residual_names(self) -> tuple[str, ...]:
        """What each entry of a residual action moves: the actuators' names (actuator order); a walk
        with ``residual_on="steps"`` names its prior's step-target offsets instead."""
        return tuple(self.robot.actuator_names)

    @property
    def residual_limits(self) -> np.ndarray:
        """The largest residual per action entry (:attr:`residual_names`; rad for a joint): a
        residual action of ±1 moves that actuator's target this far from the prior's
        (``residual_scale`` · half range)."""
        return self.residual_scale * self._half

    def residual_action(self, offsets: Mapping[str, float]) -> np.ndarray:
        """The action (float32) whose residual moves the named entries (:attr:`residual_names`:
        actuators, rad) by ``offsets`` (the others by 0) from the prior's targets: offset / limit
        (:attr:`residual_limits`). ValueError without a prior, for an unknown name or for an offset
        beyond the residual range."""
        if self.prior is None:
            raise ValueError("residual_action needs a prior: without one an action is a joint target, not a residual")
        names, limits = self.residual_names, self.residual_limits
        action = np.zeros(self.action_space.shape)
        for name, offset in offsets.items():
            if name not in names:
                what = "actuator" if self.residual_on == "joints" else "step residual entry"
                raise ValueError(f"unknown {what} {name!r} for {self.robot.name}; valid: {', '.join(names)}")
            i = names.index(name)
            action[i] = float(offset) / limits[i]
            if not abs(action[i]) <= 1.0:
                raise ValueError(f"offset {offset!r} for {name!r} is beyond the residual range "
                                 f"±{limits[i]:.4g} (residual_scale {self.residual_scale})")
        return action.astype(np.float32)

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
        if self.prior is None:
            return self._mid + clipped * self._half
        return self._prior_targets + self.residual_scale * clipped * self._half

    def posture(self) -> Posture:
        """Simulator truth about the posture, for the metrics."""
        sim = self.sim
        # posture_values gives the fields after the time in Posture's order (pitch, roll, hemisphere,
        # tilt, head height, angular speed); positional construction is the cheap one.
        return Posture(sim.time, *sim.posture_values())

    # ---------------------------------------------------------------- episode plumbing
    def _start_prior(self, sensors: Sensors) -> None:
        if self.prior is not None:
            command = getattr(self, "command", None)
            if command is not None and hasattr(self.prior, "set_command"):
                self.prior.set_command(np.array(command, dtype=float))
            self.prior.reset(sensors, np.random.default_rng(self.np_random.integers(2**32)))
            self._prior_targets = np.asarray(self.prior.step(sensors), dtype=float)

    def restart_prior(self, sensors: Sensors) -> np.ndarray:
        """Starts the prior afresh from ``sensors`` of a robot put back mid-episode (the obstacle
        course's restart after a fall, :meth:`Simulation.place`) and returns the observation of them,
        with the prior's new targets. ValueError without a prior."""
        if self.prior is None:
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
        if self.prior is not None and not self.sim.unstable:
            self._prior_targets = np.asarray(self._prior_step(sensors, clipped), dtype=float)
        self._sensors = sensors
        return sensors, clipped

    def _prior_step(self, sensors: Sensors, clipped: np.ndarray) -> np.ndarray:
        """The prior's joint targets (rad, actuator order) for the next control period, from the
        ``sensors`` after this one; ``clipped``, this period's action, is for environments whose
        residual acts inside the prior (a walk's ``residual_on="steps"``)."""
        return self.prior.step(sensors)

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
        if self.prior is not None:
            info["prior_targets"] = self._prior_targets.copy()
            info["prior_status"] = getattr(self.prior, "status", "")
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
