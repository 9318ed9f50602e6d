"""Inverse kinematics of the arms on the robot's own model (torso frame: x forward, y left, z up;
metres and radians).

Arm IK (3 joints, hand position only): closed form where the shoulder pitch and roll axes meet at a
right angle (both robots; the elbow from the shoulder-hand distance, then roll and pitch), the
solution nearest to the start (out of reach: the closest point towards the target); where that
leaves the joint ranges (a limit binds) damped least squares on ``mj_jacSite`` of the private model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from upright.baselines.kinematics.forward import (GEOMETRY_TOL, LIMIT_TOL, SIDES, ForwardKinematics, chain_data,
                                                  check_side, closest_points)
from upright.baselines.kinematics.vectors import Vec, add, angle_about, cross, dot, rotate, solve_cos_sin, vec, wrap
from upright.envs.robots import RobotSpec

#: A closed-form arm solution that moves a joint further than this (rad) from the start is on
#: another branch than the one damped least squares follows from the start (across a joint limit
#: or the straight arm): the arm IK then runs DLS, which keeps the arm on its branch.
ARM_BRANCH_JUMP = math.pi / 2.0


@dataclass(frozen=True)
class ArmChain:
    """One arm: its joints, the three that :meth:`ArmIK.arm_ik` moves, and its hand site."""

    joint_names: tuple[str, ...]
    ik_joint_names: tuple[str, ...]
    hand_site: str
    shoulder: np.ndarray


class ArmIK(ForwardKinematics):
    """Arm IK of one robot (:class:`ForwardKinematics` with its two arms' chains from
    ``baselines/data/kinematics_<robot>.yaml``)."""

    def __init__(self, robot: RobotSpec | str) -> None:
        super().__init__(robot)
        chains = chain_data(self.robot.name)
        m = self.model
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

    def _shoulder_center(self, side: str) -> np.ndarray | None:
        """The meeting point of the arm's first two IK axes at q = 0 (they precede the other arm
        joints, so it holds for every pose), or None where they miss or are not perpendicular."""
        d = self.data
        i, j = self._arm_ids[side][:2]
        if abs(d.xaxis[i] @ d.xaxis[j]) > GEOMETRY_TOL:
            return None
        center, gap = closest_points(d.xanchor[i], d.xaxis[i], d.xanchor[j], d.xaxis[j])
        return center if gap <= GEOMETRY_TOL else None

    def arm_joint_names(self, side: str) -> tuple[str, ...]:
        """The arm joints of ``side`` from shoulder to wrist."""
        return self.arms[check_side(side)].joint_names

    def hand_pose(self, side: str, joint_pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pose of the hand point of ``side`` (see ``data/kinematics_<robot>.yaml``) in the torso frame."""
        self.set_joints(joint_pos)
        return self.site_pose(self.arms[check_side(side)].hand_site)

    def shoulder_pose(self, side: str) -> tuple[np.ndarray, np.ndarray]:
        """The shoulder frame of ``side``: origin on the shoulder-pitch axis (its MJCF anchor), torso orientation."""
        return self.arms[check_side(side)].shoulder.copy(), np.eye(3)

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


__all__ = ["ARM_BRANCH_JUMP", "ArmChain", "ArmIK"]
