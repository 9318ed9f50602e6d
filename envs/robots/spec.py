"""The description of one robot (:class:`RobotSpec`); the robots themselves are in
:mod:`~upright.envs.robots.nao` and :mod:`~upright.envs.robots.wolfgang`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from upright.assets import model_path


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
    #: Name of the standing keyframe; the other named poses are the lying keyframes.
    standing_pose: str
    lying_poses: tuple[str, ...]
    #: Nominal torso-origin height above the ground in the standing pose (m), from the reference.
    standing_torso_height: float
    #: Total mass the model is built to (m), from the reference.
    nominal_mass: float
    torso_body: str = "torso"
    imu_site: str = "imu"
    head_top_site: str = "head_top"
    sole_sites: tuple[str, str] = ("l_sole", "r_sole")
    #: Touch sensors under the feet (4 left, then 4 right); NAO FSRs, Wolfgang cleats.
    pressure_sensors: tuple[str, ...] = field(default_factory=tuple)
    gyro_sensor: str = "imu_gyro"
    accel_sensor: str = "imu_accel"
    quat_sensor: str = "imu_quat"
    #: A user's own MJCF of this robot that the simulation loads instead of ours (None: ours),
    #: rewritten into our names and angles through :attr:`model_map`
    #: (:func:`~upright.envs.robots.user_model.with_model` builds such a description).
    model: Path | None = None
    #: The YAML map of :attr:`model` onto this description (None: every name ours).
    model_map: Path | None = None
    #: Our joints that :attr:`model` lacks (joint order): held at the standing pose's angle.
    missing_joints: tuple[str, ...] = ()

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
    def poses(self) -> tuple[str, ...]:
        """All named poses (keyframes)."""
        return (self.standing_pose, *self.lying_poses)

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


__all__ = ["RobotSpec"]
