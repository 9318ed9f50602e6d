"""Helpers for the small arrays of one control step, where NumPy's generic Python-level wrappers
(``np.linalg.norm``) cost microseconds each. Each function returns exactly what the NumPy expression
named in its docstring returns, so using one in place of the other changes no simulated number (the
compiled loops are in :mod:`upright.envs.kernels`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def norm(v: np.ndarray) -> float:
    """Euclidean norm of the contiguous float64 vector ``v``: exactly ``float(np.linalg.norm(v))``,
    which is ``sqrt(v · v)`` with this dot product (``math.sqrt`` rounds correctly, as ``np.sqrt``)."""
    return math.sqrt(v.dot(v))


def consecutive(indices: Sequence[int] | np.ndarray) -> slice | np.ndarray:
    """``indices`` as a slice when they are consecutive and increasing (indexing with a slice is
    cheaper), else as an integer array; either selects the same elements."""
    index = np.asarray(indices, dtype=int)
    if index.size and np.array_equal(index, np.arange(index[0], index[0] + index.size)):
        return slice(int(index[0]), int(index[0]) + index.size)
    return index


def gather(values: np.ndarray, index: slice | np.ndarray) -> np.ndarray:
    """``values[index]`` as a new array (``index`` from :func:`consecutive`)."""
    part = values[index]
    return part.copy() if isinstance(index, slice) else part
