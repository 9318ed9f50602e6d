"""The schemas of the configuration files: one mechanism (pydantic) that checks every file a user
writes or edits, and the JSON schemas that editors check the same files with.

A schema is a pydantic model deriving :class:`Schema` (unknown keys refused, numbers finite), or a
frozen dataclass that carries :data:`STRICT` as its ``__pydantic_config__`` (the baselines'
parameter sets, :class:`~upright.baselines.common.params.Params`, whose dataclasses keep the type
and the source of every value). :func:`validate` checks data against a schema and returns the
checked, converted value; what it refuses becomes the project's one kind of user error
(:mod:`upright.envs.files`): a ValueError whose one line names the file, the key and what is
valid, which the command line prints with exit 2. A typo reads::

    search space 'my_space.yaml': unknown key 'fixd'; valid keys: controller, env, fixed, ...

:func:`json_schema` gives a schema's JSON schema, which ``python -m upright.training.schemas``
publishes in ``docs/schemas/``.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import fields, is_dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from upright.envs.files import read_yaml_mapping

T = TypeVar("T")

#: The pydantic configuration of every schema: a key the schema does not name is an error (not
#: silently ignored), and a number must be finite (a NaN or infinite gain or limit reaches the
#: joints as NaN).
STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)

#: pydantic's error types for a key that the schema does not name (a model's, a dataclass's).
_UNKNOWN = ("extra_forbidden", "unexpected_keyword_argument")
#: pydantic's error types for a key the schema needs and the data lacks.
_MISSING = ("missing", "missing_argument", "missing_keyword_only_argument")


class Schema(BaseModel):
    """Base of a configuration file's schema, or of a part of one: the keys are its fields (with
    types, ranges and defaults), any other key is refused (:data:`STRICT`); a checked value is
    frozen."""

    model_config = ConfigDict(**STRICT, frozen=True)


@cache
def adapter(kind: Any) -> TypeAdapter[Any]:
    """The pydantic validator of the schema ``kind`` (a class, or a type such as
    ``dict[str, Model]``), built once."""
    return TypeAdapter(kind)


def validate(kind: type[T] | Any, data: Any, where: str) -> T:
    """``data`` checked against the schema ``kind`` and converted to it (an instance of a model or
    dataclass, numbers as their fields' types); ValueError with one line, ``where`` (the file) and
    the first problem: an unknown key with the valid keys beside it, a missing key, or a value of
    the wrong type or range with the value given."""
    try:
        return adapter(kind).validate_python(data)
    except ValidationError as error:
        raise ValueError(f"{where}: {problem(error, kind)}") from None


def load_config(kind: type[T] | Any, path: str | Path, what: str) -> T:
    """The YAML file ``path`` of ``KEY: VALUE`` lines (``what`` names the kind of file in
    messages) checked against the schema ``kind``: :func:`validate` of
    :func:`~upright.envs.files.read_yaml_mapping`'s contents."""
    return validate(kind, read_yaml_mapping(path, what), f"{what} {str(path)!r}")


def json_schema(kind: Any) -> dict[str, Any]:
    """The JSON schema of the schema ``kind`` (draft 2020-12, as pydantic writes it)."""
    return adapter(kind).json_schema()


def problem(error: ValidationError, kind: Any) -> str:
    """The first problem of ``error`` (raised checking data against ``kind``) in one line. Of the
    alternatives a union reports, the one that got deepest into the data is shown: the member the
    data was meant for; of a misspelt key, the unknown key (with the valid ones) rather than the
    missing one."""
    details = error.errors(include_url=False)
    # the deepest first; at one depth an unknown key (a typo) before the missing key it was meant to be
    first = max(details, key=lambda d: (len(d["loc"]), d["type"] in _UNKNOWN))  # max keeps the first of equals
    loc = tuple(first["loc"])
    shown, parent = _walk(kind, loc[:-1] if first["type"] in _UNKNOWN else loc)
    if first["type"] in _UNKNOWN:
        key = ".".join([*shown, str(loc[-1])]) if loc else "?"
        valid = field_names(parent)
        where = f" of {'.'.join(shown)}" if shown else ""
        return f"unknown key {key!r}" + (f"; valid keys{where}: {', '.join(valid)}" if valid else "")
    path = ".".join(shown)
    if first["type"] in _MISSING:
        if isinstance(loc[-1], int):  # a list or tuple with too few values
            return f"{'.'.join(shown[:-1])}: too few values, got {loc[-1]}"
        return f"missing key {path!r}"
    message = _message(first)
    if first["type"] in ("value_error", "assertion_error"):
        return f"{path}: {message}" if path else message
    # the union's other members that refused the same value at the same place: what else it may be
    others = [_message(d) for d in details if d is not first and len(d["loc"]) == len(loc)
              and d["type"] not in _UNKNOWN + _MISSING and _walk(kind, tuple(d["loc"]))[0] == shown]
    return f"{path or 'the file'}: {' or '.join(dict.fromkeys([message, *others]))}, got {first['input']!r}"


def _message(detail: Mapping[str, Any]) -> str:
    """pydantic's message of one error, without its prefix and in lower case."""
    message = str(detail["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return message[:1].lower() + message[1:]


def field_names(kind: Any) -> tuple[str, ...]:
    """The keys that the model or dataclass ``kind`` takes (by their names in the files); () for
    any other type."""
    kind = _unwrapped(kind)
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return tuple(info.alias or name for name, info in kind.model_fields.items())
    if isinstance(kind, type) and is_dataclass(kind):
        return tuple(f.name for f in fields(kind))
    return ()


def _unwrapped(kind: Any) -> Any:
    """``kind`` without ``Annotated`` and without ``| None``."""
    while True:
        if typing.get_origin(kind) is typing.Annotated:
            kind = typing.get_args(kind)[0]
            continue
        options = _options(kind)
        real = [option for option in options if option is not type(None)]
        if options and len(real) == 1:
            kind = real[0]
            continue
        return kind


def _options(kind: Any) -> tuple[Any, ...]:
    """The members of a union type, () for any other type."""
    return typing.get_args(kind) if typing.get_origin(kind) in (typing.Union, types.UnionType) else ()


def _walk(kind: Any, loc: Sequence[int | str]) -> tuple[list[str], Any]:
    """Follow pydantic's error location ``loc`` through the schema ``kind``: the keys as a file
    names them (the union members pydantic inserts into the location left out) and the type found
    there (None where the location leaves the schema's known structure)."""
    shown: list[str] = []
    for step in loc:
        if step == "[key]":  # pydantic's mark of a mapping's key (the key itself is the step before)
            return shown, None
        kind = _unwrapped(kind)
        options = _options(kind)
        if options:
            chosen = next((o for o in options if getattr(_unwrapped(o), "__name__", None) == step), None)
            if chosen is not None or not isinstance(step, str) or not step.isidentifier():
                kind = chosen  # a union member's tag, not a key of the file
                continue
            kind = next((o for o in options if step in field_names(o)), None)
            kind = _unwrapped(kind)
        shown.append(str(step))
        kind = _child(kind, step)
    return shown, kind


def _child(kind: Any, step: int | str) -> Any:
    """The type of the value at key or index ``step`` of a value of type ``kind`` (None: unknown)."""
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        for name, info in kind.model_fields.items():
            if step in (name, info.alias):
                return info.annotation
        return None
    if isinstance(kind, type) and is_dataclass(kind):
        return typing.get_type_hints(kind).get(str(step))
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (dict, Mapping) and len(args) == 2:
        return args[1]
    if origin in (list, Sequence) and args:
        return args[0]
    if origin is tuple and args:
        return args[0] if len(args) == 2 and args[1] is Ellipsis else (
            args[step] if isinstance(step, int) and step < len(args) else None)
    return None


__all__ = ["STRICT", "Schema", "adapter", "field_names", "json_schema", "load_config", "problem", "validate"]
