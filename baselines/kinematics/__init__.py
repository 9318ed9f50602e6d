"""Robot-side kinematics on the robot's own model, by concept:

* :mod:`~upright.baselines.kinematics.forward`: the private copy of the MJCF with the torso fixed
  at the origin (every pose in the TORSO frame: x forward, y left, z up; metres and radians),
  joint vectors, site and body poses;
* :mod:`~upright.baselines.kinematics.com`: the centre of mass;
* :mod:`~upright.baselines.kinematics.leg_ik`: the analytic 6-DoF leg IK (closed form, NAO's
  shared HipYawPitch);
* :mod:`~upright.baselines.kinematics.arm_ik`: the 3-joint arm IK (closed form, damped least
  squares where a joint limit binds);
* :mod:`~upright.baselines.kinematics.vectors`: the plain-float vector algebra of the closed forms.

:class:`Kinematics` is all of them on one private model, one per controller.
"""

from __future__ import annotations

from upright.baselines.kinematics.arm_ik import ArmIK
from upright.baselines.kinematics.com import CenterOfMass
from upright.baselines.kinematics.leg_ik import LegIK


class Kinematics(CenterOfMass, LegIK, ArmIK):
    """Forward/inverse kinematics and CoM of one robot, on a private copy of its MJCF model.

    All poses are ``(pos (3,), R (3, 3))`` in the torso frame. Joint vectors are in the robot's
    joint order (``RobotSpec.joint_names``, as ``Sensors.joint_pos``). The private model holds one
    state: ``foot_pose``, ``hand_pose``, ``com``, ``leg_ik`` and ``arm_ik`` overwrite it, so call
    :meth:`set_joints` right before :meth:`site_pose` / :meth:`body_pose`. One instance per
    controller (not thread-safe); construction costs a model compile (~10 ms), calls allocate no
    MuJoCo objects.
    """


__all__ = ["Kinematics"]
