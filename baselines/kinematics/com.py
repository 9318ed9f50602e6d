"""Centre of mass of the robot's own model (a part of :class:`~upright.baselines.kinematics.Kinematics`)."""

from __future__ import annotations

import numpy as np

from upright.baselines.common.rotations import yaw_removed
from upright.baselines.kinematics.forward import ForwardKinematics


class CenterOfMass(ForwardKinematics):
    """The whole robot's centre of mass (m) from the model's masses, in the torso frame."""

    def com(self, joint_pos: np.ndarray) -> np.ndarray:
        """Whole-robot centre of mass (m) in the torso frame, from the model's masses."""
        self.set_joints(joint_pos)
        return self.data.subtree_com[self._torso].copy()

    def com_world_aligned(self, joint_pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
        """:meth:`com` rotated into world orientation by the IMU quaternion ``(w, x, y, z)`` (IMU → world).

        Rotation only: the vector still starts at the torso origin.
        """
        qv = np.asarray(quat, dtype=float)
        if qv.shape != (4,) or not np.all(np.isfinite(qv)) or np.linalg.norm(qv) < 1e-9:
            raise ValueError(f"quat must be a finite non-zero (w, x, y, z) quaternion, got {quat}")
        return yaw_removed(qv, 0.0) @ self._imu_in_torso.T @ self.com(joint_pos)


__all__ = ["CenterOfMass"]
