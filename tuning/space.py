"""Search spaces as data: one YAML per controller and robot in ``tuning/spaces/``.

A space file (``<controller>_<robot>.yaml``) holds

* ``params``: the searched parameters, each ``{name, low, high, step | log, unit, source, starts}``.
  ``name`` is the controller's dotted parameter key (what ``--set params.KEY=VALUE`` takes);
  ``low``/``high`` are in ``unit``; ``unit: deg`` is converted to rad for the controller (the
  study stores degrees, as the paper's ranges are written), every other unit is the controller's
  own (m, s, rad, or 1 for gains and factors). ``starts`` (optional) lists the get-up starts the
  parameter acts on (the front sequence's parameters only for ``prone``); absent = every start.
* ``fixed``: parameter overrides held during the optimisation (dotted keys, controller units),
  e.g. the fail-safe retry off because a trial stops early on a fall instead.
* ``env``: environment keyword arguments of every trial episode (``max_episode_seconds``,
  ``conditions``); the command line's ``--conditions`` and ``--set`` go over them.
* ``trial``: the get-up trial's success and early-stop rules (see
  :class:`upright.tuning.objectives.GetUpRules`).
* ``objective``: the default objective letters; ``task`` (``getup``, the default, or ``walk``),
  ``controller`` and ``robot`` (default: the ones the space is loaded for) and ``source``.

:class:`SearchSpace` is the file's schema (:mod:`upright.envs.schema`): an unknown key, a missing
or malformed entry is a ValueError naming the file, the key and the valid keys.

The hand-tuned values of the searched parameters (the controller's default parameters, read
through the same dotted keys) are enqueued as the study's first trial.
"""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping

from pydantic import AfterValidator, Field

from upright.envs.schema import STRICT, validate
from upright.envs.files import read_yaml_mapping
from upright.tuning.objectives import GetUpRules

#: A unit a space may give; ``deg`` is the only one converted (to rad) for the controller.
Unit = Literal["s", "m", "deg", "rad", "1", "rad/s", "m/s"]
UNITS: tuple[str, ...] = typing.get_args(Unit)


@dataclass(frozen=True)
class ParamSpec:
    """One searched parameter: the range [low, high] in ``unit``, a grid ``step`` or ``log`` scale
    (ValueError for an empty range, a log scale from 0 or below, or a step on a log scale)."""

    __pydantic_config__ = STRICT

    name: str
    low: float
    high: float
    unit: Unit = "1"
    step: Annotated[float | None, Field(gt=0)] = None
    log: bool = False
    source: str = ""
    starts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.low < self.high or (self.log and self.low <= 0) or (self.log and self.step):
            raise ValueError(f"parameter {self.name!r} needs low < high (and low > 0, no step with log)")

    def to_controller(self, value: float) -> float:
        """The study's value (in ``unit``) in the controller's unit (deg -> rad)."""
        return math.radians(value) if self.unit == "deg" else float(value)

    def from_controller(self, value: float) -> float:
        """A controller value in the study's unit (rad -> deg for ``unit: deg``)."""
        return math.degrees(value) if self.unit == "deg" else float(value)


def _distinct(params: tuple[ParamSpec, ...]) -> tuple[ParamSpec, ...]:
    names = [p.name for p in params]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"parameter {twice[0]!r} is listed twice")
    return params


#: The ``params`` list of a space (and of a training sweep's space, :mod:`upright.training.sweep`):
#: at least one parameter, each named once.
SearchedParams = Annotated[tuple[ParamSpec, ...], Field(min_length=1), AfterValidator(_distinct)]


@dataclass(frozen=True)
class SearchSpace:
    """A controller's search space for one robot, the schema of a space file (see the module
    docstring)."""

    __pydantic_config__ = STRICT

    controller: str
    robot: str
    params: SearchedParams
    task: Literal["getup", "walk"] = "getup"
    fixed: dict[str, Any] = field(default_factory=dict)
    env: dict[str, Any] = field(default_factory=dict)
    trial: GetUpRules = field(default_factory=GetUpRules)
    objective: str = ""
    source: str = ""

    def for_start(self, start: str | None) -> SearchSpace:
        """The parameters acting on the get-up ``start`` (``random``/None: all of them)."""
        if start in (None, "random"):
            return self
        return replace(self, params=tuple(p for p in self.params if not p.starts or start in p.starts))

    def suggest(self, trial: Any) -> dict[str, float]:
        """Ask an Optuna trial for every parameter; returns the study's values (space units)."""
        values = {}
        for p in self.params:
            values[p.name] = trial.suggest_float(p.name, p.low, p.high, step=p.step, log=p.log)
        return values

    def overrides(self, values: Mapping[str, float]) -> dict[str, Any]:
        """Controller overrides (dotted keys, controller units) for the study's ``values``, with the
        space's fixed overrides first."""
        specs = {p.name: p for p in self.params}
        out = dict(self.fixed)
        for name, value in values.items():
            out[name] = specs[name].to_controller(value) if name in specs else value
        return out

    def hand_tuned(self, defaults: Any) -> dict[str, float]:
        """The searched parameters' values in ``defaults`` (the controller's Params), in space units,
        read by walking each dotted key with ``getattr``."""
        values = {}
        for p in self.params:
            obj = defaults
            for part in p.name.split("."):
                obj = obj[part] if isinstance(obj, Mapping) else getattr(obj, part)
            values[p.name] = round(p.from_controller(float(obj)), 10)
        return values


def spaces_dir() -> Path:
    """The folder with the shipped search spaces."""
    return Path(str(resources.files("upright.tuning") / "spaces"))


def available_spaces() -> list[str]:
    """``controller_robot`` names of the shipped spaces."""
    return sorted(p.stem for p in spaces_dir().glob("*.yaml"))


def load_space(controller: str, robot: str, path: str | Path | None = None) -> SearchSpace:
    """The search space of ``controller`` on ``robot``: ``path`` if given, else the shipped
    ``spaces/<controller>_<robot>.yaml`` (a file that names no controller or robot is for these);
    ValueError for a missing file, a space for another controller or robot, or what its schema
    refuses."""
    if path is None:
        path = spaces_dir() / f"{controller}_{robot}.yaml"
        if not path.is_file():
            raise ValueError(f"no search space for controller {controller!r} on robot {robot!r}; shipped spaces: "
                             f"{', '.join(available_spaces())} (write one and pass --space FILE)")
    what = f"search space file {str(path)!r}"
    raw = read_yaml_mapping(path, "search space file")
    space: SearchSpace = validate(SearchSpace, {"controller": controller, "robot": robot, **raw}, what)
    if (space.controller, space.robot) != (controller, robot):
        raise ValueError(f"{what}: space is for {space.controller!r} on {space.robot!r}, "
                         f"not {controller!r} on {robot!r}")
    return space


__all__ = ["ParamSpec", "SearchSpace", "SearchedParams", "UNITS", "Unit", "available_spaces", "load_space", "spaces_dir"]
