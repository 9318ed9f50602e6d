"""NAO V6 (H25): joint order, timing and named poses.

Numbers (their sources: ``docs/environments.md``, last section): B-Human's 12 ms motion
cycle and 3-frame (36 ms) actuation delay, 0.333 m torso height with straight legs
(0.085 + 0.100 + 0.1029 + 0.04519), 5.359 kg summed link masses.
"""

from upright.envs.robots.spec import RobotSpec

_HEAD = ("HeadYaw", "HeadPitch")
_ARM = ("ShoulderPitch", "ShoulderRoll", "ElbowYaw", "ElbowRoll", "WristYaw")
_LEG = ("HipYawPitch", "HipRoll", "HipPitch", "KneePitch", "AnklePitch", "AnkleRoll")

JOINTS = (
    *_HEAD,
    *(f"L{j}" for j in _ARM),
    *(f"R{j}" for j in _ARM),
    *(f"L{j}" for j in _LEG),
    *(f"R{j}" for j in _LEG),
)

NAO = RobotSpec(
    name="nao",
    joint_names=JOINTS,
    actuator_names=tuple(j for j in JOINTS if j != "RHipYawPitch"),
    coupled_joints={"RHipYawPitch": "LHipYawPitch"},
    control_period=0.012,
    delay_cycles=3,
    standing_pose="stand",
    prone_pose="prone",
    supine_pose="supine",
    standing_torso_height=0.333,
    nominal_mass=5.359,
    zero_pose_text="Aldebaran's zero posture: legs straight down, arms straight and pointing forward horizontally, "
                   "head straight ahead; every body frame parallel to the torso frame. The elbows' range ends 2 deg "
                   "short of straight (ElbowRoll limits), so the arms' zero lies just outside it.",
    torso_frame_text="Aldebaran's Torso frame: origin 126.5 mm below the HeadYaw axis and 85 mm above the hip axes, "
                     "x forward, y left, z up",
    pressure_readings_text="the FSRs report kg: multiply each reading by 9.81 m/s^2",
    foot_pressure_sensors=tuple(tuple(f"{s}_fsr_{c}" for c in ("fl", "fr", "rl", "rr")) for s in "lr"),
    head_arm_bodies=("Neck", "LShoulder", "RShoulder"),
    leg_pitch_joints=tuple(tuple(f"{s}{j}" for j in ("HipPitch", "KneePitch", "AnklePitch")) for s in "LR"),
    foot_geoms=(("l_foot",), ("r_foot",)),
    model_variants=("legs_only", "soft", "renamed"),
    # HULKs' MJCF of the NAO: kp 21.1 N m/rad on every joint, the torque limits ours.
    published_servos={"*": {"gain": 21.1}},
)
