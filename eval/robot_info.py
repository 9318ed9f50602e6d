"""The ``upright info`` printout of a robot: joints, limits, servos, masses, timing, from its model."""

from __future__ import annotations

import mujoco
import numpy as np

from upright.envs.robots import get_robot


def robot_info(robot_name: str) -> str:
    """Joints with axes, limits and servo data, bodies with masses, and the totals of one robot,
    read from the compiled MJCF (the same model the simulation uses)."""
    robot = get_robot(robot_name)
    m = mujoco.MjModel.from_xml_path(str(robot.mjcf))
    lines = [
        f"{robot.name}: {robot.mjcf.name}",
        f"  control period {robot.control_period * 1e3:.0f} ms, actuation delay {robot.delay_cycles} cycles "
        f"({robot.delay_cycles * robot.control_period * 1e3:.0f} ms), physics timestep {m.opt.timestep * 1e3:.1f} ms",
        f"  {len(robot.joint_names)} hinge joints, {m.nu} position actuators, poses: {', '.join(robot.poses)}",
        "",
        f"  {'joint':<16} {'axis':<22} {'lower°':>8} {'upper°':>8} {'stall N·m':>9} {'no-load rad/s':>13} {'kp N·m/rad':>10}",
    ]
    for name in robot.joint_names:
        j = m.joint(name)
        act = robot.coupled_joints.get(name, name)
        a = m.actuator(act)
        force = float(a.forcerange[1])
        damping = float(m.dof_damping[j.dofadr[0]])
        speed = force / damping if damping > 0 else float("inf")
        axis = "(" + ", ".join(f"{v:+.3f}" for v in j.axis) + ")"
        via = "" if act == name else f"  (via {act})"
        lines.append(
            f"  {name:<16} {axis:<22} {np.rad2deg(j.range[0]):>8.2f} {np.rad2deg(j.range[1]):>8.2f} "
            f"{force:>9.2f} {speed:>13.2f} {float(a.gainprm[0]):>10.1f}{via}"
        )
    lines += ["", f"  {'body':<16} {'mass kg':>8}"]
    for b in range(1, m.nbody):
        lines.append(f"  {m.body(b).name:<16} {m.body_mass[b]:>8.4f}")
    total = float(m.body_subtreemass[1])
    lines.append(f"  total mass {total:.3f} kg (reference {robot.nominal_mass:.3f} kg, "
                 f"{100 * (total / robot.nominal_mass - 1):+.2f} %)")
    sensors = [m.sensor(i).name for i in range(m.nsensor)]
    lines.append(f"  sensors: {', '.join(sensors)}")
    return "\n".join(lines)
