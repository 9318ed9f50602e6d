"""Wolfgang-OP (Hamburg Bit-Bots): joint order, timing and named poses.

Numbers (their sources: ``docs/environments.md``, last section): 10 ms control period
(the Bit-Bots stand-up and walk run their servo loop at 100 Hz or faster), walkready trunk height
0.38 m (dynup end pose), total mass 7.5 kg (spline stand-up paper). The actuation delay of one
cycle is an estimate (Dynamixel bus round trip plus one servo-loop period); no source measures it.
"""

from upright.envs.robots.spec import RobotSpec

_ARM = ("ShoulderPitch", "ShoulderRoll", "Elbow")
_LEG = ("HipYaw", "HipRoll", "HipPitch", "Knee", "AnklePitch", "AnkleRoll")
#: The four cleats under each foot, each with a load cell.
_CLEATS = ("l_back", "l_front", "r_front", "r_back")

JOINTS = (
    "HeadPan",
    "HeadTilt",
    *(f"L{j}" for j in _ARM),
    *(f"R{j}" for j in _ARM),
    *(f"L{j}" for j in _LEG),
    *(f"R{j}" for j in _LEG),
)

WOLFGANG = RobotSpec(
    name="wolfgang",
    joint_names=JOINTS,
    actuator_names=JOINTS,
    coupled_joints={},
    control_period=0.010,
    delay_cycles=1,
    standing_pose="walkready",
    prone_pose="prone",
    supine_pose="supine",
    standing_torso_height=0.38,
    nominal_mass=7.5,
    zero_pose_text="thighs straight down, shanks tilted 15 deg from vertical with the ankles ahead of the knees, "
                   "feet pitched 15 deg toe-up, upper arms hanging straight down, lower arms pointing forward "
                   "(elbows bent 90 deg), head straight ahead; every body frame parallel to the torso frame.",
    torso_frame_text="the URDF's base_link: origin midway between the hip-yaw axes (at their height), x forward, "
                     "y left, z up",
    pressure_readings_text="calibrate each cleat's load cell to newtons (0 with the foot in the air; standing still, "
                           "the readings of both feet sum to the robot's weight)",
    foot_pressure_sensors=tuple(tuple(f"{s}_cleat_{c}" for c in _CLEATS) for s in "lr"),
    head_arm_bodies=("neck", "l_shoulder", "r_shoulder"),
    leg_pitch_joints=tuple(tuple(f"{s}{j}" for j in ("HipPitch", "Knee", "AnklePitch")) for s in "LR"),
    foot_geoms=tuple((f"{s}_sole_plate", *(f"{s}_cleat_{c}" for c in _CLEATS)) for s in "lr"),
    model_variants=("legs_only", "knee_ref", "soft", "renamed"),
    renamed_keeps_pressure=False,
    # The Bit-Bots' MJX model of the Wolfgang: MX-106 and XH540 kp 21 N m/rad, +-8 N m; MX-64 kp
    # 12.5 N m/rad, +-5 N m.
    published_servos={"mx106": {"gain": 21.0, "torque": 8.0}, "xh540": {"gain": 21.0, "torque": 8.0},
                      "mx64": {"gain": 12.5, "torque": 5.0}},
)
