"""Controller parameter sets: one frozen dataclass per family, deriving :class:`Params`.

A family's class names its data file (``DATA_FILE``, in ``baselines/data/``, ``{robot}`` standing
for the robot's name) and :meth:`Params.load` reads it with the unit rule of
:mod:`upright.baselines.common.data` (keys ending in ``_deg`` are degrees; values in code are m, s,
rad). A class without a data file has defaults for every field, the same for every robot.

The dataclasses are the schemas of their data files (:mod:`upright.envs.schema`, with its
:data:`~upright.envs.schema.STRICT` configuration): a value is converted to its field's type
(numbers from strings, ``bool`` from true/false, tuples from lists; a number must be finite), and
an unknown key, a missing one or a value of the wrong type raises ValueError naming the file (or
the class, for overrides), the key and the valid keys.

Changed copies come from :meth:`Params.with_overrides` with dotted keys into nested parameter
sets, e.g. ``params.with_overrides({"player.max_step_forward": 0.15, "correction": "false"})``,
checked the same way; as a command line writes them, ``null`` is None for a field that may be
None, and a single value is a list of one for a field that holds a list.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, ClassVar, TypeVar, get_type_hints

from upright.baselines.common.data import DEGREES_SUFFIX, read_yaml, si_units
from upright.envs.schema import STRICT, json_schema, validate

P = TypeVar("P", bound="Params")


@dataclass(frozen=True)
class Params:
    """Base of every controller's parameter set (a frozen dataclass; see the module docstring)."""

    __pydantic_config__ = STRICT
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
        return validate(cls, si_units(raw), f"baselines/data/{name}")

    def with_overrides(self: P, overrides: Mapping[str, Any]) -> P:
        """A copy with the parameters named by the (dotted) keys of ``overrides`` changed; nested
        mappings count as dotted keys. ValueError names an unknown key and lists the valid ones,
        or a value its field does not take."""
        values = _values(self)
        for key, value in _flatten(overrides).items():
            *heads, leaf = key.split(".")
            level, hint = values, type(self)
            for head in heads:
                hint = _field_type(hint, head)
                if not isinstance(level.get(head), dict):
                    level[head] = _values(level[head]) if is_dataclass(level.get(head)) else {}
                level = level[head]
            level[leaf] = _command_line(value, _field_type(hint, leaf))
        return validate(type(self), values, f"{type(self).__name__} overrides")


def data_file_schema(cls: type[Params]) -> dict[str, Any]:
    """The JSON schema of the data files of ``cls``: its dataclass's, where a number (or a list of
    numbers) may be given in degrees instead, its key with the suffix ``_deg`` (the unit rule,
    :func:`~upright.baselines.common.data.si_units`)."""
    schema = json_schema(cls)
    for part in (schema, *schema.get("$defs", {}).values()):
        properties = part.get("properties", {})
        angles = [name for name, value in properties.items() if _numeric(value)]
        for name in angles:
            properties[name + DEGREES_SUFFIX] = {**{k: v for k, v in properties[name].items() if k != "default"},
                                                 "title": f"{properties[name]['title']} (deg)"}
        either = [name for name in part.get("required", ()) if name in angles]
        if either:
            part["required"] = [name for name in part["required"] if name not in either]
            part["allOf"] = [{"oneOf": [{"required": [name]}, {"required": [name + DEGREES_SUFFIX]}]} for name in either]
    return schema


def _numeric(schema: Mapping[str, Any]) -> bool:
    """Whether the JSON schema ``schema`` holds real numbers: a number, or a list or tuple of them."""
    if schema.get("type") == "number":
        return True
    if schema.get("type") == "array":
        items = [schema["items"]] if "items" in schema else list(schema.get("prefixItems", ()))
        return bool(items) and all(_numeric(item) for item in items)
    return bool(schema.get("anyOf")) and all(_numeric(o) or o.get("type") == "null" for o in schema["anyOf"])


def _values(params: Any) -> dict[str, Any]:
    """The fields of the dataclass instance ``params`` by name (nested sets as they are)."""
    return {f.name: getattr(params, f.name) for f in fields(params)}


def _field_type(kind: Any, name: str) -> Any:
    """The type of field ``name`` of the dataclass ``kind`` (None where there is none)."""
    return get_type_hints(kind).get(name) if isinstance(kind, type) and is_dataclass(kind) else None


def _command_line(value: Any, hint: Any) -> Any:
    """``value`` as the command line means it for a field of type ``hint``: ``null`` is None where
    None is allowed, a single value a list of one where a list of values is expected."""
    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    if value == "null" and type(None) in options:
        return None
    variadic = any(typing.get_origin(o) is tuple and typing.get_args(o)[1:] == (Ellipsis,) for o in options)
    return (value,) if variadic and isinstance(value, (str, int, float)) else value


def _flatten(overrides: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in overrides.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


__all__ = ["Params", "data_file_schema"]
