"""The walk task: follow a velocity command (vx, vy, yaw rate) from standing.

:class:`WalkEnv` documents the spaces, rewards, start state, episode end and arguments;
``docs/environments.md`` collects the same facts for both tasks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from upright.envs.base import EnvConfig, UprightEnv
from upright.envs.conditions import Conditions
from upright.envs.kernels import walk_effort_terms
from upright.envs.metrics import Posture, WalkTracker, is_fallen
from upright.envs.observation import document_observation
from upright.envs.residual import Residual
from upright.envs.rewards import WalkRewardScales
from upright.envs.robots import RobotSpec
from upright.envs.sensors import Sensors

DEFAULT_COMMAND_RANGES = ((-0.2, 0.3), (-0.1, 0.1), (-0.5, 0.5))
#: The largest command a walk takes: |vx|, |vy| in m/s and |yaw rate| in rad/s, far beyond any humanoid's
#: walk; a larger one is a typo or a unit mix-up (mm/s, deg/s) that would only make every episode a fall.
COMMAND_LIMITS = (10.0, 10.0, 20.0)
#: Default widths of the tracking rewards' Gaussians: m/s for (vx, vy), rad/s for the yaw rate.
TRACKING_XY_WIDTH = 0.25
TRACKING_YAW_WIDTH = 0.5


def _command_vector(command: Any) -> np.ndarray:
    """``command`` as a float array (vx m/s, vy m/s, yaw rate rad/s); ValueError naming anything else
    or a component beyond :data:`COMMAND_LIMITS`."""
    try:
        vector = np.asarray(command, dtype=float)
    except (TypeError, ValueError):
        vector = None
    if vector is None or vector.shape != (3,) or not np.all(np.isfinite(vector)):
        raise ValueError(f"command must be three finite numbers (vx, vy, yaw rate), got {command!r}")
    _check_command_limits(vector, "command", command)
    return vector


def _check_command_limits(values: np.ndarray, name: str, given: Any) -> None:
    """ValueError naming ``name`` and its value ``given`` when a command component of ``values``
    (shape (3,) or (3, 2): vx, vy, yaw rate along the first axis) is beyond :data:`COMMAND_LIMITS`."""
    limits = np.asarray(COMMAND_LIMITS).reshape(3, *([1] * (values.ndim - 1)))
    if np.any(np.abs(values) > limits):
        raise ValueError(f"{name} must stay within ±{COMMAND_LIMITS[0]:g} m/s (vx, vy) and ±{COMMAND_LIMITS[2]:g} "
                         f"rad/s (yaw rate), got {given!r}")


def _command_box(value: Any, name: str) -> np.ndarray:
    """``value`` as a (3, 2) float array of (low, high) per command component (vx m/s, vy m/s, yaw
    rate rad/s): three pairs, or six numbers in that order (the form ``--set`` writes); ValueError
    naming ``name`` for anything else, a low above its high or a bound beyond :data:`COMMAND_LIMITS`."""
    try:
        box = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        box = None
    if box is not None and box.shape == (6,):
        box = box.reshape(3, 2)
    if box is None or box.shape != (3, 2) or not np.all(np.isfinite(box)) or np.any(box[:, 0] > box[:, 1]):
        raise ValueError(f"{name} must be three (low, high) pairs (vx, vy, yaw rate) or six numbers, got {value!r}")
    _check_command_limits(box, name, value)
    return box


@dataclass(frozen=True, kw_only=True)
class WalkConfig(EnvConfig):
    """The walk task's settings, ``gym.make``'s keywords of the same names (see :class:`WalkEnv`),
    kept checked and as tuples of floats: ``command`` (vx m/s, vy m/s, yaw rate rad/s; None: drawn
    per episode), ``command_ranges`` and ``command_focus`` (three (low, high) pairs, or six
    numbers, in the same units), ``command_focus_share`` (a probability), ``start`` (``standing``
    only), ``reward_scales`` (a :class:`~upright.envs.rewards.WalkRewardScales`, a mapping of the
    weights it replaces or None, kept resolved), ``tracking_widths`` (σ_xy m/s, σ_yaw rad/s),
    ``tracking_window`` (s) and :class:`~upright.envs.base.EnvConfig`'s ``max_episode_seconds``.
    ValueError naming a bad value."""

    command: tuple[float, float, float] | None = None
    command_ranges: tuple[tuple[float, float], ...] = DEFAULT_COMMAND_RANGES
    command_focus: tuple[tuple[float, float], ...] | None = None
    command_focus_share: float = 0.0
    start: str = "standing"
    reward_scales: WalkRewardScales | Mapping[str, float] | None = None
    tracking_widths: tuple[float, float] = (TRACKING_XY_WIDTH, TRACKING_YAW_WIDTH)
    tracking_window: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.start != "standing":
            raise ValueError(f"unknown start {self.start!r} for a walk; valid starts: standing")
        object.__setattr__(self, "reward_scales", WalkRewardScales.resolve(self.reward_scales))
        widths = np.asarray(self.tracking_widths, dtype=float)
        if widths.shape != (2,) or not np.all(widths > 0) or not np.all(np.isfinite(widths)):
            raise ValueError(f"tracking_widths must be two finite widths > 0 (m/s, rad/s), "
                             f"got {self.tracking_widths!r}")
        object.__setattr__(self, "tracking_widths", (float(widths[0]), float(widths[1])))
        window = self.tracking_window
        if not (np.isfinite(window) and window >= 0.0):
            raise ValueError(f"tracking_window must be a duration >= 0 (s), got {window!r}")
        object.__setattr__(self, "tracking_window", float(window))
        if self.command is not None:
            object.__setattr__(self, "command", tuple(_command_vector(self.command).tolist()))
        share = self.command_focus_share
        if not (isinstance(share, (int, float)) and 0.0 <= share <= 1.0):
            raise ValueError(f"command_focus_share must be a probability in [0, 1], got {share!r}")
        if share > 0 and self.command_focus is None:
            raise ValueError(f"command_focus_share {share!r} needs a command_focus box")
        object.__setattr__(self, "command_focus_share", float(share))
        for name in ("command_ranges", "command_focus"):
            box = getattr(self, name)
            if box is not None:
                object.__setattr__(self, name, tuple(map(tuple, _command_box(box, name).tolist())))


@document_observation
class WalkEnv(UprightEnv):
    """Walk following a velocity command: ``upright/NaoWalk-v0`` and ``upright/WolfgangWalk-v0``.

    ## Action space

    ``Box(-1, 1, (nu,), float32)``, one value per actuator in the robot's actuator order (NAO
    nu = 23, its two hip-yaw-pitch joints share one motor; Wolfgang nu = 20). Without a prior it
    maps linearly onto the joint range (−1 = lower limit, +1 = upper limit); with a prior (a walk
    baseline such as ``lipm`` or ``step_adjust``, given the command) the joint target is
    ``prior target + residual_scale · action · half range`` (rad), so a zero action reproduces the
    prior exactly. Targets pass the servo model (delay, strength, play, lag).

    With ``residual_on="steps"`` (a prior that exposes its step targets: ``step_adjust``;
    :class:`~upright.envs.residual.StepResidual`) the action is ``Box(-1, 1, (3,), float32)``
    instead, offsets of the swing foot's landing target in the walk frame (``env.residual.names``:
    x forward, y left, yaw left), each ±1 = the prior's ``step_residual_limits``
    (``env.residual.limits``, from its parameter file; a ``residual_scale`` other than its default
    is refused, as it would change nothing). The prior plans
    its steps with them from the next control cycle on and its joint targets go to the servos
    unchanged, so a zero action again reproduces the prior exactly. A lateral offset towards the
    support foot is dropped (the feet would collide). Three numbers per cycle instead of one per
    joint: foot placement, what catches a sideways fall, is one action entry away.

    ## Observation space

    ``Box(-inf, inf, (n,), float32)`` built only from the robot's sensors and the command:

    {observation table}

    ``observe_gait=True`` (with a walk prior: ``lipm``, ``step_adjust``) appends the prior's gait
    clock, which a robot's walk has too: its support foot (+1 left, −1 right, 0 on both feet, before
    walking) and the fraction of the current step that has passed (0 at the support switch; above
    1 on a ``step_adjust`` step that overruns). A residual that moves the step targets needs to know
    which foot swings and how far the step is.

    ``observe_odometry=True`` (with a walk prior that has speed feedback: ``lipm``, ``step_adjust``)
    appends the prior's own odometry, robot-side estimates from its sensors: the velocity (vx m/s,
    vy m/s, yaw rate rad/s, heading frame) it measured over its last full step cycle (zeros before
    the first) and the correction its speed feedback adds to the command now (same units). A
    policy sees single frames; this gives a residual the drift of the last cycle, which the
    tracking metrics measure and one frame does not show.

    ## Rewards

    Velocities v = (vx, vy, ω_z) are the torso's, in the heading frame (x forward along the torso's
    yaw, z up). The reward of a step is the sum of these terms, each in ``info["reward_terms"]``;
    the weights are the fields of :class:`~upright.envs.rewards.WalkRewardScales` (default in
    brackets):

    * ``tracking_xy`` [1]: weight × exp(−|v_xy − command_xy|² / σ_xy²) (m/s);
    * ``tracking_yaw`` [0.5]: weight × exp(−(ω_z − command_yaw)² / σ_yaw²) (rad/s);

    with (σ_xy, σ_yaw) = ``tracking_widths``, 0.25 m/s and 0.5 rad/s by default: wide enough to
    pay a policy that learns to walk at all; a residual on a walk that already tracks within a few
    cm/s is paid almost the maximum and needs narrower widths to see its errors. v is the step's
    own velocity, or with ``tracking_window`` > 0 the mean over the last ``tracking_window``
    seconds of steps (fewer at the start), as the tracking metrics average it: the sway within a
    step cycle, which no walk removes, then no longer swamps the error a policy can change.
    * ``upright`` [0.2]: weight × (1 + cos tilt) / 2, tilt = torso z axis against the vertical;
    * ``energy`` [0.001]: −weight × Σ |τ · q̇| over the actuators (W);
    * ``foot_slip`` [0.5]: −weight × Σ horizontal speed² (m²/s²) of the soles that carry more than
      10 % of the robot's weight (from the foot pressure sensors);
    * ``fall`` [10]: −weight on the step the robot falls.

    A step on which the physics blows up has reward 0.

    ## Starting state

    The robot's standing keyframe. The command is ``command`` when given, otherwise drawn per
    episode uniformly from ``command_ranges``; with ``command_focus_share`` p > 0, an episode's
    command is drawn from the ``command_focus`` box instead with probability p, so that training
    sees more of the commands a prior fails on (a fast forward walk) without leaving the rest. The
    conditions (terrain, wear, noise, randomisation) are sampled from the episode's seed: the same
    seed gives the same episode. ``reset(options={"command": (vx, vy, wz)})`` walks one episode with
    that command; the conditions are fixed when the environment is made (the option ``conditions``
    is a ValueError).

    ## Episode end

    Terminated when the robot falls (torso tilt above 60° or head below half its standing height)
    or the physics blows up (``info["sim_unstable"]``); truncated after ``max_episode_seconds``
    (default 20 s). At the end ``info["episode_metrics"]`` holds ``mean_velocity`` [vx, vy, wz],
    ``linear_tracking_error`` (m/s), ``yaw_tracking_error`` (rad/s), ``falls``,
    ``distance_before_fall`` (m), ``command``, ``sim_unstable`` and ``episode_seconds``; the
    tracking errors compare the command with the velocity averaged over a 1 s sliding window (see
    :class:`~upright.envs.metrics.WalkTracker`). ``info["is_success"]`` is True when the robot did
    not fall. Every step's ``info`` also has ``fallen``, ``command`` and ``velocity``.

    ## Arguments

    ``gym.make("upright/NaoWalk-v0", command=(0.2, 0.0, 0.0), prior="lipm")``

    ``gym.make`` splits its keywords into the task's :class:`WalkConfig` (the command's, ``start``,
    ``max_episode_seconds``, ``reward_scales``, ``tracking_widths``, ``tracking_window``), the
    residual's (:func:`~upright.envs.residual.make_residual`: ``prior``, ``residual_scale``,
    ``prior_params``, ``residual_on``, ``observe_odometry``, ``observe_gait``), the robot's model
    (``model``, ``model_map``) and the class's own (``WalkEnv(robot, config, conditions, residual,
    render_mode)``).

    | parameter           | type                           | default    | description                               |
    |---------------------|--------------------------------|------------|-------------------------------------------|
    | robot               | str                            | set by id  | a name of ROBOT_NAMES                     |
    | command             | (vx, vy, wz) or None           | None       | fixed (m/s, m/s, rad/s); None: drawn      |
    | command_ranges      | three (low, high) pairs        | see below  | ranges a command is drawn from            |
    | command_focus       | three (low, high) pairs or None| None       | a box drawn from with command_focus_share |
    | command_focus_share | float in [0, 1]                | 0.0        | probability of a draw from command_focus  |
    | conditions          | str, Conditions or None        | "lab"      | preset name or a Conditions (None: lab)   |
    | prior               | None, str or Controller        | None       | baseline or controller; action = residual |
    | residual_scale      | float                          | 0.2        | residual range / joint half range         |
    | residual_on         | "joints" or "steps"            | "joints"   | what the residual moves (see above)       |
    | max_episode_seconds | float                          | 20.0       | episode length (s)                        |
    | start               | str                            | "standing" | the only start of a walk                  |
    | reward_scales       | WalkRewardScales, dict or None | None       | weights; a dict replaces the named ones   |
    | tracking_widths     | (σ_xy m/s, σ_yaw rad/s)        | 0.25, 0.5  | widths of the tracking rewards            |
    | tracking_window     | float                          | 0.0        | s of velocity the tracking rewards average |
    | observe_odometry    | bool                           | False      | observe the prior's odometry (see above)  |
    | observe_gait        | bool                           | False      | observe the prior's gait clock (above)    |
    | render_mode         | str or None                    | None       | "rgb_array" or "human"                    |
    | prior_params        | dict, YAML path or None        | None       | the prior's parameter overrides (dotted)  |
    | model, model_map    | MJCF and YAML paths or None    | None       | a user's model of the robot (your-robot.md) |

    Default ``command_ranges``: vx −0.2…0.3 m/s, vy −0.1…0.1 m/s, yaw rate −0.5…0.5 rad/s. Boxes
    may also be given as six numbers (vx low, vx high, vy low, …), the form ``--set`` writes.

    ## Version history

    * v0: first version. Added later under the same id, with the same dynamics, observations and
      rewards: the ``reward_scales`` argument, ``info["is_success"]``, the linear and yaw tracking
      errors on 1 s window means in place of the single ``tracking_error``, the arguments
      ``tracking_widths``, ``tracking_window``, ``command_focus`` with ``command_focus_share``,
      ``residual_on``, ``observe_odometry`` and ``observe_gait``, the registration's
      ``max_episode_steps`` (the control steps of ``max_episode_seconds``, which ``gym.make``
      matches to a changed ``max_episode_seconds``; before, only the environment itself truncated
      and ``spec.max_episode_steps`` was None), ``reset(options=...)`` (``command``, ``start``; an
      unknown option is a ValueError, before ignored), and the class made of a :class:`WalkConfig`
      and a residual (``gym.make``'s keywords unchanged).
    """

    task = "walk"
    config_type: ClassVar[type[WalkConfig]] = WalkConfig
    residual_options = ("residual_on", "observe_odometry", "observe_gait")
    config: WalkConfig

    def __init__(
        self,
        robot: str | RobotSpec = "nao",
        config: WalkConfig | None = None,
        conditions: str | Conditions | None = "lab",
        residual: Residual | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(robot, config, conditions, residual, render_mode)
        config = self.config
        self._fixed_command = None if config.command is None else np.array(config.command)
        #: The command of this episode (before the first reset: ``command``, or zeros).
        self.command = np.zeros(3) if self._fixed_command is None else self._fixed_command
        #: (3, 2) (low, high) of vx (m/s), vy (m/s), yaw rate (rad/s) a command is drawn from, and
        #: the box drawn from with probability ``command_focus_share`` instead (None: never).
        self._ranges = np.array(config.command_ranges)
        self._focus = None if config.command_focus is None else np.array(config.command_focus)
        self._tracker: WalkTracker | None = None
        self._sole_sites = np.array([self.sim.model.site(s).id for s in self.robot.sole_sites])
        m, d = self.sim.model, self.sim.data
        # What walk_effort_terms reads besides the actuation views and the foot pressures: each
        # pressure sensor's foot, the sole sites, their bodies and trees, and the data's arrays
        # (allocated once per MjData, so these views stay current).
        self._slip_arrays = (np.array(self.robot.pressure_sensor_feet), self._sole_sites, m.site_bodyid,
                             m.body_rootid, d.site_xpos, d.cvel, d.subtree_com)
        self._loaded = 0.1 * self.sim.weight  # N: a sole carrying more is on the ground
        self._reward_steps = max(1, round(config.tracking_window / self.robot.control_period))

    def _extra_observation(self) -> np.ndarray:
        """The walk's observation block: the command (vx m/s, vy m/s, yaw rate rad/s)."""
        return self.command

    def set_command(self, command: np.ndarray) -> None:
        """Changes the command mid-episode (vx m/s, vy m/s, yaw rate rad/s; a steering layer such as
        the obstacle course's): the observation's command block and, with a prior, the command the
        prior walks from its next cycle on, and the tracking rewards; the episode's tracking
        metrics keep comparing with its first command. The next reset starts from the episode's
        command again (``command``, or a new draw)."""
        command = _command_vector(command)
        self.command = command.copy()
        if self.residual is not None:
            self.residual.set_command(command)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode (Gymnasium's ``reset``); ``options={"command": (vx, vy, yaw rate)}``
        walks this episode with that command instead of ``command`` or a draw, ``{"start":
        "standing"}`` is the only start. Other options: ValueError naming them."""
        options = self._reset_options(options, ("start", "command"))
        if options.get("start", "standing") != "standing":
            raise ValueError(f"unknown start {options['start']!r} for a walk; valid starts: standing")
        command = _command_vector(options["command"]) if "command" in options else None
        super().reset(seed=seed)
        episode_seed = int(self.np_random.integers(2**31)) if seed is None else seed
        if command is not None:
            self.command = command
        elif self._fixed_command is None:
            box = self._ranges
            # No draw without a focus share: the episodes of a seed stay those of the plain ranges.
            share = self.config.command_focus_share
            if share > 0 and self.np_random.random() < share:
                box = self._focus
            # rng.uniform(low, high) as NumPy computes it, low + (high - low) * U[0, 1): the same
            # numbers from the same draws, without the broadcasting call's cost on every reset.
            self.command = box[:, 0] + (box[:, 1] - box[:, 0]) * self.np_random.random(3)
        else:
            self.command = self._fixed_command.copy()
        sensors = self.sim.reset(self.robot.standing_pose, seed=episode_seed)
        self._sensors = sensors
        self._tracker = WalkTracker.for_period(self.command.copy(), self.robot.control_period)
        self._last_action = np.zeros(self.action_space.shape)
        self._xy = self.sim.torso_pose()[0][:2]  # the torso's x, y (m, world), moved on by every step
        self._start_prior(sensors)
        info = self._base_info(sensors, self.posture())
        info["command"] = self.command.copy()
        return self._observe(sensors), info

    def step(self, action: np.ndarray):
        sensors, _ = self._advance(action)
        velocity, step_distance = self.sim.torso_heading_motion(self._xy)
        posture = self.posture()
        fallen = bool(is_fallen(posture, self.standing))
        self._tracker.update(velocity, step_distance, fallen)
        tracked = velocity if self._reward_steps == 1 else self._tracker.recent_mean(self._reward_steps)
        terms = self._reward_terms(tracked, sensors, posture, fallen)
        return self._finish_step(sensors, posture, terms, fallen, self._tracker, fallen=fallen,
                                 command=self.command.copy(), velocity=velocity)

    def _reward_terms(self, velocity: np.ndarray, sensors: Sensors, posture: Posture,
                      fallen: bool) -> dict[str, float]:
        """This step's reward terms (see the class docstring) for the tracked heading-frame
        ``velocity`` (m/s, m/s, rad/s) and the ``posture`` after the step, weighted by
        the config's ``reward_scales``."""
        w = self.config.reward_scales
        widths = self.config.tracking_widths
        actuation = self.sim.actuation
        energy, slip = walk_effort_terms(actuation.force, actuation.qvel, actuation.qvel_adr, sensors.foot_pressure,
                                         self._loaded, *self._slip_arrays)
        (vx, vy, wz), (cx, cy, cz) = velocity.tolist(), self.command.tolist()
        dx, dy = vx - cx, vy - cy
        xy_error = dx * dx + dy * dy  # np.sum(Δ ** 2) of the two: NumPy squares an array by multiplying
        yaw_error = (wz - cz) ** 2
        return {
            "tracking_xy": w.tracking_xy * math.exp(-xy_error / widths[0] ** 2),
            "tracking_yaw": w.tracking_yaw * math.exp(-yaw_error / widths[1] ** 2),
            "upright": w.upright * (1.0 + math.cos(posture.tilt)) / 2.0,
            "energy": -w.energy * energy,
            "foot_slip": -w.foot_slip * slip,
            "fall": -w.fall if fallen else 0.0,
        }
