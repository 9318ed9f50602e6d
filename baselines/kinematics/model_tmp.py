"""Robot-side kinematics: forward kinematics, analytic leg IK, arm IK and CoM from the robot's own model.

:class:`Kinematics` loads the robot's MJCF into a PRIVATE ``MjModel``/``MjData`` (never the
simulation's) with the torso (free joint) fixed at the origin with identity orientation, so every
pose it returns or takes is in the TORSO frame: x forward, y left, z up; metres and radians.

Leg geometry is read from the model at construction (joint anchors and axes at q = 0), not typed in
twice. The analytic leg IK covers the 6-DoF legs of both robots with one algorithm:

* joint 0 (NAO HipYawPitch about its 45° axis, Wolfgang HipYaw) is attached to the torso;
* joints 1/2 (hip roll, hip pitch) have intersecting axes; the intersection ``H`` may sit off the
  joint-0 axis (Wolfgang: 23 mm forward, 41 mm down) as long as that offset lies in the plane of the
  joint-0 and hip-roll axes;
* joints 2, 3, 4 (hip pitch, knee, ankle pitch) are parallel; links may be offset along them
  (Wolfgang: ~1.5 mm) and the shank may be tilted relative to the thigh at q = 0 (Wolfgang: 15°);
* joints 4/5 (ankle pitch, ankle roll) intersect at the ankle point ``A``.

Solution order (closed form, no iteration): the ankle point from the sole target; the ankle roll
from the lateral offset along the pitch axes (``a cos q5 + b sin q5 = δ``); joint 0, hip roll and the
total pitch from the remaining rotation (an Euler-angle split about the model's axes); the hip
point ``H`` from joint 0; the knee from the law of cosines in the sagittal plane of the leg; hip
pitch from the direction ``H → A``; ankle pitch as the rest of the total pitch. Of the up to eight
branches the first inside the joint ranges is taken (ankle roll and hip roll nearer zero, knee
nearer the middle of its range first). The NAO model's axes meet exactly, so the closed form is
exact (~1e-15 m). The Wolfgang MJCF's offsets are rounded to 0.1 mm, so its ankle axes miss each
other by 28 µm; there the closed-form result is polished by a few damped Newton steps on the
sole-site Jacobian (``mj_jacSite``), which also fixes the ill-conditioned hip-yaw / pitch split at
hip roll ±90°. The closed form's arithmetic is :mod:`upright.baselines.leg_ik` (plain Python floats:
the controllers solve legs every control cycle).

NAO's two HipYawPitch joints are one motor: :meth:`Kinematics.legs_ik` chooses one value (default
the mean of the two legs' free solutions, or one leg's) and solves each other leg for that given
value (position and sole normal exact, the foot's yaw about its sole normal follows), the B-Human
way of sharing the joint.

Arm IK (3 joints, hand position only): closed form where the shoulder pitch and roll axes meet at a
right angle (both robots; the elbow from the shoulder-hand distance, then roll and pitch), the
solution nearest to the start (out of reach: the closest point towards the target); where that
leaves the joint ranges (a limit binds) damped least squares on ``mj_jacSite`` of the private model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import mujoco
import numpy as np

from upright.baselines.common.data import read_yaml
from upright.baselines.leg_ik import (LIMIT_TOL, LegGeometry, Vec, add, angle_about, cross, dot, pick, rotate,
                                      solve_cos_sin, vec, wrap)
from upright.envs.robots import RobotSpec, get_robot

SIDES = ("left", "right")
_EYE = np.eye(3)
_EYE6 = np.eye(6)
#: Joint axes count as parallel / perpendicular (cosine) and as intersecting (m) within this tolerance;
#: the Wolfgang ankle axes (rounded axis 0.9659/0.2588 in the MJCF) miss each other by 28 µm.
GEOMETRY_TOL = 1e-4
#: |cos(hip roll)| below this counts as near the hip's gimbal lock (joint-0 axis parallel to the pitch axes).
GIMBAL_COS = 0.05
#: A reachable closed-form leg solution further than this (rad, summed over the joints) outside the
#: joint ranges is not polished: the polish corrects the model's rounding (well below this), so it
#: cannot bring the candidate inside the ranges (saves the Jacobian iterations per candidate).
POLISH_MARGIN = 0.05
#: A closed-form arm solution that moves a joint further than this (rad) from the start is on
#: another branch than the one damped least squares follows from the start (across a joint limit
#: or the straight arm): the arm IK then runs DLS, which keeps the arm on its branch.
ARM_BRANCH_JUMP = math.pi / 2.0


@cache
def chain_data(robot_name: str) -> dict:
    """The limb chains and hand points of ``robot_name`` from ``baselines/data/kinematics.yaml``."""
    data = read_yaml("kinematics.yaml")
    if robot_name not in data:
        raise ValueError(f"no kinematic chains for robot {robot_name!r}; known: {', '.join(data)}")
    return data[robot_name]


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


def _closest_points(p1: np.ndarray, d1: np.ndarray, p2: np.ndarray, d2: np.ndarray) -> tuple[np.ndarray, float]:
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


@dataclass(frozen=True)
class ArmChain:
    """One arm: its joints, the three that :meth:`Kinematics.arm_ik` moves, and its hand site."""

    joint_names: tuple[str, ...]
    ik_joint_names: tuple[str, ...]
    hand_site: str
    shoulder: np.ndarray


class Kinematics:
    """Forward/inverse kinematics and CoM of one robot, on a private copy of its MJCF model.

    All poses are ``(pos (3,), R (3, 3))`` in the torso frame. Joint vectors are in the robot's
    joint order (``RobotSpec.joint_names``, as ``Sensors.joint_pos``). The private model holds one
    state: ``foot_pose``, ``hand_pose``, ``com``, ``leg_ik`` and ``arm_ik`` overwrite it, so call
    :meth:`set_joints` right before :meth:`site_pose` / :meth:`body_pose`. One instance per
    controller (not thread-safe); construction costs a model compile (~10 ms), calls allocate no
    MuJoCo objects.
    """

    def __init__(self, robot: RobotSpec | str) -> None:
        robot = get_robot(robot) if isinstance(robot, str) else robot
        self.robot = robot
        chains = chain_data(robot.name)
        spec = mujoco.MjSpec.from_file(str(robot.mjcf))
        for side in SIDES:
            hand = chains["hands"][side]
            spec.body(hand["body"]).add_site(name=f"{side}_hand", pos=hand["pos"])
        self.model = spec.compile()
        self.data = mujoco.MjData(self.model)
        m = self.model
        self._qadr = np.array([m.jnt_qposadr[m.joint(j).id] for j in robot.joint_names])
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
        self.legs = {side: self._leg_geometry(side, chains["legs"][side]) for side in SIDES}
        self.arms = {
            side: ArmChain(
                joint_names=tuple(chains["arms"][side]),
                ik_joint_names=tuple(chains["arm_ik"][side]),
                hand_site=f"{side}_hand",
                shoulder=self.data.xanchor[m.joint(chains["arms"][side][0]).id].copy(),
            )
            for side in SIDES
        }
        self._arm_dofs = {
            side: np.array([m.jnt_dofadr[m.joint(j).id] for j in a.ik_joint_names]) for side, a in self.arms.items()
        }
        self._arm_ids = {side: [m.joint(j).id for j in a.ik_joint_names] for side, a in self.arms.items()}
        self._hand_sites = {side: m.site(a.hand_site).id for side, a in self.arms.items()}
        #: Per arm, the indices of its joints outside the IK (NAO ElbowYaw, WristYaw), and the cache
        #: of :meth:`_arm_zero_pose`.
        self._arm_others = {side: self.joint_index([j for j in a.joint_names if j not in a.ik_joint_names])
                            for side, a in self.arms.items()}
        self._zero_poses: dict[tuple, tuple] = {}
        #: Per arm: its joints' and its IK joints' indices in the joint vector, the IK joints' ranges (rad).
        self._arm_indices = {side: (self.joint_index(a.joint_names), self.joint_index(a.ik_joint_names),
                                    m.jnt_range[self._arm_ids[side], 0], m.jnt_range[self._arm_ids[side], 1])
                             for side, a in self.arms.items()}
        #: Per arm, the point where the axes of its first two IK joints (shoulder pitch, roll) meet
        #: (torso frame, m), or None where they do not meet at a right angle: then no closed form.
        self._arm_center = {side: self._shoulder_center(side) for side in SIDES}
        self._jacp = np.zeros((3, m.nv))
        self._jacr = np.zeros((3, m.nv))
        #: The shared hip joint (NAO): the right leg's first joint follows the left's.
        self.shared_hip = bool(robot.coupled_joints) and robot.coupled_joints.get(
            self.legs["right"].joint_names[0]) == self.legs["left"].joint_names[0]

    # ------------------------------------------------------------------ set-up
    def _reset_torso(self) -> None:
        qpos = self.data.qpos
        qpos[:] = self.model.qpos0
        qpos[0:3] = 0.0
        qpos[3:7] = (1.0, 0.0, 0.0, 0.0)

    def _shoulder_center(self, side: str) -> np.ndarray | None:
        """The meeting point of the arm's first two IK axes at q = 0 (they precede the other arm
        joints, so it holds for every pose), or None where they miss or are not perpendicular."""
        d = self.data
        i, j = self._arm_ids[side][:2]
        if abs(d.xaxis[i] @ d.xaxis[j]) > GEOMETRY_TOL:
            return None
        center, gap = _closest_points(d.xanchor[i], d.xaxis[i], d.xanchor[j], d.xaxis[j])
        return center if gap <= GEOMETRY_TOL else None

    def _leg_geometry(self, side: str, names: Sequence[str]) -> LegGeometry:
        """Read one leg's axes, anchors and sole offset at q = 0 and check the IK's assumptions."""
        m, d = self.model, self.data
        if len(names) != 6:
            raise ValueError(f"{side} leg of {self.robot.name} must have 6 joints, got {names}")
        ids = [m.joint(j).id for j in names]
        axes = np.array([d.xaxis[i] for i in ids])
        anchors = np.array([d.xanchor[i] for i in ids])
        n = axes[4]
        signs = np.array([axes[k] @ n for k in (2, 3, 4)])
        problems = []
        if np.any(np.abs(np.abs(signs) - 1.0) > GEOMETRY_TOL):
            problems.append("hip pitch, knee and ankle pitch axes are not parallel")
        for a, b, what in ((0, 1, "joint 0 / hip roll"), (1, 4, "hip roll / pitch"), (5, 4, "ankle roll / pitch")):
            if abs(axes[a] @ axes[b]) > GEOMETRY_TOL:
                problems.append(f"{what} axes are not perpendicular")
        hip, gap_hip = _closest_points(anchors[1], axes[1], anchors[2], axes[2])
        ankle, gap_ankle = _closest_points(anchors[4], axes[4], anchors[5], axes[5])
        if gap_hip > GEOMETRY_TOL:
            problems.append(f"hip roll and pitch axes miss each other by {gap_hip:.2e} m")
        if gap_ankle > GEOMETRY_TOL:
            problems.append(f"ankle pitch and roll axes miss each other by {gap_ankle:.2e} m")
        yaw_point = anchors[0]
        offset = hip - yaw_point
        hip_axial, hip_forward = float(offset @ axes[0]), float(offset @ axes[1])
        plane_miss = float(np.linalg.norm(offset - hip_axial * axes[0] - hip_forward * axes[1]))
        if plane_miss > GEOMETRY_TOL:
            problems.append("the hip point is not in the plane of the joint-0 and hip-roll axes")
        if problems:
            raise ValueError(f"{self.robot.name} {side} leg does not fit the analytic IK: " + "; ".join(problems))
        knee = anchors[3]

        def normal(v: np.ndarray) -> np.ndarray:
            return v - (v @ n) * n

        sole = m.site(self.robot.sole_sites[SIDES.index(side)]).id
        sole_pos, sole_rot = d.site_xpos[sole].copy(), d.site_xmat[sole].reshape(3, 3).copy()
        limits = np.array([m.jnt_range[i] for i in ids])
        return LegGeometry(
            joint_names=tuple(names), axes=axes, pitch_axis=n, pitch_signs=np.sign(signs),
            yaw_point=yaw_point, hip_axial=hip_axial, hip_forward=hip_forward,
            hip_point=hip, knee_point=knee, ankle_point=ankle,
            thigh=normal(knee - hip), shank=normal(ankle - knee), lateral=float((hip - ankle) @ n),
            sole_rot0=sole_rot, ankle_in_sole=sole_rot.T @ (ankle - sole_pos),
            lower=limits[:, 0].copy(), upper=limits[:, 1].copy(),
            exact=max(gap_hip, gap_ankle, plane_miss) < 1e-9, sole_site=sole,
            qpos_adr=np.array([m.jnt_qposadr[i] for i in ids]), dof_adr=np.array([m.jnt_dofadr[i] for i in ids]),
        )

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

    def leg_joint_names(self, side: str) -> tuple[str, ...]:
        """The six leg joints of ``side`` from hip to ankle."""
        return self.legs[check_side(side)].joint_names

    def arm_joint_names(self, side: str) -> tuple[str, ...]:
        """The arm joints of ``side`` from shoulder to wrist."""
        return self.arms[check_side(side)].joint_names

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

    def site_pose(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Position (m) and rotation of site ``name`` in the torso frame, for the last :meth:`set_joints`."""
        i = self._site_ids.get(name)
        if i is None:
            i = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SITE, name)
            if i < 0:
                raise ValueError(f"unknown site {name!r} in the {self.robot.name} model")
            self._site_ids[name] = i
        return self.data.site_xpos[i].copy(), self.data.site_xmat[i].reshape(3, 3).copy()

    def body_pose(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Position (m) and rotation of body ``name``'s frame in the torso frame, for the last :meth:`set_joints`."""
        i = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, name)
        if i < 0:
            raise ValueError(f"unknown body {name!r} in the {self.robot.name} model")
        return self.data.xpos[i].copy(), self.data.xmat[i].reshape(3, 3).copy()

    def foot_pose(self, side: str, joint_pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pose of the sole site of ``side`` (``l_sole``/``r_sole``) in the torso frame."""
        sole = self.robot.sole_sites[SIDES.index(check_side(side))]
        self.set_joints(joint_pos)
        return self.site_pose(sole)

    def hand_pose(self, side: str, joint_pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pose of the hand point of ``side`` (see ``data/kinematics.yaml``) in the torso frame."""
        self.set_joints(joint_pos)
        return self.site_pose(self.arms[check_side(side)].hand_site)

    def shoulder_pose(self, side: str) -> tuple[np.ndarray, np.ndarray]:
        """The shoulder frame of ``side``: origin on the shoulder-pitch axis (its MJCF anchor), torso orientation."""
        return self.arms[check_side(side)].shoulder.copy(), np.eye(3)

    # ------------------------------------------------------------------ centre of mass
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

    # ------------------------------------------------------------------ leg IK
    @staticmethod
    def _check_pose(pos: np.ndarray, rot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p = np.asarray(pos, dtype=float)
        r = np.asarray(rot, dtype=float)
        if p.shape != (3,) or not np.isfinite(p).all():
            raise ValueError(f"position must be a finite (3,) vector, got {pos}")
        # NaN or inf in r fails the comparison as well
        if r.shape != (3, 3) or not float(np.abs(r.T @ r - _EYE).max()) <= 1e-4:
            raise ValueError(f"rotation must be a finite orthonormal (3, 3) matrix, got {rot}")
        return p, r

    def leg_ik(self, side: str, pos: np.ndarray, R: np.ndarray) -> tuple[np.ndarray, bool]:
        """Leg angles (6,) (order :meth:`leg_joint_names`) that put the sole of ``side`` at ``pos``, ``R``.

        Closed form (see the module docstring; :class:`~upright.baselines.leg_ik.LegSolver`). Of
        the up to eight solutions the first inside the joint ranges is returned, in the order:
        ankle roll nearer zero, hip roll nearer zero, knee nearer the middle of its range.
        ``reachable`` is False when the target is out of reach (then the leg is stretched / folded
        towards it, orientation kept) or when no solution lies inside the joint ranges (then the
        least violating one is clipped); the angles are always finite and inside the ranges.
        """
        return self._leg_ik(self.legs[check_side(side)], *self._check_pose(pos, R))

    def _leg_ik(self, leg: LegGeometry, pos: np.ndarray, rot: np.ndarray) -> tuple[np.ndarray, bool]:
        """:meth:`leg_ik` for a checked goal."""
        candidates = leg.solver.candidates(pos.tolist(), rot.tolist())
        return pick(leg, candidates, None if leg.exact else self._polisher(leg, pos, rot))

    def _polisher(self, leg: LegGeometry, pos: np.ndarray, rot: np.ndarray):
        """The candidate polish for :func:`~upright.baselines.leg_ik.pick` on a leg whose model
        geometry is not exact (:meth:`_polish`): the reachable candidates within ``POLISH_MARGIN``
        of the joint ranges, and the unreachable ones near hip roll ±90°, where the closed form's
        joint-0 / pitch split is degenerate and the polish finds the solution."""

        def polish(q: list[float], ok: bool, excess: float) -> tuple[list[float], bool, float]:
            if (ok and excess <= POLISH_MARGIN) or abs(math.cos(q[1])) < GIMBAL_COS:
                polished, residual = self._polish(leg, np.array(q), pos, rot)
                return polished.tolist(), ok or residual < 1e-6, leg.limit_excess(polished.tolist())
            return q, ok, excess

        return polish

    def _polish(self, leg: LegGeometry, q: np.ndarray, pos: np.ndarray, rot: np.ndarray,
                steps: int = 8, tol: float = 1e-7, damping: float = 1e-4) -> tuple[np.ndarray, float]:
        """Damped Newton steps on the sole-site Jacobian of the private model (position m, rotation rad).

        Removes what the closed form misses because the model's axes do not meet exactly (usually
        one step reaches ``tol``; a few near the stretched-leg singularity). Returns the iterate
        with the smallest error and that error (max of m and rad). Only the leg's joints are
        written into the private model.
        """
        m, d = self.model, self.data
        q = q.copy()
        err = np.zeros(6)
        jac = np.empty((6, 6))
        lam2 = damping * damping * _EYE6
        site, dofs = leg.sole_site, leg.dof_adr
        best, best_err = q, math.inf
        for _ in range(steps + 1):
            d.qpos[leg.qpos_adr] = q
            mujoco.mj_kinematics(m, d)
            pose_error(pos, rot, d.site_xpos[site], d.site_xmat[site].reshape(3, 3), err)
            size = float(np.abs(err).max())
            if size < best_err:
                best, best_err = q, size
            if size < tol:
                break
            mujoco.mj_comPos(m, d)
            mujoco.mj_jacSite(m, d, self._jacp, self._jacr, site)
            jac[:3], jac[3:] = self._jacp[:, dofs], self._jacr[:, dofs]
            q = q + jac.T @ solve_spd(jac @ jac.T + lam2, err)
        return best, best_err

    def leg_jacobian(self, side: str, q: np.ndarray) -> np.ndarray:
        """The sole site's Jacobian (6, 6) of leg ``side`` at its angles ``q`` (order
        :meth:`leg_joint_names`): rows linear (m/rad) then angular velocity (rad/rad), torso frame."""
        leg = self.legs[check_side(side)]
        m, d = self.model, self.data
        d.qpos[leg.qpos_adr] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        mujoco.mj_jacSite(m, d, self._jacp, self._jacr, leg.sole_site)
        return np.vstack((self._jacp[:, leg.dof_adr], self._jacr[:, leg.dof_adr]))

    def leg_ik_near(self, side: str, pos: np.ndarray, R: np.ndarray, near: np.ndarray,
                    steps: int = 8) -> tuple[np.ndarray, bool]:
        """Leg angles (6,) for a sole goal close to the pose of the leg angles ``near`` (e.g. a
        solution of :meth:`leg_ik` for a slightly different goal): damped Newton steps on the
        sole-site Jacobian from ``near`` (:meth:`_polish`), cheaper than the closed form and on the
        same branch. ``reachable``: converged (1e-6) and inside the joint ranges (the result is
        clipped to them). Each leg on its own: not for NAO's shared HipYawPitch."""
        leg = self.legs[check_side(side)]
        p, rot = self._check_pose(pos, R)
        start = np.asarray(near, dtype=float)
        if start.shape != (6,) or not np.all(np.isfinite(start)):
            raise ValueError(f"near must be six finite leg angles, got {near}")
        q, residual = self._polish(leg, start, p, rot, steps=steps)
        inside = bool(np.all(q >= leg.lower - 1e-12) and np.all(q <= leg.upper + 1e-12))
        return np.clip(q, leg.lower, leg.upper), residual < 1e-6 and inside

    def leg_ik_given_first(self, side: str, pos: np.ndarray, R: np.ndarray, first: float) -> tuple[np.ndarray, bool]:
        """Leg IK of ``side`` with joint 0 (NAO HipYawPitch) fixed to ``first`` (rad).

        The five remaining joints reach the sole position and the sole normal exactly where the
        target allows; the foot's rotation about its sole normal is what it comes out as.
        (The ankle point is taken from the target rotation; for NAO it lies on the sole normal,
        so this is exact.) Branches and ``reachable`` as in :meth:`leg_ik`; no Newton polish
        (it would move joint 0), so on a model whose axes miss (Wolfgang) it is good to ~0.1 mm.
        """
        leg = self.legs[check_side(side)]
        p, rot = self._check_pose(pos, R)
        if not math.isfinite(first):
            raise ValueError(f"first joint angle must be finite, got {first}")
        return self._leg_ik_given_first(leg, p, rot, float(first))

    @staticmethod
    def _leg_ik_given_first(leg: LegGeometry, pos: np.ndarray, rot: np.ndarray, first: float) -> tuple[np.ndarray, bool]:
        """:meth:`leg_ik_given_first` for a checked goal (no polish)."""
        return pick(leg, leg.solver.candidates_given_first(pos.tolist(), rot.tolist(), first))

    def legs_ik(self, left_pos: np.ndarray, left_R: np.ndarray, right_pos: np.ndarray, right_R: np.ndarray,
                hip_yaw_pitch: str = "mean", check: bool = True) -> tuple[dict[str, float], bool]:
        """Both legs: ``({joint name: angle}, reachable)``.

        Wolfgang: the legs are independent and ``hip_yaw_pitch`` is ignored. NAO: both HipYawPitch
        joints are one motor. ``"left"``/``"right"``: that leg is solved exactly and the other leg
        is solved for the same HipYawPitch (:meth:`leg_ik_given_first`: position and sole normal
        exact, its yaw follows); ``"mean"``: the mean of the two free solutions is used for both
        legs, which shares the yaw error between them.

        ``check=False`` skips the checks of the goals (float arrays of shape (3,), rotation matrices)
        for callers that build them themselves (the spline stand-up solves ~100 goal pairs per try).
        """
        if hip_yaw_pitch not in ("left", "right", "mean"):
            raise ValueError(f"hip_yaw_pitch must be 'left', 'right' or 'mean', got {hip_yaw_pitch!r}")
        goals = ({"left": self._check_pose(left_pos, left_R), "right": self._check_pose(right_pos, right_R)} if check
                 else {"left": (left_pos, left_R), "right": (right_pos, right_R)})
        solved = {side: self._leg_ik(self.legs[side], *goals[side]) for side in SIDES}
        if self.shared_hip:
            if hip_yaw_pitch == "mean":
                first = 0.5 * (solved["left"][0][0] + solved["right"][0][0])
                redo: tuple[str, ...] = SIDES
            else:
                first = solved[hip_yaw_pitch][0][0]
                redo = tuple(s for s in SIDES if s != hip_yaw_pitch)
            for side in redo:
                solved[side] = self._leg_ik_given_first(self.legs[side], *goals[side], float(first))
        angles: dict[str, float] = {}
        for side in SIDES:
            angles.update(zip(self.legs[side].joint_names, solved[side][0].tolist()))
        return angles, all(ok for _, ok in solved.values())

    # ------------------------------------------------------------------ arm IK
    def arm_ik(self, side: str, hand_pos_in_shoulder_frame: np.ndarray, q0: np.ndarray, *,
               iterations: int = 40, damping: float = 0.01, tolerance: float = 1e-4,
               max_step: float = 0.04, max_joint_step: float = 0.2, restarts: int = 0,
               stall: float = 0.0, closed_form: bool = True) -> np.ndarray:
        """Arm angles (order :meth:`arm_joint_names`) that bring the hand point of ``side`` to a position.

        ``hand_pos_in_shoulder_frame`` (m) is relative to :meth:`shoulder_pose` (torso orientation).
        ``q0`` is the start: a full joint vector or the arm's angles; the joints not in the IK
        (NAO ElbowYaw, WristYaw) keep its values. Damped least squares on ``mj_jacSite`` of the
        private model, position only: ``damping`` (m) the DLS damping; each step clipped to the
        joint ranges (a joint at a limit leaves the step while the step would push it further);
        the hand moves at most ``max_step`` (m) and each joint at most ``max_joint_step`` (rad)
        per iteration; stops after ``iterations``, within ``tolerance`` (m), or when an iteration
        brings the hand less than ``stall`` (m) closer (an unreachable target: the hand creeps along
        the boundary of the workspace; 0 = never).

        DLS is local: from ``q0`` it follows a smoothly moving target without branch jumps, but a
        far target across a joint limit can leave it in a local minimum. With ``restarts`` > 0 and
        the hand still more than 1 mm off, it starts again from that many fixed seeds (shoulder
        pitch spread over its range, the other joints mid-range) and keeps the closest result.
        Targets out of reach give the closest point found.

        With ``closed_form`` (and shoulder pitch and roll axes that meet at a right angle, read
        from the model; both robots) the position IK is first solved analytically
        (:meth:`_arm_closed_form`): of its up to four solutions inside the joint ranges the one
        nearest to ``q0`` is returned, the solution DLS converges to from ``q0`` on a smoothly
        moving target, without iterating (out of reach: the closest point towards the target).
        Where no such solution lies inside the ranges (a joint limit binds), or only on another
        branch (a joint more than ``ARM_BRANCH_JUMP`` from ``q0``), DLS runs.
        """
        arm = self.arms[check_side(side)]
        target = np.asarray(hand_pos_in_shoulder_frame, dtype=float)
        if target.shape != (3,) or not np.all(np.isfinite(target)):
            raise ValueError(f"hand position must be a finite (3,) vector, got {hand_pos_in_shoulder_frame}")
        target = arm.shoulder + target
        start = np.asarray(q0, dtype=float)
        arm_index, ik_index, lower, upper = self._arm_indices[side]
        if start.shape == (len(arm.joint_names),):
            full = np.zeros(len(self.robot.joint_names))
            full[arm_index] = start
        else:
            full = self._check_joint_vector(start).copy()
        if not np.all(np.isfinite(full)):
            raise ValueError(f"q0 contains non-finite values: {q0}")
        if closed_form:
            solved = self._arm_closed_form(side, target, full, ik_index, lower, upper, tolerance)
            if solved is not None:
                return solved[arm_index]
        settings = (iterations, damping, tolerance, max_step, max_joint_step, stall)
        best_error = self._arm_dls(side, target, full, ik_index, lower, upper, *settings)
        best = full[arm_index].copy()
        for i in range(restarts if best_error > 1e-3 else 0):
            seed = full.copy()
            seed[ik_index] = 0.5 * (lower + upper)
            seed[ik_index[0]] = lower[0] + (i + 0.5) / restarts * (upper[0] - lower[0])
            error = self._arm_dls(side, target, seed, ik_index, lower, upper, *settings)
            if error < best_error:
                best_error, best = error, seed[arm_index].copy()
            if best_error <= 1e-3:
                break
        return best

    def _arm_closed_form(self, side: str, target: np.ndarray, full: np.ndarray, ik_index: np.ndarray,
                         lower: np.ndarray, upper: np.ndarray, tolerance: float) -> np.ndarray | None:
        """Analytic position IK of the arm's three IK joints (shoulder pitch ``a1``, shoulder roll
        ``a2`` meeting it at the shoulder centre ``S``, elbow ``a3``; the other arm joints keep
        their values in ``full``), by products of exponentials from the pose with the three at 0:

        * the elbow angle sets the distance ``|hand − S|`` (the shoulder joints turn about ``S``):
          with ``E`` on the elbow axis and hand point ``P0``, ``|E − S + R(a3, qe) (P0 − E)|² =
          |target − S|²`` is ``a cos qe + b sin qe = c`` (two roots);
        * the shoulder roll brings the hand's component along ``a1`` to the target's
          (``a1 · R(a2, q2) u = a1 · (target − S)``, two roots), the pitch turns it about ``a1``
          onto the target.

        A target whose distance from ``S`` no elbow angle in its range reaches is replaced by the
        point towards it at the nearest reachable distance (the closest hand position, where the
        shoulder can point there; DLS creeps towards it).

        Returns the full joint vector with the candidate inside ``lower``/``upper`` (within
        ``LIMIT_TOL``, then clipped) nearest to ``full`` (checked by forward kinematics to
        ``tolerance``, m), or None when no candidate lies inside the ranges within
        ``ARM_BRANCH_JUMP`` of the start or the shoulder axes do not meet.
        """
        center = self._arm_center[side]
        if center is None:
            return None
        m, d = self.model, self.data
        site = self._hand_sites[side]
        a1, a2, a3, elbow, hand = self._arm_zero_pose(side, full, ik_index)
        center = vec(center)
        w = add(vec(target), center, -1.0)
        ww = dot(w, w)
        if ww < 1e-12:  # at the shoulder centre: no direction to point in
            return None
        r = add(hand, elbow, -1.0)
        rp = add(r, a3, -dot(r, a3))  # the part of the forearm that the elbow turns
        c0 = add(add(elbow, a3, dot(r, a3)), center, -1.0)
        a3_rp = cross(a3, rp)
        a, b, k = 2.0 * dot(c0, rp), 2.0 * dot(c0, a3_rp), dot(c0, c0) + dot(rp, rp)
        lo, hi = lower.tolist(), upper.tolist()
        roots, reach = solve_cos_sin(a, b, ww - k, tol=0.0)
        elbows = [qe for qe in roots if reach and lo[2] <= qe <= hi[2]]
        if not elbows:  # out of reach: the hand's distance from S nearest the target's, towards it
            phi = math.atan2(b, a)
            extremes = [x for x in (wrap(phi), wrap(phi + math.pi)) if lo[2] <= x <= hi[2]]
            elbows = [min((lo[2], hi[2], *extremes), key=lambda x: abs(a * math.cos(x) + b * math.sin(x) + k - ww))]
            scale = math.sqrt(max(a * math.cos(elbows[0]) + b * math.sin(elbows[0]) + k, 0.0) / ww)
            w = (w[0] * scale, w[1] * scale, w[2] * scale)
            target = np.add(center, w)
        start = full[ik_index].tolist()
        a1_a2, a1_w = dot(a1, a2), dot(a1, w)
        best, best_distance = None, math.inf
        for qe in dict.fromkeys(elbows):
            u = add(add(c0, rp, math.cos(qe)), a3_rp, math.sin(qe))  # hand − S with the shoulder at 0
            u_a2 = dot(u, a2)
            rolls, ok = solve_cos_sin(dot(a1, u) - u_a2 * a1_a2, dot(a1, cross(a2, u)), a1_w - u_a2 * a1_a2, tol=0.0)
            if not ok:
                continue
            for q2 in dict.fromkeys(rolls):
                q = (angle_about(a1, rotate(a2, q2, u), w), q2, qe)
                # the turn nearest the start
                q = [x + 2.0 * math.pi * round((s0 - x) / (2.0 * math.pi)) for x, s0 in zip(q, start)]
                distance = sum(abs(x - s0) for x, s0 in zip(q, start))
                inside = all(lo_ - LIMIT_TOL <= x <= hi_ + LIMIT_TOL for x, lo_, hi_ in zip(q, lo, hi))
                near = max(abs(x - s0) for x, s0 in zip(q, start)) <= ARM_BRANCH_JUMP
                if inside and near and distance < best_distance:
                    best, best_distance = q, distance
        if best is None:
            return None
        full = full.copy()
        full[ik_index] = np.minimum(np.maximum(best, lower), upper)
        d.qpos[self._qadr] = full
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        return full if float(np.linalg.norm(target - d.site_xpos[site])) <= tolerance else None

    def _arm_zero_pose(self, side: str, full: np.ndarray, ik_index: np.ndarray) -> tuple[Vec, ...]:
        """The arm's three IK axes, elbow anchor and hand point (torso frame, floats) with its IK
        joints at 0 and its other joints (NAO ElbowYaw, WristYaw) as in ``full``: forward
        kinematics, cached per value of those other joints (the IK never moves them, so a motion
        reuses one entry)."""
        others = self._arm_others[side]
        key = (side, tuple(full[others].tolist()))
        pose = self._zero_poses.get(key)
        if pose is None:
            m, d = self.model, self.data
            zero = full.copy()
            zero[ik_index] = 0.0
            d.qpos[self._qadr] = zero
            mujoco.mj_kinematics(m, d)
            i1, i2, i3 = self._arm_ids[side]
            pose = (vec(d.xaxis[i1]), vec(d.xaxis[i2]), vec(d.xaxis[i3]), vec(d.xanchor[i3]),
                    vec(d.site_xpos[self._hand_sites[side]]))
            if len(self._zero_poses) >= 64:  # bounded: other joints that keep changing
                self._zero_poses.clear()
            self._zero_poses[key] = pose
        return pose

    def _arm_dls(self, side: str, target: np.ndarray, full: np.ndarray, ik_index: np.ndarray,
                 lower: np.ndarray, upper: np.ndarray, iterations: int, damping: float, tolerance: float,
                 max_step: float, max_joint_step: float, stall: float) -> float:
        """Run the DLS iteration on ``full`` in place; return the remaining hand error (m).

        The three-joint step is computed in floats (:func:`_dls_step`): NumPy's per-call overhead
        on 3×3 arrays would cost several times the MuJoCo kinematics of an iteration."""
        m, d = self.model, self.data
        site = self._hand_sites[side]
        dofs = self._arm_dofs[side]
        lam2 = damping * damping
        lo, hi = lower.tolist(), upper.tolist()
        q = [min(max(x, a), b) for x, a, b in zip(full[ik_index].tolist(), lo, hi)]
        full[ik_index] = q
        self.set_joints(full)
        adr = self._qadr[ik_index]  # the IK joints' qpos entries, written directly in the loop
        tx, ty, tz = target.tolist()
        previous = math.inf
        for _ in range(iterations):
            x, y, z = d.site_xpos[site].tolist()
            err = (tx - x, ty - y, tz - z)
            size = math.sqrt(dot(err, err))
            if size < tolerance or previous - size < stall:
                break
            previous = size
            if size > max_step:  # small Cartesian steps keep the linearisation valid
                err = (err[0] * max_step / size, err[1] * max_step / size, err[2] * max_step / size)
            mujoco.mj_jacSite(m, d, self._jacp, None, site)
            rows = self._jacp[:, dofs].tolist()
            step = _dls_step(rows, err, lam2)
            # joints at a limit that the step pushes further out leave the step (active set)
            blocked = [(qi <= a and si < 0.0) or (qi >= b and si > 0.0) for qi, si, a, b in zip(q, step, lo, hi)]
            if any(blocked):
                rows = [[0.0 if out else x for x, out in zip(row, blocked)] for row in rows]
                step = _dls_step(rows, err, lam2)
            biggest = max(abs(si) for si in step)
            if biggest > max_joint_step:  # near singular poses (straight arm) DLS steps can still be large
                step = [si * max_joint_step / biggest for si in step]
            q = [min(max(qi + si, a), b) for qi, si, a, b in zip(q, step, lo, hi)]
            d.qpos[adr] = q
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
        else:
            size = float(np.linalg.norm(target - d.site_xpos[site]))
        full[ik_index] = q
        return size


def _dls_step(rows: list, err: tuple[float, float, float], lam2: float) -> list[float]:
    """The damped least-squares step ``Jᵀ (J Jᵀ + λ² I)⁻¹ e`` for a 3×3 Jacobian ``J`` (rows:
    hand x, y, z; columns: the three IK joints; m/rad), ``e`` (m) and ``λ²`` (m²). The symmetric
    positive definite (λ > 0) system is solved by its adjugate, written out."""
    (p0, p1, p2), (q0, q1, q2), (r0, r1, r2) = rows
    a, b, c = p0 * p0 + p1 * p1 + p2 * p2 + lam2, p0 * q0 + p1 * q1 + p2 * q2, p0 * r0 + p1 * r1 + p2 * r2
    d, e, f = q0 * q0 + q1 * q1 + q2 * q2 + lam2, q0 * r0 + q1 * r1 + q2 * r2, r0 * r0 + r1 * r1 + r2 * r2 + lam2
    i00, i01, i02 = d * f - e * e, c * e - b * f, b * e - c * d
    i11, i12, i22 = a * f - c * c, b * c - a * e, a * d - b * b
    det = a * i00 + b * i01 + c * i02
    e0, e1, e2 = err
    x0 = (i00 * e0 + i01 * e1 + i02 * e2) / det
    x1 = (i01 * e0 + i11 * e1 + i12 * e2) / det
    x2 = (i02 * e0 + i12 * e1 + i22 * e2) / det
    return [p0 * x0 + q0 * x1 + r0 * x2, p1 * x0 + q1 * x1 + r1 * x2, p2 * x0 + q2 * x1 + r2 * x2]


__all__ = ["SIDES", "ArmChain", "Kinematics", "LegGeometry", "chain_data", "check_side", "pose_error", "solve_spd",
           "yaw_removed"]
