"""Compiled inner loops of the controllers' control cycle (numba, cached beside this module on first use).

A walk runs a few dozen scalar formulas every control cycle, and the joint-error compensation a
dozen NumPy operations on vectors of a few dozen joints. Written as Python they cost their
interpreter's calls (a builtin ``min`` or ``max`` more than the comparison it makes) rather than
their arithmetic; compiled, each is one call. Each kernel keeps the formulas' order of operations,
so it returns the very floats the formulas give in Python (``tests/test_baseline_kernels.py``
compares them on random inputs). Units are those of the arguments.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _pressure_sums(pressure: np.ndarray, position: np.ndarray, begin: int, end: int) -> tuple[float, float, float]:
    """The readings ``begin`` to ``end`` (exclusive) of one foot: their summed normal force and
    their moments ``Σ f x``, ``Σ f y`` about the sole origin, each summed in sensor order from 0."""
    load = moment_x = moment_y = 0.0
    for k in range(begin, end):
        f = pressure[k]
        load += f
        moment_x += f * position[k, 0]
        moment_y += f * position[k, 1]
    return load, moment_x, moment_y


@numba.njit(cache=True, nogil=True)
def foot_pressure_sums(pressure: np.ndarray, position: np.ndarray, left: int
                       ) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """Per foot (left, right): the summed normal force of its pressure sensors (N) and their
    moments ``Σ f x``, ``Σ f y`` about its sole origin (N m), each summed in sensor order from 0.

    ``pressure``: the readings (N, ``Sensors.foot_pressure``: the ``left`` readings of the left
    foot, then the right foot's); ``position``: each reading's sensor (x, y) in its sole frame (m),
    one row per reading."""
    return (_pressure_sums(pressure, position, 0, left),
            _pressure_sums(pressure, position, left, pressure.shape[0]))


@numba.njit(cache=True, nogil=True)
def applied_joint_error(raw: float, previous_raw: float, factor: float) -> float:
    """Equations 3 and 4 of the joint-error compensation for one joint: the predicted error
    ``factor (δ − δ_prev) + δ`` from the raw errors of this and the last cycle, used only where it
    is closer to zero than ``raw`` and of its sign (0 where they disagree in sign)."""
    predicted = factor * (raw - previous_raw) + raw
    if predicted * raw <= 0.0:
        return 0.0
    return predicted if abs(predicted) < abs(raw) else raw


@numba.njit(cache=True, nogil=True)
def applied_errors(raw: np.ndarray, previous_raw: np.ndarray, factor: float, applied: np.ndarray) -> None:
    """:func:`applied_joint_error` of every joint into ``applied``."""
    for j in range(raw.shape[0]):
        applied[j] = applied_joint_error(raw[j], previous_raw[j], factor)


@numba.njit(cache=True, nogil=True)
def joint_errors(request: np.ndarray, measured: np.ndarray, previous_raw: np.ndarray, factor: float,
                 raw: np.ndarray, applied: np.ndarray) -> None:
    """Equations 2 to 4 of the joint-error compensation for every joint: into ``raw`` the request
    (sent one actuation delay ago) minus the measurement (0 where that is NaN: an unstiffened
    joint), into ``applied`` :func:`applied_joint_error` of it and ``previous_raw``."""
    for j in range(raw.shape[0]):
        error = request[j] - measured[j]
        raw[j] = 0.0 if math.isnan(error) else error
        applied[j] = applied_joint_error(raw[j], previous_raw[j], factor)


@numba.njit(cache=True, nogil=True)
def step_adjustment(w_t: float, w_prev: float, w_bar_prev: float, u_t: float, m: float, p_max: float,
                    t_min: float, t_max: float) -> tuple[float, float, float]:
    """Algorithm 1 of Reichenberg & Röfer's step adjustment for one control frame, line by line:
    the adjusted swing-foot x, the adjusted support-foot x and the signed violation δ (m). The
    arguments and the reading of lines 4-10 are those of
    :func:`~upright.baselines.walk.foot_placement.adjust_step`, which checks them."""
    dw_prev = w_bar_prev - w_prev  # 1: the adjustment of the previous frame
    decay = min(max(-dw_prev, -p_max), p_max)  # 2: its decay, at most p_max per frame
    dw = w_t - w_prev  # 3: the planned motion of the swing foot
    w_hat = w_bar_prev + dw + decay  # 4 (+ decay)
    support = u_t - (dw_prev + decay) / 2.0  # the support foot carries minus half the adjustment
    lower = min(w_hat, support) + t_min  # 5
    upper = max(w_hat, support) + t_max  # 6
    below, above = m - lower, m - upper
    delta = min(below, 0.0) + max(above, 0.0)  # 7
    back, ahead = -p_max - dw, p_max - dw
    p_lo = min(0.0, back) - max(decay, 0.0)  # 8
    p_hi = max(0.0, ahead) - min(decay, 0.0)  # 9
    w_bar = w_hat + min(max(delta, p_lo), p_hi)  # 10
    u_bar = u_t - (w_bar - w_t) / 2.0  # 11
    return w_bar, u_bar, delta


__all__ = ["applied_errors", "applied_joint_error", "foot_pressure_sums", "joint_errors", "step_adjustment"]
