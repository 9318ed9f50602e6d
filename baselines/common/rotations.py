"""Rotation matrices shared by the baselines. Right-handed frames, angles in rad, matrices (3, 3)
mapping vectors of the rotated frame into the reference frame."""

from __future__ import annotations

import math

import mujoco
import numpy as np


def rot_x(angle: float) -> np.ndarray:
    """Rotation by ``angle`` about x (roll)."""
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(angle: float) -> np.ndarray:
    """Rotation by ``angle`` about y (pitch, + = x axis tipped down)."""
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rot_z(angle: float) -> np.ndarray:
    """Rotation by ``angle`` about z (yaw)."""
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def yaw_removed(quat: np.ndarray, yaw: float) -> np.ndarray:
    """The orientation of the IMU quaternion ``quat`` ``(w, x, y, z)`` (body → world) turned back by
    ``yaw`` (rad) about the world's vertical: ``Rz(−yaw) R(quat)`` (3, 3). With the fused yaw or the
    heading removed, it maps the body frame into a gravity-aligned frame that turns with the robot
    (MuJoCo's quaternion functions; SciPy's ``Rotation`` objects cost ~50 µs per call)."""
    q = np.asarray(quat, dtype=float)
    rot = np.empty(9)
    mujoco.mju_quat2Mat(rot, q / math.sqrt(float(q @ q)))
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]]) @ rot.reshape(3, 3)


__all__ = ["rot_x", "rot_y", "rot_z", "yaw_removed"]
