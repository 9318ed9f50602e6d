"""Helpers for the small arrays of one control step, where NumPy's generic Python-level wrappers
(``np.linalg.norm``, ``np.mean``) cost microseconds each. Each function returns exactly what the
NumPy expression named in its docstring returns, so using one in place of the other changes no
simulated number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def norm(v: np.ndarray) -> float:
    """Euclidean norm of the contiguous float64 vector ``v``: exactly ``float(np.linalg.norm(v))``,
    which is ``sqrt(v · v)`` with this dot product (``math.sqrt`` rounds correctly, as ``np.sqrt``)."""
    return math.sqrt(v.dot(v))


def mean(v: np.ndarray) -> float:
    """Mean of the float64 vector ``v``: exactly ``float(np.mean(v))`` (NumPy's sum, then one
    division by the count)."""
    return float(np.add.reduce(v)) / v.size


def total(v: np.ndarray) -> float:
    """Sum of the float64 array ``v``: exactly ``float(v.sum())``, without the method's Python-level
    wrapper."""
    return float(np.add.reduce(v, axis=None))


def all_finite(v: np.ndarray) -> bool:
    """Whether every entry of the float64 vector ``v`` is finite: a finite ``v · v`` (the cheapest
    reduction) proves it; only a non-finite one (a NaN or infinite entry, or entries beyond about
    1e154 whose squares overflow) needs the entry-wise test."""
    return math.isfinite(v.dot(v)) or bool(np.isfinite(v).all())


def within(v: np.ndarray, bound: float) -> bool:
    """Whether every entry of the float64 vector ``v`` lies in [-bound, bound] (False for a NaN):
    ``v · v <= bound²`` proves it; only otherwise are the extremes compared."""
    return bool(v.dot(v) <= bound * bound) or bool(-bound <= np.minimum.reduce(v) and np.maximum.reduce(v) <= bound)


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
