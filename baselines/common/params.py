"""Controller parameter sets: one frozen dataclass per family, deriving :class:`Params`.

A family's class names its data file (``DATA_FILE``, in ``baselines/data/``, ``{robot}`` standing
for the robot's name) and :meth:`Params.load` reads it with the unit rule of
:mod:`upright.baselines.common.data` (keys ending in ``_deg`` are degrees; values in code are m, s,
rad). A class without a data file has defaults for every field, the same for every robot.

Changed copies come from :meth:`Params.with_overrides` with dotted keys into nested parameter
sets, e.g. ``params.with_overrides({"player.max_step_forward": 0.15, "correction": "false"})``;
values are converted to the field's type (numbers from strings, ``bool`` from true/false, tuples
from lists; a number must be finite) and an unknown key raises ValueError naming it and listing the
valid keys.
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields, is_dataclass, replace
from typing import Any, ClassVar, TypeVar, get_type_hints

from upright.baselines.common.data import read_yaml, si_units

P = TypeVar("P", bound="Params")


@dataclass(frozen=True)
class Params:
    """Base of every controller's parameter set (a frozen dataclass; see the module docstring)."""

    #: The family's data file in ``baselines/data/`` with ``{robot}`` for the robot's name; None:
    #: the class's field defaults are the parameters of every robot.
    DATA_FILE: ClassVar[str | None] = None

    @classmethod
    def load(cls: type[P], robot: str) -> P:
        """The parameters of ``robot`` (a robot name) from the family's data file."""
        if cls.DATA_FILE is None:
            return cls()
        name = cls.DATA_FILE.format(robot=robot)
        try:
            raw = read_yaml(name)
        except FileNotFoundError:
            raise ValueError(f"no {cls.__name__} for robot {robot!r} (baselines/data/{name} is missing)") from None
        return from_mapping(cls, si_units(raw), where=name)

    def with_overrides(self: P, overrides: Mapping[str, Any]) -> P:
        """A copy with the parameters named by the (dotted) keys of ``overrides`` changed; nested
        mappings count as dotted keys. ValueError names an unknown key and lists the valid ones."""
        return _apply(self, _flatten(overrides), self)

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """Every dotted key that :meth:`with_overrides` accepts."""
        return dotted_keys(cls)


def dotted_keys(cls: type) -> tuple[str, ...]:
    """The dotted names of the leaf fields of the dataclass ``cls``."""
    hints = get_type_hints(cls)
    keys: list[str] = []
    for f in fields(cls):
        hint = hints[f.name]
        if isinstance(hint, type) and is_dataclass(hint):
            keys.extend(f"{f.name}.{sub}" for sub in dotted_keys(hint))
        else:
            keys.append(f.name)
    return tuple(keys)


def from_mapping(cls: type, values: Mapping[str, Any], where: str) -> Any:
    """An instance of the dataclass ``cls`` from ``values`` (nested mappings for nested dataclasses),
    each value converted to its field's type; ValueError on unknown or missing names."""
    hints = get_type_hints(cls)
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"{where}: unknown {cls.__name__} parameters {unknown}; valid: {', '.join(sorted(known))}")
    required = {f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING}
    missing = sorted(required - set(values))
    if missing:
        raise ValueError(f"{where}: {cls.__name__} parameters missing: {', '.join(missing)}")
    return cls(**{name: coerce(value, hints[name], f"{where}: {name}") for name, value in values.items()})


def coerce(value: Any, hint: Any, key: str) -> Any:
    """``value`` converted to the type ``hint`` (float, int, bool, str, tuples, ``X | None``,
    nested dataclasses); ValueError naming ``key`` when it cannot be. For ``X | None`` the string
    ``null`` (YAML's word, as a command line's ``--set KEY=null`` gives it) is None too."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        if (value is None or value == "null") and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return coerce(value, option, key)
            except ValueError as error:
                errors.append(str(error))
        raise ValueError("; ".join(errors))
    if origin is tuple:
        args = typing.get_args(hint)
        variadic = len(args) == 2 and args[1] is Ellipsis
        if variadic and isinstance(value, (str, int, float)):
            value = [value]  # one value is a list of one, as ``--set KEY=VALUE`` writes it
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{key}: expected a list, got {value!r}")
        if variadic:
            return tuple(coerce(v, args[0], key) for v in value)
        if len(value) != len(args):
            raise ValueError(f"{key}: expected {len(args)} values, got {value!r}")
        return tuple(coerce(v, a, key) for v, a in zip(value, args))
    if isinstance(hint, type) and is_dataclass(hint):
        if isinstance(value, hint):
            return value
        if isinstance(value, Mapping):
            return from_mapping(hint, value, key)
        raise ValueError(f"{key}: expected a mapping of {hint.__name__} parameters, got {value!r}")
    if hint is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise ValueError(f"{key}: expected true or false, got {value!r}")
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                pass
        raise ValueError(f"{key}: expected an integer, got {value!r}")
    if hint is float:
        number = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
        elif isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                pass
        if number is None:
            raise ValueError(f"{key}: expected a number, got {value!r}")
        if not math.isfinite(number):  # a NaN or infinite gain, limit or time reaches the joints as NaN
            raise ValueError(f"{key}: expected a finite number, got {value!r}")
        return number
    if hint is str:
        if isinstance(value, str):
            return value
        raise ValueError(f"{key}: expected a string, got {value!r}")
    return value


def _flatten(overrides: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in overrides.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def _apply(obj: Any, flat: Mapping[str, Any], root: Params, prefix: str = "") -> Any:
    hints = get_type_hints(type(obj))
    known = {f.name for f in fields(obj)}
    nested: dict[str, dict[str, Any]] = {}
    changes: dict[str, Any] = {}
    for key, value in flat.items():
        head, _, rest = key.partition(".")
        hint = hints.get(head)
        is_nested = isinstance(hint, type) and is_dataclass(hint)
        if head not in known or (rest and not is_nested):
            full = f"{prefix}{key}"
            raise ValueError(f"unknown parameter {full!r} of {type(root).__name__}; valid keys: "
                             f"{', '.join(root.keys())}")
        if rest:
            nested.setdefault(head, {})[rest] = value
        else:
            changes[head] = coerce(value, hint, f"{prefix}{key}")
    for head, sub in nested.items():
        base = changes.get(head, getattr(obj, head))
        changes[head] = _apply(base, sub, root, f"{prefix}{head}.")
    return replace(obj, **changes)


__all__ = ["Params", "coerce", "dotted_keys", "from_mapping"]
