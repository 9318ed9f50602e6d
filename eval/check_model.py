"""``upright check-model``: what a user's MJCF of one of our robots does differently from ours.

The user's model is read through its map (:mod:`upright.envs.robots.user_model`), so both models
are compared in our joint names and angles: the joint map itself (renamed, zero, sign, missing),
the kinematics at the reference poses (soles and hands in the torso frame), the total and
per-link masses, the inertias (with a flag where a tensor looks taken about the joint instead of
the centre of mass), the servos (gain, torque limit, control range, damping, armature, friction
loss), and the simulation settings (timestep, integrator, solver, contact). The report fits 80
columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from upright.baselines.kinematics.forward import SIDES, chain_data
from upright.envs.robots import RobotSpec, get_robot, with_model
from upright.envs.robots.user_model import adapted_model, read_model_map

#: Report width (characters).
WIDTH = 80
#: Position differences below this (m) count as equal.
POSITION_TOL = 1e-4
#: Relative differences below this count as equal (masses, inertias, servo parameters).
RELATIVE_TOL = 1e-3
#: An inertia is flagged as taken about the joint when the parallel-axis term of our link (its
#: mass times the squared distance from the joint to the centre of mass) is at least this fraction
#: of its inertia's trace and the user's tensor is nearer to our tensor about the joint than about
#: the centre of mass.
SHIFT_SIGNIFICANT = 0.2


@dataclass
class _Model:
    """One compiled model of the comparison with its data."""

    model: mujoco.MjModel
    data: mujoco.MjData

    @classmethod
    def of(cls, spec: mujoco.MjSpec) -> "_Model":
        model = spec.compile()
        return cls(model, mujoco.MjData(model))

    def pose(self, pose: str, fixed: bool) -> None:
        """Set the joint angles of keyframe ``pose``; ``fixed``: the torso at the origin, upright."""
        m, d = self.model, self.data
        mujoco.mj_resetDataKeyframe(m, d, m.key(pose).id)
        if fixed:
            d.qpos[:7] = (0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0)
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)

    def link(self, joint: str) -> int:
        """The body that ``joint`` moves."""
        return int(self.model.jnt_bodyid[self.model.joint(joint).id])


def _hand_points(robot: RobotSpec, model: _Model) -> dict[str, np.ndarray]:
    """Per hand (``l_hand``, ``r_hand``) its position (m, world) now: our hand point (a point on the
    body of the arm chain's last joint, ``baselines/data/kinematics_<robot>.yaml``) on that joint's body."""
    chains = chain_data(robot.name)
    points = {}
    for side in SIDES:
        last = chains["arms"][side][-1]
        if last in robot.missing_joints:
            continue
        body = model.link(last)
        offset = np.asarray(chains["hands"][side]["pos"], dtype=float)
        points[f"{side[0]}_hand"] = model.data.xpos[body] + model.data.xmat[body].reshape(3, 3) @ offset
    return points


def _points(robot: RobotSpec, model: _Model) -> dict[str, np.ndarray]:
    m, d = model.model, model.data
    return {**{s: d.site_xpos[m.site(s).id].copy() for s in robot.sole_sites}, **_hand_points(robot, model)}


def _mm(vector: np.ndarray) -> str:
    return "(" + ", ".join(f"{1e3 * v:+7.1f}" for v in vector) + ")"


def _rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(a), abs(b), 1e-12)


def _joint_section(robot: RobotSpec) -> list[str]:
    """How the map takes the user's joints to ours."""
    model_map = read_model_map(robot.model_map, robot)
    lines = [f"joints: {len(robot.joint_names) - len(robot.missing_joints)} of {len(robot.joint_names)}"
             f" present"]
    renamed = [(j, e.name) for j, e in model_map.joints.items() if e.name != j]
    if renamed:
        lines.append(f"  renamed by the map: {len(renamed)} (e.g. {renamed[0][1]} -> {renamed[0][0]})")
    source = mujoco.MjSpec.from_file(str(robot.model))
    present = {j: model_map.joints[j].name if j in model_map.joints else j for j in robot.joint_names
               if j not in robot.missing_joints}
    for name, theirs in present.items():
        entry = model_map.joints.get(name)
        ref = float(source.joint(theirs).ref) * (np.pi / 180 if source.compiler.degree else 1.0)
        notes = []
        if entry is not None and entry.sign < 0:
            notes.append("sign -1 (turns the other way)")
        if entry is not None and entry.zero is not None:
            notes.append(f"zero {entry.zero:+.4f} rad (map)")
        elif ref and model_map.zero_from_ref:
            notes.append(f"zero {ref:+.4f} rad (the joint's ref)")
        elif ref:
            notes.append(f"ref {ref:+.4f} rad NOT taken as zero (map: zero_from_ref false)")
        if notes:
            lines.append(f"  {name:<15} <- {theirs:<18} {'; '.join(notes)}"[:WIDTH])
    if robot.missing_joints:
        lines += _wrapped(f"missing (held at {robot.standing_pose}): ", ", ".join(robot.missing_joints))
    return lines


def _wrapped(head: str, text: str) -> list[str]:
    lines, line = [], "  " + head
    for word in text.split(" "):
        if len(line) + len(word) + 1 > WIDTH:
            lines.append(line.rstrip())
            line = "    "
        line += word + " "
    return lines + [line.rstrip()]


def _kinematics_section(robot: RobotSpec, ours: _Model, theirs: _Model) -> list[str]:
    lines = ["kinematics at the reference poses (torso frame, mm)",
             f"  {'pose':<10} {'point':<7} {'ours (x, y, z)':<27} {'theirs - ours':<27}"]
    same = True
    for pose in robot.poses:
        ours.pose(pose, fixed=True)
        theirs.pose(pose, fixed=True)
        a, b = _points(get_robot(robot.name), ours), _points(robot, theirs)
        for point, position in a.items():
            if point not in b:
                lines.append(f"  {pose:<10} {point:<7} {_mm(position):<27} missing")
                same = False
                continue
            delta = b[point] - position
            if np.linalg.norm(delta) > POSITION_TOL:
                same = False
                lines.append(f"  {pose:<10} {point:<7} {_mm(position):<27} {_mm(delta)}")
    if same:
        lines.append(f"  every sole and hand within {POSITION_TOL * 1e3:g} mm of ours")
    return lines


def _inertia_about(model: _Model, body: int, point: np.ndarray) -> np.ndarray:
    """The inertia tensor (kg m², world axes) of ``body`` about ``point`` (m, world)."""
    m, d = model.model, model.data
    rot = d.ximat[body].reshape(3, 3)
    tensor = rot @ np.diag(m.body_inertia[body]) @ rot.T
    offset = d.xipos[body] - point
    return tensor + m.body_mass[body] * (offset @ offset * np.eye(3) - np.outer(offset, offset))


def _mass_section(robot: RobotSpec, ours: _Model, theirs: _Model) -> list[str]:
    robot_bodies = [robot.torso_body] + [j for j in robot.joint_names]
    ours.pose(robot.standing_pose, fixed=True)
    theirs.pose(robot.standing_pose, fixed=True)
    total_ours = float(ours.model.body_subtreemass[ours.model.body(robot.torso_body).id])
    total_theirs = float(theirs.model.body_subtreemass[theirs.model.body(robot.torso_body).id])
    lines = [f"mass: ours {total_ours:.3f} kg, theirs {total_theirs:.3f} kg "
             f"({100 * (total_theirs / total_ours - 1):+.1f} %)",
             f"  {'link (joint)':<16} {'ours kg':>8} {'theirs kg':>9} {'CoM Δ mm':>9} {'inertia Δ %':>11}  flag"]
    flagged = 0
    rows = 0
    for name in robot_bodies:
        if name in robot.missing_joints:
            continue
        a = ours.model.body(name).id if name == robot.torso_body else ours.link(name)
        b = theirs.model.body(name).id if name == robot.torso_body else theirs.link(name)
        mass_a, mass_b = float(ours.model.body_mass[a]), float(theirs.model.body_mass[b])
        com = float(np.linalg.norm(theirs.data.xipos[b] - ours.data.xipos[a]))
        moments_a, moments_b = np.sort(ours.model.body_inertia[a]), np.sort(theirs.model.body_inertia[b])
        inertia = float(np.abs(moments_b - moments_a).max() / max(moments_a.max(), 1e-12))
        flag = ""
        if name != robot.torso_body:
            anchor = ours.data.xanchor[ours.model.joint(name).id]
            about_joint = np.linalg.eigvalsh(_inertia_about(ours, a, anchor))
            shift = float(np.trace(_inertia_about(ours, a, anchor))) / max(float(moments_a.sum()), 1e-12) - 1
            if (shift >= SHIFT_SIGNIFICANT and np.linalg.norm(moments_b - about_joint)
                    < np.linalg.norm(moments_b - moments_a)):
                flag = "about joint?"
                flagged += 1
        if _rel(mass_a, mass_b) > RELATIVE_TOL or com > POSITION_TOL or inertia > RELATIVE_TOL or flag:
            rows += 1
            lines.append(f"  {name:<16} {mass_a:>8.4f} {mass_b:>9.4f} {1e3 * com:>9.1f} {100 * inertia:>11.1f}  "
                         f"{flag}")
    if not rows:
        lines.append("  every link's mass, CoM and inertia as ours")
    if robot.missing_joints:
        lacking = sum(float(ours.model.body_mass[ours.link(j)]) for j in robot.missing_joints)
        lines.append(f"  the links of the missing joints: {lacking:.3f} kg of ours")
    if flagged:
        lines += _wrapped("", "about joint?: the tensor is nearer to ours taken about the joint than about "
                              "the centre of mass: MJCF inertias are about the CoM (<inertial pos=...>)")
    return lines


def _servo_values(model: mujoco.MjModel, robot: RobotSpec, actuator: str) -> dict[str, float]:
    a = model.actuator(actuator)
    dof = model.jnt_dofadr[model.joint(actuator).id]
    return {"kp": float(a.gainprm[0]), "torque": float(a.forcerange[1]), "low": float(a.ctrlrange[0]),
            "high": float(a.ctrlrange[1]), "damping": float(model.dof_damping[dof]),
            "armature": float(model.dof_armature[dof]), "friction": float(model.dof_frictionloss[dof])}


def _servo_section(robot: RobotSpec, ours: _Model, theirs: _Model) -> list[str]:
    keys = ("kp", "torque", "low", "high", "damping", "armature", "friction")
    lines = ["servos (ours/theirs where they differ; kp N m/rad, torque N m, range rad)"]
    differing = 0
    for name in robot.actuator_names:
        if name in robot.missing_joints:
            continue
        a, b = _servo_values(ours.model, robot, name), _servo_values(theirs.model, robot, name)
        changes = [f"{k} {a[k]:.4g}/{b[k]:.4g}" for k in keys if _rel(a[k], b[k]) > RELATIVE_TOL
                   and abs(a[k] - b[k]) > 1e-9]
        if changes:
            differing += 1
            lines += _wrapped(f"{name:<15} ", " ".join(c.replace(" ", "\u00a0") for c in changes))
    if not differing:
        lines.append("  every servo as ours")
    return [line.replace("\u00a0", " ") for line in lines]


def _foot_contact(robot: RobotSpec, model: mujoco.MjModel) -> str:
    """The contact settings of the first colliding geom on the left sole's body."""
    body = int(model.site_bodyid[model.site(robot.sole_sites[0]).id])
    for g in range(model.ngeom):
        if model.geom_bodyid[g] == body and (model.geom_contype[g] or model.geom_conaffinity[g]):
            return (f"friction {model.geom_friction[g, 0]:.3g}, solref {model.geom_solref[g, 0]:.3g} "
                    f"{model.geom_solref[g, 1]:.3g}, condim {model.geom_condim[g]}")
    return "no colliding geom"


def _settings_section(robot: RobotSpec, ours: _Model, theirs: _Model) -> list[str]:
    def settings(m: mujoco.MjModel) -> dict[str, str]:
        substeps = robot.control_period / m.opt.timestep
        return {
            "timestep": f"{m.opt.timestep * 1e3:g} ms ({substeps:g} per {robot.control_period * 1e3:g} ms cycle)",
            "integrator": mujoco.mjtIntegrator(m.opt.integrator).name.removeprefix("mjINT_").lower(),
            "solver": f"{mujoco.mjtSolver(m.opt.solver).name.removeprefix('mjSOL_').lower()}, "
                      f"{m.opt.iterations} iterations",
            "cone": mujoco.mjtCone(m.opt.cone).name.removeprefix("mjCONE_").lower(),
            "impratio": f"{m.opt.impratio:g}",
            "foot contact": _foot_contact(robot, m),
        }
    a, b = settings(ours.model), settings(theirs.model)
    lines = ["simulation settings (theirs are used as they are)"]
    for key in a:
        mark = "" if a[key] == b[key] else f"   (ours: {a[key]})"
        lines += _wrapped(f"{key:<13} ", b[key] + mark)
    substeps = robot.control_period / theirs.model.opt.timestep
    if abs(substeps - round(substeps)) > 1e-9:
        lines.append(f"  ERROR: the {robot.control_period * 1e3:g} ms control period is no multiple of the timestep")
    return lines


def check_model(model: str | Path, robot_name: str, model_map: str | Path | None = None) -> str:
    """The report of ``upright check-model``: the user's ``model`` of the robot ``robot_name``
    through ``model_map``, against our model (ValueError for a model or map that does not fit)."""
    robot = with_model(get_robot(robot_name), model, model_map)
    ours = _Model.of(adapted_model(get_robot(robot_name)))
    theirs = _Model.of(adapted_model(robot))
    head = f"{robot.model} as {robot.name}" + (f" (map {robot.model_map})" if robot.model_map else "")
    sections = [[line.strip() for line in _wrapped("", head)], _joint_section(robot), _kinematics_section(robot, ours, theirs),
                _mass_section(robot, ours, theirs), _servo_section(robot, ours, theirs),
                _settings_section(robot, ours, theirs)]
    return "\n\n".join("\n".join(line.rstrip() for line in section) for section in sections)


__all__ = ["WIDTH", "check_model"]
