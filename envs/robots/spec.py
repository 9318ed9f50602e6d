"""The description of one robot (:class:`RobotSpec`); the robots themselves are in
:mod:`~upright.envs.robots.nao` and :mod:`~upright.envs.robots.wolfgang`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from upright.assets import model_path

#: The get-up's lying starts that are keyframes of the robot (:meth:`RobotSpec.lying_pose`).
LYING = ("prone", "supine")


@dataclass(frozen=True)
class RobotSpec:
    """Static description of one robot.

    Joint and actuator orders are the orders of the MJCF file (checked when a simulation loads it).
    Lengths in m, times in s, masses in kg.
    """

    name: str
    #: Hinge joints in MJCF order; ``Sensors.joint_pos`` uses this order.
    joint_names: tuple[str, ...]
    #: Position actuators in MJCF order; actions and joint targets use this order.
    actuator_names: tuple[str, ...]
    #: Joints that have no actuator of their own, mapped to the joint whose actuator drives them
    #: through an equality constraint (NAO: RHipYawPitch follows LHipYawPitch).
    coupled_joints: dict[str, str]
    #: Control period of the robot's motion loop (s).
    control_period: float
    #: Commands reach the servos this many control cycles after they are sent.
    delay_cycles: int
    #: Names of the MJCF keyframes: standing, and the get-up's lying starts face down (``prone``)
    #: and on the back (``supine``).
    standing_pose: str
    prone_pose: str
    supine_pose: str
    #: Nominal torso-origin height above the ground in the standing pose (m), from the reference.
    standing_torso_height: float
    #: Total mass the model is built to (kg), from the reference.
    nominal_mass: float
    #: In words, for the robot-side contract of an export (``upright.training.export_spec``): the
    #: pose with every joint angle 0, the torso frame (the MJCF's torso body), and how the foot
    #: pressure sensors' readings become newtons.
    zero_pose_text: str
    torso_frame_text: str
    pressure_readings_text: str
    torso_body: str = "torso"
    imu_site: str = "imu"
    head_top_site: str = "head_top"
    sole_sites: tuple[str, str] = ("l_sole", "r_sole")
    #: Touch sensors under each foot (left, right); NAO FSRs, Wolfgang cleats. Their readings
    #: (``Sensors.foot_pressure``, the observation's ``foot_pressure``) come in
    #: :attr:`pressure_sensors` order: the left foot's, then the right's.
    foot_pressure_sensors: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    gyro_sensor: str = "imu_gyro"
    accel_sensor: str = "imu_accel"
    quat_sensor: str = "imu_quat"
    #: The top bodies of the head and the arms, each with every body below it: what a model of
    #: the robot's legs alone lacks.
    head_arm_bodies: tuple[str, ...] = ()
    #: Each leg's pitch joints (left leg, then right), hip to ankle: hip pitch, knee, ankle pitch.
    leg_pitch_joints: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    #: The collision geoms of each foot (left, right): where a model without foot pressure
    #: sensors finds the load on a foot.
    foot_geoms: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    #: The variant models of this robot that :mod:`upright.eval.model_variants` writes, in the
    #: order the docs list them: the kinds of difference a team's model of this robot has.
    model_variants: tuple[str, ...] = ()
    #: How the ``renamed`` variant of :mod:`upright.eval.model_variants` gives the feet: True keeps
    #: :attr:`pressure_sensors`, :attr:`sole_sites` and :attr:`head_top_site` under other names,
    #: False drops the pressure sensors and sole sites and its map names :attr:`foot_geoms`
    #: (each robot tries one of a model map's two forms of feet).
    renamed_keeps_pressure: bool = True
    #: Another published model's servos of this robot, softer than ours: servo class (the MJCF's
    #: actuator class), actuator name or ``*`` (every actuator) → the parameters of
    #: :class:`~upright.envs.conditions.ServoParameters` it sets (``gain`` N·m/rad, ``torque`` N·m,
    #: ...; those it leaves out stay ours). The ``soft-servos`` conditions preset puts them in.
    published_servos: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    #: A user's own MJCF of this robot that the simulation loads instead of ours (None: ours),
    #: rewritten into our names and angles through :attr:`model_map`
    #: (:func:`~upright.envs.robots.user_model.with_model` builds such a description).
    model: Path | None = None
    #: The YAML map of :attr:`model` onto this description (None: every name ours).
    model_map: Path | None = None
    #: Our joints that :attr:`model` lacks (joint order): held at the standing pose's angle.
    missing_joints: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for per_side in ("foot_pressure_sensors", "leg_pitch_joints", "foot_geoms"):
            if len(getattr(self, per_side)) != 2:
                raise ValueError(f"{self.name}: {per_side} holds one tuple per side (left, right), got "
                                 f"{getattr(self, per_side)!r}")
        if any(self.leg_pitch_joints) and any(len(leg) != 3 for leg in self.leg_pitch_joints):
            raise ValueError(f"{self.name}: leg_pitch_joints names each leg's hip pitch, knee and ankle pitch, got "
                             f"{self.leg_pitch_joints!r}")

    @property
    def mjcf(self) -> Path:
        """Path of the robot's MJCF file (ours: the model the robot-side kinematics of the baselines
        and the export's spec are read from, also when :attr:`model` is a user's)."""
        return model_path(self.name)

    @property
    def simulated_mjcf(self) -> Path:
        """Path of the MJCF the simulation loads: :attr:`model`, else ours."""
        return self.model if self.model is not None else self.mjcf

    @property
    def lying_poses(self) -> tuple[str, str]:
        """The lying keyframes: prone, supine."""
        return self.prone_pose, self.supine_pose

    @property
    def poses(self) -> tuple[str, ...]:
        """All named poses (keyframes)."""
        return (self.standing_pose, *self.lying_poses)

    def lying_pose(self, start: str) -> str:
        """The keyframe of the lying start ``start`` (``"prone"`` or ``"supine"``)."""
        poses = dict(zip(LYING, self.lying_poses))
        if start not in poses:
            raise ValueError(f"unknown lying start {start!r}; valid: {', '.join(LYING)}")
        return poses[start]

    @property
    def pressure_sensors(self) -> tuple[str, ...]:
        """All foot pressure sensors in reading order: the left foot's, then the right's."""
        left, right = self.foot_pressure_sensors
        return (*left, *right)

    @property
    def pressure_sensor_feet(self) -> tuple[int, ...]:
        """For each of :attr:`pressure_sensors`, its foot: 0 left, 1 right."""
        return tuple(foot for foot, names in enumerate(self.foot_pressure_sensors) for _ in names)

    @property
    def foot_pressure_slices(self) -> tuple[slice, slice]:
        """Where the left and the right foot's readings lie in ``Sensors.foot_pressure``."""
        n_left = len(self.foot_pressure_sensors[0])
        return slice(0, n_left), slice(n_left, len(self.pressure_sensors))

    @property
    def knee_joints(self) -> tuple[str, ...]:
        """The knees (left, right): the middle of each leg's :attr:`leg_pitch_joints`; empty when
        those are not given."""
        return tuple(leg[1] for leg in self.leg_pitch_joints if leg)

    @property
    def actuated_joint_index(self) -> tuple[int, ...]:
        """For each actuator, the index in :attr:`joint_names` of the joint it drives."""
        return tuple(self.joint_names.index(a) for a in self.actuator_names)

    @property
    def joint_actuator_index(self) -> tuple[int, ...]:
        """For each joint, the index of the actuator whose target it follows."""
        return tuple(
            self.actuator_names.index(self.coupled_joints.get(j, j)) for j in self.joint_names
        )


__all__ = ["LYING", "RobotSpec"]
