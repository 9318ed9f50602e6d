"""Classical controllers (robot-side code: they see only ``Sensors`` and the robot's own model).

Each baseline registers a factory ``factory(robot, params)`` under its name with
:func:`register_controller`, with the function giving its default parameters for a robot name (a
:class:`~upright.baselines.common.params.Params`, usually the family's ``Params.load``) and its
task (``"getup"`` or ``"walk"``). :func:`make_controller` builds one for a
robot (used by ``prior=NAME`` and the policy loader), with changed parameters if asked, and names
the bad value when the robot or task is not supported; :func:`default_params` gives the defaults.
A baseline supports the robots that have its data file ``baselines/data/<family>_<robot>.yaml``
(parameters or motion library), so a new robot needs no change in the controllers' code.
A baseline module is registered by importing it at the end of this file (``BASELINE_MODULES``).

Example::

    from upright.baselines import default_params, make_controller
    from upright.envs.robots import get_robot

    params = default_params("lipm", "nao").with_overrides({"player.max_step_forward": 0.1})
    walk = make_controller("lipm", get_robot("nao"), "walk", params={"correction": False})
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from upright.baselines.common.controller import Controller
from upright.baselines.common.data import data_path
from upright.baselines.common.params import Params
from upright.baselines.kinematics.forward import chain_data
from upright.envs.robots import ROBOT_NAMES, RobotSpec, get_robot
from upright.envs.tasks import TASKS


@dataclass(frozen=True)
class BaselineEntry:
    """A registered baseline: its factory ``factory(robot, params)``, its default parameters
    ``defaults(robot_name)``, the robots it has parameters for and its task."""

    factory: Callable[[RobotSpec, Any], Controller]
    defaults: Callable[[str], Params]
    robots: tuple[str, ...]
    task: str
    #: The limbs (chains of ``baselines/data/kinematics_<robot>.yaml``: legs, arms) whose joints it moves and
    #: needs; a robot model lacking one of their joints cannot run it.
    needs: tuple[str, ...] = ("legs", "arms")


_ENTRIES: dict[str, BaselineEntry] = {}


def register_controller(name: str, factory: Callable[[RobotSpec, Any], Controller],
                        defaults: Callable[[str], Params], *, task: str, family: str | None = None,
                        needs: tuple[str, ...] = ("legs", "arms")) -> None:
    """Make ``factory(robot, params)`` available as the baseline ``name`` for ``task``;
    ``defaults(robot_name)`` gives its default parameters. It supports every robot of
    :data:`~upright.envs.robots.ROBOT_NAMES` with a data file ``<family>_<robot>.yaml`` in
    ``baselines/data/`` (``family``: ``name`` unless given, e.g. an ablation of another baseline),
    on a model that has the joints of the limbs it ``needs`` (a get-up pushes itself up with its
    arms; a walk holds them)."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    family = family or name
    robots = tuple(r for r in ROBOT_NAMES if data_path(f"{family}_{r}.yaml").is_file())
    _ENTRIES[name] = BaselineEntry(factory, defaults, robots, task, tuple(needs))


def controller_names() -> tuple[str, ...]:
    """Names of the registered baselines."""
    return tuple(sorted(_ENTRIES))


def baseline_entry(name: str) -> BaselineEntry:
    """The registration of ``name``; a clear error for unknown names."""
    try:
        return _ENTRIES[name]
    except KeyError:
        valid = ", ".join(controller_names()) or "none registered yet"
        raise ValueError(f"unknown baseline {name!r}; valid baselines: {valid}") from None


def lacking_limbs(name: str, robot: RobotSpec) -> dict[str, tuple[str, ...]]:
    """The limbs the baseline ``name`` needs (:attr:`BaselineEntry.needs`) of which the model of
    ``robot`` lacks joints (:attr:`RobotSpec.missing_joints`), each with those joints; empty when
    it has them all."""
    if not robot.missing_joints:
        return {}
    chains = chain_data(robot.name)
    lacking = {limb: tuple(j for side in chains[limb].values() for j in side if j in robot.missing_joints)
               for limb in baseline_entry(name).needs}
    return {limb: joints for limb, joints in lacking.items() if joints}


def _supported_robot(name: str, entry: BaselineEntry, robot: RobotSpec | str) -> RobotSpec:
    spec = get_robot(robot) if isinstance(robot, str) else robot
    if spec.name not in entry.robots:
        raise ValueError(f"baseline {name!r} supports robots {entry.robots}, not {spec.name!r}")
    lacking = lacking_limbs(name, spec)
    if lacking:
        limb, joints = next(iter(lacking.items()))
        raise ValueError(f"baseline {name!r} ({entry.task}) needs the {limb}, and the model {spec.model} "
                         f"lacks {', '.join(joints)}")
    return spec


def default_params(name: str, robot: RobotSpec | str) -> Params:
    """The default parameters of the baseline ``name`` for ``robot`` (a description or its name)."""
    entry = baseline_entry(name)
    return entry.defaults(_supported_robot(name, entry, robot).name)


def make_controller(name: str, robot: RobotSpec | str, task: str | None = None,
                    params: Params | Mapping[str, Any] | None = None) -> Controller:
    """Build the baseline ``name`` for ``robot``; with ``task`` given, also check the task.

    ``params``: None for the defaults (:func:`default_params`), a parameter set of the baseline's
    own class, or a mapping of dotted overrides of the defaults (``{"player.max_step_forward":
    0.15}``; an unknown key raises ValueError naming it)."""
    entry = baseline_entry(name)
    spec = _supported_robot(name, entry, robot)
    if task is not None and task != entry.task:
        raise ValueError(f"baseline {name!r} is a {entry.task} controller, not for the {task!r} task")
    defaults = entry.defaults(spec.name)
    if params is None:
        params = defaults
    elif isinstance(params, Mapping):
        params = defaults.with_overrides(params)
    elif type(params) is not type(defaults):
        raise TypeError(f"baseline {name!r} takes {type(defaults).__name__}, not {type(params).__name__}")
    return entry.factory(spec, params)


__all__ = ["TASKS", "BaselineEntry", "Controller", "Params", "baseline_entry", "controller_names", "default_params",
           "lacking_limbs", "make_controller", "register_controller"]

#: The modules whose import registers the baselines: keyframe; spline, spline_nostab; lipm; step_adjust.
BASELINE_MODULES = ("keyframe.controller", "spline.controller", "walk.lipm", "walk.step_adjust")
for _module in BASELINE_MODULES:
    import_module(f"upright.baselines.{_module}")
