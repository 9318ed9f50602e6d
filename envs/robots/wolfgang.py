"""Wolfgang-OP (Hamburg Bit-Bots): joint order, timing and named poses.

Numbers (their sources: ``docs/environments.md``, last section): 10 ms control period
(the Bit-Bots stand-up and walk run their servo loop at 100 Hz or faster), walkready trunk height
0.38 m (dynup end pose), total mass 7.5 kg (spline stand-up paper). The actuation delay of one
cycle is an estimate (Dynamixel bus round trip plus one servo-loop period); no source measures it.
"""

from upright.envs.robots.spec import RobotSpec

_ARM = ("ShoulderPitch", "ShoulderRoll", "Elbow")
_LEG = ("HipYaw", "HipRoll", "HipPitch", "Knee", "AnklePitch", "AnkleRoll")

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
    foot_pressure_sensors=tuple(
        tuple(f"{s}_cleat_{c}" for c in ("l_back", "l_front", "r_front", "r_back")) for s in "lr"
    ),
)
