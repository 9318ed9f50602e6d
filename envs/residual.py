"""The residual on a prior, apart from the tasks: what an action means when a controller acts first.

A task environment (:mod:`~upright.envs.getup`, :mod:`~upright.envs.walk`) owns the physics, its
observation of the sensors, reward, termination and metrics. A :class:`Residual` it is given owns
the rest of a residual policy's loop: the prior (a controller: ``reset(sensors, rng)``,
``step(sensors) -> targets``), the residual's range, its kind — what an action entry moves — and
the observation blocks it adds (the prior's targets, and on request its odometry and gait clock):

* ``"joints"`` (:class:`Residual`): one entry per actuator, added to the prior's joint target,
  ``target = prior target + scale · action · half range`` (rad);
* ``"tempo"`` (:class:`TempoResidual`): the joints, then one last entry that sets how fast a timed
  prior (``set_tempo``: ``keyframe``, ``spline``) plays its motion over the next control period;
* ``"steps"`` (:class:`StepResidual`): offsets of the swing foot's landing target of a walk prior
  that exposes its step targets (``set_step_residual``: ``step_adjust``), each ±1 = the prior's
  ``step_residual_limits`` (no scale); its joint targets go to the servos unchanged.

A zero action reproduces the prior exactly in every kind. :func:`make_residual` builds one from
``gym.make``'s keywords (:data:`RESIDUAL_ARGUMENTS`), naming a baseline prior through the controller
factory that the package root installs (:func:`set_prior_factory`), so that ``envs``, below
``baselines``, imports none of them.
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from upright.envs.files import read_yaml_mapping
from upright.envs.robots import RobotSpec
from upright.envs.sensors import Sensors

#: The default ``residual_scale``: a joint residual's range as a fraction of each joint's half range.
DEFAULT_SCALE = 0.2
#: The values of ``residual_on``: what a walk's residual moves, the prior's joint targets or its step targets.
RESIDUAL_ON = ("joints", "steps")


@runtime_checkable
class Prior(Protocol):
    """What every prior has: the controller interface of ``upright.baselines``."""

    def reset(self, sensors: Sensors, rng: np.random.Generator) -> None:
        """Start a new episode from the first measurements."""

    def step(self, sensors: Sensors) -> np.ndarray:
        """Joint position targets (rad, actuator order) for this control cycle."""


@runtime_checkable
class CommandedPrior(Protocol):
    """A walk prior: it follows a velocity command (vx m/s, vy m/s, yaw rate rad/s)."""

    def set_command(self, command: np.ndarray) -> None:
        """The command from the next cycle on (and for the episode a ``reset`` starts)."""


@runtime_checkable
class TimedPrior(Protocol):
    """A prior that plays a timed motion whose tempo can change every cycle (``keyframe``, ``spline``)."""

    def set_tempo(self, factor: float) -> None:
        """Play the motion ``factor`` times as fast over the next control cycle."""


@runtime_checkable
class SteppedPrior(Protocol):
    """A walk prior that exposes its step targets (``step_adjust``)."""

    #: The step-target offsets' names (x forward, y left, yaw left of the swing foot's landing target).
    step_residual_names: Sequence[str]
    #: The largest offset of each (m, m, rad).
    step_residual_limits: np.ndarray

    def set_step_residual(self, offsets: np.ndarray) -> None:
        """Move the next landing targets by ``offsets`` (m, m, rad, walk frame)."""


@runtime_checkable
class GaitPrior(Protocol):
    """A walk prior with a gait clock: (support foot +1 left, −1 right, 0 both; fraction of the step)."""

    gait: tuple[float, float]


@runtime_checkable
class OdometryPrior(Protocol):
    """A walk prior with speed feedback: ``feedback.measured`` (the velocity over its last step
    cycle, None before one) and ``feedback.correction`` (what it adds to the command now), both
    vx m/s, vy m/s, yaw rate rad/s in the heading frame."""

    feedback: Any


#: Builds the controller that ``prior="NAME"`` names: ``factory(name, robot, task, params)``, with
#: ``params`` a mapping of dotted parameter overrides or None for the defaults.
PriorFactory = Callable[[str, RobotSpec, str, Mapping[str, Any] | None], Prior]
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


def build_prior(prior: str | Prior | None, robot: RobotSpec, task: str,
                params: Mapping[str, Any] | str | Path | None = None) -> Prior | None:
    """``prior`` as a controller: a baseline name → its controller for ``robot`` and ``task`` with
    the parameter overrides ``params`` (a mapping of dotted keys or a YAML file, see
    :func:`load_params_file`), built by the installed :data:`PriorFactory`; a controller or None
    as it is. ValueError for anything else, and for ``params`` without a baseline name."""
    if prior is None or not isinstance(prior, str):
        if prior is not None and not isinstance(prior, Prior):
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


def _described(prior: Any) -> str:
    """How an error names a prior that lacks what it needs: None, or the controller's class."""
    return "None" if prior is None else type(prior).__name__


def _check_scale(scale: Any) -> float:
    """``scale`` as a float; ValueError naming it unless it is a finite number > 0."""
    if not isinstance(scale, numbers.Real) or not 0 < scale < math.inf:
        raise ValueError(f"residual_scale must be a finite number > 0, got {scale!r}")
    return float(scale)


class Residual:
    """A residual on a prior's joint targets (kind ``"joints"``): the action has one entry per
    actuator and commands ``prior target + scale · action · half range`` (rad, actuator order).

    ``prior`` is the controller (None is refused, naming what this kind needs of one); ``scale``
    (> 0) the residual range as a fraction of each joint's half range. ``observe_odometry`` adds the prior's odometry (a walk prior with speed feedback:
    ``lipm``, ``step_adjust``) and ``observe_gait`` its gait clock (``lipm``, ``step_adjust``) to
    the observation, before the prior's targets; ValueError naming a prior that lacks them.

    An environment binds the residual (:meth:`bind`) to its actuators; one residual serves one
    environment, whose episodes it starts (:meth:`start`) and advances (:meth:`advance`)."""

    kind: ClassVar[str] = "joints"
    #: What an action entry is called in errors.
    entry: ClassVar[str] = "actuator"

    def __init__(self, prior: Prior | None, scale: float = DEFAULT_SCALE, *, observe_odometry: bool = False,
                 observe_gait: bool = False) -> None:
        #: The residual range as a fraction of each joint's half range.
        self.scale = _check_scale(scale)
        self._serve(prior, observe_odometry, observe_gait)

    def _serve(self, prior: Prior | None, observe_odometry: bool, observe_gait: bool) -> None:
        """Take ``prior`` and the observation options (what every kind's constructor does after
        its own arguments); ValueError naming a prior this kind cannot act on or that lacks an
        option's block."""
        self._check_prior(prior)
        if observe_odometry and not isinstance(prior, OdometryPrior):
            raise ValueError(f"observe_odometry needs a walk prior with speed feedback (lipm, step_adjust), "
                             f"got prior {_described(prior)}")
        if observe_gait and not isinstance(prior, GaitPrior):
            raise ValueError(f"observe_gait needs a walk prior with a gait clock (lipm, step_adjust), "
                             f"got prior {_described(prior)}")
        if not isinstance(prior, Prior):
            raise ValueError(f"prior must be a Controller (reset, step), got {prior!r}")
        #: The controller whose targets the residual moves.
        self.prior = prior
        self.observe_odometry = bool(observe_odometry)
        self.observe_gait = bool(observe_gait)
        #: The prior's joint targets this control cycle (rad, actuator order; zeros before an episode).
        self.targets = np.zeros(0)
        self._actuators: tuple[str, ...] | None = None
        self._half = np.zeros(0)

    def _check_prior(self, prior: Any) -> None:
        """ValueError naming ``prior`` when this kind cannot act on it (a joint residual acts on any)."""

    # ---------------------------------------------------------------- the environment's side
    def bind(self, actuators: Sequence[str], half_range: np.ndarray) -> None:
        """Serve the environment whose ``actuators`` (names, actuator order) have ``half_range``
        (rad each: half of the joint range). ValueError for a residual that serves one already:
        its prior keeps an episode's state."""
        if self._actuators is not None:
            raise ValueError("this residual serves an environment already; make one per environment")
        self._actuators = tuple(actuators)
        self._half = half_range
        self.targets = np.zeros(len(self._actuators))

    @property
    def names(self) -> tuple[str, ...]:
        """What each action entry moves: the actuators' names (actuator order). ValueError before
        an environment binds the residual."""
        if self._actuators is None:
            raise ValueError("the residual serves no environment yet (an environment binds it)")
        return self._actuators

    @property
    def limits(self) -> np.ndarray:
        """The largest residual per action entry (:attr:`names`; rad for a joint): an action entry
        of ±1 moves that actuator's target this far from the prior's (``scale`` · half range)."""
        return self.scale * self._half

    @property
    def size(self) -> int:
        """The number of action entries."""
        return len(self.names)

    def observation_options(self) -> set[str]:
        """The options of :data:`~upright.envs.observation.OPTIONS` whose blocks this residual adds."""
        options = {"prior"}
        if self.observe_odometry:
            options.add("observe_odometry")
        if self.observe_gait:
            options.add("observe_gait")
        return options

    def task_block(self, block: np.ndarray | None) -> np.ndarray | None:
        """The task's observation block ``block`` (a walk's command) followed by the prior's state
        this residual observes, in the layout's order: the odometry (velocity over the last step
        cycle, zeros before one, then the speed correction) and the gait clock."""
        if not (self.observe_odometry or self.observe_gait):
            return block
        values = [] if block is None else [*block]
        if self.observe_odometry:
            feedback = self.prior.feedback
            values += (0.0, 0.0, 0.0) if feedback.measured is None else feedback.measured
            values += feedback.correction
        if self.observe_gait:
            values += self.prior.gait
        return np.array(values)

    @property
    def status(self) -> str:
        """The prior's status word (working / waiting / finished / failed / help; "" for a
        controller without one)."""
        return getattr(self.prior, "status", "")

    def start(self, sensors: Sensors, rng: np.random.Generator, command: np.ndarray | None = None) -> None:
        """Start the prior on an episode from ``sensors`` with ``rng`` (a walk prior given the
        episode's ``command`` first: vx m/s, vy m/s, yaw rate rad/s) and take its first targets."""
        if command is not None:
            self.set_command(command)
        self.prior.reset(sensors, rng)
        self.targets = np.asarray(self.prior.step(sensors), dtype=float)

    def set_command(self, command: np.ndarray) -> None:
        """Give a walk prior the velocity ``command`` (a copy) from its next cycle on; a prior
        without commands ignores it."""
        if isinstance(self.prior, CommandedPrior):
            self.prior.set_command(np.array(command, dtype=float))

    def joint_targets(self, clipped: np.ndarray) -> np.ndarray:
        """The joint targets (rad, actuator order) of the ``clipped`` action (in [-1, 1]) this cycle."""
        return self.targets + self.scale * clipped * self._half

    def advance(self, sensors: Sensors, clipped: np.ndarray) -> None:
        """The prior's targets for the next control period, from the ``sensors`` after this one
        (``clipped``, this period's action, is for the kinds that act inside the prior)."""
        self.targets = np.asarray(self.prior.step(sensors), dtype=float)

    # ---------------------------------------------------------------- the user's side
    def action(self, offsets: Mapping[str, float]) -> np.ndarray:
        """The action (float32) that moves the named entries (:attr:`names`) by ``offsets`` (the
        others by 0) from the prior: offset / limit (:attr:`limits`). ValueError for an unknown
        name or an offset beyond the residual range."""
        names, limits = self.names, self.limits
        action = np.zeros(len(names))
        for name, offset in offsets.items():
            if name not in names:
                raise ValueError(f"unknown {self.entry} {name!r}; valid: {', '.join(names)}")
            i = names.index(name)
            action[i] = float(offset) / limits[i]
            if not abs(action[i]) <= 1.0:
                raise ValueError(f"offset {offset!r} for {name!r} is beyond the residual range "
                                 f"±{limits[i]:.4g} ({self._range_source})")
        return action.astype(np.float32)

    @property
    def _range_source(self) -> str:
        """What sets the residual range, for an error."""
        return f"residual_scale {self.scale}"


class TempoResidual(Residual):
    """A joint residual with one more, last action entry, ``tempo``, on a prior that plays a timed
    motion (``set_tempo``: ``keyframe``, ``spline``): the motion plays ``tempo_range ** action[-1]``
    times as fast over the next control period (0 = its own timing, so a zero action still
    reproduces the prior; −1 and +1 = ``1 / tempo_range`` and ``tempo_range`` times). Its
    :attr:`limits` entry is ``ln tempo_range``: :meth:`action` takes the natural logarithm of the
    tempo factor for it. The residual thereby chooses when the prior may hurry and when it must
    wait, which a fixed tempo parameter cannot."""

    kind: ClassVar[str] = "tempo"

    def __init__(self, prior: Prior | None, tempo_range: float, scale: float = DEFAULT_SCALE, *,
                 observe_odometry: bool = False, observe_gait: bool = False) -> None:
        if not (isinstance(tempo_range, (int, float)) and math.isfinite(tempo_range) and tempo_range > 1.0):
            raise ValueError(f"tempo_range must be a finite number > 1 (or None), got {tempo_range!r}")
        #: The tempo entry's range (a factor > 1).
        self.tempo_range = float(tempo_range)
        super().__init__(prior, scale, observe_odometry=observe_odometry, observe_gait=observe_gait)

    def _check_prior(self, prior: Any) -> None:
        if not isinstance(prior, TimedPrior):
            raise ValueError(f"tempo_range needs a prior that plays a timed motion (keyframe, spline), "
                             f"got prior {_described(prior)}")

    @property
    def names(self) -> tuple[str, ...]:
        """The actuators' names, then ``tempo``."""
        return (*super().names, "tempo")

    @property
    def limits(self) -> np.ndarray:
        """rad per actuator, then ``ln tempo_range`` (the natural logarithm of the tempo factor)."""
        return np.append(super().limits, math.log(self.tempo_range))

    def joint_targets(self, clipped: np.ndarray) -> np.ndarray:
        return super().joint_targets(clipped[:-1])

    def advance(self, sensors: Sensors, clipped: np.ndarray) -> None:
        self.prior.set_tempo(self.tempo_range ** clipped[-1])
        super().advance(sensors, clipped)


class StepResidual(Residual):
    """A residual on a walk prior's step targets (``set_step_residual``: ``step_adjust``): the
    action is three offsets of the swing foot's landing target in the walk frame (:attr:`names`:
    x forward, y left, yaw left), each ±1 = the prior's ``step_residual_limits`` (m, m, rad, from
    its parameter file). The prior plans its steps with them from the next control cycle on and
    its joint targets go to the servos unchanged, so a zero action reproduces the prior exactly.
    Three numbers per cycle instead of one per joint: foot placement, what catches a sideways fall,
    is one action entry away. It has no ``scale``: the prior's limits are its range."""

    kind: ClassVar[str] = "steps"
    entry: ClassVar[str] = "step residual entry"

    def __init__(self, prior: Prior | None, *, observe_odometry: bool = False, observe_gait: bool = False) -> None:
        self._serve(prior, observe_odometry, observe_gait)

    def _check_prior(self, prior: Any) -> None:
        if not isinstance(prior, SteppedPrior):
            raise ValueError(f"residual_on='steps' needs a walk prior that exposes its step targets "
                             f"(step_adjust), got prior {_described(prior)}")
        limits = prior.step_residual_limits
        if not np.all(limits > 0):
            raise ValueError(f"residual_on='steps' needs the prior's step_residual_limits > 0 (m, m, rad), "
                             f"got {limits.tolist()}")

    @property
    def names(self) -> tuple[str, ...]:
        """The prior's step-target offsets (``step_residual_names``)."""
        return tuple(self.prior.step_residual_names)

    @property
    def limits(self) -> np.ndarray:
        """The prior's ``step_residual_limits`` (m, m, rad)."""
        return self.prior.step_residual_limits

    def joint_targets(self, clipped: np.ndarray) -> np.ndarray:
        return self.targets  # the action moved the steps the prior planned these targets for

    def advance(self, sensors: Sensors, clipped: np.ndarray) -> None:
        self.prior.set_step_residual(clipped * self.prior.step_residual_limits)
        super().advance(sensors, clipped)

    @property
    def _range_source(self) -> str:
        return "the prior's step_residual_limits"


def make_residual(robot: RobotSpec, task: str, prior: str | Prior | None = None,
                  residual_scale: float = DEFAULT_SCALE, prior_params: Mapping[str, Any] | str | Path | None = None,
                  residual_on: str = "joints", tempo_range: float | None = None, observe_odometry: bool = False,
                  observe_gait: bool = False) -> Residual | None:
    """The residual that ``gym.make``'s keywords ask for on ``robot``'s ``task``, None without a
    prior: ``prior`` (a baseline name with ``prior_params``, see :func:`build_prior`, or a
    controller), ``residual_scale``, ``residual_on`` (one of :data:`RESIDUAL_ON`; ``"steps"``:
    :class:`StepResidual`, whose range is its prior's step limits: a ``residual_scale`` other than
    :data:`DEFAULT_SCALE` is refused there, as it would change nothing), ``tempo_range``
    (:class:`TempoResidual`) and the observation options. ValueError naming a bad value, also
    without a prior (an option that needs one)."""
    scale = _check_scale(residual_scale)
    if residual_on not in RESIDUAL_ON:
        raise ValueError(f"unknown residual_on {residual_on!r}; valid: {', '.join(RESIDUAL_ON)}")
    if residual_on == "steps" and scale != DEFAULT_SCALE:
        raise ValueError(f"residual_scale {residual_scale!r} means nothing with residual_on='steps': the step "
                         "residual's range is the prior's step_residual_limits (prior_params.step_residual_limits)")
    controller = build_prior(prior, robot, task, prior_params)
    observe = {"observe_odometry": observe_odometry, "observe_gait": observe_gait}
    if controller is None and residual_on == "joints" and tempo_range is None and not any(observe.values()):
        return None
    if residual_on == "steps":
        return StepResidual(controller, **observe)
    if tempo_range is not None:
        return TempoResidual(controller, tempo_range, scale, **observe)
    return Residual(controller, scale, **observe)


#: ``gym.make``'s keywords that belong to the residual (:func:`make_residual`'s) and mean nothing
#: without a prior: running the prior alone as a policy drops them.
RESIDUAL_ARGUMENTS: tuple[str, ...] = tuple(inspect.signature(make_residual).parameters)[2:]

__all__ = ["DEFAULT_SCALE", "RESIDUAL_ARGUMENTS", "RESIDUAL_ON", "CommandedPrior", "GaitPrior", "OdometryPrior",
           "Prior", "PriorFactory", "Residual", "StepResidual", "SteppedPrior", "TempoResidual", "TimedPrior",
           "build_prior", "load_params_file", "make_residual", "set_prior_factory"]
