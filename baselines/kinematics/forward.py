"""Forward kinematics on the robot's own model: a private copy of its MJCF with the torso fixed.

:class:`ForwardKinematics` loads the robot's MJCF into a PRIVATE ``MjModel``/``MjData`` (never the
simulation's) with the torso (free joint) fixed at the origin with identity orientation, so every
pose it returns or takes is in the TORSO frame: x forward, y left, z up; metres and radians. The
limb chains and hand points come from the robot's ``baselines/data/kinematics_<robot>.yaml``. It is the base of
:class:`~upright.baselines.kinematics.Kinematics`, which adds the CoM and the leg and arm IK.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache

import mujoco
import numpy as np

from upright.baselines.common.data import data_path, read_yaml
from upright.envs.robots import RobotSpec, get_robot
from upright.envs.schema import Schema, validate

SIDES = ("left", "right")
#: Joint axes count as parallel / perpendicular (cosine) and as intersecting (m) within this tolerance;
#: the Wolfgang ankle axes (rounded axis 0.9659/0.2588 in the MJCF) miss each other by 28 µm.
GEOMETRY_TOL = 1e-4
#: Joint angles may exceed a limit by this much (rad) before the IK reports clipping (they are
#: clipped anyway); covers the model's rounding.
LIMIT_TOL = 1e-3


class Sides(Schema):
    """A chain per side: its joints from the torso outwards."""

    left: list[str]
    right: list[str]


class HandPoint(Schema):
    """The hand point: ``pos`` (m) in the frame of ``body``."""

    body: str
    pos: tuple[float, float, float]


class Hands(Schema):
    """The hand point per side."""

    left: HandPoint
    right: HandPoint


class RobotChains(Schema):
    """One robot's ``baselines/data/kinematics_<robot>.yaml``: its legs' and arms' joint chains,
    the arm joints the arm IK solves for, and the hand points."""

    legs: Sides
    arms: Sides
    arm_ik: Sides
    hands: Hands


@cache
def chain_data(robot_name: str) -> dict:
    """The limb chains and hand points of ``robot_name`` from its data file
    ``baselines/data/kinematics_<robot_name>.yaml`` (checked against :class:`RobotChains`)."""
    name = f"kinematics_{robot_name}.yaml"
    if not data_path(name).is_file():
        raise ValueError(f"no kinematic chains for robot {robot_name!r}: baselines/data/{name} does not exist")
    data = read_yaml(name)
    validate(RobotChains, data, f"baselines/data/{name}")
    return data


def check_side(side: str) -> str:
    """Return ``side`` if it is ``"left"`` or ``"right"``; ValueError naming it otherwise."""
    if side not in SIDES:
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    return side


def solve_spd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``x`` with ``a x = b`` for a symmetric positive definite ``a`` (MuJoCo's Cholesky; on the
    3-6 unknowns of the IK steps ~3x cheaper than ``np.linalg.solve``). ``a`` is not changed."""
    factor = np.array(a, dtype=float)
    mujoco.mju_cholFactor(factor, 1e-15)  # pivots floored (the IK matrices are damped: >= 1e-8)
    x = np.empty(len(b))
    mujoco.mju_cholSolve(x, factor, np.asarray(b, dtype=float))
    return x


def pose_error(pos: np.ndarray, rot: np.ndarray, pos0: np.ndarray, rot0: np.ndarray,
               out: np.ndarray | None = None) -> np.ndarray:
    """The 6-vector from pose ``(pos0, rot0)`` to ``(pos, rot)``: position difference (m), then the
    rotation vector (rad) of ``rot @ rot0.T`` (same frame as the positions); written into ``out``."""
    err = np.empty(6) if out is None else out
    err[:3] = pos - pos0
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, (rot @ rot0.T).ravel())
    mujoco.mju_quat2Vel(err[3:], quat, 1.0)
    return err


def closest_points(p1: np.ndarray, d1: np.ndarray, p2: np.ndarray, d2: np.ndarray) -> tuple[np.ndarray, float]:
    """Midpoint of the closest points of two non-parallel lines and their distance (m)."""
    w = p1 - p2
    b = d1 @ d2
    denom = 1.0 - b * b
    if denom < 1e-12:
        raise ValueError("axes are parallel, they have no single intersection")
    s = (b * (d2 @ w) - (d1 @ w)) / denom
    t = ((d2 @ w) - b * (d1 @ w)) / denom
    q1, q2 = p1 + s * d1, p2 + t * d2
    return 0.5 * (q1 + q2), float(np.linalg.norm(q1 - q2))


class ForwardKinematics:
    """Forward kinematics of one robot on a private copy of its MJCF model (see the module docstring).

    Joint vectors are in the robot's joint order (``RobotSpec.joint_names``, as
    ``Sensors.joint_pos``); poses are ``(pos (3,), R (3, 3))`` in the torso frame. The private
    model holds one state: call :meth:`set_joints` right before :meth:`site_pose` /
    :meth:`body_pose`.
    """

    def __init__(self, robot: RobotSpec | str) -> None:
        robot = get_robot(robot) if isinstance(robot, str) else robot
        self.robot = robot
        chains = chain_data(robot.name)
        spec = mujoco.MjSpec.from_file(str(robot.mjcf))
        for side in SIDES:
            hand = chains["hands"][side]
            spec.body(hand["body"]).add_site(name=f"{side}_hand", pos=hand["pos"])
        # Geoms give a body its inertia only where the MJCF has no <inertial> (both robots have one
        # for every body); nothing here reads their poses, which mj_kinematics would compute on
        # every call (~15 % of an FK of these models).
        if all(body.explicitinertial for body in spec.bodies[1:]):
            for geom in list(spec.geoms):
                spec.delete(geom)
        self.model = spec.compile()
        self.data = mujoco.MjData(self.model)
        m = self.model
        self._qadr = np.array([m.jnt_qposadr[m.joint(j).id] for j in robot.joint_names])
        #: The joints' qpos addresses as a slice where they are consecutive (both robots), else the array.
        self._qslice = (slice(int(self._qadr[0]), int(self._qadr[-1]) + 1) if np.all(np.diff(self._qadr) == 1)
                        else self._qadr)
        #: ``data.qpos`` once (each read of an MjData array makes a new view: ~0.2 µs in :meth:`fk`).
        self._qpos = self.data.qpos
        self._index = {name: i for i, name in enumerate(robot.joint_names)}
        self._site_ids: dict[str, int] = {}  # site name -> id, filled by site_pose
        self._actuated = np.array(robot.actuated_joint_index)
        self._torso = m.body(robot.torso_body).id
        imu = m.site(robot.imu_site).id
        if m.site_bodyid[imu] != self._torso:
            raise ValueError(f"IMU site {robot.imu_site!r} of {robot.name} is not on the torso body")
        imu_rot = np.zeros(9)
        mujoco.mju_quat2Mat(imu_rot, m.site_quat[imu])
        #: Rotation of the IMU frame in the torso frame (identity for both models).
        self._imu_in_torso = imu_rot.reshape(3, 3)
        self._reset_torso()
        self.set_joints(np.zeros(len(robot.joint_names)))
        #: Jacobian buffers (position, rotation) of the IK iterations.
        self._jacp = np.zeros((3, m.nv))
        self._jacr = np.zeros((3, m.nv))

    # ------------------------------------------------------------------ set-up
    def _reset_torso(self) -> None:
        qpos = self.data.qpos
        qpos[:] = self.model.qpos0
        qpos[0:3] = 0.0
        qpos[3:7] = (1.0, 0.0, 0.0, 0.0)

    # ------------------------------------------------------------------ joint vectors
    @property
    def joint_names(self) -> tuple[str, ...]:
        """The robot's joint order."""
        return self.robot.joint_names

    def joint_index(self, names: Sequence[str]) -> np.ndarray:
        """Indices of ``names`` in the robot's joint order; ValueError naming an unknown joint."""
        try:
            return np.array([self._index[n] for n in names], dtype=int)
        except KeyError as err:
            raise ValueError(f"unknown joint {err.args[0]!r} for {self.robot.name}") from None

    def with_joints(self, joint_pos: np.ndarray, values: Mapping[str, float]) -> np.ndarray:
        """A copy of ``joint_pos`` (robot joint order) with the named joints set to ``values`` (rad)."""
        out = self._check_joint_vector(joint_pos).copy()
        out[self.joint_index(list(values))] = list(values.values())
        return out

    def keyframe_joints(self, name: str | None = None) -> np.ndarray:
        """Joint vector (rad, robot joint order) of the MJCF keyframe ``name`` (default: the standing pose)."""
        name = name or self.robot.standing_pose
        if mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_KEY, name) < 0:
            raise ValueError(f"unknown keyframe {name!r} for {self.robot.name}; valid: {', '.join(self.robot.poses)}")
        return self.model.key(name).qpos[self._qadr].copy()

    def targets_from_joints(self, joint_pos: np.ndarray) -> np.ndarray:
        """Actuator-order targets (rad) from a joint-order vector (coupled joints follow their driver)."""
        return self._check_joint_vector(joint_pos)[self._actuated]

    def _check_joint_vector(self, joint_pos: np.ndarray) -> np.ndarray:
        q = np.asarray(joint_pos, dtype=float)
        if q.shape != (len(self.robot.joint_names),):
            raise ValueError(
                f"joint vector must have shape ({len(self.robot.joint_names)},) for {self.robot.name}, got {q.shape}")
        if not np.isfinite(q).all():
            raise ValueError(f"joint vector contains non-finite values: {q}")
        return q

    # ------------------------------------------------------------------ forward kinematics
    def set_joints(self, joint_pos: np.ndarray) -> None:
        """Put the private model in ``joint_pos`` (rad, robot joint order) and compute its kinematics."""
        q = self._check_joint_vector(joint_pos)
        self.data.qpos[self._qadr] = q
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)

    def fk(self, joint_pos: np.ndarray) -> None:
        """:meth:`set_joints` without the checks, for controllers that pass their own or the
        sensors' finite joint vectors every cycle (the checks cost more than the kinematics)."""
        self._qpos[self._qslice] = joint_pos
        m, d = self.model, self.data
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)

    def fk_poses(self, joint_pos: np.ndarray) -> None:
        """:meth:`fk` without the centre of mass (``subtree_com`` keeps the last :meth:`fk`'s):
        the body and site poses only."""
        self._qpos[self._qslice] = joint_pos
        mujoco.mj_kinematics(self.model, self.data)

    def site_id(self, name: str) -> int:
        """The id of site ``name`` in the private model (read its pose from ``data.site_xpos`` /
        ``data.site_xmat`` after :meth:`fk`)."""
        i = self._site_ids.get(name)
        if i is None:
            i = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SITE, name)
            if i < 0:
                raise ValueError(f"unknown site {name!r} in the {self.robot.name} model")
            self._site_ids[name] = i
        return i

    @property
    def torso_id(self) -> int:
        """The torso body's id: ``data.subtree_com[torso_id]`` is the CoM after :meth:`fk`."""
        return self._torso

    def site_pose(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Position (m) and rotation of site ``name`` in the torso frame, for the last :meth:`set_joints`."""
        i = self.site_id(name)
        return self.data.site_xpos[i].copy(), self.data.site_xmat[i].reshape(3, 3).copy()

    def body_pose(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Position (m) and rotation of body ``name``'s frame in the torso frame, for the last :meth:`set_joints`."""
        i = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, name)
        if i < 0:
            raise ValueError(f"unknown body {name!r} in the {self.robot.name} model")
        return self.data.xpos[i].copy(), self.data.xmat[i].reshape(3, 3).copy()


__all__ = ["GEOMETRY_TOL", "LIMIT_TOL", "SIDES", "ForwardKinematics", "HandPoint", "Hands", "RobotChains", "Sides", "chain_data", "check_side", "closest_points",
           "pose_error", "solve_spd"]
