"""Other models of our robots, written from our own MJCF with ``mujoco.MjSpec``: the kinds of
difference a team's model of the same robot has, for the tests, the docs and ``upright
check-model`` (no third-party file: each variant is our model changed in code).

* ``legs_only``: a Wolfgang without head and arms (published legs-only models exist);
* ``knee_ref``: both knees measured from another zero, given as the joints' ``ref`` (0.15 rad): the
  same robot, whose knee angles read 0.15 rad more;
* ``soft``: softer servos (position gain × 0.4, torque limit × 0.8) and a 2.5 ms timestep;
* ``renamed``: the same robot under ROS-style names (joints, actuators, torso, IMU and its sensors),
  its actuators in another order, the right leg's pitch joints turning the other way, the left hip
  pitch measured from a zero 0.1 rad away, and no foot-pressure sensors (the map names the foot
  geoms); with its map.

``python -m upright.eval.model_variants OUT`` writes them as ``OUT/<variant>.xml`` (and
``OUT/renamed.map.yml``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import mujoco
import numpy as np
import yaml

from upright.envs.robots import get_robot

#: The variants, in the order the docs list them.
VARIANTS = ("legs_only", "knee_ref", "soft", "renamed")
#: The knee's ``ref`` of ``knee_ref`` (rad).
KNEE_REF = 0.15
#: ``soft``: factors on the position gain and the torque limit, and the timestep (s).
SOFT_GAIN, SOFT_TORQUE, SOFT_TIMESTEP = 0.4, 0.8, 0.0025
#: ``renamed``: the joints that turn the other way, and the joint measured from another zero with
#: that zero (rad, in its own angle: ours = theirs - zero).
FLIPPED = ("RHipPitch", "RKnee", "RAnklePitch")
OFFSET_JOINT, OFFSET_ZERO = "LHipPitch", -0.1


def _ros_name(joint: str) -> str:
    """``LHipPitch`` → ``l_hip_pitch``, ``HeadPan`` → ``head_pan``."""
    side = {"L": "l_", "R": "r_"}.get(joint[0]) if joint[1].isupper() else None
    rest = joint[1:] if side else joint
    words = "".join(f"_{c.lower()}" if c.isupper() else c for c in rest).lstrip("_")
    return (side or "") + words


def _wolfgang() -> mujoco.MjSpec:
    return mujoco.MjSpec.from_file(str(get_robot("wolfgang").mjcf))


def legs_only() -> mujoco.MjSpec:
    """Our Wolfgang without the head (neck, head) and the arms: their bodies, actuators and the
    contact exclusions naming them, and the keyframes (their joint vectors no longer fit)."""
    spec = _wolfgang()
    removed = {"neck", "head", "l_shoulder", "l_upper_arm", "l_lower_arm", "r_shoulder", "r_upper_arm",
               "r_lower_arm"}
    joints = {j.name for name in removed for j in spec.body(name).joints}
    for actuator in [a for a in spec.actuators if a.target in joints]:
        spec.delete(actuator)
    for exclude in [e for e in spec.excludes if {e.bodyname1, e.bodyname2} & removed]:
        spec.delete(exclude)
    for key in list(spec.keys):
        spec.delete(key)
    for name in ("neck", "l_shoulder", "r_shoulder"):
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


def knee_ref() -> mujoco.MjSpec:
    """Our Wolfgang with both knees' ``ref`` at :data:`KNEE_REF`: the bodies stay, the angles read
    ``ref`` more (the range, control range and keyframes moved with them)."""
    spec = _wolfgang()
    model = spec.compile()
    for knee in ("LKnee", "RKnee"):
        spec.joint(knee).ref = KNEE_REF
        _shift_joint(spec, model, knee, KNEE_REF)
    return spec


def soft() -> mujoco.MjSpec:
    """Our Wolfgang with softer servos (gain × :data:`SOFT_GAIN`, torque limit × :data:`SOFT_TORQUE`)
    and the timestep :data:`SOFT_TIMESTEP`."""
    spec = _wolfgang()
    for actuator in spec.actuators:
        kp = float(actuator.gainprm[0]) * SOFT_GAIN
        actuator.gainprm[0], actuator.biasprm[1] = kp, -kp
        actuator.forcerange = np.asarray(actuator.forcerange) * SOFT_TORQUE
    spec.option.timestep = SOFT_TIMESTEP
    return spec


def renamed() -> tuple[mujoco.MjSpec, dict]:
    """Our Wolfgang under other names and conventions (the module docstring), and its map."""
    spec = _wolfgang()
    model = spec.compile()
    for key in list(spec.keys):  # the map's model takes our poses
        spec.delete(key)
    robot = get_robot("wolfgang")
    # The left hip pitch measured from another zero: the thigh's frame turned about the joint's axis
    # (the body frames sit on their joint's axis), the angles shifted back.
    body = spec.body("l_upper_leg")
    axis = np.asarray(spec.joint(OFFSET_JOINT).axis, dtype=float)
    quat = np.empty(4)
    mujoco.mju_axisAngle2Quat(quat, axis, -OFFSET_ZERO)
    body.quat = quat
    _shift_joint(spec, model, OFFSET_JOINT, OFFSET_ZERO)
    for joint in FLIPPED:
        j = spec.joint(joint)
        j.axis = -np.asarray(j.axis)
        j.range = -np.asarray(j.range)[::-1]
        a = spec.actuator(joint)
        a.ctrlrange = -np.asarray(a.ctrlrange)[::-1]
    # The actuators in another order (legs, then head and arms), under ROS-style names.
    order = [a for a in robot.actuator_names if a[1:] in ("HipYaw", "HipRoll", "HipPitch", "Knee", "AnklePitch",
                                                           "AnkleRoll")]
    order += [a for a in robot.actuator_names if a not in order]
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
    for name in robot.joint_names:
        spec.joint(name).name = _ros_name(name)
    spec.body("torso").name = "base_link"
    for exclude in spec.excludes:
        exclude.bodyname1 = "base_link" if exclude.bodyname1 == "torso" else exclude.bodyname1
        exclude.bodyname2 = "base_link" if exclude.bodyname2 == "torso" else exclude.bodyname2
    # The IMU under other names; no pressure sensors, no sole sites (the map names the foot geoms).
    spec.site("imu").name = "imu_link"
    for sensor, name in (("imu_gyro", "gyro"), ("imu_accel", "accelerometer"), ("imu_quat", "orientation")):
        spec.sensor(sensor).name = name
        spec.sensor(name).objname = "imu_link"
    for name in robot.pressure_sensors:
        spec.delete(spec.sensor(name))
        spec.delete(spec.site(name))
    for name in robot.sole_sites:
        spec.delete(spec.site(name))
    joints: dict[str, object] = {}
    for name in robot.joint_names:
        entry: dict[str, object] = {"joint": _ros_name(name)}
        if name in FLIPPED:
            entry["sign"] = -1
        if name == OFFSET_JOINT:
            entry["zero"] = OFFSET_ZERO
        joints[name] = entry if len(entry) > 1 else _ros_name(name)
    model_map = {
        "robot": "wolfgang",
        "joints": joints,
        "actuators": {name: f"{_ros_name(name)}_motor" for name in robot.actuator_names},
        "torso": "base_link",
        "imu": {"gyro": "gyro", "accel": "accelerometer", "quat": "orientation"},
        "feet": {"geoms": {side: [f"{side[0]}_sole_plate", *(f"{side[0]}_cleat_{c}" for c in
                                                             ("l_back", "l_front", "r_front", "r_back"))]
                           for side in ("left", "right")}},
    }
    return spec, model_map


def write_variants(out: str | Path) -> dict[str, tuple[Path, Path | None]]:
    """Write every variant as ``out/<name>.xml`` (and ``out/renamed.map.yml``); return name →
    (model, map or None)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, tuple[Path, Path | None]] = {}
    for name in VARIANTS:
        built = {"legs_only": legs_only, "knee_ref": knee_ref, "soft": soft, "renamed": renamed}[name]()
        spec, model_map = built if isinstance(built, tuple) else (built, None)
        path = out / f"{name}.xml"
        path.write_text(spec.to_xml())
        map_path = None
        if model_map is not None:
            map_path = out / f"{name}.map.yml"
            map_path.write_text(yaml.safe_dump(model_map, sort_keys=False))
        written[name] = (path, map_path)
    return written


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m upright.eval.model_variants OUT", file=sys.stderr)
        return 2
    for name, (model, model_map) in write_variants(argv[0]).items():
        print(f"{name}: {model}" + (f" (map {model_map})" if model_map else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["VARIANTS", "knee_ref", "legs_only", "renamed", "soft", "write_variants"]
