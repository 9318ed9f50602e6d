"""Other models of our robots, written from our own MJCF with ``mujoco.MjSpec``: the kinds of
difference a team's model of the same robot has, for the tests, the docs, ``upright check-model``
and the ``model-variants`` experiment (no third-party file: each variant is our model changed in
code).

* ``legs_only``: the robot without head and arms (published legs-only models exist);
* ``knee_ref`` (Wolfgang): both knees measured from another zero, given as the joints' ``ref``
  (0.15 rad): the same robot, whose knee angles read 0.15 rad more;
* ``soft``: softer servos (position gain × 0.4, torque limit × 0.8) and a timestep of a quarter
  control period (Wolfgang 2.5 ms, NAO 3 ms);
* ``renamed``: the same robot under ROS-style names (joints, actuators, torso, IMU and its sensors),
  its actuators in another order (legs first), the right leg's pitch joints turning the other way,
  the left hip pitch measured from a zero 0.1 rad away; a Wolfgang without foot-pressure sensors
  and sole sites (the map names the foot geoms), a NAO with its pressure sensors, sole sites and
  head top under other names (the map names them); with its map.

``python -m upright.eval.model_variants OUT`` writes them as ``OUT/<robot>/<variant>.xml`` (and
``OUT/<robot>/renamed.map.yml``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np
import yaml

from upright.envs.robots import get_robot


@dataclass(frozen=True)
class VariantData:
    """What the variants of one robot change: which ``variants`` it has (in the order the docs
    list them), the top bodies of the head and arms (``limbs``: ``legs_only`` removes them and
    everything below them), the ``knees`` (``knee_ref``), the joints ``renamed`` turns the other way
    (``flipped``) and the one it measures from another zero (``offset_joint``), and ``renamed``'s
    foot pressure: the foot geoms per side (``foot_geoms``: no pressure sensors, no sole sites) or,
    when None, the model's own pressure sensors, sole sites and head top under other names."""

    variants: tuple[str, ...]
    limbs: tuple[str, ...]
    knees: tuple[str, ...] = ()
    flipped: tuple[str, ...] = ()
    offset_joint: str = "LHipPitch"
    foot_geoms: dict[str, list[str]] | None = None


#: The variants of each robot.
VARIANT_DATA: dict[str, VariantData] = {
    "wolfgang": VariantData(
        variants=("legs_only", "knee_ref", "soft", "renamed"), limbs=("neck", "l_shoulder", "r_shoulder"),
        knees=("LKnee", "RKnee"), flipped=("RHipPitch", "RKnee", "RAnklePitch"),
        foot_geoms={side: [f"{side[0]}_sole_plate", *(f"{side[0]}_cleat_{c}" for c in
                                                    ("l_back", "l_front", "r_front", "r_back"))]
                    for side in ("left", "right")}),
    "nao": VariantData(
        variants=("legs_only", "soft", "renamed"), limbs=("Neck", "LShoulder", "RShoulder"),
        flipped=("RHipPitch", "RKneePitch", "RAnklePitch")),
}
#: The knee's ``ref`` of ``knee_ref`` (rad).
KNEE_REF = 0.15
#: ``soft``: factors on the position gain and the torque limit, and physics steps per control period.
SOFT_GAIN, SOFT_TORQUE, SOFT_SUBSTEPS = 0.4, 0.8, 4
#: ``renamed``: the zero (rad, in the model's own angle: ours = theirs - zero) of the joint it
#: measures from another zero.
OFFSET_ZERO = -0.1


def _ros_name(joint: str) -> str:
    """``LHipPitch`` → ``l_hip_pitch``, ``HeadPan`` → ``head_pan``."""
    side = {"L": "l_", "R": "r_"}.get(joint[0]) if joint[1].isupper() else None
    rest = joint[1:] if side else joint
    words = "".join(f"_{c.lower()}" if c.isupper() else c for c in rest).lstrip("_")
    return (side or "") + words


def _ours(robot: str) -> mujoco.MjSpec:
    return mujoco.MjSpec.from_file(str(get_robot(robot).mjcf))


def _limb_bodies(spec: mujoco.MjSpec, robot: str) -> set[str]:
    """The bodies of the head and arms of ``robot`` in ``spec``: the tops :attr:`VariantData.limbs`
    and every body below them."""
    tops = VARIANT_DATA[robot].limbs
    return {*tops, *(b.name for top in tops for b in spec.body(top).find_all(mujoco.mjtObj.mjOBJ_BODY))}


def legs_only(robot: str = "wolfgang") -> mujoco.MjSpec:
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
    for name in VARIANT_DATA[robot].limbs:
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


def knee_ref(robot: str = "wolfgang") -> mujoco.MjSpec:
    """Our ``robot`` with both knees' ``ref`` at :data:`KNEE_REF`: the bodies stay, the angles read
    ``ref`` more (the range, control range and keyframes moved with them)."""
    spec = _ours(robot)
    model = spec.compile()
    for knee in VARIANT_DATA[robot].knees:
        spec.joint(knee).ref = KNEE_REF
        _shift_joint(spec, model, knee, KNEE_REF)
    return spec


def soft(robot: str = "wolfgang") -> mujoco.MjSpec:
    """Our ``robot`` with softer servos (gain × :data:`SOFT_GAIN`, torque limit × :data:`SOFT_TORQUE`)
    and :data:`SOFT_SUBSTEPS` physics steps per control period."""
    spec = _ours(robot)
    for actuator in spec.actuators:
        kp = float(actuator.gainprm[0]) * SOFT_GAIN
        actuator.gainprm[0], actuator.biasprm[1] = kp, -kp
        actuator.forcerange = np.asarray(actuator.forcerange) * SOFT_TORQUE
    spec.option.timestep = get_robot(robot).control_period / SOFT_SUBSTEPS
    return spec


def renamed(robot: str = "wolfgang") -> tuple[mujoco.MjSpec, dict]:
    """Our ``robot`` under other names and conventions (the module docstring), and its map."""
    data = VARIANT_DATA[robot]
    spec = _ours(robot)
    model = spec.compile()
    for key in list(spec.keys):  # the map's model takes our poses
        spec.delete(key)
    ours = get_robot(robot)
    # The offset joint measured from another zero: its body's frame turned about the joint's axis
    # (the body frames sit on their joint's axis), the angles shifted back.
    body = spec.joint(data.offset_joint).parent
    axis = np.asarray(spec.joint(data.offset_joint).axis, dtype=float)
    quat = np.empty(4)
    mujoco.mju_axisAngle2Quat(quat, axis, -OFFSET_ZERO)
    body.quat = quat
    _shift_joint(spec, model, data.offset_joint, OFFSET_ZERO)
    for joint in data.flipped:
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
    if data.foot_geoms is not None:  # no pressure sensors, no sole sites: the map names the foot geoms
        for name in ours.pressure_sensors:
            spec.delete(spec.sensor(name))
            spec.delete(spec.site(name))
        for name in ours.sole_sites:
            spec.delete(spec.site(name))
        feet: dict[str, object] = {"geoms": data.foot_geoms}
        sites: dict[str, str] = {}
    else:  # the pressure sensors, the sole sites and the head top under other names
        pressure = [name.replace("_fsr_", "_foot_pressure_") for name in ours.pressure_sensors]
        for name, new in zip(ours.pressure_sensors, pressure):
            spec.sensor(name).name = new
        sites = {name: f"{name}_frame" for name in (*ours.sole_sites, ours.head_top_site)}
        for name, new in sites.items():
            spec.site(name).name = new
        feet = {"pressure": pressure}
    joints: dict[str, object] = {}
    for name in ours.joint_names:
        entry: dict[str, object] = {"joint": _ros_name(name)}
        if name in data.flipped:
            entry["sign"] = -1
        if name == data.offset_joint:
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


#: The function that builds each variant from the robot's name.
_BUILDERS = {"legs_only": legs_only, "knee_ref": knee_ref, "soft": soft, "renamed": renamed}


def write_variants(out: str | Path, robots: tuple[str, ...] = tuple(VARIANT_DATA)
                   ) -> dict[tuple[str, str], tuple[Path, Path | None]]:
    """Write every variant of ``robots`` as ``out/<robot>/<name>.xml`` (and
    ``out/<robot>/renamed.map.yml``); return (robot, name) → (model, map or None)."""
    written: dict[tuple[str, str], tuple[Path, Path | None]] = {}
    for robot in robots:
        if robot not in VARIANT_DATA:
            raise ValueError(f"no variants of robot {robot!r}; robots with variants: {', '.join(VARIANT_DATA)}")
        folder = Path(out) / robot
        folder.mkdir(parents=True, exist_ok=True)
        for name in VARIANT_DATA[robot].variants:
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


__all__ = ["KNEE_REF", "OFFSET_ZERO", "SOFT_GAIN", "SOFT_SUBSTEPS", "SOFT_TORQUE", "VARIANT_DATA",
           "VariantData", "knee_ref", "legs_only", "renamed", "soft", "write_variants"]
