"""The get-up task: from lying (prone, supine, on the side, or after a random fall) to standing.

:class:`GetUpEnv` documents the spaces, rewards, start states, episode end and arguments;
``docs/environments.md`` collects the same facts for both tasks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from upright.envs.base import EnvConfig, UprightEnv
from upright.envs.conditions import Conditions
from upright.envs.kernels import effort_terms
from upright.envs.metrics import GetUpTracker, Posture, is_upright
from upright.envs.observation import document_observation
from upright.envs.residual import Residual
from upright.envs.robots import RobotSpec
from upright.envs.rewards import GetUpRewardScales
from upright.envs.robots.spec import LYING

#: Lying starts (``random`` draws one of them) and ``standing`` (for tests and push recovery).
LYING_STARTS = ("prone", "supine", "side", "fall")
STARTS = (*LYING_STARTS, "random", "standing")
#: Simulated seconds allowed for a side or fall start to come to rest before the episode begins.
PREROLL_SECONDS = 2.0
#: Ground force (in robot weights) on one body other than the feet above which ``impact`` costs.
IMPACT_WEIGHTS = 3.0


def _checked_start(start: str | Sequence[str]) -> str | tuple[str, ...]:
    """``start`` (a name of :data:`STARTS`, or names to draw one from per episode) as a name or a
    tuple of names; ValueError naming a bad one."""
    names = (start,) if isinstance(start, str) else tuple(start)
    if not names:
        raise ValueError(f"start must name at least one start, got {start!r}")
    for name in names:
        if name not in STARTS:
            raise ValueError(f"unknown start {name!r}; valid starts: {', '.join(STARTS)}")
    return start if isinstance(start, str) else names


@dataclass(frozen=True, kw_only=True)
class GetUpConfig(EnvConfig):
    """The get-up task's settings, ``gym.make``'s keywords of the same names (see :class:`GetUpEnv`):
    ``start``, a name of :data:`STARTS` or names to draw one from per episode (kept as a tuple);
    ``reward_scales``, a :class:`~upright.envs.rewards.GetUpRewardScales`, a mapping of the weights
    it replaces or None (the defaults), kept resolved; and :class:`~upright.envs.base.EnvConfig`'s
    ``max_episode_seconds``. ValueError naming a bad value."""

    start: str | tuple[str, ...] = "prone"
    reward_scales: GetUpRewardScales | Mapping[str, float] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "start", _checked_start(self.start))
        object.__setattr__(self, "reward_scales", GetUpRewardScales.resolve(self.reward_scales))


@document_observation
class GetUpEnv(UprightEnv):
    """Get up from the floor: ``upright/NaoGetUp-v0`` and ``upright/WolfgangGetUp-v0``.

    ## Action space

    ``Box(-1, 1, (nu,), float32)``, one value per actuator in the robot's actuator order (NAO
    nu = 23, its two hip-yaw-pitch joints share one motor; Wolfgang nu = 20). Without a prior it
    maps linearly onto the joint range (−1 = lower limit, +1 = upper limit); with a prior the joint
    target is ``prior target + residual_scale · action · half range`` (rad), so a zero action
    reproduces the prior exactly. Targets pass the servo model (delay, strength, play, lag).

    With ``tempo_range`` (a prior that plays a timed motion and exposes ``set_tempo``: ``keyframe``,
    ``spline``; :class:`~upright.envs.residual.TempoResidual`) the action has one more, last entry,
    ``tempo`` (``env.residual.names[-1]``): the prior's motion then plays ``tempo_range ** action[-1]``
    times as fast over the next control period (0 = its own timing, so a zero action still
    reproduces the prior; −1 and +1 = ``1 / tempo_range`` and ``tempo_range`` times). Its
    ``env.residual.limits`` entry is ``ln tempo_range``: ``residual_action`` takes the natural
    logarithm of the tempo factor for it. The residual thereby chooses when the prior may hurry and
    when it must wait, which a fixed ``prior_params.tempo`` cannot.

    ## Observation space

    ``Box(-inf, inf, (n,), float32)`` built only from the robot's sensors, in this order:

    {observation table}

    ## Rewards

    The reward of a step is the sum of these terms, each in ``info["reward_terms"]``; the weights
    are the fields of :class:`~upright.envs.rewards.GetUpRewardScales` (default in brackets):

    * ``head_progress`` [10]: weight × the rise of the head this step / standing head height
      (potential-based: it sums to the net rise);
    * ``head_height`` [0.5]: weight × head height / standing head height, capped at 1;
    * ``upright`` [0.5]: weight × (1 + cos tilt) / 2, tilt = torso z axis against the vertical;
    * ``still`` [1]: weight × exp(−|ω|²) (ω: noise-free IMU angular velocity, rad/s) while upright with
      the head high;
    * ``torque`` [0.05]: −weight × mean squared actuator force / force limit;
    * ``action_rate`` [0.05]: −weight × mean squared change of the (clipped) action's joint entries;
    * ``joint_limits`` [0.1]: −weight × fraction of joints within 2 % of their range from a limit;
    * ``impact`` [0.5]: −weight × (largest contact force on a body other than the feet / the
      robot's weight − 3) when that force exceeds 3 × the weight;
    * ``fall`` [0]: −weight on the step on which a fall is counted (``falls`` of the episode
      metrics: the robot was up and is fallen again), so that falling on the way up costs more
      than the time it loses.

    A step on which the physics blows up has reward 0.

    ## Starting state

    ``start`` picks the pose: ``prone`` and ``supine`` are the robot's lying keyframes; ``side``
    is the standing joint angles with the torso rolled 90° to a random side, and ``fall`` a fall
    from standing under random joint targets and a 0.3 s push (0.6 × weight) in a random
    direction, both left to come to rest for up to 2 s before the clock starts at 0; ``random``
    draws one of these four per episode; ``standing`` (tests, push recovery) is the standing
    keyframe. A sequence of these names (``start=("random", "standing")``, on the command line
    ``--set start=random,standing``) draws one of them uniformly per episode (repeat a name to
    weight it), e.g. to train more often where the prior fails. The conditions (terrain, wear,
    noise, randomisation) are sampled from the episode's seed: the same seed gives the same episode.
    ``reset(options={"start": NAME})`` (a name or names as above) starts one episode elsewhere; the
    conditions are fixed when the environment is made (the option ``conditions`` is a ValueError).

    ## Episode end

    Truncated after ``max_episode_seconds`` (default 20 s, the RoboCup limit); terminated only
    when the physics blows up (``info["sim_unstable"]``). A fall does not end a get-up episode.
    At the end ``info["episode_metrics"]`` holds ``success``, ``time_to_stand``, ``stood_up``,
    ``time_upright``, ``start``, ``falls``, ``tries``, ``tries_succeeded``, ``tries_unfinished``,
    ``sim_unstable`` and ``episode_seconds`` (defined in :mod:`upright.envs.metrics`), and ``info["is_success"]`` the success (upright, head high and
    still for 1 s, no fall afterwards). Every step's ``info`` also has ``success``, ``fallen``,
    ``upright`` and ``start``.

    ## Arguments

    ``gym.make("upright/NaoGetUp-v0", start="supine", conditions="competition")``

    ``gym.make`` splits its keywords into the task's :class:`GetUpConfig` (``start``,
    ``max_episode_seconds``, ``reward_scales``), the residual's
    (:func:`~upright.envs.residual.make_residual`: ``prior``, ``residual_scale``, ``prior_params``,
    ``tempo_range``), the robot's model (``model``, ``model_map``) and the class's own
    (``GetUpEnv(robot, config, conditions, residual, render_mode)``).

    | parameter           | type                            | default   | description                                 |
    |---------------------|---------------------------------|-----------|---------------------------------------------|
    | robot               | str                             | set by id | a name of ROBOT_NAMES                       |
    | start               | str or sequence of str          | "prone"   | prone, supine, side, fall, random, standing |
    | conditions          | str, Conditions or None         | "lab"     | preset name or a Conditions (None: lab)     |
    | prior               | None, str or Controller         | None      | baseline or controller; action = residual   |
    | residual_scale      | float                           | 0.2       | residual range / joint half range           |
    | max_episode_seconds | float                           | 20.0      | episode length (s)                          |
    | reward_scales       | GetUpRewardScales, dict or None | None      | weights; a dict replaces the named ones     |
    | render_mode         | str or None                     | None      | "rgb_array" or "human"                      |
    | prior_params        | dict, YAML path or None         | None      | the prior's parameter overrides (dotted)    |
    | tempo_range         | float > 1 or None               | None      | the prior's tempo entry's range (see above) |
    | model, model_map    | MJCF and YAML paths or None     | None      | a user's model of the robot (your-robot.md) |

    ## Version history

    * v0: first version. Added later under the same id, with the same dynamics, observations and
      rewards: the ``reward_scales`` argument, ``info["is_success"]``, the ``tempo_range`` argument
      (a residual's tempo entry), a ``start`` drawn from a sequence of names, the registration's
      ``max_episode_steps`` (the control steps of ``max_episode_seconds``, which ``gym.make``
      matches to a changed ``max_episode_seconds``; before, only the environment itself truncated
      and ``spec.max_episode_steps`` was None), ``reset(options=...)`` (``start``; an unknown
      option is a ValueError, before ignored), and the class made of a :class:`GetUpConfig` and a
      residual (``gym.make``'s keywords unchanged).
    """

    task = "getup"
    config_type: ClassVar[type[GetUpConfig]] = GetUpConfig
    residual_options = ("tempo_range",)
    config: GetUpConfig

    def __init__(
        self,
        robot: str | RobotSpec = "nao",
        config: GetUpConfig | None = None,
        conditions: str | Conditions | None = "lab",
        residual: Residual | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(robot, config, conditions, residual, render_mode)
        self._tracker: GetUpTracker | None = None
        self._weight = self.sim.weight
        self._feet = frozenset(self.sim.model.body(self.sim.model.site_bodyid[self.sim.model.site(s).id]).name
                               for s in self.robot.sole_sites)
        #: Joint angles (rad, actuator order) within 2 % of the range from the lower / upper limit.
        self._near_low = self._low + 0.02 * 2 * self._half
        self._near_high = self._high - 0.02 * 2 * self._half
        self._head_prev = 0.0

    # ---------------------------------------------------------------- start states
    def _start_state(self, start: str | tuple[str, ...], seed: int) -> str:
        """Put the robot into ``start`` (a name, or names to draw one from) and return its name."""
        rng = self.np_random
        if not isinstance(start, str):
            start = str(rng.choice(start))
        if start == "random":
            start = str(rng.choice(LYING_STARTS))
        if start in LYING:
            self.sim.reset(self.robot.lying_pose(start), seed=seed)
            return start
        if start == "standing":
            self.sim.reset(self.robot.standing_pose, seed=seed)
            return start
        if start == "side":
            self._start_on_side(seed, side=float(rng.choice([-1.0, 1.0])))
        else:
            self._start_after_fall(seed)
        self.sim.restart_clock()
        return start

    def _start_on_side(self, seed: int, side: float) -> None:
        """Standing joint angles, torso rolled 90° to one side, then left to come to rest."""
        sim = self.sim
        qpos = sim.model.key(self.robot.standing_pose).qpos.copy()
        qpos[3:7] = [np.cos(np.pi / 4), side * np.sin(np.pi / 4), 0.0, 0.0]
        qpos[2] = 0.25
        sim.reset(self.robot.standing_pose, seed=seed, qpos=qpos)
        with sim.pre_roll():
            self._come_to_rest(sim.data.ctrl.copy())

    def _start_after_fall(self, seed: int) -> None:
        """From standing, random joint targets and a push of 0.6 × the weight in a random direction
        for 0.3 s (on top of the preset's own random pushes), then left to come to rest."""
        sim, rng = self.sim, self.np_random
        sim.reset(self.robot.standing_pose, seed=seed)
        targets = np.clip(self.standing_targets + rng.uniform(-0.5, 0.5, self._mid.size) * self._half * 0.5,
                          self._low, self._high)
        angle = rng.uniform(0, 2 * np.pi)
        with sim.pre_roll():
            sim.torso_force = 0.6 * self._weight * np.array([np.cos(angle), np.sin(angle)])
            try:
                for _ in range(int(0.3 / self.robot.control_period)):
                    sim.step(targets)
            finally:
                sim.torso_force = np.zeros(2)
            self._come_to_rest(targets)

    def _come_to_rest(self, targets: np.ndarray) -> None:
        """Hold ``targets`` until the robot is at rest (or for :data:`PREROLL_SECONDS`)."""
        for _ in range(int(PREROLL_SECONDS / self.robot.control_period)):
            self.sim.step(targets)
            if self.sim.kinetic_energy() < 1e-3 and self.sim.time > 0.5:
                break

    # ---------------------------------------------------------------- gym API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode (Gymnasium's ``reset``); ``options={"start": ...}`` (a name of
        :data:`STARTS` or a sequence to draw from) starts this episode there instead of at
        ``start``. Other options: ValueError naming them."""
        options = self._reset_options(options, ("start",))
        start = _checked_start(options["start"]) if "start" in options else self.config.start
        super().reset(seed=seed)
        episode_seed = int(self.np_random.integers(2**31)) if seed is None else seed
        start = self._start_state(start, episode_seed)
        sensors = self.sim.sensors()
        self._sensors = sensors
        posture = self.posture()
        self._tracker = GetUpTracker(self.standing, start)
        self._tracker.update(posture)
        self._head_prev = posture.head_height
        self._last_action = np.zeros(self.action_space.shape)
        self._start_prior(sensors)
        info = self._base_info(sensors, posture)
        info["start"] = start
        return self._observe(sensors), info

    def step(self, action: np.ndarray):
        sensors, clipped = self._advance(action)
        posture = self.posture()
        falls = self._tracker.falls
        self._tracker.update(posture)
        up = is_upright(posture, self.standing)
        terms = self._reward_terms(clipped, posture, up, self._tracker.falls > falls)
        self._last_action = clipped
        return self._finish_step(sensors, posture, terms, False, self._tracker, success=self._tracker.success,
                                 fallen=self._tracker.fallen, upright=up, start=self._tracker.start)

    def _reward_terms(self, clipped: np.ndarray, p: Posture, up: bool, fell: bool) -> dict[str, float]:
        """This step's reward terms (see the class docstring), weighted by the config's
        ``reward_scales``, for the ``clipped`` action, the posture ``p`` after the step, whether it
        is upright and whether a fall was counted on this step."""
        w = self.config.reward_scales
        h_stand = self.standing.head_height
        head = p.head_height
        progress = w.head_progress * (head - self._head_prev) / h_stand
        self._head_prev = head
        actuation = self.sim.actuation
        torque, near_limit, action_rate = effort_terms(actuation.force, actuation.force_limit, actuation.qpos,
                                                       actuation.qpos_adr, self._near_low, self._near_high, clipped,
                                                       self._last_action)
        hardest = self.sim.max_ground_force(exclude=self._feet)
        return {
            "head_progress": progress,
            "head_height": w.head_height * min(head / h_stand, 1.0),
            "upright": w.upright * (1.0 + math.cos(p.tilt)) / 2.0,
            "still": w.still * math.exp(-p.angular_speed**2) if up else 0.0,
            "torque": -w.torque * torque,
            "action_rate": -w.action_rate * action_rate,
            "joint_limits": -w.joint_limits * near_limit,
            "impact": -w.impact * max(hardest / self._weight - IMPACT_WEIGHTS, 0.0),
            "fall": -w.fall if fell else 0.0,
        }
