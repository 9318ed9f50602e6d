"""Other models of our robots, written from our own MJCF with ``mujoco.MjSpec``: the kinds of
difference a team's model of the same robot has, for the tests, the docs, ``upright check-model``
and the ``model-variants`` experiment (no third-party file: each variant is our model changed in
code).

* ``legs_only``: the robot without head and arms (published legs-only models exist);
* ``knee_ref``: both knees measured from another zero, given as the joints' ``ref`` (0.15 rad):
  the same robot, whose knee angles read 0.15 rad more;
* ``soft``: softer servos (position gain × 0.4, torque limit × 0.8) and a timestep of a quarter
  control period (Wolfgang 2.5 ms, NAO 3 ms);
* ``renamed``: the same robot under ROS-style names (joints, actuators, torso, IMU and its sensors),
  its actuators in another order (legs first), the right leg's pitch joints turning the other way,
  the left hip pitch measured from a zero 0.1 rad away, and the feet in one of a model map's two
  forms: without foot-pressure sensors and sole sites (the map names the foot geoms), or with the
  pressure sensors, sole sites and head top under other names (the map names them); with its map.

Which robot has which variant, and every name of a body, joint or geom a variant needs, come from
the robot's description (:class:`~upright.envs.robots.RobotSpec`: ``model_variants``,
``renamed_keeps_pressure``, ``head_arm_bodies``, ``leg_pitch_joints``, ``foot_geoms``); this module
holds the recipe alone.

``python -m upright.eval.model_variants OUT`` writes them as ``OUT/<robot>/<variant>.xml`` (and
``OUT/<robot>/renamed.map.yml``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import mujoco
import numpy as np
import yaml

from upright.envs.robots import ROBOTS, RobotSpec, get_robot
from upright.envs.robots.user_model import SIDES

#: robot name → the variants it has (:attr:`RobotSpec.model_variants <upright.envs.robots.RobotSpec>`,
#: in the order the docs list them), for the robots that have any.
ROBOT_VARIANTS: dict[str, tuple[str, ...]] = {name: robot.model_variants for name, robot in ROBOTS.items()
                                              if robot.model_variants}
#: The knee's ``ref`` of ``knee_ref`` (rad).
KNEE_REF = 0.15
#: ``soft``: factors on the position gain and the torque limit, and physics steps per control period.
SOFT_GAIN, SOFT_TORQUE, SOFT_SUBSTEPS = 0.4, 0.8, 4
#: ``renamed``: the zero (rad, in the model's own angle: ours = theirs - zero) of the joint it
#: measures from another zero.
OFFSET_ZERO = -0.1


def flipped_joints(robot: RobotSpec) -> tuple[str, ...]:
    """The joints ``renamed`` turns the other way: the right leg's pitch joints."""
    return robot.leg_pitch_joints[1]


def offset_joint(robot: RobotSpec) -> str:
    """The joint ``renamed`` measures from another zero (:data:`OFFSET_ZERO`): the left hip pitch."""
    return robot.leg_pitch_joints[0][0]


def _ros_name(joint: str) -> str:
    """``LHipPitch`` → ``l_hip_pitch``, ``HeadPan`` → ``head_pan``."""
    side = {"L": "l_", "R": "r_"}.get(joint[0]) if joint[1].isupper() else None
    rest = joint[1:] if side else joint
    words = "".join(f"_{c.lower()}" if c.isupper() else c for c in rest).lstrip("_")
    return (side or "") + words


def _ours(robot: str) -> mujoco.MjSpec:
    return mujoco.MjSpec.from_file(str(get_robot(robot).mjcf))


def _limb_bodies(spec: mujoco.MjSpec, robot: str) -> set[str]:
    """The bodies of the head and arms of ``robot`` in ``spec``: the tops (the description's
    ``head_arm_bodies``) and every body below them."""
    tops = get_robot(robot).head_arm_bodies
    return {*tops, *(b.name for top in tops for b in spec.body(top).find_all(mujoco.mjtObj.mjOBJ_BODY))}


def legs_only(robot: str) -> mujoco.MjSpec:
    """Our ``robot`` without the head and the arms: their bodies, actuators and the contact
    exclusions naming them, and the keyframes (their joint vectors no longer fit)."""
    spec = _ours(robot)
    removed = _limb_bodies(spec, robot)
    joints = {j.name for name in removed for j in spec.body(name).joints}
    for actuator in [a for a in spec.actuators if a.target in joints]:
        spec.delete(actuator)
    for exclude in [e for e in spec.excludes if {e.bodyname1, e.bodyname2} & removed]:
        spec.delete(exclude)
    for key in list(spec.keys):
        spec.delete(key)
    for name in get_robot(robot).head_arm_bodies:
        spec.delete(spec.body(name))
    return spec


def _shift_joint(spec: mujoco.MjSpec, model: mujoco.MjModel, joint: str, shift: float) -> None:
    """Move ``joint``'s angle by ``shift`` (rad): range, its actuator's control range and the
    keyframes (qpos and ctrl)."""
    j = spec.joint(joint)
    j.range = np.asarray(j.range) + shift
    actuator = spec.actuator(joint)
    actuator.ctrlrange = np.asarray(actuator.ctrlrange) + shift
    qadr, act = int(model.jnt_qposadr[model.joint(joint).id]), model.actuator(joint).id
    for key in spec.keys:
        key.qpos = np.asarray(key.qpos) + shift * (np.arange(len(key.qpos)) == qadr)
        key.ctrl = np.asarray(key.ctrl) + shift * (np.arange(len(key.ctrl)) == act)


def knee_ref(robot: str) -> mujoco.MjSpec:
    """Our ``robot`` with both knees' ``ref`` at :data:`KNEE_REF`: the bodies stay, the angles read
    ``ref`` more (the range, control range and keyframes moved with them)."""
    spec = _ours(robot)
    model = spec.compile()
    for knee in get_robot(robot).knee_joints:
        spec.joint(knee).ref = KNEE_REF
        _shift_joint(spec, model, knee, KNEE_REF)
    return spec


def soft(robot: str) -> mujoco.MjSpec:
    """Our ``robot`` with softer servos (gain × :data:`SOFT_GAIN`, torque limit × :data:`SOFT_TORQUE`)
    and :data:`SOFT_SUBSTEPS` physics steps per control period."""
    spec = _ours(robot)
    for actuator in spec.actuators:
        kp = float(actuator.gainprm[0]) * SOFT_GAIN
        actuator.gainprm[0], actuator.biasprm[1] = kp, -kp
        actuator.forcerange = np.asarray(actuator.forcerange) * SOFT_TORQUE
    spec.option.timestep = get_robot(robot).control_period / SOFT_SUBSTEPS
    return spec


def renamed(robot: str) -> tuple[mujoco.MjSpec, dict]:
    """Our ``robot`` under other names and conventions (the module docstring), and its map."""
    ours = get_robot(robot)
    offset, flipped = offset_joint(ours), flipped_joints(ours)
    spec = _ours(robot)
    model = spec.compile()
    for key in list(spec.keys):  # the map's model takes our poses
        spec.delete(key)
    # The offset joint measured from another zero: its body's frame turned about the joint's axis
    # (the body frames sit on their joint's axis), the angles shifted back.
    body = spec.joint(offset).parent
    axis = np.asarray(spec.joint(offset).axis, dtype=float)
    quat = np.empty(4)
    mujoco.mju_axisAngle2Quat(quat, axis, -OFFSET_ZERO)
    body.quat = quat
    _shift_joint(spec, model, offset, OFFSET_ZERO)
    for joint in flipped:
        j = spec.joint(joint)
        j.axis = -np.asarray(j.axis)
        j.range = -np.asarray(j.range)[::-1]
        a = spec.actuator(joint)
        a.ctrlrange = -np.asarray(a.ctrlrange)[::-1]
    # The actuators in another order (legs, then head and arms), under ROS-style names.
    limb_joints = {j.name for name in _limb_bodies(spec, robot) for j in spec.body(name).joints}
    order = [a for a in ours.actuator_names if a not in limb_joints]
    order += [a for a in ours.actuator_names if a not in order]
    old = {a.name: a for a in spec.actuators}
    for name in order:
        source = old[name]
        copy = spec.add_actuator(default=source.classname, name=f"{_ros_name(name)}_motor",
                                 target=_ros_name(name), trntype=mujoco.mjtTrn.mjTRN_JOINT)
        copy.set_to_position(kp=float(source.gainprm[0]))
        copy.forcerange, copy.forcelimited = source.forcerange, source.forcelimited
        copy.ctrlrange, copy.ctrllimited = source.ctrlrange, source.ctrllimited
    for actuator in old.values():
        spec.delete(actuator)
    for name in ours.joint_names:
        spec.joint(name).name = _ros_name(name)
    for eq in spec.equalities:  # a coupling of joints (NAO's hip yaw-pitch) names them
        if eq.type == mujoco.mjtEq.mjEQ_JOINT:
            eq.name1, eq.name2 = _ros_name(eq.name1), _ros_name(eq.name2) if eq.name2 else eq.name2
    spec.body(ours.torso_body).name = "base_link"
    for exclude in spec.excludes:
        exclude.bodyname1 = "base_link" if exclude.bodyname1 == ours.torso_body else exclude.bodyname1
        exclude.bodyname2 = "base_link" if exclude.bodyname2 == ours.torso_body else exclude.bodyname2
    # The IMU under other names.
    spec.site(ours.imu_site).name = "imu_link"
    for sensor, name in ((ours.gyro_sensor, "gyro"), (ours.accel_sensor, "accelerometer"),
                         (ours.quat_sensor, "orientation")):
        spec.sensor(sensor).name = name
        spec.sensor(name).objname = "imu_link"
    if not ours.renamed_keeps_pressure:  # no pressure sensors, no sole sites: the map names the foot geoms
        for name in ours.pressure_sensors:
            spec.delete(spec.sensor(name))
            spec.delete(spec.site(name))
        for name in ours.sole_sites:
            spec.delete(spec.site(name))
        feet: dict[str, object] = {"geoms": {side: list(geoms) for side, geoms in zip(SIDES, ours.foot_geoms)}}
        sites: dict[str, str] = {}
    else:  # the pressure sensors, the sole sites and the head top under other names
        pressure = _ros_pressure_names(ours)
        for name, new in zip(ours.pressure_sensors, pressure):
            spec.sensor(name).name = new
        sites = {name: f"{name}_frame" for name in (*ours.sole_sites, ours.head_top_site)}
        for name, new in sites.items():
            spec.site(name).name = new
        feet = {"pressure": pressure}
    joints: dict[str, object] = {}
    for name in ours.joint_names:
        entry: dict[str, object] = {"joint": _ros_name(name)}
        if name in flipped:
            entry["sign"] = -1
        if name == offset:
            entry["zero"] = OFFSET_ZERO
        joints[name] = entry if len(entry) > 1 else _ros_name(name)
    model_map = {
        "robot": robot,
        "joints": joints,
        "actuators": {name: f"{_ros_name(name)}_motor" for name in ours.actuator_names},
        "torso": "base_link",
        "imu": {"gyro": "gyro", "accel": "accelerometer", "quat": "orientation"},
        "feet": feet,
        **({"sites": sites} if sites else {}),
    }
    return spec, model_map


def _ros_pressure_names(robot: RobotSpec) -> list[str]:
    """``robot``'s pressure sensors (:attr:`~upright.envs.robots.RobotSpec.pressure_sensors` order)
    under ROS-style names: ``l_foot_pressure_`` or ``r_foot_pressure_``, then what follows the
    prefix the sensors of that foot share (``l_fsr_fl`` → ``l_foot_pressure_fl``)."""
    names = []
    for side, sensors in zip("lr", robot.foot_pressure_sensors):
        shared = len(os.path.commonprefix(sensors)) if len(sensors) > 1 else 0
        names += [f"{side}_foot_pressure_{name[shared:]}" for name in sensors]
    return names


def _check_names(robot: RobotSpec, variant: str) -> None:
    """A ValueError naming what ``robot``'s description lacks for ``variant``."""
    needs = {"legs_only": ("head_arm_bodies",), "knee_ref": ("leg_pitch_joints",),
             "renamed": ("leg_pitch_joints",) + (() if robot.renamed_keeps_pressure else ("foot_geoms",))}
    for field in needs.get(variant, ()):
        if not any(getattr(robot, field)):
            raise ValueError(f"variant {variant!r} of robot {robot.name!r} needs its description's {field}")


#: The function that builds each variant from the robot's name.
_BUILDERS = {"legs_only": legs_only, "knee_ref": knee_ref, "soft": soft, "renamed": renamed}


def write_variants(out: str | Path, robots: tuple[str, ...] = tuple(ROBOT_VARIANTS)
                   ) -> dict[tuple[str, str], tuple[Path, Path | None]]:
    """Write every variant of ``robots`` as ``out/<robot>/<name>.xml`` (and
    ``out/<robot>/renamed.map.yml``); return (robot, name) → (model, map or None)."""
    written: dict[tuple[str, str], tuple[Path, Path | None]] = {}
    for robot in robots:
        if robot not in ROBOT_VARIANTS:
            raise ValueError(f"no variants of robot {robot!r}; robots with variants: {', '.join(ROBOT_VARIANTS)}")
        unknown = [name for name in ROBOT_VARIANTS[robot] if name not in _BUILDERS]
        if unknown:
            raise ValueError(f"robot {robot!r} names unknown variants {unknown}; valid: {', '.join(_BUILDERS)}")
        for name in ROBOT_VARIANTS[robot]:
            _check_names(get_robot(robot), name)
        folder = Path(out) / robot
        folder.mkdir(parents=True, exist_ok=True)
        for name in ROBOT_VARIANTS[robot]:
            built = _BUILDERS[name](robot)
            spec, model_map = built if isinstance(built, tuple) else (built, None)
            path = folder / f"{name}.xml"
            path.write_text(spec.to_xml())
            map_path = None
            if model_map is not None:
                map_path = folder / f"{name}.map.yml"
                map_path.write_text(yaml.safe_dump(model_map, sort_keys=False))
            written[robot, name] = (path, map_path)
    return written


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m upright.eval.model_variants OUT", file=sys.stderr)
        return 2
    for (robot, name), (model, model_map) in write_variants(argv[0]).items():
        print(f"{robot} {name}: {model}" + (f" (map {model_map})" if model_map else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["KNEE_REF", "OFFSET_ZERO", "ROBOT_VARIANTS", "SOFT_GAIN", "SOFT_SUBSTEPS", "SOFT_TORQUE",
           "flipped_joints", "knee_ref", "legs_only", "offset_joint", "renamed", "soft", "write_variants"]
