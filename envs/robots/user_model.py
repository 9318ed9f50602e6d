"""A user's own MJCF of one of our robots, entered through a model map.

A team's model of a NAO or a Wolfgang names its joints, actuators, sensors and bodies its own way,
may measure a joint from another zero or turn it the other way, and may lack joints (a legs-only
model). The map (a YAML file) says how its parts are ours; :func:`adapted_model` then rewrites the
model (a :class:`mujoco.MjSpec`) into our conventions, so that the simulation, the observation, the
baselines and the trained policies see the robot of :class:`~upright.envs.robots.RobotSpec`:

* joints and actuators carry our names, the actuators in our actuator order;
* every joint angle is ours: ``ours = sign · (theirs - zero)`` (rad), ``zero`` from the map or the
  joint's ``ref`` (the joint's own definition of its zero), ``sign`` ±1 from the map: the joint's
  ``ref``, range, axis and its actuator's control range are rewritten, the bodies stay put;
* a joint the model lacks is held: a massless stand-in (a hinge on the torso held by an equality
  constraint at the standing pose's angle, with an actuator of zero gain) keeps every joint vector
  in our order; :attr:`RobotSpec.missing_joints` lists them;
* the IMU (a site, or the gyro, accelerometer and orientation sensors) and the foot pressure
  (sensors, or foot geoms whose contact forces are summed per quarter of the sole around our
  sensor points) get our sensor names; the sole frames and the head top come from the map, from
  the foot geoms and from our model;
* the poses are ours (the keyframes of our MJCF, in our angles); the model's own keyframes go.

The user's actuators (position servos: gain, torque limit, damping, armature, friction loss),
masses, contact settings and timestep stay as they are.

Map format (every key optional; the schema :func:`map_schema`, an unknown key a ValueError naming
the file, the key and the valid keys)::

    robot: wolfgang                 # checked against the robot the model is used for
    joints:                         # our joint -> theirs: a name, or name with zero (rad) and sign
      LKnee: l_knee
      RKnee: {joint: r_knee, sign: -1}
      LHipPitch: {joint: l_hip_pitch, zero: 0.05}
    actuators: {LKnee: l_knee_motor}   # our actuator -> theirs (default: the one on the joint)
    zero_from_ref: true             # a joint's zero is its ref unless the map gives one
    torso: base_link                # their torso body (carries the free joint)
    imu: {site: imu_link}           # or {gyro: NAME, accel: NAME, quat: NAME}: their sensors
    feet:
      pressure: [8 sensor names]    # in our order (left, then right), newtons
      geoms: {left: [l_sole_geom], right: [r_sole_geom]}   # or: contact forces of these geoms
    sites: {l_sole: l_sole_frame, r_sole: r_sole_frame, head_top: head_top}

A joint of ours the model does not have (under its mapped name, or ours) is missing; a joint the
map names that the model does not have is an error (a typo is not a missing joint).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

import mujoco
import numpy as np
from pydantic import BeforeValidator, Field, create_model, model_validator

from upright.envs.files import read_yaml
from upright.envs.robots.spec import RobotSpec
from upright.envs.schema import Schema, validate

SIDES = ("left", "right")
#: Mass (kg) and inertia (kg m²) of a missing joint's stand-in, and the armature (kg m²) that keeps
#: the constraint holding it well conditioned.
STAND_IN_MASS = 1e-6
STAND_IN_INERTIA = 1e-9
STAND_IN_ARMATURE = 1e-3
#: How far the quarter-sole boxes of geom-based foot pressure reach past the foot geoms' outline
#: (m), and their half height about the sole plane (m).
SOLE_MARGIN = 0.005
SOLE_HALF_HEIGHT = 0.015


@dataclass(frozen=True)
class JointMap:
    """One of our joints in the user's model: its name there, and ``ours = sign · (theirs - zero)``
    (rad; ``zero`` None: the joint's ``ref``, or 0 when the map turns ``zero_from_ref`` off)."""

    name: str
    zero: float | None = None
    sign: int = 1


@dataclass(frozen=True)
class ModelMap:
    """A parsed model map (see the module docstring); :func:`read_model_map` builds it."""

    source: str = "(no map)"
    joints: Mapping[str, JointMap] = field(default_factory=dict)
    actuators: Mapping[str, str] = field(default_factory=dict)
    zero_from_ref: bool = True
    torso: str | None = None
    imu: Mapping[str, str] = field(default_factory=dict)
    pressure: tuple[str, ...] | None = None
    foot_geoms: Mapping[str, tuple[str, ...]] | None = None
    sites: Mapping[str, str] = field(default_factory=dict)


def _fail(source: str, message: str) -> ValueError:
    return ValueError(f"{source}: {message}")


#: A name in the user's model (not empty).
Name = Annotated[str, Field(min_length=1)]
#: One name, or a list of them (at least one).
Names = Annotated[tuple[Name, ...], BeforeValidator(lambda value: (value,) if isinstance(value, str) else value),
                  Field(min_length=1)]


class JointEntry(Schema):
    """One of our joints in a map file: its name in the model, ``zero`` (rad) and ``sign``."""

    joint: Name
    zero: float | None = None
    sign: Literal[1, -1] = 1


class Imu(Schema):
    """The model's IMU: a ``site`` (we add the sensors), or its ``gyro``, ``accel`` and ``quat``
    sensors."""

    site: Name | None = None
    gyro: Name | None = None
    accel: Name | None = None
    quat: Name | None = None

    @model_validator(mode="after")
    def _site_or_sensors(self) -> Imu:
        given = {name for name in Imu.model_fields if getattr(self, name) is not None}
        if given and given not in ({"site"}, {"gyro", "accel", "quat"}):
            raise ValueError(f"needs either site, or gyro, accel and quat; got {', '.join(sorted(given))}")
        return self


class FootGeoms(Schema):
    """The model's foot geoms per side, whose contact forces make the foot pressure."""

    left: Names
    right: Names


class Feet(Schema):
    """The model's foot pressure: its ``pressure`` sensors in our order (left foot's, then the
    right's; newtons), or its foot ``geoms``."""

    pressure: Names | None = None
    geoms: FootGeoms | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Feet:
        if self.pressure is not None and self.geoms is not None:
            raise ValueError("takes either pressure (sensors) or geoms (contact forces), not both")
        return self


class MapFile(Schema):
    """A model map file (see the module docstring); :func:`map_schema` makes it one robot's, with
    that robot's joint, actuator and site names as the keys of ``joints``, ``actuators`` and
    ``sites``."""

    #: Checked against the robot the model is used for.
    robot: str | None = None
    joints: dict[str, Name | JointEntry] = {}
    actuators: dict[str, Name] = {}
    #: A joint's zero is its ``ref`` unless the map gives one.
    zero_from_ref: bool = True
    torso: Name | None = None
    imu: Imu = Imu()
    feet: Feet = Feet()
    sites: dict[str, Name] = {}


def map_schema(robot: RobotSpec) -> type[MapFile]:
    """The schema of ``robot``'s model maps: :class:`MapFile` whose ``robot`` is its name, whose
    ``joints``, ``actuators`` and ``sites`` take its joint, actuator and site names as keys, and
    whose ``feet.pressure`` names as many sensors as it has."""
    return _map_schema(robot.name, robot.joint_names, robot.actuator_names, (*robot.sole_sites, robot.head_top_site),
                       len(robot.pressure_sensors))


@cache
def _map_schema(robot: str, joints: tuple[str, ...], actuators: tuple[str, ...], sites: tuple[str, ...],
                pressure: int) -> type[MapFile]:
    """:func:`map_schema` of the robot named ``robot`` with these names and pressure sensors, made once."""
    def keys(model: str, names: tuple[str, ...], kind: Any) -> type[Schema]:
        return create_model(f"{robot.capitalize()}{model}", __base__=Schema,
                            **{name: (kind | None, None) for name in names})

    feet = create_model(f"{robot.capitalize()}Feet", __base__=Feet,
                        pressure=(Annotated[Names, Field(min_length=pressure, max_length=pressure)] | None, None))
    return create_model(f"{robot.capitalize()}ModelMap", __base__=MapFile,
                        robot=(Literal[robot] | None, None),  # type: ignore[valid-type]
                        joints=_empty(keys("Joints", joints, Name | JointEntry)),
                        actuators=_empty(keys("Actuators", actuators, Name)),
                        feet=_empty(feet), sites=_empty(keys("Sites", sites, Name)))


def _empty(model: type[Schema]) -> tuple[type[Schema], Any]:
    """A field of type ``model`` whose default is an empty one (every key left out)."""
    return model, Field(default_factory=model)


def parse_model_map(data: Any, robot: RobotSpec, source: str = "(map)") -> ModelMap:
    """A :class:`ModelMap` from the mapping ``data`` (a map file's contents) for ``robot``, checked
    with :func:`map_schema`; ValueError naming ``source``, the bad key or value and what is valid."""
    checked = validate(map_schema(robot), {} if data is None else data, source)
    given = checked.model_dump(exclude_none=True)
    joints = {ours: JointMap(entry) if isinstance(entry, str) else JointMap(entry.joint, entry.zero, entry.sign)
              for ours, entry in ((k, getattr(checked.joints, k)) for k in given.get("joints", {}))}
    geoms = checked.feet.geoms
    return ModelMap(source=source, joints=joints, actuators=given.get("actuators", {}),
                    zero_from_ref=checked.zero_from_ref, torso=checked.torso, imu=given.get("imu", {}),
                    pressure=checked.feet.pressure,
                    foot_geoms=None if geoms is None else {side: getattr(geoms, side) for side in SIDES},
                    sites=given.get("sites", {}))


def read_model_map(path: str | Path | None, robot: RobotSpec) -> ModelMap:
    """The model map in the YAML file ``path`` (None: the empty map, every name ours) for
    ``robot``; ValueError naming the file for a missing or malformed one."""
    if path is None:
        return ModelMap()
    return parse_model_map(read_yaml(path, "model map"), robot, str(path))


def load_model_spec(path: str | Path) -> mujoco.MjSpec:
    """The MJCF file ``path`` as an MjSpec; ValueError naming the file if it is missing or does not
    load."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"model {str(path)!r} does not exist")
    try:
        return mujoco.MjSpec.from_file(str(path))
    except Exception as error:  # MuJoCo's parser raises its own error types
        raise ValueError(f"model {str(path)!r} does not load: {error}") from None


def _hinges(spec: mujoco.MjSpec) -> list[mujoco.MjsJoint]:
    return [j for j in spec.joints if j.type == mujoco.mjtJoint.mjJNT_HINGE]


def joint_names_in_model(spec: mujoco.MjSpec, robot: RobotSpec, model_map: ModelMap) -> dict[str, str]:
    """Our joint → its name in the user's model ``spec``, for the joints it has (the others are
    missing); ValueError for a joint the map names that the model lacks, and for a hinge of the model
    that is none of ours."""
    hinges = {j.name for j in _hinges(spec)}
    present = {}
    for ours in robot.joint_names:
        entry = model_map.joints.get(ours)
        if entry is not None and entry.name not in hinges:
            raise _fail(model_map.source, f"joints.{ours} names {entry.name!r}, which is no hinge joint of the "
                                          f"model; its hinges: {', '.join(sorted(hinges))}")
        theirs = entry.name if entry is not None else ours
        if theirs in hinges:
            present[ours] = theirs
    extra = sorted(hinges - set(present.values()))
    if extra:
        raise ValueError(f"the model's joints {', '.join(extra)} are none of {robot.name}'s: name them in the model "
                         f"map's joints ({', '.join(robot.joint_names)})")
    for j in spec.joints:
        if j.type not in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_FREE):
            raise ValueError(f"the model's joint {j.name!r} is neither a hinge nor the torso's free joint")
    return present


def missing_joints(model: str | Path, robot: RobotSpec, model_map: ModelMap) -> tuple[str, ...]:
    """Our joints (joint order) that the user's ``model`` lacks under ``model_map``."""
    present = joint_names_in_model(load_model_spec(model), robot, model_map)
    return tuple(j for j in robot.joint_names if j not in present)


def with_model(robot: RobotSpec, model: str | Path | None, model_map: str | Path | None = None) -> RobotSpec:
    """``robot`` simulated on the user's MJCF ``model`` through the map file ``model_map`` (see the
    module docstring); ``robot`` itself when both are None. The model is read here, so a bad file,
    map or joint fails now, with its name."""
    if model is None:
        if model_map is not None:
            raise ValueError(f"model_map {str(model_map)!r} needs model: the MJCF it maps")
        return robot
    parsed = read_model_map(model_map, robot)
    spec = dataclasses.replace(robot, model=Path(model), model_map=None if model_map is None else Path(model_map),
                               missing_joints=missing_joints(model, robot, parsed))
    adapted_model(spec).compile()  # every name, actuator and sensor resolves
    return spec


# ---------------------------------------------------------------------- the rewrite
#: The object types whose names a reference of each kind may hold (sensors' objtype and reftype).
_OBJECT_TYPES = {"joint": (mujoco.mjtObj.mjOBJ_JOINT,), "site": (mujoco.mjtObj.mjOBJ_SITE,),
                 "body": (mujoco.mjtObj.mjOBJ_BODY, mujoco.mjtObj.mjOBJ_XBODY)}
#: The actuator transmissions that name an element of each kind.
_TRANSMISSIONS = {"joint": (mujoco.mjtTrn.mjTRN_JOINT, mujoco.mjtTrn.mjTRN_JOINTINPARENT),
                  "site": (mujoco.mjtTrn.mjTRN_SITE,), "body": (mujoco.mjtTrn.mjTRN_BODY,)}


class _Renamer:
    """Renames elements of one MjSpec and the references to them (MjSpec resolves references by
    name when it compiles, so a renamed element's users are renamed with it)."""

    def __init__(self, spec: mujoco.MjSpec) -> None:
        self.spec = spec

    def rename(self, element: Any, new: str, kind: str) -> None:
        """Give ``element`` (a ``kind``: joint, actuator, site, sensor, body) the name ``new``; an
        element of the same kind that has the name already steps aside (``NAME__model``)."""
        old = element.name
        if old == new:
            return
        clash = {"joint": self.spec.joint, "actuator": self.spec.actuator, "site": self.spec.site,
                 "sensor": self.spec.sensor, "body": self.spec.body}[kind](new)
        if clash is not None:
            self.rename(clash, f"{new}__model", kind)
        element.name = new
        if kind in _OBJECT_TYPES:
            self._update_references(kind, old, new)

    def _update_references(self, kind: str, old: str, new: str) -> None:
        s = self.spec
        for a in s.actuators:
            if a.trntype in _TRANSMISSIONS[kind] and a.target == old:
                a.target = new
            if kind == "site":
                for attribute in ("refsite", "slidersite"):
                    if getattr(a, attribute) == old:
                        setattr(a, attribute, new)
        for sensor in s.sensors:
            if sensor.objtype in _OBJECT_TYPES[kind] and sensor.objname == old:
                sensor.objname = new
            if sensor.reftype in _OBJECT_TYPES[kind] and sensor.refname == old:
                sensor.refname = new
        for eq in s.equalities:
            joint = eq.type == mujoco.mjtEq.mjEQ_JOINT
            if (kind == "joint") == joint and (joint or eq.objtype in _OBJECT_TYPES[kind]):
                for attribute in ("name1", "name2"):
                    if getattr(eq, attribute) == old:
                        setattr(eq, attribute, new)
        if kind == "body":
            for exclude in s.excludes:
                for attribute in ("bodyname1", "bodyname2"):
                    if getattr(exclude, attribute) == old:
                        setattr(exclude, attribute, new)


#: The attributes of an actuator copied when the actuators are put into our order (the servo class
#: comes with the copy's default).
_ACTUATOR_ATTRIBUTES = ("gaintype", "gainprm", "biastype", "biasprm", "dyntype", "dynprm", "actdim", "actearly",
                        "actlimited", "actrange", "ctrllimited", "ctrlrange", "forcelimited", "forcerange",
                        "gear", "cranklength", "lengthrange", "inheritrange", "group", "trntype", "target",
                        "refsite", "slidersite", "damping", "armature", "delay", "nsample", "interp", "ffrange",
                        "velrange", "ctrlspec")


def _check_servo(actuator: mujoco.MjsActuator, ours: str) -> None:
    """ValueError naming ``actuator`` unless it is a position servo on its joint (fixed gain kp,
    bias -kp · angle, gear 1): the servo model sets gains on that form."""
    kp = float(actuator.gainprm[0])
    position = (actuator.trntype == mujoco.mjtTrn.mjTRN_JOINT and actuator.gaintype == mujoco.mjtGain.mjGAIN_FIXED
                and actuator.biastype == mujoco.mjtBias.mjBIAS_AFFINE and float(actuator.biasprm[0]) == 0.0
                and math.isclose(float(actuator.biasprm[1]), -kp) and float(actuator.gear[0]) == 1.0
                and actuator.dyntype == mujoco.mjtDyn.mjDYN_NONE)
    if not position:
        raise ValueError(f"actuator {actuator.name!r} (our {ours}) is no position servo on its joint "
                         "(<position> with gear 1): upright's servo model needs one")


def _actuator_of(spec: mujoco.MjSpec, joint: str, ours: str, model_map: ModelMap) -> mujoco.MjsActuator:
    """The user's actuator of our actuator ``ours`` (on their ``joint``): the map's, or the one
    actuator whose target is the joint."""
    if ours in model_map.actuators:
        actuator = spec.actuator(model_map.actuators[ours])
        if actuator is None:
            raise _fail(model_map.source, f"actuators.{ours} names {model_map.actuators[ours]!r}, which is no "
                                          "actuator of the model")
        return actuator
    found = [a for a in spec.actuators if a.target == joint and a.trntype == mujoco.mjtTrn.mjTRN_JOINT]
    if len(found) != 1:
        raise ValueError(f"joint {joint!r} (our {ours}) has {len(found) or 'no'} actuators in the model"
                         + (f" ({', '.join(a.name for a in found)}): name ours in the map's actuators.{ours}"
                            if found else ""))
    return found[0]


def _angle_unit(spec: mujoco.MjSpec) -> float:
    """The model file's unit of joint angles in rad (``<compiler angle="degree">``: pi/180)."""
    return math.pi / 180.0 if spec.compiler.degree else 1.0


def _zero(joint: mujoco.MjsJoint, entry: JointMap, model_map: ModelMap, degrees: float) -> float:
    """The user's angle (rad) of ``joint`` at our zero: the map's ``zero``, else the joint's ``ref``
    (0 when the map turns ``zero_from_ref`` off); ``degrees``: :func:`_angle_unit`."""
    if entry.zero is not None:
        return entry.zero
    return float(joint.ref) * degrees if model_map.zero_from_ref else 0.0


@dataclass(frozen=True)
class Convention:
    """How the joint of one of our actuators appears in a user's model: its ``joint`` and
    ``actuator`` names there, and its angle, ``ours = sign · (theirs - zero)`` (rad)."""

    joint: str
    actuator: str
    zero: float = 0.0
    sign: int = 1

    def to_ours(self, angles: np.ndarray) -> np.ndarray:
        """The user's angles (rad) of the joint in ours."""
        return self.sign * (np.asarray(angles, dtype=float) - self.zero)

    def to_theirs(self, angles: np.ndarray) -> np.ndarray:
        """Our angles (rad) of the joint in the user's."""
        return self.sign * np.asarray(angles, dtype=float) + self.zero


def joint_conventions(robot: RobotSpec) -> dict[str, Convention]:
    """Our actuator → how its joint appears in ``robot.model`` through ``robot.model_map`` (the
    actuators whose joint the model lacks left out); without a user's model every name is ours,
    every zero 0 and every sign 1. What a log of the user's robot is converted with: it names the
    joints and gives their angles as the user's model does."""
    driven = {a: robot.joint_names[i] for a, i in zip(robot.actuator_names, robot.actuated_joint_index)}
    if robot.model is None:
        return {a: Convention(driven[a], a) for a in robot.actuator_names}
    model_map = read_model_map(robot.model_map, robot)
    spec = load_model_spec(robot.model)
    present = joint_names_in_model(spec, robot, model_map)
    degrees = _angle_unit(spec)
    conventions = {}
    for actuator, joint in driven.items():
        if joint not in present:
            continue
        entry = model_map.joints.get(joint, JointMap(present[joint]))
        theirs = spec.joint(present[joint])
        conventions[actuator] = Convention(present[joint], _actuator_of(spec, present[joint], actuator, model_map).name,
                                           _zero(theirs, entry, model_map, degrees), entry.sign)
    return conventions


def _torso_frame_point(data: mujoco.MjData, torso: int, point: np.ndarray) -> np.ndarray:
    """``point`` (m, world) in the frame of body ``torso`` (after a kinematics pass)."""
    return data.xmat[torso].reshape(3, 3).T @ (point - data.xpos[torso])


def adapted_model(robot: RobotSpec) -> mujoco.MjSpec:
    """The user's model of ``robot`` (``robot.model`` through ``robot.model_map``) rewritten into our
    conventions (the module docstring says what changes); ``robot.model`` None: our MJCF as it is."""
    if robot.model is None:
        return mujoco.MjSpec.from_file(str(robot.mjcf))
    model_map = read_model_map(robot.model_map, robot)
    spec = load_model_spec(robot.model)
    renamer = _Renamer(spec)
    ours = mujoco.MjModel.from_xml_path(str(robot.mjcf))
    our_data = mujoco.MjData(ours)
    present = joint_names_in_model(spec, robot, model_map)
    _adapt_torso(spec, renamer, robot, model_map)
    joints = {name: spec.joint(theirs) for name, theirs in present.items()}
    actuators = {name: _actuator_of(spec, present[name], name, model_map)
                 for name in robot.actuator_names if name in present}
    for k, joint in enumerate(joints.values()):  # out of the way of our names first
        renamer.rename(joint, f"__joint{k}", "joint")
    for name, actuator in actuators.items():
        _check_servo(actuator, name)
        renamer.rename(actuator, f"{name}__actuator", "actuator")
    degrees = _angle_unit(spec)
    for name, joint in joints.items():
        entry = model_map.joints.get(name, JointMap(present[name]))
        ref = float(joint.ref) * degrees
        zero = _zero(joint, entry, model_map, degrees)
        sign = entry.sign
        joint.ref = sign * (ref - zero) / degrees
        joint.range = np.sort(sign * (np.asarray(joint.range) * degrees - zero)) / degrees
        joint.springref = sign * (float(joint.springref) * degrees - zero) / degrees
        if sign < 0:
            joint.axis = -np.asarray(joint.axis)
        if name in actuators:  # a position servo's target is in the joint's angle
            actuators[name].ctrlrange = np.sort(sign * (np.asarray(actuators[name].ctrlrange) - zero))
        renamer.rename(joint, name, "joint")
    standing = ours.key(robot.standing_pose).qpos
    held = {j: float(standing[ours.jnt_qposadr[ours.joint(j).id]]) for j in robot.joint_names if j not in present}
    for name, angle in held.items():
        _add_stand_in(spec, robot, ours, name, angle)
    _order_actuators(spec, robot)
    _adapt_imu(spec, renamer, robot, model_map)
    _adapt_sites(spec, renamer, robot, model_map, ours, our_data)
    _adapt_feet(spec, renamer, robot, model_map, ours, our_data)
    absent = [s for s in robot.sole_sites if spec.site(s) is None]
    if absent:
        raise ValueError(f"the model has no sole sites {', '.join(absent)}: name them (sites.{absent[0]}) or the "
                         "foot geoms (feet.geoms) in the model map")
    _set_poses(spec, robot, ours, held)
    return spec


def _adapt_torso(spec: mujoco.MjSpec, renamer: _Renamer, robot: RobotSpec, model_map: ModelMap) -> None:
    name = model_map.torso or robot.torso_body
    torso = spec.body(name)
    if torso is None:
        where = "the map's torso" if model_map.torso else f"our torso body {robot.torso_body!r} (map key torso)"
        raise ValueError(f"the model has no body {name!r} ({where})")
    if not any(j.type == mujoco.mjtJoint.mjJNT_FREE for j in torso.joints):
        raise ValueError(f"the model's torso {name!r} has no free joint: the robot must move freely")
    renamer.rename(torso, robot.torso_body, "body")


def _add_stand_in(spec: mujoco.MjSpec, robot: RobotSpec, ours: mujoco.MjModel, name: str, held: float) -> None:
    """A massless hinge named ``name`` on the torso, held at ``held`` (rad) by an equality
    constraint, with an actuator of zero gain in our actuator's place (if the joint has one)."""
    body = spec.body(robot.torso_body).add_body(name=f"{name}__missing", mass=STAND_IN_MASS,
                                                inertia=[STAND_IN_INERTIA] * 3, explicitinertial=True)
    joint = ours.joint(name)
    body.add_joint(name=name, type=mujoco.mjtJoint.mjJNT_HINGE, axis=[0.0, 0.0, 1.0], ref=held,
                   range=joint.range.tolist(), limited=mujoco.mjtLimited.mjLIMITED_TRUE,
                   armature=STAND_IN_ARMATURE, damping=0.01)
    spec.add_equality(type=mujoco.mjtEq.mjEQ_JOINT, name1=name, data=np.zeros(12))
    if name in robot.actuator_names:
        actuator = spec.add_actuator(name=f"{name}__actuator", target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        actuator.set_to_position(kp=0.0)
        actuator.ctrlrange = ours.actuator(name).ctrlrange.tolist()
        actuator.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
        actuator.forcerange = [-1.0, 1.0]  # no force at zero gain; a limit, so that loads stay finite
        actuator.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE


def _order_actuators(spec: mujoco.MjSpec, robot: RobotSpec) -> None:
    """Replace the actuators by copies in our actuator order under our names (the model's servo
    classes kept); ValueError for an actuator of the model that drives none of our joints."""
    old = {a.name: a for a in spec.actuators}
    extra = [name for name in old if not name.endswith("__actuator")]
    if extra:
        raise ValueError(f"the model's actuators {', '.join(extra)} drive none of {robot.name}'s actuated joints")
    for name in robot.actuator_names:
        source = old[f"{name}__actuator"]
        copy = spec.add_actuator(default=source.classname, name=name)
        for attribute in _ACTUATOR_ATTRIBUTES:
            setattr(copy, attribute, getattr(source, attribute))
    for actuator in old.values():
        spec.delete(actuator)


def _adapt_imu(spec: mujoco.MjSpec, renamer: _Renamer, robot: RobotSpec, model_map: ModelMap) -> None:
    kinds = {"gyro": (robot.gyro_sensor, mujoco.mjtSensor.mjSENS_GYRO),
             "accel": (robot.accel_sensor, mujoco.mjtSensor.mjSENS_ACCELEROMETER),
             "quat": (robot.quat_sensor, mujoco.mjtSensor.mjSENS_FRAMEQUAT)}
    imu = model_map.imu
    if "site" in imu:
        site = spec.site(imu["site"])
        if site is None:
            raise _fail(model_map.source, f"imu.site names {imu['site']!r}, which is no site of the model")
        renamer.rename(site, robot.imu_site, "site")
        for ours_name, kind in kinds.values():
            clash = spec.sensor(ours_name)
            if clash is not None:
                renamer.rename(clash, f"{ours_name}__model", "sensor")
            spec.add_sensor(name=ours_name, type=kind, objtype=mujoco.mjtObj.mjOBJ_SITE, objname=robot.imu_site)
    else:
        for key, (ours_name, _) in kinds.items():
            name = imu.get(key, ours_name)
            sensor = spec.sensor(name)
            if sensor is None:
                raise ValueError(f"the model has no IMU sensor {name!r}: name its IMU site (imu.site) or its "
                                 "gyro, accel and quat sensors (imu.gyro, ...) in the model map")
            renamer.rename(sensor, ours_name, "sensor")
        site = spec.site(spec.sensor(robot.gyro_sensor).objname)
        renamer.rename(site, robot.imu_site, "site")
    if site.parent.name != robot.torso_body:
        raise ValueError(f"the IMU site {site.name!r} is not on the torso: the observation's IMU is the torso's")


def _adapt_sites(spec: mujoco.MjSpec, renamer: _Renamer, robot: RobotSpec, model_map: ModelMap,
                 ours: mujoco.MjModel, our_data: mujoco.MjData) -> None:
    """The sole sites and the head top under our names: the map's, the model's own by our name, a
    sole derived from the foot geoms (:func:`_adapt_feet`), or a head top fixed to the torso where
    ours is in the standing pose."""
    for name in (*robot.sole_sites, robot.head_top_site):
        site = spec.site(model_map.sites.get(name, name))
        if site is None and name in model_map.sites:
            raise _fail(model_map.source, f"sites.{name} names {model_map.sites[name]!r}, which is no site of "
                                          "the model")
        if site is not None:
            renamer.rename(site, name, "site")
    if spec.site(robot.head_top_site) is None:
        mujoco.mj_resetDataKeyframe(ours, our_data, ours.key(robot.standing_pose).id)
        mujoco.mj_kinematics(ours, our_data)
        torso = ours.body(robot.torso_body).id
        point = _torso_frame_point(our_data, torso, our_data.site_xpos[ours.site(robot.head_top_site).id])
        spec.body(robot.torso_body).add_site(name=robot.head_top_site, pos=point.tolist())


def _geom_outline(model: mujoco.MjModel, data: mujoco.MjData, geoms: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The world-axis-aligned box around ``geoms`` (their bounding boxes' corners): lower and upper
    corner (m, world)."""
    corners = []
    for g in geoms:
        centre, half = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
        signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float)
        local = centre + signs * half
        corners.append(data.geom_xpos[g] + local @ data.geom_xmat[g].reshape(3, 3).T)
    points = np.concatenate(corners)
    return points.min(axis=0), points.max(axis=0)


def _adapt_feet(spec: mujoco.MjSpec, renamer: _Renamer, robot: RobotSpec, model_map: ModelMap,
                ours: mujoco.MjModel, our_data: mujoco.MjData) -> None:
    """Foot pressure under our sensor names: the map's sensors renamed, or touch sensors over the
    quarters of each sole (split at the sole frame's origin, towards each of our sensor points) on
    the body of the map's foot geoms; the sole sites from the geoms where the model has none."""
    if model_map.pressure is not None:
        for ours_name, theirs in zip(robot.pressure_sensors, model_map.pressure):
            sensor = spec.sensor(theirs)
            if sensor is None:
                raise _fail(model_map.source, f"feet.pressure names {theirs!r}, which is no sensor of the model")
            renamer.rename(sensor, ours_name, "sensor")
        return
    if model_map.foot_geoms is None:
        absent = [s for s in robot.pressure_sensors if spec.sensor(s) is None]
        if absent:
            raise ValueError(f"the model has no foot-pressure sensors {', '.join(absent)}: name its sensors "
                             "(feet.pressure) or its foot geoms (feet.geoms) in the model map")
        return
    # Pose the model standing (our angles, our torso pose) to find the soles' outlines.
    model = spec.compile()
    data = mujoco.MjData(model)
    key = ours.key(robot.standing_pose)
    data.qpos[:7] = key.qpos[:7]
    for j in robot.joint_names:
        data.qpos[model.jnt_qposadr[model.joint(j).id]] = key.qpos[ours.jnt_qposadr[ours.joint(j).id]]
    mujoco.mj_kinematics(model, data)
    mujoco.mj_resetDataKeyframe(ours, our_data, key.id)
    mujoco.mj_kinematics(ours, our_data)
    for k, (side, sole) in enumerate(zip(SIDES, robot.sole_sites)):
        ids = []
        for name in model_map.foot_geoms[side]:
            if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, name) < 0:
                raise _fail(model_map.source, f"feet.geoms.{side} names {name!r}, which is no geom of the model")
            ids.append(model.geom(name).id)
        bodies = {int(model.geom_bodyid[g]) for g in ids}
        if len(bodies) != 1:
            raise _fail(model_map.source, f"feet.geoms.{side} lie on several bodies; name one foot's geoms")
        foot = bodies.pop()
        low, high = _geom_outline(model, data, ids)
        rot_foot = data.xmat[foot].reshape(3, 3)
        if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, sole) >= 0:  # the model's own sole frame
            sole_pos, sole_rot = data.site_xpos[model.site(sole).id], data.site_xmat[model.site(sole).id].reshape(3, 3)
        else:  # the sole frame: level, under the middle of the geoms' outline, on its lowest point
            sole_pos, sole_rot = np.array([(low[0] + high[0]) / 2, (low[1] + high[1]) / 2, low[2]]), np.eye(3)
            quat = np.empty(4)
            mujoco.mju_mat2Quat(quat, (rot_foot.T @ sole_rot).ravel())
            spec.body(model.body(foot).name).add_site(name=sole, pos=(rot_foot.T @ (sole_pos - data.xpos[foot])).tolist(),
                                                      quat=quat.tolist())
        extent = np.abs((np.stack([low, high]) - sole_pos) @ sole_rot)  # the outline in the sole frame
        reach = extent.max(axis=0)[:2] + SOLE_MARGIN  # from the sole origin to past the outline (x, y)
        our_sole = ours.site(sole).id
        our_rot = our_data.site_xmat[our_sole].reshape(3, 3)
        for name in robot.foot_pressure_sensors[k]:
            point = our_rot.T @ (our_data.site_xpos[ours.site(name).id] - our_data.site_xpos[our_sole])
            centre = sole_pos + sole_rot @ np.array([np.sign(point[0]) * reach[0] / 2, np.sign(point[1]) * reach[1] / 2,
                                                     SOLE_HALF_HEIGHT / 3])
            quat = np.empty(4)
            mujoco.mju_mat2Quat(quat, (rot_foot.T @ sole_rot).ravel())
            clash = spec.sensor(name)
            if clash is not None:
                renamer.rename(clash, f"{name}__model", "sensor")
            clash_site = spec.site(name)
            if clash_site is not None:
                renamer.rename(clash_site, f"{name}__model", "site")
            spec.body(model.body(foot).name).add_site(
                name=name, type=mujoco.mjtGeom.mjGEOM_BOX, pos=(rot_foot.T @ (centre - data.xpos[foot])).tolist(),
                quat=quat.tolist(), size=[reach[0] / 2, reach[1] / 2, SOLE_HALF_HEIGHT], group=4)
            spec.add_sensor(name=name, type=mujoco.mjtSensor.mjSENS_TOUCH, objtype=mujoco.mjtObj.mjOBJ_SITE,
                            objname=name)


def _set_poses(spec: mujoco.MjSpec, robot: RobotSpec, ours: mujoco.MjModel, held: Mapping[str, float]) -> None:
    """Replace the model's keyframes by our poses: our torso pose and joint angles (the missing
    joints at their ``held`` angles) and our actuators' targets."""
    for key in list(spec.keys):
        spec.delete(key)
    model = spec.compile()
    addresses = {j: int(model.jnt_qposadr[model.joint(j).id]) for j in robot.joint_names}
    for pose in robot.poses:
        key = ours.key(pose)
        qpos = model.qpos0.copy()
        qpos[:7] = key.qpos[:7]
        for j in robot.joint_names:
            qpos[addresses[j]] = held.get(j, key.qpos[ours.jnt_qposadr[ours.joint(j).id]])
        ctrl = np.array([held.get(a, c) for a, c in zip(robot.actuator_names, key.ctrl)])
        spec.add_key(name=pose, qpos=qpos.tolist(), ctrl=ctrl.tolist())


__all__ = ["Convention", "Feet", "FootGeoms", "Imu", "JointEntry", "JointMap", "MapFile", "ModelMap", "adapted_model",
           "joint_conventions", "joint_names_in_model", "load_model_spec", "map_schema", "missing_joints", "parse_model_map",
           "read_model_map", "with_model"]
