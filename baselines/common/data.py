"""The baselines' data files (``baselines/data/*.yaml``) and the unit rule for their parameters.

Parameter files give lengths in m, times in s and angles in rad, except that a key ending in
``_deg`` holds degrees (as in the robots' published configurations): :func:`si_units` converts such
a value (a number or a list of numbers) to radians and drops the suffix. This is the only place
where that rule is applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import yaml

#: Suffix of keys whose values are degrees in a data file.
DEGREES_SUFFIX = "_deg"
#: libyaml's parser where PyYAML was built with it (the same objects as ``yaml.safe_load``, several
#: times faster: a keyframe motion library is read for every controller built).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def data_path(name: str) -> Any:
    """The packaged data file ``baselines/data/<name>`` (an importlib.resources traversable)."""
    return resources.files("upright.baselines") / "data" / name


def read_yaml(source: str | Path) -> Any:
    """The contents of a YAML file as ``yaml.safe_load`` gives them (no unit conversion): the data
    file ``baselines/data/<source>`` for a name, the file itself for a :class:`~pathlib.Path`;
    FileNotFoundError naming the file when it is missing."""
    path = source if isinstance(source, Path) else data_path(source)
    if not path.is_file():
        raise FileNotFoundError(f"{source if isinstance(source, Path) else 'baselines/data/' + source} does not exist")
    return yaml.load(path.read_text(), Loader=_LOADER)


def si_units(raw: Mapping[str, Any]) -> dict[str, Any]:
    """``raw`` with every ``<name>_deg`` entry (degrees) replaced by ``<name>`` in radians, in nested
    mappings too; numbers become floats, lists of numbers tuples of floats, other values stay."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(value, Mapping):
            out[key] = si_units(value)
        elif key.endswith(DEGREES_SUFFIX):
            radians = np.deg2rad(value)
            out[key[: -len(DEGREES_SUFFIX)]] = tuple(float(v) for v in radians) if isinstance(value, list) \
                else float(radians)
        else:
            out[key] = value
    return out


__all__ = ["DEGREES_SUFFIX", "data_path", "read_yaml", "si_units"]
