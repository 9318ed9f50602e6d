"""The one override syntax of the command line: ``--set KEY=VALUE ...``.

``upright eval``, ``upright experiment`` and ``upright train`` all read their ``--set`` items with
:func:`parse_settings`. Keys may be dotted (``params.player.max_step_forward=0.15``);
:func:`split_settings` sends the keys that start with ``params.`` (prefix removed) to the
controller's parameters and every other key to the environment's keyword arguments.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from upright.envs.residual import load_params_file


#: Keys with this prefix are controller parameter overrides (``params.compensation=false``).
PARAMS_PREFIX = "params."


def parse_value(text: str) -> Any:
    """An ``--set`` value: ``true``/``false``, ``none``, an int, a float, a comma list of numbers
    (a tuple of floats, e.g. ``0.25,0,0``), a comma list of names (a tuple of strings, e.g.
    ``lab,turf``), else the string itself. A list mixing numbers and names is an error."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered == "none":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    if "," in text:
        parts = [part.strip() for part in text.split(",")]
        numbers = [_number(part) for part in parts]
        if all(n is not None for n in numbers):
            return tuple(numbers)
        if any(n is not None for n in numbers) or not all(parts):
            raise ValueError(f"list value {text!r} must be all numbers or all names, separated by commas")
        return tuple(parts)
    return text


def _number(text: str) -> float | None:
    """``text`` as a float, or None when it is no number."""
    try:
        return float(text)
    except ValueError:
        return None


def parse_settings(items: Iterable[str]) -> dict[str, Any]:
    """A mapping from ``KEY=VALUE`` strings (values as :func:`parse_value`). A key is a name or a
    dotted path of names (``player.max_step_forward``); a key given twice is an error."""
    settings: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not all(part.isidentifier() for part in key.split(".")):
            raise ValueError(f"--set expects KEY=VALUE with KEY a name or a dotted path of names, got {item!r}")
        if key in settings:
            raise ValueError(f"--set {key} given twice")
        settings[key] = parse_value(value)
    return settings


def split_settings(settings: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(env_kwargs, params_overrides)``: keys starting with ``params.`` go, without the prefix,
    to the controller's parameter overrides; all other keys are environment keyword arguments, a
    dotted one nested (``reward_scales.upright=2`` → ``{"reward_scales": {"upright": 2}}``)."""
    params = {key[len(PARAMS_PREFIX):]: value for key, value in settings.items() if key.startswith(PARAMS_PREFIX)}
    return nested({k: v for k, v in settings.items() if not k.startswith(PARAMS_PREFIX)}), params


def nested(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Dotted keys as nested mappings (``{"a.b": 1, "c": 2}`` → ``{"a": {"b": 1}, "c": 2}``);
    ValueError naming both keys when a key is set both to a value and through a sub-key (``a=1`` and
    ``a.b=2``, in either order), since one of them would silently replace the other."""
    for key in settings:
        parts = key.split(".")
        for prefix in (".".join(parts[:n]) for n in range(1, len(parts))):
            if prefix in settings:
                raise ValueError(f"--set {prefix}=... and --set {key}=... both set {prefix}: give it a value or "
                                 "sub-keys, not both")
    tree: dict[str, Any] = {}
    for key, value in settings.items():
        *parents, last = key.split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return tree


def saved_prior_params(env_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The prior's parameter overrides of environment arguments ``env_kwargs``: its
    ``prior_params``, a mapping or the path of a YAML file of them (read); none: empty."""
    saved = env_kwargs.get("prior_params") or {}
    return load_params_file(saved) if isinstance(saved, str) else dict(saved)


def env_settings(kwargs: Mapping[str, Any], params: Mapping[str, Any],
                 trained: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The environment keyword arguments of a run: a trained policy's saved ones ``trained`` (none:
    empty) under ``kwargs`` (the ``--set`` environment keys), and, when there are ``params`` (the
    ``--set params.*`` keys) or dotted ``prior_params.*`` keys (a mapping in ``kwargs``),
    ``prior_params`` as the saved ones (:func:`saved_prior_params`; a ``prior_params`` file in
    ``kwargs`` replaces them) with those over them: changing one parameter of a trained policy's
    prior keeps the others it was trained with. Without either the saved ones stay."""
    merged = {**(trained or {}), **kwargs}
    given = kwargs.get("prior_params")
    if isinstance(given, Mapping):
        merged["prior_params"] = {**saved_prior_params(trained or {}), **given}
    if params:
        merged["prior_params"] = {**saved_prior_params(merged), **params}
    return merged


__all__ = ["PARAMS_PREFIX", "env_settings", "nested", "parse_settings", "parse_value", "saved_prior_params",
           "split_settings"]
