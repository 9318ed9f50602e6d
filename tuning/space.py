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
  :class:`upright.tuning.objectives.GetUpRules`); for walks the command and speeds.
* ``objective``: the default objective letters.

The hand-tuned values of the searched parameters (the controller's default parameters, read
through the same dotted keys) are enqueued as the study's first trial.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from upright.envs.files import read_yaml_mapping


#: Units a space may give; ``deg`` is the only one converted (to rad) for the controller.
UNITS = ("s", "m", "deg", "rad", "1", "rad/s", "m/s")


@dataclass(frozen=True)
class ParamSpec:
    """One searched parameter: the range [low, high] in ``unit``, a grid ``step`` or ``log`` scale."""

    name: str
    low: float
    high: float
    unit: str = "1"
    step: float | None = None
    log: bool = False
    source: str = ""
    starts: tuple[str, ...] = ()

    def to_controller(self, value: float) -> float:
        """The study's value (in ``unit``) in the controller's unit (deg -> rad)."""
        return math.radians(value) if self.unit == "deg" else float(value)

    def from_controller(self, value: float) -> float:
        """A controller value in the study's unit (rad -> deg for ``unit: deg``)."""
        return math.degrees(value) if self.unit == "deg" else float(value)


@dataclass(frozen=True)
class SearchSpace:
    """A controller's search space for one robot (see the module docstring for the file format)."""

    controller: str
    robot: str
    task: str
    params: tuple[ParamSpec, ...]
    fixed: dict[str, Any] = field(default_factory=dict)
    env: dict[str, Any] = field(default_factory=dict)
    trial: dict[str, Any] = field(default_factory=dict)
    objective: str = ""
    source: str = ""
    path: str = ""

    def for_start(self, start: str | None) -> "SearchSpace":
        """The parameters acting on the get-up ``start`` (``random``/None: all of them)."""
        if start in (None, "random"):
            return self
        kept = tuple(p for p in self.params if not p.starts or start in p.starts)
        return SearchSpace(self.controller, self.robot, self.task, kept, self.fixed, self.env, self.trial,
                           self.objective, self.source, self.path)

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
    ``spaces/<controller>_<robot>.yaml``; a clear error for a missing file or a bad entry."""
    if path is None:
        path = spaces_dir() / f"{controller}_{robot}.yaml"
        if not path.is_file():
            raise ValueError(f"no search space for controller {controller!r} on robot {robot!r}; shipped spaces: "
                             f"{', '.join(available_spaces())} (write one and pass --space FILE)")
    path = Path(path)
    raw = read_yaml_mapping(path, "search space file")
    if raw.get("controller", controller) != controller or raw.get("robot", robot) != robot:
        raise ValueError(f"{path}: space is for {raw.get('controller')!r} on {raw.get('robot')!r}, "
                         f"not {controller!r} on {robot!r}")
    return SearchSpace(controller=controller, robot=robot, task=str(raw.get("task", "getup")),
                       params=parse_params(raw.get("params"), path), fixed=dict(raw.get("fixed") or {}),
                       env=dict(raw.get("env") or {}), trial=dict(raw.get("trial") or {}),
                       objective=str(raw.get("objective", "")), source=str(raw.get("source", "")), path=str(path))


def parse_params(entries: Any, path: str | Path) -> tuple[ParamSpec, ...]:
    """The ``params`` list of the space file ``path`` as :class:`ParamSpec` (the format of the module
    docstring; ``upright train --sweep``'s spaces share it): ValueError naming a bad entry, an
    unknown unit, an empty range, or a parameter listed twice."""
    specs = []
    for entry in entries or []:
        try:
            spec = ParamSpec(name=str(entry["name"]), low=float(entry["low"]), high=float(entry["high"]),
                             unit=str(entry.get("unit", "1")),
                             step=None if entry.get("step") is None else float(entry["step"]),
                             log=bool(entry.get("log", False)), source=str(entry.get("source", "")),
                             starts=tuple(entry.get("starts") or ()))
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{path}: bad parameter entry {entry!r} ({error})") from None
        if spec.unit not in UNITS:
            raise ValueError(f"{path}: parameter {spec.name!r} has unknown unit {spec.unit!r}; valid: {', '.join(UNITS)}")
        if not spec.low < spec.high or (spec.log and spec.low <= 0) or (spec.log and spec.step):
            raise ValueError(f"{path}: parameter {spec.name!r} needs low < high (and low > 0, no step with log)")
        specs.append(spec)
    if not specs:
        raise ValueError(f"{path}: no parameters to search")
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: a parameter is listed twice")
    return tuple(specs)


__all__ = ["ParamSpec", "SearchSpace", "UNITS", "available_spaces", "load_space", "parse_params", "spaces_dir"]
